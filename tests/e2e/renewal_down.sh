#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# The authority's machine down across a renewal point, then back (issue
# 56). a and b are in the file; spot-n holds a certificate of the
# authority's with a life of 200 s (backdated: 68 s of it left), so its
# renewal is due at once (a third of its life left, `authority renew`'s
# default) and the journal's last set point (a minute before the end, in
# the last third of its life) comes about 8 s after it starts. a pings
# spot-n five times a second throughout (ping -D: the times, for a failure).
#  1. the authority's machine (this script) is down: no renewal comes;
#     spot-n logs that its certificate ends in under a minute with no
#     renewal, and what to run; a logs the same of spot-n;
#  2. it is back: one pass of the timer's pipeline (ddpnet certs on a |
#     ddpnet authority renew | ddpnet renew on a, defaults) renews it,
#     held by a, b and spot-n;
#  3. past the first certificate's end: spot-n still in on a and b (no
#     member logged it removed, both reach it), not one echo lost.
# About 75 s.
set -eu
E2E_FOREGROUND=1
. "$(dirname "$0")/lib.sh"
e2e_init renewal_down ping

declare -A ADDR=([a]=10.77.0.1 [b]=10.77.0.2)

step "a and b in the file; spot-n's certificate ends in 68 s, of a life of 200 s"
e2e_authority_hub a b n
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
for n in a b; do
    cluster_node "$C" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
done
# Signed with --not-before, it starts there: a life of 500 s less the
# 300 s every statement counts early (CERT_CLOCK_SKEW_S) is 200 s.
FIRST_END=$(( $(date +%s) + 68 ))
"$DDPNET" authority sign -a "$KEY" --name spot-n --public-key "$(pub n)" \
    --not-before $((FIRST_END - 500)) --valid 500s >"$T/n/key.cert" || fail "ddpnet authority sign failed"
for n in a b n; do ddp_up "$n" "$C"; done
NADDR=$(nx n ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$NADDR" ] || fail "spot-n has no address on ddp0"
for n in a b; do
    wait_for 20 nx "$n" ping -n -c 1 -W 1 "$NADDR" || fail "$n does not reach spot-n ($NADDR)"
done
say "spot-n ($NADDR) reached by a and b; its certificate ends at $FIRST_END"
# Past the first end by 4 s.
nx_bg a ping ping -D -n -i 0.2 -W 2 -w $(( FIRST_END + 4 - $(date +%s) )) "$NADDR"
PING=$BG_PID

step "the authority's machine down: the warning at the minute's set point"
WARN_SELF="this node's certificate (spot-n) ends in"
WARN_PEER="the certificate of spot-n ends in"
wait_for 30 grep -q "$WARN_SELF" "$T/n/daemon.out" ||
    fail "spot-n logged no warning of its certificate's end: $(tail -n 5 "$T/n/daemon.out")"
left=$(( FIRST_END - $(date +%s) ))
[ "$left" -le 60 ] && [ "$left" -ge 40 ] || fail "spot-n's warning came with $left s left (the set point: 60 s)"
grep "$WARN_SELF" "$T/n/daemon.out" | grep -q "ddpnet authority renew" ||
    fail "spot-n's warning does not say what to run: $(grep "$WARN_SELF" "$T/n/daemon.out")"
wait_for 5 grep -q "$WARN_PEER" "$T/a/daemon.out" ||
    fail "a logged no warning of spot-n's certificate's end: $(tail -n 5 "$T/a/daemon.out")"
say "spot-n: $(grep -m1 "$WARN_SELF" "$T/n/daemon.out" | cut -c1-160)"
say "a: $(grep -m1 "$WARN_PEER" "$T/a/daemon.out" | cut -c1-160)"

step "the authority's machine back: one pass of the timer renews spot-n"
# The end (unix s) NODE's status shows for spot-n's certificate.
end_on() {
    ddp_status "$1" | sed -n 's/^certificate of spot-n.* expires .*(\([0-9]*\))$/\1/p'
}
all_hold() {
    local n
    for n in a b n; do [ "$(end_on "$n")" = "$1" ] || return 1; done
}
nx a "$DDPNET" certs --run-dir "$T/a/run" >"$T/held" || fail "ddpnet certs on a failed"
"$DDPNET" authority renew -a "$KEY" "$T/held" >"$T/renewed" 2>"$T/renew.err" ||
    fail "ddpnet authority renew failed: $(cat "$T/renew.err")"
grep -q "1 renewed" "$T/renew.err" || fail "ddpnet authority renew: $(cat "$T/renew.err")"
out=$(nx a "$DDPNET" renew --run-dir "$T/a/run" "$T/renewed" 2>&1) || fail "ddpnet renew on a failed: $out"
END=$("$DDPNET" authority show "$T/renewed" | sed -n 's/^valid: .* to \(.*\) UTC.*/\1/p')
END=$(date -u -d "$END" +%s)
[ "$END" -gt $(( FIRST_END + 100 )) ] || fail "the renewal ends at $END, not a life of 200 s on (first end $FIRST_END)"
wait_for 5 all_hold "$END" || fail "the renewal to $END not held by all: a $(end_on a), b $(end_on b), spot-n $(end_on n)"
wait_for 5 grep -q "this node's certificate renewed" "$T/n/daemon.out" ||
    fail "spot-n did not take its renewal as its own"
say "renewed ($out): ends at $END on a, b and spot-n"

step "past the first certificate's end: spot-n still in"
wait "$PING" || true
[ "$(date +%s)" -gt "$FIRST_END" ] || fail "the ping ended before the first certificate's end"
grep -q ' 0% packet loss' "$T/a/ping.out" || fail "a's ping of spot-n lost echoes: $(tail -n 3 "$T/a/ping.out")"
say "a's ping of spot-n past its first end: $(grep 'packet loss' "$T/a/ping.out")"
for n in a b; do
    nx "$n" ping -n -c 1 -W 1 "$NADDR" >/dev/null || fail "$n does not reach spot-n past its first end"
    if grep -E "spot-n removed|(removed|changed) spot-n" "$T/$n/daemon.out"; then
        fail "$n removed or changed spot-n"
    fi
done
say "a and b reach spot-n past its first certificate's end; neither removed it"
