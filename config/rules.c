/* SPDX-License-Identifier: MIT */
/* Groups and rules: the [rules] syntax, the group names' bits and the
 * matcher (config/rules.h says what each means). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/rules.h"

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

/* s[0..n) cut to QUOTE_MAX characters, anything not printable ASCII
 * shown as '?', into q (QUOTE_MAX + 1 bytes): a message quotes the text a
 * person wrote and stays one printable line. */
#define QUOTE_MAX 40u
static const char *quote(char q[QUOTE_MAX + 1], const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n && i < QUOTE_MAX; i++)
        q[i] = s[i] >= ' ' && s[i] <= '~' ? s[i] : '?';
    q[i] = '\0';
    return q;
}

static bool group_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > RULES_GROUP_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(name[i]))
            return false;
    return true;
}

static int find_group(const struct cluster_rules *r, const char *name, size_t len)
{
    for (unsigned i = 0; i < r->n_groups; i++)
        if (strlen(r->group[i]) == len && !strncasecmp(r->group[i], name, len))
            return (int)i;
    return -1;
}

static bool is_any(const char *name, size_t len)
{
    return len == 3 && !strncasecmp(name, "any", 3);
}

bool rules_group_name_valid(const char *name)
{
    size_t len = strnlen(name, RULES_GROUP_NAME_MAX + 1);

    return group_name_ok(name, len) && !is_any(name, len);
}

static int group_bit_n(struct cluster_rules *r, const char *name, size_t len, unsigned *bit,
                       const char **why)
{
    int i;

    if (!group_name_ok(name, len) || is_any(name, len)) {
        *why = "a group is letters, digits, '-' and '_', at most 31 characters, not 'any'";
        return -EINVAL;
    }
    i = find_group(r, name, len);
    if (i < 0) {
        if (r->n_groups == RULES_GROUPS_MAX) {
            *why = "too many groups (at most 63 names in one file)";
            return -ENOSPC;
        }
        i = r->n_groups++;
        memcpy(r->group[i], name, len);
        r->group[i][len] = '\0';
    }
    *bit = (unsigned)i;
    return 0;
}

int rules_group_bit(struct cluster_rules *r, const char *name, unsigned *bit, const char **why)
{
    return group_bit_n(r, name, strlen(name), bit, why);
}

uint64_t rules_group_mask(const struct cluster_rules *r, const char *name)
{
    size_t len = strlen(name);
    int i;

    if (is_any(name, len))
        return RULES_ANY;
    i = find_group(r, name, len);
    return i < 0 ? 0 : 1ull << i;
}

int rules_groups_parse(struct cluster_rules *r, const char *text, uint64_t *mask, char *why,
                       size_t len)
{
    const char *at = text, *reason;
    char q[QUOTE_MAX + 1];
    unsigned n = 0, bit;

    *mask = 0;
    for (;;) {
        at += strspn(at, " \t,");
        if (!*at)
            break;
        size_t w = strcspn(at, " \t,");
        if (++n > RULES_NODE_GROUPS_MAX) {
            snprintf(why, len, "too many groups (at most %u a node)", RULES_NODE_GROUPS_MAX);
            return -EINVAL;
        }
        if (group_bit_n(r, at, w, &bit, &reason) < 0) {
            snprintf(why, len, "bad group '%s': %s", quote(q, at, w), reason);
            return -EINVAL;
        }
        *mask |= 1ull << bit;
        at += w;
    }
    if (n == 0) {
        snprintf(why, len, "no group named");
        return -EINVAL;
    }
    return 0;
}

/* A side of a rule: `any`, or groups joined by commas with no space. */
static int side_parse(struct cluster_rules *r, const char *word, uint64_t *mask, char *why,
                      size_t len)
{
    const char *at = word, *reason;
    char q[QUOTE_MAX + 1];
    unsigned bit;

    if (is_any(word, strlen(word))) {
        *mask = RULES_ANY;
        return 0;
    }
    *mask = 0;
    for (;;) {
        size_t w = strcspn(at, ",");
        if (group_bit_n(r, at, w, &bit, &reason) < 0) {
            snprintf(why, len, "bad group '%s': %s", quote(q, at, w), reason);
            return -EINVAL;
        }
        *mask |= 1ull << bit;
        if (!at[w])
            return 0;
        at += w + 1;
    }
}

