#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make mutants: each central check deleted (or inverted) in turn, and the
# tests that must notice it run against that mutant. The list, and what
# each mutant is, is tests/mutants.list.
#
# In a scratch copy of the tree (build/mutants/tree: the checkout's files
# and, to start warm, its plain objects), one mutant at a time: the line
# changed, the tests named for it built (plain, no sanitizers: speed) and
# run in order until one fails. A mutant no test kills survives. Prints
# one row per mutant (check, mutant, killed by) and the time taken.
# Exits non-zero when a mutant survives, when its text is not on exactly
# one line of its file (the list is out of date), when it does not
# build, or when the unmutated tests fail in the scratch copy.
#
#   MUTANTS_ONLY=REGEX      only the checks whose name matches
#   MUTANTS_FILES=REGEX     only the mutants in files whose path matches
#   MUTANTS_TIMEOUT=SECS    per test binary run (300); a test that hangs
#                           under a mutant has noticed it
set -u
cd "$(dirname "$0")/.."
list=${MUTANTS_LIST:-tests/mutants.list}
scratch=build/mutants/tree
limit=${MUTANTS_TIMEOUT:-300}
only=${MUTANTS_ONLY:-}
only_files=${MUTANTS_FILES:-}
vectors=${DDPNET_VECTORS:-${VECTORS:-$(cd .. && pwd)/shared/vectors}}
log=build/mutants/log
t0=$(date +%s)

checks=() files=() finds=() repls=() tests=()
add_block() {
    [ -n "${c_check:-}" ] || return 0
    if { [ -z "$only" ] || [[ $c_check =~ $only ]]; } &&
       { [ -z "$only_files" ] || [[ $c_file =~ $only_files ]]; }; then
        checks+=("$c_check") files+=("$c_file") finds+=("$c_find")
        repls+=("$c_repl") tests+=("$c_tests")
    fi
    c_check= c_file= c_find= c_repl= c_tests=
}
c_check= c_file= c_find= c_repl= c_tests=
while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
    '#'*) ;;
    '')          add_block ;;
    check:*)     c_check=${line#check: } ;;
    file:*)      c_file=${line#file: } ;;
    find:*)      c_find=${line#find: } ;;
    replace:*)   c_repl=${line#replace:}; c_repl=${c_repl# } ;;
    tests:*)     c_tests=${line#tests: } ;;
    *)           echo "mutants: $list: a line of no known field: $line" >&2; exit 2 ;;
    esac
done <"$list"
add_block
if [ "${#checks[@]}" -eq 0 ]; then
    echo "mutants: no mutant in $list${only:+ matches $only}${only_files:+ in files matching $only_files}" >&2
    exit 2
fi

# The scratch copy: what git tracks or would (ignored files left out),
# with mtimes kept so that the objects copied beside them stay current.
rm -rf build/mutants
mkdir -p "$scratch/build"
# Outside a git checkout (a release tarball): everything but build/ and bin/.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -co --exclude-standard -z
else
    find . -path ./build -prune -o -path ./bin -prune -o -type f -printf '%P\0'
fi | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$scratch"
[ -d build/plain ] && cp -a build/plain "$scratch/build/"
: >"$log"

# Builds the named unit tests in the scratch copy.
build_tests() {
    local targets=()
    for t in "$@"; do targets+=("build/plain/unit/$t"); done
    make -C "$scratch" -j2 --no-print-directory VECTORS="$vectors" "${targets[@]}" >>"$log" 2>&1
}

# Runs the named tests in order until one fails; prints the one that
# failed and its failing cases ("" when all passed).
first_failure() {
    local out rc names
    for t in "$@"; do
        # CMOCKA_TEST_ABORT: the first failed assertion ends the binary (a
        # mutant is judged by its first failure; the cases after it, some
        # of which wait out a deadline under a mutant, need not run).
        out=$(cd "$scratch" && CMOCKA_TEST_ABORT=1 DDPNET_VECTORS="$vectors" \
                  timeout -k 5 "$limit" "build/plain/unit/$t" 2>&1)
        rc=$?
        printf '%s\n' "$out" >>"$log"
        [ "$rc" -eq 0 ] && continue
        if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
            echo "$t (timed out)"
            return
        fi
        names=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([^ ]*\)$/\1/p' |
                    sort -u | head -n 3 | paste -sd, -)
        # Aborted at the first failure: the case that was running.
        [ -n "$names" ] || [ "$rc" -ne 134 ] ||
            names=$(printf '%s\n' "$out" | sed -n 's/^\[ RUN      \] \(.*\)$/\1/p' | tail -n 1)
        if [ -n "$names" ]; then echo "$t: $names"; else echo "$t (exit $rc)"; fi
        return
    done
}

all_tests=$(printf '%s\n' "${tests[@]}" | tr ' ' '\n' | sed '/^$/d' | sort -u)
# shellcheck disable=SC2086
if ! build_tests $all_tests; then
    echo "mutants: the unmutated tests do not build (see $log)" >&2
    exit 1
fi
# shellcheck disable=SC2086
base=$(first_failure $all_tests)
if [ -n "$base" ]; then
    echo "mutants: unmutated, $base fails: no mutant can be judged (see $log)" >&2
    exit 1
fi

survived=0 broken=0 rows=()
for i in "${!checks[@]}"; do
    f=$scratch/${files[$i]}
    where=${files[$i]}
    if [ ! -f "$f" ]; then
        killed="ERROR: no such file"; broken=$((broken + 1))
    elif [ "$(grep -cF -- "${finds[$i]}" "$f")" != 1 ]; then
        killed="ERROR: its text is on $(grep -cF -- "${finds[$i]}" "$f") lines, not 1"
        broken=$((broken + 1))
    else
        where=$where:$(grep -nF -- "${finds[$i]}" "$f" | cut -d: -f1)
        cp -p "$f" "$f.mutants-orig"
        FIND=${finds[$i]} REPL=${repls[$i]} awk '
            BEGIN { find = ENVIRON["FIND"]; repl = ENVIRON["REPL"] }
            { k = index($0, find) }
            k && repl == "" { next }
            k { $0 = substr($0, 1, k - 1) repl substr($0, k + length(find)) }
            { print }' "$f.mutants-orig" >"$f"
        echo "=== mutant: ${checks[$i]} ($where)" >>"$log"
        # shellcheck disable=SC2086
        if ! build_tests ${tests[$i]}; then
            killed="ERROR: the mutant does not build"; broken=$((broken + 1))
        else
            # shellcheck disable=SC2086
            killed=$(first_failure ${tests[$i]})
            if [ -z "$killed" ]; then
                killed="SURVIVED (${tests[$i]} pass)"; survived=$((survived + 1))
            fi
        fi
        mv "$f.mutants-orig" "$f"
        touch "$f"      # newer than the mutant's object: rebuilt next time
    fi
    rows+=("${checks[$i]}"$'\t'"$where"$'\t'"$killed")
    printf '  %-58s %s\n' "${checks[$i]}" "$killed"
done

echo
printf '%s\n' "check"$'\t'"mutant"$'\t'"killed by" "${rows[@]}" | column -t -s $'\t'
secs=$(( $(date +%s) - t0 ))
echo "mutants: ${#checks[@]} run, $((${#checks[@]} - survived - broken)) killed," \
     "$survived survived, $broken broken, in ${secs}s (log: $log)"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
