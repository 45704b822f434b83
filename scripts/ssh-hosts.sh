#!/usr/bin/env bash
# Stands several OpenSSH servers on this one machine as distinct hosts, for batchd's ssh pools in
# CI and the end-to-end tests. Each host nodeI is its own sshd in its own UTS namespace (so
# `hostname` there says nodeI), listening on its own loopback address 127.0.0.(10+I).
#
#   scripts/ssh-hosts.sh install             install openssh-server/-client if missing (root,
#                                            apt-get); never starts the system's own sshd
#   scripts/ssh-hosts.sh up DIR [N]          hosts node1..nodeN (default 4), after a `down` of
#                                            what DIR ran before; then
#                                            `ssh -F DIR/ssh_config nodeI CMD` runs CMD on nodeI
#   scripts/ssh-hosts.sh stop-host DIR I     stop nodeI's sshd: the listener and every sshd
#                                            serving a connection, so every ssh connection to it
#                                            (a ControlMaster's too) drops; its jobs keep running
#   scripts/ssh-hosts.sh start-host DIR I    start nodeI's sshd again (same keys, same namespace
#                                            while its jobs keep that alive) and wait until it
#                                            answers
#   scripts/ssh-hosts.sh down DIR            stop every host and SIGKILL every process left in
#                                            their namespaces; keeps DIR's keys and configs
#
# Environment: SSH_HOSTS_PORT, the port every host listens on (default 2222).
#
# DIR holds: id_ed25519 (the client key, root's on every host), authorized_keys, known_hosts
# (written from the host keys, so no first-connection prompt), ssh_config (one `Host nodeI`
# block each) and per host nodeI/{sshd_config,ssh_host_ed25519_key,sshd.pid,sshd.log,uts}, where
# `uts` records the host's UTS namespace (its inode) so that stop-host, start-host and down find
# its processes after the listener is gone.
#
# `up` needs root, unshare and a usable loopback address per host. Where any of that fails, it
# prints one line starting `SKIP: ` on stdout, stops what it started and exits 77 (the tests
# skip on 77). The other subcommands exit 1 on failure. The sshd's outlive this script (setsid):
# run `down` when done.
set -Eeuo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/install-packages.sh
source "$(dirname "$0")/lib/install-packages.sh"

port=${SSH_HOSTS_PORT:-2222}
sshd_bin=/usr/sbin/sshd
# Names of the sshd processes serving connections: OpenSSH 9.8 split them into sshd-session (and
# 10.0 into sshd-auth); older ones are all `sshd`.
sshd_comms=" sshd sshd-session sshd-auth "

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
    echo "ssh-hosts: $*" >&2
    exit 1
}
trap 'fail "command failed at line $LINENO: $BASH_COMMAND"' ERR

usage() {
    sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}

addr_of() { echo "127.0.0.$((10 + $1))"; }

