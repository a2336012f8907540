/* SPDX-License-Identifier: MIT */
/* The cluster authority's signed statements: member certificates, join
 * tokens and revocations, each one line a person can paste.
 *
 * Owns the binary layout, its text form and the checks that make one
 * statement prove itself given only the authority's public key (Ed25519,
 * libsodium): a member signed through a token carries the token's own
 * certificate, so any node can verify it with no server and no state.
 * Pure functions over bytes and strings: no clock read (callers pass
 * `now`), no file or network I/O, nothing allocated. libsodium must be
 * initialised first (sodium_init, as crypto_core_init does).
 *
 * Kinds:
 *   member     name + WireGuard public key (+ optional fixed overlay
 *              address, aliases and groups), signed by the authority or
 *              a token;
 *   token      a delegated Ed25519 signing key, signed by the authority,
 *              limited to names starting with `name` (the prefix), at most
 *              `max_members` members (0: no limit), its own lifetime and
 *              the groups it names (its members may carry those, no
 *              others; a token naming none signs members of none);
 *   revocation the id of a member or token statement, signed by the
 *              authority; it never expires (not_after is 0).
 * A member signed by a token may not outlive the token, and names no
 * address and no aliases: its address is derived from its key.
 * Routes (issue 60): a member may be granted prefixes to carry, as the
 * cluster file grants them; a token grants none unless it names the
 * prefixes it may grant (`authority token --routes`), and a member it
 * signs may carry only prefixes inside those. */
#ifndef DDPNET_CONFIG_CERT_H
#define DDPNET_CONFIG_CERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"
#include "config/rules.h"

#define CERT_PUBKEY_LEN  32u        /* Ed25519 public key */
#define CERT_SECRET_LEN  64u        /* Ed25519 secret key (libsodium form) */
#define CERT_SIG_LEN     64u
#define CERT_ID_LEN      32u        /* BLAKE2b-256 of a statement's signed bytes */
#define CERT_GROUPS_MAX  RULES_NODE_GROUPS_MAX   /* groups a member or token names */
/* Longest text form: callers size buffers with it (a NUL included). A
 * statement whose text would be longer is refused (every field full, a
 * member carrying its token with routes and groups would be). */
#define CERT_TEXT_MAX    1400u

enum cert_kind {
    CERT_MEMBER = 1,
    CERT_TOKEN = 2,
    CERT_REVOCATION = 3,
};

struct cert {
    enum cert_kind kind;
    uint64_t not_before;                     /* unix seconds */
    uint64_t not_after;                      /* unix seconds; 0 for a revocation */
    /* member: the WireGuard public key; token: its Ed25519 signing key;
     * revocation: the CERT_ID_LEN id of the revoked statement. */
    uint8_t subject[CERT_PUBKEY_LEN];
    char name[CLUSTER_NAME_MAX + 1];         /* member: name; token: prefix */
    bool has_address;                        /* member only */
    struct cluster_addr address;
    uint8_t n_aliases;                       /* member only */
    char aliases[CLUSTER_ALIASES_MAX][CLUSTER_NAME_MAX + 1];
    uint32_t max_members;                    /* token only; 0 = no limit */
    /* member: its groups (config/rules.h); token: those its members may
     * carry. None: version 1's encoding, as before groups. */
    uint8_t n_groups;
    char groups[CERT_GROUPS_MAX][RULES_GROUP_NAME_MAX + 1];
    /* member: the prefixes granted to it to carry; token: those the
     * members it signs may carry (none: they carry none). Host bits
     * clear, no two overlapping. None: version 1 or 2's encoding. */
    uint8_t n_routes;
    struct cluster_route routes[CLUSTER_ROUTES_MAX];
    uint8_t signer[CERT_PUBKEY_LEN];         /* who signed: authority or token key */
    /* A member signed by a token carries the token's statement. */
    bool has_token;
    uint8_t token_sig[CERT_SIG_LEN];
    struct cert_token_part {
        uint64_t not_before, not_after;
        uint8_t key[CERT_PUBKEY_LEN];
        char prefix[CLUSTER_NAME_MAX + 1];
        uint32_t max_members;
        uint8_t n_groups;
        char groups[CERT_GROUPS_MAX][RULES_GROUP_NAME_MAX + 1];
        uint8_t n_routes;                    /* what its members may carry */
        struct cluster_route routes[CLUSTER_ROUTES_MAX];
        uint8_t signer[CERT_PUBKEY_LEN];     /* the authority, as the token says */
    } token;
    uint8_t sig[CERT_SIG_LEN];
};

