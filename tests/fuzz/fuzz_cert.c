/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for config/cert.c: statements anyone may hand a node
 * (a member passes certificates on; a registry holds them). The first
 * byte picks how the rest is read: 0, as text through every parser
 * (cert_parse, cert_join_token_parse, cert_key_parse, cert_secret_parse);
 * 1..4, as the binary form behind the "ddpnet-member:", "ddpnet-token:",
 * "ddpnet-revoke:" or "ddpnet-jointoken:" prefix (base64 done here, so
 * the fuzzer reaches the layout without guessing base64).
 *
 * What parses must: verify without crashing against a fixed authority and
 * against its own signer; keep the same id on a second look; sign again
 * (a fixed key in place of its signer) into text that parses back to the
 * same fields, because parse and sign share one idea of a valid field.
 * A refusal must leave the statement zeroed. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX 2048u

static const char *const prefixes[] = {
    NULL, "ddpnet-member:", "ddpnet-token:", "ddpnet-revoke:", "ddpnet-jointoken:",
};

static uint8_t fixed_pub[CERT_PUBKEY_LEN], fixed_secret[CERT_SECRET_LEN];

static void init(void)
{
    static bool done;
    uint8_t seed[crypto_sign_SEEDBYTES] = { 7 };

    if (done)
        return;
    if (sodium_init() < 0 || crypto_sign_seed_keypair(fixed_pub, fixed_secret, seed) != 0)
        abort();
    done = true;
}

static bool all_zero(const void *p, size_t len)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < len; i++)
        if (b[i])
            return false;
    return true;
}

static void same_fields(const struct cert *a, const struct cert *b)
{
    if (a->kind != b->kind || a->not_before != b->not_before || a->not_after != b->not_after ||
        memcmp(a->subject, b->subject, CERT_PUBKEY_LEN) || strcmp(a->name, b->name) ||
        a->has_address != b->has_address || a->n_aliases != b->n_aliases ||
        a->max_members != b->max_members || a->has_token != b->has_token)
        abort();
    if (a->has_address && !cluster_addr_equal(&a->address, &b->address))
        abort();
    for (unsigned i = 0; i < a->n_aliases; i++)
        if (strcmp(a->aliases[i], b->aliases[i]))
            abort();
    if (a->n_groups != b->n_groups)
        abort();
    for (unsigned i = 0; i < a->n_groups; i++)
        if (strcmp(a->groups[i], b->groups[i]))
            abort();
    if (a->n_routes != b->n_routes)
        abort();
    for (unsigned i = 0; i < a->n_routes; i++)
        if (a->routes[i].prefix != b->routes[i].prefix ||
            !cluster_addr_equal(&a->routes[i].net, &b->routes[i].net))
            abort();
    if (a->has_token && (memcmp(&a->token, &b->token, sizeof(a->token)) ||
                         memcmp(a->token_sig, b->token_sig, CERT_SIG_LEN)))
        abort();
}

static void check_parsed(const struct cert *c)
{
    struct cert again = *c, back;
    uint8_t id1[CERT_ID_LEN], id2[CERT_ID_LEN];
    static char text[CERT_TEXT_MAX];

    if (c->kind == CERT_MEMBER && !cluster_name_valid(c->name))
        abort();
    (void)cert_verify(c, fixed_pub, 0);
    (void)cert_verify(c, c->signer, UINT64_MAX);
    (void)cert_verify(c, c->has_token ? c->token.signer : c->signer, c->not_before);
    cert_id(c, id1);
    cert_id(c, id2);
    if (memcmp(id1, id2, CERT_ID_LEN))
        abort();
    (void)cert_token_id(c, id1);
    if (again.has_token)
        memcpy(again.token.key, fixed_pub, CERT_PUBKEY_LEN);
    if (cert_sign(&again, fixed_secret, text, sizeof(text)) != 0 ||
        cert_parse(text, &back) != 0)
        abort();
    same_fields(&again, &back);
    if (cert_verify(&back, fixed_pub, back.not_before) == CERT_WRONG_KIND)
        abort();
}

static void check_text(const char *text)
{
    struct cert c;
    uint8_t key[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN];

    if (cert_parse(text, &c) == 0)
        check_parsed(&c);
    else if (!all_zero(&c, sizeof(c)))
        abort();
    if (cert_join_token_parse(text, &c, secret) == 0) {
        if (c.kind != CERT_TOKEN || memcmp(secret + 32, c.subject, CERT_PUBKEY_LEN))
            abort();
        check_parsed(&c);
    } else if (!all_zero(&c, sizeof(c)) || !all_zero(secret, sizeof(secret))) {
        abort();
    }
    (void)cert_key_parse(text, key);
    (void)cert_secret_parse(text, secret);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[INPUT_MAX * 2];
    size_t plen;

    init();
    if (size == 0 || size > INPUT_MAX || data[0] >= sizeof(prefixes) / sizeof(prefixes[0]))
        return 0;
    if (data[0] == 0) {
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
    } else {
        plen = strlen(prefixes[data[0]]);
        memcpy(text, prefixes[data[0]], plen);
        sodium_bin2base64(text + plen, sizeof(text) - plen, data + 1, size - 1,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    }
    check_text(text);
    return 0;
}
