#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prometheus metrics (issue 17): `metrics = overlay:PORT` in the cluster
# file serves the text format at http://OVERLAY-ADDRESS:PORT/metrics.
#  1. a and b up with metrics on; both expositions pass `promtool check
#     metrics` and carry the per-peer names WireGuard dashboards use;
#     a (2 shards) the engine lock's per-shard families, b (one loop) none;
#  2. a real Prometheus server (Debian's), in a's namespace, scrapes both
#     over the overlay every second;
#  3. iperf3 a -> b; a PromQL query over Prometheus' HTTP API gives the
#     bytes a sent to b during the run, which must be within 1% of what
#     iperf3 moved, counted as WireGuard counts it (each full TCP segment
#     of MSS bytes is one message: 16 B header + the inner packet, padded
#     to 16, + 16 B tag);
#  4. HTTP: another path is 404, POST is 405; forty idle connections
#     neither stall the tunnel nor keep a scrape out;
#  5. refused at `up`, with what to do: an address outside loopback and the
#     overlay without metrics-public = yes, and another node's overlay
#     address; metrics-public = yes on the underlay is served.
#
#      node-a .1  ----  hub  ----  node-b .2      192.168.241.0/24
#      10.77.0.1                   10.77.0.2      (ddp0)
#      prometheus on 127.0.0.1:9090 (in node-a)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init metrics ping iperf3 ss prometheus promtool

MPORT=9586
declare -A ADDR=([node-a]=10.77.0.1 [node-b]=10.77.0.2)

step "namespaces, keys, a cluster file with metrics = overlay:$MPORT"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
for n in node-a node-b; do e2e_key "$n"; done
write_cluster() {   # write_cluster FILE [CLUSTER-LINES...]
    local f=$1; shift
    cluster_begin "$f" "$@"
    cluster_node "$f" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
    cluster_node "$f" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
}
write_cluster "$T/cluster.conf" "metrics = overlay:$MPORT"
# a with two shards, b with one loop: the engine lock's families (with
# shards only) on a, none on b.
DDPNET_SHARDS=2 ddp_up node-a
DDPNET_SHARDS=1 ddp_up node-b
ping_ok node-a 10.77.0.2

# fetch NODE URL [METHOD]: prints "STATUS" then the body; never fails itself.
fetch() {
    nx "$1" "$PY" - "$2" "${3:-GET}" <<'EOF'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], method=sys.argv[2])
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        print(r.status); print(r.headers.get("Content-Type")); sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code); print(e.headers.get("Content-Type")); sys.stdout.write(e.read().decode())
except Exception as e:
    print("error"); print(e)
EOF
}

step "the expositions: promtool, the WireGuard dashboards' names"
for n in node-a node-b; do
    fetch node-a "http://${ADDR[$n]}:$MPORT/metrics" >"$T/$n.metrics"
    [ "$(sed -n 1p "$T/$n.metrics")" = 200 ] || fail "GET /metrics on $n: $(head -n 3 "$T/$n.metrics")"
    case "$(sed -n 2p "$T/$n.metrics")" in
        "text/plain; version=0.0.4"*) ;;
        *) fail "GET /metrics on $n: content type '$(sed -n 2p "$T/$n.metrics")'" ;;
    esac
    sed -n '3,$p' "$T/$n.metrics" >"$T/$n.prom"
    promtool check metrics <"$T/$n.prom" >"$T/$n.lint" 2>&1 ||
        fail "promtool check metrics on $n's output: $(cat "$T/$n.lint")"
    other=node-b; [ "$n" = node-a ] || other=node-a
    for m in wireguard_sent_bytes_total wireguard_received_bytes_total \
             wireguard_latest_handshake_seconds ddpnet_peer_rtt_seconds ddpnet_peer_path \
             ddpnet_peer_handshakes_sent_total ddpnet_peer_handshakes_completed_total; do
        grep -q "^$m{interface=\"ddp0\",public_key=\"$(pub $other)\",allowed_ips=\"${ADDR[$other]}/32\",friendly_name=\"$other\"" \
            "$T/$n.prom" || fail "$n: no $m for $other: $(grep "^$m" "$T/$n.prom")"
    done
    for r in replay bad_source no_session rate_limited pool_full; do
        grep -q "^ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"$r\"} [0-9]" "$T/$n.prom" ||
            fail "$n: no ddpnet_packets_dropped_total for reason $r"
    done
    grep -q '^ddpnet_buffers_in_use{interface="ddp0"} [0-9]' "$T/$n.prom" || fail "$n: no ddpnet_buffers_in_use"
    grep -q "^ddpnet_peer_path{.*friendly_name=\"$other\",path=\"direct\",via=\"\"} 1" "$T/$n.prom" ||
        fail "$n: the path to $other is not direct: $(grep '^ddpnet_peer_path' "$T/$n.prom")"
