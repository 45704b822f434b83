#!/usr/bin/env bash
# esim against pyss (the reference simulator of the reference schedules) on the same normalised SWF
# trace: both replay it RUNS times, in alternation so that a machine's load falls on both alike,
# each run timed as a whole process; prints every time, the medians and their ratio, and (when
# $COMPARE names compare_schedule.py) how many of esim's starts equal pyss's.
#
#   scripts/bench-vs-pyss.sh PYSS_DIR TRACE
#
# PYSS_DIR: either an extracted pyss tree (holding `src/`) or a directory holding the pyss
# archive (`pyss-*.tar.gz`, extracted to a temporary directory). The
# runner that makes pyss write one CSV line per job is `$PYSS_DUMP`, else `PYSS_DIR/pyss_dump.py`.
# Nothing of pyss is part of this project: it is only run from where it is.
# TRACE: an SWF file, plain or gzip-compressed, with a `; MaxProcs:` header line (pyss takes
# about 15 s on the normalised KTH-SP2 of the reference schedules).
#
# Environment: RUNS (default 3), POLICY (cbf, easy or fcfs; default cbf), PYTHON2 (default
# python2.7 with PYENV_VERSION=2.7.18), ESIM_ARGS (more esim options, e.g. --linked), COMPARE
# (the reference schedules' compare_schedule.py: esim's starts are compared with pyss's).
# esim runs with `--events per-event`, the order of events pyss uses.
set -euo pipefail
# Runs are timed by bash's own clock: reading it starts no process. (A `date` run by `$(...)`
# between two commands was counted in the first one's time: about 1.5 ms of esim's 70 on
# KTH-SP2.) The C locale, for this shell only, keeps its decimal separator a dot.
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench-vs-pyss: needs bash 5 or later (EPOCHREALTIME)" >&2; exit 2; }
LC_ALL=C
cd "$(dirname "$0")/.."

if [ $# -ne 2 ]; then
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
pyss_dir=$(cd "$1" && pwd)
trace=$(realpath "$2")
runs=${RUNS:-3}
policy=${POLICY:-cbf}
case "$policy" in
    cbf) scheduler=ConservativeScheduler ;;
    easy) scheduler=EasyBackfillScheduler ;;
    fcfs) scheduler=FcfsScheduler ;;
    *) echo "bench-vs-pyss: POLICY must be cbf, easy or fcfs, not '$policy'" >&2; exit 2 ;;
esac
dump=${PYSS_DUMP:-$pyss_dir/pyss_dump.py}
[ -f "$dump" ] || { echo "bench-vs-pyss: no pyss runner at $dump (set PYSS_DUMP)" >&2; exit 2; }
[ -f "$trace" ] || { echo "bench-vs-pyss: no trace at $trace" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -d "$pyss_dir/src" ]; then
    src=$pyss_dir/src
else
    archive=$(ls "$pyss_dir"/pyss-*.tar.gz 2>/dev/null | head -n 1)
    [ -n "$archive" ] || { echo "bench-vs-pyss: neither src/ nor pyss-*.tar.gz in $pyss_dir" >&2; exit 2; }
    mkdir "$work/pyss" && tar -xzf "$archive" -C "$work/pyss"
    src=$work/pyss/src
fi
# pyss reads plain SWF; esim reads the same file.
case "$trace" in
    *.gz) zcat "$trace" > "$work/trace.swf" ;;
    *) cp "$trace" "$work/trace.swf" ;;
esac
procs=$(grep -m1 -i '^; *MaxProcs:' "$work/trace.swf" | tr -dc '0-9')
[ -n "$procs" ] || { echo "bench-vs-pyss: no '; MaxProcs:' line in $trace" >&2; exit 2; }

cargo build --release -q -p esim -p "esched-$policy"
esim=${CARGO_TARGET_DIR:-target}/release/esim
python2=${PYTHON2:-python2.7}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "trace $trace ($procs processors), policy $policy / pyss $scheduler, $runs runs each, alternating"
: > "$work/esim.times"
: > "$work/pyss.times"
for i in $(seq "$runs"); do
    t0=$EPOCHREALTIME
    # shellcheck disable=SC2086
    "$esim" --policy "$policy" --trace "$work/trace.swf" --events per-event -q \
        --jobs "$work/esim.csv" ${ESIM_ARGS:-} > /dev/null
    t1=$EPOCHREALTIME
    (cd "$src" && PYENV_VERSION=${PYENV_VERSION:-2.7.18} PYTHONPATH=. "$python2" -O "$dump" \
        "$procs" "$work/trace.swf" "$scheduler" "$work/pyss.csv" > /dev/null)
    t2=$EPOCHREALTIME
    e=$(echo "$t1 - $t0" | bc -l)
    p=$(echo "$t2 - $t1" | bc -l)
    printf 'run %d: esim %.3f s, pyss %.3f s\n' "$i" "$e" "$p"
    echo "$e" >> "$work/esim.times"
    echo "$p" >> "$work/pyss.times"
done
me=$(median < "$work/esim.times")
mp=$(median < "$work/pyss.times")
printf 'median of %d: esim %.3f s, pyss %.3f s: esim is %.1fx faster\n' \
    "$runs" "$me" "$mp" "$(echo "$mp / $me" | bc -l)"

if [ -n "${COMPARE:-}" ]; then
    echo "starts: $(python3 "$COMPARE" "$work/pyss.csv" "$work/esim.csv" | tail -n 1)"
else
    echo "starts: not compared (set COMPARE to compare_schedule.py)"
fi