/* The binary form (what the text form's base64 holds), big-endian:
 *   u8 version, u8 kind, u64 not_before, u64 not_after, 32 subject,
 *   then by kind:
 *     member     u8 flags (1: address, 2: token; others 0), u8 len + name,
 *                [u8 family (4 or 6) + 4 or 16 address bytes],
 *                u8 n_aliases (0..CLUSTER_ALIASES_MAX), each u8 len + alias,
 *                TRAILERS,
 *                [the token's whole binary statement, its signature too];
 *     token      u8 len + prefix, u32 max_members, TRAILERS;
 *     revocation nothing more (always version 1);
 *   32 signer, 64 signature.
 * TRAILERS, by the version (each statement's own: a member and the token
 * it carries each say theirs), the oldest that holds the statement:
 *   1 (CERT_VERSION: no groups, no routes, as every statement before
 *     them): nothing;
 *   2 (CERT_VERSION_GROUPS: groups, no routes): u8 n_groups
 *     (1..CERT_GROUPS_MAX), each u8 len + name;
 *   3 (CERT_VERSION_ROUTES: routes, with or without groups): u8 n_groups
 *     (0..CERT_GROUPS_MAX), each u8 len + name; then u8 n_routes
 *     (1..CLUSTER_ROUTES_MAX), each u8 family (4 or 6) + 4 or 16 address
 *     bytes + u8 prefix length (1..32 or 1..128, host bits clear, no two
 *     overlapping).
 * The signature covers every byte before it (the signer included); a
 * statement's id is BLAKE2b-256 of those same bytes. One statement has
 * one encoding: parse refuses anything that would not encode back to the
 * same bytes (version 2 with no group, 3 with no route, a route with
 * host bits set, twice or overlapping another, a text over CERT_TEXT_MAX).
 * A join token is a token's binary statement followed by its 32-byte
 * Ed25519 seed. */
#define CERT_VERSION        1u
#define CERT_VERSION_GROUPS 2u
#define CERT_VERSION_ROUTES 3u

/* Why a statement does not count. */
enum cert_verdict {
    CERT_OK = 0,
    CERT_BAD_SIGNATURE,      /* a signature fails, or the signer is not the authority */
    CERT_NOT_YET_VALID,
    CERT_EXPIRED,
    CERT_OUTSIDE_TOKEN,      /* outside the token's prefix, outliving it, with an
                              * address or aliases (the authority's alone to give),
                              * a group the token does not name, or a route
                              * outside those it grants */
    CERT_WRONG_KIND,
};

/* A new authority or token key pair. 0 or -errno. */
int cert_keypair(uint8_t pub[CERT_PUBKEY_LEN], uint8_t secret[CERT_SECRET_LEN]);

/* Fills c->signer from secret and c->sig, then writes the text form
 * ("ddpnet-member:...", "ddpnet-token:...", "ddpnet-revoke:...") with a
 * NUL into out. For a member signed by a token, c->has_token and c->token
 * and c->token_sig come from the token's statement (cert_token_embed).
 * 0, -EINVAL for fields out of range (the checks cert_parse makes) or a
 * token-signed member whose secret is not its token's key, -EMSGSIZE
 * when its text would be longer than CERT_TEXT_MAX (too many groups and
 * routes, its own and its token's), -ENOSPC when cap is too small. */
int cert_sign(struct cert *c, const uint8_t secret[CERT_SECRET_LEN],
              char *out, size_t cap);

/* Parses one text form (surrounding spaces and a final newline allowed).
 * Checks layout and field ranges only, no signature: 0 or -EINVAL. */
int cert_parse(const char *text, struct cert *out);
/* A statement parsed (or signed) already, written again as its text line
 * (the signature it carries, unchecked: cert_verify's job), so that a node
 * can pass on what it holds. 0, -EINVAL, -ENOSPC as cert_sign. */
int cert_format(const struct cert *c, char *out, size_t cap);

/* Lifetimes are half open: valid while not_before <= now < not_after,
 * but for clocks: a statement counts from CERT_CLOCK_SKEW_S before its
 * not_before, so that a signer whose clock runs ahead of a member's (or
 * a member whose clock runs behind) does not refuse or drop a member the
 * others hold. Its end is exact: an expiry is never late. */
#define CERT_CLOCK_SKEW_S 300u
/* Checks signatures against the authority key, the lifetime at now, and
 * for a token-signed member the token's prefix and lifetime. Revocations
 * are the caller's (it holds the list): compare cert_id and, for a
 * token-signed member, cert_token_id. */
enum cert_verdict cert_verify(const struct cert *c,
                              const uint8_t authority[CERT_PUBKEY_LEN],
                              uint64_t now);

