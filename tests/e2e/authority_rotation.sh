#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The authority's key rotated with no flag day (issue 56;
# docs/authority.md, "Rotating the authority's key"). a and b are in the
# file, c joins with a certificate of the old key; a pings c, b pings c
# and c pings a, twice a second each, throughout:
#  1. every node's file trusts the old key and the new (`authority = OLD
#     NEW`), taken by `ddpnet reload` on each, live;
#  2. c's certificate renewed by the new key (`ddpnet certs` on a |
#     `ddpnet authority renew -a NEW --authority OLD` | `ddpnet renew` on
#     a): a, b and c hold it;
#  3. every node's file trusts the new key alone, reloaded: c stays in,
#     and a certificate of the old key is refused from then on;
#  4. not one echo lost on any of the three, c never removed.
# About 20 s.
set -eu
E2E_FOREGROUND=1
. "$(dirname "$0")/lib.sh"
e2e_init authority_rotation ping

declare -A ADDR=([a]=10.77.0.1 [b]=10.77.0.2)
step "a and b in the file, c with a certificate of the old key"
e2e_hub
i=0
for n in a b c; do
    i=$((i + 1))
    e2e_node "$n" "$i" -
    e2e_key "$n"
done
mkdir -p "$T/old" "$T/new"
"$DDPNET" authority init -o "$T/old/authority.key" >/dev/null 2>&1 || fail "authority init (old) failed"
"$DDPNET" authority init -o "$T/new/authority.key" >/dev/null 2>&1 || fail "authority init (new) failed"
OLD=$("$DDPNET" authority pubkey -a "$T/old/authority.key")
NEW=$("$DDPNET" authority pubkey -a "$T/new/authority.key")
C=$T/cluster.conf
# cluster_file AUTHORITY-LINE: the cluster file every node runs.
cluster_file() {
    cluster_begin "$C" "authority = $1"
    for n in a b; do
        cluster_node "$C" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
    done
}
cluster_file "$OLD"
"$DDPNET" authority sign -a "$T/old/authority.key" --name c --public-key "$(pub c)" --valid 1h \
    >"$T/c/key.cert" || fail "authority sign (old) failed"
for n in a b c; do ddp_up "$n" "$C"; done
CADDR=$(nx c ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
for n in a b; do
    wait_for 20 nx "$n" ping -n -c 1 -W 1 "$CADDR" || fail "$n does not reach c ($CADDR)"
done
say "c ($CADDR) reached by a and b"
# 15 s each, through every step.
nx_bg a ping ping -n -i 0.5 -W 2 -c 30 "$CADDR"
PINGS=("$BG_PID")
nx_bg b ping ping -n -i 0.5 -W 2 -c 30 "$CADDR"
PINGS+=("$BG_PID")
nx_bg c ping ping -n -i 0.5 -W 2 -c 30 "${ADDR[a]}"
PINGS+=("$BG_PID")

# reload_all: every node takes the file.
reload_all() {
    local n out
    for n in a b c; do
        out=$(nx "$n" "$DDPNET" reload --run-dir "$T/$n/run" 2>&1) ||
            fail "reload on $n refused: $out"
    done
}
# The end of c's certificate as NODE's status shows it.
end_on() {
    ddp_status "$1" | sed -n 's/^certificate of c.* expires .*(\([0-9]*\))$/\1/p'
}
all_hold() {
    local n
    for n in a b c; do [ "$(end_on "$n")" = "$1" ] || return 1; done
}

step "the old key and the new trusted together, reloaded live"
cluster_file "$OLD $NEW"
reload_all
say "a, b and c trust both keys"

step "c signed again by the new key, handed to a"
nx a "$DDPNET" certs --run-dir "$T/a/run" >"$T/held" || fail "ddpnet certs on a failed"
"$DDPNET" authority renew -a "$T/new/authority.key" --authority "$OLD" --within 2h "$T/held" \
    >"$T/c.new.cert" 2>"$T/renew.err" || fail "authority renew (new key) failed: $(cat "$T/renew.err")"
grep -q "1 renewed" "$T/renew.err" || fail "authority renew: $(cat "$T/renew.err")"
out=$(nx a "$DDPNET" renew --run-dir "$T/a/run" "$T/c.new.cert" 2>&1) ||
    fail "ddpnet renew on a failed: $out"
END=$("$DDPNET" authority show "$T/c.new.cert" | sed -n 's/^valid: .* to \(.*\) UTC.*/\1/p')
END=$(date -u -d "$END" +%s)
wait_for 5 all_hold "$END" || fail "c's new certificate not held by all: a $(end_on a), b $(end_on b), c $(end_on c)"
say "a, b and c hold c's certificate of the new key ($out)"

step "the new key alone, reloaded: c stays, the old key's certificates are refused"
cluster_file "$NEW"
reload_all
sleep 1
for n in a b; do
    nx "$n" ping -n -c 1 -W 1 "$CADDR" >/dev/null || fail "$n does not reach c after the old key went"
done
"$DDPNET" authority sign -a "$T/old/authority.key" --name c --public-key "$(pub c)" --valid 3h \
    >"$T/c.old.cert" || fail "authority sign (old) failed"
out=$(nx a "$DDPNET" renew --run-dir "$T/a/run" "$T/c.old.cert" 2>&1) &&
    fail "a took a certificate of the old key after it went: $out"
grep -q "c: invalid: bad signature" <<<"$out" || fail "a's verdict on the old key's certificate: $out"
say "the old key's certificate refused: $out"

wait "${PINGS[@]}" || true
for n in a b c; do
    grep -q ' 0% packet loss' "$T/$n/ping.out" || fail "$n's ping lost echoes: $(tail -n 3 "$T/$n/ping.out")"
    say "$n's ping ($([ "$n" = c ] && echo a || echo c)) through the rotation: $(grep 'packet loss' "$T/$n/ping.out")"
done
for n in a b; do
    if grep -E "(removed|changed) c\b" "$T/$n/daemon.out"; then fail "$n removed or changed c"; fi
done
say "no node removed or changed c"
