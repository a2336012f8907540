/* SPDX-License-Identifier: MIT */
/* Between the parts of the control socket: request framing (control.c),
 * the `get` responses (control_get.c), `set` (control_set.c), and the keys
 * of the `get=ddpnet` extension, which control_get.c writes and the CLI
 * (cli_status.c) reads, with the CLI's pure formatters of such a response,
 * kept apart from the socket so they are tested without a daemon. */
#ifndef DDPNET_CONTROL_INT_H
#define DDPNET_CONTROL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct device;

/* Keys of a get=ddpnet response beyond those of uapi.h. Interface section:
 * interface, self, address, prefix, listen_port, master, master_address,
 * mtu; then one section per peer, opened by public_key: name, address,
 * endpoint (the one in use: the relay's when relayed; when known), path
 * ("direct" or "relay", when there is one; "waiting" before the first
 * handshake completes, "unreachable" after one gave up), via (the relay's name, when
 * relayed), rtt_us (the latest round trip in microseconds, when measured),
 * last_handshake_time_sec/_nsec, rx_bytes, tx_bytes, rx_rate, tx_rate
 * (bytes per second); then errno. */
#define CONTROL_KEY_INTERFACE       "interface"
#define CONTROL_KEY_SELF            "self"
#define CONTROL_KEY_ADDRESS         "address"
#define CONTROL_KEY_PREFIX          "prefix"
#define CONTROL_KEY_MASTER          "master"
#define CONTROL_KEY_MASTER_ADDRESS  "master_address"
#define CONTROL_KEY_MTU             "mtu"
#define CONTROL_KEY_NAME            "name"
#define CONTROL_KEY_RX_RATE         "rx_rate"
#define CONTROL_KEY_TX_RATE         "tx_rate"
#define CONTROL_KEY_PATH            "path"
#define CONTROL_KEY_VIA             "via"
#define CONTROL_KEY_RTT_US          "rtt_us"
#define CONTROL_KEY_PATH_MTU        "path_mtu"
/* A direct peer's underlay flows (path_flows), where this node has more
 * than one (DDPNET_FLOWS). */
#define CONTROL_KEY_FLOWS           "flows"
/* With an authority: when the node's certificate stops counting (unix
 * seconds); for this node after the interface's keys, for a peer in its
 * section. Absent: no certificate (a node of the file). */
#define CONTROL_KEY_CERT_EXPIRES    "cert_expires"
/* Interface section, with an authority: a peer removed lately because its
 * certificate ended, "UNIX NAME", newest last (membership/renewal.h). */
#define CONTROL_KEY_CERT_ENDED      "cert_ended"
/* With an authority, after cert_expires: this node's address is another
 * member's, which the members hold first (membership/certs.h's
 * certs_clash): that member's name and key (base64, as `ddpnet pubkey`
 * prints it), and 1 when our address is
 * derived from our key (0: fixed by our certificate). Absent: no clash. */
#define CONTROL_KEY_CLASH_HOLDER    "address_clash"
#define CONTROL_KEY_CLASH_KEY       "address_clash_key"
#define CONTROL_KEY_CLASH_DERIVED   "address_clash_derived"
#define CONTROL_PATH_DIRECT         "direct"
#define CONTROL_PATH_RELAY          "relay"
#define CONTROL_PATH_UNREACHABLE    "unreachable"
/* Somewhere to send, but no handshake completed yet. */
#define CONTROL_PATH_WAITING        "waiting"
#define CONTROL_PATH_PENDING        "pending"

/* The largest response control_request accepts. */
#define CONTROL_RESPONSE_MAX        (1u << 20)

struct peer;
/* The path a peer's traffic takes, as get=ddpnet and the metrics name it:
 * unreachable (a handshake gave up), waiting (somewhere to send, no
 * handshake completed yet), relay, direct; NULL: nowhere to send. */
const char *control_path_name(const struct peer *p);

/* CONTROL_PROTOCOL_OP: a request that names a control protocol other
 * than this build's (control.h); it is refused unread. */
enum control_op { CONTROL_GET_WG, CONTROL_SET_WG, CONTROL_GET_DDPNET_OP, CONTROL_RELOAD_OP, CONTROL_STATEMENT_OP,
                  CONTROL_GET_CERTS_OP,
                  CONTROL_GET_ENV_OP, CONTROL_PROTOCOL_OP };

