#!/usr/bin/env bash
# `make install PREFIX=...` into a temporary prefix, then a program from
# outside the tree (tests/e2e/install_consumer.c) compiled and linked
# through pkg-config alone, against the shared library and against the
# static one, and run on a plan synthesized by the installed ccsynth.
set -u
. "$(dirname "$0")/common.bash"
prefix=$tmp/prefix

if ! env -u MAKEFLAGS -u MFLAGS make -s BUILD="$BUILD" PREFIX="$prefix" \
        install >"$tmp/install.log" 2>&1; then
    echo "FAIL: make install PREFIX=$prefix"; cat "$tmp/install.log"; exit 1
fi
for f in bin/ccsynth bin/ccs-perf include/ccs.h lib/libccs.a lib/libccs.so \
         lib/pkgconfig/ccs.pc; do
    [ -e "$prefix/$f" ] || { echo "FAIL: $prefix/$f not installed"; fail=1; }
done
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --variable=prefix ccs)" = "$prefix" ] || {
    echo "FAIL: ccs.pc prefix is '$(pkg-config --variable=prefix ccs)'"
    fail=1
}
[ "$(pkg-config --modversion ccs)" = "$(awk '/define CCS_VERSION_MAJOR/{a=$3}
    /define CCS_VERSION_MINOR/{b=$3}/define CCS_VERSION_PATCH/{c=$3}
    END{print a"."b"."c}' runtime/ccs.h)" ] || {
    echo "FAIL: ccs.pc version $(pkg-config --modversion ccs)"; fail=1; }
"$prefix/bin/ccsynth" synth --algo ring --coll allreduce --topo switch:4 \
    -q -o "$tmp/ring4.ccs" || { echo "FAIL: installed ccsynth"; exit 1; }

src=tests/e2e/install_consumer.c
cflags=(-std=c11 -Wall -Wextra -Werror -pthread)
# A sanitizer build's libraries need the sanitizer runtime at link time.
# shellcheck disable=SC2206
cflags+=(${CCS_SAN_FLAGS-})
# shared: only what pkg-config says
if ! cc "${cflags[@]}" $(pkg-config --cflags ccs) "$src" \
        $(pkg-config --libs ccs) -o "$tmp/consumer-shared" 2>"$tmp/cc.log"; then
    echo "FAIL: build against libccs.so:"; cat "$tmp/cc.log"; exit 1
fi
expect 0 "1000003 int32 max out-of-place plan from memory: 0 wrong" -- \
    env LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer-shared" "$tmp/ring4.ccs"
if ! LD_LIBRARY_PATH="$prefix/lib" ldd "$tmp/consumer-shared" |
        grep -q "$prefix/lib/libccs.so"; then
    echo "FAIL: consumer-shared does not load $prefix/lib/libccs.so"; fail=1
fi
# static: libccs.a plus pkg-config --static's private libraries
if ! cc "${cflags[@]}" $(pkg-config --cflags ccs) "$src" \
        -Wl,-Bstatic -lccs -Wl,-Bdynamic \
        $(pkg-config --static --libs ccs | sed 's/ -lccs / /') \
        -o "$tmp/consumer-static" 2>"$tmp/cc.log"; then
    echo "FAIL: build against libccs.a:"; cat "$tmp/cc.log"; exit 1
fi
if ldd "$tmp/consumer-static" | grep -q libccs; then
    echo "FAIL: consumer-static links libccs.so"; fail=1
fi
expect 0 "1000003 float32 sum in-place plan from file: 0 wrong" -- \
    "$tmp/consumer-static" "$tmp/ring4.ccs"
# a plan for another rank count is refused with a message, nothing run
"$prefix/bin/ccsynth" synth --algo ring --coll allgather --topo switch:3 \
    -q -o "$tmp/ag3.ccs"
expect 1 "plan is for allgather, called as allreduce" -- \
    "$tmp/consumer-static" "$tmp/ag3.ccs"
exit $fail
