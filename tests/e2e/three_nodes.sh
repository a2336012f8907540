#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Three nodes up from one cluster file, one of them reached over IPv6 only:
# ping between every pair (by overlay address and by name), iperf3 TCP both
# ways, `ddpnet status` and stock `wg show` report handshakes, names
# resolve, and `down` leaves no interface and no hosts block, also given
# the wrong --run-dir (it finds the daemon by its interface). Each daemon
# runs its default shards: one per core it may use (nproc: its affinity),
# at most 8, unless DDPNET_SHARDS says otherwise (overlay/loop/shard.h).
#
#                    namespace "hub": bridge br0
#         +------------------+------------------+
#        p-node-a          p-node-b           p-node-c
#         |                  |                  |
#        eth0               eth0               eth0
#   192.168.241.1/24   192.168.241.2/24     (no IPv4)
#   fd00:dd::1/64      fd00:dd::2/64        fd00:dd::3/64
#   +--------+         +--------+         +--------+
#   | node-a |         | node-b |         | node-c |
#   |  ddp0  |         |  ddp0  |         |  ddp0  |
#   |10.77.0.1         |10.77.0.2         |10.77.0.3
#   +--------+         +--------+         +--------+
# cluster endpoints: node-a 192.168.241.1:51820, node-b 192.168.241.2:51820,
# node-c [fd00:dd::3]:51820. node-c cannot reach the IPv4 endpoints, so a
# and b speak first to c; c learns their IPv6 source by roaming.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init three_nodes ping iperf3 ss wg getent

step "namespaces"
e2e_hub
e2e_node node-a 1 1
e2e_node node-b 2 2
e2e_node node-c - 3

step "keys and cluster file"
for n in node-a node-b node-c; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
cluster_node "$T/cluster.conf" node-c "$(pub node-c)" 10.77.0.3 "[$E2E_V6NET::3]:$E2E_PORT"
out=$("$DDPNET" check -c "$T/cluster.conf" 2>"$T/check.err") ||
    fail "ddpnet check refused a valid file: $out $(cat "$T/check.err")"
[ "$out" = ok ] || fail "ddpnet check printed '$out', want 'ok'"
# What it could not check goes to stderr, for the person.
grep -q "^not checked (only \`ddpnet up\` can, on the node):" "$T/check.err" ||
    fail "ddpnet check did not say what it left to up: $(cat "$T/check.err")"

step "up"
for n in node-a node-b node-c; do ddp_up "$n"; done
for n in node-a node-b node-c; do
    addr=$(nx "$n" ip -4 -o addr show dev ddp0)
    case "$addr" in *"10.77.0."*/16*) ;; *) fail "$n: ddp0 address: $addr (want 10.77.0.x/16)" ;; esac
