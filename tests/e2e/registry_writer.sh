#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A writer of the registry's prefix (issue 27): every registered node can
# write the etcd prefix, so a member's stolen key is an etcd writer too.
# What it writes about another member changes nothing the others believe.
#  1. one etcd; nodes a, b and m join through it (b as gpu-b, its machine
#     named node-b, which it tells its peers);
#  2. m rewrites b's record: another address and m's own endpoint; then
#     m's key at b's address. On a, b stays as it was (name, address,
#     endpoint, hosts lines) and answers pings by name;
#  3. m registers a record of b's machine name (node-b) with a key nobody
#     holds (pending on a: status says so); a second daemon of m's (m2)
#     joins as node-b: on a, node-b resolves to neither (deny service on
#     that name), never to m2, and is b's again once m2 leaves;
#  4. m deletes b's record, then writes gpu-b at b's address with its own
#     key: b puts its record back each time, and a's view of b is the
#     same as before.
#
#              namespace "hub": bridge br0, 192.168.241.0/24
#    etcd .201     a .1   b .2   m .3   m2 .4
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init registry_writer ping getent etcd etcdctl

PREFIX=/ddpnet/writer
ETCD=$E2E_V4NET.201:2379

step "one etcd; a, b and m join"
e2e_hub
e2e_node etcd 201 -
e2e_etcd_single etcd "$E2E_V4NET.201"
C=$T/cluster.conf
cluster_begin "$C" "registry = etcd://$ETCD$PREFIX" "registry-ttl = 10"
chmod 644 "$C"
i=0
for n in a b m m2; do
    i=$((i + 1))
    e2e_node "$n" "$i" -
    e2e_key "$n"
done
reg_up() {   # reg_up NODE NAME: `ddpnet up` joining the registry as NAME
    local n=$1 i=$2 name=$3
    E2E_UP+=("$n")
    nx "$n" timeout 40 "$DDPNET" up -c "$C" -k "$T/$n/key" --run-dir "$T/$n/run" \
        --hosts-file "$T/$n/hosts" --state-dir "$T/$n/state" --endpoint "$E2E_V4NET.$i:$E2E_PORT" --name "$name" \
        >"$T/$n/up.log" 2>&1 || fail "$n: up failed: $(cat "$T/$n/up.log")"
}
# b's namespace calls its machine node-b (hostname), and joins as gpu-b.
nx b hostname node-b
reg_up a 1 a
reg_up b 2 gpu-b
reg_up m 3 m
ctl() { nx m etcdctl --endpoints "$ETCD" --dial-timeout 2s "$@"; }
# peer_view NODE NAME: NAME's address and endpoint as NODE's daemon has them.
peer_view() {
    ddp_status "$1" --json | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["peers"]:
    if p["name"] == sys.argv[1]:
        print(p["name"], p["address"], p["endpoint"])' "$2"
}
# view: what a believes of b: its peer, and the hosts lines of its address.
view() {
    local addr
    addr=$(peer_view a gpu-b | cut -d' ' -f2)
    printf '%s / %s\n' "$(peer_view a gpu-b)" "$(grep "^$addr " "$T/a/hosts" || true)"
}
b_named() { grep -q " gpu-b node-b$" "$T/a/hosts"; }
wait_for 20 b_named || fail "a's hosts block lacks b's names: $(cat "$T/a/hosts")"
B=$(peer_view a gpu-b | cut -d' ' -f2)
ping_ok a gpu-b
ping_ok a node-b
BEFORE=$(view)
say "a sees b as: $BEFORE"
[ "$(echo "$BEFORE" | cut -d' ' -f3)" = "$E2E_V4NET.2:$E2E_PORT" ] ||
    fail "b's endpoint on a is not b's: $BEFORE"

