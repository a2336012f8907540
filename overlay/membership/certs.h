/* SPDX-License-Identifier: MIT */
/* The authority's statements a node holds (`[cluster] authority`): member
 * certificates that verified, by WireGuard key, and revocations, by id.
 *
 * Whoever learns a statement -- the registry (a record's certificate, a
 * revocation under the prefix), a member passing one on inside its
 * session -- offers its text line here and gets a verdict; the statement
 * proves itself (config/cert.h), and where it came from matters only for
 * a token's member certificate (heard, below).
 * What the store holds is what counts: membership asks it which
 * certificate a key holds (certs_member) or walks them all (certs_at),
 * and is told through the `changed` callback whenever the set changed (a
 * member added or replaced, one removed by a revocation, an expiry or a
 * better member of a full token), so it can apply the model again.
 *
 * Rules (the same on every node whatever order statements arrive in,
 * but for first come among a token's members):
 *  - a member certificate counts from its not_before to its not_after
 *    (unix seconds, the wall clock: certificates are about calendar time);
 *    at not_after it stops counting at once: certs_run, called at
 *    certs_next_expiry, drops it (a deadline, never a sweep);
 *  - a revocation names a statement id (cert_id): the member certificate
 *    with that id, or every member signed through the token with that id
 *    (cert_token_id); or a member's WireGuard key: every certificate for
 *    it, signed before or after. What it names is dropped and refused
 *    from then on;
 *  - where a certificate came from (issue 55): a token's certificate is
 *    its key's own word only from its key (said on its session, or up's
 *    own), else it is heard (certs_offer_heard: a peer passed it on), and
 *    a heard one takes no name, key or place from anyone, and gives way
 *    to any certificate its key's holder says and to the authority's;
 *    the authority's own certificate counts wherever it came from;
 *  - one key holds one certificate: the authority's replaces a token's
 *    for that key whatever its name and dates (a token's holder signing a
 *    certificate for another's key, keys being public, takes nothing from
 *    it), and its key's own word a heard one; else a later one (greater
 *    not_after) for the same key and name replaces it when the authority
 *    signed it, or the same token as the held one (a renewal); one naming
 *    another name is refused while the first counts (a key is one
 *    member): a token's certificate for a key that holds another is
 *    refused, never the reverse. Issue 59: its key's own word naming
 *    another address index (the same name, signed as a renewal may be)
 *    replaces it whatever the ends -- the node moved to the next of its
 *    derived addresses, whose holder, if any, keeps it (members.c) -- and
 *    a heard one naming another index is refused: only a key moves its
 *    own address;
 *  - one name belongs to one key. The authority's own certificate takes
 *    a name from a token's; between two of the authority's, the later
 *    not_before wins (its newer word), then the lower key; a token's
 *    certificate never takes a name another member holds, whatever its
 *    dates or key: the one held first keeps it (CERTS_NAME_TAKEN);
 *  - a token's places: at most max_members (CERTS_TOKEN_DEFAULT_MAX where
 *    it says 0) members signed through it are held, the first come; one
 *    beyond is refused (CERTS_TOKEN_FULL) until a place is let go
 *    (certs_retain: a member that left) or expires; a heard member's
 *    place goes to one its key said.
 * Bounds: CERTS_MEMBERS_MAX member certificates, beyond which an offer is
 * refused (CERTS_FULL) and counted; CERTS_REVOKED_MAX revocations of what
 * the store does not hold, beyond which those are refused and counted
 * (revoked_full). A revocation of a member held (its certificate, its
 * key, its token) is never refused: past the bound it is taken all the
 * same and counted (revoked_beyond); so is one the node took before
 * (certs_offer_kept). Each costs 32 bytes and 8 of index (twice that
 * just after the table doubles): a revocation is the authority's
 * signature (or the operator's word), and one past the bound also
 * removed a member held, so the list grows past it only as fast as the
 * authority revokes members. None is forgotten: the store knows what an
 * id names only while it holds it, and a key never expires. Memory
 * grows with what is held, up to those bounds. Look-ups (by key, name,
 * statement id, a token's count, a revocation) go through an index
 * (hash tables with a random key, at most half full), so an offer costs
 * O(1) of them whatever the store holds; what removes members (a
 * revocation of something held, an expiry, certs_retain, a name taken
 * over) walks the held certificates once and rebuilds the index.
 *
 * Runs on the event loop's thread: no I/O, no lock; signatures are
 * checked only for a statement not held already (a known one costs a
 * hash). */
