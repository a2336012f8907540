#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs cmocka test binaries, UNIT_JOBS at a time (default: two per core;
# most of their time is spent waiting on timers, sockets and etcd), the
# ones named in UNIT_SERIAL (basenames: those that start an etcd of their
# own and time its answers) never two at once, each
# one's output printed whole as it ends, and prints one closing line
# "unit-FLAVOUR: N passed, N failed, N skipped" summed over all of them,
# then the five slowest. Exits non-zero if any test failed or any binary
# crashed, and, with DDPNET_NO_SKIP=1 (CI), if a test case skipped that
# docs/testing.md does not list as an expected skip (tests/expected_skip.sh).
set -u
flavour=$1; shift
jobs=${UNIT_JOBS:-$(( 2 * $(nproc 2>/dev/null || echo 1) ))}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# run_one I BIN: runs it into $results/I.out, its status in $results/I.rc.
run_one() {
    local t0=$SECONDS
    "$2" >"$results/$1.out" 2>&1
    echo $? >"$results/$1.rc"
    echo "$(( SECONDS - t0 )) $(basename "$2")" >"$results/$1.time"
}

# report I BIN: prints its output and adds it to the sums.
passed=0 failed=0 skipped=0 crashed=0 unexpected=()
report() {
    local out rc p f s name
    out=$(cat "$results/$1.out"); rc=$(cat "$results/$1.rc")
    printf '%s\n' "$out"
    # A binary may run several groups (each CPU path): every group's line counts.
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
    s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    if [ "${DDPNET_NO_SKIP:-0}" = 1 ] && [ "$s" -gt 0 ]; then
        for name in $(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([A-Za-z_][A-Za-z0-9_]*\)$/\1/p' | sort -u); do
            tests/expected_skip.sh "$name" || unexpected+=("$(basename "$2"): $name")
        done
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "$2: exited with status $rc" >&2
        crashed=$((crashed + 1)); failed=$((failed + 1))
    fi
}

serial() { [[ " ${UNIT_SERIAL:-} " == *" $(basename "$1") "* ]]; }

bins=("$@")
pending=("${!bins[@]}")
declare -A running=()   # pid -> index
serial_pid=
while [ "${#pending[@]}" -gt 0 ] || [ "${#running[@]}" -gt 0 ]; do
    for k in "${!pending[@]}"; do
        [ "${#running[@]}" -lt "$jobs" ] || break
        i=${pending[$k]}
        if serial "${bins[$i]}"; then
            [ -z "$serial_pid" ] || continue
        fi
        run_one "$i" "${bins[$i]}" &
        running[$!]=$i
        serial "${bins[$i]}" && serial_pid=$!
        unset "pending[$k]"
    done
    wait -n -p done_pid "${!running[@]}"
    i=${running[$done_pid]}
    unset "running[$done_pid]"
    [ "$serial_pid" != "$done_pid" ] || serial_pid=
    report "$i" "${bins[$i]}"
done

echo "unit-$flavour: $passed passed, $failed failed, $skipped skipped ($jobs at a time)"
echo "unit-$flavour: the slowest: $(cat "$results"/*.time | sort -rn | head -n 5 | awk '{ printf "%s%s %ss", (NR > 1 ? ", " : ""), $2, $1 }')"
for u in "${unexpected[@]}"; do
    echo "unit-$flavour: $u skipped, and DDPNET_NO_SKIP=1: not an expected skip (docs/testing.md)" >&2
done
[ "$failed" -eq 0 ] && [ "$crashed" -eq 0 ] && [ "${#unexpected[@]}" -eq 0 ]
