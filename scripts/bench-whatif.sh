#!/usr/bin/env bash
# What-if's compute time on the queue of its end-to-end test, with release binaries: a batchd
# of 16 nodes under CBF, eight 2-node jobs running, 200 pending (rigid, moldable, evolving, in
# turn), a held job and one that depends on it. Runs
#   econtrol whatif --policy easy --policy evolving:expand=2X --json
# RUNS times (default 11) on the same queue and prints each run's compute_ms (the three
# replays: current CBF, EASY, evolving 2X, in the client's process), then their median,
# minimum and maximum.
#
# Usage: scripts/bench-whatif.sh [RUNS]
#   (builds: cargo build --release -p batchd -p cli-tools -p esim and the three policies)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-11}
cargo build -q --release -p batchd -p cli-tools -p esim -p esched-cbf -p esched-easy -p esched-evolving
bin=$PWD/target/release
# shellcheck source=scripts/lib/scratch-batchd.sh
. scripts/lib/scratch-batchd.sh
scratch_batchd "$bin" debug 16 cbf
export ESCHED_ESIM="$bin/esim"
# shellcheck disable=SC2154 # dir: the daemon's directory, set by scratch_batchd
cd "$dir"
for i in $(seq 0 7); do "$bin/esubmit" -N2 -t $((20 + i)) --wrap "sleep 600" >/dev/null; done
for _ in $(seq 100); do [ "$("$bin/equeue" --noheader -t R | wc -l)" -eq 8 ] && break; sleep 0.1; done
for i in $(seq 0 199); do
  case $((i % 3)) in
    0) "$bin/esubmit" -N$((1 + i % 8)) -t $((5 + (i * 7) % 40)) --wrap "sleep 1" ;;
    1) "$bin/esubmit" --moldable "$((1 + i % 4)):$((30 + i % 20)),8:$((6 + i % 5))" --wrap "sleep 1" ;;
    2) "$bin/esubmit" --evolving-profile "$((300 + 10 * i)):$((1 + i % 3)),600:$((2 + i % 6))" --wrap "sleep 1" ;;
  esac >/dev/null
done
held=$("$bin/esubmit" --parsable -H -N2 -t 10 --wrap "sleep 1")
"$bin/esubmit" --dependency=afterok:"$held" -N1 -t 10 --wrap "sleep 1" >/dev/null
compute=()
for r in $(seq "$runs"); do
  c=$("$bin/econtrol" whatif --policy easy --policy evolving:expand=2X --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["compute_ms"])')
  echo "run $r: compute ${c} ms"
  compute+=("$c")
done
printf '%s\n' "${compute[@]}" | python3 -c '
import statistics, sys
v = [float(x) for x in sys.stdin]
print("compute_ms over %d runs: median %.1f, minimum %.1f, maximum %.1f" % (len(v), statistics.median(v), min(v), max(v)))'
