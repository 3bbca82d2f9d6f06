# Sourced by the tests/e2e/*.sh scripts (not itself a test: run-tests.sh
# runs *.sh only).  Sets BUILD, C (the ccsynth binary), a private temporary
# directory $tmp removed on exit, fail=0, and `expect`.
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect CODE PATTERN -- command...: the command must exit with CODE and,
# when PATTERN is not empty, print (stdout or stderr) a line matching it.
expect() {
    local want=$1 pat=$2
    shift 3
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL: '$*' exited $rc, want $want: $out"
        fail=1
    elif [ -n "$pat" ] && ! printf '%s' "$out" | grep -qE -- "$pat"; then
        echo "FAIL: '$*' output lacks /$pat/: $out"
        fail=1
    fi
}
