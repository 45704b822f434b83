#!/usr/bin/env bash
# Stands a Slurm 22.05 test cluster on this one machine, for batchd's Slurm pools in CI and the
# end-to-end tests: a private munged, one slurmctld and N slurmd's (nodes n1..nN, all on
# 127.0.0.1, one port each), every file of theirs under DIR, nothing of the system's Slurm or
# munge used or started.
#
#   scripts/slurm-cluster.sh install             install slurmctld slurmd slurm-client munge if
#                                                missing (root, apt-get); never starts the
#                                                system's own munge or Slurm services
#   scripts/slurm-cluster.sh up DIR [N]          nodes n1..nN (default 4, at most 99), after a
#                                                `down` of what DIR ran before, with a fresh
#                                                state (job ids start at 1 again); returns once
#                                                `sinfo` shows all N idle. Then
#                                                `. DIR/env` points the client tools (salloc,
#                                                srun, squeue, scancel, sinfo, scontrol) of
#                                                any user at this cluster
#   scripts/slurm-cluster.sh user DIR [NAME]     make sure the unprivileged user NAME (default
#                                                $SLURM_CLUSTER_USER) exists, and check that
#                                                it can use the cluster of DIR (`up` does this
#                                                for $SLURM_CLUSTER_USER)
#   scripts/slurm-cluster.sh fail-node DIR nI    crash node nI: SIGKILL its slurmd, its
#                                                slurmstepd's and their tasks. Slurm marks it
#                                                NOT_RESPONDING (`*`) after about 7 s and
#                                                DOWN, reason "Not responding", after about 14 s
#   scripts/slurm-cluster.sh revive-node DIR nI  start nI's slurmd again and wait until Slurm
#                                                takes the node back (ReturnToService=2)
#   scripts/slurm-cluster.sh down DIR            stop slurmctld, the slurmd's and munged,
#                                                SIGKILL every slurmstepd, job task and client
#                                                (srun, salloc, sbatch) of the cluster; keeps
#                                                DIR's key and configuration
#
# Environment: SLURM_CLUSTER_PORT, slurmctld's port (default 16817); the slurmd of nI listens on
# SLURM_CLUSTER_PORT+183+I (17001.. by default). SLURM_CLUSTER_CPUS, the CPUs each node declares
# (default 2, whatever the machine has). SLURM_CLUSTER_USER, the user `up` makes sure of
# (default esched; empty for none).
#
# DIR holds: env (`export SLURM_CONF=DIR/slurm.conf`), nodes (N), slurm.conf, munge.key, munge.socket (what
# AuthInfo=socket= names), state/ (StateSaveLocation), spool/nI/ (SlurmdSpoolDir), run/ (pid
# files), log/ (slurmctld.log, slurmd.nI.log, munged.log). DIR and its parents must be
# searchable by every user, and DIR's path may consist of [A-Za-z0-9._/+-] only: it goes
# unquoted into slurm.conf.
#
# `up` needs root, the packages and free ports. Where any of that fails, it prints one line
# starting `SKIP: ` on stdout, stops what it started and exits 77 (the tests skip on 77). The
# other subcommands exit 1 on failure. The daemons outlive this script (setsid): run `down` when
# done.
#
# Choices in slurm.conf:
# - SlurmUser=root: slurmctld writes DIR/state and the logs without a chown dance. slurmd runs
#   as root anyway, to start tasks as their user.
# - ProctrackType=proctrack/linuxproc: tracks a step's processes as the descendants of its
#   slurmstepd, which needs no system state. proctrack/cgroup would create cgroups of its own in
#   the machine's hierarchy (shared with whatever else runs here, and absent or read-only in
#   many containers); proctrack/pgid loses every task that calls setsid, linuxproc only those
#   that also daemonize (reparent to init), which `down` and fail-node catch by environment.
# - TaskPlugin=task/none: no binding or cgroup confinement on a shared test machine.
# - SlurmdParameters=config_overrides: the nodes declare SLURM_CLUSTER_CPUS CPUs whatever the
#   machine has, so a node is not drained for having fewer.
# - SlurmdTimeout=5, KillWait=2, MessageTimeout=5, InactiveLimit=0, ReturnToService=2: node loss
#   noticed within seconds, steps killed quickly, an allocation without a running srun never
#   cancelled, a node that comes back taken back.
# - MinJobAge=300: an ended job stays visible to `squeue -j ID -t all` for 5 minutes, then
#   `squeue -j ID` says "slurm_load_jobs error: Invalid job id specified" and exits 1.
# - No accounting (AccountingStorageType=accounting_storage/none): sacct says "Slurm accounting
#   storage is disabled".
#
# Slurm 22.05.8 (Debian bookworm) as measured on this cluster, as an unprivileged user with
# SLURM_CONF set (`up` takes 0.3-1 s, `down` 0.4-1 s, once 3.4 s):
# - `salloc --no-shell -N4 -t 10 -J esched-pool` exits 0 within ~20 ms, nothing on stdout and
#   "salloc: Granted job allocation ID" on stderr. salloc has no --parsable in 22.05; the id is
#   that line's last word. When it must wait it blocks, having printed "salloc: Pending job
#   allocation ID" and "salloc: job ID queued and waiting for resources" ("salloc: job ID has been
#   allocated resources" and the Granted line follow). With --immediate=S it gives up: "salloc:
#   error: Unable to allocate resources: Connection timed out" after S seconds, or at once
#   "...: Requested nodes are busy"; exit 1, the job CANCELLED. Without --exclusive an
#   allocation takes one CPU per node and other jobs may take the nodes' other CPUs.
# - `squeue -j ID -h -o '%T|%N|%e|%l'` gives RUNNING|n[1-4]|2026-11-27T20:43:25|10:00; with
#   SLURM_TIME_FORMAT=%s, %e and %S are epoch seconds. `scontrol show hostnames 'n[1-2,4]'`
#   gives one name a line. Once the job ended, plain `squeue -j ID` prints nothing (exit 0) and
#   `squeue -j ID -t all` shows CANCELLED, NODE_FAIL, TIMEOUT... until MinJobAge; an unknown id:
#   "slurm_load_jobs error: Invalid job id specified", exit 1. `squeue --json` works
#   (openapi/v0.0.38) but ignores -j: it lists every job.
# - `srun --jobid=ID --nodelist=n2,n3 -N2 -n2 --overlap CMD` from outside the allocation works:
#   SLURMD_NODENAME=n2/n3 (hostname(1) says the machine's name), SLURM_JOB_NODELIST=n[2-3] (the
#   step's nodes), SLURM_NODELIST=n[1-4]. A trivial step takes ~35-50 ms. A step without
#   --overlap on a node where another step without --overlap holds the CPU waits ("srun: Job ID
#   step creation temporarily disabled, retrying (Requested nodes are busy)", then "srun: Step
#   created for job ID"); with --overlap on either step it starts at once.
# - srun survives its parent's SIGKILL (reparented to init) and the step runs on. srun
#   SIGKILLed: the tasks run on to their end and the step stays in `squeue -s` meanwhile;
#   `scancel ID.STEP` kills it. srun SIGTERMed, or `scancel ID.STEP`: the step is killed within
#   ~40 ms, srun prints "slurmstepd-n3: error: *** STEP ID.S ON n3 CANCELLED AT ... ***" and
#   "srun: error: n3: task 0: Killed" and exits 137.
# - `scancel ID` of the allocation: a running srun prints the CANCELLED line and "srun: error:
#   n2: task 0: Terminated" and exits 143 within ~40 ms; the job is COMPLETING for ~0.1 s (~2.7 s
#   if a step's srun was gone), then CANCELLED. A later `srun --jobid=ID` exits 1: "srun: error:
#   Slurm job ID has expired". sacct: "Slurm accounting storage is disabled", exit 1.
# - An allocation reaching its time limit is ended up to ~30 s late (slurmctld checks limits
#   periodically): its sruns print "slurmstepd-n3: error: *** STEP ID.S ON n3 CANCELLED AT ...
#   DUE TO TIME LIMIT ***" and exit 143; the job goes COMPLETING (reason TimeLimit), then TIMEOUT.
# - A lost node (fail-node): NOT_RESPONDING (`*`) after ~7 s, DOWN+NOT_RESPONDING after ~14 s,
#   `sinfo -R` reason "Not responding". An allocation on it ends NODE_FAIL (reason NodeDown), its
#   sruns print "srun: error: Node failure on n4" and exit; with `salloc --no-kill` the
#   allocation stays RUNNING without the node (its steps there are killed). revive-node: the
#   node is idle again at once.
# - Inside a step, srun takes the step's nodes for the job's (SLURM_JOB_NODELIST): a nested
#   `srun --overlap -N2` in a one-node step fails "srun: error: Only allocated 1 nodes asked for
#   2" unless SLURM_JOB_NODELIST is unset or set to the allocation's nodes.
set -Eeuo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/install-packages.sh
source "$(dirname "$0")/lib/install-packages.sh"

