#!/usr/bin/env bash
# Scale benchmark: thousands of GPUs.  One line per command with
#   wall(s)   elapsed time of the whole command
#   cpu(s)    user + system time (both threads where there are two): on a
#             shared, loaded machine the steadier of the two figures
#   rss(MiB)  peak resident memory (GNU time's %M)
#   out(MiB)  size of the file written (- when none)
#   rc        exit status (1 with "out of memory budget" is a resource
#             limit, never a failed verification)
#   exp       growth exponent of cpu time against the previous size of the
#             same family (at least 1.5x smaller): log(cpu2/cpu1) / log(n2/n1)
#   note      the figure the target is about (planning time, rounds, ...)
# Targets (docs: README "Scale"): ccsynth topo on every built-in at 65536
# GPUs < 2 s; MultiTree torus:32x32 < 2 s, torus:64x64 < 60 s; StragglAR
# planning < 1 s for n <= 256, < 5 s for n <= 1024, within LB + 1; MILP
# wall time <= limit + 10%; simulator events/s at 1024 ranks >= 80% of
# the rate at 64 (the "sim" lines: wall and cpu are those of the median
# run, the note its event-loop rate from `ccsynth sim --time`).
#   usage: BUILD=build [ONLY="sim topo ..."] scripts/bench-scale.sh [quick|full]
# quick (default) skips the minutes-long cases (torus:64x64, StragglAR
# n = 1000 and 1023, ring/stragglar on switch:4096 and 8192, the simulator
# at 4096 ranks).  ONLY picks sections: topo multitree stragglar milp sim
# big (default: all).
set -u
BUILD=${BUILD:-build}
C=${CCSYNTH:-$BUILD/bin/ccsynth}
MODE=${1:-quick}
TIME=/usr/bin/time
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -x "$TIME" ] || { echo "bench-scale: needs GNU time at $TIME" >&2; exit 2; }
[ -x "$C" ] || { echo "bench-scale: build first ($C missing)" >&2; exit 2; }

printf '%-44s %8s %8s %8s %8s %3s %6s  %s\n' case 'wall(s)' 'cpu(s)' \
    'rss(MiB)' 'out(MiB)' rc exp note
