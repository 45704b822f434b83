# shellcheck shell=bash
# Sourced by the scripts that stand test machines on this one (ssh-hosts.sh, slurm-cluster.sh):
# installs Debian packages without starting or enabling their services, which would take the
# machine's own ports and sockets (sshd on 22, munge on its default socket).
#
#   install_packages "SERVICE ..." PACKAGE ...
#
# Needs root and apt-get, and the caller's `fail MESSAGE` (which exits). The packages'
# maintainer scripts start their services: a policy-rc.d answering 101 forbids the start (an
# existing one is set aside and put back), and each SERVICE is disabled for boot afterwards.

install_packages() {
    local services=$1
    shift
    [[ $EUID -eq 0 ]] || fail "install needs root"
    command -v apt-get >/dev/null || fail "no apt-get: install $*"
    # (Globals, for the EXIT trap.)
    policy=/usr/sbin/policy-rc.d
    set_aside=$policy.install-packages
    apt_log=$(mktemp)
    if [[ -e $policy ]]; then mv "$policy" "$set_aside"; fi
    trap 'rm -f "$policy" "$apt_log"; if [[ -e "$set_aside" ]]; then mv "$set_aside" "$policy"; fi' EXIT
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    local apt=(apt-get install -y -q --no-install-recommends "$@")
    export DEBIAN_FRONTEND=noninteractive
    if ! "${apt[@]}" >"$apt_log" 2>&1; then
        if ! { apt-get update -q && "${apt[@]}"; } >"$apt_log" 2>&1; then
            cat "$apt_log" >&2
            fail "apt-get could not install $*"
        fi
    fi
    local s
    for s in $services; do
        if command -v systemctl >/dev/null; then
            systemctl disable "$s" >/dev/null 2>&1 || true
        fi
        if command -v update-rc.d >/dev/null; then
            update-rc.d "${s%.*}" disable >/dev/null 2>&1 || true
        fi
    done
}
