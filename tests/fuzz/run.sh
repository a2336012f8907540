#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs each libFuzzer harness for SECONDS, from its seed corpus under
# tests/fuzz/seeds/NAME (when present) into build/fuzz/corpus/NAME.
# Prints one line per harness and "fuzz: N passed, N failed" at the end.
set -u
seconds=$1; shift
passed=0 failed=0
for bin in "$@"; do
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
        passed=$((passed + 1))
    else
        echo "$name: FAILED (see $log)"; tail -n 30 "$log"
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
