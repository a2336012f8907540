#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs cmocka test binaries, one after another, and prints one closing line
# "unit-FLAVOUR: N passed, N failed, N skipped" summed over all of them.
# Exits non-zero if any test failed or any binary crashed, and, with
# DDPNET_NO_SKIP=1 (CI), if a test case skipped that docs/testing.md does not
# list as an expected skip (tests/expected_skip.sh).
set -u
flavour=$1; shift
passed=0 failed=0 skipped=0 crashed=0 unexpected=()
for bin in "$@"; do
    out=$("$bin" 2>&1); rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n1)
    s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -n1)
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
    if [ "${DDPNET_NO_SKIP:-0}" = 1 ] && [ -n "$s" ]; then
        for name in $(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([A-Za-z_][A-Za-z0-9_]*\)$/\1/p' | sort -u); do
            tests/expected_skip.sh "$name" || unexpected+=("$(basename "$bin"): $name")
        done
    fi
    if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
        echo "$bin: exited with status $rc" >&2
        crashed=$((crashed + 1)); failed=$((failed + 1))
    fi
done
echo "unit-$flavour: $passed passed, $failed failed, $skipped skipped"
for u in "${unexpected[@]}"; do
    echo "unit-$flavour: $u skipped, and DDPNET_NO_SKIP=1: not an expected skip (docs/testing.md)" >&2
done
[ "$failed" -eq 0 ] && [ "$crashed" -eq 0 ] && [ "${#unexpected[@]}" -eq 0 ]