# Sets dir to DIR as an absolute path. Its paths go unquoted into sshd_config and ssh_config, so
# it may hold only characters that need no quoting there (and no `%`, which both expand).
set_dir() {
    dir=$1
    [[ $dir == /* ]] || dir=$PWD/$dir
    [[ $dir =~ ^[A-Za-z0-9._/+-]+$ ]] || fail "DIR '$1' must consist of [A-Za-z0-9._/+-] only"
    dir=${dir%/}
}

check_index() { [[ $1 =~ ^[1-9][0-9]*$ && $1 -le 245 ]] || fail "host index '$1' not in 1..245"; }

# ---- finding a host's processes ----------------------------------------------------------------

# "PID COMM" of every process in the UTS namespace whose inode is $1; of the first only with
# $2 = first (rather than `| head`, whose early exit fails the pipeline under pipefail).
ns_procs() {
    local path ino pid comm
    while read -r path ino; do
        [[ $ino == "$1" ]] || continue
        pid=${path#/proc/}
        pid=${pid%%/*}
        { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || continue
        echo "$pid $comm"
        [[ ${2:-} != first ]] || break
    done < <(stat -L -c '%n %i' /proc/[0-9]*/ns/uts 2>/dev/null || true)
}

# The listener of host $2 under DIR $1: the sshd started with its sshd_config. sshd rewrites its
# command line to one string ("sshd: /usr/sbin/sshd -D -f CONFIG ... [listener] ..."), so the
# path is matched as a word of a NUL-separated argument.
listener_pid() {
    local f pid comm re=$1/node$2/sshd_config
    re=${re//./\\.}
    re=${re//+/\\+}
    for f in $(grep -lzE -- "(^| )$re( |\$)" /proc/[0-9]*/cmdline 2>/dev/null || true); do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || continue
        [[ $sshd_comms == *" $comm "* ]] && echo "$pid" && return 0
    done
    return 0
}

# The inode of host $2's UTS namespace while any process lives in it, else nothing. Taken from the
# listener if it runs, else from the record; a recorded namespace counts only while its hostname
# is still nodeI, because the kernel reuses the inode numbers of namespaces that have ended.
host_ns() {
    local dir=$1 i=$2 pid ino name
    pid=$(listener_pid "$dir" "$i")
    if [[ -n $pid ]] && ino=$(stat -L -c %i "/proc/$pid/ns/uts" 2>/dev/null); then
        echo "$ino"
        return 0
    fi
    [[ -f $dir/node$i/uts ]] || return 0
    read -r ino <"$dir/node$i/uts" || return 0
    pid=$(ns_procs "$ino" first)
    pid=${pid%% *}
    if [[ -n $pid ]]; then
        name=$(nsenter --uts="/proc/$pid/ns/uts" cat /proc/sys/kernel/hostname 2>/dev/null || true)
        [[ $name == "node$i" ]] && echo "$ino" && return 0
    fi
    rm -f "$dir/node$i/uts"
}

# Signals the sshd's of namespace $1 (all its processes with $2 = all) until none is left: TERM
# first, KILL after $3 seconds, failing 5 seconds later. Rescanning each round catches a
# connection the listener accepted while it was being stopped.
stop_ns() {
    local ino=$1 which=$2 grace=$3 pid comm sig=TERM
    local -a found
    local t0=$SECONDS
    while :; do
        found=()
        while read -r pid comm; do
            [[ -n $pid ]] || continue
            [[ $which == all || $sshd_comms == *" $comm "* ]] && found+=("$pid")
        done < <(ns_procs "$ino")
        ((${#found[@]})) || return 0
        ((SECONDS - t0 < grace)) || sig=KILL
        ((SECONDS - t0 < grace + 5)) || fail "processes ${found[*]} of namespace $ino outlive SIGKILL"
        kill -s "$sig" "${found[@]}" 2>/dev/null || true
        sleep 0.05
    done
}

# ---- subcommands -----------------------------------------------------------------------------

install() {
    if [[ -x $sshd_bin ]] && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null; then
        return 0
    fi
    install_packages "ssh.service ssh.socket" openssh-server openssh-client
    [[ -x $sshd_bin ]] || fail "$sshd_bin missing after installing openssh-server"
    echo "ssh-hosts: installed openssh-server openssh-client" >&2
}

# Is $1:$port free? Prints free, busy, or why the address cannot be used.
probe() {
    local err
    # shellcheck disable=SC2016 # the inner shell expands them
    if err=$(timeout 2 bash -c ': >"/dev/tcp/$1/$2"' _ "$1" "$2" 2>&1); then
        echo busy
        return 0
    fi
    case $err in
    *refused*) echo free ;;
    *) echo "${err##*: }" ;;
    esac
}

# Starts host $2's sshd detached, in its namespace if that still lives (its jobs keep it alive),
# else in a new one; returns once the sshd has bound its address and written its pid file.
launch() {
    local dir=$1 i=$2 addr state ino pid enter
    local h=$dir/node$i
    addr=$(addr_of "$i")
    [[ -f $h/sshd_config && -f $h/ssh_host_ed25519_key ]] || fail "$h has no sshd_config: run up first"
    [[ -z $(listener_pid "$dir" "$i") ]] || fail "node$i's sshd runs already"
    state=$(probe "$addr" "$port")
    if [[ $state != free && $state != busy ]]; then
        # 127.0.0.0/8 is all local on Linux unless lo was configured narrower.
        ip addr add "$addr/32" dev lo >/dev/null 2>&1 || true
        state=$(probe "$addr" "$port")
        [[ $state == free || $state == busy ]] || fail "no loopback address $addr: $state"
    fi
    [[ $state == free ]] || fail "$addr:$port is in use"
    mkdir -p /run/sshd # sshd's privilege separation directory
    chmod 755 /run/sshd
    rm -f "$h/sshd.pid"
    ino=$(host_ns "$dir" "$i")
    enter=(unshare --uts)
    if [[ -n $ino ]]; then
        pid=$(ns_procs "$ino" first)
        pid=${pid%% *}
        [[ -z $pid ]] || enter=(nsenter --uts="/proc/$pid/ns/uts")
    fi
    # The hostname is written through /proc rather than hostname(1), which fresh images may lack.
    # stdio goes to the log so that a caller reading our output is not held open by the sshd.
    # shellcheck disable=SC2016,SC2094 # the inner shell expands them; sshd appends to its log
    setsid -f "${enter[@]}" -- sh -c 'echo "$1" >/proc/sys/kernel/hostname && exec "$2" -D -f "$3" -E "$4"' \
        sh "node$i" "$sshd_bin" "$h/sshd_config" "$h/sshd.log" </dev/null >>"$h/sshd.log" 2>&1 ||
        fail "cannot start node$i's sshd (see $h/sshd.log)"
    local t0=$SECONDS
    while :; do
        pid=
        if [[ -s $h/sshd.pid ]]; then read -r pid <"$h/sshd.pid" || true; fi
        if [[ -n $pid ]] && ino=$(stat -L -c %i "/proc/$pid/ns/uts" 2>/dev/null); then break; fi
        ((SECONDS - t0 < 5)) || fail "node$i's sshd did not start: $(tail -n1 "$h/sshd.log" 2>/dev/null)"
        sleep 0.02
    done
    [[ $ino != "$(stat -L -c %i /proc/$$/ns/uts)" ]] || fail "node$i's sshd runs outside its own UTS namespace"
    echo "$ino" >"$h/uts"
}

# Waits (until $SECONDS reaches $3) until `ssh nodeI hostname` answers nodeI.
answers() {
    local dir=$1 i=$2 until=$3 out
    while :; do
        out=$(ssh -F "$dir/ssh_config" -o ConnectTimeout=2 "node$i" hostname 2>&1 || true)
        [[ $out == "node$i" ]] && return 0
        ((SECONDS < until)) || {
            echo "node$i does not answer: ${out:-nothing}"
            return 1
        }
        sleep 0.1
    done
}

up() {
    local dir n i h addr hostkey
    mode=up
    (($# >= 1 && $# <= 2)) || usage
    set_dir "$1"
    n=${2:-4}
    check_index "$n"
    [[ $port =~ ^[0-9]+$ ]] || fail "SSH_HOSTS_PORT '$port' is not a port"
    [[ $EUID -eq 0 ]] || fail "not root"
    [[ -x $sshd_bin ]] || fail "$sshd_bin missing (run scripts/ssh-hosts.sh install)"
    local tool
    for tool in ssh ssh-keygen unshare nsenter setsid timeout stat; do
        command -v "$tool" >/dev/null || fail "$tool missing"
    done
    local err
    err=$(unshare --uts true 2>&1) || fail "unshare --uts: ${err##*: }"
    # A previous up on DIR gives way; its hosts and jobs end.
    (mode=plain && down "$dir") >/dev/null 2>&1 || fail "cannot stop the hosts already running in $dir"
    up_dir=$dir
    mkdir -p "$dir"
    if [[ ! -f $dir/id_ed25519 || ! -f $dir/id_ed25519.pub ]]; then
        rm -f "$dir/id_ed25519" "$dir/id_ed25519.pub"
        ssh-keygen -q -t ed25519 -N '' -C ssh-hosts -f "$dir/id_ed25519"
    fi
    chmod 600 "$dir/id_ed25519"
    cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
    : >"$dir/known_hosts"
    : >"$dir/ssh_config"
    for ((i = 1; i <= n; i++)); do
        h=$dir/node$i
        addr=$(addr_of "$i")
        hostkey=$h/ssh_host_ed25519_key
        mkdir -p "$h"
        if [[ ! -f $hostkey || ! -f $hostkey.pub ]]; then
            rm -f "$hostkey" "$hostkey.pub"
            ssh-keygen -q -t ed25519 -N '' -C "node$i" -f "$hostkey"
        fi
        cat >"$h/sshd_config" <<EOF
# node$i of scripts/ssh-hosts.sh; started as: $sshd_bin -D -f $h/sshd_config -E $h/sshd.log
ListenAddress $addr:$port
HostKey $hostkey
PidFile $h/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
# DIR may be under /tmp, whose mode sshd would refuse.
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# batchd multiplexes many sessions over one connection and opens many connections at once.
MaxSessions 64
MaxStartups 200:30:400
PrintMotd no
Subsystem sftp internal-sftp
EOF
        if ((port == 22)); then echo -n "$addr " >>"$dir/known_hosts"; else echo -n "[$addr]:$port " >>"$dir/known_hosts"; fi
        cut -d' ' -f1,2 "$hostkey.pub" >>"$dir/known_hosts"
        cat >>"$dir/ssh_config" <<EOF
Host node$i
    HostName $addr
    Port $port
    User root
    IdentityFile $dir/id_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $dir/known_hosts
    StrictHostKeyChecking accept-new
    BatchMode yes
    LogLevel ERROR
EOF
    done
    for ((i = 1; i <= n; i++)); do launch "$dir" "$i"; done
    local until=$((SECONDS + 10)) pids=() errs
    errs=$(mktemp)
    for ((i = 1; i <= n; i++)); do
        answers "$dir" "$i" "$until" >>"$errs" &
        pids+=($!)
    done
    local ok=1
    for i in "${pids[@]}"; do wait "$i" || ok=0; done
    if ((!ok)); then
        local why
        why=$(head -n1 "$errs")
        rm -f "$errs"
        fail "$why"
    fi
    rm -f "$errs"
    mode=plain
    if ((n == 1)); then
        echo "hosts up: node1 (ssh -F $dir/ssh_config node1)"
    else
        echo "hosts up: node[1-$n] (ssh -F $dir/ssh_config nodeI)"
    fi
}

stop_host() {
    local dir i ino
    (($# == 2)) || usage
    set_dir "$1"
    i=$2
    check_index "$i"
    ino=$(host_ns "$dir" "$i")
    [[ -z $ino ]] || stop_ns "$ino" sshd 5
}

start_host() {
    local dir i
    (($# == 2)) || usage
    set_dir "$1"
    i=$2
    check_index "$i"
    launch "$dir" "$i"
    answers "$dir" "$i" $((SECONDS + 10)) >&2 || {
        stop_host "$dir" "$i"
        fail "node$i started but does not answer"
    }
}

down() {
    local dir h i ino
    (($# == 1)) || usage
    set_dir "$1"
    for h in "$dir"/node*; do
        [[ -d $h ]] || continue
        i=${h##*/node}
        [[ $i =~ ^[0-9]+$ ]] || continue
        ino=$(host_ns "$dir" "$i")
        if [[ -n $ino ]]; then
            # sshd first and gently, so that it removes its pid file; then everything else.
            stop_ns "$ino" sshd 2
            stop_ns "$ino" all 0
        fi
        rm -f "$h/uts" "$h/sshd.pid"
    done
}

case ${1:-} in
install) (($# == 1)) || usage && install ;;
up) shift && up "$@" ;;
stop-host) shift && stop_host "$@" ;;
start-host) shift && start_host "$@" ;;
down) shift && down "$@" ;;
*) usage ;;
esac
