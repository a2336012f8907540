/* SPDX-License-Identifier: MIT */
/* Certificates renewed while nodes run (issue 56; docs/authority.md,
 * "Renewal").
 *
 * The authority re-signs a live member's certificate before it ends (the
 * same key, name and address, a later end: cert_renews), off the
 * cluster, and hands it to any one member (`ddpnet renew`), which
 * passes it on as any statement; every member's store takes it in
 * place of the old one (certs.h: the authority's word renews anything),
 * so the model is unchanged and no session is touched. This file is the
 * node's side of it:
 *  - the holder takes its own renewal: the newer certificate becomes the
 *    one it says on every session (dev->self_cert) and is kept in
 *    STATE_DIR/IFNAME.cert, which `up` prefers to the --cert file when
 *    it is newer, so a restart keeps the newest (renewal_open, set-up;
 *    the file is opened before privileges go and rewritten in place);
 *  - the end seen early: at each set point (RENEWAL_POINTS: a day, an
 *    hour, ten minutes, a minute before; those in the last third of its
 *    life) a certificate with no renewal yet is logged as a warning, this node's and each peer's, with what
 *    to run; at its end the peer's removal is logged and remembered for
 *    `status` (membership's `ended`).
 * No token is involved: a node never re-signs itself, so a token left on
 * disk keeps no one alive. Runs on the loop's thread, from
 * members_certs_run, before the store drops what ended. */
#ifndef DDPNET_RENEWAL_H
#define DDPNET_RENEWAL_H

#include <stdint.h>

#include "overlay/engine/model/device.h"

/* Seconds before a certificate's end at which the journal warns. */
#define RENEWAL_POINTS { 86400u, 3600u, 600u, 60u }
#define RENEWAL_N_POINTS 4u

/* The set point a certificate of lifetime `life` (s, as signed) crossed
 * as its time left went from left_before to left_now (s): the smallest p
 * with left_now <= p < left_before, among those shorter than a third of
 * its life (where `authority renew` renews it by default: a certificate
 * of 7 days warns at a day, one of 2 hours at ten minutes, one of 90 s
 * not at all); 0 when none. Pure, for the tests. */
uint64_t renewal_point(uint64_t life, uint64_t left_before, uint64_t left_now);
/* Seconds until the next set point of a certificate with `left` to go
 * (its end itself where none is left before it). */
uint64_t renewal_next(uint64_t life, uint64_t left);

/* The kept certificate's file, STATE_DIR/IFNAME.cert (made 0600 if
 * missing), for renewal_run to rewrite: its fd or -errno. The daemon
 * opens it at set-up (as root: the directory is root's), after
 * revocations_open checked the directory. */
int renewal_open(const char *state_dir, const char *ifname);
#define RENEWAL_FILE_SUFFIX ".cert"

/* Takes this node's renewal, warns at set points and notes the peers
 * whose certificate ends by now_unix; returns when to look again (unix
 * s; UINT64_MAX: nothing to wait for). */
uint64_t renewal_run(struct device *dev, uint64_t now_unix);

/* The text a person is told to run where a certificate is near its end. */
#define RENEWAL_WHAT_TO_DO "on the authority's machine: ddpnet certs on a member, piped to " \
    "ddpnet authority renew -a authority.key, piped to ddpnet renew - on a member " \
    "(docs/authority.md, \"Renewal\")"

#endif
