#!/usr/bin/env bash
# Keeps batchd in layers (ARCHITECTURE.md, "Architecture invariant: batchd in layers").
#
# Usage: scripts/check-layers.sh [SRC_DIR]    (default: batchd/src)
#
# The module graph is read from the code itself: every `crate::NAME` on a line that is not a
# comment is an edge from the file's top-level module (src/NAME.rs or src/NAME/...) to NAME.
# lib.rs and main.rs are the root that wires everything and are left out. It fails when
#
# - a pure layer uses a module of its own or a later layer (pure layers, in order: convert,
#   record, evorun, core, view; every other module is the I/O layer, after them);
# - a pure layer names I/O: tokio, std::fs, std::process, std::net, std::env, nix, the clock
#   (SystemTime, Instant::now, now_ms), or `Daemon` (the last even in comments);
# - the graph has a cycle anywhere (the I/O layer included);
# - a `use crate::{...}` group hides edges from this reading;
# - core's state is open to other modules: a field of `struct Core` is `pub` (`pub(crate)`,
#   `pub(super)` and the like included), or a function of core returns a `&mut` (a way to
#   assign to the state from outside). Every change of the state is then a transition of
#   core's (a method or function of `core` that changes it and returns what the I/O layer must
#   do), and the compiler refuses an assignment to core's state from any other module.
set -euo pipefail

src=${1:-"$(dirname "$0")/../batchd/src"}
pure=(convert record evorun core view)
io_pattern='\btokio\b|std::fs\b|std::process\b|std::net\b|std::env\b|\bnix::|\bSystemTime\b|Instant::now|\bnow_ms\b'
fail=0

# The layer of a module: its index in `pure`, or the number of pure layers (I/O).
layer() {
    local i
    for i in "${!pure[@]}"; do
        [[ ${pure[$i]} == "$1" ]] && { echo "$i"; return; }
    done
    echo "${#pure[@]}"
}

# module FILE: the top-level module a file belongs to.
module() {
    local rel=${1#"$src"/}
    rel=${rel%%/*}
    echo "${rel%.rs}"
}

# Code lines only: a line whose first non-blank characters are `//` is a comment.
code() { grep -v '^[[:space:]]*//' "$1" || true; }

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

while IFS= read -r file; do
    m=$(module "$file")
    [[ $m == lib || $m == main ]] && continue
    if code "$file" | grep -q 'crate::{'; then
        echo "check-layers: $file: a \`use crate::{...}\` group; write one use per module" >&2
        fail=1
    fi
    for dep in $(code "$file" | grep -o '\bcrate::[a-z_][a-z0-9_]*' | sed 's/^crate:://' | sort -u); do
        [[ $dep == "$m" ]] && continue
        echo "$m $dep $file" >>"$edges"
    done
done < <(find "$src" -name '*.rs' | sort)

# Pure layers: only earlier layers, and no I/O.
for m in "${pure[@]}"; do
    files=$(find "$src" -path "$src/$m.rs" -o -path "$src/$m/*.rs" | sort)
    if [[ -z $files ]]; then
        echo "check-layers: pure layer \`$m\` not found under $src" >&2
        fail=1
        continue
    fi
    lm=$(layer "$m")
    while read -r from dep file; do
        [[ $from == "$m" ]] || continue
        ld=$(layer "$dep")
        if ((ld >= lm)); then
            echo "check-layers: $file: \`$m\` (layer $lm) uses \`$dep\` (layer $ld); a layer uses only earlier ones" >&2
            fail=1
        fi
    done <"$edges"
    for file in $files; do
        if hits=$(code "$file" | grep -nE "$io_pattern"); then
            echo "check-layers: $file: I/O in pure layer \`$m\`:" >&2
            echo "$hits" | sed 's/^/    /' >&2
            fail=1
        fi
        if hits=$(grep -nw 'Daemon' "$file"); then
            echo "check-layers: $file: pure layer \`$m\` names Daemon:" >&2
            echo "$hits" | sed 's/^/    /' >&2
            fail=1
        fi
    done
done

# Core's state is closed: private fields, and no `&mut` handed out.
core_mod="$src/core/mod.rs"
if ! fields=$(sed -n '/^pub struct Core {/,/^}/{/^pub struct Core {/!p}' "$core_mod" 2>/dev/null) || [[ -z $fields ]]; then
    echo "check-layers: \`pub struct Core\` not found in $core_mod" >&2
    fail=1
elif hits=$(echo "$fields" | grep -nE '^[[:space:]]*pub\b'); then
    echo "check-layers: $core_mod: a field of Core is not private; other modules change the state through core's transitions only:" >&2
    echo "$hits" | sed 's/^/    /' >&2
    fail=1
fi
for file in $(find "$src/core" -name '*.rs' | sort); do
    if hits=$(code "$file" | grep -nE '\bfn\b.*->[^{]*&mut\b'); then
        echo "check-layers: $file: a function of core returns \`&mut\`, a way to change its state from outside:" >&2
        echo "$hits" | sed 's/^/    /' >&2
        fail=1
    fi
done

# No cycle anywhere: tsort fails on a loop and names its members.
if ! cut -d' ' -f1,2 "$edges" | sort -u | tsort >/dev/null 2>"$edges.err"; then
    echo "check-layers: the module graph has a cycle:" >&2
    sed 's/^/    /' "$edges.err" >&2
    fail=1
fi
rm -f "$edges.err"

if ((fail)); then
    exit 1
fi
echo "check-layers: batchd's modules form layers ${pure[*]} → I/O, with no cycle ($(cut -d' ' -f1,2 "$edges" | sort -u | wc -l) edges); core's state is closed"
