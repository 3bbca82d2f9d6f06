#!/usr/bin/env bash
# Runtime benchmarks.  Every figure is printed beside its reference,
# measured in the same run (alternating, run by run), as the median over
# RUNS runs of the ratio, with the target it is held to:
#   1. reduce kernels: float32 sum in L1 and at 64 MiB against a memcpy
#      stream (test_kernels --bench);
#   2. CRC-32C: hardware / slicing-by-8 against the byte table;
#   3. threads transport: executor cost per step at 2 ranks; an 8-byte
#      allreduce at 2 ranks against MPI_Allreduce at 2 processes; ring
#      allreduce busbw at 2 ranks, 64 MiB, against memcpy bandwidth;
#   4. MPI transport: the ring plan against MPI_Allreduce at 2 and 4
#      processes, 8 bytes (by default: the one-step small exchange; and
#      with CCS_SMALL_BYTES=0: the plan replayed) and 64 MiB (ccs-perf -B:
#      side by side);
#   5. in-place StragglAR against out-of-place (busbw, 4 ranks, 64 MiB);
#   6. plan load: MB/s of file for a ring:2048 allreduce plan (~400 MB),
#      with and without the loader's helper thread, against reading the
#      same file, CPU time beside wall time.
# The machine is shared: single figures are noisy, ratios of neighbours
# less so.  RUNS=5 by default.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PERF=$BUILD/bin/ccs-perf
RUNS=${RUNS:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$BUILD/tests/test_runtime_exec" --write-plans "$tmp" >/dev/null
ring2=$tmp/ring1-r2.ccs
ring4=$tmp/ring1-r4.ccs
if [ -x "$BUILD/bin/ccsynth" ]; then
    for n in 2 4; do
        "$BUILD/bin/ccsynth" synth --algo ring --coll allreduce \
            --topo "switch:$n" -q -o "$tmp/syn-ring-$n.ccs" >/dev/null 2>&1 &&
            eval "ring$n=$tmp/syn-ring-$n.ccs"
    done
fi
strag=""
if [ -x "$BUILD/bin/ccsynth" ] && "$BUILD/bin/ccsynth" synth --algo stragglar \
        --coll allreduce --topo switch:4 --straggler 3 -q \
        -o "$tmp/stragglar-4.ccs" >/dev/null 2>&1; then
    strag=$tmp/stragglar-4.ccs
fi

# env arguments for a CCS_SMALL_BYTES setting: "default" unsets it
small_env() {
    if [ "$1" = default ]; then echo "-u CCS_SMALL_BYTES"
    else echo "CCS_SMALL_BYTES=$1"; fi
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# field F of the first data row of a ccs-perf table
row() { grep -vE '^#' | awk -v f="$1" 'NF >= 9 {print $f; exit}'; }
verdict() { # verdict VALUE OP TARGET
    awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
        ok = (op == "<=") ? v <= t : v >= t
        printf "target %s %s: %s", op, t, ok ? "met" : "NOT met" }'
}
line() { # line WHAT VALUE REF RATIO OP TARGET [RUNS...]
    printf '  %-52s %10s  ref %10s  ratio %6.3f  (%s)\n' "$1" "$2" "$3" \
        "$4" "$(verdict "$4" "$5" "$6")"
}

echo "== 1. reduce kernels"
"$BUILD/tests/test_kernels" --bench "$RUNS"

echo
echo "== 2. CRC-32C"
"$BUILD/tests/test_crc32c" --bench "$RUNS"

echo
echo "== 3. threads transport"
step=$("$BUILD/tests/test_runtime_overhead" --bench "$RUNS" |
       sed -nE 's/.*median ([0-9.]+).*/\1/p')
printf '  %-52s %10s us  (target <= 1 us: %s)\n' \
    "executor cost per step, 2 ranks, 4-byte exchanges" "$step" \
    "$(awk -v v="$step" 'BEGIN {print (v <= 1) ? "met" : "NOT met"}')"
# Times come with two decimals (10 ns) and the ratio is taken from them;
# 100000 calls per run (0.1 s at 1 us) steady the median on a shared host.
for small in default 0; do
    ours=(); theirs=(); ratios=()
    for i in $(seq "$RUNS"); do
        a=$(env $(small_env "$small") "$PERF" -X threads "$ring2" -b 8 -e 8 \
            -n 100000 -w 1000 -c 0 | row 6)
        b=$(mpirun --oversubscribe -np 2 "$PERF" -X mpi -B "$ring2" -b 8 \
            -e 8 -n 100000 -w 1000 -c 0 | row 10)
        ours+=("$a"); theirs+=("$b")
        ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')")
    done
    [ "$small" = 0 ] && what="CCS_SMALL_BYTES=0, plan replayed"
    [ "$small" = default ] && what="default (small exchange)"
    line "8 B allreduce, threads 2 ranks vs MPI 2 procs, $what (us)" \
        "$(printf '%s\n' "${ours[@]}" | median)" \
        "$(printf '%s\n' "${theirs[@]}" | median)" \
        "$(printf '%s\n' "${ratios[@]}" | median)" "<=" 1.0
done
ours=(); theirs=(); ratios=()
for i in $(seq "$RUNS"); do
    m=$("$BUILD/tests/test_kernels" --memcpy 64 3)
    a=$("$PERF" -X threads "$ring2" -b 64M -e 64M -n 5 -w 2 -c 0 | row 8)
    ours+=("$a"); theirs+=("$m")
    ratios+=("$(awk -v a="$a" -v b="$m" 'BEGIN {print a / b}')")
done
line "ring allreduce busbw, threads 2 ranks, 64 MiB (GB/s)" \
    "$(printf '%s\n' "${ours[@]}" | median)" \
    "$(printf '%s\n' "${theirs[@]}" | median)" \
    "$(printf '%s\n' "${ratios[@]}" | median)" ">=" 0.40
echo "    (ref: memcpy GB/s, bytes copied, 64 MiB, run just before each)"

echo
echo "== 4. MPI transport: ring plan vs MPI_Allreduce (time ratio, ccs-perf -B)"
for np in 2 4; do
    plan=$ring2
    [ "$np" = 4 ] && plan=$ring4
    for sz in 8 8r 64M; do
        ours=(); theirs=(); ratios=()
        n=20000; w=1000; [ "$sz" = 64M ] && n=5 && w=2
        small=default; [ "$sz" = 8r ] && small=0
        for i in $(seq "$RUNS"); do
            mpix=""; [ "$small" = default ] || mpix="-x CCS_SMALL_BYTES"
            out=$(env $(small_env "$small") mpirun $mpix --oversubscribe \
                  -np "$np" "$PERF" -X mpi -B "$plan" -b "${sz%r}" \
                  -e "${sz%r}" -n "$n" -w "$w" -c 0)
            ours+=("$(printf '%s\n' "$out" | row 6)")
            theirs+=("$(printf '%s\n' "$out" | row 10)")
            ratios+=("$(printf '%s\n' "$out" | row 11)")
        done
        target=1.0; [ "$sz" = 64M ] && target=0.75
        what="${sz%r} B"; [ "$sz" = 64M ] && what="64 MiB"
        [ "$small" = 0 ] && what="$what, CCS_SMALL_BYTES=0 (replayed)"
        line "$np processes, $what: plan vs MPI (us)" \
            "$(printf '%s\n' "${ours[@]}" | median)" \
            "$(printf '%s\n' "${theirs[@]}" | median)" \
            "$(printf '%s\n' "${ratios[@]}" | median)" "<=" "$target"
    done
done

echo
echo "== 5. in-place StragglAR vs out-of-place (busbw, threads, 4 ranks, 64 MiB)"
if [ -n "$strag" ]; then
    oop=(); ip=(); ratios=()
    for i in $(seq "$RUNS"); do
        out=$("$PERF" -X threads "$strag" -b 64M -e 64M -n 5 -w 2 -c 0)
        a=$(printf '%s\n' "$out" | row 8)
        b=$(printf '%s\n' "$out" | row 12)
        oop+=("$a"); ip+=("$b")
        ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {print b / a}')")
    done
    line "in-place busbw (GB/s), ref out-of-place" \
        "$(printf '%s\n' "${ip[@]}" | median)" \
        "$(printf '%s\n' "${oop[@]}" | median)" \
        "$(printf '%s\n' "${ratios[@]}" | median)" ">=" 0.95
else
    echo "  (no ccsynth: StragglAR plan not synthesized)"
fi

echo
echo "== 6. plan load (ring:2048 allreduce, every check the loader makes)"
if [ -x "$BUILD/bin/ccsynth" ] && "$BUILD/bin/ccsynth" synth --algo ring \
        --coll allreduce --topo switch:2048 -q -o "$tmp/ring-2048.ccs" \
        >/dev/null 2>&1; then
    # One load per process, as a job loads its plan (bench-load forks for
    # each): a process that loads again reuses memory the first load paid
    # for.  The default reads the file and checks the plan on a helper
    # thread behind the reader; CCS_LOAD_THREADS=0 keeps it on one thread;
    # CCS_PLAN_MMAP=1 maps the file (opt-in, docs/runtime.md).  Wall time
    # follows the host's load: the load average is printed beside it.
    load0=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
    : > "$tmp/load.txt"
    : > "$tmp/load-one.txt"
    : > "$tmp/load-map.txt"
    for i in $(seq "$RUNS"); do
        "$BUILD/tests/test_runtime_plan" --bench-load "$tmp/ring-2048.ccs" 1 |
            awk '$1 == "raw" {print $2, $3, $4, $5, $6, $7, $8}' >> "$tmp/load.txt"
        CCS_LOAD_THREADS=0 "$BUILD/tests/test_runtime_plan" --bench-load \
            "$tmp/ring-2048.ccs" 1 |
            awk '$1 == "raw" {print $2, $3, $4, $5, $6, $7}' >> "$tmp/load-one.txt"
        CCS_PLAN_MMAP=1 "$BUILD/tests/test_runtime_plan" --bench-load \
            "$tmp/ring-2048.ccs" 1 |
            awk '$1 == "raw" {print $2, $3, $4, $5, $6, $7}' >> "$tmp/load-map.txt"
    done
    col() { awk -v c="$1" '{print $c}' "${2:-$tmp/load.txt}" | median; }
    mb=$(col 1)
    for what in "file (read):2:3:" \
                "file (CCS_LOAD_THREADS=0):2:3:$tmp/load-one.txt" \
                "file (CCS_PLAN_MMAP=1):2:3:$tmp/load-map.txt" \
                "memory:4:5:" "memory (CCS_LOAD_THREADS=0):4:5:$tmp/load-one.txt"; do
        IFS=: read -r name cw cc src <<< "$what"
        w=$(col "$cw" "$src"); c=$(col "$cc" "$src")
        # Wall time follows the host's load; CPU time is the loader's own.
        printf '  %-50s %7.3f s wall %6.0f MB/s   %7.3f s cpu %6.0f MB/s  (%s wall, %s cpu)\n' \
            "load from $name, $mb MB" "$w" "$(awk -v m="$mb" -v t="$w" 'BEGIN {print m / t}')" \
            "$c" "$(awk -v m="$mb" -v t="$c" 'BEGIN {print m / t}')" \
            "$(verdict "$(awk -v m="$mb" -v t="$w" 'BEGIN {print m / t}')" ">=" 1000)" \
            "$(verdict "$(awk -v m="$mb" -v t="$c" 'BEGIN {print m / t}')" ">=" 1000)"
    done
    # On two free cores a load takes about as long as its busier thread.
    rt=$(col 7)
    ht=$(awk '{print $3 - $7}' "$tmp/load.txt" | median)
    printf '  %-50s %7.3f s cpu, helper thread %.3f s cpu\n' \
        "load from file (read): reading thread" "$rt" "$ht"
    r=$(col 6)
    printf '  %-50s %7.3f s wall %6.0f MB/s\n' "ref: reading the file alone" \
        "$r" "$(awk -v m="$mb" -v t="$r" 'BEGIN {print m / t}')"
    printf '  load average (1 min) before and after: %s, %s\n' "$load0" \
        "$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")"
else
    echo "  (no ccsynth: ring:2048 plan not synthesized)"
fi
