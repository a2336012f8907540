#!/usr/bin/env bash
# Runs cmocka test binaries, one after another, and prints one closing line
# "unit-FLAVOUR: N passed, N failed, N skipped" summed over all of them.
# Exits non-zero if any test failed or any binary crashed.
set -u
flavour=$1; shift
passed=0 failed=0 skipped=0 crashed=0
for bin in "$@"; do
    out=$("$bin" 2>&1); rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n1)
    s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -n1)
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
    if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
        echo "$bin: exited with status $rc" >&2
        crashed=$((crashed + 1)); failed=$((failed + 1))
    fi
done
echo "unit-$flavour: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$crashed" -eq 0 ]
