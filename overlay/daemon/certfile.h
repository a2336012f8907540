/* SPDX-License-Identifier: MIT */
/* This node's certificate file (`ddpnet up --cert FILE`, `[cluster]
 * authority`): where it is by default, and the checks `up` makes before
 * the daemon starts, each failure one line a person can act on. */
#ifndef DDPNET_CERTFILE_H
#define DDPNET_CERTFILE_H

#include <stddef.h>
#include <stdint.h>

#include "config/cert.h"
#include "config/cluster.h"

/* The default beside a key file: its path with `.cert` in place of a
 * final `.key` (else `.cert` added). 0 or -ENAMETOOLONG. */
int certfile_default_path(const char *key_path, char *buf, size_t len);

/* Checks certificate text (as the file holds it) for this node: a member
 * certificate that c's authority signed (directly or through a token),
 * valid at now (unix seconds), for public key pub and node name, and,
 * where it fixes an address and address is not NULL, that one. 0, or
 * -EINVAL with one line in err naming path and what to do. */
int certfile_check(const char *path, const char *text, const struct cluster *c,
                   const uint8_t pub[CLUSTER_KEY_LEN], const char *name,
                   const struct cluster_addr *address, uint64_t now, char *err, size_t errlen);

/* Reads path (at most CERT_TEXT_MAX bytes) into text (cap bytes, NUL
 * ended). 0, or -errno with one line in err: a missing file says how to
 * get one. */
int certfile_read(const char *path, char *text, size_t cap, char *err, size_t errlen);

/* The renewal kept in the state directory (STATE_DIR/IFNAME.cert, its
 * first line: membership/renewal.h writes it when a renewal of this
 * node's certificate comes): where it renews text (cert_renews: the same
 * key, name and address, a later end), it replaces text, so that a
 * restart keeps the newest certificate whatever the --cert file holds.
 * Checked no further here: the caller checks text as it would the
 * file's (certfile_check). 1 when replaced, 0 when not (no file, an
 * empty or damaged one, one for another node, an older one). */
int certfile_kept(const char *state_dir, const char *ifname, char *text, size_t cap);

#endif
