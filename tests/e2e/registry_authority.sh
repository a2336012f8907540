#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The registry under an authority (issue 33): `[cluster] authority` set,
# every record in etcd carries its node's certificate, and a record counts
# only where its key's certificate gives it that name (and address, where
# it fixes one). A member's stolen key is an etcd writer: what it writes
# about names, keys and addresses changes nothing on the others; what it
# can still do is delete records (deny service to that node, which puts
# its record back).
#  1. one etcd; an authority (`ddpnet authority`); a node with no
#     certificate is refused at up, naming the path; a, b and m join with
#     theirs; status shows each certificate's expiry;
#  2. e joins with a certificate that expires 15 s later: gone from a and
#     b within 3 s of its expiry;
#  3. m writes records for other names, keys and addresses: a and b see
#     what they saw;
#  4. m deletes b's record: b is out of a's mesh once the grace a record
#     gone gets (registry-ttl, issue 59) has passed, until b puts its
#     record back, nothing else moves (deny service, that node only);
#  5. the authority revokes m's certificate (PREFIX/members-revoked/):
#     m is gone from a and b within 3 s.
#
#              namespace "hub": bridge br0, 192.168.241.0/24
#    etcd .201     a .1   b .2   m .3   e .4   n .5
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init registry_authority ping etcd etcdctl

PREFIX=/ddpnet/authority
ETCD=$E2E_V4NET.201:2379

step "one etcd, an authority; a, b and m join with certificates"
e2e_hub
e2e_node etcd 201 -
mkdir -p "$T/authority"
e2e_etcd_single etcd "$E2E_V4NET.201"
"$DDPNET" authority init -o "$T/authority/authority.key" >/dev/null 2>&1 ||
    fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority/authority.key") ||
    fail "ddpnet authority pubkey failed"
C=$T/cluster.conf
cluster_begin "$C" "registry = etcd://$ETCD$PREFIX" "registry-ttl = 10" "authority = $AUTH"
chmod 644 "$C"
i=0
for n in a b m e n; do
    i=$((i + 1))
    e2e_node "$n" "$i" -
    e2e_key "$n"
done
cert() {   # cert NODE NAME SECONDS: NODE's certificate at its key's .cert path
    "$DDPNET" authority sign -a "$T/authority/authority.key" --name "$2" \
        --public-key "$(pub "$1")" --valid "${3}s" >"$T/$1/key.cert" ||
        fail "ddpnet authority sign --name $2 failed"
}
reg_up() {   # reg_up NODE I NAME: `ddpnet up` joining the registry as NAME
    local n=$1 i=$2 name=$3
    E2E_UP+=("$n")
    nx "$n" timeout 40 "$DDPNET" up -c "$C" -k "$T/$n/key" --run-dir "$T/$n/run" \
        --hosts-file "$T/$n/hosts" --state-dir "$T/$n/state" --endpoint "$E2E_V4NET.$i:$E2E_PORT" --name "$name" \
        >"$T/$n/up.log" 2>&1 || fail "$n: up failed: $(cat "$T/$n/up.log")"
}
# No certificate: refused at up, naming where it looked and how to get one.
if nx n timeout 40 "$DDPNET" up -c "$C" -k "$T/n/key" --run-dir "$T/n/run" \
       --hosts-file "$T/n/hosts" --state-dir "$T/n/state" --name n >"$T/n/up.log" 2>&1; then
    E2E_UP+=(n)
    fail "n came up without a certificate"
fi
grep -q "$T/n/key.cert: no such file" "$T/n/up.log" && grep -q "ddpnet authority sign" "$T/n/up.log" ||
    fail "up without a certificate said: $(cat "$T/n/up.log")"
say "no certificate: $(cat "$T/n/up.log")"
# A certificate for another name: refused too.
cert n other-name 3600
! nx n timeout 40 "$DDPNET" up -c "$C" -k "$T/n/key" --run-dir "$T/n/run" \
    --hosts-file "$T/n/hosts" --state-dir "$T/n/state" --name n >"$T/n/up.log" 2>&1 || { E2E_UP+=(n); fail "n came up as n with other-name's certificate"; }
