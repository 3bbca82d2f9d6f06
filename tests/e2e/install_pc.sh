#!/usr/bin/env bash
# `make install PREFIX=...` into a fresh directory, then build a small
# program with nothing but `pkg-config --cflags --libs ccs` against the
# installed copy (shared, then static with --static) and run it on a
# checked-in schedule.  The .pc must name the PREFIX given to install,
# whatever PREFIX an earlier `make` used.
set -u
. "$(dirname "$0")/common.bash"

prefix=$tmp/prefix
# First a plain make, as a user would run; install must still rewrite the
# .pc for its own prefix.  Under `make test`, MAKEFLAGS carries the outer
# command line (CUDA=0, ASAN=1, ...), so nothing is rebuilt differently.
# The build's .pc gets its previous prefix back at the end.
old_prefix=$(cat "$BUILD/prefix.stamp" 2>/dev/null || echo /usr/local)
mk() { make --no-print-directory -s BUILD="$BUILD" "$@" \
           >>"$tmp/install.log" 2>&1; }
trap 'mk PREFIX="$old_prefix" all; rm -rf "$tmp"' EXIT
if ! mk PREFIX="$old_prefix" all || ! mk PREFIX="$prefix" install; then
    echo "FAIL: make install PREFIX=$prefix: $(tail -n 20 "$tmp/install.log")"
    exit 1
fi
for f in bin/ccsynth bin/ccs-perf lib/libccs.a lib/libccs.so include/ccs.h \
         lib/pkgconfig/ccs.pc; do
    [ -e "$prefix/$f" ] || { echo "FAIL: $prefix/$f not installed"; fail=1; }
done
expect 0 "^prefix=$prefix\$" -- cat "$prefix/lib/pkgconfig/ccs.pc"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cflags=$(pkg-config --cflags ccs) || { echo "FAIL: pkg-config --cflags"; exit 1; }
libs=$(pkg-config --libs ccs) || { echo "FAIL: pkg-config --libs"; exit 1; }
case "$cflags $libs" in
    *"-I$prefix/include"*"-L$prefix/lib"*"-lccs"*) ;;
    *) echo "FAIL: pkg-config gives '$cflags $libs' for $prefix"; fail=1 ;;
esac

cat >"$tmp/t.c" <<'EOF'
#include <stdio.h>
#include <ccs.h>

int main(int argc, char **argv)
{
    ccs_plan_t *plan = NULL;
    ccs_status_t st = ccs_plan_load_file(argv[1], &plan);

    if (st != CCS_OK) {
        printf("load: %s\n", ccs_status_name(st));
        return 1;
    }
    printf("%s %d ranks\n", ccs_coll_str(ccs_plan_coll(plan)),
           ccs_plan_nranks(plan));
    ccs_plan_destroy(plan);
    (void)argc;
    return 0;
}
EOF
sched=schedules/ring-allreduce-dgx-h100.ccs
# shellcheck disable=SC2086  # pkg-config output is a list of flags
if cc -std=c11 -Wall -Wextra -Werror "$tmp/t.c" $cflags $libs \
        -Wl,-rpath,"$prefix/lib" -o "$tmp/t_shared" 2>"$tmp/cc.err"; then
    expect 0 "^allreduce 8 ranks$" -- "$tmp/t_shared" "$sched"
    if ! ldd "$tmp/t_shared" | grep -q "$prefix/lib/libccs.so"; then
        echo "FAIL: t_shared does not use $prefix/lib/libccs.so"
        fail=1
    fi
else
    echo "FAIL: compiling against the installed libccs.so: $(cat "$tmp/cc.err")"
    fail=1
fi
# Static: libccs.a plus Libs.private (MPI, CUDA where built).
# shellcheck disable=SC2046
if cc -std=c11 "$tmp/t.c" $cflags -Wl,-Bstatic -lccs -Wl,-Bdynamic \
        $(pkg-config --static --libs ccs | sed 's/-lccs//') \
        -o "$tmp/t_static" 2>"$tmp/cc.err"; then
    expect 0 "^allreduce 8 ranks$" -- "$tmp/t_static" "$sched"
else
    echo "FAIL: static link with pkg-config --static: $(cat "$tmp/cc.err")"
    fail=1
fi
exit $fail
