#!/usr/bin/env bash
# Takes docs/whatif-figures/snapshot.json from a live batchd (12 nodes under CBF, four jobs
# running, 30 rigid, moldable and evolving jobs queued) and draws plans.svg from it under CBF
# and EASY. Usage: docs/whatif-figures/make.sh [BIN_DIR]   (default: target/debug, where
# `cargo build -p batchd -p cli-tools -p esim -p esched-cbf -p esched-easy` leaves them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-"$here/../../target/debug"}
# shellcheck source=scripts/lib/scratch-batchd.sh
. "$here/../../scripts/lib/scratch-batchd.sh"
scratch_batchd "$bin" batch 12 cbf
# shellcheck disable=SC2154 # dir: the daemon's directory, set by scratch_batchd
cd "$dir"
for i in 1 2 3 4; do "$bin/esubmit" -N3 -t $((20 + 10 * i)) --wrap "sleep 3600" >/dev/null; done
for i in $(seq 0 29); do
  case $((i % 3)) in
    0) "$bin/esubmit" -N$((1 + i % 6)) -t $((10 + (i * 7) % 50)) --wrap true ;;
    1) "$bin/esubmit" --moldable "$((2 + i % 3)):$((40 + i % 20)),8:$((12 + i % 5))" --wrap true ;;
    2) "$bin/esubmit" --evolving-profile "$((600 + 60 * i)):$((1 + i % 3)),900:$((2 + i % 5))" --wrap true ;;
  esac >/dev/null
done
sleep 1
"$bin/econtrol" snapshot "$here/snapshot.json"
"$bin/esim" whatif "$here/snapshot.json" --linked --policy easy --svg "$here/plans.svg"
