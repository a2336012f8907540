#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# Joining with an authority and no server (issue 33): a, b and c are in
# the file, each with a certificate from one authority; d is not in the
# file (the same file as theirs): its certificate, signed through a join
# token, is its identity, its address derived from its key.
#  1. a, b, c up with their certificates; they reach one another;
#  2. d up: a puts d's key on probation, d presents its certificate
#     inside the tunnel, a passes it on to b and c and theirs to d, and
#     d is reached by all (by overlay address and by name) within
#     AUTH_JOIN_S of its up;
#     then torchrun (Gloo all_reduce) across the four, by name (where
#     torchrun is installed);
#  3. d's certificate revoked (`ddpnet authority revoke`, given to a alone
#     with `ddpnet revoke`): d gone from every node within AUTH_JOIN_S;
#     d's own up refuses it, and refuses a state directory its group may
#     write; d up again with it, its state lost: refused by all (no
#     peer, no route);
#  4. e joins with a certificate valid AUTH_EXPIRY_S (8) s: reached, then
#     gone from every node within AUTH_JOIN_S of its expiry;
#  5. refused by all (no peer, no route, its probation over): x, whose
#     certificate another authority signed (its own file names that one),
#     and f, whose certificate expired before it reached a member;
#  6. c's key stolen (build/tools/hostile speaks for c): of the statements
#     it passes on, a and b take a valid certificate and none of one
#     outside its token's prefix (build/tools/forge_cert), another
#     authority's and an expired one;
#  7. x with the cluster's file: refused at up.
#
#                    namespace "hub": bridge br0
#      +--------------+--------------+--------------+
#    a .1           b .2           c .3           d .4      192.168.241.0/24
#    10.77.0.1      10.77.0.2      10.77.0.3      (derived)  (ddp0)
# Environment: AUTH_JOIN_S (3), and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init authority ping getent

AUTH_JOIN_S=${AUTH_JOIN_S:-3}
declare -A ADDR=([a]=10.77.0.1 [b]=10.77.0.2 [c]=10.77.0.3)

step "an authority, a token; a, b, c in the file with certificates"
e2e_hub
i=0
for n in a b c d e f x; do
    i=$((i + 1))
    e2e_node "$n" "$i" -
    e2e_key "$n"
done
mkdir -p "$T/authority" "$T/other"
"$DDPNET" authority init -o "$T/authority/authority.key" >/dev/null 2>&1 ||
    fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority/authority.key") ||
    fail "ddpnet authority pubkey failed"
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
for n in a b c; do
    cluster_node "$C" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
    "$DDPNET" authority sign -a "$T/authority/authority.key" --name "$n" \
        --public-key "$(pub "$n")" --address "${ADDR[$n]}" --valid 1h >"$T/$n/key.cert" ||
        fail "ddpnet authority sign --name $n failed"
done
"$DDPNET" authority token -a "$T/authority/authority.key" --name-prefix spot- --max 4 \
    --valid 1h >"$T/token" || fail "ddpnet authority token failed"
"$DDPNET" authority sign --token "$T/token" --name spot-d --public-key "$(pub d)" \
    >"$T/d/key.cert" || fail "ddpnet authority sign --token failed"
# d's file: the same [cluster], and one member (a) to reach first.
CD=$T/d/cluster.conf
cluster_begin "$CD" "authority = $AUTH"
cluster_node "$CD" a "$(pub a)" "${ADDR[a]}" "$E2E_V4NET.1:$E2E_PORT"
for n in a b c; do ddp_up "$n" "$C"; done
for n in a b c; do
    for m in a b c; do
        [ "$n" = "$m" ] || wait_for 20 nx "$n" ping -n -c 1 -W 1 "${ADDR[$m]}" ||
            fail "$n does not reach $m"
    done
done
say "a, b and c reach one another"

