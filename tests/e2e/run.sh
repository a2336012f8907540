#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every end-to-end script (or those named as arguments), each under a
# time limit, with its output in build/e2e/NAME.log, on the daemon's
# default: shards, one per core (overlay/loop/shard.h; a script that must
# cover one loop sets DDPNET_SHARDS=1 itself). Prints one line per run as it ends and a
# closing line "e2e: N passed, N failed, N skipped", then each failure's
# line again (a CI log shows its end: the reason must not scroll away
# behind the failed script's last lines), then the ten longest runs;
# exits non-zero if any failed.
#
# Side by side: up to $E2E_JOBS runs at once (default 1). Most scripts
# wait on timers, handshakes and boots far more than they compute, so
# they share the CPUs; a script whose figures need the machine to itself
# (throughput, floods, time limits) says so with a line "# e2e: alone"
# and runs with no other; scripts with the same "# e2e: lock NAME" line
# (a cache they build) never overlap; "# e2e: long" ones start first, so
# that none is left running by itself at the end.
#
# Exit status 77 from a script means skipped; its "SKIP: reason" line is shown.
# With DDPNET_NO_SKIP=1 (CI), a skip counts as a failure unless docs/testing.md
# lists the script as an expected skip (tests/expected_skip.sh); so does
# a step a script skipped (lib.sh's skip_step fails the script then).
set -u
cd "$(dirname "$0")/../.."
limit=${E2E_TIMEOUT:-600}
logdir=${E2E_LOGDIR:-build/e2e}
mkdir -p "$logdir"
if [ "$#" -gt 0 ]; then
    scripts=("$@")
else
    scripts=()
    for f in tests/e2e/*.sh; do
        case "$(basename "$f")" in lib.sh|boot_lib.sh|run.sh|demo.sh) continue ;; esac
        scripts+=("$f")
    done
fi
# sweep NAME: namespaces a run of NAME left behind (its shell, whose pid is
# in their prefix ddpe2e-NAME-PID-, is gone: killed before its clean-up
# ended), emptied with SIGKILL and deleted, so that nothing of it runs on
# beside the next script. Prints what it swept.
# running PID: alive, and not a zombie, within 2 s (a shell killed with
# its timeout may not have been reaped yet).
running() {
    local i state
    for i in $(seq 20); do
        state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
        [ -n "$state" ] && [ "$state" != Z ] || return 1
        sleep 0.1
    done
    return 0
}
sweep() {
    local ns pid pids
    for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep "^ddpe2e-$1-[0-9]*-"); do
        pid=${ns#ddpe2e-"$1"-}; pid=${pid%%-*}
        running "$pid" && continue
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null && echo "$ns${pids:+ (killed: $(echo $pids))}"
    done
}

# tag FILE WORD: the rest of the script's "# e2e: WORD ..." line, if any.
tag() { sed -n "s/^# e2e: $2 *//p" "$1" | head -n 1; }
has_tag() { grep -q "^# e2e: $2\( \|\$\)" "$1"; }

# The runs: those alone first (they wait for an empty pool: first, they
# make it wait for nothing), then the long ones.
runs=()
for pass in alone long rest; do
    for f in "${scripts[@]}"; do
        if has_tag "$f" alone; then want=alone
        elif has_tag "$f" long; then want=long
        else want=rest; fi
        [ "$want" = "$pass" ] || continue
        runs+=("$f")
    done
