/* SPDX-License-Identifier: MIT */
/* Tests of overlay/daemon/certfile.c: where `up` looks for this node's
 * certificate and what it refuses, each with a line a person can act on:
 * a missing file (naming the path and how to get one), another
 * authority's certificate, an expired one, one for another key, name or
 * address. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "overlay/daemon/certfile.h"

#define NOW  1800000000ull
#define HOUR 3600ull

static void test_default_path(void **state)
{
    char buf[64];

    (void)state;
    assert_int_equal(certfile_default_path("/etc/ddpnet/ddp0.key", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/etc/ddpnet/ddp0.cert");
    assert_int_equal(certfile_default_path("/tmp/node/key", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/tmp/node/key.cert");
    assert_int_equal(certfile_default_path(".key", buf, sizeof(buf)), 0);
    assert_string_equal(buf, ".key.cert");
    assert_int_equal(certfile_default_path("/a/very/long/path/that/does/not/fit/in/it.key",
                                           buf, 16), -ENAMETOOLONG);
}

static void test_missing_file(void **state)
{
    char text[CERT_TEXT_MAX + 1], err[512];

    (void)state;
    assert_int_equal(certfile_read("/nonexistent/ddp0.cert", text, sizeof(text), err,
                                   sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "/nonexistent/ddp0.cert: no such file"));
    assert_non_null(strstr(err, "ddpnet authority sign"));
}

struct fixture {
    struct cluster c;
    uint8_t sec[CERT_SECRET_LEN], other_sec[CERT_SECRET_LEN], other_pub[CERT_PUBKEY_LEN];
    uint8_t node_key[CLUSTER_KEY_LEN];
};

static void sign(const struct fixture *f, const uint8_t *sec, const char *name, uint64_t na,
                 const char *addr, char *out)
{
    struct cert c = { .kind = CERT_MEMBER, .not_before = NOW - HOUR, .not_after = na };

    memcpy(c.subject, f->node_key, CLUSTER_KEY_LEN);
    snprintf(c.name, sizeof(c.name), "%s", name);
    if (addr) {
        assert_int_equal(cluster_addr_parse(addr, &c.address), 0);
        c.has_address = true;
    }
    assert_int_equal(cert_sign(&c, sec, out, CERT_TEXT_MAX), 0);
}

static void test_checks(void **state)
{
    struct fixture f = { 0 };
    char text[CERT_TEXT_MAX], err[512];
    uint8_t other_key[CLUSTER_KEY_LEN] = { 9 };
    struct cluster_addr addr, other;

    (void)state;
    assert_int_equal(cert_keypair(f.c.authority, f.sec), 0);
    assert_int_equal(cert_keypair(f.other_pub, f.other_sec), 0);
    f.c.has_authority = true;
    f.node_key[0] = 7;
    assert_int_equal(cluster_addr_parse("10.77.0.9", &addr), 0);
    assert_int_equal(cluster_addr_parse("10.77.0.10", &other), 0);

    sign(&f, f.sec, "gpu-1", NOW + HOUR, NULL, text);
    assert_int_equal(certfile_check("F", text, &f.c, f.node_key, "gpu-1", NULL, NOW, err,
                                    sizeof(err)), 0);
    assert_int_equal(certfile_check("F", text, &f.c, f.node_key, "GPU-1", &addr, NOW, err,
                                    sizeof(err)), 0);
    assert_int_equal(certfile_check("F", text, &f.c, f.node_key, "gpu-2", NULL, NOW, err,
                                    sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "for the name gpu-1, not gpu-2"));
    assert_int_equal(certfile_check("F", text, &f.c, other_key, "gpu-1", NULL, NOW, err,
                                    sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "another public key"));
    assert_int_equal(certfile_check("F", text, &f.c, f.node_key, "gpu-1", NULL,
                                    NOW + 2 * HOUR, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "F: the certificate does not hold"));
    assert_int_equal(certfile_check("F", "junk", &f.c, f.node_key, "gpu-1", NULL, NOW, err,
                                    sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not a member certificate"));

    sign(&f, f.other_sec, "gpu-1", NOW + HOUR, NULL, text);
    assert_int_equal(certfile_check("F", text, &f.c, f.node_key, "gpu-1", NULL, NOW, err,
                                    sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not signed by the cluster file's authority"));

    sign(&f, f.sec, "gpu-1", NOW + HOUR, "10.77.0.9", text);
    assert_int_equal(certfile_check("F", text, &f.c, f.node_key, "gpu-1", &addr, NOW, err,
                                    sizeof(err)), 0);
    assert_int_equal(certfile_check("F", text, &f.c, f.node_key, "gpu-1", &other, NOW, err,
                                    sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "fixes the address 10.77.0.9, and this node has 10.77.0.10"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_checks),
    };

    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
