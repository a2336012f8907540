#!/usr/bin/env bash
# Joining with an authority and no server (issue 33): a, b and c are in
# the file, each with a certificate from one authority; d is not in the
# file (the same file as theirs): its certificate, signed through a join
# token, is its identity, its address derived from its key.
#  1. a, b, c up with their certificates; they reach one another;
#  2. d up: a puts d's key on probation, d presents its certificate
#     inside the tunnel, a passes it on to b and c and theirs to d, and
#     d is reached by all (by overlay address and by name) within
#     AUTH_JOIN_S of its up;
#  3. a node whose certificate another authority signed is refused at up.
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
for n in a b c d x; do
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
DADDR=$(nx d ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$DADDR" ] || fail "d has no address on ddp0"
for n in a b c; do
    wait_for 30 nx "$n" ping -n -c 1 -W 1 "$DADDR" || fail "$n does not reach d ($DADDR)"
done
JOIN_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
say "d ($DADDR, derived from its key) reached by a, b and c $JOIN_MS ms after its up began"
[ "$JOIN_MS" -le $((AUTH_JOIN_S * 1000)) ] ||
    fail "d was reached by all only after $JOIN_MS ms (bound ${AUTH_JOIN_S}000)"
for n in a b c; do
    wait_for 5 nx "$n" ping -n -c 1 -W 1 spot-d || fail "$n does not reach d by name"
    wait_for 5 nx d ping -n -c 1 -W 1 "$n" || fail "d does not reach $n by name"
done
say "a, b and c reach d by name, and d them"

step "a certificate from another authority: refused at up"
"$DDPNET" authority init -o "$T/other/authority.key" >/dev/null 2>&1 ||
    fail "ddpnet authority init (another) failed"
"$DDPNET" authority sign -a "$T/other/authority.key" --name x --public-key "$(pub x)" \
    >"$T/x/key.cert" || fail "ddpnet authority sign (another) failed"
if nx x timeout 30 "$DDPNET" up -c "$C" -k "$T/x/key" --run-dir "$T/x/run" \
        --hosts-file "$T/x/hosts" >"$T/x/up.log" 2>&1; then
    E2E_UP+=(x)
    fail "x came up with another authority's certificate"
fi
say "x refused: $(head -1 "$T/x/up.log")"
say "PASS"