done
cores=$(nproc)
want=${DDPNET_SHARDS:-$(( cores < 8 ? cores : 8 ))}
for n in node-a node-b node-c; do
    for p in $(ip netns pids "$E2E_PFX$n"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = ddpnet ] || continue
        got=$(( $(grep -l '^ddpnet-shard' /proc/"$p"/task/*/comm 2>/dev/null | wc -l) + 1 ))
        [ "$got" -eq "$want" ] || fail "$n: the daemon runs $got shards, want $want ($cores cores)"
        say "$n: $got shards ($cores cores)"
    done
done

step "names resolve on every node"
for n in node-a node-b node-c; do
    for m in a:10.77.0.1 b:10.77.0.2 c:10.77.0.3; do
        name=node-${m%%:*} want=${m#*:}
        got=$(nx "$n" getent hosts "$name") || fail "$n: getent hosts $name: not found; hosts file: $(cat "$T/$n/hosts")"
        [ "${got%% *}" = "$want" ] || fail "$n: getent hosts $name = '$got', want $want"
    done
done

step "ping every pair (c over the IPv6 underlay)"
declare -A ADDR=([node-a]=10.77.0.1 [node-b]=10.77.0.2 [node-c]=10.77.0.3)
# a and b first: c only has their IPv4 endpoints, which it cannot reach.
ping_ok node-a "${ADDR[node-c]}"
ping_ok node-b "${ADDR[node-c]}"
for from in node-a node-b node-c; do
    for to in node-a node-b node-c; do
        [ "$from" != "$to" ] || continue
        ping_ok "$from" "${ADDR[$to]}"
        ping_ok "$from" "$to"           # by name, through the hosts block
    done
done
say "every pair answers, by address and by name"

step "iperf3 TCP both ways between node-a and node-b"
iperf_ok node-b "${ADDR[node-b]}" node-a
iperf_ok node-b "${ADDR[node-b]}" node-a -R

step "ddp0: MTU from the underlay, super-packets that fit one GSO send"
# The bridge carries 1500 bytes: 1500 - 80 = 1420, whose full segments
# (1452 bytes sealed) fit 44 to a 65000-byte send.
for n in node-a node-b node-c; do
    link=$(nx "$n" ip -d link show ddp0) || fail "$n: no ddp0"
    mtu=$(printf '%s\n' "$link" | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
    segs=$(printf '%s\n' "$link" | sed -n 's/.* gso_max_segs \([0-9]*\).*/\1/p')
    [ "$mtu" = 1420 ] || fail "$n: ddp0 mtu is '$mtu', want 1420"
    [ "$segs" = 44 ] || fail "$n: ddp0 gso_max_segs is '$segs', want 44"
done
say "ddp0 mtu 1420, gso_max_segs 44 on every node"

step "ddpnet status and wg show"
for n in node-a node-b node-c; do
    out=$(ddp_status "$n" 2>&1) || fail "$n: ddpnet status failed: $out"
    printf '%s\n' "$out"
    for m in node-a node-b node-c; do
        [ "$m" = "$n" ] && continue
        case "$out" in *"$m"*) ;; *) fail "$n: ddpnet status has no row for $m" ;; esac
    done
    others=()
    for m in node-a node-b node-c; do [ "$m" = "$n" ] || others+=("$m"); done
    status_handshakes_ok "$n" "${others[@]}"
    wg_handshakes_ok "$n" 2
done
# node-c is reached over the IPv6 underlay.
eps=$(wg_in node-a show ddp0 endpoints)
printf '%s\n' "$eps" | grep -qF "$(pub node-c)	[$E2E_V6NET::3]:$E2E_PORT" ||
    fail "node-a: wg show endpoints, want node-c at [$E2E_V6NET::3]:$E2E_PORT: $eps"
wg_in node-a show ddp0

step "down with the wrong --run-dir finds the daemon by its interface"
mkdir -p "$T/elsewhere"
rc=0; out=$(nx node-a timeout 20 "$DDPNET" down --run-dir "$T/elsewhere" 2>&1) || rc=$?
printf '%s\n' "$out"
[ "$rc" = 0 ] || fail "node-a: down with the wrong run directory exited $rc: $out"
grep -qF "no state file in $T/elsewhere; the daemon of ddp0 (pid " <<<"$out" &&
    grep -qF "runs with --run-dir $T/node-a/run: stopping it there" <<<"$out" ||
    fail "node-a: down did not say where the daemon's run directory is: $out"
wait_for 5 e2e_no_ddp0 node-a || fail "node-a: ddp0 still exists after down"
wait_for 5 e2e_no_daemon node-a || fail "node-a: the daemon still runs after down"
! grep -q ddpnet "$T/node-a/hosts" || fail "node-a: hosts block left: $(cat "$T/node-a/hosts")"
for f in ddp0.sock ddp0.state; do
    [ ! -e "$T/node-a/run/$f" ] || fail "node-a: $f left in its run directory"
done
rc=0; out=$(nx node-a timeout 20 "$DDPNET" down --run-dir "$T/elsewhere" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "ddp0 is not up (no interface, no state file at $T/elsewhere/ddp0.state)" <<<"$out" ||
    fail "node-a: a second down exited $rc: $out"
say "down found the daemon's run directory, cleaned all; then said there is nothing"

step "down"
for n in node-b node-c; do ddp_down "$n"; done
[ ! -e "$T/node-a/run/ddp0.sock" ] || fail "node-a: control socket left after down"
say "down left no ddp0, no hosts block, no daemon"
