#!/usr/bin/env bash
# batchd's benchmarks, printed (not asserted): submissions/s through the socket API and through
# esubmit processes, submit-to-start latency on an idle cluster, equeue with 100,000 pending.
# Each run boots its own batchd on a temporary socket and state directory.
#
#   scripts/bench-batchd.sh [ebench options...]     e.g. --queue 20000 --sync normal
#
# Only the equeue timings (fills the queue, then times equeue, --records, -t R and hyperfine):
#   scripts/bench-batchd.sh --latency 0 --esubmit 0 --per-client 0 --sync normal
# (`--sync normal` only makes the fill faster; listings do not touch the database.)
#
# Environment: BENCH_PROFILE=release (default) or dev.
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${BENCH_PROFILE:-release}"
flag=(); dir=target/debug
if [ "$profile" = release ]; then flag=(--release); dir=target/release; fi
dir="${CARGO_TARGET_DIR:-target}/${dir#target/}"

cargo build "${flag[@]}" -q -p batchd --bin batchd -p esched-cbf \
    -p esched-bench --bin ebench -p cli-tools --bin esubmit --bin equeue


# ebench also runs `hyperfine` on equeue at the full queue when hyperfine is installed
# (apt-get install -y hyperfine); without it, its own loop of timed runs stands.
echo "== ebench ($profile build, $(nproc) cores, $(uname -r))"
exec "$dir/ebench" --batchd "$dir/batchd" "$@"
