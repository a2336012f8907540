/* SPDX-License-Identifier: MIT */
/* WireGuard private keys as text: the 44 base64 characters that `wg genkey`
 * prints, optionally followed by whitespace, read from a key file or from
 * a stream, and written back. A key file that group or others may use is
 * refused, as ssh refuses such a private key. Every buffer that held key
 * material is wiped before these functions return. */
#ifndef DDPNET_KEYFILE_H
#define DDPNET_KEYFILE_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

/* Base64 writes 4 characters for every 3 bytes, the last group padded. */
#define KEYFILE_B64_LEN   (4u * ((WG_KEY_LEN + 2u) / 3u))   /* 44 */
/* The most bytes of key text we read: a key and generous whitespace. */
#define KEYFILE_TEXT_MAX  256u

/* Decodes text[0..len): exactly KEYFILE_B64_LEN base64 characters (the
 * canonical encoding of WG_KEY_LEN bytes) and nothing after them but
 * spaces, tabs, CR and LF. Returns 0, or -EBADMSG with key zeroed. */
int keyfile_parse(const char *text, size_t len, uint8_t key[WG_KEY_LEN]);

/* Writes key's base64 text, NUL-terminated, into out. */
void keyfile_format(char out[KEYFILE_B64_LEN + 1], const uint8_t key[WG_KEY_LEN]);

/* Reads fd to its end (at most KEYFILE_TEXT_MAX bytes; more is not a key)
 * and decodes it as keyfile_parse does. Returns 0, -EBADMSG, or -errno of
 * read; key is zeroed on failure. */
int keyfile_read_fd(int fd, uint8_t key[WG_KEY_LEN]);

/* Reads the private key file at path. Returns 0, or a negative errno with
 * key zeroed and one line for a person in err (when errlen > 0):
 *   -ENOENT   "PATH: no such file"
 *   -EINVAL   "PATH: not a regular file"
 *   -EPERM    "PATH: permissions 0644 are too open; run: chmod 600 PATH"
 *             (any permission bit for group or others, as ssh judges)
 *   -EBADMSG  "PATH: not a WireGuard private key (expected 44 base64 characters)"
 *   other     "PATH: <strerror>" */
int keyfile_read(const char *path, uint8_t key[WG_KEY_LEN], char *err, size_t errlen);

#endif
