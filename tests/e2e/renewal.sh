#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# Certificates renewed while nodes run (issue 56). a and b are in the
# file; spot-n joins with a certificate signed through a join token valid
# 75 s (it ends with the token), and the token leaves the disk. The
# "authority's machine" (this script, which alone holds authority.key)
# runs what docs/authority.md's timer runs, every 2 s:
#     ddpnet certs (on a) | ddpnet authority renew --within 65s --valid 85s
#                         | ddpnet renew (on a)
#  1. three renewals of spot-n's certificate, each taken by a, b and
#     spot-n itself (the same end in the three status); a pings spot-n
#     twice a second and spot-n pings a once a second throughout (the
#     issue's case), and not one echo is lost; after the first, the
#     metric ddpnet_certificate_remaining_seconds of spot-n on spot-n and
#     on a, and `ddpnet doctor` on spot-n warning of its end;
#  2. spot-n restarted: its state directory keeps its newest renewal, its
#     up takes it (newer than its --cert file's) and says it, and it is
#     back;
#  3. renewals to five at least, a pinging spot-n and spot-n a past the
#     first certificate's end (the token's) with not one echo lost; no
#     member logged spot-n removed or changed at any renewal;
#  4. no renewal after that: a and b remove spot-n at its end, logged,
#     `ddpnet status` on a says it was removed because its certificate
#     ended, and `ddpnet doctor` on spot-n names that end as the cause,
#     with the command that fixes it. (The journal's set points, a minute
#     at least and in the last third of a life, are for lifetimes longer
#     than this test's: tests/unit/test_renewal.c, e2e renewal_down.sh.)
# About 3 minutes.
set -eu
E2E_FOREGROUND=1
. "$(dirname "$0")/lib.sh"
e2e_init renewal ping

declare -A ADDR=([a]=10.77.0.1 [b]=10.77.0.2)

step "a and b in the file; spot-n through a join token valid 75 s"
e2e_authority_hub a b n
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH" "metrics = 127.0.0.1:9586"
for n in a b; do
    cluster_node "$C" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
done
(umask 077; "$DDPNET" authority token -a "$KEY" --name-prefix spot- --valid 75s >"$T/join.token") ||
    fail "ddpnet authority token failed"
"$DDPNET" authority sign --token "$T/join.token" --name spot-n -k "$T/n/key" >"$T/n/key.cert" ||
    fail "ddpnet authority sign --token failed"
