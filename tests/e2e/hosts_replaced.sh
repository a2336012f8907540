#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The hosts file replaced under a running daemon by a rename over it (as
# `sed -i`, editors and configuration managers do): the daemon, which may
# no longer open the file, keeps writing the old, unlinked one. At its
# next rewrite (a SIGHUP with a changed file) it warns; `ddpnet reload`
# hands it the new file, which then gets the names block, and later
# rewrites land there too.
#
#   hub: br0 -- node-a 192.168.241.1, node-b .2 (ddp0 10.77.0.1-2);
#   node-c (10.77.0.3) is only ever in the file, never up.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init hosts_replaced getent

step "namespaces, keys, a and b up (node-a without syslog: its log is a file)"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
mkdir -p "$T/node-c"   # a key only: it never comes up
for n in node-a node-b node-c; do e2e_key "$n"; done
C=$T/node-a/cluster.conf
cluster_begin "$C"
cluster_node "$C" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$C" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
# SIGHUP: the daemon reads the file as its own, unprivileged user.
chmod 711 "$T" "$T/node-a"
chmod 644 "$C"
if nx node-a test -e /dev/log; then
    : >"$T/no-syslog"
    nx node-a mount --bind "$T/no-syslog" /dev/log || fail "cannot hide /dev/log in node-a"
fi
ddp_up node-a "$C"
ddp_up node-b "$C"
H=$T/node-a/hosts
LOG=$T/node-a/run/ddp0.log
grep -q '^10\.77\.0\.2 node-b$' "$H" || fail "no names block in $H: $(cat "$H")"

step "sed -i replaces the hosts file; a SIGHUP's rewrite goes to the old one, with a warning"
sed -i 's/^127\.0\.0\.1.*/& # edited by sed -i/' "$H"
grep -q 'edited by sed -i' "$H" || fail "sed -i did not edit $H"
cluster_node "$C" node-c "$(pub node-c)" 10.77.0.3 "$E2E_V4NET.3:$E2E_PORT"
pid=$(sed -n 's/^pid=//p' "$T/node-a/run/ddp0.state")
kill -HUP "$pid"
wait_for 10 grep -q 'the hosts file was replaced by another' "$LOG" ||
    fail "no warning in the daemon's log: $(cat "$LOG")"
grep -q 'node-c' "$H" && fail "the replaced file got node-c before reload: $(cat "$H")"
say "warned: $(grep -m1 'the hosts file was replaced' "$LOG")"

step "ddpnet reload hands the new file over"
out=$(nx node-a timeout 20 "$DDPNET" reload --run-dir "$T/node-a/run" 2>&1) ||
    fail "reload failed: $out"
printf '%s\n' "$out"
grep -qF "names block follows the new hosts file" <<<"$out" || fail "reload did not say it: $out"
# The writer thread writes the block within a second (hosts_writer.h).
wait_for 3 grep -q '^10\.77\.0\.3 node-c$' "$H" || fail "the new hosts file has no node-c: $(cat "$H")"
grep -q 'edited by sed -i' "$H" || fail "the edit was lost: $(cat "$H")"
got=$(nx node-a getent hosts node-c) || fail "node-a: getent hosts node-c: not found"
say "node-a resolves node-c: $got"

step "later rewrites land in the new file"
sed -i '/^\[node node-c\]/,$d' "$C"
kill -HUP "$pid"
wait_for 10 sh -c "! grep -q node-c '$H'" || fail "node-c still in $H after SIGHUP: $(cat "$H")"
out=$(nx node-a timeout 20 "$DDPNET" reload --run-dir "$T/node-a/run" 2>&1) ||
    fail "reload failed: $out"
[ "$out" = "no changes" ] || fail "a second reload printed '$out', want 'no changes'"
say "SIGHUP removed node-c from the new file; reload of the same file: no changes"
