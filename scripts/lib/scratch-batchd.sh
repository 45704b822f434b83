# shellcheck shell=bash
# Sourced by the scripts that measure or draw something on a throw-away batchd
# (scripts/bench-whatif.sh, docs/whatif-figures/make.sh): one pool under a policy, in a temporary
# directory, stopped and removed when the script exits.
#
#   scratch_batchd BIN POOL NODES POLICY
#
# BIN holds batchd, the tools and the policies' libraries. Sets `dir` (the directory) and
# `pid`, exports ESCHED_SOCKET, and returns once the daemon answers. On exit the jobs are
# cancelled and let end first: their supervisors outlive the daemon by design.

scratch_batchd() {
    local bin=$1 pool=$2 nodes=$3 policy=$4
    dir=$(mktemp -d)
    pid=
    scratch_bin=$bin
    trap scratch_batchd_stop EXIT
    cat >"$dir/batchd.toml" <<CONF
socket = "$dir/batchd.sock"
state_dir = "$dir/state"
plugin_dir = "$bin"
[[pool]]
name = "$pool"
nodes = $nodes
[policy]
name = "$policy"
CONF
    "$bin/batchd" --config "$dir/batchd.toml" >"$dir/batchd.log" 2>&1 &
    pid=$!
    export ESCHED_SOCKET="$dir/batchd.sock"
    for _ in $(seq 100); do "$bin/econtrol" version >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "batchd did not answer; its log:" >&2
    cat "$dir/batchd.log" >&2
    return 1
}

scratch_batchd_stop() {
    "$scratch_bin/ecancel" -t PD,R >/dev/null 2>&1 || true
    for _ in $(seq 50); do
        [ -z "$("$scratch_bin/equeue" --noheader -t R,CG 2>/dev/null)" ] && break
        sleep 0.1
    done
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
