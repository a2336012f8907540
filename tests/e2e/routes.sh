#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# Routes to what is not in the overlay (issue 60). An on-prem room: a
# storage host `nas` (192.168.50.10) that runs no ddpnet, serving a file
# over HTTP and an iperf3 server, behind the gateway node `gw`, which the
# cluster file grants 192.168.50.0/24. Two cloud nodes, c1 and c2, each
# in a VPC behind its own NAT (cone gateways r1, r2: lib.sh's e2e_router);
# the file gives them no endpoint, discovery finds them through gw.
#  1. up: c1 and c2 have the kernel route 192.168.50.0/24 dev ddp0; gw
#     turned forwarding on for ddp0 and its room link and made its nft
#     table ddpnet-ddp0 (masquerade: nas has no route back);
#  2. c1 and c2 read the file from nas over ddp0, by its name
#     (route-names = nas.cluster=192.168.50.10 under gw);
#  2b. status lists each prefix and its carrier (table and --json);
#     doctor checks forwarding and the nft table on gw and the kernel
#     route on c1, and says what is wrong when forwarding is off on gw's
#     room link or c1's route is gone;
#  3. c2, granted nothing, sends to c1 (across both NATs) from an address
#     of the prefix: c1 delivers nothing and counts it (bad_source);
#  4. iperf3 c1 -> nas through the route beside c1 -> gw on ddp0, under
#     flock /tmp/ddpnet-rate.lock; printed, through the route >= 0.8x;
#  5. a reload without the grant removes the route on c1 and c2, and
#     the file is out of reach;
#  6. gw down: its nft table is gone and forwarding is as it was.
#
#        namespace "hub": bridge br0, the internet ($E2E_INET.0.0/16)
#      +---------------------+---------------------+
#    gw .0.1              r1 .1.1 (NAT)         r2 .2.1 (NAT)
#    10.77.0.1            c1 $E2E_LAN.10        c2 $E2E_LAN.10
#    eth1 192.168.50.1    10.77.0.2             10.77.0.3
#      |
#    nas 192.168.50.10 (no ddpnet)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_init routes ping iperf3 ss nft curl flock

MPORT=9587
GW_EP=$E2E_INET.0.1:$E2E_PORT
step "an on-prem room (gw, nas) and two cloud nodes, each behind a NAT"
e2e_hub
for n in gw c1 c2; do e2e_key "$n"; done
e2e_public_node gw 0.1
e2e_router r1 1.1 cone
e2e_router r2 2.1 cone
e2e_lan_node r1 c1 10
e2e_lan_node r2 c2 10
e2e_node_alone nas
e2e_veth gw eth1 nas eth0
nx gw ip addr add 192.168.50.1/24 dev eth1
nx nas ip addr add 192.168.50.10/24 dev eth0
head -c 200000 /dev/urandom >"$T/nas/file"
(cd "$T/nas" && sha256sum file | cut -d' ' -f1) >"$T/file.sum"

write_cluster() {   # write_cluster FILE [ROUTES-LINE]
    cluster_begin "$1" "metrics = 127.0.0.1:$MPORT"
    cluster_node "$1" gw "$(pub gw)" 10.77.0.1 "$GW_EP"
    [ -z "${2:-}" ] || printf '%s\n' "$2" >>"$1"
    cluster_node "$1" c1 "$(pub c1)" 10.77.0.2
    cluster_node "$1" c2 "$(pub c2)" 10.77.0.3
}
write_cluster "$T/granted.conf" "routes = 192.168.50.0/24
route-names = nas.cluster=192.168.50.10"
write_cluster "$T/revoked.conf"
"$DDPNET" check -c "$T/granted.conf" >/dev/null || fail "check refused the granted file"

step "check refuses a grant that overlaps the network"
write_cluster "$T/bad.conf" "routes = 10.77.9.0/24"
if out=$("$DDPNET" check -c "$T/bad.conf" 2>&1); then fail "check took $T/bad.conf: $out"; fi
case "$out" in *"route 10.77.9.0/24 overlaps the overlay's network"*) ;;
    *) fail "check said: $out" ;; esac
