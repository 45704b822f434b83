#!/usr/bin/env bash
# Slurm's workflow tools, unchanged, against a real batchd: submitit and dask-jobqueue, each
# from the package registry in a Python virtual environment, drive esched through the Slurm
# command names (sbatch, sacct, scancel, scontrol, srun, ...) first on PATH.
#
#   scripts/slurm-tools-e2e.sh [CASE...]
#
# Cases (default: all): submitit-one (a function's result), submitit-array (map_array of
# three), submitit-requeue (a Checkpointable past its time: USR2, `scontrol requeue`, rerun
# from the checkpoint), dask-map (SLURMCluster scaled to two workers computes a map).
#
# Environment:
#   ESCHED_BIN        directory holding batchd, the tools and the policy plugins; default: build
#                     them (release) into ${CARGO_TARGET_DIR:-target}/release
#   SLURM_TOOLS_VENV  the virtual environment; default ${CARGO_TARGET_DIR:-target}/slurm-tools-venv,
#                     created on the first run and reused
#   SLURM_TOOLS_KEEP  set: keep the temporary directory (config, batchd.log, job folders)
#
# Where pip cannot install the packages (no registry), it prints one line starting
# `slurm-tools-e2e: SKIP` and exits 0. Otherwise it exits non-zero when a case fails, after
# printing the case's job logs and the end of batchd's log.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}

say() { echo "slurm-tools-e2e: $*" >&2; }

# ---- the virtual environment -------------------------------------------------------------
venv=${SLURM_TOOLS_VENV:-$target/slurm-tools-venv}
packages=(submitit dask-jobqueue distributed)
if ! "$venv/bin/python" -c 'import submitit, dask_jobqueue, distributed' 2>/dev/null; then
    mkdir -p "$(dirname "$venv")"
    fresh=; [ -e "$venv" ] || fresh=1
    piplog=$(mktemp)
    if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check \
        "${packages[@]}"; } >"$piplog" 2>&1; then
        echo "slurm-tools-e2e: SKIP: no virtual environment with ${packages[*]} from the" \
            "package registry ($(grep -v '^\s*$' "$piplog" | tail -1 | cut -c1-160))"
        rm -f "$piplog"
        [ -z "$fresh" ] || rm -rf "$venv"
        exit 0
    fi
    rm -f "$piplog"
fi
say "$("$venv/bin/python" -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("submitit", "dask-jobqueue", "distributed")))')"

# ---- the binaries ------------------------------------------------------------------------
if [ -n "${ESCHED_BIN:-}" ]; then
    bin=$(cd "$ESCHED_BIN" && pwd)
else
    cargo build --release -q -p batchd --bin batchd -p esched-cbf -p cli-tools --bins
    bin=$target/release
fi
for b in batchd esubmit equeue ecancel eacct einfo econtrol erun ealloc esched; do
    [ -x "$bin/$b" ] || { say "$bin/$b missing"; exit 1; }
done

# ---- the Slurm command names -------------------------------------------------------------
# esched's own directory of Slurm names (links to the tools): the cases go through exactly what
# a user who opts in gets.
make_slurm_commands() {
    "$bin/esched" slurm-compat "$1" >/dev/null 2>&1 ||
        { say "esched slurm-compat failed"; "$bin/esched" slurm-compat "$1"; exit 1; }
}

# ---- a cluster of its own ----------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/esched-slurm-tools.XXXXXX")
chmod 755 "$tmp"
mkdir -p "$tmp/state" "$tmp/work"
export ESCHED_SOCKET=$tmp/batchd.sock
plugins=$bin
[ -e "$bin/libesched_cbf.so" ] || plugins=$bin/deps
cat >"$tmp/batchd.toml" <<EOF
socket = "$ESCHED_SOCKET"
state_dir = "$tmp/state"
plugin_dir = "$plugins"
repolicy_interval_ms = 10
grace_period_ms = 2000
sync = "normal"

[[pool]]
name = "debug"
nodes = 4
cpus_per_node = 2
mem_per_node = 4096

[policy]
name = "cbf"
EOF

daemon=
cleanup() {
    local rc=$?
    if [ -n "$daemon" ]; then
        # Jobs first: batchd's supervisors outlive it, so nothing may be left running.
        "$bin/ecancel" -u "$(id -un)" >/dev/null 2>&1 || true
        for _ in $(seq 100); do
            [ -z "$("$bin/equeue" -h -t R,CG 2>/dev/null)" ] && break
            sleep 0.1
        done
        kill "$daemon" 2>/dev/null || true
        wait "$daemon" 2>/dev/null || true
    fi
    if [ -n "${SLURM_TOOLS_KEEP:-}" ] || [ "$rc" -ne 0 ]; then
        say "kept $tmp"
    else
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin/batchd" --config "$tmp/batchd.toml" >"$tmp/batchd.log" 2>&1 </dev/null &
daemon=$!
for _ in $(seq 200); do
    "$bin/einfo" >/dev/null 2>&1 && break
    kill -0 "$daemon" 2>/dev/null || { say "batchd exited:"; cat "$tmp/batchd.log" >&2; exit 1; }
    sleep 0.05
done

make_slurm_commands "$tmp/slurm-bin"
# The jobs inherit this PATH (sbatch's --export=ALL): their srun and scontrol are these too.
export PATH=$tmp/slurm-bin:$venv/bin:$PATH
for s in SBATCH_PARTITION SBATCH_TIMELIMIT SBATCH_JOB_NAME SBATCH_EXPORT SQUEUE_FORMAT \
    SACCT_FORMAT SUBMITIT_PREEMPT_SIGNAL DASK_JOBQUEUE__SLURM__QUEUE; do
    unset "$s"
done

# ---- the cases ---------------------------------------------------------------------------
set +e
timeout -k 5 270 "$venv/bin/python" "$root/tests/slurm-tools/cases.py" \
    --work "$tmp/work" --batchd-log "$tmp/batchd.log" "$@"
rc=$?
set -e
[ "$rc" -eq 124 ] && say "the cases did not finish within 270 s"
exit "$rc"