port=${SLURM_CLUSTER_PORT:-16817}
cpus=${SLURM_CLUSTER_CPUS:-2}
default_user=${SLURM_CLUSTER_USER-esched}

# In `up`, every failure becomes one SKIP line and exit 77; elsewhere a message and exit 1.
mode=plain
up_dir=
fail() {
    if [[ $mode == up ]]; then
        mode=failing
        [[ -z $up_dir ]] || (down "$up_dir") >/dev/null 2>&1 || true
        echo "SKIP: $*"
        exit 77
    fi
    echo "slurm-cluster: $*" >&2
    exit 1
}
trap 'fail "command failed at line $LINENO: $BASH_COMMAND"' ERR

usage() {
    sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}

# Sets dir to DIR as an absolute path, and conf to its slurm.conf.
set_dir() {
    dir=$1
    [[ $dir == /* ]] || dir=$PWD/$dir
    [[ $dir =~ ^[A-Za-z0-9._/+-]+$ ]] || fail "DIR '$1' must consist of [A-Za-z0-9._/+-] only"
    dir=${dir%/}
    conf=$dir/slurm.conf
}

# Sets i to the index of node name $1 (nI), a node of the cluster `up` last stood in DIR.
node_index() {
    local n=0
    [[ $1 =~ ^n([1-9][0-9]?)$ ]] || fail "'$1' is not a node name n1..n99"
    i=${BASH_REMATCH[1]}
    if [[ -f $dir/nodes ]]; then read -r n <"$dir/nodes" || true; fi
    ((i <= n)) || fail "$dir has no node $1 (run up first)"
}

node_port() { echo $((port + 183 + $1)); }

# ---- finding the cluster's processes -----------------------------------------------------------

# Is process $1 alive and not a zombie? (This machine's init may reap late.)
alive() {
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $state && $state != Z ]]
}

# "PID COMM ARGS" of every live process one of whose arguments is exactly $1.
procs_with_arg() {
    local f pid comm args
    for f in $(grep -lzxF -- "$1" /proc/[0-9]*/cmdline 2>/dev/null || true); do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        alive "$pid" || continue
        { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || continue
        args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
        echo "$pid $comm $args"
    done
}

# PIDs of the daemons: slurmctld, the slurmd of node $1 (all with $1 = all), munged.
slurmctld_pids() {
    local pid comm args
    while read -r pid comm args; do
        [[ -n $pid && $comm == slurmctld ]] && echo "$pid"
    done < <(procs_with_arg "$conf")
    return 0
}
slurmd_pids() {
    local pid comm args
    while read -r pid comm args; do
        [[ -n $pid && $comm == slurmd ]] || continue
        [[ $1 == all || " $args " == *" -N n$1 "* ]] && echo "$pid"
    done < <(procs_with_arg "$conf")
    return 0
}
munged_pids() {
    local pid comm args
    while read -r pid comm args; do
        [[ -n $pid && $comm == munged ]] && echo "$pid"
    done < <(procs_with_arg "--socket=$dir/munge.socket")
    return 0
}

# PIDs of the live processes whose environment holds SLURM_CONF=DIR/slurm.conf and, with $1,
# also the variable $1 (`NAME=` for any value, `NAME=VALUE` for that one). slurmstepd inherits
# it from slurmd, the tasks from srun.
procs_with_env() {
    local f pid
    for f in $(grep -lzxF -- "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null || true); do
        pid=${f#/proc/}
        pid=${pid%/environ}
        alive "$pid" || continue
        if [[ -n ${1:-} ]]; then
            if [[ $1 == *= ]]; then
                grep -qzE -- "^${1}" "$f" 2>/dev/null || continue
            else
                grep -qzxF -- "$1" "$f" 2>/dev/null || continue
            fi
        fi
        echo "$pid"
    done
}

# PIDs of the slurmstepd's of node $1 (all with $1 = all): those holding a socket in the node's
# spool directory, plus (for all) any slurmstepd of this cluster, which may not have one yet.
stepd_pids() {
    local under=$dir/spool/ inodes=" " ino path f pid comm link
    [[ $1 == all ]] || under=$dir/spool/n$1/
    while read -r _ _ _ _ _ _ ino path; do
        [[ -n ${path:-} && $path == "$under"* ]] && inodes+="$ino "
    done </proc/net/unix
    {
        for f in /proc/[0-9]*/comm; do
            { read -r comm <"$f"; } 2>/dev/null || continue
            [[ $comm == slurmstepd ]] || continue
            pid=${f#/proc/}
            pid=${pid%/comm}
            alive "$pid" || continue
            for link in $(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 -printf '%l\n' 2>/dev/null || true); do
                [[ $link == socket:\[*\] ]] || continue
                ino=${link#socket:[}
                ino=${ino%]}
                if [[ $inodes == *" $ino "* ]]; then
                    echo "$pid"
                    break
                fi
            done
        done
        if [[ $1 == all ]]; then
            for pid in $(procs_with_env); do
                { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || continue
                [[ $comm != slurmstepd ]] || echo "$pid"
            done
        fi
        :
    } | sort -un
}

# The live descendants of the PIDs given.
descendants() {
    (($#)) || return 0
    local -A kids=()
    local f pid ppid rest
    for f in /proc/[0-9]*/stat; do
        { read -r pid rest <"$f"; } 2>/dev/null || continue
        # comm, in parentheses, may hold spaces: the fields after its last `)`.
        rest=${rest##*) }
        read -r _ ppid _ <<<"$rest"
        kids[$ppid]+="$pid "
    done
    local -a todo=("$@")
    while ((${#todo[@]})); do
        pid=${todo[0]}
        todo=("${todo[@]:1}")
        for f in ${kids[$pid]:-}; do
            alive "$f" && echo "$f"
            todo+=("$f")
        done
    done
}

# Signals the PIDs that $1 (a command printing PIDs) lists until none is left: $2 first, KILL
# after $3 seconds, failing 5 seconds later. Rescanning each round catches what is started
# meanwhile (a task forked while its stepd was being killed).
stop_all() {
    local list=$1 sig=$2 grace=$3 t0=$SECONDS
    local -a found
    while :; do
        mapfile -t found < <(eval "$list" | sort -un)
        ((${#found[@]})) || return 0
        ((SECONDS - t0 < grace)) || sig=KILL
        ((SECONDS - t0 < grace + 5)) || fail "processes ${found[*]} outlive SIGKILL"
        kill -s "$sig" "${found[@]}" 2>/dev/null || true
        sleep 0.05
    done
}

# What crashes with node $1: its slurmd, its stepd's, their descendants and the tasks that left
# them (same environment, reparented elsewhere).
node_procs() {
    local -a stepds
    slurmd_pids "$1"
    mapfile -t stepds < <(stepd_pids "$1")
    ((${#stepds[@]})) && printf '%s\n' "${stepds[@]}" && descendants "${stepds[@]}"
    procs_with_env "SLURMD_NODENAME=n$1"
}

# Everything of the cluster but slurmctld, the slurmd's and munged: the stepd's, their
# descendants, tasks that left them, and the clients that talk to this cluster.
job_procs() {
    local -a stepds
    local pid comm
    mapfile -t stepds < <(stepd_pids all)
    ((${#stepds[@]})) && printf '%s\n' "${stepds[@]}" && descendants "${stepds[@]}"
    procs_with_env SLURMD_NODENAME=
    for pid in $(procs_with_env); do
        { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || continue
        case $comm in srun | salloc | sbatch | sattach) echo "$pid" ;; esac
    done
}

ctld_procs() {
    local -a pids
    mapfile -t pids < <(slurmctld_pids)
    ((${#pids[@]})) && printf '%s\n' "${pids[@]}" && descendants "${pids[@]}" # slurmscriptd
    return 0
}

# ---- subcommands -------------------------------------------------------------------------------

packages=(slurmctld slurmd slurm-client munge)

install() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
        command -v srun >/dev/null && command -v munged >/dev/null; then
        return 0
    fi
    install_packages "munge.service slurmctld.service slurmd.service" "${packages[@]}"
    # Should an init system have started the system's munged all the same: stop it (the one on
    # the default socket; ours have their own).
    if [[ -S /run/munge/munge.socket.2 ]]; then munged --stop >/dev/null 2>&1 || true; fi
    if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
        fail "slurmctld or munged missing after installing ${packages[*]}"
    fi
    echo "slurm-cluster: installed ${packages[*]}" >&2
}

# Is 127.0.0.1:$1 free? Prints free, busy, or why it cannot be used.
probe() {
    local err
    # shellcheck disable=SC2016 # the inner shell expands them
    if err=$(timeout 2 bash -c ': >"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>&1); then
        echo busy
        return 0
    fi
    case $err in
    *refused*) echo free ;;
    *) echo "${err##*: }" ;;
    esac
}

# Every parent of DIR must let other users through, or they cannot read slurm.conf.
check_searchable() {
    local d=$dir perm
    while [[ -n $d ]]; do
        d=${d%/*}
        perm=$(stat -c %A "${d:-/}")
        [[ ${perm:9:1} == [xt] ]] || fail "${d:-/} is not searchable by other users (mode $perm)"
    done
}

write_conf() {
    local n=$1 ports
    ports=$(node_port 1)
    ((n == 1)) || ports="[$ports-$(node_port "$n")]"
    local nodes=n1
    ((n == 1)) || nodes="n[1-$n]"
    # The second partition, for tests of allocations in other partitions: the last two nodes.
    local other=n$n
    ((n < 2)) || other="n[$((n - 1))-$n]"
    cat >"$conf.new" <<EOF
# Written by scripts/slurm-cluster.sh up: a test cluster on this one machine. Daemons started as
#   slurmctld -D -f $conf
#   slurmd -D -N nI -f $conf
ClusterName=esched-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdTimeout=5
SlurmctldTimeout=5
InactiveLimit=0
KillWait=2
MessageTimeout=5
MinJobAge=300
NodeName=$nodes NodeHostname=localhost NodeAddr=127.0.0.1 Port=$ports CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=other Nodes=$other MaxTime=INFINITE State=UP
EOF
    chmod 644 "$conf.new"
    mv "$conf.new" "$conf"
}

# Starts munged on DIR's socket and waits until it answers.
start_munge() {
    rm -f "$dir/munge.socket" "$dir/munge.socket.lock" "$dir/run/munged.pid"
    # --force: DIR may lie under a directory munged finds too open (a world-writable one without
    # the sticky bit); a test cluster does not mind.
    setsid -f munged --foreground --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/run/munged.seed" </dev/null >>"$dir/log/munged.out" 2>&1 ||
        fail "cannot start munged (see $dir/log/munged.log)"
    local t0=$SECONDS
    until munge -n -S "$dir/munge.socket" 2>/dev/null | unmunge -S "$dir/munge.socket" >/dev/null 2>&1; do
        ((SECONDS - t0 < 5)) || fail "munged does not answer: $(tail -n1 "$dir/log/munged.log" 2>/dev/null)"
        sleep 0.05
    done
}

start_slurmd() {
    local i=$1
    [[ -z $(slurmd_pids "$i") ]] || fail "n$i's slurmd runs already"
    [[ $(probe "$(node_port "$i")") == free ]] || fail "port $(node_port "$i") of n$i is in use"
    mkdir -p "$dir/spool/n$i"
    SLURM_CONF=$conf setsid -f slurmd -D -N "n$i" -f "$conf" </dev/null >>"$dir/log/slurmd.n$i.out" 2>&1 ||
        fail "cannot start n$i's slurmd"
}

# "NODE STATE" per node, as sinfo sees them (empty while slurmctld does not answer).
node_states() { SLURM_CONF=$conf sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true; }

# Waits (at most $2 seconds) until every node of $1 (all: every node) is in a usable state.
wait_nodes() {
    local want=$1 until=$((SECONDS + $2)) states node state ok
    while :; do
        states=$(node_states)
        ok=1
        [[ -n $states ]] || ok=0
        while read -r node state; do
            [[ -n $node ]] || continue
            [[ $want == all || $want == "$node" ]] || continue
            case $state in idle | mixed | allocated | completing) ;; *) ok=0 ;; esac
        done <<<"$states"
        ((ok)) && return 0
        [[ -n $(slurmctld_pids) ]] || fail "slurmctld ended: $(tail -n1 "$dir/log/slurmctld.log" 2>/dev/null)"
        ((SECONDS < until)) || fail "nodes not up after $2 s: $(echo "$states" | tr '\n' ' ')"
        sleep 0.1
    done
}

# Makes sure user $1 exists and can use the cluster: read slurm.conf, reach munged, ask
# slurmctld.
ensure_user() {
    local name=$1 out
    [[ $name =~ ^[a-z_][a-z0-9_-]*$ ]] || fail "'$name' is not a user name"
    if ! id -u "$name" >/dev/null 2>&1; then
        useradd -m -s /bin/bash "$name" >/dev/null 2>&1 || fail "cannot create user $name"
    fi
    out=$(runuser -u "$name" -- env SLURM_CONF="$conf" sinfo -h -o %D 2>&1) ||
        fail "user $name cannot use the cluster: $out"
}

up() {
    local n i tool
    mode=up
    (($# >= 1 && $# <= 2)) || usage
    set_dir "$1"
    n=${2:-4}
    [[ $n =~ ^[1-9][0-9]?$ ]] || fail "node count '$n' not in 1..99"
    if [[ ! $port =~ ^[0-9]+$ ]] || ((port < 1024 || port + 183 + n > 65535)); then
        fail "SLURM_CLUSTER_PORT '$port' is not a usable port"
    fi
    [[ $cpus =~ ^[1-9][0-9]*$ ]] || fail "SLURM_CLUSTER_CPUS '$cpus' is not a CPU count"
    [[ $EUID -eq 0 ]] || fail "not root"
    for tool in slurmctld slurmd munged munge unmunge sinfo scontrol srun salloc setsid runuser timeout; do
        command -v "$tool" >/dev/null || fail "$tool missing (run scripts/slurm-cluster.sh install)"
    done
    # A previous up on DIR gives way; its jobs end.
    (mode=plain && down "$dir") >/dev/null 2>&1 || fail "cannot stop the cluster already running in $dir"
    up_dir=$dir
    mkdir -p "$dir"
    chmod 755 "$dir"
    check_searchable
    [[ $(probe "$port") == free ]] || fail "slurmctld's port $port is in use: $(probe "$port")"
    for ((i = 1; i <= n; i++)); do
        [[ $(probe "$(node_port "$i")") == free ]] || fail "port $(node_port "$i") of n$i is in use"
    done
    # A fresh state: no job of a previous run is recovered.
    rm -rf "$dir/state" "$dir/spool" "$dir/run"
    mkdir -p "$dir/state" "$dir/spool" "$dir/run" "$dir/log"
    chmod 755 "$dir/state" "$dir/spool" "$dir/run" "$dir/log"
    if [[ ! -s $dir/munge.key ]]; then
        (umask 077 && head -c 1024 /dev/urandom >"$dir/munge.key")
    fi
    chmod 400 "$dir/munge.key"
    write_conf "$n"
    start_munge
    SLURM_CONF=$conf setsid -f slurmctld -D -f "$conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 ||
        fail "cannot start slurmctld"
    for ((i = 1; i <= n; i++)); do start_slurmd "$i"; done
    wait_nodes all 30
    local count
    count=$(node_states | wc -l)
    ((count == n)) || fail "sinfo shows $count nodes, not $n"
    echo "$n" >"$dir/nodes"
    echo "export SLURM_CONF=$conf" >"$dir/env"
    chmod 644 "$dir/env"
    [[ -z $default_user ]] || ensure_user "$default_user"
    mode=plain
    if ((n == 1)); then
        echo "cluster up: n1 (. $dir/env)"
    else
        echo "cluster up: n[1-$n] (. $dir/env)"
    fi
}

user() {
    (($# >= 1 && $# <= 2)) || usage
    set_dir "$1"
    [[ $EUID -eq 0 ]] || fail "user needs root"
    local name=${2:-$default_user}
    [[ -n $name ]] || fail "no user name given"
    [[ -f $conf ]] || fail "$conf missing: run up first"
    ensure_user "$name"
}

fail_node() {
    local i
    (($# == 2)) || usage
    set_dir "$1"
    node_index "$2"
    stop_all "node_procs $i" KILL 0
    rm -f "$dir/run/slurmd.n$i.pid"
}

revive_node() {
    local i
    (($# == 2)) || usage
    set_dir "$1"
    node_index "$2"
    [[ -f $conf ]] || fail "$conf missing: run up first"
    [[ -n $(slurmctld_pids) ]] || fail "slurmctld of $dir does not run"
    start_slurmd "$i"
    wait_nodes "n$i" 30
}

down() {
    (($# == 1)) || usage
    set_dir "$1"
    # The daemons first and gently, so that they remove their pid files; slurmd leaves its
    # stepd's running, so those and their tasks go next, then munged, which they all need.
    stop_all ctld_procs TERM 3
    stop_all "slurmd_pids all" TERM 3
    stop_all job_procs KILL 0
    stop_all munged_pids TERM 3
    rm -f "$dir/munge.socket" "$dir/munge.socket.lock" "$dir"/run/*.pid
}

case ${1:-} in
install) (($# == 1)) || usage && install ;;
up) shift && up "$@" ;;
user) shift && user "$@" ;;
fail-node) shift && fail_node "$@" ;;
revive-node) shift && revive_node "$@" ;;
down) shift && down "$@" ;;
*) usage ;;
esac
