#!/usr/bin/env bash
# show_cli.sh - `ccsynth show` end to end: text, --json, --dot, --rank, the
# exit codes on bad files and bad usage.  The JSON is checked against an
# independent reader of the .ccs bytes written here in Python from
# docs/format.md alone, so the spec, the C reader and the JSON must agree;
# and the worked example's hex dump in docs/format.md must still be what
# the code writes.
#
# Schedules come from the unit-test helper ($BUILD/tests/test_format
# --write NAME FILE), for the shapes no algorithm makes, and from
# `ccsynth synth --algo ring`.
set -euo pipefail
BUILD=${BUILD:-build}
CCS=$BUILD/bin/ccsynth
HELPER=$BUILD/tests/test_format
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "show_cli: FAIL: $*" >&2; exit 1; }
[ -x "$CCS" ] || fail "$CCS not built"
[ -x "$HELPER" ] || fail "$HELPER not built (make unit-tests)"
command -v python3 >/dev/null || fail "python3 is needed"

names=(example phased reducescatter broadcast alltoall empty_ranks no_steps
       ring64)
for n in "${names[@]}"; do
    "$HELPER" --write "$n" "$tmp/$n.ccs" || fail "helper could not write $n"
done

"$CCS" synth --algo ring --coll allreduce --topo ring:4 -q \
    -o "$tmp/cli_ring.ccs" 2>"$tmp/synth.err" ||
    fail "ccsynth synth --algo ring exited $?: $(cat "$tmp/synth.err")"
names+=(cli_ring)

# An independent reader of docs/format.md; prints the schedule as the same
# dict `show --json` gives (minus params/params_text details) and compares.
cat > "$tmp/check.py" <<'EOF'
import json, sys

def crc_byte(c):
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c

TABLE = [crc_byte(i) for i in range(256)]

