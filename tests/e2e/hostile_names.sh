#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A member whose machine calls itself what it is not (issue 27): node-c's
# machine takes, one restart at a time, the hostname pypi.org (a public
# name), the FQDN metadata.google.internal (the cloud's metadata server,
# which every node's hosts file gives 169.254.169.254), the hostname
# storage-1 (a name the other nodes' hosts files give 192.0.2.99) and the
# hostname ip6-localhost. Checked, on node-a and node-b, after each:
#  1. none of these names is in the ddpnet block or resolves to an
#     overlay address (getent);
#  2. the honest FQDN node-c's machine has in the same round
#     (cN.ec2.internal) does resolve to node-c, so node-c's names did
#     arrive and were judged (the check above cannot pass for want of
#     them);
#  3. node-b's honest machine hostname and FQDN (ip-192-0-2-2,
#     ip-192-0-2-2.ec2.internal) resolve to node-b on node-a (and on
#     node-c, first round), node-a's on node-b.
#
#                    namespace "hub": bridge br0
#         +---------------------+---------------------+
#   [node-a] .1            [node-b] .2            [node-c] .3
#   ip-192-0-2-1           ip-192-0-2-2           (changes: the hostile one)
#   ddp0 10.77.0.1         ddp0 10.77.0.2         ddp0 10.77.0.3
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init hostile_names ping getent
NODES=(node-a node-b node-c)
declare -A ADDR=([node-a]=10.77.0.1 [node-b]=10.77.0.2 [node-c]=10.77.0.3)
declare -A HOST=([node-a]=ip-192-0-2-1 [node-b]=ip-192-0-2-2)
SUFFIX=ec2.internal
# What every node's hosts file gives already (GCE writes the first line).
THEIRS=$'169.254.169.254 metadata.google.internal\n192.0.2.99 storage-1'

# c_machine HOSTNAME FQDN: node-c's machine as the resolver knows it.
c_machine() {
    nx node-c hostname "$1"
    printf '127.0.0.1 localhost\n127.0.1.1 %s %s\n' "$2" "$1" >"$T/node-c/hosts"
}

step "three machines; node-a and node-b honest"
e2e_hub
i=1
for n in "${NODES[@]}"; do
    e2e_node "$n" "$i" -
    e2e_key "$n"
    if [ "$n" != node-c ]; then
        nx "$n" hostname "${HOST[$n]}"
        printf '127.0.1.1 %s.%s %s\n%s\n' "${HOST[$n]}" "$SUFFIX" "${HOST[$n]}" "$THEIRS" >>"$T/$n/hosts"
    fi
    i=$((i + 1))
done
c_machine pypi.org c1.$SUFFIX
cluster_begin "$T/cluster.conf"
for n in "${NODES[@]}"; do
    cluster_node "$T/cluster.conf" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
done
for n in "${NODES[@]}"; do ddp_up "$n"; done
for a in "${NODES[@]}"; do for b in "${NODES[@]}"; do [ "$a" = "$b" ] || ping_ok "$a" "${ADDR[$b]}"; done; done

resolves_to() {   # resolves_to NODE NAME ADDR: NAME's first address on NODE is ADDR
    local got
    got=$(nx "$1" getent hosts "$2") || return 1
    [ "${got%% *}" = "$3" ]
}

# not_overlay NODE NAME: NAME is not in NODE's block and resolves to no
# overlay address there (or to nothing).
not_overlay() {
    local got block
    block=$(sed -n '/^# BEGIN ddpnet/,/^# END ddpnet/p' "$T/$1/hosts")
    if grep -qiwF -- "$2" <<<"$block"; then
        fail "$1: $2 is in the ddpnet block: $block"
    fi
    got=$(nx "$1" getent hosts "$2" || true)
    case "${got%% *}" in 10.77.*) fail "$1: $2 resolves to ${got%% *}, an overlay address: $got" ;; esac
    say "$1: $2 -> '${got:-nothing}'"
}

# honest OBSERVER...: node-b's machine names resolve to node-b on each
# observer, node-a's on node-b. (A node that restarts hears its peers'
# names with their next ENDPOINTS, which a quick restart does not hurry:
# node-c observes in the first round only.)
honest() {
    local n name
    for n in "$@"; do
        for name in "${HOST[node-b]}" "${HOST[node-b]}.$SUFFIX"; do
            wait_for 10 resolves_to "$n" "$name" "${ADDR[node-b]}" ||
                fail "$n: $name (node-b's machine) resolves to '$(nx "$n" getent hosts "$name")', want ${ADDR[node-b]}; hosts: $(cat "$T/$n/hosts")"
        done
    done
    for name in "${HOST[node-a]}" "${HOST[node-a]}.$SUFFIX"; do
        wait_for 10 resolves_to node-b "$name" "${ADDR[node-a]}" ||
            fail "node-b: $name (node-a's machine) resolves to '$(nx node-b getent hosts "$name")', want ${ADDR[node-a]}"
    done
    say "honest machine names still resolve to their overlay addresses"
}

# round OBSERVERS FQDN-OF-C HOSTILE-NAME...: node-c is up as c_machine
# left it.
round() {
    local observers=$1 fqdn=$2 n name; shift 2
    for n in node-a node-b; do
        wait_for 10 resolves_to "$n" "$fqdn" "${ADDR[node-c]}" ||
            fail "$n: node-c's honest FQDN $fqdn resolves to '$(nx "$n" getent hosts "$fqdn")', want ${ADDR[node-c]}; block: $(cat "$T/$n/hosts")"
    done
    sleep 2   # a writer pass or two more: what was refused stays refused
    for n in node-a node-b; do
        for name in "$@"; do not_overlay "$n" "$name"; done
    done
    # shellcheck disable=SC2086 # a list of nodes
    honest $observers
}

step "node-c's machine calls itself pypi.org (FQDN c1.$SUFFIX)"
round "node-a node-c" "c1.$SUFFIX" pypi.org

# restart_c HOSTNAME FQDN
restart_c() {
    ddp_down node-c
    c_machine "$1" "$2"
    ddp_up node-c
    ping_ok node-a "${ADDR[node-c]}"
}

step "node-c's machine has the FQDN metadata.google.internal (hostname c2)"
restart_c c2 metadata.google.internal
wait_for 10 resolves_to node-a c2 "${ADDR[node-c]}" || fail "node-a: c2 does not resolve to node-c"
round node-a c2 metadata.google.internal
for n in node-a node-b; do
    resolves_to "$n" metadata.google.internal 169.254.169.254 ||
        fail "$n: metadata.google.internal no longer resolves to 169.254.169.254"
done

step "node-c's machine calls itself storage-1, a name the others' hosts files give (FQDN c3.$SUFFIX)"
restart_c storage-1 "c3.$SUFFIX"
round node-a "c3.$SUFFIX" storage-1

step "node-c's machine calls itself ip6-localhost (FQDN c4.$SUFFIX)"
restart_c ip6-localhost "c4.$SUFFIX"
round node-a "c4.$SUFFIX" ip6-localhost
say "node-a's hosts file: $(grep -v '^#' "$T/node-a/hosts" | tr '\n' ';')"
