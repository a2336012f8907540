/* SPDX-License-Identifier: MIT */
/* The parsed cluster's life and lookups: reading the file from disk,
 * releasing the model, and finding a node by public key, name or overlay
 * address. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/addr.h"
#include "config/cluster.h"

/* Reads at most CLUSTER_MAX_FILE bytes of fd into a new buffer. */
static int read_all(int fd, char **out, size_t *len)
{
    /* one byte more than allowed tells a too big file from a full one */
    size_t cap = CLUSTER_MAX_FILE + 1, n = 0;
    char *buf = malloc(cap);

    if (!buf)
        return -ENOMEM;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = -errno;
            free(buf);
            return err;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > CLUSTER_MAX_FILE) {
        free(buf);
        return -EFBIG;
    }
    *out = buf;
    *len = n;
    return 0;
}

int cluster_read(const char *path, char **text, size_t *len)
{
    struct stat st;
    int fd, r;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        r = -errno;
    else if (S_ISDIR(st.st_mode))
        r = -EISDIR;
    else
        r = read_all(fd, text, len);
    close(fd);
    return r;
}

int cluster_load(const char *path, struct cluster *out,
                 struct cluster_diag *diag)
{
    char *text = NULL;
    size_t len = 0;
    int r;

    memset(out, 0, sizeof(*out));
    if (diag)
        memset(diag, 0, sizeof(*diag));
    if ((r = cluster_read(path, &text, &len)) < 0)
        return r;
    r = cluster_parse(text, len, out, diag);
    free(text);
    return r;
}

void cluster_free(struct cluster *c)
{
    if (!c)
        return;
    free(c->nodes);
    memset(c, 0, sizeof(*c));
}

const struct cluster_node *cluster_find_key(const struct cluster *c,
                                            const uint8_t key[CLUSTER_KEY_LEN])
{
    const struct cluster_node *found = NULL;

    /* every node is compared, so the time taken does not tell which
     * position matched */
    for (size_t i = 0; i < c->n_nodes; i++) {
        bool match = sodium_memcmp(c->nodes[i].public_key, key,
                                   CLUSTER_KEY_LEN) == 0;
        if (match && !found)
            found = &c->nodes[i];
    }
    return found;
}

const struct cluster_node *cluster_find_name(const struct cluster *c,
                                             const char *name)
{
    for (size_t i = 0; i < c->n_nodes; i++)
        if (strcasecmp(c->nodes[i].name, name) == 0)
            return &c->nodes[i];
    return NULL;
}

const struct cluster_node *cluster_find_address(const struct cluster *c,
                                                const struct cluster_addr *a)
{
    for (size_t i = 0; i < c->n_nodes; i++)
        if (cluster_addr_equal(&c->nodes[i].address, a))
            return &c->nodes[i];
    return NULL;
}

int cluster_node_port(const struct cluster *c, const struct cluster_node *n)
{
    return n->port ? n->port : c->port;
}

unsigned cluster_node_keepalive(const struct cluster *c, const struct cluster_node *n)
{
    return n->keepalive_set ? n->persistent_keepalive : c->persistent_keepalive;
}

/* --- what a member may claim by its own word ------------------------------------ */

/* Whether name ends with suffix, case aside. */
static bool ends_with(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);

    return n >= s && !strcasecmp(name + n - s, suffix);
}

bool cluster_name_reserved(const char *name)
{
    return !strncasecmp(name, "localhost", strlen("localhost")) ||
           ends_with(name, ".localhost") || ends_with(name, ".localhost.") ||
           !strncasecmp(name, "ip6-", strlen("ip6-"));
}

bool cluster_claim_ok(const struct cluster *c, const char *name)
{
    const struct cluster_domains *d = &c->machine_domains;
    size_t len = strlen(name);

    if (!len || cluster_name_reserved(name))
        return false;
    if (!memchr(name, '.', len))
        return true;                      /* one label: a machine's short name */
    for (unsigned i = 0; i < d->n; i++) {
        size_t dl = strlen(d->name[i]);
        /* Under the domain: "x.D", never "D" itself. */
        if (len > dl + 1 && name[len - dl - 1] == '.' && ends_with(name, d->name[i]))
            return true;
    }
    return false;
}

bool cluster_authority_trusts(const struct cluster *c, const uint8_t key[CLUSTER_KEY_LEN])
{
    return c->has_authority && (!memcmp(c->authority, key, CLUSTER_KEY_LEN) ||
                                (c->has_authority_next &&
                                 !memcmp(c->authority_next, key, CLUSTER_KEY_LEN)));
}

bool cluster_authority_shared(const struct cluster *a, const struct cluster *b)
{
    return cluster_authority_trusts(b, a->authority) ||
           (a->has_authority_next && cluster_authority_trusts(b, a->authority_next));
}
