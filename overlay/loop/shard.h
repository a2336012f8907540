/* SPDX-License-Identifier: MIT */
/* Shards: the data path on several cores, each packet run to completion
 * on the core that read it, with no hand-off between threads.
 *
 * The daemon's one design for many cores: by default one shard per core
 * it may run on (its affinity mask), at most SHARDS_DEFAULT_MAX (below;
 * DDPNET_SHARDS sets the count, 1 runs one loop with no lock).
 * A daemon with N shards has N event loops (loop.h), each on its own
 * thread, each with its own queue of ddp0 (a multi-queue TUN), its own UDP
 * socket per family (one SO_REUSEPORT group on the node's port) and its
 * own io_uring and packet pool. Loop 0 is the daemon's: it also runs the
 * timers, the control socket and the signals. What each owns:
 *
 *   per shard    its ring, its reads and receives in flight, its busy-poll
 *                window, the crypto jobs it made (run on its own thread,
 *                and on idle shards' threads that help: deferred.h);
 *   shared       the engine (struct device: peers, keypairs, counters,
 *                replay windows, the index table, staging, timers) and the
 *                packet pools, whose buffers cross between shards (a packet
 *                staged by one is sent by another): all under one lock, the
 *                engine lock, which a loop holds while it runs the engine's
 *                handlers and never while it waits on its ring or runs its
 *                deferred seals and opens: the exceptions are listed below.
 *
 * So a shard's turn is: wait on its ring (unlocked); take the lock, run
 * the completions through the engine (a TUN read is looked up and its
 * counters taken; a receive's keypair found), unlock; seal or open the
 * buffers those made (the AEAD, the segmenting copy, the checksums: most
 * of the cost) on its own thread, asking idle shards to run some of them
 * on theirs (one busy flow then uses the spare cores); take the lock,
 * finish them in order
 * (replay windows, the inner source, ddp0 writes and sends queued on its
 * own ring), unlock. Counters and replay windows stay exact; a
 * packet's state never waits on another thread's queue. (A stock WireGuard
 * peer's seals are the exception: below.)
 *
 * Order per flow: the kernel puts a flow on one queue of ddp0 (its hash;
 * tun's flow table keeps the queue a flow was last written on), so one
 * shard reads it and seals it, in order. The receiver must open it on one
 * shard too: each seal to a peer that takes them carries the sealing shard
 * in byte 1 of its type (the shard hint, crypto/wg_const.h), and a classic
 * BPF program on the receiving socket group (shard_steer) sends a
 * transport message to socket hint % N; everything else (handshakes,
 * cookies, relay frames, a stock WireGuard peer's messages: hint 0) to
 * socket 0. The hint is outside the AEAD: forging it changes only which
 * shard opens a message. Written back into ddp0 on the same shard's
 * queue, the flow's replies are read there too: a flow stays on one shard
 * at both ends.
 *
 * Byte 2 of a hinted message names the sub-session (crypto/transport.h)
 * whose keys and counters sealed it: the sealing shard's, so that each
 * shard's counters leave in order; a new flow's hint is the next shard in
 * turn (engine/model/flows.h), so that flows spread evenly.
 *
 * A stock WireGuard peer never gets the shard bytes (it would drop the
 * message); what it sends lands on shard 0; what we send it has one
 * counter space, so its seals run under the engine lock, on whichever
 * shard read the packet, and leave close to the order of their counters
 * (its replay window is 8128 wide).
 *
 * What is still done under the engine lock that the rule above would
 * keep out (issue 58; each a place to take out next, the costly first):
 *   - a stock WireGuard peer's seals (above; datapath.c: datapath_seal);
 *   - a receive that is not one run to one keypair (datagrams to several
 *     keypairs, disco or relay traffic among them) is opened datagram by
 *     datagram in the handler (datapath.c: open_here, open_message ->
 *     transport_open), and relay frames are opened and sealed there
 *     (datapath.c: frames_in; paths/path.c: the frames' seal);
 *   - disco messages and RELAY wrappings are sealed in the handler
 *     (paths/disco_io.c, paths/path.c: transport_seal);
 *   - handshakes do their Noise work (X25519, BLAKE2s) and cookies in the
 *     handler (handshake.c), bounded by the rate limiter;
 *   - jobs run under the lock, each counted (loop_lock_stats:
 *     jobs_locked): loop_crypto_drain, for order (open_here, while opens
 *     are in flight) and before a membership change (members.c), and a
 *     handler that makes more jobs than the ring has room for
 *     (loop.c: LOOP_JOB_ROOM, deferred_one); deferred_run then waits,
 *     spinning and yielding, for a job a helper claimed;
 *   - system calls that do not wait on the network but may on a disk or
 *     the kernel: a revocation taken is appended to the state file and
 *     synced (revocations.c: revocations_taken; its caller's answer
 *     waits on it, a person's act bounded by the store), the route MTU
 *     and ddp0's drops asked over rtnetlink (daemon.c), sends beside the
 *     ring (loop_send_now), and the control socket's and metrics'
 *     clients served (non-blocking) on loop 0.
 * SIGHUP's read of the cluster file (loop.h: hangup_read), small seals
 * and opens (once run in the handler up to 16 KiB) and a handler's full
 * job ring (now room is made between completions) were taken out.
 *
 * What the lock costs is counted per loop (loop.h: loop_lock_stats, the
 * metrics' ddpnet_engine_lock_*, bench/shards.sh): held, waited for, and
 * each loop's busy time.
 *
 * NOT DONE, the next step (issue 58): data packets off the lock. A
 * transport message to or from a peer that takes the shard bytes, with
 * a live keypair, would take no engine lock:
 *   - lookups (by address, by receiver index) in read-mostly tables that
 *     membership and handshakes replace whole and publish with one
 *     atomic store; what they replace (a table, a removed peer, an
 *     expired keypair) is freed only once every shard has begun a new
 *     turn since (each loop's turn count: quiescent-state reclamation,
 *     shards being quiescent between turns), so no reader loses a peer
 *     under it;
 *   - a keypair's send counter per sub-session (transport_hinted), owned
 *     by the sealing shard; its replay window per sub-session, owned by
 *     the shard its hint steers receives to (shard_steer): one writer
 *     each, no atomics;
 *   - what many shards add to (a peer's bytes, the device's counters)
 *     per shard, summed when shown; what the timers read (last sent,
 *     last received, a rekey due) as relaxed atomic stores, acted on by
 *     loop 0 under the lock;
 *   - the lock kept for what changes state: no keypair (staging, a
 *     handshake), a new source (roaming), disco and relay traffic,
 *     timers, membership, the control socket; and for stock peers.
 * Land only with ThreadSanitizer passing every multi-shard test and
 * e2e multistream, down_members (DDPNET_SHARDS=2) and three_nodes. */