static const struct {
    const char *name;
    uint8_t proto;
} protos[] = {
    { "any", RULES_PROTO_ANY }, { "tcp", RULES_PROTO_TCP }, { "udp", RULES_PROTO_UDP },
    { "icmp", RULES_PROTO_ICMP },
};

static const char *proto_name(uint8_t proto)
{
    for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
        if (protos[i].proto == proto)
            return protos[i].name;
    return "?";
}

/* "N" or "N-M", 0 < N <= M <= 65535. */
static int ports_parse(const char *s, uint16_t *lo, uint16_t *hi)
{
    unsigned a = 0, b;
    size_t i = 0, digits;

    for (digits = 0; s[i] >= '0' && s[i] <= '9' && digits < 6; i++, digits++)
        a = a * 10 + (unsigned)(s[i] - '0');
    if (digits == 0 || digits == 6 || a == 0 || a > 65535)
        return -EINVAL;
    b = a;
    if (s[i] == '-') {
        b = 0;
        i++;
        for (digits = 0; s[i] >= '0' && s[i] <= '9' && digits < 6; i++, digits++)
            b = b * 10 + (unsigned)(s[i] - '0');
        if (digits == 0 || digits == 6 || b > 65535 || b < a)
            return -EINVAL;
    }
    if (s[i])
        return -EINVAL;
    *lo = (uint16_t)a;
    *hi = (uint16_t)b;
    return 0;
}

#define RULE_WORDS 7u

int rules_line_parse(struct cluster_rules *r, const char *text, int line, char *why,
                     size_t len)
{
    char buf[512], *word[RULE_WORDS], *save = NULL;
    struct rule rule = { .port_lo = 0, .port_hi = 65535, .line = line };
    char q[QUOTE_MAX + 1];
    size_t n = 0, p;
    char *w;

    if (strlen(text) >= sizeof(buf)) {
        snprintf(why, len, "rule too long");
        return -EINVAL;
    }
    memcpy(buf, text, strlen(text) + 1);
    for (w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (n == RULE_WORDS) {
            snprintf(why, len, "unexpected text after the rule (expected allow SRC -> DST "
                     "PROTO [PORT[-PORT]])");
            return -EINVAL;
        }
        word[n++] = w;
    }
    if (n < 5 || strcmp(word[0], "allow") || strcmp(word[2], "->")) {
        snprintf(why, len, "bad rule (expected allow SRC -> DST PROTO [PORT[-PORT]], as "
                 "allow spot -> train tcp 29400-29600)");
        return -EINVAL;
    }
    if (r->n == RULES_MAX) {
        snprintf(why, len, "too many rules (at most %u)", RULES_MAX);
        return -ENOSPC;
    }
    if (side_parse(r, word[1], &rule.src, why, len) < 0 ||
        side_parse(r, word[3], &rule.dst, why, len) < 0)
        return -EINVAL;
    for (p = 0; p < sizeof(protos) / sizeof(protos[0]) && strcmp(protos[p].name, word[4]); p++)
        ;
    if (p == sizeof(protos) / sizeof(protos[0])) {
        snprintf(why, len, "bad protocol '%s' (expected tcp, udp, icmp or any)",
                 quote(q, word[4], strlen(word[4])));
        return -EINVAL;
    }
    rule.proto = protos[p].proto;
    if (n == 6) {
        if (rule.proto != RULES_PROTO_TCP && rule.proto != RULES_PROTO_UDP) {
            snprintf(why, len, "a port is for tcp or udp only");
            return -EINVAL;
        }
        if (ports_parse(word[5], &rule.port_lo, &rule.port_hi) < 0) {
            snprintf(why, len, "bad port '%s' (expected 1..65535, or a range as "
                     "29400-29600)", quote(q, word[5], strlen(word[5])));
            return -EINVAL;
        }
    } else if (n > 6) {
        snprintf(why, len, "unexpected text after the rule (expected allow SRC -> DST "
                 "PROTO [PORT[-PORT]])");
        return -EINVAL;
    }
    r->rule[r->n++] = rule;
    return 0;
}