done
for m in ddpnet_engine_lock_held_seconds_total ddpnet_engine_lock_wait_seconds_total \
         ddpnet_shard_busy_seconds_total ddpnet_engine_lock_taken_total \
         ddpnet_engine_lock_contended_total ddpnet_engine_lock_jobs_total; do
    for k in 0 1; do
        grep -q "^$m{interface=\"ddp0\",shard=\"$k\"} [0-9]" "$T/node-a.prom" ||
            fail "node-a (2 shards): no $m for shard $k: $(grep "^$m" "$T/node-a.prom")"
    done
    ! grep -q "^$m" "$T/node-b.prom" || fail "node-b (one loop, no lock) has $m"
done
awk '/^ddpnet_engine_lock_held_seconds_total/ { held += $2 } /^ddpnet_shard_busy_seconds_total/ { busy += $2 }
     END { exit !(held > 0 && busy >= held) }' "$T/node-a.prom" ||
    fail "node-a: the lock held no time, or more than the shards were busy: $(grep -E '^ddpnet_(engine_lock_held|shard_busy)' "$T/node-a.prom")"
say "both expositions pass promtool ($(wc -l <"$T/node-a.prom") lines from a)"

step "Prometheus scrapes both nodes over the overlay"
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: ddpnet
    static_configs:
      - targets: ['10.77.0.1:$MPORT', '10.77.0.2:$MPORT']
EOF
chmod 644 "$T/prometheus.yml"
mkdir -p "$T/tsdb"
nx_bg node-a prometheus timeout 600 prometheus --config.file="$T/prometheus.yml" \
    --storage.tsdb.path="$T/tsdb" --web.listen-address=127.0.0.1:9090
# query EXPR: the value of an instant PromQL query with one result, or "".
query() {
    nx node-a "$PY" - "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:9090/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[1]})
try:
    d = json.load(urllib.request.urlopen(url, timeout=5))
    r = d["data"]["result"]
    print(r[0]["value"][1] if d["status"] == "success" and len(r) == 1 else "")
except Exception:
    print("")
EOF
}
both_up() { [ "$(query 'sum(up{job="ddpnet"})')" = 2 ]; }
wait_for 60 both_up || fail "Prometheus did not scrape both nodes within 60 s: $(tail -n 20 "$T/node-a/prometheus.out")"
say "Prometheus reports up = 1 for both nodes"

step "iperf3 a -> b, and the bytes Prometheus saw a send to b"
SENT='wireguard_sent_bytes_total{instance="10.77.0.1:'$MPORT'",friendly_name="node-b"}'
# latest_scrape: the sample's timestamp, so that "before" and "after" are
# samples taken after the state they describe.
scrape_time() { query "timestamp($SENT)"; }
wait_scrape_after() {   # wait_scrape_after UNIX-TIME
    local t; t=$(scrape_time); [ -n "$t" ] && "$PY" -c "import sys; sys.exit(0 if float('$t') > $1 else 1)"
}
now=$(date +%s.%N)
wait_for 10 wait_scrape_after "$now" || fail "no fresh scrape of node-a"
before=$(query "$SENT")
nx_bg node-b iperf3-server timeout 60 iperf3 -s -1 -B 10.77.0.2 -p 5201
wait_for 10 e2e_listening node-b 5201 || fail "iperf3 server did not start"
nx node-a timeout 40 iperf3 -c 10.77.0.2 -p 5201 -t 3 -J >"$T/iperf3.json" 2>&1 ||
    fail "iperf3 a -> b: $(tail -n 20 "$T/iperf3.json")"