#ifndef DDPNET_CERTS_H
#define DDPNET_CERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cert.h"
#include "config/cluster.h"

#define CERTS_MEMBERS_MAX 4096u
#define CERTS_REVOKED_MAX 65536u   /* of what the store does not hold (above) */
#define CERTS_TOKEN_DEFAULT_MAX 256u   /* a token's places where it names no limit */

enum certs_verdict {
    CERTS_ADDED = 0,       /* counts now: new, or replacing its key's older one */
    CERTS_KNOWN,           /* held already (or an older one for a held key): no change */
    CERTS_REVOKING,        /* a revocation, taken (what it names dropped) */
    CERTS_REVOKED,         /* a member certificate or its token was revoked */
    CERTS_INVALID,         /* does not parse, or cert_verify refused it (why says) */
    CERTS_NAME_TAKEN,      /* another member holds the name (or the key another name) */
    CERTS_TOKEN_FULL,      /* its token's places held by other members */
    CERTS_FULL,            /* the store's bound reached */
    CERTS_NO_MEMORY,
    CERTS_NOT_OWN,         /* a token's certificate handed in by another than its key (members.c) */
};

struct certs_stats {
    size_t members, revoked;              /* held now */
    uint64_t invalid, refused_revoked, name_taken, token_full, full;   /* refusals so far */
    uint64_t revoked_full;                /* of full: revocations refused at CERTS_REVOKED_MAX */
    uint64_t revoked_beyond;              /* revocations taken past it (of what was held) */
    uint64_t expired, dropped_by_revocation;
    uint64_t lookups, probes;             /* index look-ups so far, and the slots they read */
};

struct certs;
/* Called after every change of the held members (never from certs_new or
 * certs_free); ctx as given. */
typedef void (*certs_changed_fn)(void *ctx);

/* A store for statements signed by `authority`. NULL without memory. */
struct certs *certs_new(const uint8_t authority[CERT_PUBKEY_LEN], certs_changed_fn changed,
                        void *ctx);
/* The keys the store trusts from now (issue 56, the authority's key
 * rotated): authority, and next beside it where not NULL. Statements
 * either signed count; a held member whose signer (for a token's member,
 * its token's) is trusted no more is dropped (the changed callback once).
 * Revocations taken stay. */
void certs_trust(struct certs *s, const uint8_t authority[CERT_PUBKEY_LEN], const uint8_t *next);
void certs_free(struct certs *s);

/* Offers one statement, as a text line (cert_parse's form), at now (unix
 * seconds). The verdict; *why (may be NULL) a short reason for a log
 * line ("" for CERTS_ADDED, CERTS_KNOWN and CERTS_REVOKING). */
enum certs_verdict certs_offer(struct certs *s, const char *line, uint64_t now,
                               const char **why);
/* The same for a statement parsed already (checked all the same). */
enum certs_verdict certs_offer_cert(struct certs *s, const struct cert *c, uint64_t now,
                                    const char **why);
/* The same for one a peer passed on that is not its key's own word (said
 * on another key's session): a token's member certificate is held as
 * heard (an introduction: a node made for it, so that the two meet and it
 * says its own), which takes nothing from anyone and gives way to its
 * key's own word and to the authority's (rules above). The authority's
 * own certificates and revocations count as from certs_offer_cert. */
enum certs_verdict certs_offer_heard(struct certs *s, const struct cert *c, uint64_t now,
                                     const char **why);
/* Whether key's held certificate is one only heard (certs_offer_heard):
 * a test seam (test_certs; the daemon needs no answer to it). */