/* cert_verify against each key cluster cl trusts (`authority = KEY
 * [NEXT]`, a rotation: cluster_authority_trusts): CERT_OK where either
 * key's signature holds. */
enum cert_verdict cert_verify_cluster(const struct cert *c, const struct cluster *cl,
                                      uint64_t now);

/* The id a revocation names: of this statement, and of the token a
 * member carries (false when it carries none). */
void cert_id(const struct cert *c, uint8_t id[CERT_ID_LEN]);
bool cert_token_id(const struct cert *c, uint8_t id[CERT_ID_LEN]);

/* Whether a token (a token statement's part, or the one a member
 * carries) grants route r: r lies inside one of the token's routes. */
bool cert_token_grants(const struct cert_token_part *token, const struct cluster_route *r);

/* Copies a verified token statement into a member about to be signed
 * with that token's key. */
void cert_token_embed(struct cert *member, const struct cert *token);

/* A join token as a launch template carries it: the token's statement
 * and its secret key in one line ("ddpnet-jointoken:..."), so a new
 * machine can sign its own member certificate. Format: 0, -ENOSPC;
 * parse: 0 or -EINVAL (also when the secret does not match the
 * statement's key). The caller wipes the secret after use. */
int cert_join_token_format(const struct cert *token,
                           const uint8_t secret[CERT_SECRET_LEN],
                           char *out, size_t cap);
int cert_join_token_parse(const char *text, struct cert *token,
                          uint8_t secret[CERT_SECRET_LEN]);

/* When a member certificate stops counting (unix seconds): its not_after,
 * or its token's where that comes first. */
uint64_t cert_end(const struct cert *c);
/* Whether member certificate n renews o (docs/authority.md, "Renewal"):
 * the same key, the same name (case aside), the same fixed address (or
 * none, both), the same groups and routes, and a later end. A renewal changes nothing a peer is
 * made of, only how long it counts, so a member takes it in place with
 * no session reset. Who may sign one (the authority, or o's own token)
 * is the store's rule (certs.h); this is the shape alone, for whoever
 * picks the newer of two certificates for one node (up, with the one
 * kept in the state directory). */
bool cert_renews(const struct cert *n, const struct cert *o);

/* A short lowercase reason for a verdict, for error messages. */
const char *cert_verdict_str(enum cert_verdict v);
/* "member", "token", "revocation" ("unknown" otherwise). */
const char *cert_kind_str(enum cert_kind k);

/* A public key (the authority's, a token's) as text: standard base64 with
 * padding, CERT_KEY_TEXT_LEN characters, as `wg pubkey` prints a key.
 * Parse: surrounding spaces and a final newline allowed; 0 or -EINVAL. */
#define CERT_KEY_TEXT_LEN 44u
void cert_key_format(const uint8_t pub[CERT_PUBKEY_LEN], char out[CERT_KEY_TEXT_LEN + 1]);
int cert_key_parse(const char *text, uint8_t pub[CERT_PUBKEY_LEN]);

/* The authority's secret key file: one line "ddpnet-authority-secret:"
 * and the 32-byte Ed25519 seed (URL-safe base64, no padding), so it is
 * never taken for a WireGuard key. Format: 0 or -ENOSPC; parse: 0 or
 * -EINVAL. The caller wipes both after use. */
#define CERT_SECRET_TEXT_MAX 80u
int cert_secret_format(const uint8_t secret[CERT_SECRET_LEN], char *out, size_t cap);
int cert_secret_parse(const char *text, uint8_t secret[CERT_SECRET_LEN]);

/* The node a member certificate makes in cluster c (joining with no
 * server, or a member that passed it on): its name, key, aliases,
 * routes (which the caller checks against the grants it runs:
 * cluster_routes_admit) and groups (the bits of those c's file names; a
 * group the file never names matches only `any`), and
 * its address -- the one it fixes, else derived from its key (below). No
 * endpoint: discovery finds where it is. 0, -EINVAL (not a member
 * certificate, or a fixed address outside c's network), -ENOSPC (the
 * network has no host addresses). */
int cert_member_node(const struct cert *c, const struct cluster *cl, struct cluster_node *out);
/* The address rule for a certificate that fixes none, the same on every
 * node: the first 8 bytes of BLAKE2b-256("ddpnet-address" || key), as a
 * number, taken modulo the network's host addresses less its first and
 * last (n = 2^host_bits - 2, host_bits at most 62) and added, plus one,
 * to the network address. Two keys can land on one address: README
 * "Joining with an authority" says who wins. */
int cert_derive_address(const uint8_t key[CERT_PUBKEY_LEN], const struct cluster *cl,
                        struct cluster_addr *out);

#endif
