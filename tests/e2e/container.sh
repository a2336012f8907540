#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# e2e: lock deb
# The image of `make image` under podman, beside a node run from the
# package, one mesh (issue 47):
#
#   make image                     ddpnet:VERSION from build/ddpnet_*.deb
#   podman run node-a, node-b      each in its node's network namespace,
#                                  with only what docs/containers.md lists
#   node-c                         the package's own binary, no container
#
# then: the mesh by name (ping from each node, the names in the hosts
# file each daemon keeps: a container's is its node's file mounted over
# its /etc/hosts, as the host's would be), an iperf3 stream between the
# two containers and one to the package's node, the metrics of a
# container scraped over ddp0, the daemon in the container running as
# ddpnet with no capability and no_new_privs, `ddpnet status` and `wg
# show` from outside through the mounted run directory, and `podman
# stop` taking the node down cleanly (its hosts block and ddp0 gone).
# Then a revocation outlives the container (issue 55): node-d, joined
# with the authority's certificate, is revoked through node-a; node-a's
# container is removed and run again with the same state volume, with
# no other node up to tell it, and refuses node-d.
#
#   hub: br0 -- node-a .1 (podman), node-b .2 (podman), node-c .3 (package),
#               node-d .4 (package, a certificate; not in the file)
#        ddp0 10.77.0.1-3 (node-d's derived), metrics on overlay:9586
#
# The first run on a machine makes the image's Debian root (debootstrap,
# about 90 s, cached in build/image/cache); later runs reuse the image if
# the package did not change.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init container podman ping iperf3 ss debootstrap dpkg-deb

NODES=(node-a node-b node-c)
CONTAINERS=(node-a node-b)
declare -A V4=([node-a]=1 [node-b]=2 [node-c]=3)
MPORT=9586
IMAGE=ddpnet:$(cat "$E2E_ROOT/VERSION")
DDPNET_UID=64900   # the image's ddpnet user (docs/containers.md says why)
t_start=$SECONDS

# What this host needs of podman beyond docs/containers.md's flags:
# - a hybrid cgroup layout (v1, and a v2 tree holding controllers):
#   crun refuses it; runc runs there.
# - the limits: podman asks the runtime for its own defaults (a million
#   open files), which a runtime without CAP_SYS_RESOURCE cannot raise
#   past podman's own hard limits; these stay under any host's.
HOST_OPTS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
    command -v runc >/dev/null || skip "hybrid cgroups (crun refuses them) and no runc (make deps-test)"
    HOST_OPTS+=(--runtime runc)
fi

ctr() { echo "$E2E_PFX$1"; }
# lib.sh's dump and clean-up, each with the containers added: their logs
# on failure, and their removal before the namespaces go.
eval "lib_$(declare -f e2e_dump_logs)"
eval "lib_$(declare -f e2e_cleanup)"
e2e_dump_logs() {
    local n
    lib_e2e_dump_logs
    for n in "${CONTAINERS[@]}"; do
        podman container exists "$(ctr "$n")" 2>/dev/null || continue
        echo "--- $n: podman logs (last 20 lines)"
        timeout 10 podman logs --tail 20 "$(ctr "$n")" 2>&1
    done
}
e2e_cleanup() {
    local n
    for n in "${CONTAINERS[@]}"; do
        timeout 20 podman rm -f -t 2 "$(ctr "$n")" >/dev/null 2>&1
        timeout 20 podman volume rm -f "$(ctr "$n")-state" >/dev/null 2>&1
    done
    lib_e2e_cleanup
}

step "make image"
t0=$SECONDS
if ! make -C "$E2E_ROOT" --no-print-directory image >"$T/image.out" 2>&1; then
    grep -q 'cannot reach the Debian archive' "$T/image.out" && skip "$(grep 'make image:' "$T/image.out")"
    fail "make image: $(tail -n 5 "$T/image.out")"
