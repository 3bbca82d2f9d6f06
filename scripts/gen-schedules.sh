#!/usr/bin/env bash
# Generate the schedule artifacts in schedules/ from topologies/, as listed in
# schedules/MANIFEST, verifying each one.
#
#   scripts/gen-schedules.sh [DIR]           write DIR/<name>.ccs (default schedules)
#   scripts/gen-schedules.sh --check [DIR]   regenerate into a temp dir and fail
#                                            if any file differs byte for byte
#                                            from DIR or fails the verifier
# MANIFEST lines: <name> <ccsynth synth arguments...>   (# comments allowed)
set -euo pipefail
cd "$(dirname "$0")/.."
CCSYNTH=${CCSYNTH:-build/bin/ccsynth}
check=0
if [ "${1:-}" = "--check" ]; then
    check=1
    shift
fi
dir=${1:-schedules}
manifest=schedules/MANIFEST
[ -x "$CCSYNTH" ] || { echo "gen-schedules: $CCSYNTH not built" >&2; exit 1; }

out=$dir
if [ $check -eq 1 ]; then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

status=0
count=0
while read -r name args; do
    case "$name" in ''|'#'*) continue ;; esac
    # shellcheck disable=SC2086  # the manifest holds whitespace-split args
    if ! "$CCSYNTH" synth $args -q -o "$out/$name.ccs"; then
        echo "gen-schedules: $name: synthesis failed ($args)" >&2
        status=1
        continue
    fi
    if ! "$CCSYNTH" verify -q "$out/$name.ccs"; then
        echo "gen-schedules: $name: verification failed" >&2
        status=1
        continue
    fi
    count=$((count + 1))
    if [ $check -eq 1 ]; then
        if [ ! -f "$dir/$name.ccs" ]; then
            echo "gen-schedules: $name: missing from $dir (run make schedules)" >&2
            status=1
        elif ! cmp -s "$out/$name.ccs" "$dir/$name.ccs"; then
            echo "gen-schedules: $name: $dir/$name.ccs differs from a fresh" \
                 "synthesis (run make schedules and commit)" >&2
            status=1
        fi
    fi
done < "$manifest"

if [ $check -eq 1 ]; then
    # Artifacts nobody generates any more are stale.
    for f in "$dir"/*.ccs; do
        [ -e "$f" ] || continue
        n=$(basename "$f" .ccs)
        if ! grep -qE "^$n[[:space:]]" "$manifest"; then
            echo "gen-schedules: $f is not in $manifest" >&2
            status=1
        fi
    done
    [ $status -eq 0 ] && echo "gen-schedules: $count artifacts regenerate byte for byte and verify"
else
    echo "gen-schedules: wrote $count artifacts to $dir"
fi
exit $status