say "check: $(printf '%s' "$out" | head -n 1)"

fwd_gw() { nx gw cat /proc/sys/net/ipv4/conf/ddp0/forwarding; }
eth1_before=$(nx gw cat /proc/sys/net/ipv4/conf/eth1/forwarding)
for n in gw c1 c2; do cp "$T/granted.conf" "$T/$n/cluster.conf"; ddp_up "$n" "$T/$n/cluster.conf"; done

step "1. the route on c1 and c2, forwarding and masquerade on gw"
for n in c1 c2; do
    r=$(nx "$n" ip -4 route show 192.168.50.0/24)
    case "$r" in *"dev ddp0"*) say "$n: $r" ;; *) fail "$n: no route via ddp0: '$r'" ;; esac
done
[ "$(fwd_gw)" = 1 ] || fail "gw: forwarding is not on for ddp0"
[ "$(nx gw cat /proc/sys/net/ipv4/conf/eth1/forwarding)" = 1 ] || fail "gw: forwarding off on eth1"
nx gw nft list table inet ddpnet-ddp0 >"$T/gw/nft.out" || fail "gw: no nft table ddpnet-ddp0"
grep -q masquerade "$T/gw/nft.out" || fail "gw: its table does not masquerade: $(cat "$T/gw/nft.out")"
[ -z "$(nx gw ip -4 route show 192.168.50.0/24 dev ddp0)" ] || fail "gw routes its own prefix into ddp0"