/* Keys of the answer to set=ddpnet-cluster: one line per change, error of
 * the file, or reason it was refused (membership/members.h), then errno. */
#define CONTROL_KEY_CHANGE          "change"
#define CONTROL_KEY_VERDICT         "verdict"
#define CONTROL_KEY_CERT            "cert"        /* get=ddpnet-certs: one certificate */
#define CONTROL_KEY_ERROR           "error"
#define CONTROL_KEY_REFUSED         "refused"
/* get=ddpnet's interface section: the cluster file's checksum (hex) and
 * when it was applied (unix seconds). */
#define CONTROL_KEY_CLUSTER_SUM     "cluster_sum"
#define CONTROL_KEY_CLUSTER_APPLIED "cluster_applied"
/* get=ddpnet's interface section, with a registry: its state (synced,
 * connecting, unreachable), the revision applied, the etcd endpoint in
 * use and its latest error. */
#define CONTROL_KEY_REGISTRY_STATE    "registry_state"
#define CONTROL_KEY_REGISTRY_REVISION "registry_revision"
#define CONTROL_KEY_REGISTRY_ENDPOINT "registry_endpoint"
#define CONTROL_KEY_REGISTRY_ERROR    "registry_error"
/* What members' hints cost (engine/model/device.h's device_stats): bytes sent
 * to addresses that had not answered, sends refused for want of credit,
 * relay trials that failed, relays dropped when answers stopped. */
#define CONTROL_KEY_HINT_BYTES      "hint_bytes"
#define CONTROL_KEY_HINT_REFUSED    "hint_refused"
#define CONTROL_KEY_RELAY_TRIALS_FAILED "relay_trials_failed"
#define CONTROL_KEY_RELAY_DROPPED   "relay_dropped"
/* get=ddpnet's interface section: what the kernel dropped before the
 * daemon saw it (engine/model/device.h's device_stats): datagrams at the UDP
 * sockets (their receive buffer full), packets at ddp0's transmit queue;
 * and the receive buffer each socket got, in bytes as `socket-buffer`
 * counts them (absent: unknown). */
#define CONTROL_KEY_DROPPED_SOCKET  "dropped_socket_overflow"
#define CONTROL_KEY_DROPPED_TUN     "dropped_tun_queue"
#define CONTROL_KEY_SOCKET_BUFFER   "socket_buffer"
/* What the queue management of the UDP sockets did (loop/codel.h): data
 * packets dropped, and packets marked CE, to slow senders down while
 * datagrams waited too long there. */
#define CONTROL_KEY_DROPPED_QUEUE   "dropped_queue_delay"
#define CONTROL_KEY_ECN_MARKED      "ecn_marked"
/* The rules (config/rules.h, engine/filter.h): how many are written (0:
 * none, everything allowed), the connections they let open that are
 * live, packets refused received (dropped_rule) and sent (refused_rule:
 * ICMP "administratively prohibited" back), and new connections refused
 * for want of room in the table. */
#define CONTROL_KEY_RULES           "rules"
#define CONTROL_KEY_RULE_CONNS      "rule_connections"
#define CONTROL_KEY_DROPPED_RULE    "dropped_rule"
#define CONTROL_KEY_REFUSED_RULE    "refused_rule"
#define CONTROL_KEY_RULE_TABLE_FULL "rule_table_full"
#define CONTROL_KEY_RULE_PEER_FULL "rule_peer_full"
/* Routes (issue 60): route=PREFIX once per prefix the node carries, in
 * the interface section for this node's own, in a peer's section for
 * that peer's (those the device routes to it: a pending peer's are not);
 * masquerade (interface section, when this node carries any): 1, or 0
 * for `masquerade = no`. */
#define CONTROL_KEY_ROUTE           "route"
#define CONTROL_KEY_MASQUERADE      "masquerade"
/* With an authority: member certificates' routes left out of the model
 * running (membership/state.h's cert_routes_refused). */
