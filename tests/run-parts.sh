#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make test's driver: runs each part (a make target) named as an
# argument, one after another, and keeps going past a failed one, so that
# one failure hides none of the others. Prints first which CPU paths this
# machine runs (the unit tests cover the rest through their fallbacks:
# docs/testing.md), and at the end each part's result and time, then the
# whole run's; exits non-zero if any part failed.
#
#   tests/run-parts.sh PART...
set -u
cd "$(dirname "$0")/.."
[ "$#" -gt 0 ] || { echo "usage: $0 PART..." >&2; exit 2; }

t_all=$(date +%s)
if make --no-print-directory build/tools/cpu_paths >/dev/null 2>&1; then
    build/tools/cpu_paths
else
    echo "CPU paths on this machine: unknown (build/tools/cpu_paths did not build)"
fi

names=() results=() times=() failed=0
for part in "$@"; do
    echo
    echo "=== make $part"
    t0=$(date +%s)
    make --no-print-directory "$part"
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    names+=("$part") times+=("$secs")
    if [ "$rc" -eq 0 ]; then
        results+=(passed)
    else
        results+=("FAILED (exit $rc)"); failed=$((failed + 1))
    fi
    echo "=== make $part: ${results[-1]} in ${secs}s"
done

total=$(( $(date +%s) - t_all ))
echo
echo "test: each part"
for i in "${!names[@]}"; do
    printf '  %-16s %-18s %5ss  (%dm %02ds)\n' "${names[$i]}" "${results[$i]}" "${times[$i]}" \
        $(( times[i] / 60 )) $(( times[i] % 60 ))
done
printf 'test: %d of %d parts failed, in %dm %02ds\n' "$failed" "${#names[@]}" \
    $(( total / 60 )) $(( total % 60 ))
[ "$failed" -eq 0 ]