bool certs_heard(const struct certs *s, const uint8_t key[CLUSTER_KEY_LEN]);
const char *certs_verdict_str(enum certs_verdict v);
/* A key revoked on the operator's word (the cluster file's `revoked`),
 * as a signed revocation of that key would: what it holds dropped, and
 * any certificate for it refused from then on. CERTS_REVOKING, CERTS_KNOWN
 * (revoked already), CERTS_FULL or CERTS_NO_MEMORY. */
enum certs_verdict certs_revoke_key(struct certs *s, const uint8_t key[CLUSTER_KEY_LEN]);
/* A revocation this node took before, read back from its state file
 * (revocations_load): checked as certs_offer checks one, and taken past
 * CERTS_REVOKED_MAX too (it was taken once; the file's reader bounds
 * how many). Anything but a revocation is CERTS_INVALID. */
enum certs_verdict certs_offer_kept(struct certs *s, const char *line, uint64_t now,
                                    const char **why);

/* The member certificate key holds, or NULL. Valid until the next call
 * that changes the store (an offer, certs_run). */
const struct cert *certs_member(const struct certs *s, const uint8_t key[CLUSTER_KEY_LEN]);
/* Whether node n (a registry record, a node made from a certificate) is
 * what its key's certificate says: the same name (case-insensitively) and,
 * where the certificate fixes one, the same address. NULL when it is;
 * else why not. */
const char *certs_node_check(const struct certs *s, const struct cluster_node *n);

/* Iteration: certs_at(s, i) for i in [0, certs_count(s)), in the order
 * they were first held (a renewal keeps its key's place), valid until the
 * next change: whoever resolves a clash the store does not see (two
 * addresses derived alike) gives it to the first come. */
size_t certs_count(const struct certs *s);
const struct cert *certs_at(const struct certs *s, size_t i);

/* Drops each held member certificate that keep(ctx, cert) says no to
 * (the changed callback once, when one went). Whoever knows which members
 * are live says so here: the registry's members are those with a record,
 * so a token's max_members counts live members, not every certificate
 * ever shown. */
typedef bool (*certs_keep_fn)(void *ctx, const struct cert *c);
void certs_retain(struct certs *s, certs_keep_fn keep, void *ctx);

/* When the first held member certificate expires (unix seconds; UINT64_MAX
 * when none is held). */
uint64_t certs_next_expiry(const struct certs *s);
/* Drops what expired by now (the changed callback once, when one did). */
void certs_run(struct certs *s, uint64_t now);

void certs_stats(const struct certs *s, struct certs_stats *out);

/* A clash this node lost (issue 43): its certificate's address, derived
 * from its key (or fixed), is another member's, whose certificate a
 * member told us (signed: evidence, not a member's word), and the
 * members keep it (the first come, members.c). Found and set by
 * membership each time it makes the model; shown by `status` and
 * `doctor` with what to do. Not a statement: no verdict, no callback. */
struct certs_clash {
    bool on;
    bool derived;                          /* our address derived from our key */
    struct cluster_addr address;           /* ours, and the holder's */
    char ours[CLUSTER_NAME_MAX + 1];       /* our certificate's name */
    char holder[CLUSTER_NAME_MAX + 1];     /* the holder's name */
    uint8_t holder_key[CERT_PUBKEY_LEN];
};
/* What the loser of a clash can do, for the log, `status` and `doctor`. */
#define CERTS_CLASH_WHAT_TO_DO "a new key for this node (ddpnet genkey, then ddpnet authority " \
    "sign again for it), the next of its key's addresses (ddpnet authority sign " \
    "--address-index N, 0..7, as the launch script does), a fixed address from the " \
    "authority (ddpnet authority sign --address), or a larger [cluster] network"
/* Sets (c->on) or clears (!c->on) the clash; true when it changed (a new
 * holder, or on to off or back), so that it is logged once. */
bool certs_clash_set(struct certs *s, const struct certs_clash *c);
/* The clash held (on false: none). */
const struct certs_clash *certs_clash(const struct certs *s);

#endif
