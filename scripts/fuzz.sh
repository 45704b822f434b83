#!/bin/sh
# Runs esched's cargo-fuzz targets (fuzz/, see docs/fuzzing.md) for a fixed number of
# executions each, one after the other, at the lowest CPU priority.
#
#   scripts/fuzz.sh [TARGET|all] [RUNS]      default: all targets, 1000000 executions each
#
# Needs a nightly toolchain; installs cargo-fuzz (`cargo install --locked cargo-fuzz`) when it
# is missing. The corpus grows in fuzz/corpus/TARGET (not versioned), starting from the seeds in
# fuzz/seeds/TARGET; a crash leaves its input in fuzz/artifacts/TARGET and makes this script
# exit non-zero. Each run's libFuzzer log is kept in fuzz/logs/TARGET.log; its last line says
# how many executions ran in how many seconds.
set -eu

cd "$(dirname "$0")/.."
# One target a line, in the order they run.
ALL="
proto_request
swf_reader
batchd_config
esubmit_time
batchd_frames
"
ALL=$(echo $ALL)
target=${1:-all}
runs=${2:-1000000}
case "$target" in
    all) targets=$ALL ;;
    *)
        case " $ALL " in
            *" $target "*) targets=$target ;;
            *) echo "fuzz.sh: unknown target '$target' (targets: $ALL)" >&2; exit 2 ;;
        esac
        ;;
esac
case "$runs" in
    '' | *[!0-9]*) echo "fuzz.sh: RUNS must be a number, not '$runs'" >&2; exit 2 ;;
esac

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is missing; installing it (cargo install cargo-fuzz)" >&2
    cargo install --locked cargo-fuzz
fi

mkdir -p fuzz/logs
status=0
for t in $targets; do
    mkdir -p "fuzz/corpus/$t"
    start=$(date +%s)
    # -O: optimised, with debug assertions and overflow checks as in a test build.
    if nice -n 19 cargo +nightly fuzz run -O "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -runs="$runs" -print_final_stats=1 >"fuzz/logs/$t.log" 2>&1; then
        verdict="no crash"
    else
        verdict="FAILED (see fuzz/logs/$t.log and fuzz/artifacts/$t)"
        status=1
    fi
    end=$(date +%s)
    done_line=$(grep -E '^Done [0-9]+ runs' "fuzz/logs/$t.log" | tail -n 1 || true)
    echo "$t: ${done_line:-no 'Done' line}; $((end - start)) s wall with the build; $verdict"
done
exit $status
