/* SPDX-License-Identifier: MIT */
/* forge_cert: what a thief of a join token would make and `ddpnet
 * authority sign --token` refuses to: a member certificate signed with
 * the token's key for a name outside its prefix (tests/e2e/authority.sh
 * has a hostile member pass it on, and checks that no node takes it), or
 * carrying routes the token does not grant (tests/e2e/routes_cert.sh).
 *
 *   forge_cert TOKENFILE NAME PUBKEY [PREFIX,...]
 *
 * prints one ddpnet-member: line, valid for the token's lifetime, with no
 * address and no aliases, the routes given; exit 0, or 1 with a line on
 * stderr. */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "config/cert.h"
#include "config/routes.h"

#define TOKEN_MAX 4096

int main(int argc, char **argv)
{
    char token_text[TOKEN_MAX], out[CERT_TEXT_MAX];
    uint8_t secret[CERT_SECRET_LEN];
    struct cert token, c;
    size_t n;
    FILE *f;

    if (argc < 4 || argc > 5 || sodium_init() < 0) {
        fprintf(stderr, "usage: forge_cert TOKENFILE NAME PUBKEY [PREFIX,...]\n");
        return 1;
    }
    if (!(f = fopen(argv[1], "r"))) {
        perror(argv[1]);
        return 1;
    }
    n = fread(token_text, 1, sizeof(token_text) - 1, f);
    fclose(f);
    token_text[n] = '\0';
    if (cert_join_token_parse(token_text, &token, secret) != 0) {
        fprintf(stderr, "forge_cert: %s: not a join token\n", argv[1]);
        return 1;
    }
    memset(&c, 0, sizeof(c));
    c.kind = CERT_MEMBER;
    c.not_before = token.not_before;
    c.not_after = token.not_after;
    snprintf(c.name, sizeof(c.name), "%s", argv[2]);
    if (cert_key_parse(argv[3], c.subject) != 0) {
        fprintf(stderr, "forge_cert: %s: not a public key\n", argv[3]);
        return 1;
    }
    if (argc == 5) {
        const char *why = NULL;
        char bad[CLUSTER_ROUTE_TEXT_MAX + 1];

        if (cluster_routes_parse(argv[4], c.routes, &c.n_routes, &why, bad, sizeof(bad)) != 0) {
            fprintf(stderr, "forge_cert: %s: %s\n", bad, why);
            return 1;
        }
    }
    cert_token_embed(&c, &token);
    if (cert_sign(&c, secret, out, sizeof(out)) != 0) {
        fprintf(stderr, "forge_cert: cannot sign\n");
        return 1;
    }
    sodium_memzero(secret, sizeof(secret));
    puts(out);
    return 0;
}
