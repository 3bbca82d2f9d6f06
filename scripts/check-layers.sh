#!/usr/bin/env bash
# Check that every quoted #include in synth/ and runtime/ points down the
# layers: cli -> tune -> {algo, msccl -> {sim, verify}} -> topo -> util ->
# runtime, algo seeing neither sim nor verify (the same table as SY_SEES_*
# in the Makefile).
# The Makefile's per-layer include paths already make most wrong includes
# fail to compile; this also catches headers that no file of their own layer
# includes, and relative paths ("../x.h") that would bypass the paths.
# Prints each violation as file:line and exits 1 if there is any.
set -u
cd "$(dirname "$0")/.."

declare -A sees=(
    [util]="util"
    [topo]="topo util"
    [verify]="verify topo util"
    [sim]="sim topo util"
    [algo]="algo topo util"
    [msccl]="msccl sim verify topo util"
    [tune]="tune algo msccl sim verify topo util"
    [cli]="cli tune algo msccl sim verify topo util"
)

bad=0
report() { echo "$1: $2"; bad=$((bad + 1)); }

# Which directory holds a header name (synth layers and runtime).
where() {
    local h=$1 d
    for d in synth/*/ runtime/; do
        [ -f "$d$h" ] && { basename "$d"; return; }
    done
    echo "?"
}

for f in runtime/*.[ch] runtime/*.cu synth/*/*.[ch]; do
    [ -f "$f" ] || continue
    dir=$(dirname "$f")
    layer=$(basename "$dir")
    while IFS=: read -r line inc; do
        name=$(printf '%s' "$inc" | sed -E 's/.*#include "([^"]*)".*/\1/')
        case "$name" in */*)
            report "$f:$line" "include \"$name\" has a path; name the header only"
            continue ;;
        esac
        owner=$(where "$name")
        if [ "$dir" = runtime ]; then
            [ "$owner" = runtime ] ||
                report "$f:$line" "runtime/ includes \"$name\" from $owner"
            continue
        fi
        [ "$owner" = runtime ] && continue
        ok=0
        for l in ${sees[$layer]:-}; do [ "$l" = "$owner" ] && ok=1; done
        [ $ok -eq 1 ] ||
            report "$f:$line" "layer $layer includes \"$name\" from layer $owner"
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
done

for d in synth/*/; do
    l=$(basename "$d")
    [ -n "${sees[$l]:-}" ] || report "$d" "unknown layer (add it to scripts/check-layers.sh and the Makefile)"
done
for f in synth/*.[ch]; do
    [ -f "$f" ] && report "$f" "file outside the layer folders"
done

if [ $bad -ne 0 ]; then
    echo "check-layers: $bad violation(s)"
    exit 1
fi
echo "check-layers: ok"