step "2. c1 and c2 read the file from nas over ddp0"
nx_bg nas http timeout 120 "$PY" -m http.server -d "$T/nas" -b 192.168.50.10 8080
wait_for 10 e2e_listening nas 8080 || fail "nas: no HTTP server"
for n in c1 c2; do
    wait_for 15 nx "$n" curl -sf -o /dev/null --max-time 2 http://nas.cluster:8080/file ||
        fail "$n: cannot read http://nas.cluster:8080/file: hosts: $(grep nas "$T/$n/hosts")"
    got=$(nx "$n" curl -sf --max-time 10 http://nas.cluster:8080/file | sha256sum | cut -d' ' -f1)
    [ "$got" = "$(cat "$T/file.sum")" ] || fail "$n: the file read differs"
    say "$n: $(grep -h 'nas.cluster' "$T/$n/hosts")  (its hosts block)"
    say "$n: curl http://nas.cluster:8080/file: 200000 bytes, sha256 ${got:0:16}... as on nas"
done

nx c1 curl -sf --max-time 5 "http://127.0.0.1:$MPORT/metrics" >"$T/c1/metrics.out" ||
    fail "c1: no metrics"
grep -E '^ddpnet_route_packets_total\{.*route="192.168.50.0/24",carrier="gw"\} [1-9]' \
    "$T/c1/metrics.out" >"$T/c1/route.metric" || fail "c1: no packets counted on the route"
say "c1: $(cat "$T/c1/route.metric")"

step "2b. status and doctor: each prefix, its carrier, the kernel's side"
st() { nx "$1" timeout 10 "$DDPNET" status --run-dir "$T/$1/run" "${@:2}"; }
doc() { nx "$1" timeout 60 "$DDPNET" doctor --run-dir "$T/$1/run" 2>&1; }
st c1 | grep -x 'routes: 192.168.50.0/24 via gw' >"$T/c1/st.route" || fail "c1 status: $(st c1)"
say "c1 status: $(cat "$T/c1/st.route")"
st gw | grep -x 'routes: 192.168.50.0/24 carried by this node (masquerade)' >"$T/gw/st.route" ||
    fail "gw status: $(st gw)"
say "gw status: $(cat "$T/gw/st.route")"
st c1 --json | "$PY" -c 'import json, sys
j = json.load(sys.stdin)
assert j["carriers"] == [{"prefix": "192.168.50.0/24", "carrier": "gw"}], j["carriers"]
assert [p["routes"] for p in j["peers"] if p["name"] == "gw"] == [["192.168.50.0/24"]], j["peers"]
assert j["routes"] == [] and j["masquerade"] is None, j' || fail "c1 status --json: $(st c1 --json)"
say "c1 status --json: carriers [{prefix 192.168.50.0/24, carrier gw}]"
out=$(doc gw) || fail "gw doctor failed: $out"
line=$(printf '%s\n' "$out" | grep '^route 192.168.50.0/24') || fail "gw doctor: $out"
[ "$line" = "route 192.168.50.0/24, carried by this node (masquerade): forwarding on (ddp0, eth1), masqueraded by nft table inet ddpnet-ddp0" ] ||
    fail "gw doctor said: $line"
say "gw doctor: $line"
out=$(doc c1) || fail "c1 doctor failed: $out"
line=$(printf '%s\n' "$out" | grep '^route 192.168.50.0/24') || fail "c1 doctor: $out"
[ "$line" = "route 192.168.50.0/24, carried by gw: kernel route via ddp0" ] || fail "c1 doctor said: $line"
say "c1 doctor: $line"
# What doctor says when the kernel's side is not in place.
nx gw sh -c 'echo 0 >/proc/sys/net/ipv4/conf/eth1/forwarding'
if out=$(doc gw); then fail "gw doctor passed with eth1 forwarding off: $out"; fi
line=$(printf '%s\n' "$out" | grep '^error: route 192.168.50.0/24') || fail "gw doctor: $out"
case "$line" in *"forwarding is off for its outgoing link eth1"*) ;; *) fail "gw doctor said: $line" ;; esac
say "gw doctor, eth1 forwarding off: $line"
nx gw sh -c 'echo 1 >/proc/sys/net/ipv4/conf/eth1/forwarding'
nx c1 ip route del 192.168.50.0/24 dev ddp0
if out=$(doc c1); then fail "c1 doctor passed without its route: $out"; fi
line=$(printf '%s\n' "$out" | grep '^error: route 192.168.50.0/24') || fail "c1 doctor: $out"
case "$line" in *"the kernel has no route to it"*|*"not ddp0"*) ;; *) fail "c1 doctor said: $line" ;; esac
say "c1 doctor, route deleted: $line"
say "c1 doctor verdict: $(printf '%s\n' "$out" | grep '^NOT READY')"
nx c1 ip route add 192.168.50.0/24 dev ddp0 proto static scope link

step "3. c2 claims the prefix without a grant: c1 refuses and counts it"
bad_source() {
    nx "$1" "$PY" - "http://127.0.0.1:$MPORT/metrics" <<'PYEOF'
import re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
m = re.search(r'^ddpnet_packets_dropped_total\{[^}]*reason="bad_source"[^}]*\} (\d+)$', text, re.M)
print(m.group(1) if m else "none")
PYEOF
}
ping_ok c2 10.77.0.2      # a session across both NATs first
before=$(bad_source c1)
nx c2 ip addr add 192.168.50.99/32 dev lo
rx0=$(rx_packets c1)
nx c2 ping -n -c 5 -i 0.2 -W 1 -I 192.168.50.99 10.77.0.2 >/dev/null 2>&1 || true
wait_for 5 test "$(bad_source c1)" -ge $((before + 5)) ||
    fail "c1: bad_source went $before -> $(bad_source c1), want +5"
say "c1: bad_source $before -> $(bad_source c1); ddp0 delivered $(( $(rx_packets c1) - rx0 )) packets meanwhile"
nx c2 ip addr del 192.168.50.99/32 dev lo