grep -q "for the name other-name, not n" "$T/n/up.log" || fail "up with another name's certificate said: $(cat "$T/n/up.log")"
say "another name's certificate: $(cat "$T/n/up.log")"

cert a a 3600
cert b gpu-b 3600
cert m m 3600
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
        print(p["name"], p["address"], p["endpoint"], p["path"])' "$2"
}
peers_of() {   # peers_of NODE: its peers' names, sorted, one line
    ddp_status "$1" --json | "$PY" -c '
import json, sys
print(" ".join(sorted(p["name"] for p in json.load(sys.stdin)["peers"])))'
}
mesh_of_three() { [ "$(peers_of a)" = "gpu-b m" ] && [ "$(peers_of b)" = "a m" ]; }
wait_for 20 mesh_of_three || fail "a's peers: $(peers_of a); b's: $(peers_of b)"
named() { grep -q " gpu-b\b" "$T/a/hosts" && grep -qw "m" "$T/b/hosts"; }
wait_for 20 named || fail "names missing: a: $(cat "$T/a/hosts"); b: $(cat "$T/b/hosts")"
ping_ok a gpu-b
ping_ok b m
expiry=$(ddp_status a --json | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
print(s["cert_expires"], " ".join(str(p["cert_expires"]) for p in s["peers"]))')
case "$expiry" in *None*|*null*) fail "a's status lacks a certificate's expiry: $expiry" ;; esac
say "a's status: certificates expire at $expiry"
ddp_status a | grep -q "^certificate of gpu-b expires in " || fail "status table: $(ddp_status a)"