fi
say "$(tail -n 1 "$T/image.out") in $((SECONDS - t0)) s"
DEB=$E2E_ROOT/$(sed -n 's/^built \(build\/.*\.deb\)$/\1/p' "$T/image.out")
[ -f "$DEB" ] || fail "make image built no package: $(cat "$T/image.out")"
# node-c runs the package's binary, unpacked (nothing installed on this host).
dpkg-deb -x "$DEB" "$T/pkg"
DDPNET=$T/pkg/usr/bin/ddpnet
# The profile the image carries, taken out as docs/containers.md says.
timeout 60 podman run --rm --network none "${HOST_OPTS[@]}" --entrypoint cat "$IMAGE" \
    /usr/share/ddpnet/seccomp.json >"$T/seccomp.json" 2>"$T/seccomp.err" ||
    fail "podman run $IMAGE: $(cat "$T/seccomp.err")"
t_image=$SECONDS

step "three nodes, a cluster file with metrics = overlay:$MPORT and an authority"
e2e_hub
for n in "${NODES[@]}"; do e2e_node "$n" "${V4[$n]}" -; e2e_key "$n"; done
e2e_node node-d 4 -
e2e_key node-d
"$DDPNET" authority init -o "$T/authority.key" >/dev/null 2>&1 || fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority.key")
cluster_begin "$T/cluster.conf" "metrics = overlay:$MPORT" "authority = $AUTH"
for n in "${NODES[@]}"; do
    cluster_node "$T/cluster.conf" "$n" "$(pub "$n")" "10.77.0.${V4[$n]}" "$E2E_V4NET.${V4[$n]}:$E2E_PORT"
done
chmod 644 "$T/cluster.conf"
"$DDPNET" authority sign -a "$T/authority.key" --name node-d --public-key "$(pub node-d)" \
    --valid 1h >"$T/node-d/key.cert" || fail "ddpnet authority sign (node-d) failed"

step "podman run node-a and node-b; node-c from the package"
# Each container: its node's network namespace; the capability and the
# device; the key and the cluster file read-only; its state volume (the
# revocations it took); the node's hosts file (the names block), run
# directory (status, wg, ddpnet env from outside) and resolver. Nothing
# else: docs/containers.md says why each.
run_container() {
    local n=$1
    timeout 60 podman run -d --name "$(ctr "$n")" --hostname "$n" \
        --network "ns:/run/netns/$E2E_PFX$n" \
        --cap-drop ALL --cap-add NET_ADMIN,SETUID,SETGID \
        --device /dev/net/tun \
        --security-opt no-new-privileges \
        --security-opt "seccomp=$T/seccomp.json" \
        -v "$T/$n/key:/etc/ddpnet/ddp0.key:ro" \
        -v "$T/cluster.conf:/etc/ddpnet/ddp0.conf:ro" \
        -v "$(ctr "$n")-state:/var/lib/ddpnet" \
        -v "$T/$n/hosts:/etc/hosts" \
        -v "$T/$n/run:/run/wireguard" \
        -v "$T/$n/resolv.conf:/etc/resolv.conf:ro" \
        "${HOST_OPTS[@]}" "$IMAGE" >"$T/$n/podman.out" 2>&1 ||
        fail "podman run $n: $(cat "$T/$n/podman.out")"
}
for n in "${CONTAINERS[@]}"; do
    timeout 20 podman volume rm -f "$(ctr "$n")-state" >/dev/null 2>&1 || true
    run_container "$n"
    E2E_UP+=("$n")
done
ddp_up node-c
for n in "${CONTAINERS[@]}"; do
    wait_for 30 ddp_status "$n" ||
        fail "$n: the container's daemon did not answer within 30 s: $(podman logs "$(ctr "$n")" 2>&1 | tail -n 5)"
done
t_up=$SECONDS

step "one mesh, by name"
ping_ok node-a node-b
ping_ok node-a node-c
ping_ok node-b node-c
ping_ok node-c node-a
for n in "${NODES[@]}"; do
    others=()
    for m in "${NODES[@]}"; do [ "$m" = "$n" ] || others+=("$m"); done
    status_handshakes_ok "$n" "${others[@]}"
