#!/usr/bin/env bash
# What a policy call stuck past its time budget costs the daemon's users: equeue and esubmit
# latency with a queue of pending jobs, first with the policy answering, then while a call of
# `sched-abi/fixtures/test-sleep` sleeps (10 minutes) past a 1 s budget. Printed, not asserted: median and
# max of RUNS runs of each, in ms, then `econtrol show stats` during the stall.
#
#   scripts/bench-budget.sh [RUNS] [QUEUE]        (defaults: 50 runs, 1000 pending jobs)
#
# Environment: BENCH_PROFILE=release (default) or dev.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-50}"
queue="${2:-1000}"
profile="${BENCH_PROFILE:-release}"
flag=(); dir=target/debug
if [ "$profile" = release ]; then flag=(--release); dir=target/release; fi
dir="$(pwd)/${CARGO_TARGET_DIR:-target}/${dir#target/}"
cargo build "${flag[@]}" -q -p batchd --bin batchd -p esched-test-sleep \
    -p cli-tools --bin esubmit --bin equeue --bin econtrol --bin ecancel

tmp="$(mktemp -d)"
pid=
busy=
cleanup() {
    # The running job outlives batchd under its supervisor (by design): cancel it first.
    if [ -n "$busy" ]; then "$dir/ecancel" "$busy" 2>/dev/null || true; sleep 0.5; fi
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

cat > "$tmp/batchd.toml" <<EOF
socket = "$tmp/batchd.sock"
state_dir = "$tmp/state"
sync = "normal"

[policy]
name = "$dir/libesched_test_sleep.so"
time_budget_ms = 1000

[policy.params]
sleep_ms = 600000
sleep_on_nodes = 3
EOF
"$dir/batchd" --config "$tmp/batchd.toml" 2> "$tmp/batchd.log" &
pid=$!
export ESCHED_SOCKET="$tmp/batchd.sock"
for _ in $(seq 100); do [ -S "$ESCHED_SOCKET" ] && break; sleep 0.1; done

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# median and max of the numbers on stdin
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "median %d ms, max %d ms (%d runs)\n", v[int((NR + 1) / 2)], v[NR], NR }'; }
time_runs() {
    for _ in $(seq "$runs"); do
        t=$(date +%s%N); "$@" > /dev/null; ms "$t"
    done | stats
}

# Jobs write their output where they were submitted: in the temporary directory.
cd "$tmp"
# The whole pool (8 nodes) busy, then QUEUE one-node jobs waiting behind it.
busy=$("$dir/esubmit" --parsable -N 8 --wrap 'sleep 600')
for _ in $(seq "$queue"); do "$dir/esubmit" -N 1 --wrap true; done > /dev/null

echo "== $profile build, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $queue pending jobs"
echo "policy answering:"
echo "  equeue:  $(time_runs "$dir/equeue")"
echo "  esubmit: $(time_runs "$dir/esubmit" -N 1 --wrap true)"

# A job of 3 nodes makes every call sleep: the first one is abandoned at 1 s, and runs on.
"$dir/esubmit" -N 3 --wrap true > /dev/null
for _ in $(seq 100); do
    "$dir/econtrol" show stats | grep -q 'CallPastBudget=YES' && break
    sleep 0.1
done
echo "a call stuck past its budget:"
echo "  equeue:  $(time_runs "$dir/equeue")"
echo "  esubmit: $(time_runs "$dir/esubmit" -N 1 --wrap true)"
"$dir/econtrol" show stats | sed 's/^/  /'
grep -m1 'no plan within its time budget' "$tmp/batchd.log" | sed 's/^/  log: /'