done

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# run_one FILE ID: runs it, prints its lines, leaves its outcome
# (passed, failed, skipped) and any failure line in $results/ID.*.
run_one() {
    local f=$1 id=$2 name log rc secs t0 left reason why label
    name=$(basename "$f" .sh)
    label=$name
    log=$logdir/$name.log
    t0=$(date +%s)
    timeout -k 10 "$limit" bash "$f" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    echo "$secs $label" >"$results/$id.time"
    left=$(sweep "$name")
    [ -z "$left" ] || { echo "$label: its clean-up left namespaces behind; removed:"; echo "$left" | sed 's/^/    /'; } | tee -a "$log"
    {
    case "$rc" in
    0)  echo "$label: passed (${secs}s)"; echo passed >"$results/$id.out" ;;
    77) reason=$(sed -n 's/^SKIP: //p' "$log" | tail -n 1)
        if [ "${DDPNET_NO_SKIP:-0}" = 1 ] && ! tests/expected_skip.sh "$name"; then
            echo "$label: FAILED (skipped: ${reason:-no reason given}; DDPNET_NO_SKIP=1 and docs/testing.md does not list it as an expected skip)" | tee "$results/$id.fail"
            echo failed >"$results/$id.out"
        else
            echo "$label: skipped (${reason:-no reason given})"; echo skipped >"$results/$id.out"
        fi ;;
    124|137)
        echo "$label: FAILED (timed out after ${limit}s; see $log)" | tee "$results/$id.fail"
        echo failed >"$results/$id.out"
        tail -n 30 "$log" | sed 's/^/    /' ;;
    *)  why=$(grep '^FAIL: ' "$log" | head -n 1)
        echo "$label: FAILED (exit $rc, ${secs}s) ${why#FAIL: }" | tee "$results/$id.fail"
        echo failed >"$results/$id.out"
        echo "    --- last lines of $log"
        tail -n 40 "$log" | sed 's/^/    /' ;;
    esac
    } >"$results/$id.lines"
    cat "$results/$id.lines"
}

jobs_max=${E2E_JOBS:-1}
[ "$jobs_max" -ge 1 ] 2>/dev/null || jobs_max=1
declare -A running_runs=()   # pid -> run index
declare -A held_locks=()     # lock name -> pid
alone_pid=
pending=("${!runs[@]}")

# may_start I: whether run I may start beside what runs now.
may_start() {
    local f=${runs[$1]} lock
    [ -z "$alone_pid" ] || return 1
    if has_tag "$f" alone; then [ "${#running_runs[@]}" -eq 0 ]; return; fi
    [ "${#running_runs[@]}" -lt "$jobs_max" ] || return 1
    lock=$(tag "$f" lock)
    [ -z "$lock" ] || [ -z "${held_locks[$lock]:-}" ]
}

while [ "${#pending[@]}" -gt 0 ] || [ "${#running_runs[@]}" -gt 0 ]; do
    started=1
    while [ "$started" = 1 ]; do
        started=0
        for k in "${!pending[@]}"; do
            i=${pending[$k]}
            if ! may_start "$i"; then
                # Nothing jumps ahead of a run that waits to be alone.
                has_tag "${runs[$i]}" alone && break
                continue
            fi
            f=${runs[$i]}
            run_one "$f" "$i" &
            pid=$!
            running_runs[$pid]=$i
            has_tag "$f" alone && alone_pid=$pid
            lock=$(tag "$f" lock)
            [ -z "$lock" ] || held_locks[$lock]=$pid
            unset "pending[$k]"
            started=1
            break
        done
    done
    [ "${#running_runs[@]}" -gt 0 ] || continue
    wait -n -p done_pid "${!running_runs[@]}"
    unset "running_runs[$done_pid]"
    [ "$alone_pid" != "$done_pid" ] || alone_pid=
    for lock in "${!held_locks[@]}"; do
        [ "${held_locks[$lock]}" != "$done_pid" ] || unset "held_locks[$lock]"
    done
done

passed=0 failed=0 skipped=0
for i in "${!runs[@]}"; do
    case "$(cat "$results/$i.out" 2>/dev/null)" in
    passed) passed=$((passed + 1)) ;;
    skipped) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1))
       [ -f "$results/$i.fail" ] || echo "${runs[$i]}: FAILED (no outcome recorded)" >"$results/$i.fail" ;;
    esac
done
echo "e2e: $passed passed, $failed failed, $skipped skipped (${jobs_max} at a time)"
for i in "${!runs[@]}"; do
    [ -f "$results/$i.fail" ] && sed 's/^/e2e: /' "$results/$i.fail"
done
echo "e2e: the longest runs:"
cat "$results"/*.time 2>/dev/null | sort -rn | head -n 10 | awk '{ t = $1; $1 = ""; printf "  %5ss %s\n", t, $0 }'
[ "$failed" -eq 0 ]
