#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sixteen nodes (issue 5): six public, five behind each of two NAT gateways
# whose VPCs use the same private range; only the public nodes have an
# endpoint in the cluster file. After `up` on all sixteen, every node pings
# every other by name over ddp0, all at once; the time from the last `up`
# to the full mesh is the figure (target 10 s, plus 4 times this run's
# baseline: e2e_mesh_limit_ms in lib.sh). Then: nodes in one VPC
# reach each other at their private addresses (local paths first), and
# nodes in different VPCs directly (the cone and eim gateways' mappings
# are endpoint-independent, so a hole can be punched), as status reports.
#
#                  namespace "hub": bridge br0, the "internet" 100.64.0.0/16
#     +-----------+---- ... ----+-----------------+-----------------+
#   p-pub-1     p-pub-2       p-pub-6           p-gw-a            p-gw-b
#  100.64.0.11  100.64.0.12   100.64.0.16      wan0 100.64.1.1   wan0 100.64.2.1
#   [pub-1]     [pub-2] ...   [pub-6]          [gw-a] NAT        [gw-b] NAT
#                                              lan0 172.31.1.1   lan0 172.31.1.1
#                                                |                 |
#                                  vpca-1..5 172.31.1.11-15   vpcb-1..5 172.31.1.11-15
# overlay 10.77.0.1-16 in that order (pub-1 .. pub-6, vpca-1 .. vpcb-5).
#
# The gateways (MESH16_NAT): cone (default) is plain masquerade: the first
# host keeps port 51820, the other four get random ports, and each keeps
# its mapping for every destination while one of its flows lives; eim
# maps each host's overlay port to a fixed port of its own (40000 + host);
# symmetric is masquerade random,fully-random (every pair across VPCs must
# then be relayed). Nothing unsolicited gets in from the internet; each
# node's firewall on eth0 admits established/related traffic and the
# overlay port only.
# Environment: MESH16_NAT, MESH16_TARGET_S (10), MESH16_DEADLINE_S (30),
# and lib.sh's (E2E_MESH_LOAD_FACTOR among them).
set -eu
. "$(dirname "$0")/lib.sh"

e2e_init mesh16 ping nft
MESH16_NAT=${MESH16_NAT:-cone}
MESH16_TARGET_S=${MESH16_TARGET_S:-10}
MESH16_DEADLINE_S=${MESH16_DEADLINE_S:-30}
case "$MESH16_NAT" in eim|cone|symmetric) ;; *) fail "MESH16_NAT=$MESH16_NAT: want eim, cone or symmetric" ;; esac
P=$E2E_PORT

PUBLIC=(pub-1 pub-2 pub-3 pub-4 pub-5 pub-6)
VPCA=(vpca-1 vpca-2 vpca-3 vpca-4 vpca-5)
VPCB=(vpcb-1 vpcb-2 vpcb-3 vpcb-4 vpcb-5)
NODES=("${PUBLIC[@]}" "${VPCA[@]}" "${VPCB[@]}")
declare -A ADDR=() LANHOST=()

step "namespaces: 6 public nodes, 2 VPCs of 5 behind $MESH16_NAT NAT gateways"
e2e_hub
e2e_router gw-a 1.1 "$MESH16_NAT"
e2e_router gw-b 2.1 "$MESH16_NAT"
i=0
for n in "${PUBLIC[@]}"; do i=$((i + 1)); e2e_public_node "$n" "0.$((10 + i))"; done
for vpc in a b; do
    i=0
    declare -n members=VPC${vpc^^}
    for n in "${members[@]}"; do
        i=$((i + 1))
        LANHOST[$n]=$((10 + i))
        e2e_lan_node "gw-$vpc" "$n" "${LANHOST[$n]}"
        [ "$MESH16_NAT" != eim ] || e2e_router_map "gw-$vpc" "${LANHOST[$n]}" "$P" $((40000 + 10 + i))
    done
    unset -n members
