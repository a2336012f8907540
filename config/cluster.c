/* SPDX-License-Identifier: MIT */
/* The cluster file's line reader: splits text into lines, strips comments
 * and whitespace, opens sections and hands "key = value" to the key
 * handlers; then runs the whole-file checks and builds the result. Owns the
 * error list (struct cluster_diag) and its display form. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/addr.h"
#include "config/cluster_int.h"

#define NODE_KEYWORD "node"

void cluster_diag_add(struct cluster_parser *p, int line, const char *fmt, ...)
{
    struct cluster_diag *d = p->diag;
    struct cluster_diag_item item = { .line = line };
    va_list ap;
    size_t pos;

    p->errors++;
    va_start(ap, fmt);
    vsnprintf(item.message, sizeof(item.message), fmt, ap);
    va_end(ap);
    /* later checks report earlier lines, so insert in place to keep the
     * list in line order and, when full, keep the first lines */
    pos = d->n;
    while (pos > 0 && d->items[pos - 1].line > line)
        pos--;
    if (d->n == CLUSTER_DIAG_MAX) {
        d->dropped++;
        if (pos == d->n)
            return;
        d->n--;
    }
    memmove(&d->items[pos + 1], &d->items[pos],
            (d->n - pos) * sizeof(d->items[0]));
    d->items[pos] = item;
    d->n++;
}

void cluster_quote(char *dst, size_t len, const char *s)
{
    size_t i = 0;

    for (; s[i] && i < CLUSTER_QUOTE_MAX && i + 1 < len; i++)
        dst[i] = (s[i] >= ' ' && s[i] <= '~') ? s[i] : '?';
    if (s[i] && i + sizeof("...") <= len) {
        memcpy(dst + i, "...", sizeof("..."));
        return;
    }
    if (len)
        dst[i < len ? i : len - 1] = '\0';
}

int cluster_diag_format(const struct cluster_diag *diag, size_t i,
                        const char *file, char *buf, size_t len)
{
    const struct cluster_diag_item *it;
    int n;

    if (!diag || i >= diag->n)
        return -EINVAL;
    it = &diag->items[i];
    n = it->line > 0 ? snprintf(buf, len, "%s:%d: %s", file, it->line, it->message)
                     : snprintf(buf, len, "%s: %s", file, it->message);
    if (n < 0)
        return -EINVAL;
    return (size_t)n >= len ? -ENOSPC : 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Trims s in place and returns its first non-space character. */
static char *trim(char *s)
{
    size_t len;

    while (is_space(*s))
        s++;
    len = strlen(s);
    while (len > 0 && is_space(s[len - 1]))
        s[--len] = '\0';
    return s;
}

static void node_open(struct cluster_parser *p, int line, const char *name)
{
    char q[CLUSTER_QUOTE_MAX + 4];

    if (p->n_nodes == CLUSTER_MAX_NODES) {
        /* a whole-file problem, reported first (line 0) and once, so that
         * the other nodes' errors do not push it out of the list */
        if (!p->too_many)
            cluster_diag_add(p, 0, "too many nodes (more than %u); the first "
                             "one over is at line %d", CLUSTER_MAX_NODES, line);
        p->too_many = true;
        p->section = CLUSTER_SECTION_SKIP;
        return;
    }
    if (p->n_nodes == p->cap_nodes) {
        size_t cap = p->cap_nodes ? p->cap_nodes * 2 : 16;
        struct cluster_work_node *n = realloc(p->nodes, cap * sizeof(*n));
        if (!n) {
            p->oom = true;
            p->section = CLUSTER_SECTION_SKIP;
            return;
        }
        p->nodes = n;
        p->cap_nodes = cap;
    }
    struct cluster_work_node *w = &p->nodes[p->n_nodes++];
    memset(w, 0, sizeof(*w));
    w->node.line = line;
    p->section = CLUSTER_SECTION_NODE;
    if (*name == '\0') {
        cluster_diag_add(p, line, "missing node name (expected [node NAME])");
    } else if (!cluster_name_valid(name)) {
        cluster_quote(q, sizeof(q), name);
        cluster_diag_add(p, line, "bad node name '%s': use letters, digits, '-' "
                         "and '.', at most %u characters, not starting or "
                         "ending with '-' or '.'", q, CLUSTER_NAME_MAX);
    } else {
        memcpy(w->node.name, name, strlen(name) + 1);
        w->name_ok = true;
    }
}

static void cluster_open(struct cluster_parser *p, int line)
{
    if (p->cluster_line)
        cluster_diag_add(p, line, "duplicate section [cluster] (first at line %d)",
                         p->cluster_line);
    else
        p->cluster_line = line;
    /* a repeated [cluster] continues the first, so repeated keys are
     * reported as duplicates */
    p->section = CLUSTER_SECTION_CLUSTER;
}

/* s: the trimmed line, starting with '['. */
static void header_line(struct cluster_parser *p, int line, char *s)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    char *close = strchr(s, ']');

    p->section = CLUSTER_SECTION_SKIP;
    if (!close) {
        cluster_diag_add(p, line, "missing ']' in section header");
        return;
    }
    if (close[1] != '\0') {
        cluster_diag_add(p, line, "unexpected text after ']' in section header");
        return;
    }
    *close = '\0';
    char *inner = trim(s + 1);
    size_t kw = strlen(NODE_KEYWORD);
    if (strcmp(inner, "cluster") == 0) {
        cluster_open(p, line);
    } else if (strcmp(inner, "rules") == 0) {
        /* a repeated [rules] continues the first: one ordered list */
        if (!p->settings.rules_line)
            p->settings.rules_line = line;
        p->section = CLUSTER_SECTION_RULES;
    } else if (strncmp(inner, NODE_KEYWORD, kw) == 0 &&
               (inner[kw] == '\0' || is_space(inner[kw]))) {
        node_open(p, line, trim(inner + kw));
    } else {
        cluster_quote(q, sizeof(q), inner);
        cluster_diag_add(p, line, "unknown section '[%s]' (expected [cluster], "
                         "[node NAME] or [rules])", q);
    }
}

