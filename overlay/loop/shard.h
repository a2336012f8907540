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
 * So a shard's turn is: wait on its ring (unlocked); offer its receives
 * to the engine without the lock (the common case, below: "Done");
 * take the lock, run the other completions through the engine (a TUN
 * read is looked up and its counters taken; a receive's keypair found),
 * unlock; seal or open the
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
 * Done (issue 58, step A1): a direct receive in the common case takes
 * no engine lock. The loop offers each receive of a turn first to the
 * engine's udp_unlocked handler (loop.h) and takes the lock lazily, once
 * a turn, only for what is left; sends and TUN writes done need none (a
 * buffer freed then goes back to its pool when the lock is next taken:
 * the pools' free lists are still the lock's). The engine takes a
 * receive so (datapath.c: datapath_from_udp_unlocked) when every
 * datagram is a transport message to one keypair and sub-session, from
 * no extra flow, of a peer this shard admitted under the lock (its
 * current keypair, its proven endpoint, no relay, neither pending nor on
 * probation, no rules) at the device's epoch still current
 * (dev->fast_epoch: every change of what an entry assumes moves it), from
 * that endpoint. The index is looked up without the lock (index.h; qsbr
 * keeps what it finds for the turn), the AEAD runs on the shard's thread,
 * the replay window moves under the keypair's own lock (transport.h),
 * the plaintexts go to ddp0 through the shard's ring; the peer's
 * counters, the path's last receive and WireGuard's timers are the
 * shard's own facts, settled under the lock when the loop next takes it
 * (loop_handlers.settle: at the latest at the top of its next turn,
 * before it waits), at the times they happened. A message whose inner
 * packet is not plain data from the peer's address (disco, a routed
 * source) is taken under the lock once authentic. What makes the lookup
 * safe: qsbr.h (each loop's turn count; what is retired under the lock
 * freed by loop 0 once every loop has waited since) and the index's
 * entries, keypairs and removed peers retired through it (index.h,
 * engine/peer.c). Tested: test_engine (the conditions), test_transport
 * (two threads on one keypair's windows), test_index and test_device
 * (readers racing the writer), e2e tsan_shards.
 *
 * NOT DONE, still under the lock on every packet or turn:
 *   - every shard takes it once a turn, at the top (loop.c: engine_enter
 *     for the settling, the timers on loop 0, its deferred jobs, and the
 *     refill of its reads, whose buffers come from a pool whose free
 *     list another shard may be putting back into): a receive-only turn
 *     holds it for the settling and the refill, no longer for each
 *     message;
 *   - the send side (step A2): a read from ddp0 is looked up by address,
 *     its flow's hint and counters taken, and its seal's finish sent,
 *     under the lock (datapath_from_tun, datapath_seal; the address map
 *     and flow table are the lock's, a keypair's send counters too);
 *   - receives that are not that common case: a keypair's first packet
 *     (it confirms it), a new source (roaming), relayed and relay-frame
 *     traffic, several keypairs or types in one receive, a receive
 *     congested, a peer with rules or pending, and any receive of a turn
 *     after one that was refused (their order);
 *   - what the exceptions above list. */
#ifndef DDPNET_SHARD_H
#define DDPNET_SHARD_H

#include <pthread.h>

#include "overlay/loop/loop.h"

#define SHARDS_MAX LOOP_CREW_MAX
/* The default's cap. Every shard takes the one engine lock once or twice
 * a turn, so past some count more shards only queue on it: the serial
 * share measured on a loaded 2-vCPU machine (0.10-0.12 of a shard's work
 * under the lock; 0.04 since direct receives left it) fills it at 8-10
 * shards (24 since: bench/README.md, "The engine lock": an Amdahl
 * projection still to check on 16 cores). 8 is also what issue
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
