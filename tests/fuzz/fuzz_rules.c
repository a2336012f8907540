/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for the rule syntax (config/rules.h): arbitrary bytes,
 * line by line, into one rule list, as a [rules] section's lines. Each line
 * is taken or refused with a printable message; what is taken must print back as a
 * rule that parses to the same rule, its groups named and its port range
 * in order; and the matcher answers every query with a rule that fits it,
 * or RULES_REFUSED only when none does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cluster_rules r, again;

static bool fits(const struct rule *u, uint64_t src, uint64_t dst, uint8_t proto, uint16_t port)
{
    uint8_t kind = proto == RULES_PROTO_ICMPV6 ? RULES_PROTO_ICMP : proto;

    return (u->src == RULES_ANY || (u->src & src)) && (u->dst == RULES_ANY || (u->dst & dst)) &&
           (u->proto == RULES_PROTO_ANY || u->proto == kind) &&
           ((proto != RULES_PROTO_TCP && proto != RULES_PROTO_UDP) ||
            (port >= u->port_lo && port <= u->port_hi));
}

/* Mask a of r and mask b of again name the same groups. */
static bool same_names(uint64_t a, uint64_t b)
{
    if (a == RULES_ANY || b == RULES_ANY)
        return a == b;
    if (__builtin_popcountll(a) != __builtin_popcountll(b))
        return false;
    for (unsigned g = 0; g < r.n_groups; g++)
        if ((a & (1ull << g)) && !(rules_group_mask(&again, r.group[g]) & b))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char line[600], why[200], text[4200];
    size_t at = 0;
    int n = 0;

    memset(&r, 0, sizeof(r));
    while (at < size) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = (nl ? (size_t)(nl - data) : size) - at;
        if (len < sizeof(line) && !memchr(data + at, '\0', len)) {
            memcpy(line, data + at, len);
            line[len] = '\0';
            uint16_t before = r.n;
            int ret = rules_line_parse(&r, line, ++n, why, sizeof(why));
            if ((ret == 0) != (r.n == before + 1) || (ret && !why[0]))
                abort();
            for (const char *m = why; ret && *m; m++)
                if (*m < ' ' || *m > '~')
                    abort();   /* a message is one printable line */
        }
        at += len + 1;
    }
    if (r.n > RULES_MAX || r.n_groups > RULES_GROUPS_MAX)
        abort();
    memset(&again, 0, sizeof(again));
    for (unsigned i = 0; i < r.n; i++) {
        const struct rule *u = &r.rule[i];
        if (u->port_lo > u->port_hi || !u->src || !u->dst)
            abort();
        /* printed and parsed again: the same rule, its groups by name */
        if (rules_format(&r, i, text, sizeof(text)) ||
            rules_line_parse(&again, text, u->line, why, sizeof(why)))
            abort();
        const struct rule *v = &again.rule[i];
        if (v->proto != u->proto || v->port_lo != u->port_lo || v->port_hi != u->port_hi ||
            !same_names(u->src, v->src) || !same_names(u->dst, v->dst))
            abort();
    }
    for (unsigned q = 0; q < 16 && size >= 8; q++) {
        uint64_t src = (uint64_t)data[q % size] << (q * 3 % 56), dst = (uint64_t)data[(q + 1) % size] << (q % 56);
        uint8_t proto = (uint8_t[]){ 1, 6, 17, 58, 132 }[q % 5];
        uint16_t port = (uint16_t)(data[(q + 2) % size] << 8 | data[(q + 3) % size]);
        int m = rules_match(&r, src, dst, proto, port);
        if (r.n == 0 ? m != RULES_OPEN : m == RULES_OPEN)
            abort();
        for (int i = 0; i < (m < 0 ? (int)r.n : m); i++)
            if (fits(&r.rule[i], src, dst, proto, port))
                abort();   /* an earlier rule fits: first match is not first */
        if (m >= 0 && !fits(&r.rule[m], src, dst, proto, port))
            abort();
    }
    return 0;
}