declare -A last_n last_cpu   # per family: the previous size and cpu
ONLY=${ONLY:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

# run FAMILY N NAME NOTE-AWK -- command...: one line of the table.  The
# note is an awk program run over the command's stderr+stdout.
run() {
    local fam=$1 n=$2 name=$3 note_awk=$4
    shift 5
    rm -f "$tmp/out"
    "$TIME" -f '%e %U %S %M' -o "$tmp/time" "$@" > "$tmp/log" 2>&1
    local rc=$?
    local wall user sys rss cpu size exp note
    read -r wall user sys rss < <(tail -n 1 "$tmp/time")
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    size=-
    [ -f "$tmp/out" ] && size=$(stat -c %s "$tmp/out" |
                                awk '{ printf "%.1f", $1 / 1048576 }')
    exp=-
    # a refused run (rc != 0) did not do the work: no growth figure
    if [ $rc -eq 0 ] && [ -n "${last_n[$fam]:-}" ]; then
        exp=$(awk -v a="${last_cpu[$fam]}" -v b="$cpu" -v m="${last_n[$fam]}" \
              -v n="$n" \
              'BEGIN { if (a > 0 && b > 0 && m > 0 && n >= 1.5 * m)
                           printf "%.2f", log(b / a) / log(n / m);
                       else print "-" }')
    fi
    note=$(awk "$note_awk" "$tmp/log" | head -n 1)
    printf '%-44s %8s %8s %8.0f %8s %3s %6s  %s\n' "$name" "$wall" "$cpu" \
        "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "$size" "$rc" \
        "$exp" "$note"
    # the base for the next exponent: the first size, then each size at
    # least 1.5x the base
    if [ -z "${last_n[$fam]:-}" ] || [ "$exp" != - ]; then
        last_n[$fam]=$n
        last_cpu[$fam]=$cpu
    fi
}

none='{ }'
topo_note='/sampled: routes/ { s = 1 } END { print s ? "routes sampled" : "routes exact" }'
if want topo; then
echo "# ccsynth topo: summary of every built-in (sizes 4096 -> 65536)"
for spec in switch:4096 switch:16384 switch:65536; do
    run topo-switch "${spec#switch:}" "topo $spec" "$topo_note" -- \
        "$C" topo --topo "$spec"
done
for spec in ring:4096 ring:65536; do
    run topo-ring "${spec#ring:}" "topo $spec" "$topo_note" -- \
        "$C" topo --topo "$spec"
done
run topo-torus 4096 "topo torus:64x64" "$topo_note" -- \
    "$C" topo --topo torus:64x64
run topo-torus 65536 "topo torus:256x256" "$topo_note" -- \
    "$C" topo --topo torus:256x256
for spec in mesh:256x256 fattree:256x256 cluster:8192x8 \
            cluster:8192x8,nics=gpu; do
    run topo-other 0 "topo $spec" "$topo_note" -- "$C" topo --topo "$spec"
done
run topo-dot 65536 "topo switch:65536 --dot" "$none" -- \
    "$C" topo --topo switch:65536 --dot -q -o "$tmp/out"
fi

if want multitree; then
echo "# MultiTree: trees alone (ccsynth trees) and synth + verify + write"
mt_note='/T=/ { for (i = 1; i <= NF; i++) if ($i ~ /^T=/) print $i " steps" }'
run mt-trees 256 "trees torus:16x16" "$mt_note" -- \
    "$C" trees --topo torus:16x16 -o "$tmp/out"
run mt-trees 1024 "trees torus:32x32" "$mt_note" -- \
    "$C" trees --topo torus:32x32 -o "$tmp/out"
run mt-synth 256 "synth multitree torus:16x16" "$none" -- \
    "$C" synth --algo multitree --topo torus:16x16 -q -o "$tmp/out"
run mt-synth 1024 "synth multitree torus:32x32" "$none" -- \
    "$C" synth --algo multitree --topo torus:32x32 -q -o "$tmp/out"
if [ "$MODE" = full ]; then
    run mt-synth 4096 "synth multitree torus:64x64" \
        '/out of memory budget|failed/ { print substr($0, 1, 60) }' -- \
        "$C" synth --algo multitree --topo torus:64x64 -q -o "$tmp/out"
fi
fi

if want stragglar; then
echo "# StragglAR: planning time (\"planned in\") and rounds against LB"
sg_note='/phase 1:/ { r = $9; lb = $12; sub(/\)/, "", lb) }
         /planned in/ { ms = $4 }
         END { printf "plan %.2f s, %d rounds, LB %d, +%d\n", ms / 1000, r, lb, r - lb }'
ns="127 255 256 257 383 511 512 768 1024"
[ "$MODE" = full ] && ns="$ns 1000 1023"
for n in $ns; do
    fam=stragglar-search                 # matchings: n not a power of 2
    [ $((n & (n - 1))) -eq 0 ] && fam=stragglar-pow2     # Algorithm 1
    run "$fam" "$n" "synth stragglar switch:$n" "$sg_note" -- \
        "$C" synth --algo stragglar --topo "switch:$n" -o "$tmp/out"
done
fi

if want milp; then
echo "# MILP: wall time against --time-limit (target: limit + 10%)"
milp_note='/^milp: (optimal|limit|no-solution)/ { print $2, $3; exit }'
run milp-8 8 "synth milp switch:8 (limit 10 s)" "$milp_note" -- \
    "$C" synth --algo milp --topo switch:8 -o "$tmp/out"
run milp 16 "synth milp switch:16 (limit 10 s)" "$milp_note" -- \
    "$C" synth --algo milp --topo switch:16 -o "$tmp/out"
run milp-2 16 "synth milp switch:16 --time-limit 2s" "$milp_note" -- \
    "$C" synth --algo milp --topo switch:16 --time-limit 2s -o "$tmp/out"
fi

if want sim; then
echo "# simulator: events per cpu second of the event loop (median of 3)"
# sim_rate FAMILY N SCHEDULE TOPO: one table line.  The 1 GiB size is
# repeated until a run has about 2 M events, so that small schedules are
# timed over more than a few milliseconds.
declare -A rate_at
sim_rate() {
    local fam=$1 n=$2 sched=$3 topo=$4 ev reps sizes wall cpu rss rate
    ev=$("$C" sim "$sched" --topo "$topo" --sizes 1G --time -q 2>&1 \
             >/dev/null | sed -nE 's/.*, ([0-9]+) events, .*/\1/p')
    if [ -z "$ev" ]; then
        printf '%-44s %8s %8s %8s %8s %3s %6s  %s\n' "sim $fam $topo" - - - \
            - 1 - "ccsynth sim failed"
        return
    fi
    reps=$(awk -v e="$ev" 'BEGIN { k = int(2e6 / e) + 1;
                                   print (k > 4096 ? 4096 : k) }')
    sizes=$(awk -v k="$reps" 'BEGIN { for (i = 0; i < k; i++)
                                          printf "%s1G", i ? "," : "" }')
    for _ in 1 2 3; do
        "$TIME" -f '%e %U %S %M' -o "$tmp/time" "$C" sim "$sched" \
            --topo "$topo" --sizes "$sizes" --time -q 2> "$tmp/log" \
            > /dev/null
        read -r wall user sys rss < <(tail -n 1 "$tmp/time")
        echo "$(sed -nE 's/.* ([0-9.]+) M events\/s of cpu.*/\1/p' \
                "$tmp/log") $wall $(awk -v u="$user" -v s="$sys" \
                'BEGIN { printf "%.2f", u + s }') $rss"
    done | sort -g | sed -n 2p > "$tmp/med"
    read -r rate wall cpu rss < "$tmp/med"
    rate_at[$fam,$n]=$rate
    printf '%-44s %8s %8s %8.0f %8s %3s %6s  %s\n' "sim $fam $topo" "$wall" \
        "$cpu" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" - 0 - \
        "$rate M events/s, $ev events x $reps"
}
sim_ratio() {   # FAMILY: the rate at 1024 ranks over the rate at 64
    local a=${rate_at[$1,64]:-} b=${rate_at[$1,1024]:-}
    [ -n "$a" ] && [ -n "$b" ] &&
        awk -v a="$a" -v b="$b" -v f="$1" 'BEGIN {
            printf "# sim %s: rate at 1024 / rate at 64 = %.2f (target >= 0.80)\n",
                   f, b / a }'
}
sim_ns="64 256 1024"
[ "$MODE" = full ] && sim_ns="$sim_ns 4096"
for n in $sim_ns; do
    sched="$tmp/sim-ring-$n.ccs"
    # ring's 2n(n-1) transfers at 4096 ranks outgrow the verifier
    if [ "$n" -le 1024 ] &&
       "$C" synth --algo ring --topo "switch:$n" -q -o "$sched"; then
        sim_rate ring "$n" "$sched" "switch:$n"
    fi
    rm -f "$sched"