rm -f "$T/join.token"            # as the launch script does: nothing keeps n alive but renewal
FIRST_END=$(( $(date +%s) + 75 ))
for n in a b n; do ddp_up "$n" "$C"; done
NADDR=$(nx n ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$NADDR" ] || fail "spot-n has no address on ddp0"
for n in a b; do
    wait_for 20 nx "$n" ping -n -c 1 -W 1 "$NADDR" || fail "$n does not reach spot-n ($NADDR)"
done
say "spot-n ($NADDR) reached by a and b; its certificate ends at $FIRST_END"

# The end (unix s) NODE's status shows for spot-n's certificate.
end_on() {
    ddp_status "$1" | sed -n 's/^certificate of spot-n.* expires .*(\([0-9]*\))$/\1/p'
}
# Every node holds end $1 for spot-n.
all_hold() {
    local n
    for n in a b n; do [ "$(end_on "$n")" = "$1" ] || return 1; done
}

RENEWALS=0
# One pass of the timer: a renewal when one is due, handed to a; each
# renewal made must reach a, b and spot-n within 5 s.
renew_pass() {
    local end
    nx a "$DDPNET" certs --run-dir "$T/a/run" >"$T/held" || fail "ddpnet certs on a failed"
    "$DDPNET" authority renew -a "$KEY" --within 65s --valid 85s "$T/held" >"$T/renewed" \
        2>"$T/renew.err" || fail "ddpnet authority renew failed: $(cat "$T/renew.err")"
    [ -s "$T/renewed" ] || return 0
    nx a "$DDPNET" renew --run-dir "$T/a/run" "$T/renewed" >"$T/renew.out" 2>&1 ||
        fail "ddpnet renew on a failed: $(cat "$T/renew.out")"
    end=$("$DDPNET" authority show "$T/renewed" | sed -n 's/^valid: .* to \(.*\) UTC.*/\1/p')
    end=$(date -u -d "$end" +%s)
    wait_for 5 all_hold "$end" ||
        fail "renewal to $end not held by all: a $(end_on a), b $(end_on b), spot-n $(end_on n)"
    RENEWALS=$((RENEWALS + 1))
    say "renewal $RENEWALS: spot-n's certificate now ends at $end on a, b and spot-n ($(cat "$T/renew.out"))"
}

# renew_until N: the timer's passes until N renewals were made.
renew_until() {
    local deadline=$(( $(date +%s) + 40 * ($1 - RENEWALS) ))
    while [ "$RENEWALS" -lt "$1" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "renewal $((RENEWALS + 1)) did not come in time"
        renew_pass
        sleep 2
    done
}

# lost_none NODE TAG: the ping in $T/NODE/TAG.out lost nothing.
lost_none() {
    grep -q ' 0% packet loss' "$T/$1/$2.out" || fail "$1's $2 lost echoes: $(tail -n 3 "$T/$1/$2.out")"
    say "$1's $2: $(grep 'packet loss' "$T/$1/$2.out")"
}
# metric NODE: NODE's ddpnet_certificate_remaining_seconds line for spot-n.
metric() {
    nx "$1" "$PY" -c '
import urllib.request
for l in urllib.request.urlopen("http://127.0.0.1:9586/metrics", timeout=5).read().decode().splitlines():
    if l.startswith("ddpnet_certificate_remaining_seconds{") and "name=\"spot-n\"" in l:
        print(l)'
}

step "three renewals while a pings spot-n, and spot-n pings a once a second"
nx_bg a ping1 ping -D -n -i 0.5 -W 2 -c 100 "$NADDR"     # 50 s
PING=$BG_PID
nx_bg n ping1 ping -D -n -i 1 -W 2 -c 50 "${ADDR[a]}"
PING_N=$BG_PID
renew_until 1
# What an operator sees while renewals come: the metric on spot-n and on
# a, and doctor's warning (a certificate ending within a day).
for n in n a; do
    line=$(metric "$n") || fail "no metrics from $n"
    left=${line##* }
    [ -n "$line" ] && [ "${left%.*}" -gt 0 ] && [ "${left%.*}" -le 85 ] ||
        fail "$n's metric of spot-n's certificate: '$line'"
    say "$n's metric: $line"
done
out=$(nx n timeout 30 "$DDPNET" doctor --run-dir "$T/n/run" 2>&1) || true
grep -q "warning: this node's certificate ends in .*ddpnet authority renew" <<<"$out" ||
    fail "doctor on spot-n does not warn of its certificate's end: $out"
say "doctor on spot-n: $(grep "certificate ends in" <<<"$out")"
renew_until 3
while kill -0 "$PING" 2>/dev/null; do renew_pass; sleep 1; done
wait "$PING" "$PING_N" || true
lost_none a ping1
lost_none n ping1

step "spot-n restarted: it comes back with the renewal it kept, the newest"
NEWEST=$(end_on n)
ddp_down n
kept=$("$DDPNET" authority show "$T/n/state/ddp0.cert" | sed -n 's/^valid: .* to \(.*\) UTC.*/\1/p')
[ "$(date -u -d "$kept" +%s)" = "$NEWEST" ] ||
    fail "spot-n's state directory keeps a certificate ending $kept, not its newest ($NEWEST)"
ddp_up n "$C"
[ "$(end_on n)" = "$NEWEST" ] || fail "spot-n came back saying a certificate ending $(end_on n), not $NEWEST"
grep -q "using the renewed certificate kept in" "$T/n/daemon.out" ||
    fail "spot-n's up did not take its kept certificate: $(head -n 5 "$T/n/daemon.out")"
for n in a b; do
    wait_for 20 nx "$n" ping -n -c 1 -W 1 "$NADDR" || fail "$n does not reach spot-n after its restart"
done
say "spot-n back: $(grep -m1 'using the renewed certificate' "$T/n/daemon.out" | cut -c1-140)"

step "renewals to five, a pinging spot-n past its first certificate's end"
# Past the first certificate's end, and 40 s at least (two renewals).
SECS=$(( FIRST_END + 4 - $(date +%s) ))
[ "$SECS" -ge 40 ] || SECS=40
nx_bg a ping2 ping -D -n -i 0.5 -W 2 -c $((2 * SECS)) "$NADDR"
PING=$BG_PID
nx_bg n ping2 ping -D -n -i 1 -W 2 -c "$SECS" "${ADDR[a]}"
PING_N=$BG_PID
renew_until $(( RENEWALS < 4 ? 5 : RENEWALS + 1 ))
while kill -0 "$PING" 2>/dev/null; do renew_pass; sleep 1; done
wait "$PING" "$PING_N" || true
lost_none a ping2
lost_none n ping2
for n in a b; do
    if grep -E "(removed|changed) spot-n" "$T/$n/daemon.out"; then
        fail "$n removed or changed spot-n at a renewal"
    fi
done
say "$RENEWALS renewals; no member removed or changed spot-n"

step "no more renewals: spot-n removed at its end, said by status"
LAST_END=$(end_on a)
wait_for $(( LAST_END - $(date +%s) + 10 )) grep -q "spot-n removed: its certificate ended" "$T/a/daemon.out" ||
    fail "a never logged spot-n's removal at its end"
say "a: $(grep -m1 'spot-n removed: its certificate ended' "$T/a/daemon.out" | cut -c1-150)"
ddp_status a | grep -q "spot-n removed: its certificate ended" ||
    fail "a's status does not say spot-n was removed at its certificate's end: $(ddp_status a)"
say "a's status: $(ddp_status a | grep -m1 'spot-n removed')"
out=$(nx n timeout 30 "$DDPNET" doctor --run-dir "$T/n/run" 2>&1) &&
    fail "doctor on spot-n passed after its certificate ended: $out"
grep -q "NOT READY: spot-n's certificate ended" <<<"$out" ||
    fail "doctor on spot-n does not name its certificate's end as the cause: $out"
grep -q "ddpnet authority sign -a authority.key --name spot-n" <<<"$out" ||
    fail "doctor on spot-n does not say what to run: $out"
say "doctor on spot-n: $(grep -m1 'NOT READY' <<<"$out")"
say "doctor on spot-n: $(grep -m1 "error: this node's certificate ended" <<<"$out")"
