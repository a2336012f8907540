#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ddpnet doctor` on a three-node cluster: with node-c never up, doctor on
# node-a exits non-zero and shows node-c not reached (table and JSON) and
# node-b reached, direct, with its MTU (and `status` says `waiting` for
# node-c, not `direct`); with every node up it exits 0, and
# --rate measures a rate for each peer; once node-c goes down again (its
# old session still fresh on node-a) doctor says so again. Also: a daemon
# on a machine without syslog logs to its run directory, not nowhere.
#
#   hub: br0 -- node-a 192.168.241.1, node-b .2, node-c .3 (ddp0 10.77.0.1-3)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init doctor ping python3

step "namespaces, keys, cluster file"
e2e_hub
e2e_node node-a 1 1
e2e_node node-b 2 2
e2e_node node-c 3 3
for n in node-a node-b node-c; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
cluster_node "$T/cluster.conf" node-c "$(pub node-c)" 10.77.0.3 "$E2E_V4NET.3:$E2E_PORT"

doctor() { nx node-a timeout 60 "$DDPNET" doctor --run-dir "$T/node-a/run" "$@"; }
# json_get JSON PYTHON-EXPR: the expression over the parsed object d.
json_get() { printf '%s' "$1" | "$PY" -c "import json,sys; d=json.load(sys.stdin); print($2)"; }

step "node-a without syslog: its daemon logs to RUN_DIR/ddp0.log"
# Hide a syslog socket inside node-a's own mount namespace, if this
# machine has one: a regular file is no socket.
if nx node-a test -e /dev/log; then
    : >"$T/no-syslog"
    nx node-a mount --bind "$T/no-syslog" /dev/log || fail "cannot hide /dev/log in node-a"
fi
ddp_up node-a
grep -qx "ddpnet: no syslog here (/dev/log): the daemon logs to $T/node-a/run/ddp0.log" "$T/node-a/up.log" ||
    fail "up did not say where the daemon logs: $(cat "$T/node-a/up.log")"
wait_for 5 grep -q "notice: " "$T/node-a/run/ddp0.log" ||
    fail "nothing logged in $T/node-a/run/ddp0.log: $(cat "$T/node-a/run/ddp0.log")"
say "node-a logs to its run directory: $(head -n 1 "$T/node-a/run/ddp0.log")"

step "node-c never up: doctor fails and names it"
ddp_up node-b
rc=0; out=$(doctor 2>&1) || rc=$?
printf '%s\n' "$out"
[ "$rc" = 1 ] || fail "doctor exited $rc with node-c down, want 1"
printf '%s\n' "$out" | grep -Eq '^node-b +10\.77\.0\.2 +yes +direct +1420 ' ||
    fail "doctor: no row 'node-b 10.77.0.2 yes direct 1420'"
printf '%s\n' "$out" | grep -Eq '^node-c +10\.77\.0\.3 +NO +waiting ' ||
    fail "doctor: no row 'node-c ... NO waiting' (no handshake ever completed)"
st=$(ddp_status node-a) || fail "status failed: $st"
printf '%s\n' "$st" | grep -Eq '^node-c +10\.77\.0\.3 +[^ ]+ +waiting ' ||
    fail "status: node-c's path is not 'waiting' before any handshake: $st"
printf '%s\n' "$out" | grep -qx 'NOT READY: 1 of 2 peers not reached: node-c' ||
    fail "doctor: no verdict naming node-c"
printf '%s\n' "$out" | grep -qx 'export NCCL_SOCKET_IFNAME=ddp0' || fail "doctor: no env lines"
rc=0; json=$(doctor --json) || rc=$?
[ "$rc" = 1 ] || fail "doctor --json exited $rc with node-c down, want 1"
[ "$(json_get "$json" 'd["ok"], d["unreached"], d["env"]["MASTER_ADDR"]')" = \
  "False ['node-c'] 10.77.0.1" ] || fail "doctor --json: $json"
say "node-c shown unreached, exit 1"

step "all up: doctor --rate exits 0"
ddp_up node-c
rc=0; out=$(doctor --rate 2>&1) || rc=$?
printf '%s\n' "$out"
[ "$rc" = 0 ] || fail "doctor --rate exited $rc with every node up"
printf '%s\n' "$out" | grep -qx 'ok: node-a reached every peer (2)' || fail "doctor: no 'ok' verdict"
json=$(doctor --json) || fail "doctor --json exited non-zero with every node up: $json"
[ "$(json_get "$json" 'd["ok"], [(p["name"], p["reached"], p["path"], p["path_mtu"]) for p in d["peers"]]')" = \
  "True [('node-b', True, 'direct', 1420), ('node-c', True, 'direct', 1420)]" ] ||
    fail "doctor --json: $json"
rate=$(printf '%s\n' "$out" | awk '$1 == "node-c" { print $(NF-1), $NF }')
case "$rate" in *bit/s) ;; *) fail "doctor --rate: node-c's rate is '$rate'" ;; esac
say "every peer reached; node-c's rate over 2 s of echoes: $rate"

step "node-c down again: its fresh session does not count"
ddp_down node-c
rc=0; out=$(doctor 2>&1) || rc=$?
printf '%s\n' "$out"
[ "$rc" = 1 ] || fail "doctor exited $rc after node-c went down, want 1"
printf '%s\n' "$out" | grep -Eq '^node-c +10\.77\.0\.3 +NO ' || fail "doctor: node-c not shown unreached"
say "node-c shown unreached again"