done
# Inside the container the same names resolve (its /etc/hosts is the node's).
out=$(timeout 20 podman exec "$(ctr node-a)" getent hosts node-c) || fail "node-a's container does not resolve node-c"
[ "$(awk '{ print $1 }' <<<"$out")" = 10.77.0.3 ] || fail "node-a's container resolves node-c to '$out'"
wg_in node-a show ddp0 >"$T/wg.out" 2>&1 || fail "wg show in node-a: $(cat "$T/wg.out")"
grep -q "peer: $(pub node-b)" "$T/wg.out" || fail "wg show in node-a names no node-b: $(cat "$T/wg.out")"
# What a training job on the host runs, through the mounted run directory.
nx node-a "$DDPNET" env --run-dir "$T/node-a/run" >"$T/env.out" 2>&1 ||
    fail "ddpnet env in node-a: $(cat "$T/env.out")"
grep -q 'NCCL_SOCKET_IFNAME=.*ddp0' "$T/env.out" || fail "ddpnet env in node-a: $(cat "$T/env.out")"
# A reload as an operator types it: inside the container, as root there.
timeout 20 podman exec "$(ctr node-a)" ddpnet reload >"$T/reload.out" 2>&1 ||
    fail "podman exec ddpnet reload in node-a: $(cat "$T/reload.out")"
say "three nodes ping each other by name; wg show, ddpnet status and env reach the" \
    "containers' daemons from outside, podman exec ddpnet reload from inside"

step "iperf3: container to container, package to container"
iperf_ok node-b node-b node-a
iperf_ok node-a node-a node-c

step "metrics of a container's daemon, over ddp0"
nx node-c "$PY" - "http://node-a:$MPORT/metrics" >"$T/metrics.out" 2>&1 <<'EOF' ||
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    sys.stdout.write(r.read().decode())
EOF
    fail "GET http://node-a:$MPORT/metrics from node-c: $(tail -n 3 "$T/metrics.out")"
for peer in node-b node-c; do
    grep -F "wireguard_sent_bytes_total{interface=\"ddp0\",public_key=\"$(pub $peer)\"," "$T/metrics.out" |
        grep -Eq "friendly_name=\"$peer\"\} [1-9]" || fail "node-a's metrics: no bytes sent to $peer: $(grep '^wireguard_sent' "$T/metrics.out")"
done
say "node-a's metrics answer node-c by name: $(grep -c '^[a-z]' "$T/metrics.out") samples"

