#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Routes granted by certificates (issue 60), with an authority and no
# registry. c1 is in the file; gw is not: it joins with a certificate the
# authority signed with `--routes 192.168.50.0/24`, and carries that
# prefix to nas (192.168.50.10, no ddpnet) behind it.
#  1. c1 routes 192.168.50.0/24 into ddp0 (a kernel route it took from
#     gw's certificate) and pings nas through gw (gw forwards and
#     masquerades for its certificate's prefix);
#  2. a join token that grants 192.168.60.0/24: `sign --token --routes
#     192.168.70.0/24` is refused; the same certificate made anyway with
#     the token's key (build/tools/forge_cert, as a thief of the token
#     could) is refused by spot's own up, and when h (a listed member's
#     key, stolen: build/tools/hostile) passes it on beside a valid one
#     (spot-2, through the token, 192.168.60.0/24): c1 takes spot-2 and
#     its route, and neither spot-1 nor 192.168.70.0/24.
#
#                    namespace "hub": bridge br0
#      +--------------+--------------+--------------+
#    c1 .1          gw .2          h .3           spot .4     192.168.241.0/24
#    10.77.0.1      (derived)      10.77.0.3      (derived)   (ddp0)
#                   eth1 192.168.50.1 --- nas 192.168.50.10
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init routes_cert ping nft

FORGE=$E2E_ROOT/build/tools/forge_cert
HOSTILE=$E2E_ROOT/build/tools/hostile
[ -x "$FORGE" ] && [ -x "$HOSTILE" ] ||
    fail "build/tools/forge_cert and build/tools/hostile are needed (make e2e builds them)"

step "an authority; c1 and h in the file; gw by a certificate with a route"
e2e_authority_hub c1 gw h spot
e2e_node_alone nas
e2e_veth gw eth1 nas eth0
nx gw ip addr add 192.168.50.1/24 dev eth1
nx nas ip addr add 192.168.50.10/24 dev eth0
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
cluster_node "$C" c1 "$(pub c1)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$C" h "$(pub h)" 10.77.0.3 "$E2E_V4NET.3:$E2E_PORT"
"$DDPNET" check -c "$C" >"$T/check.out" 2>&1 || fail "check: $(cat "$T/check.out")"
"$DDPNET" authority sign -a "$KEY" --name gw --public-key "$(pub gw)" \
    --routes 192.168.50.0/24 >"$T/gw/key.cert" || fail "authority sign --routes failed"
"$DDPNET" authority show "$T/gw/key.cert" | grep -x 'routes: *192.168.50.0/24' >"$T/gw/show" ||
    fail "gw's certificate: $("$DDPNET" authority show "$T/gw/key.cert")"
say "gw's certificate, $(cat "$T/gw/show")"

step "1. c1 routes gw's certificate's prefix into ddp0 and reaches nas"
for n in c1 gw; do ddp_up "$n" "$C"; done
ping_ok c1 "$(nx gw ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)"
route_on() { nx "$1" ip -4 route show "$2" | grep -q 'dev ddp0'; }
wait_for 10 route_on c1 192.168.50.0/24 ||
    fail "c1: no route 192.168.50.0/24 via ddp0: '$(nx c1 ip -4 route show 192.168.50.0/24)'"
say "c1: $(nx c1 ip -4 route show 192.168.50.0/24)"
nx gw nft list table inet ddpnet-ddp0 | grep -q masquerade ||
    fail "gw: no nft table masquerading its certificate's prefix"
wait_for 10 nx c1 ping -n -c 1 -W 1 192.168.50.10 >/dev/null ||
    fail "c1 cannot ping nas (192.168.50.10) through gw"
say "c1: $(nx c1 ping -n -c 1 -W 1 192.168.50.10 | grep 'bytes from')"

step "2. a token member's route outside the token: refused"
(umask 077
 "$DDPNET" authority token -a "$KEY" --name-prefix spot- --routes 192.168.60.0/24 \
     --valid 1h >"$T/token" || fail "authority token --routes failed")
if out=$("$DDPNET" authority sign --token "$T/token" --name spot-1 --public-key "$(pub spot)" \
        --routes 192.168.70.0/24 2>&1); then
    fail "sign --token gave a route outside the token: $out"
fi
say "sign --token --routes 192.168.70.0/24: $out"
"$FORGE" "$T/token" spot-1 "$(pub spot)" 192.168.70.0/24 >"$T/spot/key.cert" ||
    fail "forge_cert failed"
"$DDPNET" authority show "$T/spot/key.cert" --authority "$AUTH" >"$T/spot/show" 2>&1 &&
    fail "the forged certificate counts: $(cat "$T/spot/show")"
say "the forged one: $(grep '^verdict' "$T/spot/show")"
if nx spot timeout 30 "$DDPNET" up -c "$C" -k "$T/spot/key" --run-dir "$T/spot/run" \
        --hosts-file "$T/spot/hosts" --state-dir "$T/spot/state" >"$T/spot/up.log" 2>&1; then
    E2E_UP+=(spot)
    fail "spot came up with a route its token does not grant"
fi
say "spot's up: $(head -n 1 "$T/spot/up.log")"
"$DDPNET" genkey >"$T/g.key"
gpub=$("$DDPNET" pubkey <"$T/g.key")
"$DDPNET" authority sign --token "$T/token" --name spot-2 --public-key "$gpub" \
    --routes 192.168.60.0/24 >"$T/g.cert" || fail "authority sign --token --routes failed"
peers_have() { wg_in "$1" show ddp0 peers | grep -qxF "$2"; }
nx_bg h hostile "$HOSTILE" cert 6 "$T/h/key" 10.77.0.3 "$E2E_V4NET.3:$E2E_PORT" \
    --statement "$T/spot/key.cert" --statement "$T/g.cert" \
    "c1,$(pub c1),10.77.0.1,$E2E_V4NET.1:$E2E_PORT"
HOSTILE_PID=$BG_PID
wait_for 10 peers_have c1 "$gpub" || fail "c1 did not take spot-2's valid certificate from h"
wait_for 5 route_on c1 192.168.60.0/24 || fail "c1: no route to spot-2's 192.168.60.0/24"
wait "$HOSTILE_PID" || fail "hostile: $(tail -n 3 "$T/h/hostile.out")"
grep -q "lies=[1-9]" "$T/h/hostile.out" || fail "hostile sent nothing: $(cat "$T/h/hostile.out")"
! peers_have c1 "$(pub spot)" || fail "c1 took spot-1, whose route its token does not grant"
[ -z "$(nx c1 ip -4 route show 192.168.70.0/24)" ] || fail "c1 routes 192.168.70.0/24"
say "c1 took spot-2 and $(nx c1 ip -4 route show 192.168.60.0/24 | cut -d' ' -f1-3); not spot-1, no route to 192.168.70.0/24"
say "PASS"
