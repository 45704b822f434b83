#!/usr/bin/env bash
# batchd's benchmarks, printed (not asserted): submit-to-start latency on an idle cluster (probes
# back to back, each submitted right after the previous job's end, and spaced, each 300 ms after
# it), a burst of 10,000 submissions behind a job holding every node (its time and the scheduling
# passes it cost), job throughput with 0.1 s jobs on 8 nodes and 200 / 20,000 pending,
# submissions/s through the socket API and through esubmit processes, equeue with 100,000
# pending. Each part boots its own batchd on a temporary socket and state directory.
#
#   scripts/bench-batchd.sh [ebench options...]     e.g. --queue 20000 --sync normal
#
# The scheduling figures of docs/batchd.md ("Figures") alone:
#   scripts/bench-batchd.sh --per-client 0 --esubmit 0 --queue 0 --runs 0
# The same against another batchd, e.g. an older commit built into its own target directory:
#   git worktree add /tmp/old REF && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target \
#       cargo build --release -p batchd --bin batchd)
#   scripts/bench-batchd.sh --batchd /tmp/old-target/release/batchd --per-client 0 --esubmit 0 --queue 0 --runs 0
# A config line for the daemon, e.g. the pacing of passes: --set scheduling.gap_factor=1
#
# Only the equeue timings (fills the queue, then times equeue, --records, -t R and hyperfine):
#   scripts/bench-batchd.sh --latency 0 --burst 0 --throughput 0 --esubmit 0 --per-client 0 --sync normal
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
# A --batchd among the options overrides this one.
exec "$dir/ebench" --batchd "$dir/batchd" "$@"