static void key_line(struct cluster_parser *p, int line, char *s)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    char *eq = strchr(s, '=');

    if (!eq) {
        cluster_diag_add(p, line, "missing '=' (expected key = value)");
        return;
    }
    *eq = '\0';
    char *key = trim(s), *value = trim(eq + 1);
    cluster_quote(q, sizeof(q), key);
    if (*key == '\0') {
        cluster_diag_add(p, line, "missing key before '='");
    } else if (p->section == CLUSTER_SECTION_SKIP) {
        return;     /* the bad header was reported; its keys mean nothing */
    } else if (p->section == CLUSTER_SECTION_NONE) {
        cluster_diag_add(p, line, "key '%s' outside a section (put it under "
                         "[cluster] or [node NAME])", q);
    } else if (*value == '\0') {
        cluster_diag_add(p, line, "missing value for '%s'", q);
    } else {
        cluster_key_apply(p, line, key, value);
    }
}

/* A line of [rules]: one rule, in order (config/rules.h). */
static void rule_line(struct cluster_parser *p, int line, const char *s)
{
    char why[CLUSTER_DIAG_MSG_LEN - 16];

    if (rules_line_parse(&p->settings.rules, s, line, why, sizeof(why)) < 0)
        cluster_diag_add(p, line, "%s", why);
}

/* One raw line (without its '\n'). */
static void line_parse(struct cluster_parser *p, int line, const char *raw,
                       size_t len)
{
    char buf[CLUSTER_MAX_LINE + 1];

    if (len > 0 && raw[len - 1] == '\r')
        len--;
    if (len > CLUSTER_MAX_LINE) {
        cluster_diag_add(p, line, "line too long (more than %u characters)",
                         CLUSTER_MAX_LINE);
        return;
    }
    if (memchr(raw, '\0', len)) {
        cluster_diag_add(p, line, "line contains a nul byte");
        return;
    }
    memcpy(buf, raw, len);
    buf[len] = '\0';
    char *hash = strchr(buf, '#');
    if (hash)
        *hash = '\0';
    char *s = trim(buf);
    if (*s == '\0')
        return;
    if (*s == '[')
        header_line(p, line, s);
    else if (p->section == CLUSTER_SECTION_RULES)
        rule_line(p, line, s);
    else
        key_line(p, line, s);
}

static void lines_parse(struct cluster_parser *p, const char *text, size_t len)
{
    const char *pos = text, *end = text + len;
    int line = 0;

    while (pos < end && !p->oom) {
        const char *nl = memchr(pos, '\n', (size_t)(end - pos));
        const char *stop = nl ? nl : end;
        line_parse(p, ++line, pos, (size_t)(stop - pos));
        pos = nl ? nl + 1 : end;
    }
}

static int result_build(struct cluster_parser *p, struct cluster *out)
{
    *out = p->settings;
    if (!out->mtu_set)
        out->mtu = CLUSTER_MTU_DEFAULT;
    if (!out->busy_poll_set)
        out->busy_poll_us = CLUSTER_BUSY_POLL_DEFAULT;
    if (!out->socket_buffer_set)
        out->socket_buffer = CLUSTER_SOCKET_BUFFER_DEFAULT;
    if (!out->machine_domains.set) {
        out->machine_domains.n = 1;
        snprintf(out->machine_domains.name[0], sizeof(out->machine_domains.name[0]), "%s",
                 CLUSTER_MACHINE_DOMAINS_DEFAULT);
    }
    out->n_nodes = p->n_nodes;
    out->nodes = calloc(p->n_nodes, sizeof(*out->nodes));
    if (!out->nodes) {
        memset(out, 0, sizeof(*out));
        return -ENOMEM;
    }
    for (size_t i = 0; i < p->n_nodes; i++)
        out->nodes[i] = p->nodes[i].node;
    return 0;
}

int cluster_parse(const char *text, size_t len, struct cluster *out,
                  struct cluster_diag *diag)
{
    struct cluster_diag scratch;
    struct cluster_parser p = { .diag = diag ? diag : &scratch };
    int r;

    memset(out, 0, sizeof(*out));
    memset(p.diag, 0, sizeof(*p.diag));
    if (len > CLUSTER_MAX_FILE)
        return -EFBIG;
    lines_parse(&p, text, len);
    if (!p.oom)
        cluster_check_all(&p);
    if (p.oom)
        r = -ENOMEM;
    else if (p.errors)
        r = -EINVAL;
    else
        r = result_build(&p, out);
    free(p.nodes);
    return r;
}
