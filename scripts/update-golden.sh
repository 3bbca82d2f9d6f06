#!/usr/bin/env bash
# Regenerate the golden JSON dumps of small schedules (tests/golden/*.json),
# listed in tests/golden/LIST as "<name> <ccsynth synth arguments>".
# Review the diff before committing: a golden file is a reviewed artifact.
#   scripts/update-golden.sh           rewrite the files
#   scripts/update-golden.sh --check   compare only (used by tests/e2e/golden.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
check=0
[ "${1:-}" = "--check" ] && check=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
while read -r name args; do
    case "$name" in ''|'#'*) continue ;; esac
    # shellcheck disable=SC2086
    $C synth $args -q -o "$tmp/$name.ccs"
    $C show --json "$tmp/$name.ccs" > "$tmp/$name.json"
    if [ $check -eq 1 ]; then
        if ! diff -u "tests/golden/$name.json" "$tmp/$name.json" > "$tmp/$name.diff"; then
            echo "golden: $name differs from tests/golden/$name.json:" >&2
            head -n 40 "$tmp/$name.diff" >&2
            status=1
        fi
    else
        cp "$tmp/$name.json" "tests/golden/$name.json"
    fi
done < tests/golden/LIST
exit $status
