#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Machines keep their own hostnames (issue 16): three nodes named node-a,
# node-b, node-c in the cluster file whose machines are called
# ip-192-0-2-1.. (each known only to itself through a 127.0.1.1 line with
# its FQDN, as Debian and cloud-init write it). Each node tells its peers
# its machine's names inside the tunnel; checked:
#  1. on every node, every machine's hostname and FQDN resolve to that
#     node's overlay address; on a machine itself, its own hostname
#     resolves to its overlay address first (getent; `hostname -i` lists
#     it beside 127.0.1.1, which getaddrinfo sorts first);
#  2. torchrun (c10d) with a Gloo all_reduce across the three, with the
#     rendezvous endpoint given as node-a's node name, as node-a's machine
#     hostname, and as its overlay address: each passes;
#  3. a member cannot take another machine's name: a name two nodes claim
#     (node-c's machine also calls itself ip-192-0-2-2, node-b's name) is
#     written for neither: on node-a it stops resolving (waited for: that
#     is node-c's claim arriving), and the node names still resolve.
#
#                    namespace "hub": bridge br0
#         +---------------------+---------------------+
#   [node-a] .1            [node-b] .2            [node-c] .3
#   ip-192-0-2-1           ip-192-0-2-2           ip-192-0-2-3
#   ddp0 10.77.0.1         ddp0 10.77.0.2         ddp0 10.77.0.3
# Environment: TORCH_TIMEOUT (240), and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init torch_hostnames ping torchrun getent
"$PY" -c 'import torch, torch.distributed' 2>/dev/null || skip "$PY cannot import torch (apt-get install python3-torch)"
TORCH_TIMEOUT=${TORCH_TIMEOUT:-240}
NODES=(node-a node-b node-c)
declare -A ADDR=([node-a]=10.77.0.1 [node-b]=10.77.0.2 [node-c]=10.77.0.3)
declare -A HOST=([node-a]=ip-192-0-2-1 [node-b]=ip-192-0-2-2 [node-c]=ip-192-0-2-3)
FQDN_SUFFIX=ec2.internal

step "three machines with cloud hostnames"
e2e_hub
i=1
for n in "${NODES[@]}"; do
    e2e_node "$n" "$i" -
    e2e_key "$n"
    nx "$n" hostname "${HOST[$n]}"
    printf '127.0.1.1 %s.%s %s\n' "${HOST[$n]}" "$FQDN_SUFFIX" "${HOST[$n]}" >>"$T/$n/hosts"
    i=$((i + 1))
done
cluster_begin "$T/cluster.conf"
for n in "${NODES[@]}"; do
    cluster_node "$T/cluster.conf" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
done
for n in "${NODES[@]}"; do ddp_up "$n"; done
for a in "${NODES[@]}"; do for b in "${NODES[@]}"; do [ "$a" = "$b" ] || ping_ok "$a" "${ADDR[$b]}"; done; done

step "every machine's names resolve to its overlay address, everywhere"
resolves_to() {   # resolves_to NODE NAME ADDR: NAME's first address on NODE is ADDR
    local got
    got=$(nx "$1" getent hosts "$2") || return 1
    [ "${got%% *}" = "$3" ]
}
for n in "${NODES[@]}"; do
    for m in "${NODES[@]}"; do
        for name in "${HOST[$m]}" "${HOST[$m]}.$FQDN_SUFFIX"; do
            wait_for 10 resolves_to "$n" "$name" "${ADDR[$m]}" ||
                fail "$n: $name resolves to '$(nx "$n" getent hosts "$name")', want ${ADDR[$m]}; hosts file: $(cat "$T/$n/hosts")"
        done
    done
    # getaddrinfo sorts a loopback address first (RFC 6724), so
    # `hostname -i` lists 127.0.1.1 too; the overlay address must be there.
    case " $(nx "$n" hostname -i) " in *" ${ADDR[$n]} "*) ;;
        *) fail "$n: hostname -i gives '$(nx "$n" hostname -i)', without ${ADDR[$n]}" ;; esac
