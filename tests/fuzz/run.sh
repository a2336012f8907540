#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs each libFuzzer harness for SECONDS, from its seed corpus under
# tests/fuzz/seeds/NAME (when present) into build/fuzz/corpus/NAME,
# FUZZ_JOBS at a time (default: one per core; a harness is one thread, so
# each still has a core to itself for its SECONDS). Prints one line per
# harness as it ends and "fuzz: N passed, N failed" at the end.
set -u
seconds=$1; shift
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# fuzz_one BIN: runs it; prints its line; leaves passed or failed in $results.
fuzz_one() {
    local bin=$1 name corpus log seeds runs
    name=$(basename "$bin")
    corpus=build/fuzz/corpus/$name
    mkdir -p "$corpus" build/fuzz/artifacts
    seeds=(); [ -d "tests/fuzz/seeds/$name" ] && seeds=("tests/fuzz/seeds/$name")
    log=build/fuzz/$name.log
    if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
         -artifact_prefix=build/fuzz/artifacts/"$name"- -print_final_stats=1 \
         "$corpus" "${seeds[@]}" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
        echo "$name: clean after ${runs:-?} runs in ${seconds}s"
        echo passed >"$results/$name"
    else
        { echo "$name: FAILED (see $log)"; tail -n 30 "$log"; } >"$results/$name.lines"
        cat "$results/$name.lines"
        echo failed >"$results/$name"
    fi
}

for bin in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    fuzz_one "$bin" &
done
wait
passed=$(grep -lx passed "$results"/* 2>/dev/null | wc -l)
failed=$(( $# - passed ))
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