step "4. iperf3 through the route beside direct ddp0 (c1 -> gw)"
rate() {   # rate DEST: bits/s received, c1 -> DEST, 3 s
    nx c1 timeout 30 iperf3 -c "$1" -p 5201 -t 3 -J >"$T/c1/iperf-$1.json" 2>&1 ||
        fail "iperf3 c1 -> $1: $(tail -n 5 "$T/c1/iperf-$1.json")"
    "$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]))' \
        "$T/c1/iperf-$1.json"
}
# One rate measurement on the machine at a time (tests/README.md): the
# lock is waited for, at most RATE_LOCK_WAIT_S.
exec 9>/tmp/ddpnet-rate.lock
if flock -w "${RATE_LOCK_WAIT_S:-120}" 9; then
    # The servers start once the lock is held: their timeout runs from here.
    nx_bg nas iperf3 timeout 120 iperf3 -s -B 192.168.50.10 -p 5201
    nx_bg gw iperf3 timeout 120 iperf3 -s -B 10.77.0.1 -p 5201
    wait_for 10 e2e_listening nas 5201 || fail "nas: no iperf3 server"
    wait_for 10 e2e_listening gw 5201 || fail "gw: no iperf3 server"
    rates=""
    for i in 1 2 3; do rates+="$(rate 10.77.0.1) $(rate 192.168.50.10)"$'\n'; done
    flock -u 9
    # Each pair runs back to back: the median of the pairs' ratios is what
    # is judged (the machine's load drifts between pairs more than within).
    read -r direct routed ratio < <(printf '%s' "$rates" | "$PY" -c '
import sys, statistics
rows = [list(map(int, l.split())) for l in sys.stdin if l.strip()]
print(int(statistics.median(r[0] for r in rows)), int(statistics.median(r[1] for r in rows)),
      round(statistics.median(r[1] / r[0] for r in rows), 2))')
    printf '%s' "$rates" | while read -r d r; do
        say "run: direct $((d / 1000000)) Mbit/s, routed $((r / 1000000)) Mbit/s"
    done
    say "iperf3 c1 -> gw (direct ddp0): median $((direct / 1000000)) Mbit/s; c1 -> nas (through gw's route): median $((routed / 1000000)) Mbit/s; ratio of medians $("$PY" -c "print(round($routed / $direct, 2))"), median of the pairs' ratios $ratio"
    "$PY" -c "import sys; sys.exit(0 if $ratio >= 0.8 else 1)" ||
        fail "through the route below 0.8x of direct: median pair ratio $ratio"
else
    skip_step "rate: /tmp/ddpnet-rate.lock busy for ${RATE_LOCK_WAIT_S:-120} s"
fi
exec 9>&-

step "5. a reload without the grant removes the route everywhere"
for n in gw c1 c2; do
    cp "$T/revoked.conf" "$T/$n/cluster.conf"
    nx "$n" timeout 20 "$DDPNET" reload --run-dir "$T/$n/run" >"$T/$n/reload.out" 2>&1 ||
        fail "$n: reload failed: $(cat "$T/$n/reload.out")"
done
say "c1: reload printed: $(tr '\n' ';' <"$T/c1/reload.out")"
no_route() { [ -z "$(nx "$1" ip -4 route show 192.168.50.0/24)" ]; }
for n in c1 c2; do wait_for 5 no_route "$n" || fail "$n: the route stayed: $(nx "$n" ip -4 route show 192.168.50.0/24)"; done
if nx c1 curl -sf -o /dev/null --max-time 3 http://192.168.50.10:8080/file; then
    fail "c1 still reads from nas after the grant went"
fi
say "c1, c2: no route to 192.168.50.0/24; nas out of reach"

step "6. gw down: its nft table and forwarding undone"
ddp_down gw
if nx gw nft list table inet ddpnet-ddp0 >/dev/null 2>&1; then fail "gw: nft table left after down"; fi
[ "$(nx gw cat /proc/sys/net/ipv4/conf/eth1/forwarding)" = "$eth1_before" ] ||
    fail "gw: eth1 forwarding not put back to $eth1_before"
say "gw: table gone, eth1 forwarding back to $eth1_before"
say "ok"