# same_on_a WHAT: a's view of b unchanged 2 s after WHAT, and pings by name.
same_on_a() {
    sleep 2
    [ "$(view)" = "$BEFORE" ] || fail "after $1, a sees b as: $(view) (was: $BEFORE)"
    ping_ok a gpu-b
    say "after $1: a still sees b as it was"
}
# put_record NAME JSON-EDIT: m writes PREFIX/members/NAME from b's record
# with the Python expression JSON-EDIT applied to r (a dict).
B_RECORD=$(ctl get "$PREFIX/members/gpu-b" --print-value-only)
[ -n "$B_RECORD" ] || fail "no record of b in etcd"
put_record() {
    local value
    value=$("$PY" -c 'import json, sys
r = json.loads(sys.argv[1]); exec(sys.argv[2]); print(json.dumps(r))' "$B_RECORD" "$2")
    ctl put "$PREFIX/members/$1" "$value" >/dev/null || fail "etcdctl put $1 failed"
}

step "m rewrites b's record"
put_record gpu-b "r['address'] = '${B%.*}.200'; r['endpoint'] = '$E2E_V4NET.3:$E2E_PORT'"
same_on_a "b's record rewritten with another address and m's endpoint"
put_record gpu-b "r['public_key'] = '$(pub m)'"
same_on_a "b's record rewritten with m's key"
put_record gpu-b ""
same_on_a "b's record put back as it was"

step "m registers b's machine name"
put_record node-b "r['name'] = 'node-b'; r['public_key'] = 'iNv2EpcsWUosL23eST7xxM0nrbqMNubr0AuJ/xQ6umE='; r['address'] = '${B%.*}.201'"
same_on_a "a record named node-b with a key nobody holds"
path_on_a() {   # path_on_a NAME: the path a's status shows for peer NAME
    ddp_status a --json | "$PY" -c '
import json, sys
print(" ".join(p["path"] or "-" for p in json.load(sys.stdin)["peers"] if p["name"] == sys.argv[1]))' "$1"
}
[ "$(path_on_a node-b)" = pending ] ||
    fail "the record of a key nobody holds is not pending on a: '$(path_on_a node-b)'"
say "the record of a key nobody holds: a peer of a's, pending (no route, no name)"
# m2 joins under b's machine name (its record stated by m2's own key):
# the name goes to neither (a name two claim resolves to no one), never
# to m2; m2 leaves, and it is b's again.
ctl del "$PREFIX/members/node-b" >/dev/null
reg_up m2 4 node-b
m2_seen() { [ -n "$(peer_view a node-b)" ]; }
wait_for 10 m2_seen || fail "m2 (registered as node-b) never became a's peer"
M2=$(peer_view a node-b | cut -d' ' -f2)
sleep 2
getent_b=$(nx a getent hosts node-b | awk '{print $1}' || true)
[ "$getent_b" != "$M2" ] || fail "node-b resolves to m2 ($M2) on a"
[ "$(peer_view a gpu-b)" = "$(echo "$BEFORE" | sed 's| / .*||')" ] ||
    fail "b's peer on a changed when m2 joined as node-b: $(peer_view a gpu-b)"
say "m2 joined as node-b: node-b resolves on a to '${getent_b:-nothing}', not to m2 ($M2)"
nx m2 "$DDPNET" down --run-dir "$T/m2/run" >/dev/null || fail "m2: down failed"
node_b_back() { [ "$(view)" = "$BEFORE" ]; }
wait_for 10 node_b_back || fail "node-b is not b's again on a after m2 left: $(view)"
say "m2 left: node-b is b's again on a"

step "m deletes b's record, then claims its name and address"
# b's own value, as b wrote it: b puts it back when another writer
# deletes it or writes over it.
B_VALUE=$(ctl get "$PREFIX/members/gpu-b" --print-value-only)
b_record_back() { [ "$(ctl get "$PREFIX/members/gpu-b" --print-value-only)" = "$B_VALUE" ]; }
ctl del "$PREFIX/members/gpu-b" >/dev/null
wait_for 5 b_record_back || fail "b did not put its deleted record back"
say "b's record deleted: b put it back"
same_on_a "b's record deleted and put back"
sleep 1   # b puts its record back at most once a second
put_record gpu-b "r['public_key'] = '$(pub m)'"
wait_for 5 b_record_back || fail "b did not put its record back over m's"
! grep -q " gpu-b" "$T/a/hosts" || [ "$(view)" = "$BEFORE" ] ||
    fail "gpu-b on a changed: $(view)"
same_on_a "gpu-b written at b's address with m's key (and put back by b)"