def crc32c(data):
    c = 0xFFFFFFFF
    for byte in data:
        c = TABLE[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF

assert crc32c(b"123456789") == 0xE3069283

def le(b, o, n, signed=False):
    return int.from_bytes(b[o:o + n], "little", signed=signed)

COLL = ["allreduce", "reducescatter", "allgather", "reduce", "broadcast",
        "alltoall"]
KIND = ["send", "recv", "recv_reduce", "copy", "reduce_local"]
BUF = ["in", "out", "scratch"]

def read_ccs(path):
    b = open(path, "rb").read()
    assert b[:8] == b"CCSYNTH\0", "magic"
    assert le(b, 8, 2) == 1, "major"
    hs = le(b, 12, 4)
    assert le(b, 64, 8) == len(b), "file_size"
    assert b[-12:-4] == b"CCS-END\0", "end marker"
    assert le(b, len(b) - 4, 4) == crc32c(b[:-4]), "crc"
    nranks, nsteps, plen = le(b, 24, 4), le(b, 36, 4), le(b, 52, 4)
    s = {
        "collective": COLL[le(b, 20, 4)], "nranks": nranks,
        "nchunks": le(b, 28, 4), "nscratch": le(b, 32, 4),
        "nsteps": nsteps, "nphases": le(b, 40, 4),
        "root": le(b, 44, 4, True), "straggler": le(b, 48, 4, True),
        "fingerprint": "0x%016x" % le(b, 56, 8),
        "algorithm": b[72:104].split(b"\0")[0].decode(),
    }
    params = b[hs:hs + plen].decode("latin-1") if le(b, 16, 4) & 1 else None
    o = hs + plen
    phases = list(b[o:o + nsteps])
    o += nsteps
    steps = [{"step": t, "phase": phases[t], "ops": []} for t in range(nsteps)]
    nops = 0
    expect = o + 16 * nranks
    for r in range(nranks):
        off, n = le(b, o + 16 * r, 8), le(b, o + 16 * r + 8, 4)
        assert off == expect, "directory"
        expect = off + 24 * n
        for i in range(n):
            p = off + 24 * i
            k = b[p + 4]
            op = {"rank": r, "kind": KIND[k], "peer": le(b, p + 8, 4, True),
                  "buffer": BUF[b[p + 5]], "chunk": le(b, p + 12, 4),
                  "nchunks": le(b, p + 20, 4)}
            if KIND[k] in ("recv_reduce", "copy", "reduce_local"):
                op["src_buffer"] = BUF[b[p + 6]]
                op["src_chunk"] = le(b, p + 16, 4)
            steps[le(b, p, 4)]["ops"].append(op)
            nops += 1
    assert expect == len(b) - 12, "streams"
    s["nops"] = nops
    s["steps"] = steps
    return s, params

mode, path, jpath = sys.argv[1], sys.argv[2], sys.argv[3]
j = json.load(open(jpath))
want, params = read_ccs(path)
if mode == "rank":
    r = int(sys.argv[4])
    assert j["only_rank"] == r
    for st in want["steps"]:
        st["ops"] = [op for op in st["ops"] if op["rank"] == r]
for key, val in want.items():
    assert j[key] == val, "%s: json %r, file %r" % (key, j.get(key), val)
assert j["format"] == "ccsynth-schedule"
assert j["params_text"] == params
if params is not None:
    for line in params.split("\n"):
        if "=" in line:
            k, v = line.split("=", 1)
            assert j["params"][k] == v, "params[%s]" % k
else:
    assert j["params"] == {}
for t, st in enumerate(j["steps"]):
    assert st["step"] == t
    assert t == 0 or st["phase"] >= j["steps"][t - 1]["phase"]
print("ok %s %s: %d steps, %d ops" % (mode, path.split("/")[-1],
                                      j["nsteps"], j["nops"]))
EOF

for n in "${names[@]}"; do
    f=$tmp/$n.ccs
    "$CCS" show "$f" > "$tmp/$n.txt" || fail "show $n exited $?"
    for field in collective algorithm ranks chunks scratch steps phases \
                 straggler root fingerprint params; do
        grep -q "^$field " "$tmp/$n.txt" || fail "show $n: no '$field' line"
    done
    "$CCS" show --json "$f" > "$tmp/$n.json" || fail "show --json $n"
    python3 "$tmp/check.py" all "$f" "$tmp/$n.json" ||
        fail "show --json $n disagrees with the file"
    nranks=$(python3 -c 'import json, sys
print(json.load(sys.stdin)["nranks"])' < "$tmp/$n.json")
    last=$((nranks - 1))
    "$CCS" show --json --rank "$last" "$f" > "$tmp/$n.r.json" ||
        fail "show --json --rank $last $n"
    python3 "$tmp/check.py" rank "$f" "$tmp/$n.r.json" "$last" ||
        fail "show --json --rank $n disagrees with the file"
    "$CCS" show --rank "$last" "$f" > /dev/null || fail "show --rank $n"
    "$CCS" show --dot "$f" > "$tmp/$n.dot" || fail "show --dot $n"
    # (ring64 only checks the 'large' note: rendering it takes seconds.)
    if command -v dot >/dev/null && [ "$n" != ring64 ]; then
        dot -Tsvg "$tmp/$n.dot" > "$tmp/$n.svg" 2>"$tmp/dot.err" ||
            fail "dot rejects show --dot $n: $(cat "$tmp/dot.err")"
        grep -q "<svg" "$tmp/$n.svg" || fail "no SVG for $n"
    fi
    # One edge per send.
    sends=$(python3 -c 'import json,sys
s = json.load(sys.stdin)
print(sum(o["kind"] == "send" for t in s["steps"] for o in t["ops"]))' \
            < "$tmp/$n.json")
    edges=$(grep -c -- ' -> ' "$tmp/$n.dot" || true)
    [ "$edges" -eq "$sends" ] ||
        fail "show --dot $n: $edges edges, $sends sends"
done

# The text lines of the worked example (docs/format.md).
grep -qx '  r0 -> r1  in\[0\] => out\[0\] (reduce with in\[0\])' \
    "$tmp/example.txt" || fail "example: step 0 transfer line"
grep -qx '  r1 -> r0  out\[0\] => out\[0\]' "$tmp/example.txt" ||
    fail "example: step 1 transfer line"
grep -q '^straggler    r3$' "$tmp/phased.txt" || fail "phased: straggler"
grep -q '^root         r1$' "$tmp/broadcast.txt" || fail "broadcast: root"
grep -q 'local  in\[0..1\] => out\[0..1\] (copy)' "$tmp/reducescatter.txt" ||
    fail "reducescatter: local copy line"
grep -q '^// large' "$tmp/ring64.dot" || fail "ring64: no 'large' comment"

# The hex dump in docs/format.md is what the code writes today.
python3 - "$tmp/example.ccs" docs/format.md <<'EOF' ||
import sys
b = open(sys.argv[1], "rb").read()
dump = "".join("%04x  %s\n" % (o, " ".join("%02x" % x for x in b[o:o + 16]))
               for o in range(0, len(b), 16))
doc = open(sys.argv[2]).read()
block = doc.split("<!-- example-hex-begin -->")[1]
block = block.split("<!-- example-hex-end -->")[0]
block = block.strip().strip("`").strip() + "\n"
sys.exit(0 if block == dump else 1)
EOF
    fail "docs/format.md's example hex dump differs from what the code writes"

# The params text comes from the file (here, a topology path with control
# bytes in it): show prints them as \xHH, never raw to the terminal.
esc=$tmp/$'t\x01\x1b[31m.yaml'
cp topologies/dgx-h100.yaml "$esc"
"$CCS" synth --algo ring --topo "$esc" -q -o "$tmp/esc.ccs" ||
    fail "synth with a control byte in the topology path"
"$CCS" show "$tmp/esc.ccs" > "$tmp/esc.txt" || fail "show esc.ccs"
grep -qF 't\x01\x1b[31m.yaml' "$tmp/esc.txt" || fail "params not escaped"
if LC_ALL=C grep -q $'[\x01\x1b]' "$tmp/esc.txt"; then
    fail "show printed a raw control byte"
fi

# Usage errors: exit 2.
expect_rc() {
    local want=$1; shift
    local got=0
    "$@" > "$tmp/out" 2> "$tmp/err" || got=$?
    [ "$got" -eq "$want" ] ||
        fail "'$*' exited $got, want $want: $(cat "$tmp/err")"
}
expect_rc 0 "$CCS" show --help
grep -q -- '--json' "$tmp/out" || fail "show --help lacks --json"
expect_rc 2 "$CCS" show
expect_rc 2 "$CCS" show --json --dot "$tmp/example.ccs"
expect_rc 2 "$CCS" show --rank 2 "$tmp/example.ccs"
grep -q 'out of range' "$tmp/err" || fail "--rank 2: $(cat "$tmp/err")"
expect_rc 2 "$CCS" show --bogus "$tmp/example.ccs"

# Bad files: exit 3, a message naming the problem, nothing on stdout.
bad=$tmp/bad.ccs
corrupt() { # corrupt OFFSET BYTE: copy example.ccs with one byte replaced
    python3 - "$tmp/example.ccs" "$bad" "$1" "$2" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[int(sys.argv[3])] = int(sys.argv[4], 0)
open(sys.argv[2], "wb").write(b)
EOF
}
check_bad() { # check_bad WORD: show must exit 3 and say WORD
    expect_rc 3 "$CCS" show "$bad"
    grep -q "$1" "$tmp/err" || fail "bad file: '$(cat "$tmp/err")' lacks '$1'"
    [ ! -s "$tmp/out" ] || fail "bad file: output on stdout"
    grep -q "$bad" "$tmp/err" || fail "bad file: message lacks the path"
    for opt in --json --dot; do
        expect_rc 3 "$CCS" show "$opt" "$bad"
    done
}
corrupt 200 0x42; check_bad checksum
corrupt 0 0x58; check_bad magic
corrupt 8 2; check_bad version
head -c 300 "$tmp/example.ccs" > "$bad"; check_bad truncated
: > "$bad"; check_bad "too short"
{ cat "$tmp/example.ccs"; printf 'xx'; } > "$bad"; check_bad trailing
expect_rc 3 "$CCS" show "$tmp/does-not-exist.ccs"
grep -q 'does-not-exist' "$tmp/err" || fail "missing file: $(cat "$tmp/err")"

echo "show_cli: ok (${#names[@]} schedules)"
