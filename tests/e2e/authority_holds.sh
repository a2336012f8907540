#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The authority holds (issue 43): a join token's holder, hostile, takes
# no name, address or host name another member holds, and a revocation
# lasts. a and b are in the file, each with the authority's certificate;
# n3 joins with the token as w-n3 and is reached by both; then:
#  1. t, holding the same token, signs itself w-n3 backdated to the
#     token's start (as early as any token member can be), and joins:
#     a and b keep w-n3 on n3 (by name and by route), t gets no route;
#  2. t asks the token for n3's overlay address, or for an alias such as
#     metadata.google.internal: `authority sign` refuses both;
#  3. n3's key revoked (`authority revoke --public-key`, given to a
#     alone): gone from a and b; b restarts and does not take n3 back
#     (its state directory kept the revocation); n3 signs itself a new
#     certificate with the token and its key, comes up with it, and is
#     refused by both;
#  4. a's file revokes t's key (`revoked =`, then `ddpnet reload`): t,
#     up again, is refused though n3 no longer holds w-n3.
#
#                    namespace "hub": bridge br0
#      +--------------+--------------+--------------+
#    a .1           b .2           n3 .3          t .4       192.168.241.0/24
#    10.77.0.1      10.77.0.2      (derived)      (derived)  (ddp0)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init authority_holds ping getent

declare -A ADDR=([a]=10.77.0.1 [b]=10.77.0.2)

step "an authority, a token (prefix w-); a and b in the file; n3 joins as w-n3"
e2e_authority_hub a b n3 t
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
for n in a b; do
    cluster_node "$C" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
    "$DDPNET" authority sign -a "$KEY" --name "$n" \
        --public-key "$(pub "$n")" --address "${ADDR[$n]}" --valid 1h >"$T/$n/key.cert" ||
        fail "ddpnet authority sign --name $n failed"
done
(umask 077; "$DDPNET" authority token -a "$KEY" --name-prefix w- \
    --max 8 --valid 1h >"$T/token") || fail "ddpnet authority token failed"
"$DDPNET" authority sign --token "$T/token" --name w-n3 --public-key "$(pub n3)" \
    >"$T/n3/key.cert" || fail "ddpnet authority sign --token (n3) failed"
# The newcomers' file: the same [cluster], and a to reach first.
CN=$T/newcomer.conf
cluster_begin "$CN" "authority = $AUTH"
cluster_node "$CN" a "$(pub a)" "${ADDR[a]}" "$E2E_V4NET.1:$E2E_PORT"
for n in a b; do ddp_up "$n" "$C"; done
ddp_up n3 "$CN"
N3=$(nx n3 ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$N3" ] || fail "n3 has no address on ddp0"
for n in a b; do
    wait_for 30 nx "$n" ping -n -c 1 -W 1 "$N3" || fail "$n does not reach n3 ($N3)"
    wait_for 10 nx "$n" ping -n -c 1 -W 1 w-n3 || fail "$n does not reach n3 by name"
done
say "n3 ($N3) reached by a and b, by address and as w-n3"

# resolves NODE NAME ADDR: NAME resolves to ADDR inside NODE.
resolves() { [ "$(nx "$1" getent hosts "$2" | awk '{print $1}')" = "$3" ]; }
gone_from() {
    ! nx "$1" ping -n -c 1 -W 1 "$2" >/dev/null 2>&1 &&
        ! ddp_status "$1" | grep -q " $2 "
}

step "t backdates a certificate for w-n3 through the same token: it takes nothing"
"$DDPNET" authority sign --token "$T/token" --name w-n3 --public-key "$(pub t)" \
    --not-before 2020-01-01 >"$T/t/key.cert" || fail "ddpnet authority sign --token (t) failed"
ddp_up t "$CN"
TADDR=$(nx t ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
sleep "$(( ${PROBATION_S:-10} + 2 ))"       # its probation over, whatever it said
for n in a b; do
    resolves "$n" w-n3 "$N3" || fail "$n resolves w-n3 to $(nx "$n" getent hosts w-n3), not n3"
    nx "$n" ping -n -c 1 -W 1 "$N3" >/dev/null || fail "$n lost n3 to t's certificate"
    gone_from "$n" "$TADDR" || fail "$n routes to t ($TADDR), which took w-n3"
done
say "a and b keep w-n3 on n3; t ($TADDR) has no route"
ddp_down t

step "a token signs no address and no alias"
out=$("$DDPNET" authority sign --token "$T/token" --name w-t --public-key "$(pub t)" \
    --address "$N3" 2>&1) && fail "a token signed an address: $out"
say "--address refused: $out"
out=$("$DDPNET" authority sign --token "$T/token" --name w-t --public-key "$(pub t)" \
    --aliases metadata.google.internal 2>&1) && fail "a token signed an alias: $out"
say "--aliases refused: $out"

step "n3's key revoked through a: gone, kept out after b restarts and after n3 re-signs"
"$DDPNET" authority revoke -a "$KEY" --public-key "$(pub n3)" \
    >"$T/n3.revoke" || fail "ddpnet authority revoke --public-key failed"
out=$(nx a "$DDPNET" revoke --run-dir "$T/a/run" "$T/n3.revoke" 2>&1) ||
    fail "ddpnet revoke on a failed: $out"
for n in a b; do wait_for 10 gone_from "$n" "$N3" || fail "n3 not gone from $n"; done
say "n3 gone from a and b"
ddp_down b
[ -s "$T/b/state/ddp0.revoked" ] || fail "b's state directory holds no revocation"
ddp_up b "$C"
wait_for 20 nx b ping -n -c 1 -W 1 "${ADDR[a]}" || fail "b does not reach a after its restart"
sleep "$(( ${PROBATION_S:-10} + 2 ))"       # n3 still runs and keeps trying
gone_from b "$N3" || fail "b took n3 back after its restart"
say "b, restarted, does not take n3 back"
ddp_down n3
"$DDPNET" authority sign --token "$T/token" --name w-n3 --public-key "$(pub n3)" \
    >"$T/n3/key.cert" || fail "ddpnet authority sign --token (n3 again) failed"
if nx n3 timeout 30 "$DDPNET" up -c "$CN" -k "$T/n3/key" --run-dir "$T/n3/run" \
        --hosts-file "$T/n3/hosts" --state-dir "$T/n3/state" >"$T/n3/up.log" 2>&1; then
    E2E_UP+=(n3)
    sleep "$(( ${PROBATION_S:-10} + 2 ))"
    for n in a b; do gone_from "$n" "$N3" || fail "$n took n3 back with a new certificate"; done
    say "n3, signed again with the token and its key, refused by a and b"
else
    say "n3, signed again with the token and its key: up refused it ($(head -1 "$T/n3/up.log"))"
fi

step "a's file revokes t's key: taken on reload, t refused though w-n3 is free now"
cluster_begin "$T/a.conf" "authority = $AUTH" "revoked = $(pub t)"
for n in a b; do
    cluster_node "$T/a.conf" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
done
cp "$T/a.conf" "$C"
out=$(nx a "$DDPNET" reload --run-dir "$T/a/run" 2>&1) || fail "reload on a failed: $out"
grep -q "^ddpnet-revoke:" "$T/a/state/ddp0.revoked" ||
    fail "a's state file holds no signed revocation"
ddp_up t "$CN"
sleep "$(( ${PROBATION_S:-10} + 2 ))"
for n in a b; do gone_from "$n" "$TADDR" || fail "$n routes to t ($TADDR), revoked by a's file"; done
say "t, revoked by a's file, refused (w-n3 is n3's no more, and still not t's)"
say "PASS"