done
sim_ratio ring
for side in 8 16 32 64; do
    n=$((side * side))
    case " $sim_ns " in *" $n "*) ;; *) continue ;; esac
    [ "$n" -gt 1024 ] && continue     # MultiTree's trees take minutes there
    sched="$tmp/sim-mt-$n.ccs"
    "$C" synth --algo multitree --topo "torus:${side}x$side" -q \
        -o "$sched" && sim_rate multitree "$n" "$sched" "torus:${side}x$side"
    rm -f "$sched"
done
sim_ratio multitree
for n in $sim_ns; do
    sched="$tmp/sim-dbtree-$n.ccs"
    "$C" synth --algo dbtree --topo "switch:$n" -q -o "$sched" &&
        sim_rate dbtree "$n" "$sched" "switch:$n"
    rm -f "$sched"
done
sim_ratio dbtree
fi

if want big; then
echo "# ring and stragglar allreduce on a switch: synth + verify + write"
oom_note='/out of memory budget/ { print "out of memory budget (verifier)"; exit }
          /format limit/ { print "format limit (file over 4 GiB), refused before verifying"; exit }'
sizes="1024 2048"
[ "$MODE" = full ] && sizes="$sizes 4096 8192"
for algo in ring stragglar; do
    for n in $sizes; do
        run "big-$algo" "$n" "synth $algo switch:$n" "$oom_note" -- \
            "$C" synth --algo "$algo" --topo "switch:$n" -q -o "$tmp/out"
    done
done
fi
uptime | sed 's/^/# load: /'
