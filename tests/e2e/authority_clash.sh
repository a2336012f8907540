#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A derived-address clash reported (issue 43). With an authority and no
# server, a token's member gets the address derived from its key; two
# keys may derive the same one. a and b are in the file; n1 and n2 join
# with the token, their keys chosen here so that both derive one address
# in a /24 (the derivation of cert_derive_address, computed apart from
# the code with b2sum):
#  1. n1 up: reached by a and b at the address derived from its key;
#  2. n2 up: refused by a (n1 came first) and told so; n2's `status`
#     shows the clash (ADDRESS CLASH, n1's name and key, what to do),
#     also in --json, and `doctor` fails with it; n1 is untouched: a and
#     b still reach it, its status shows no clash, n2 is a peer of none;
#  3. the authority gives n2 a fixed address (`authority sign --address`):
#     up again, n2 is reached by a and b, its status clean.
#
#                    namespace "hub": bridge br0
#      +--------------+--------------+--------------+
#    a .1           b .2           n1 .3          n2 .4      192.168.241.0/24
#    10.77.0.1      10.77.0.2      (derived: X)   (derived: X) (ddp0, a /24)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init authority_clash ping b2sum base64

E2E_NET=10.77.0.0/24
declare -A ADDR=([a]=10.77.0.1 [b]=10.77.0.2)

step "two keys that derive one address in $E2E_NET; a and b in the file"
e2e_hub
i=0
for n in a b n1 n2; do
    i=$((i + 1))
    e2e_node "$n" "$i" -
done
e2e_key a
e2e_key b
mkdir -p "$T/keys"
declare -A seen=()
first="" second=""
for k in $(seq 1 400); do
    "$DDPNET" genkey >"$T/keys/$k" || fail "ddpnet genkey failed"
    p=$("$DDPNET" pubkey <"$T/keys/$k") || fail "ddpnet pubkey failed"
    o=$(e2e_derived_octet "$p")
    [ "$o" -gt 2 ] || continue                 # a's and b's
    if [ -n "${seen[$o]:-}" ]; then first=${seen[$o]} second=$k; break; fi
    seen[$o]=$k
done
[ -n "$second" ] || fail "no two of 400 keys derive one address (odds: below 1e-100)"
for pair in "n1 $first" "n2 $second"; do
    set -- $pair
    install -m 600 "$T/keys/$2" "$T/$1/key"
    "$DDPNET" pubkey <"$T/$1/key" >"$T/$1/pub"
done
X=10.77.0.$(e2e_derived_octet "$(pub n1)")
say "n1 and n2 both derive $X (keys $first and $second of $k)"

mkdir -p "$T/authority"
"$DDPNET" authority init -o "$T/authority/authority.key" >/dev/null 2>&1 ||
    fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority/authority.key")
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
for n in a b; do
    cluster_node "$C" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
    "$DDPNET" authority sign -a "$T/authority/authority.key" --name "$n" \
        --public-key "$(pub "$n")" --address "${ADDR[$n]}" --valid 1h >"$T/$n/key.cert" ||
        fail "ddpnet authority sign --name $n failed"
done
(umask 077; "$DDPNET" authority token -a "$T/authority/authority.key" --name-prefix w- \
    --max 8 --valid 1h >"$T/token") || fail "ddpnet authority token failed"
for n in n1 n2; do
    "$DDPNET" authority sign --token "$T/token" --name "w-$n" --public-key "$(pub "$n")" \
        >"$T/$n/key.cert" || fail "ddpnet authority sign --token ($n) failed"
done
# The newcomers' file: the same [cluster], and a to reach first.
CN=$T/newcomer.conf
cluster_begin "$CN" "authority = $AUTH"
cluster_node "$CN" a "$(pub a)" "${ADDR[a]}" "$E2E_V4NET.1:$E2E_PORT"
for n in a b; do ddp_up "$n" "$C"; done

step "n1 joins: reached at $X, derived from its key"
ddp_up n1 "$CN"
got=$(nx n1 ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ "$got" = "$X" ] || fail "n1's address is $got, not $X as derived here"
for n in a b; do
    wait_for 30 nx "$n" ping -n -c 1 -W 1 "$X" || fail "$n does not reach n1 ($X)"
done
say "a and b reach n1 at $X"

step "n2 joins with the same derived address: its status says so"
ddp_up n2 "$CN"
has_clash() { ddp_status n2 | grep -q "^ADDRESS CLASH: $X, derived from this node's key, is also w-n1's"; }
wait_for 20 has_clash || fail "n2's status shows no clash: $(ddp_status n2)"
out=$(ddp_status n2)
for what in "(key $(pub n1))" "ddpnet genkey" "ddpnet authority sign --address-index N" \
        "ddpnet authority sign --address)" \
        "a larger [cluster] network"; do
    grep -qF -- "$what" <<<"$out" || fail "n2's status does not say '$what': $out"
done
say "n2: $(grep '^ADDRESS CLASH' <<<"$out")"
ddp_status n2 --json | grep -qF "\"address_clash\":{\"holder\":\"w-n1\",\"key\":\"$(pub n1)\",\"derived\":true}" ||
    fail "n2's status --json has no address_clash: $(ddp_status n2 --json)"
if out=$(nx n2 timeout 30 "$DDPNET" doctor --run-dir "$T/n2/run" 2>&1); then
    fail "doctor on n2 passed despite the clash: $out"
fi
grep -q "^error: address clash: $X" <<<"$out" || fail "doctor on n2 does not name the clash: $out"
say "doctor on n2 fails with the clash"

sleep "$(( ${PROBATION_S:-10} + 2 ))"       # n2's probation over, whatever it said
for n in a b; do
    nx "$n" ping -n -c 3 -i 0.2 -W 1 "$X" >/dev/null || fail "$n lost n1 to n2"
    ddp_status "$n" | grep -q "^w-n1 " || fail "$n's status lists no w-n1"
    ! ddp_status "$n" | grep -q "w-n2" || fail "$n took n2 as a peer: $(ddp_status "$n")"
done
! ddp_status n1 | grep -q "CLASH" || fail "n1's status shows a clash: $(ddp_status n1)"
! ddp_status n1 | grep -q "w-n2" || fail "n1 has n2 as a peer: $(ddp_status n1)"
say "n1 untouched: a and b reach it, n2 is a peer of none, n1's status is clean"

step "the authority fixes n2's address: up again, reached"
F=10.77.0.250
[ "$X" != "$F" ] || F=10.77.0.251
ddp_down n2
"$DDPNET" authority sign -a "$T/authority/authority.key" --name w-n2 \
    --public-key "$(pub n2)" --address "$F" --valid 1h >"$T/n2/key.cert" ||
    fail "ddpnet authority sign --address (n2) failed"
ddp_up n2 "$CN"
for n in a b; do
    wait_for 30 nx "$n" ping -n -c 1 -W 1 "$F" || fail "$n does not reach n2 at its fixed address"
done
! ddp_status n2 | grep -q "CLASH" || fail "n2's status still shows a clash: $(ddp_status n2)"
say "n2 at $F reached by a and b; no clash"
say "PASS"