step "e joins with a certificate of 15 s: gone everywhere within 3 s of its expiry"
cert e e 15
reg_up e 4 e
e_in() { peer_view a e | grep -q . && peer_view b e | grep -q .; }
wait_for 10 e_in || fail "e did not join: a's peers: $(peers_of a)"
# Its expiry as a's status gives it (the certificate's not_after).
END=$(ddp_status a --json | "$PY" -c '
import json, sys
print([p["cert_expires"] for p in json.load(sys.stdin)["peers"] if p["name"] == "e"][0])')
e_out() { ! peer_view a e | grep -q . && ! peer_view b e | grep -q .; }
# In until the second before (a look takes a moment of its own).
while [ "$(date +%s)" -lt "$((END - 1))" ]; do
    e_in || fail "e left at $(date +%s.%N), before its certificate expired at $END (a: $(peers_of a), b: $(peers_of b))"
    sleep 0.5
done
wait_for 3 e_out || fail "e's certificate expired at $END, and at $(date +%s) a has $(peers_of a), b $(peers_of b)"
say "e's certificate expired at $END: gone from a and b at $(date +%s.%N | cut -c1-14)"
nx e "$DDPNET" down --run-dir "$T/e/run" >/dev/null || true

step "m writes records for other names, keys and addresses"
BEFORE_A="$(peer_view a gpu-b) | $(peers_of a)"
BEFORE_B="$(peer_view b m) | $(peers_of b)"
same() {   # same WHAT: a and b see what they saw, 2 s after WHAT
    sleep 2
    [ "$(peer_view a gpu-b) | $(peers_of a)" = "$BEFORE_A" ] ||
        fail "after $1, a sees: $(peer_view a gpu-b) | $(peers_of a) (was: $BEFORE_A)"
    [ "$(peer_view b m) | $(peers_of b)" = "$BEFORE_B" ] ||
        fail "after $1, b sees: $(peer_view b m) | $(peers_of b) (was: $BEFORE_B)"
    say "after $1: nothing changed on a and b"
}
B_RECORD=$(ctl get "$PREFIX/members/gpu-b" --print-value-only)
M_RECORD=$(ctl get "$PREFIX/members/m" --print-value-only)
[ -n "$B_RECORD" ] && [ -n "$M_RECORD" ] || fail "no records of b and m in etcd"
B=$(echo "$B_RECORD" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["address"])')
put() {   # put NAME BASE-RECORD PY-EDIT: m writes PREFIX/members/NAME
    local value
    value=$("$PY" -c 'import json, sys
r = json.loads(sys.argv[1]); exec(sys.argv[2]); print(json.dumps(r))' "$2" "$3")
    ctl put "$PREFIX/members/$1" "$value" >/dev/null || fail "etcdctl put $1 failed"
}
put gpu-b "$B_RECORD" "r['address'] = '${B%.*}.200'; r['endpoint'] = '$E2E_V4NET.3:$E2E_PORT'"
same "b's record moved to another address and m's endpoint"
sleep 1
put evil "$M_RECORD" "r['name'] = 'evil'; r['address'] = '${B%.*}.201'"
same "a record of another name with m's key and certificate"
put ghost "$B_RECORD" "r['name'] = 'ghost'; r['public_key'] = 'iNv2EpcsWUosL23eST7xxM0nrbqMNubr0AuJ/xQ6umE='; r['address'] = '${B%.*}.202'"
same "a record of a key nobody certified, carrying b's certificate"
put gpu-b "$M_RECORD" "r['name'] = 'gpu-b'"
same "b's name taken with m's key and certificate"
ctl del "$PREFIX/members/evil" >/dev/null
ctl del "$PREFIX/members/ghost" >/dev/null

step "m deletes b's record: b is out of the mesh until it puts it back"
sleep 1
# b's daemon paused, so that it cannot put its record back while we look.
BPID=$(sed -n 's/^pid=//p' "$T/b/run/ddp0.state")
[ -n "$BPID" ] || fail "no pid in b's state file"
kill -STOP "$BPID"
ctl del "$PREFIX/members/gpu-b" >/dev/null
b_out() { ! peer_view a gpu-b | grep -q .; }
# Its grace first: registry-ttl (10 s), as for a lost lease.
wait_for 13 b_out || { kill -CONT "$BPID"; fail "b's record deleted, and a still has it: $(peers_of a)"; }
[ "$(peers_of a)" = "m" ] || { kill -CONT "$BPID"; fail "a's peers while b's record is away: $(peers_of a)"; }
say "b's record deleted: a's mesh is m alone (service denied to b, and only b)"
kill -CONT "$BPID"
b_back() { [ "$(ctl get "$PREFIX/members/gpu-b" --print-value-only)" = "$B_RECORD" ]; }
wait_for 5 b_back || fail "b did not put its deleted record back"
b_in() { peer_view a gpu-b | grep -q .; }
wait_for 5 b_in || fail "b's record is back, and a lacks b: $(peers_of a)"
BEFORE_A="$(peer_view a gpu-b) | $(peers_of a)"
b_named() { grep -q " gpu-b\b" "$T/a/hosts"; }
wait_for 10 b_named || fail "b is back on a, its name not: $(cat "$T/a/hosts")"
ping_ok a gpu-b
say "b put its record back: a has b again, at $(peer_view a gpu-b)"

step "the authority revokes m's certificate"
REV=$("$DDPNET" authority revoke -a "$T/authority/authority.key" "$T/m/key.cert") ||
    fail "ddpnet authority revoke failed"
ctl put "$PREFIX/members-revoked/m" "$REV" >/dev/null
T0=$(date +%s.%N)
m_out() { ! peer_view a m | grep -q . && ! peer_view b m | grep -q .; }
wait_for 3 m_out || fail "m's certificate revoked, and 3 s later a has $(peers_of a), b $(peers_of b)"
say "m revoked: gone from a and b $(echo "$(date +%s.%N) - $T0" | bc 2>/dev/null || echo '<3') s later"
ping_ok a gpu-b
say "done"
