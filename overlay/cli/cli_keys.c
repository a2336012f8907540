/* SPDX-License-Identifier: MIT */
/* `ddpnet genkey` and `ddpnet pubkey`: the same text in and out as
 * `wg genkey` and `wg pubkey`, so keys move freely between the tools. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/x25519.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/daemon/keyfile.h"

/* Prints line and a newline on stdout; returns the exit status, failing
 * when stdout cannot take it (a full disk must not leave half a key). */
static int print_line(const char *verb, const char *line)
{
    if (puts(line) == EOF || fflush(stdout) != 0) {
        fprintf(stderr, "ddpnet %s: cannot write to stdout\n", verb);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

/* As wg does: a private key going into a file others may read deserves a
 * warning (the key is still written; the user chose the file). */
static void warn_if_world_readable(void)
{
    struct stat st;

    if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
        (st.st_mode & (S_IRWXG | S_IRWXO)))
        fprintf(stderr, "Warning: writing private key to world accessible file.\n");
}

int cli_genkey(int argc, char **argv)
{
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
    char text[KEYFILE_B64_LEN + 1];
    struct cli_args a;
    int ret = cli_args_handle(argc, argv, 0, 0, "", &a);

    if (ret != CLI_CONTINUE)
        return ret;
    if (crypto_core_init() != 0) {
        fprintf(stderr, "ddpnet genkey: cannot initialise libsodium\n");
        return CLI_EXIT_FAIL;
    }
    warn_if_world_readable();
    x25519_generate(priv, pub);
    keyfile_format(text, priv);
    ret = print_line("genkey", text);
    sodium_memzero(priv, sizeof(priv));
    sodium_memzero(text, sizeof(text));
    return ret;
}

int cli_pubkey(int argc, char **argv)
{
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
    char text[KEYFILE_B64_LEN + 1];
    struct cli_args a;
    int ret = cli_args_handle(argc, argv, 0, 0, "< PRIVATE-KEY", &a);

    if (ret != CLI_CONTINUE)
        return ret;
    if (crypto_core_init() != 0) {
        fprintf(stderr, "ddpnet pubkey: cannot initialise libsodium\n");
        return CLI_EXIT_FAIL;
    }
    /* x25519_public clamps, as wg pubkey does, so any 32 bytes are a key. */
    if (keyfile_read_fd(STDIN_FILENO, priv) != 0 || x25519_public(pub, priv) != 0) {
        sodium_memzero(priv, sizeof(priv));
        fprintf(stderr, "ddpnet pubkey: invalid private key on stdin\n");
        return CLI_EXIT_FAIL;
    }
    sodium_memzero(priv, sizeof(priv));
    keyfile_format(text, pub);
    return print_line("pubkey", text);
}
