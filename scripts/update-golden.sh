#!/usr/bin/env bash
# Regenerate the golden JSON dumps of small schedules (tests/golden/*.json),
# listed in tests/golden/LIST as "<name> [view=rounds] <ccsynth synth
# arguments>".  The default view is `ccsynth show --json`; view=rounds is
# StragglAR's phase 1 as rounds of [src, dst, chunk, kind] transfers (the
# form docs/stragglar.md walks through; test_stragglar checks it too).
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
# Phase 1 of a schedule as rounds: per step, each send in rank order with
# the chunk its receiver gets (the source chunk of a scratch receive) and
# "exchange" for a reducing receive, "copy" otherwise.
rounds() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
out = []
for st in d["steps"]:
    if st["phase"] != 1:
        continue
    ops, row = st["ops"], []
    for op in ops:
        if op["kind"] != "send":
            continue
        g, peer, rv = op["rank"], op["peer"], None
        for o in ops:
            if o["rank"] == peer and o["peer"] == g and o["kind"] != "send":
                rv = o
        if rv is None:
            chunk = op["chunk"]
        elif rv["buffer"] == "scratch":
            chunk = rv["src_chunk"]
        else:
            chunk = rv["chunk"]
        kind = "exchange" if rv and rv["kind"] == "recv_reduce" else "copy"
        row.append("[%d, %d, %d, \"%s\"]" % (g, peer, chunk, kind))
    out.append("    [" + ", ".join(row) + "]")
sys.stdout.write("{\n  \"algo\": \"%s\",\n  \"nranks\": %d,\n"
                 "  \"straggler\": %d,\n  \"rounds\": [\n%s\n  ]\n}\n"
                 % (d["algorithm"], d["nranks"], d["straggler"],
                    ",\n".join(out)))
'
}

while read -r name args; do
    case "$name" in ''|'#'*) continue ;; esac
    view=show
    case "$args" in view=*) view=${args%% *}; view=${view#view=}; args=${args#* } ;; esac
    # shellcheck disable=SC2086
    $C synth $args -q -o "$tmp/$name.ccs"
    case "$view" in
    show) $C show --json "$tmp/$name.ccs" > "$tmp/$name.json" ;;
    rounds) $C show --json "$tmp/$name.ccs" | rounds > "$tmp/$name.json" ;;
    *) echo "golden: $name: unknown view '$view'" >&2; exit 2 ;;
    esac
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
