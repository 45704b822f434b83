#!/usr/bin/env bash
# Installs esched into PREFIX (default ~/.local): the binaries, their man pages and shell
# completions, and the systemd unit (README, "Install"; docs/batchd.md, "Running as a
# service").
#
# Usage: scripts/install.sh [PREFIX]
#
#   PREFIX/bin/                              esubmit equeue ... esim batchd ebench esched
#   PREFIX/share/man/man1/                   their man pages (`man esubmit`)
#   PREFIX/share/bash-completion/completions bash completions (loaded on demand by
#                                            bash-completion from ~/.local/share or /usr/local/share)
#   PREFIX/share/zsh/site-functions          zsh completions (on fpath for /usr/local; add it for
#                                            ~/.local: fpath+=(~/.local/share/zsh/site-functions))
#   PREFIX/share/fish/vendor_completions.d   fish completions
#   PREFIX/lib/systemd/system/batchd.service the unit, ExecStart under PREFIX
#
# No policy library is installed: batchd and esim run the stock policies linked into them
# (and say so once); a site's own policy is a path in the config or `--policy`, or a library
# in `plugin_dir`/`$ESCHED_PLUGIN_DIR`.
set -euo pipefail

prefix=${1:-"$HOME/.local"}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bins=(esubmit equeue ecancel einfo eacct econtrol eview erun ealloc erelease esched esim batchd ebench)
# xtask (the generator of man pages and completions) in the same profile as the binaries, so
# that it reuses their build.
packages=(-p cli-tools -p esim -p batchd -p esched-bench -p xtask)
cargo build --release --locked "${packages[@]}"
xtask() { cargo run --release --locked --quiet -p xtask -- "$@" >/dev/null; }
target=${CARGO_TARGET_DIR:-$root/target}/release

install -d "$prefix/bin"
for b in "${bins[@]}"; do
    install -m 755 "$target/$b" "$prefix/bin/$b"
done

xtask man "$prefix/share/man/man1"
xtask completions bash "$prefix/share/bash-completion/completions"
xtask completions zsh "$prefix/share/zsh/site-functions"
xtask completions fish "$prefix/share/fish/vendor_completions.d"

install -d "$prefix/lib/systemd/system"
sed "s|/usr/local/bin/batchd|$prefix/bin/batchd|" packaging/systemd/batchd.service \
    >"$prefix/lib/systemd/system/batchd.service"

echo "esched installed in $prefix:"
echo "  binaries       $prefix/bin (put it on PATH)"
echo "  man pages      $prefix/share/man/man1 (man esubmit)"
echo "  completions    $prefix/share/{bash-completion/completions,zsh/site-functions,fish/vendor_completions.d}"
echo "  systemd unit   $prefix/lib/systemd/system/batchd.service"
