/* The nodes of registry tests (registry_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "tests/unit/registry_fixture.h"

struct cluster_node registry_fixture_node(const char *name, const char *key)
{
    struct cluster_node n;
    size_t len = 0;

    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "%s", name);
    assert_int_equal(sodium_base642bin(n.public_key, CLUSTER_KEY_LEN, key, strlen(key), NULL,
                                       &len, NULL, sodium_base64_VARIANT_ORIGINAL), 0);
    return n;
}
