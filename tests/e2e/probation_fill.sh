#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# Probation an outsider cannot fill (issue 43): f, with no certificate,
# sends a's port authentic initiations from throwaway keys out of 8
# source addresses of its own, never answering a cookie (as from spoofed
# sources), enough to keep every probation slot taken; meanwhile n, with
# a join token's certificate, comes up and must be reached by a within
# FILL_JOIN_S (5) s. Before the fix the slots stayed full and n waited
# for one to expire (about 26 s).
#
#                    namespace "hub": bridge br0
#      +------------------------------+------------------------------+
#    a .1 (10.77.0.1)             n .2 (derived)           f .3, .100-.107
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init probation_fill ping

HSFLOOD=${HSFLOOD:-$E2E_ROOT/build/tools/hsflood}
FILL_JOIN_S=${FILL_JOIN_S:-5}
[ -x "$HSFLOOD" ] || fail "$HSFLOOD not built (make e2e builds it)"

step "a in the file with an authority; n holds a token's certificate"
e2e_hub
e2e_node a 1 -
e2e_node n 2 -
e2e_node f 3 -
for n in a n; do e2e_key "$n"; done
mkdir -p "$T/authority"
"$DDPNET" authority init -o "$T/authority/authority.key" >/dev/null 2>&1 ||
    fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority/authority.key")
cluster_begin "$T/cluster.conf" "authority = $AUTH"
cluster_node "$T/cluster.conf" a "$(pub a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
(umask 077; "$DDPNET" authority token -a "$T/authority/authority.key" --name-prefix spot- \
    --valid 1h >"$T/token") || fail "ddpnet authority token failed"
"$DDPNET" authority sign --token "$T/token" --name spot-n --public-key "$(pub n)" \
    >"$T/n/key.cert" || fail "ddpnet authority sign --token failed"
ddp_up a
srcs=()
for i in $(seq 100 107); do
    nx f ip addr add "$E2E_V4NET.$i/24" dev eth0
    srcs+=("$E2E_V4NET.$i")
done

step "f fills a's probation table from 8 sources; n joins meanwhile"
nx_bg f flood "$HSFLOOD" --rate 40 stranger "$E2E_V4NET.1" "$E2E_PORT" "$(pub a)" 12 "${srcs[@]}"
FLOOD_PID=$BG_PID
sleep 4                                   # the table as full as f can make it
t0=$(date +%s%N)
ddp_up n
NADDR=$(nx n ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
wait_for 30 nx a ping -n -c 1 -W 0.2 "$NADDR" || fail "a does not reach n ($NADDR) under the flood"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
say "n ($NADDR) reached by a $ms ms after its up began, under the flood"
wait "$FLOOD_PID" || fail "hsflood: $(cat "$T/f/flood.out")"
say "$(cat "$T/f/flood.out")"
[ "$ms" -le $((FILL_JOIN_S * 1000)) ] ||
    fail "n joined only after $ms ms under the flood (bound ${FILL_JOIN_S}000)"
grep -Eq "sent [1-9][0-9]* initiations" "$T/f/flood.out" || fail "the flood sent nothing"
grep -Eq "; [1-9][0-9]* cookie replies" "$T/f/flood.out" ||
    fail "a never asked the flood for a cookie: its table was never half full, so this proved nothing"
say "PASS"
