#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# Shards under ThreadSanitizer (issue 58): e2e scripts again, with the
# daemon built with -fsanitize=thread (build/tsan/ddpnet; make e2e builds
# it) and 4 shards per daemon, more than a 2-core machine's default, so
# that the shards, their crypto jobs, the engine lock, the resolver and
# the control socket meet. The scripts ($TSAN_SCRIPTS) are those whose
# traffic crosses what shards share: three_nodes.sh (ping, iperf3 both
# ways, status, down), reload.sh (membership changed under live
# traffic) and rules.sh (the rules' connection table, written by every
# shard that opens or seals a packet, and a reload of the rules). A data
# race ends the daemon (halt_on_error, exit status 66) and writes its
# report under the run's folder; the script fails on any report, even
# when the script it ran passed. Alone: the sanitized daemons are
# several times slower, and their iperf3 takes both cores.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$root/build/tsan/ddpnet
[ -x "$bin" ] || { echo "FAIL: no $bin: run 'make build/tsan/ddpnet' (make e2e does)" >&2; exit 1; }
reports=$(mktemp -d /tmp/ddpnet-tsan.XXXXXX)
chmod 1777 "$reports"   # the daemons write there as their own user (ddpnet)
trap 'rm -rf "$reports"' EXIT

for script in ${TSAN_SCRIPTS:-three_nodes reload rules}; do
    rc=0
    DDPNET=$bin DDPNET_SHARDS=4 \
        TSAN_OPTIONS="halt_on_error=1:exitcode=66:log_path=$reports/race" \
        bash "$here/$script.sh" || rc=$?
    found=$(ls "$reports")
    if [ -n "$found" ]; then
        for f in "$reports"/*; do echo "--- $f"; head -n 60 "$f"; done >&2
        echo "FAIL: $script.sh: ThreadSanitizer reported in $(echo $found | wc -w) daemon(s)" >&2
        exit 1
    fi
    [ "$rc" -ne 77 ] || exit 77   # the script said why it skipped
    [ "$rc" -eq 0 ] || { echo "FAIL: $script.sh under ThreadSanitizer: exit $rc" >&2; exit "$rc"; }
    echo "tsan_shards: $script.sh passed with 4 shards per daemon, no report"
done
echo "PASS: ${TSAN_SCRIPTS:-three_nodes reload rules} with 4 shards per daemon under ThreadSanitizer, no report"