step "the container's daemon: user ddpnet, no capability, no_new_privs"
# (Its parent, the entrypoint, stays root with the three capabilities to
# run `ddpnet down` after it, as systemd does for the unit; under
# no_new_privs too.)
for n in "${CONTAINERS[@]}"; do
    ppid=$(timeout 20 podman inspect -f '{{.State.Pid}}' "$(ctr "$n")")
    pid=$(pgrep -P "$ppid" -x ddpnet) || fail "$n: no ddpnet process under the entrypoint (pid $ppid)"
    grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$ppid/status" || fail "$n: the entrypoint runs without no_new_privs"
    uid=$(timeout 20 podman exec "$(ctr "$n")" id -u ddpnet)
    [ "$uid" = "$DDPNET_UID" ] || fail "$n: the image's ddpnet user is uid $uid, not $DDPNET_UID"
    bad="" tasks=0
    for task in /proc/"$pid"/task/*; do
        tasks=$((tasks + 1))
        bad+=$(awk -v u="$uid" '
            /^Name:/ { name = $2 }
            /^Uid:/ && ($2 != u || $3 != u || $4 != u || $5 != u) { printf " %s(uid %s)", name, $2 }
            /^Cap(Inh|Prm|Eff|Amb):/ && $2 !~ /^0+$/ { printf " %s(%s %s)", name, $1, $2 }
            /^NoNewPrivs:/ && $2 != 1 { printf " %s(NoNewPrivs %s)", name, $2 }' "$task/status")
    done
    [ -z "$bad" ] || fail "$n: the daemon's threads hold more than they should:$bad"
    say "$n: the daemon (pid $pid): $tasks threads as uid $uid, no capabilities, no_new_privs"
done

step "podman stop node-b: the node goes down cleanly"
# Within podman's 10 s: SIGKILL after them would leave the files behind.
t0=$(date +%s%N)
timeout 30 podman stop -t 10 "$(ctr node-b)" >/dev/null || fail "podman stop node-b failed"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 8000 ] || fail "node-b: podman stop took $ms ms: the daemon did not take its SIGTERM"
grep -q ddpnet "$T/node-b/hosts" && fail "node-b: hosts block left after podman stop: $(cat "$T/node-b/hosts")"
e2e_no_ddp0 node-b || fail "node-b: ddp0 still there after podman stop"
left=$(ls -A "$T/node-b/run")
[ -z "$left" ] || fail "node-b: files left in the run directory after podman stop: $left"
exit_code=$(timeout 20 podman inspect -f '{{.State.ExitCode}}' "$(ctr node-b)")
[ "$exit_code" = 0 ] || fail "node-b: the daemon exited $exit_code on SIGTERM: $(podman logs "$(ctr node-b)" 2>&1 | tail -n 5)"
say "node-b stopped in $ms ms: ddp0, the hosts block and the run files gone"
ping_ok node-a node-c

step "a revocation outlives node-a's container (its state volume)"
# node-d joins with the authority's certificate (not in the file).
ddp_up node-d
D=$(nx node-d ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$D" ] || fail "node-d has no address on ddp0"
wait_for 30 nx node-a ping -n -c 1 -W 1 "$D" || fail "node-a does not reach node-d ($D)"
# gone_from NODE ADDR: NODE neither reaches ADDR nor lists it.
gone_from() {
    ! nx "$1" ping -n -c 1 -W 1 "$2" >/dev/null 2>&1 && ! ddp_status "$1" | grep -q " $2 "
}
"$DDPNET" authority revoke -a "$T/authority.key" --public-key "$(pub node-d)" >"$T/d.revoke" ||
    fail "ddpnet authority revoke --public-key failed"
out=$(nx node-a "$DDPNET" revoke --run-dir "$T/node-a/run" "$T/d.revoke" 2>&1) ||
    fail "ddpnet revoke through node-a's run directory failed: $out"
wait_for 10 gone_from node-a "$D" || fail "node-d not gone from node-a after its revocation"
# No one left to tell node-a again: node-c down, node-d up anew with an
# empty state directory (it keeps trying node-a with its certificate).
ddp_down node-c
ddp_down node-d
rm -rf "$T/node-d/state"
timeout 30 podman stop -t 10 "$(ctr node-a)" >/dev/null || fail "podman stop node-a failed"
timeout 30 podman rm "$(ctr node-a)" >/dev/null || fail "podman rm node-a failed"
ddp_up node-d
run_container node-a
wait_for 30 ddp_status node-a ||
    fail "node-a, re-created: no answer within 30 s: $(podman logs "$(ctr node-a)" 2>&1 | tail -n 5)"
podman logs "$(ctr node-a)" 2>&1 | grep -q 'authority: 1 revocation kept from before' ||
    fail "node-a, re-created, read no revocation back: $(podman logs "$(ctr node-a)" 2>&1 | tail -n 5)"
# node-d reaches node-a again (a session on probation), and shows its
# certificate at once: taken within a second where nothing revokes it.
hs_with_a() { wg_in node-d show ddp0 latest-handshakes | awk -v k="$(pub node-a)" '$1 == k && $2 > 0' | grep -q .; }
wait_for 30 hs_with_a || fail "node-d made no session with the re-created node-a"
sleep 2
gone_from node-a "$D" || fail "node-a, re-created with its state volume, took node-d back"
say "node-a, re-created, kept node-d's revocation and refused it"

step "cost"
say "image: $((t_image - t_start)) s; up: $((t_up - t_image)) s; checks: $((SECONDS - t_up)) s;" \
    "total $((SECONDS - t_start)) s"