now=$(date +%s.%N)
wait_for 10 wait_scrape_after "$now" || fail "no scrape of node-a after iperf3"
after=$(query "$SENT")
read -r moved mss < <("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(int(d["end"]["sum_sent"]["bytes"]), int(d["start"]["tcp_mss_default"]))' "$T/iperf3.json")
"$PY" - "$before" "$after" "$moved" "$mss" <<'EOF' || fail "Prometheus and iperf3 disagree (see above)"
import math, sys
before, after, moved, mss = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
inner = mss + 20 + 32                      # IPv4 + TCP with timestamps
message = 16 + 16 * math.ceil(inner / 16) + 16
expected = moved / mss * message
seen = after - before
off = abs(seen - expected) / expected
print(f"metrics: iperf3 moved {moved} B (MSS {mss}); as WireGuard counts it {expected:.0f} B; "
      f"Prometheus saw {seen:.0f} B sent to node-b: off by {off * 100:.2f}%")
sys.exit(0 if off < 0.01 else 1)
EOF

step "HTTP: wrong path, wrong method, idle connections"
out=$(fetch node-a "http://10.77.0.1:$MPORT/nothing")
[ "$(sed -n 1p <<<"$out")" = 404 ] || fail "GET /nothing: $(head -n 3 <<<"$out")"
out=$(fetch node-a "http://10.77.0.1:$MPORT/metrics" POST)
[ "$(sed -n 1p <<<"$out")" = 405 ] || fail "POST /metrics: $(head -n 3 <<<"$out")"
nx_bg node-b idlers timeout 30 "$PY" -c '
import socket, time
s = []
for i in range(40):
    try:
        c = socket.create_connection(("10.77.0.1", '"$MPORT"'), timeout=2); s.append(c)
    except OSError:
        pass
print(len(s), "connected", flush=True)
time.sleep(20)'
sleep 1
ping_ok node-a 10.77.0.2
ddp_status node-a >/dev/null || fail "status on a did not answer with idle metrics clients"
iperf_ok node-b 10.77.0.2 node-a
# Each connection is hung up on after 10 s of silence: then a scrape gets in again.
scrape_ok() { [ "$(fetch node-a "http://10.77.0.1:$MPORT/metrics" | sed -n 1p)" = 200 ]; }
wait_for 20 scrape_ok || fail "no scrape answered after the idle connections"
say "idle connections: the tunnel kept working, and scrapes came back"

step "refused at up: public address, another node's overlay address"
nx node-a "$DDPNET" down --run-dir "$T/node-a/run" >/dev/null
write_cluster "$T/public.conf" "metrics = $E2E_V4NET.1:$MPORT"
if nx node-a timeout 30 "$DDPNET" up -c "$T/public.conf" -k "$T/node-a/key" \
        --run-dir "$T/node-a/run" --hosts-file "$T/node-a/hosts" >"$T/up.out" 2>&1; then
    fail "up with metrics on the underlay, without metrics-public, succeeded"
fi
grep -q "metrics-public = yes" "$T/up.out" || fail "unclear refusal: $(cat "$T/up.out")"
say "refused: $(head -n 1 "$T/up.out")"
write_cluster "$T/other.conf" "metrics = 10.77.0.2:$MPORT"
if nx node-a timeout 30 "$DDPNET" up -c "$T/other.conf" -k "$T/node-a/key" \
        --run-dir "$T/node-a/run" --hosts-file "$T/node-a/hosts" >"$T/up.out" 2>&1; then
    fail "up with metrics on node-b's overlay address, on node-a, succeeded"
fi
grep -q "overlay:$MPORT" "$T/up.out" || fail "unclear refusal: $(cat "$T/up.out")"
e2e_no_ddp0 node-a || fail "a refused up left ddp0 behind"
say "refused: $(head -n 1 "$T/up.out")"
write_cluster "$T/public.conf" "metrics = $E2E_V4NET.1:$MPORT" "metrics-public = yes"
ddp_up node-a "$T/public.conf"
out=$(fetch node-b "http://$E2E_V4NET.1:$MPORT/metrics")
[ "$(sed -n 1p <<<"$out")" = 200 ] || fail "metrics-public on the underlay: $(head -n 3 <<<"$out")"
say "metrics-public = yes: served on the underlay"
