#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every end-to-end script (or those named as arguments), one after
# another, each under a time limit, with its output in build/e2e/NAME.log.
# Prints one line per script and a closing line
# "e2e: N passed, N failed, N skipped", then each failure's line again
# (a CI log shows its end: the reason must not scroll away behind the
# failed script's last lines); exits non-zero if any failed.
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
passed=0 failed=0 skipped=0 failures=()
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
for f in "${scripts[@]}"; do
    name=$(basename "$f" .sh)
    log=$logdir/$name.log
    t0=$(date +%s)
    timeout -k 10 "$limit" bash "$f" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    left=$(sweep "$name")
    [ -z "$left" ] || { echo "$name: its clean-up left namespaces behind; removed:"; echo "$left" | sed 's/^/    /'; } | tee -a "$log"
    case "$rc" in
    0)  echo "$name: passed (${secs}s)"; passed=$((passed + 1)) ;;
    77) reason=$(sed -n 's/^SKIP: //p' "$log" | tail -n 1)
        if [ "${DDPNET_NO_SKIP:-0}" = 1 ] && ! tests/expected_skip.sh "$name"; then
            failures+=("$name: FAILED (skipped: ${reason:-no reason given}; DDPNET_NO_SKIP=1 and docs/testing.md does not list it as an expected skip)")
            echo "${failures[-1]}"; failed=$((failed + 1))
        else
            echo "$name: skipped (${reason:-no reason given})"; skipped=$((skipped + 1))
        fi ;;
    124|137)
        failures+=("$name: FAILED (timed out after ${limit}s; see $log)")
        echo "${failures[-1]}"; failed=$((failed + 1))
        tail -n 30 "$log" | sed 's/^/    /' ;;
    *)  why=$(grep '^FAIL: ' "$log" | head -n 1)
        failures+=("$name: FAILED (exit $rc, ${secs}s) ${why#FAIL: }")
        echo "${failures[-1]}"; failed=$((failed + 1))
        echo "    --- last lines of $log"
        tail -n 40 "$log" | sed 's/^/    /' ;;
    esac
done
echo "e2e: $passed passed, $failed failed, $skipped skipped"
for f in "${failures[@]}"; do echo "e2e: $f"; done
[ "$failed" -eq 0 ]
