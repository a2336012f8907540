/* The authority's statements for e2e scripts, made with config/cert.h's
 * cert_sign (the scripts need no `ddpnet authority` to test what the
 * daemon does with them):
 *   certsign init DIR                       DIR/pub (base64), DIR/secret
 *   certsign member DIR NAME PUBKEY SECONDS [ADDRESS]
 *                                           a member certificate valid from a
 *                                           minute ago for SECONDS from now
 *   certsign revoke DIR CERTIFICATE         the revocation of that statement
 * Each prints one line on stdout; exit 1 with a reason on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"

#define PATH_MAX_LEN 4096
#define SLACK_S      60

static int die(const char *why)
{
    fprintf(stderr, "certsign: %s\n", why);
    return 1;
}

static int write_file(const char *dir, const char *name, const void *p, size_t len)
{
    char path[PATH_MAX_LEN];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (!(f = fopen(path, "w")) || fwrite(p, 1, len, f) != len || fclose(f))
        return -EIO;
    return 0;
}

static int read_secret(const char *dir, uint8_t secret[CERT_SECRET_LEN])
{
    char path[PATH_MAX_LEN];
    FILE *f;
    size_t got;

    snprintf(path, sizeof(path), "%s/secret", dir);
    if (!(f = fopen(path, "r")))
        return -errno;
    got = fread(secret, 1, CERT_SECRET_LEN, f);
    fclose(f);
    return got == CERT_SECRET_LEN ? 0 : -EINVAL;
}

static int init(const char *dir)
{
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN];
    char b64[sodium_base64_ENCODED_LEN(CERT_PUBKEY_LEN, sodium_base64_VARIANT_ORIGINAL)];

    if (cert_keypair(pub, secret))
        return die("no key pair");
    sodium_bin2base64(b64, sizeof(b64), pub, sizeof(pub), sodium_base64_VARIANT_ORIGINAL);
    if (write_file(dir, "secret", secret, sizeof(secret)) ||
        write_file(dir, "pub", b64, strlen(b64)))
        return die("cannot write the key files");
    printf("%s\n", b64);
    return 0;
}

static int member(char **argv, int argc)
{
    struct cert c = { .kind = CERT_MEMBER };
    uint8_t secret[CERT_SECRET_LEN];
    char out[CERT_TEXT_MAX];
    size_t len = 0;
    uint64_t now = (uint64_t)time(NULL);

    if (read_secret(argv[2], secret))
        return die("no authority secret in DIR");
    snprintf(c.name, sizeof(c.name), "%s", argv[3]);
    if (sodium_base642bin(c.subject, sizeof(c.subject), argv[4], strlen(argv[4]), NULL, &len,
                          NULL, sodium_base64_VARIANT_ORIGINAL) || len != CERT_PUBKEY_LEN)
        return die("bad PUBKEY");
    c.not_before = now - SLACK_S;
    c.not_after = now + strtoull(argv[5], NULL, 10);
    if (argc > 6) {
        if (cluster_addr_parse(argv[6], &c.address) < 0)
            return die("bad ADDRESS");
        c.has_address = true;
    }
    if (cert_sign(&c, secret, out, sizeof(out)))
        return die("cannot sign");
    printf("%s\n", out);
    return 0;
}

static int revoke(char **argv)
{
    struct cert c, r = { .kind = CERT_REVOCATION };
    uint8_t secret[CERT_SECRET_LEN];
    char out[CERT_TEXT_MAX];

    if (read_secret(argv[2], secret))
        return die("no authority secret in DIR");
    if (cert_parse(argv[3], &c))
        return die("bad CERTIFICATE");
    cert_id(&c, r.subject);
    r.not_before = (uint64_t)time(NULL) - SLACK_S;
    if (cert_sign(&r, secret, out, sizeof(out)))
        return die("cannot sign");
    printf("%s\n", out);
    return 0;
}

int main(int argc, char **argv)
{
    if (sodium_init() < 0)
        return die("libsodium");
    if (argc == 3 && !strcmp(argv[1], "init"))
        return init(argv[2]);
    if ((argc == 6 || argc == 7) && !strcmp(argv[1], "member"))
        return member(argv, argc);
    if (argc == 4 && !strcmp(argv[1], "revoke"))
        return revoke(argv);
    return die("usage: certsign init DIR | member DIR NAME PUBKEY SECONDS [ADDRESS] | "
               "revoke DIR CERTIFICATE");
}