done
say "every hostname and FQDN resolves to its overlay address on every node (its own too, first); hostname -i on node-a: $(nx node-a hostname -i)"
say "node-a's hosts file: $(grep -v '^#' "$T/node-a/hosts" | tr '\n' ';')"

e2e_allreduce_script

run_torch() {   # run_torch ENDPOINT-HOST TAG
    local n rc failed="" line
    declare -A pid
    for n in "${NODES[@]}"; do
        nx_bg "$n" "torch-$2" timeout -k 10 "$TORCH_TIMEOUT" sh -c '
            eval "$("$1" env --run-dir "$2")" || exit 3
            export OMP_NUM_THREADS=1
            exec torchrun --nnodes 3 --nproc_per_node 1 --rdzv_backend=c10d \
                --rdzv_endpoint="$4:29500" --rdzv_id="ddpnet-$5" --max_restarts 0 \
                --redirects 2 --tee 1 "$3"' sh "$DDPNET" "$T/$n/run" "$T/allreduce.py" "$1" "$2"
        pid[$n]=$BG_PID
    done
    for n in "${NODES[@]}"; do
        rc=0; wait "${pid[$n]}" || rc=$?
        [ "$rc" -eq 0 ] || failed="$failed $n(exit $rc)"
    done
    [ -z "$failed" ] || fail "torchrun with --rdzv_endpoint=$1:29500 failed on:$failed; node-a: $(tail -n 15 "$T/node-a/torch-$2.out")"
    for n in "${NODES[@]}"; do
        line=$(grep -h 'allreduce host=' "$T/$n/torch-$2.out" | tail -n 1)
        case "$line" in *"host=${HOST[$n]} "*"world=3 sum=6 "*) ;;
            *) fail "$n: no all_reduce result with sum 6 (endpoint $1): $(tail -n 15 "$T/$n/torch-$2.out")" ;; esac
    done
    say "endpoint $1: all_reduce passed on the three ($(grep -h 'allreduce host=' "$T/node-b/torch-$2.out" | tail -n 1 | sed 's/.*\(master=.*\)/\1/'))"
}

step "torchrun, rendezvous at node-a's node name"
run_torch node-a name
step "torchrun, rendezvous at node-a's machine hostname"
run_torch "${HOST[node-a]}" hostname
step "torchrun, rendezvous at node-a's overlay address"
run_torch "${ADDR[node-a]}" address

step "a name two nodes claim resolves by neither claim"
# node-c's machine renamed to node-b's machine name, then node-c restarted:
# it now says it goes by ip-192-0-2-2 too.
ddp_down node-c
nx node-c hostname "${HOST[node-b]}"
ddp_up node-c
ping_ok node-a "${ADDR[node-c]}"
# Until node-c's names reach node-a, node-b's claim stands alone (step 1
# saw it resolve to node-b); once they do, the name is claimed twice and
# node-a writes it for neither: it must stop resolving at all. Waiting for
# that, not sleeping, is what shows node-c's claim arrived.
neither_claim() {
    ! grep -Eq "^[^#]*[[:space:]]${HOST[node-b]}([[:space:]]|\$)" "$T/node-a/hosts" &&
        ! nx node-a getent hosts "${HOST[node-b]}" >/dev/null
}
wait_for 20 neither_claim ||
    fail "node-a: ${HOST[node-b]}, claimed by node-b and node-c, still resolves to '$(nx node-a getent hosts "${HOST[node-b]}" || true)'; hosts file: $(cat "$T/node-a/hosts")"
for m in node-a node-b node-c; do
    resolves_to node-a "$m" "${ADDR[$m]}" ||
        fail "node-a: the node name $m no longer resolves to ${ADDR[$m]}: $(nx node-a getent hosts "$m" || true)"
done
say "node-a: ${HOST[node-b]} resolves by neither claim; the node names still resolve"
