#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Whether a skip is one the docs expect:
#   tests/expected_skip.sh NAME
# exits 0 when NAME (an e2e script, a unit test case, or "packaging") is
# listed in docs/testing.md's table of expected skips (between the markers
# "<!-- expected skips: begin -->" and "<!-- expected skips: end -->",
# one row a skip: | `NAME` | the reason |), 1 otherwise, 2 when the
# page has no such table. With DDPNET_NO_SKIP=1 (CI sets it), the
# runners (tests/run-unit.sh, tests/e2e/run.sh, make packaging) count
# every skip that is not listed as a failure.
set -u
page=${DDPNET_SKIPS_PAGE:-$(dirname "$0")/../docs/testing.md}
[ "$#" -eq 1 ] || { echo "usage: $0 NAME" >&2; exit 2; }
table=$(sed -n '/^<!-- expected skips: begin -->$/,/^<!-- expected skips: end -->$/p' "$page")
[ -n "$table" ] || { echo "expected_skip: no table of expected skips in $page" >&2; exit 2; }
sed -n 's/^| `\([^`]*\)` |.*/\1/p' <<<"$table" | grep -qxF -- "$1"
