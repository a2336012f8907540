/* SPDX-License-Identifier: MIT */
/* Tests of groups and rules (config/rules.h): the rule syntax and its
 * errors with their lines through the cluster file, the groups of a node,
 * first-match order, the default (none written: open; any written:
 * refused), ports and protocols, and the text forms. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/cluster.h"
#include "config/rules.h"

#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="
#define C4 "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
/* Lines 4-7 and 8-11. */
#define NA "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\ngroups = train, onprem\n"
#define NB "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\ngroups = spot\n"

static int parse(const char *text, struct cluster *c, struct cluster_diag *d)
{
    return cluster_parse(text, strlen(text), c, d);
}

static void one_error(const char *text, int line, const char *message)
{
    struct cluster c;
    struct cluster_diag d;

    assert_int_equal(parse(text, &c, &d), -EINVAL);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.items[0].line, line);
    assert_string_equal(d.items[0].message, message);
}

static void test_groups_and_rules(void **state)
{
    (void)state;
    struct cluster c;
    struct cluster_diag d;
    char buf[200];
    const char *text = C4 NA NB "[rules]\n"
                       "allow spot -> train tcp 29400-29600   # torchrun\n"
                       "allow any -> any icmp\n"
                       "allow monitor,onprem -> any tcp 9586\n"
                       "allow train -> any any\n";

    assert_int_equal(parse(text, &c, &d), 0);
    assert_int_equal(c.rules.n, 4);
    assert_int_equal(c.rules_line, 12);
    assert_int_equal(c.rules.rule[0].line, 13);
    /* names in order of first appearance: train, onprem, spot, monitor */
    assert_int_equal(c.nodes[0].groups, 0x3);
    assert_int_equal(c.nodes[1].groups, 0x4);
    assert_int_equal(rules_group_mask(&c.rules, "monitor"), 0x8);
    assert_int_equal(rules_group_mask(&c.rules, "nobody"), 0);
    assert_true(rules_group_mask(&c.rules, "any") == RULES_ANY);
    assert_int_equal(rules_format(&c.rules, 0, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "allow spot -> train tcp 29400-29600");
    assert_int_equal(rules_format(&c.rules, 2, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "allow onprem,monitor -> any tcp 9586");
    assert_int_equal(rules_format(&c.rules, 3, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "allow train -> any any");
    assert_int_equal(rules_groups_format(&c.rules, c.nodes[0].groups, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "train,onprem");
    assert_int_equal(rules_groups_format(&c.rules, 0, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "-");
    cluster_free(&c);
}

static void test_match(void **state)
{
    (void)state;
    struct cluster c;
    const char *text = C4 NA NB "[rules]\n"
                       "allow spot -> train tcp 29400-29600\n"
                       "allow any -> any icmp\n"
                       "allow monitor -> any tcp 9586\n"
                       "allow spot -> any udp\n";
    uint64_t train = 0x1, spot = 0x4, monitor = 0x8;

    assert_int_equal(parse(text, &c, NULL), 0);
    assert_int_equal(rules_match(&c.rules, spot, train, 6, 29400), 0);
    assert_int_equal(rules_match(&c.rules, spot, train, 6, 29600), 0);
    assert_int_equal(rules_match(&c.rules, spot, train | 0x2, 6, 29500), 0);
    assert_int_equal(rules_match(&c.rules, spot, train, 6, 29601), RULES_REFUSED);
    assert_int_equal(rules_match(&c.rules, spot, train, 6, 22), RULES_REFUSED);
    assert_int_equal(rules_match(&c.rules, spot, train, 6, 29399), RULES_REFUSED);
    /* not the other way round: a rule names who opens */
    assert_int_equal(rules_match(&c.rules, train, spot, 6, 29500), RULES_REFUSED);
    /* icmp stands for both; any matches a node of no group */
    assert_int_equal(rules_match(&c.rules, 0, 0, 1, 0), 1);
    assert_int_equal(rules_match(&c.rules, 0, 0, 58, 0), 1);
    assert_int_equal(rules_match(&c.rules, monitor, train, 6, 9586), 2);
    assert_int_equal(rules_match(&c.rules, monitor, train, 17, 9586), RULES_REFUSED);
    assert_int_equal(rules_match(&c.rules, spot, 0, 17, 53), 3);
    assert_int_equal(rules_match(&c.rules, 0, train, 6, 29500), RULES_REFUSED);
    /* a protocol no rule names */
    assert_int_equal(rules_match(&c.rules, spot, train, 132, 0), RULES_REFUSED);
    cluster_free(&c);

    /* none written: open */
    assert_int_equal(parse(C4 NA, &c, NULL), 0);
    assert_int_equal(rules_match(&c.rules, 0, 0, 6, 22), RULES_OPEN);
    cluster_free(&c);
}

/* The first rule that fits is the one that answers. */
static void test_first_match(void **state)
{
    (void)state;
    struct cluster_rules r = { 0 };
    char why[200];

    assert_int_equal(rules_line_parse(&r, "allow a -> b tcp 100-200", 1, why, sizeof(why)), 0);
    assert_int_equal(rules_line_parse(&r, "allow any -> b tcp", 2, why, sizeof(why)), 0);
    assert_int_equal(rules_match(&r, 1, 2, 6, 150), 0);
    assert_int_equal(rules_match(&r, 1, 2, 6, 250), 1);
    assert_int_equal(rules_match(&r, 0, 2, 6, 150), 1);
}

static void test_errors(void **state)
{
    (void)state;
    one_error(C4 NA "[rules]\nallow spot train tcp\n", 9,
              "bad rule (expected allow SRC -> DST PROTO [PORT[-PORT]], as allow spot -> "
              "train tcp 29400-29600)");
    one_error(C4 NA "[rules]\ndeny spot -> train tcp\n", 9,
              "bad rule (expected allow SRC -> DST PROTO [PORT[-PORT]], as allow spot -> "
              "train tcp 29400-29600)");
    one_error(C4 NA "[rules]\nallow spot -> train sctp\n", 9,
              "bad protocol 'sctp' (expected tcp, udp, icmp or any)");
    one_error(C4 NA "[rules]\nallow spot -> train icmp 8\n", 9,
              "a port is for tcp or udp only");
    one_error(C4 NA "[rules]\nallow spot -> train tcp 0\n", 9,
              "bad port '0' (expected 1..65535, or a range as 29400-29600)");
    one_error(C4 NA "[rules]\nallow spot -> train tcp 600-500\n", 9,
              "bad port '600-500' (expected 1..65535, or a range as 29400-29600)");
    one_error(C4 NA "[rules]\nallow spot -> train tcp 65536\n", 9,
              "bad port '65536' (expected 1..65535, or a range as 29400-29600)");
    one_error(C4 NA "[rules]\nallow spot -> train tcp 1-2x\n", 9,
              "bad port '1-2x' (expected 1..65535, or a range as 29400-29600)");
    one_error(C4 NA "[rules]\nallow spot -> train tcp 22 ssh\n", 9,
              "unexpected text after the rule (expected allow SRC -> DST PROTO [PORT[-PORT]])");
    one_error(C4 NA "[rules]\nallow sp!t -> train tcp\n", 9,
              "bad group 'sp!t': a group is letters, digits, '-' and '_', at most 31 "
              "characters, not 'any'");
    one_error(C4 NA "[rules]\nallow spot, -> train tcp\n", 9,
              "bad group '': a group is letters, digits, '-' and '_', at most 31 "
              "characters, not 'any'");
    one_error(C4 "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\ngroups = any\n", 7,
              "groups: bad group 'any': a group is letters, digits, '-' and '_', at most 31 "
              "characters, not 'any'");
    one_error(C4 "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\n"
              "groups = a b c d e f g h i\n", 7, "groups: too many groups (at most 8 a node)");
    /* quoted text is printable: the error list is one line each */
    one_error(C4 NA "[rules]\nallow sp\377t -> train tcp\n", 9,
              "bad group 'sp?t': a group is letters, digits, '-' and '_', at most 31 "
              "characters, not 'any'");
    one_error(C4 NA "[rules]\nallow spot -> train t\001p\n", 9,
              "bad protocol 't?p' (expected tcp, udp, icmp or any)");
    one_error(C4 NA "[rules]\nallow spot -> train tcp 2\377\n", 9,
              "bad port '2?' (expected 1..65535, or a range as 29400-29600)");
    /* a [rules] section takes no key = value */
    one_error(C4 NA "[rules]\nport = 22\n", 9,
              "bad rule (expected allow SRC -> DST PROTO [PORT[-PORT]], as allow spot -> "
              "train tcp 29400-29600)");
}

static void test_limits(void **state)
{
    (void)state;
    static struct cluster_rules r;
    char why[200], line[64];
    unsigned bit;
    const char *reason;

    memset(&r, 0, sizeof(r));
    for (unsigned i = 0; i < RULES_GROUPS_MAX; i++) {
        snprintf(line, sizeof(line), "g%u", i);
        assert_int_equal(rules_group_bit(&r, line, &bit, &reason), 0);
        assert_int_equal(bit, i);
    }
    assert_int_equal(rules_group_bit(&r, "one-more", &bit, &reason), -ENOSPC);
    /* a name already there still answers; case does not make a new one */
    assert_int_equal(rules_group_bit(&r, "G7", &bit, &reason), 0);
    assert_int_equal(bit, 7);
    for (unsigned i = 0; i < RULES_MAX; i++)
        assert_int_equal(rules_line_parse(&r, "allow g1 -> g2 udp 53", 1, why, sizeof(why)), 0);
    assert_int_equal(rules_line_parse(&r, "allow g1 -> g2 udp 53", 1, why, sizeof(why)),
                     -ENOSPC);
    assert_string_equal(why, "too many rules (at most 256)");
}

static void test_equal(void **state)
{
    (void)state;
    struct cluster a, b;

    assert_int_equal(parse(C4 NA "[rules]\nallow train -> onprem tcp 22\n", &a, NULL), 0);
    assert_int_equal(parse(C4 NA "[rules]\nallow train -> onprem tcp 22   # ssh\n", &b, NULL), 0);
    assert_true(rules_equal(&a.rules, &b.rules));
    cluster_free(&b);
    assert_int_equal(parse(C4 NA "[rules]\nallow train -> onprem tcp 23\n", &b, NULL), 0);
    assert_false(rules_equal(&a.rules, &b.rules));
    cluster_free(&b);
    assert_int_equal(parse(C4 NA, &b, NULL), 0);
    assert_false(rules_equal(&a.rules, &b.rules));
    cluster_free(&b);
    cluster_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_and_rules),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_first_match),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