#define CONTROL_KEY_CERT_ROUTES_REFUSED "cert_routes_refused"
/* The reasons, as the metrics' ddpnet_packets_dropped_total names them. */
#define CONTROL_DROP_SOCKET         "socket_overflow"
#define CONTROL_DROP_TUN            "tun_queue"
#define CONTROL_DROP_QUEUE          "queue_delay"
#define CONTROL_DROP_RULE           "rule"

/* Frames one request at the start of buf[0..len): the two of uapi.h, the
 * get=ddpnet and get=ddpnet-env lines each followed by an empty line, and set=ddpnet-cluster with
 * its length line and bytes (*body, *body_len: the file), each of them
 * after a protocol line or not (control.h). Returns as uapi_parse_request: 0 (*op, *consumed set), -EAGAIN, -EINVAL, -EMSGSIZE. */
int control_frame(const char *buf, size_t len, enum control_op *op, size_t *consumed);
/* The length of the protocol line buf starts with (control.h), or 0. */
size_t control_protocol_head(const char *buf, size_t len);
/* Where a framed set=ddpnet-cluster request's file lies in it. */
void control_cluster_body(const char *req, size_t consumed, const char **body, size_t *len);
/* set=ddpnet-statement: the statement offered to the node's authority
 * store and passed on to its peers (membership/members.h,
 * members_statement); answered "verdict=WORD[: why]" then errno. */
int control_statement(struct device *dev, const char *text, size_t len, uint64_t now_ns,
                      char **out, size_t *out_len);

/* Applies a cluster file live (set=ddpnet-cluster): the answer's lines in
 * a new malloc'd buffer, ending with its errno line. 0 or -ENOMEM.
 * hosts_fd (-1: none; taken over either way) is the hosts file the client
 * opened and passed: where it is not the file the daemon writes (that one
 * was replaced by a rename), the names block follows it from now on. */
int control_reload(struct device *dev, const char *text, size_t len, int hosts_fd,
                   uint64_t now_ns, char **out, size_t *out_len);

/* Whole responses in a new malloc'd buffer (*out, *len; not
 * NUL-terminated), ending "errno=0\n\n". The get=1 one holds the private
 * key: wipe it before freeing. Return 0, -ENOMEM, or -ENOBUFS when the
 * computed size was too small (a bug). */
int control_get_wg(struct device *dev, char **out, size_t *len);
int control_get_ddpnet(struct device *dev, uint64_t now_ns, char **out, size_t *len);
/* get=ddpnet-env: get=ddpnet's interface lines interface, self, address,
 * prefix, listen_port, master, master_address, and per peer public_key,
 * name and address only (the env socket's answer: control.h). */
int control_get_env(struct device *dev, char **out, size_t *len);
/* get=ddpnet-certs (control.h): -EPERM without an authority. */
int control_get_certs(struct device *dev, char **out, size_t *len);

/* Applies the body of a set=1 request (see control_set.c for the subset
 * supported). Returns 0 or the negative errno to answer. */
int control_set(struct device *dev, const char *body, size_t len, uint64_t now_ns);

/* --- the CLI side: pure functions of a get=ddpnet response ------------------- */

/* `ddpnet status`: a header line naming this node, then a table with one
 * row per peer; ages are relative to now_unix. Return 0; -EPROTO for a
 * response that is not a well-formed get=ddpnet answer; the response's
 * own negative errno when it reports one; -ENOMEM. */
int status_format_table(const char *response, FILE *out, uint64_t now_unix);
/* `ddpnet status --json`: one JSON object and a newline. Returns as above. */
int status_format_json(const char *response, FILE *out);
/* `ddpnet env`: export lines for eval. master names the node whose overlay
 * address becomes MASTER_ADDR (NULL: the response's master, the cluster
 * file's first node). Returns as above, or -ENOENT when no node of the
 * cluster is named master (nothing is printed then). */
int status_format_env(const char *response, const char *master, FILE *out);
/* `ddpnet env` failing: line (an error message) as shell text that prints
 * it on stderr and fails -- "echo 'LINE' >&2; false" -- so that `eval
 * "$(ddpnet env)"` fails with the reason and a `set -e` shell stops before
 * the job starts on the wrong network. 0, or -EIO when out failed. */
int status_env_fail(const char *line, FILE *out);

#endif
