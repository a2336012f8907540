#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A join token's holder squats on no key (issue 55). a and t are in the
# file; v is not: it joins with the authority's certificate as gpu3, at a
# fixed address. t holds a join token and signs w-squat for v's public
# key (keys are public) before v comes up:
#  1. handed to t's own node (`ddpnet revoke FILE` takes any statement):
#     refused, not its key's own;
#  2. passed on to a by t (build/tools/hostile speaks for t's key): a
#     holds it as heard only (a node for v's key, as an introduction);
#  3. v up: its own certificate, said on its session with a, replaces the
#     squat: a resolves gpu3 to v and not w-squat, and a and v ping each
#     other both ways.
#
#                    namespace "hub": bridge br0
#      +--------------+--------------+
#    a .1           t .2           v .3                      192.168.241.0/24
#    10.77.0.1      10.77.0.2      10.77.0.3 (gpu3, fixed)   (ddp0)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init authority_squat ping getent

declare -A ADDR=([a]=10.77.0.1 [t]=10.77.0.2 [v]=10.77.0.3)
HOSTILE=$E2E_ROOT/build/tools/hostile
[ -x "$HOSTILE" ] || fail "build/tools/hostile is needed (make e2e builds it)"

step "an authority, a token (prefix w-); a and t in the file; v signed as gpu3"
e2e_authority_hub a t v
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
for n in a t; do
    cluster_node "$C" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
done
"$DDPNET" authority sign -a "$KEY" --name gpu3 --public-key "$(pub v)" \
    --address "${ADDR[v]}" --valid 1h >"$T/v/key.cert" || fail "ddpnet authority sign (v) failed"
(umask 077; "$DDPNET" authority token -a "$KEY" --name-prefix w- \
    --max 8 --valid 1h >"$T/token") || fail "ddpnet authority token failed"
"$DDPNET" authority sign --token "$T/token" --name w-squat --public-key "$(pub v)" \
    >"$T/squat.cert" || fail "ddpnet authority sign --token (the squat) failed"
for n in a t; do ddp_up "$n" "$C"; done
wait_for 20 nx a ping -n -c 1 -W 1 "${ADDR[t]}" || fail "a does not reach t"

step "the squat handed to t's own node: refused"
out=$(nx t "$DDPNET" revoke --run-dir "$T/t/run" "$T/squat.cert" 2>&1) ||
    fail "ddpnet revoke on t failed: $out"
case "$out" in
    "not its own"*) say "t's node: $out" ;;
    *) fail "t's node took the squat: $out" ;;
esac

step "the squat passed on to a by t: heard only"
ddp_down t
peers_have() { wg_in "$1" show ddp0 peers | grep -qxF "$2"; }
nx_bg t hostile "$HOSTILE" cert 4 "$T/t/key" "${ADDR[t]}" "$E2E_V4NET.2:$E2E_PORT" \
    --statement "$T/squat.cert" "a,$(pub a),${ADDR[a]},$E2E_V4NET.1:$E2E_PORT"
HOSTILE_PID=$BG_PID
wait_for 10 peers_have a "$(pub v)" || fail "a did not hear the squat from t (no node for v's key)"
wait "$HOSTILE_PID" || fail "hostile: $(tail -n 3 "$T/t/hostile.out")"
say "a heard w-squat for v's key from t"

step "v up with its own certificate: gpu3 on a, reached both ways"
ddp_up v "$C"
resolves() { [ "$(nx "$1" getent hosts "$2" | awk '{print $1}')" = "$3" ]; }
wait_for 20 resolves a gpu3 "${ADDR[v]}" ||
    fail "a does not resolve gpu3 to ${ADDR[v]}: $(nx a getent hosts gpu3 || true)"
! nx a getent hosts w-squat >/dev/null || fail "a still resolves w-squat: $(nx a getent hosts w-squat)"
wait_for 20 nx a ping -n -c 1 -W 1 "${ADDR[v]}" || fail "a does not reach v (gpu3)"
wait_for 20 nx v ping -n -c 1 -W 1 "${ADDR[a]}" || fail "v does not reach a"
say "a resolves gpu3 to v and not w-squat; a and v reach each other"
say "PASS"