int rules_match(const struct cluster_rules *r, uint64_t src, uint64_t dst, uint8_t proto,
                uint16_t port)
{
    bool ported = proto == RULES_PROTO_TCP || proto == RULES_PROTO_UDP;
    uint8_t kind = proto == RULES_PROTO_ICMPV6 ? RULES_PROTO_ICMP : proto;

    if (r->n == 0)
        return RULES_OPEN;
    for (unsigned i = 0; i < r->n; i++) {
        const struct rule *u = &r->rule[i];
        if (u->src != RULES_ANY && !(u->src & src))
            continue;
        if (u->dst != RULES_ANY && !(u->dst & dst))
            continue;
        if (u->proto != RULES_PROTO_ANY && u->proto != kind)
            continue;
        if (ported && (port < u->port_lo || port > u->port_hi))
            continue;
        return (int)i;
    }
    return RULES_REFUSED;
}

int rules_groups_format(const struct cluster_rules *r, uint64_t mask, char *buf, size_t len)
{
    size_t at = 0;
    int n;

    if (len == 0)
        return -ENOSPC;
    buf[0] = '\0';
    if (mask == RULES_ANY)
        return snprintf(buf, len, "any") < (int)len ? 0 : -ENOSPC;
    for (unsigned i = 0; i < r->n_groups; i++) {
        if (!(mask & (1ull << i)))
            continue;
        n = snprintf(buf + at, len - at, "%s%s", at ? "," : "", r->group[i]);
        if (n < 0 || (size_t)n >= len - at)
            return -ENOSPC;
        at += (size_t)n;
    }
    if (at == 0)
        return snprintf(buf, len, "-") < (int)len ? 0 : -ENOSPC;
    return 0;
}

int rules_format(const struct cluster_rules *r, size_t i, char *buf, size_t len)
{
    char src[RULES_GROUPS_MAX * (RULES_GROUP_NAME_MAX + 1) + 1];
    char dst[sizeof(src)], ports[16] = "";
    const struct rule *u;
    int n;

    if (i >= r->n)
        return -EINVAL;
    u = &r->rule[i];
    if (rules_groups_format(r, u->src, src, sizeof(src)) < 0 ||
        rules_groups_format(r, u->dst, dst, sizeof(dst)) < 0)
        return -ENOSPC;
    if (u->port_lo == u->port_hi)
        snprintf(ports, sizeof(ports), " %u", u->port_lo);
    else if (u->port_lo != 0 || u->port_hi != 65535)
        snprintf(ports, sizeof(ports), " %u-%u", u->port_lo, u->port_hi);
    n = snprintf(buf, len, "allow %s -> %s %s%s", src, dst, proto_name(u->proto), ports);
    return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

bool rules_equal(const struct cluster_rules *a, const struct cluster_rules *b)
{
    if (a->n == 0 && b->n == 0)
        return true;     /* no rule: the names mean nothing to the filter */
    if (a->n != b->n || a->n_groups != b->n_groups)
        return false;
    for (unsigned i = 0; i < a->n_groups; i++)
        if (strcmp(a->group[i], b->group[i]))
            return false;
    for (unsigned i = 0; i < a->n; i++) {
        const struct rule *x = &a->rule[i], *y = &b->rule[i];
        if (x->src != y->src || x->dst != y->dst || x->proto != y->proto ||
            x->port_lo != y->port_lo || x->port_hi != y->port_hi)
            return false;
    }
    return true;
}
