/* SPDX-License-Identifier: MIT */
/* Revocations that last (issue 43): what the node was told once, it
 * keeps and says again.
 *
 * Owns, with `[cluster] authority`: the state file STATE_DIR/IFNAME.revoked
 * (every revocation taken, one text line each, appended once; read back
 * at set-up, so a restart or a reboot takes no revoked member back); the
 * latest revocations taken (dev->revocations_said, said to every peer on
 * every session, so a member that was down when one was passed on hears
 * it at its next session with anyone); and the cluster file's `revoked`
 * keys, the operator's blocklist, revoked in the store at set-up and at
 * every reload (a key taken out of the file stays revoked until the
 * daemon restarts: revocations only ever add).
 *
 * Every revocation taken reaches a peer that lacks it at the next session
 * (issue 43): each side says on every session a digest of the signed
 * revocations it holds (DISCO_REVOKED: how many, BLAKE2b-128 of the ids
 * they name, sorted; dev->revoked_digest); a side that hears a digest
 * other than its own says its revocations to that peer, all but the
 * latest (said already), in a round: REVOCATIONS_ROUND_BURST at once,
 * then REVOCATIONS_ROUND_PER_SEC a second (within the receiver's CERT
 * allowance, members.c), one round per peer at a time and at most one
 * begun per REVOCATIONS_ROUND_EVERY_NS. Each is a CERT the receiver
 * verifies as any other (signed by the authority, or not taken); what
 * it takes it keeps, and its digest then agrees. A newcomer promoted
 * gets a round at once (its digest came while it was a stranger). A
 * node that predates REVOKED drops it and hears the latest only.
 *
 * The state file (issue 55): read by length, a chunk at a time, up to
 * REVOCATIONS_FILE_MAX bytes; a line with a NUL byte, a torn one, one
 * longer than a statement or one that is no valid revocation spoils
 * itself alone, skipped and counted in a warning. Each revocation
 * taken is appended on a line of its own (a tail that is no line's end,
 * a write torn by a crash or a full disk, gets its '\n' first) and
 * synced (fdatasync) before revocations_taken returns: a failed write or
 * sync is its caller's error to report, never a success.
 *
 * Bounds: the store's (certs.h: CERTS_REVOKED_MAX revocations of what it
 * does not hold, any number of what it held; each one here a copy of its
 * line, 209 bytes, and its id: with the store's, at most about 400 bytes
 * a revocation, 26 MiB at the bound); the state file read up to
 * REVOCATIONS_FILE_MAX bytes (the store's bound's lines, 210 bytes
 * each, twice over). A revocation refused for a full store is logged as an error
 * (revocations_run). Runs on the loop's thread; the one write and sync
 * per revocation taken is a short append to a local file (a person's
 * act, bounded by the store), not worth a thread. */
#ifndef DDPNET_REVOCATIONS_H
#define DDPNET_REVOCATIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "config/cluster.h"
#include "overlay/engine/model/device.h"

#define REVOCATIONS_SAID_MAX 8u                  /* said on every session */
#define REVOCATIONS_FILE_MAX (32u * 1024u * 1024u)   /* bytes read at set-up */
#define REVOCATIONS_FILE_MODE 0600
#define REVOCATIONS_ROUND_BURST 16u                   /* said at once in a round */
#define REVOCATIONS_ROUND_PER_SEC 10u                 /* then, a second */
#define REVOCATIONS_ROUND_EVERY_NS (30ull * 1000000000ull)   /* a round begun per peer */

/* Opens (creating it, and STATE_DIR, mode 0700) the state file of
 * interface ifname under state_dir: an fd for revocations_load, or a
 * negative errno. As root, before the privilege drop: the daemon keeps
 * the descriptor. A STATE_DIR that another user owns, or that its group
 * or others may write, is refused (-EPERM, the reason logged). */
int revocations_open(const char *state_dir, const char *ifname);

/* Reads the state file fd (from its start) and offers each line to the
 * store (certs_offer_kept: taken past its bound too); keeps fd in
 * dev->revoked_fd for the revocations taken from now on. How many were
 * taken, or a negative errno (nothing kept). */
int revocations_load(struct device *dev, int fd);

/* The keys of file's `revoked` revoked in the store (members_certs_start
 * and members_reload call it): how many were new. */
size_t revocations_of_file(struct device *dev, const struct cluster *file);

/* A revocation the store just took (certs_offer said CERTS_REVOKING),
 * as its text line: appended to the state file and synced, and among the
 * latest said on every session. 0, or a negative errno when it is not
 * kept in the file (logged; held and said all the same): whoever asked
 * for it must not hear it taken for good. */
int revocations_taken(struct device *dev, const char *line, size_t len);

/* With the store (members_certs_start): the digest said from now on, and
 * peers' digests heard (dev->revoked_said). */
void revocations_start(struct device *dev);
/* A peer's digest (DISCO_REVOKED, on its session): a round of ours to it
 * where it differs. */
void revocations_digest_said(struct peer *p, const struct disco_revoked *d, uint64_t now);
/* A round to p now (a newcomer promoted), unless one is under way. */
void revocations_round(struct peer *p, uint64_t now);
/* Says what is due of the rounds under way; when the next is due
 * (UINT64_MAX: none). On the loop, from members_certs_run. */
uint64_t revocations_run(struct device *dev, uint64_t now);

void revocations_free(struct device *dev);

#endif