#ifndef DDPNET_SHARD_H
#define DDPNET_SHARD_H

#include <pthread.h>

#include "overlay/loop/loop.h"

#define SHARDS_MAX LOOP_CREW_MAX
/* The default's cap. Every shard takes the one engine lock twice a turn,
 * so past some count more shards only queue on it: the serial share
 * measured on a loaded 2-vCPU machine (0.10-0.12 of a shard's work under
 * the lock) fills it at 8-10 shards (bench/README.md, "The engine lock":
 * an Amdahl projection still to check on 16 cores). 8 is also what issue
 * 45's 16-core targets were set for (bench/device-run.sh), and it leaves
 * the rest of a large node's cores to the training job (bench/README.md,
 * "Shards by default"). More can still be asked for, up to SHARDS_MAX. */
#define SHARDS_DEFAULT_MAX 8u

struct shard;

struct shards {
    unsigned n;                  /* loops, the daemon's own (0) included */
    pthread_mutex_t lock;        /* the engine lock */
    struct loop_crew crew;       /* the loops, for help with crypto */
    struct shard *shard;         /* shards 1..n-1 */
};

/* Initialises the engine lock for n loops (1..SHARDS_MAX). */
int shards_init(struct shards *s, unsigned n);
/* Steers the SO_REUSEPORT group of fd, whose sockets were bound in shard
 * order, by the shard hint (above) over n sockets. 0 or -errno. */
int shard_steer(int fd, unsigned n);
/* Starts shards 1..n-1, each a loop over tun_fds[k], udp4_fds[k] and
 * udp6_fds[k] (-1: none) with base's other settings and on's handlers,
 * timers and control left to `timer_loop` (the daemon's, loop 0), whose
 * config must name the same lock and `current`. Each loop is made on
 * its own thread (an io_uring has one submitter). 0 or -errno; on
 * failure none runs. */
int shards_start(struct shards *s, const struct loop_config *base, const struct loop_handlers *on,
                 struct loop *timer_loop, struct loop **current, const int *tun_fds,
                 const int *udp4_fds, const int *udp6_fds);
/* Shard k's loop (1..n-1), once started: for tests. */
struct loop *shard_loop(struct shards *s, unsigned k);
/* Stops the shards and waits for their threads (not the daemon's loop). */
void shards_stop(struct shards *s);
/* Frees the shards' loops: after shards_stop, and after the engine let go
 * of every buffer (their pools' buffers may sit in another's). */
void shards_free(struct shards *s);

#endif