step "d joins with its token's certificate; reached by all within $AUTH_JOIN_S s"
t0=$(date +%s%N)
ddp_up d "$CD"
UP_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
DADDR=$(nx d ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$DADDR" ] || fail "d has no address on ddp0"
for n in a b c; do
    wait_for 30 nx "$n" ping -n -c 1 -W 0.2 "$DADDR" || fail "$n does not reach d ($DADDR)"
done
JOIN_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
say "d ($DADDR, derived from its key) reached by a, b and c $JOIN_MS ms after its up began (up took $UP_MS ms)"
[ "$JOIN_MS" -le $((AUTH_JOIN_S * 1000)) ] ||
    fail "d was reached by all only after $JOIN_MS ms (bound ${AUTH_JOIN_S}000)"
for n in a b c; do
    wait_for 5 nx "$n" ping -n -c 1 -W 1 spot-d || fail "$n does not reach d by name"
    wait_for 5 nx d ping -n -c 1 -W 1 "$n" || fail "d does not reach $n by name"
done
say "a, b and c reach d by name, and d them"
for n in a b c; do
    ddp_status "$n" | grep -q "certificate of spot-d expires in" ||
        fail "$n's status does not show spot-d's certificate expiry: $(ddp_status "$n")"
done
say "status on a, b and c shows spot-d's certificate expiry"

if command -v torchrun >/dev/null 2>&1; then
    step "torchrun + Gloo all_reduce across a, b, c and spot-d, by name"
    e2e_allreduce a b c d
else
    say "no torchrun here: the all_reduce across the four is not run"
fi

# gone_from NODE ADDR: NODE has no route to ADDR now (its peer removed:
# the ping errs or goes unanswered) and its status lists no such peer.
gone_from() {
    ! nx "$1" ping -n -c 1 -W 1 "$2" >/dev/null 2>&1 &&
        ! ddp_status "$1" | grep -q " $2 "
}

# gone_from_all NAME ADDR T0 SINCE: NAME (at ADDR) gone from a, b and c
# within AUTH_JOIN_S of T0 (date +%s%N), SINCE saying what happened then.
gone_from_all() {
    local n ms
    for n in a b c; do
        wait_for 10 gone_from "$n" "$2" || fail "$1 ($2) not gone from $n $4"
    done
    ms=$(( ($(date +%s%N) - $3) / 1000000 ))
    say "$1 gone from a, b and c $ms ms $4"
    [ "$ms" -le $((AUTH_JOIN_S * 1000)) ] ||
        fail "$1 gone from all only after $ms ms (bound ${AUTH_JOIN_S}000)"
}

step "d revoked through a alone: gone from every node within $AUTH_JOIN_S s"
"$DDPNET" authority revoke -a "$T/authority/authority.key" "$T/d/key.cert" >"$T/d.revoke" ||
    fail "ddpnet authority revoke failed"
t0=$(date +%s%N)
out=$(nx a "$DDPNET" revoke --run-dir "$T/a/run" "$T/d.revoke" 2>&1) ||
    fail "ddpnet revoke on a failed: $out"
say "a took the revocation: $out"
gone_from_all d "$DADDR" "$t0" "after the revocation was given to a"
ddp_down d
# d again with its revoked certificate: its own up refuses it (d heard the
# revocation and kept it in its state directory); and with that lost,
# refused by all (no peer, no route).
if nx d timeout 30 "$DDPNET" up -c "$CD" -k "$T/d/key" --run-dir "$T/d/run" \
        --hosts-file "$T/d/hosts" --state-dir "$T/d/state" >"$T/d/up.log" 2>&1; then
    fail "d came up with the revocation of its certificate in its state directory"
fi
grep -q "our certificate does not hold: revoked" "$T/d/up.log" ||
    fail "d's up refused, but not for the revocation: $(cat "$T/d/up.log")"
say "d's own up refuses its revoked certificate: $(head -1 "$T/d/up.log")"
# A state directory its group may write is refused before anything is
# read from it (whoever may write it could empty the revocations).
chmod 0770 "$T/d/state"
if nx d timeout 30 "$DDPNET" up -c "$CD" -k "$T/d/key" --run-dir "$T/d/run" \
        --hosts-file "$T/d/hosts" --state-dir "$T/d/state" >"$T/d/up.log" 2>&1; then
    fail "d came up with a state directory its group may write"
fi
grep -q "state directory $T/d/state: refused" "$T/d/up.log" ||
    fail "d's up refused, but not for its state directory: $(cat "$T/d/up.log")"
say "d's up refuses a state directory its group may write: $(head -1 "$T/d/up.log")"
rm -rf "$T/d/state"
ddp_up d "$CD"
sleep 2
for n in a b c; do gone_from "$n" "$DADDR" || fail "$n took d back after its revocation"; done
say "d, up again with its revoked certificate, is refused by a, b and c"
ddp_down d

step "e's certificate expires: gone from every node within $AUTH_JOIN_S s"
EXPIRY_S=${AUTH_EXPIRY_S:-8}
"$DDPNET" authority sign --token "$T/token" --name spot-e --public-key "$(pub e)" \
    --valid "${EXPIRY_S}s" >"$T/e/key.cert" || fail "ddpnet authority sign (e) failed"
end=$(( $(date +%s) + EXPIRY_S ))
cp "$CD" "$T/e/cluster.conf"
ddp_up e "$T/e/cluster.conf"
EADDR=$(nx e ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
for n in a b c; do
    wait_for 5 nx "$n" ping -n -c 1 -W 1 "$EADDR" || fail "$n does not reach e ($EADDR)"
done
say "e ($EADDR) reached by a, b and c; its certificate ends at $end"
while [ "$(date +%s)" -lt "$end" ]; do sleep 0.2; done
t0=$(date +%s%N)
gone_from_all e "$EADDR" "$t0" "after its certificate expired"

step "refused by all: another authority's certificate, an expired one"
# x believes in another authority (its own file says so, and lists a):
# its up passes, its certificate reaches a inside the tunnel, and a, b
# and c refuse it: no peer, no route, once its probation is over.
"$DDPNET" authority init -o "$T/other/authority.key" >/dev/null 2>&1 ||
    fail "ddpnet authority init (another) failed"
OTHER=$("$DDPNET" authority pubkey -a "$T/other/authority.key")
"$DDPNET" authority sign -a "$T/other/authority.key" --name x --public-key "$(pub x)" \
    >"$T/x/key.cert" || fail "ddpnet authority sign (another) failed"
cluster_begin "$T/x/cluster.conf" "authority = $OTHER"
cluster_node "$T/x/cluster.conf" a "$(pub a)" "${ADDR[a]}" "$E2E_V4NET.1:$E2E_PORT"
ddp_up x "$T/x/cluster.conf"
XADDR=$(nx x ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
# f's certificate expires before it reaches anyone: its first file lists
# a at a port nobody listens on, its reload (the right port) comes after.
"$DDPNET" authority sign --token "$T/token" --name spot-f --public-key "$(pub f)" \
    --valid 3s >"$T/f/key.cert" || fail "ddpnet authority sign (f) failed"
cluster_begin "$T/f/cluster.conf" "authority = $AUTH"
cluster_node "$T/f/cluster.conf" a "$(pub a)" "${ADDR[a]}" "$E2E_V4NET.1:9"
ddp_up f "$T/f/cluster.conf"
FADDR=$(nx f ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
sleep 4
cp "$CD" "$T/f/cluster.conf"
out=$(nx f "$DDPNET" reload --run-dir "$T/f/run" 2>&1) || fail "reload on f failed: $out"
nx x ping -n -c 3 -i 0.3 -W 1 "${ADDR[a]}" >/dev/null 2>&1 &&
    fail "x reaches a with another authority's certificate"
nx f ping -n -c 3 -i 0.3 -W 1 "${ADDR[a]}" >/dev/null 2>&1 &&
    fail "f reaches a with an expired certificate"
sleep "$(( ${PROBATION_S:-10} + 1 ))"
for n in a b c; do
    gone_from "$n" "$XADDR" || fail "$n routes to x ($XADDR), another authority's"
    gone_from "$n" "$FADDR" || fail "$n routes to f ($FADDR), expired"
done
say "x (another authority) and f (expired) refused by a, b and c: no peer, no route"
ddp_down x
ddp_down f
# What x and f left on probation goes with its time (10 s), so that what
# c passes on below is all a and b could take x's key from.
peers_have() { wg_in "$1" show ddp0 peers | grep -qxF "$2"; }
for n in a b; do
    wait_for 15 eval '! peers_have "$n" "$(pub x)" && ! peers_have "$n" "$(pub f)"' ||
        fail "$n still holds x's or f's key 15 s after they went down"
done

step "c's key stolen: what it passes on counts only where it proves itself"
# A member may repeat any statement: a valid certificate (g's, through the
# token: the control, taken) and three that do not count (h's, signed with
# the token's key for a name outside its prefix, as only a thief of the
# token could; x's, another authority's; j's, expired): none taken.
FORGE=$E2E_ROOT/build/tools/forge_cert
HOSTILE=$E2E_ROOT/build/tools/hostile
[ -x "$FORGE" ] && [ -x "$HOSTILE" ] ||
    fail "build/tools/forge_cert and build/tools/hostile are needed (make e2e builds them)"
for n in g h j; do "$DDPNET" genkey >"$T/$n.key"; done
gpub() { "$DDPNET" pubkey <"$T/$1.key"; }
"$DDPNET" authority sign --token "$T/token" --name spot-g --public-key "$(gpub g)" \
    >"$T/g.cert" || fail "ddpnet authority sign (g) failed"
"$FORGE" "$T/token" evil-h "$(gpub h)" >"$T/h.cert" || fail "forge_cert failed"
"$DDPNET" authority sign --token "$T/token" --name spot-j --public-key "$(gpub j)" \
    --valid 1s >"$T/j.cert" || fail "ddpnet authority sign (j) failed"
"$DDPNET" authority show "$T/h.cert" --authority "$AUTH" >/dev/null 2>&1 &&
    fail "the forged certificate counts under the authority"
ddp_down c
sleep 2     # j's certificate has expired
victims=()
for n in a b; do victims+=("$n,$(pub "$n"),${ADDR[$n]},$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"); done
nx_bg c hostile "$HOSTILE" cert 6 "$T/c/key" "${ADDR[c]}" "$E2E_V4NET.3:$E2E_PORT" \
    --statement "$T/g.cert" --statement "$T/h.cert" --statement "$T/x/key.cert" \
    --statement "$T/j.cert" "${victims[@]}"
HOSTILE_PID=$BG_PID
for n in a b; do
    wait_for 10 peers_have "$n" "$(gpub g)" || fail "$n did not take g's valid certificate from c"
done
wait "$HOSTILE_PID" || fail "hostile: $(tail -n 3 "$T/c/hostile.out")"
grep -q "lies=[1-9]" "$T/c/hostile.out" || fail "hostile sent nothing: $(cat "$T/c/hostile.out")"
for n in a b; do
    for k in h j x; do
        key=$([ "$k" = x ] && pub x || gpub "$k")
        ! peers_have "$n" "$key" || fail "$n took $k's certificate from c, which does not count"
    done
done
say "a and b took g's certificate from c, and none of h's (outside the token's prefix), x's (another authority's) or j's (expired)"

step "a certificate from another authority: refused at up"
if nx x timeout 30 "$DDPNET" up -c "$C" -k "$T/x/key" --run-dir "$T/x/run" \
        --hosts-file "$T/x/hosts" --state-dir "$T/x/state" >"$T/x/up.log" 2>&1; then
    E2E_UP+=(x)
    fail "x came up with another authority's certificate"
fi
say "x refused: $(head -1 "$T/x/up.log")"
say "PASS"