done
for n in "${NODES[@]}"; do e2e_firewall "$n" "$P"; done

step "keys and cluster file (endpoints for the public nodes only)"
cluster_begin "$T/cluster.conf"
i=0
for n in "${NODES[@]}"; do
    i=$((i + 1))
    ADDR[$n]=10.77.0.$i
    e2e_key "$n"
    ep=""
    case "$n" in pub-*) ep="$E2E_INET.0.$((10 + i)):$P" ;; esac
    cluster_node "$T/cluster.conf" "$n" "$(pub "$n")" "${ADDR[$n]}" "$ep"
done
out=$("$DDPNET" check -c "$T/cluster.conf" 2>&1) || fail "ddpnet check: $out"

step "up on all 16 (public first), then every node pings every other"
e2e_mesh_baseline "${NODES[@]}"
limit_ms=$(e2e_mesh_limit_ms "$MESH16_TARGET_S" "$MESH_BASE_MS")
limit="$(( limit_ms / 1000 )).$(printf '%03d' $(( limit_ms % 1000 ))) s"
t0=""
for n in "${NODES[@]}"; do
    t0=$(date +%s%N)
    ddp_up "$n"
done
e2e_mesh_time "$t0" "$MESH16_DEADLINE_S" "${NODES[@]}"
if [ -z "$MESH_MS" ]; then
    set -- $MESH_MISSING
    fail "no full mesh of 16 within $MESH16_DEADLINE_S s of the last up; $# of 240 pairs never answered: ${*:1:12}$([ $# -le 12 ] || echo " ...")"
fi
fig="$(( MESH_MS / 1000 )).$(printf '%03d' $(( MESH_MS % 1000 ))) s"
say "FIGURE: 16 nodes ($MESH16_NAT NAT), full mesh (240 pairs) $fig after the last up"
[ "$MESH_MS" -le "$limit_ms" ] ||
    fail "full mesh of 16 took $fig, limit $limit (target $MESH16_TARGET_S s + ${E2E_MESH_LOAD_FACTOR:-4} x this run's baseline, $MESH_BASE_MS ms)"
say "ok: within $limit (target $MESH16_TARGET_S s + ${E2E_MESH_LOAD_FACTOR:-4} x baseline $MESH_BASE_MS ms)"

step "paths: local inside a VPC, direct across VPCs"
# Local paths first: inside a VPC the peer's endpoint is its private address.
for vpc in VPCA VPCB; do
    declare -n members=$vpc
    for n in "${members[@]}"; do
        for m in "${members[@]}"; do
            [ "$n" != "$m" ] || continue
            got=$(e2e_peer_path "$n" "$m") || fail "$n: $got"
            read -r path via _ endpoint <<<"$got"
            [ "$endpoint" = "$E2E_LAN.${LANHOST[$m]}:$P" ] && [ "$path" = direct ] ||
                fail "$n -> $m (same VPC): path $path via $via endpoint $endpoint, want direct to $E2E_LAN.${LANHOST[$m]}:$P"
        done
    done
    unset -n members
done
say "ok: inside each VPC every peer is reached at its private address"
relayed=0 direct=0
for n in "${VPCA[@]}"; do
    for m in "${VPCB[@]}"; do
        got=$(e2e_peer_path "$n" "$m") || fail "$n: $got"
        read -r path via _ endpoint <<<"$got"
        case "$path" in direct) direct=$((direct + 1)) ;; *) relayed=$((relayed + 1)) ;; esac
        [ "$MESH16_NAT" != symmetric ] || continue
        [ "$path" = direct ] && [ "${endpoint%:*}" = "$E2E_INET.2.1" ] ||
            fail "$n -> $m (across VPCs, $MESH16_NAT NAT): path $path via $via endpoint $endpoint, want direct to $E2E_INET.2.1"
    done
done
say "across VPCs ($MESH16_NAT NAT): $direct of 25 pairs direct, $relayed relayed"
