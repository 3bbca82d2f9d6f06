#!/usr/bin/env bash
# `ccsynth verify`: exit codes and messages on good, broken, unreadable and
# corrupted .ccs files; --json, --quiet, --help.  The files come from
# tests/e2e/verify_fixture.c (built by `make e2e-progs`), plus a ring
# schedule from `ccsynth synth`.
set -u
. "$(dirname "$0")/common.bash"

[ -x "$C" ] || { echo "FAIL: $C not built"; exit 1; }
F=$BUILD/e2e/verify_fixture
[ -x "$F" ] || { echo "FAIL: $F not built (make e2e-progs)"; exit 1; }
"$F" "$tmp" || { echo "FAIL: verify_fixture exited $?"; exit 1; }

# Usage.
expect 0 "usage: ccsynth verify" -- $C verify --help
expect 2 "no file given" -- $C verify
expect 2 "" -- $C verify --bogus "$tmp/ring4.ccs"

# Good files.
expect 0 "ring4.ccs: ok \(allreduce, ring, 4 ranks, 6 steps, one-port\)" -- \
    $C verify "$tmp/ring4.ccs"
expect 0 "direct3.ccs: ok \(allgather, direct, 3 ranks, 1 steps, up to 2 sends and 2 receives" -- \
    $C verify "$tmp/direct3.ccs"
out=$($C verify -q "$tmp/ring4.ccs" "$tmp/direct3.ccs" 2>&1)
[ $? -eq 0 ] && [ -z "$out" ] || { echo "FAIL: --quiet printed '$out'"; fail=1; }

# Broken files: exit 4 with the problem named.
expect 4 "missing.ccs: verification failed: end: rank 0 out\[0\] \(allreduce\) misses contributions of ranks 1 \(4 of 16 output chunks wrong\)" -- \
    $C verify "$tmp/missing.ccs"
expect 4 "unmatched.ccs: verification failed: step 0, rank 1: recv_reduce from rank 0 into out\[0\] has no matching send" -- \
    $C verify "$tmp/unmatched.ccs"
# --quiet still reports failures.
expect 4 "misses contributions" -- $C verify -q "$tmp/missing.ccs"

# 2^24 chunks on 8 ranks in 224 ops: verified by chunk segments, not chunk
# by chunk; a gap deep inside one op's range is named by its chunk.
expect 0 "wide8.ccs: ok \(allreduce, ring, 8 ranks, 14 steps, one-port\)" -- \
    $C verify "$tmp/wide8.ccs"
expect 4 "wide8_gap.ccs: verification failed: step 1, rank 3: send of out\[4194304\] to rank 4: reads out\[4194304\], which was never written" -- \
    $C verify "$tmp/wide8_gap.ccs"

# Unreadable and corrupted files: exit 3.
expect 3 "" -- $C verify "$tmp/nonexistent.ccs"
head -c 100 "$tmp/ring4.ccs" > "$tmp/truncated.ccs"
expect 3 "" -- $C verify "$tmp/truncated.ccs"
printf 'not a schedule at all, just text\n' > "$tmp/text.ccs"
expect 3 "" -- $C verify "$tmp/text.ccs"

# Several files: every one is reported; unreadable (3) outranks failed (4).
expect 4 "ring4.ccs: ok" -- $C verify "$tmp/ring4.ccs" "$tmp/missing.ccs"
expect 3 "missing.ccs: verification failed" -- \
    $C verify "$tmp/missing.ccs" "$tmp/nonexistent.ccs" "$tmp/ring4.ccs"

# JSON: one object per file, parseable, with the report fields.
out=$($C verify --json "$tmp/ring4.ccs" "$tmp/missing.ccs")
rc=$?
[ $rc -eq 4 ] || { echo "FAIL: --json exit $rc, want 4"; fail=1; }
if command -v python3 >/dev/null; then
    printf '%s' "$out" | python3 -c '
import json, sys
a = json.load(sys.stdin)
assert len(a) == 2, a
assert a[0]["ok"] is True and a[0]["one_port"] is True, a[0]
assert a[0]["nranks"] == 4 and a[0]["nsteps"] == 6, a[0]
assert a[0]["chunk_transfers"] == 24 and a[0]["collective"] == "allreduce"
assert a[1]["ok"] is False and a[1]["status"] == "CCS_ERR_VERIFY", a[1]
assert "misses contributions" in a[1]["error"], a[1]
' || { echo "FAIL: --json output: $out"; fail=1; }
fi

# A schedule written by `ccsynth synth`.
expect 0 "" -- $C synth --algo ring --topo switch:8 -q -o "$tmp/synth_ring.ccs"
expect 0 "synth_ring.ccs: ok \(allreduce, ring, 8 ranks" -- \
    $C verify "$tmp/synth_ring.ccs"
# -j is --json here as everywhere; one line for an unknown option.
expect 0 '"ok": true' -- $C verify -j "$tmp/synth_ring.ccs"
expect 2 "^ccsynth verify: unknown option '--bogus'" -- $C verify --bogus "$tmp/synth_ring.ccs"

exit $fail
