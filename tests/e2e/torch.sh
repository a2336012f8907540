#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The real client: torchrun (c10d rendezvous by node name) and a Gloo
# all_reduce over ddp0 across three nodes, each with its own hostname and
# hosts file, exactly as a user would run it: `eval "$(ddpnet env)"`, then
# torchrun --rdzv_endpoint=node-a:29500. Each rank contributes rank+1; all
# must see 6.
#
#                    namespace "hub": bridge br0
#         +------------------+------------------+
#       p-node-a           p-node-b           p-node-c
#         |                  |                  |
#   192.168.241.1      192.168.241.2      192.168.241.3
#   [node-a]           [node-b]           [node-c]      hostname = node name
#   ddp0 10.77.0.1     ddp0 10.77.0.2     ddp0 10.77.0.3
#   rendezvous store on node-a:29500 (node-a resolves to 10.77.0.1 everywhere)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init torch ping torchrun getent
"$PY" -c 'import torch, torch.distributed' 2>/dev/null || skip "$PY cannot import torch (apt-get install python3-torch)"
TORCH_TIMEOUT=${TORCH_TIMEOUT:-240}

step "three nodes"
e2e_hub
NODES=(node-a node-b node-c)
i=1
for n in "${NODES[@]}"; do e2e_node "$n" "$i" -; e2e_key "$n"; i=$((i + 1)); done
cluster_begin "$T/cluster.conf"
i=1
for n in "${NODES[@]}"; do
    cluster_node "$T/cluster.conf" "$n" "$(pub "$n")" "10.77.0.$i" "$E2E_V4NET.$i:$E2E_PORT"
    i=$((i + 1))
done
for n in "${NODES[@]}"; do ddp_up "$n"; done
for n in "${NODES[@]}"; do
    [ "$(nx "$n" hostname)" = "$n" ] || fail "$n: hostname is $(nx "$n" hostname)"
    got=$(nx "$n" getent hosts node-a) || fail "$n: node-a does not resolve"
    [ "${got%% *}" = 10.77.0.1 ] || fail "$n: node-a resolves to $got"
done

step "ddpnet env"
envout=$(nx node-b "$DDPNET" env --run-dir "$T/node-b/run") || fail "ddpnet env failed: $envout"
printf '%s\n' "$envout"
for want in "GLOO_SOCKET_IFNAME=ddp0" "NCCL_SOCKET_IFNAME=ddp0"; do
    case "$envout" in *"export $want"*) ;; *) fail "ddpnet env lacks 'export $want': $envout" ;; esac
done
# The first node of the file, by name or by overlay address.
case "$envout" in *"export MASTER_ADDR=node-a"*|*"export MASTER_ADDR=10.77.0.1"*) ;;
    *) fail "ddpnet env: MASTER_ADDR is not node-a (10.77.0.1): $envout" ;; esac

e2e_allreduce_script

step "torchrun on three nodes (c10d rendezvous at node-a:29500, Gloo over ddp0)"
declare -A TPID
for n in "${NODES[@]}"; do
    nx_bg "$n" torchrun timeout -k 10 "$TORCH_TIMEOUT" sh -c '
        eval "$("$1" env --run-dir "$2")" || exit 3
        export OMP_NUM_THREADS=1
        exec torchrun --nnodes 3 --nproc_per_node 1 --rdzv_backend=c10d \
            --rdzv_endpoint=node-a:29500 --rdzv_id=ddpnet-e2e --max_restarts 0 \
            --redirects 2 --tee 1 "$3"' sh "$DDPNET" "$T/$n/run" "$T/allreduce.py"
    TPID[$n]=$BG_PID
done
failed=""
for n in "${NODES[@]}"; do
    rc=0; wait "${TPID[$n]}" || rc=$?
    [ "$rc" -eq 0 ] || failed="$failed $n(exit $rc)"
done
[ -z "$failed" ] || fail "torchrun failed on:$failed"
for n in "${NODES[@]}"; do
    line=$(grep -h 'allreduce host=' "$T/$n/torchrun.out" | tail -n 1)
    say "$n: ${line#*allreduce }"
    case "$line" in *"host=$n "*"world=3 sum=6 "*) ;; *) fail "$n: no all_reduce result with sum 6: $(tail -n 20 "$T/$n/torchrun.out")" ;; esac
done
