/* SPDX-License-Identifier: MIT */
/* Tests of overlay/membership/members.c that need no running engine: the
 * names block written from the cluster model (a line per node: its name,
 * aliases and machine names, a machine name written only when one node
 * claims it; a registered node's name only when no other node's machine
 * claims it, a pending record given no line) through a kept descriptor, the checksum `status` shows, and a
 * reload refused before anything is touched (a file with errors, a change
 * of this node's key, address or port, of [cluster]'s network, a file
 * without this node) -- each said in the lines a person reads; the
 * authority's statements a person or a peer hands the node (refusals, a
 * peer's CERTs bounded by their rate). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "config/routes.h"
#include "overlay/engine/device_setup.h"
#include "overlay/engine/model/index.h"
#include "overlay/loop/loop.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/hosts.h"
#include "overlay/membership/hosts_writer.h"
#include "overlay/membership/members.h"
#include "overlay/membership/revocations.h"
#include "overlay/registry/registry.h"

#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="
#define K3 "Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo="

#define HEAD "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
#define NA "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\n"
#define NB "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\naliases = ip-192-0-2-2 b.internal\n"

/* A device holding only what membership reads before it applies: the
 * model, this node, the interface name, the hosts descriptor. */
/* Membership's state for a test's device: a few at a time, taken in
 * turn (a test holds at most two devices). */
static void give_membership(struct device *dev)
{
    static struct membership pool[8];
    static unsigned next;

    dev->membership = &pool[next++ % 8];
    membership_init(dev->membership);
}

static void device_of(struct device *dev, const char *text)
{
    memset(dev, 0, sizeof(*dev));
    give_membership(dev);
    assert_int_equal(cluster_parse(text, strlen(text), &dev->cluster, NULL), 0);
    dev->self = &dev->cluster.nodes[0];
    snprintf(dev->ifname, sizeof(dev->ifname), "ddp0");
    dev->membership->hosts_fd = -1;
}

static void test_hosts_block_with_aliases(void **state)
{
    char path[] = "/tmp/ddpnet-members-XXXXXX", buf[1024];
    struct device dev;
    int fd = mkstemp(path);
    ssize_t n;

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "127.0.0.1 localhost\n", 20), 20);
    device_of(&dev, HEAD NA NB);
    dev.membership->hosts_fd = fd;
    assert_int_equal(members_write_hosts(&dev), 0);
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                             "10.77.0.1 a\n"
                             "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                             "# END ddpnet ddp0\n"
                             "127.0.0.1 localhost\n");
    dev.membership->hosts_fd = -1;
    assert_int_equal(members_write_hosts(&dev), -EBADF);
    close(fd);
    unlink(path);
    cluster_free(&dev.cluster);
}

/* A resolver for the writer: metadata.google.internal is the metadata
 * server's, gpu-b.internal is 192.0.2.2 (b's underlay address), every
 * other name resolves to nothing. */
static int fake_resolve(void *ctx, const char *name, struct hosts_answer *a)
{
    (void)ctx;
    memset(a, 0, sizeof(*a));
    if (!strcmp(name, "metadata.google.internal"))
        assert_int_equal(cluster_addr_parse("169.254.169.254", &a->addr[a->n++]), 0);
    if (!strcmp(name, "gpu-b.internal"))
        assert_int_equal(cluster_addr_parse("192.0.2.2", &a->addr[a->n++]), 0);
    return 0;
}

static char *read_fd(int fd)
{
    static char buf[2048];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

    assert_true(n >= 0);
    buf[n] = '\0';
    return buf;
}

/* The hosts block's text for dev, through a fresh temporary file that
 * holds `before` first: written by the writer thread (the daemon's, once
 * it runs: members' own words asked of fake_resolve), or at once by
 * members_write_hosts when sync (set-up's: members' own words left out). */
static char *block_in(struct device *dev, const char *before, bool sync)
{
    char path[] = "/tmp/ddpnet-members-XXXXXX";
    int fd = mkstemp(path);
    struct hosts_writer_config cfg = { .fd = fd, .ifname = "ddp0", .prefix = 16,
                                       .resolve = fake_resolve };
    char *text;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, before, strlen(before)), (ssize_t)strlen(before));
    dev->membership->hosts_fd = fd;
    if (sync) {
        assert_int_equal(members_write_hosts(dev), 0);
    } else {
        cfg.network = dev->cluster.network;
        assert_int_equal(hosts_writer_start(&dev->membership->hosts_writer, &cfg), 0);
        assert_int_equal(members_write_hosts(dev), 0);     /* marked changed only */
        assert_true(dev->membership->hosts_dirty);
        dev->membership->hosts_due_ns = 0;
        assert_int_equal(members_hosts_run(dev, 1), UINT64_MAX);
        assert_false(dev->membership->hosts_dirty);
        /* Once a second at most: a change now waits for its time. */
        members_hosts_changed(dev);
        assert_int_equal(members_hosts_run(dev, 2), 1 + HOSTS_WRITE_INTERVAL_NS);
        for (int i = 0; i < 500 && hosts_writer_writes(dev->membership->hosts_writer) == 0; i++)
            usleep(10000);
        hosts_writer_stop(dev->membership->hosts_writer);
        dev->membership->hosts_writer = NULL;
        dev->membership->hosts_dirty = false;
    }
    text = read_fd(fd);
    close(fd);
    unlink(path);
    dev->membership->hosts_fd = -1;
    return text;
}

static char *block_of(struct device *dev)
{
    return block_in(dev, "", false);
}

/* Whether fd is the file at path now. */
static bool same_file(int fd, const char *path)
{
    struct stat a, b;

    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* A hosts file replaced by a rename (sed -i): the descriptor a client
 * passes takes over, with the block written to it; the same file again
 * changes nothing; what is not a regular file is refused. */
/* Hundreds of nodes joining at once (issue 59), on a fake clock: 100
 * changes to the membership within one second hand the writer the block
 * once in that second (HOSTS_WRITE_INTERVAL_NS), and once more when the
 * second is over; the last state is the one the file holds, and the file
 * was written no more often than the block was handed over. */
static void test_hosts_paced(void **state)
{
    char path[] = "/tmp/ddpnet-members-XXXXXX";
    int fd = mkstemp(path);
    struct hosts_writer_config cfg = { .fd = fd, .ifname = "ddp0", .prefix = 16,
                                       .resolve = fake_resolve };
    const uint64_t t0 = 5 * NS_PER_S;
    struct device dev;
    unsigned handed = 0;
    char *text = NULL;

    (void)state;
    assert_true(fd >= 0);
    device_of(&dev, HEAD NA NB);
    dev.membership->hosts_fd = fd;
    cfg.network = dev.cluster.network;
    assert_int_equal(hosts_writer_start(&dev.membership->hosts_writer, &cfg), 0);
    for (unsigned i = 0; i < 100; i++) {
        snprintf(dev.cluster.nodes[1].name, sizeof(dev.cluster.nodes[1].name), "b%u", i);
        assert_int_equal(members_write_hosts(&dev), 0);      /* marked changed */
        members_hosts_run(&dev, t0 + i * (HOSTS_WRITE_INTERVAL_NS / 100));
        handed += !dev.membership->hosts_dirty;
    }
    assert_int_equal(handed, 1);
    assert_true(dev.membership->hosts_dirty);                /* b99 waits for its time */
    assert_int_equal(members_hosts_run(&dev, t0 + HOSTS_WRITE_INTERVAL_NS), UINT64_MAX);
    assert_false(dev.membership->hosts_dirty);
    handed++;
    for (int i = 0; i < 300; i++) {                          /* the writer's own second */
        text = read_fd(fd);
        if (strstr(text, "10.77.0.2 b99 "))
            break;
        usleep(10000);
    }
    assert_non_null(strstr(text, "10.77.0.2 b99 ip-192-0-2-2 b.internal\n"));
    assert_in_range(hosts_writer_writes(dev.membership->hosts_writer), 1, handed);
    hosts_writer_stop(dev.membership->hosts_writer);
    dev.membership->hosts_writer = NULL;
    close(fd);
    unlink(path);
    cluster_free(&dev.cluster);
}

static void test_take_hosts(void **state)
{
    char path[] = "/tmp/ddpnet-members-XXXXXX", next[64], buf[1024];
    struct device dev;
    int fd = mkstemp(path), fd2;
    FILE *f;
    ssize_t n;

    (void)state;
    assert_true(fd >= 0);
    device_of(&dev, HEAD NA NB);
    dev.membership->hosts_fd = fd;
    assert_int_equal(members_write_hosts(&dev), 0);
    /* sed -i: a new file with the old lines, renamed over the path. */
    snprintf(next, sizeof(next), "%s.new", path);
    f = fopen(next, "w");
    assert_non_null(f);
    fputs("127.0.0.1 localhost\n", f);
    fclose(f);
    assert_int_equal(rename(next, path), 0);
    fd2 = open(path, O_RDWR);
    assert_true(fd2 >= 0);
    assert_int_equal(members_take_hosts(&dev, fd2), 1);
    /* The kept number now names the new file (dup2: a writer thread
     * holding the number follows), and the passed one is closed. */
    assert_int_equal(dev.membership->hosts_fd, fd);
    assert_int_equal(fcntl(fd2, F_GETFD), -1);
    assert_true(same_file(fd, path));
    fd2 = fd;
    n = pread(fd2, buf, sizeof(buf) - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                             "10.77.0.1 a\n"
                             "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                             "# END ddpnet ddp0\n"
                             "127.0.0.1 localhost\n");
    /* The same file, opened again: kept as it is, the new descriptor closed. */
    fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(members_take_hosts(&dev, fd), 0);
    assert_int_equal(dev.membership->hosts_fd, fd2);
    assert_int_equal(fcntl(fd, F_GETFD), -1);
    /* A directory: refused, closed, the kept one stays. */
    fd = open("/tmp", O_RDONLY | O_DIRECTORY);
    assert_int_equal(members_take_hosts(&dev, fd), -EINVAL);
    assert_int_equal(dev.membership->hosts_fd, fd2);
    assert_int_equal(fcntl(fd, F_GETFD), -1);
    /* A node that writes no block does not start. */
    close(fd2);
    dev.membership->hosts_fd = -1;
    fd = open(path, O_RDWR);
    assert_int_equal(members_take_hosts(&dev, fd), 0);
    assert_int_equal(dev.membership->hosts_fd, -1);
    unlink(path);
    cluster_free(&dev.cluster);
}

/* A registry cluster in which nobody gave an endpoint or published a
 * candidate cannot start. */
static void test_none_reachable(void **state)
{
    struct device dev;

    (void)state;
    device_of(&dev, HEAD NA NB);
    assert_true(members_none_reachable(&dev.cluster));
    dev.cluster.nodes[1].n_candidates = 1;             /* published by the node */
    assert_false(members_none_reachable(&dev.cluster));
    dev.cluster.nodes[1].n_candidates = 0;
    dev.cluster.nodes[1].has_observed = true;          /* seen behind its NAT */
    assert_false(members_none_reachable(&dev.cluster));
    dev.cluster.nodes[1].has_observed = false;
    dev.cluster.nodes[1].has_endpoint = true;
    assert_false(members_none_reachable(&dev.cluster));
    cluster_free(&dev.cluster);
    device_of(&dev, HEAD NA);
    assert_false(members_none_reachable(&dev.cluster));   /* alone */
    cluster_free(&dev.cluster);
}

/* Machine names: this node's own and what peers said of themselves go on
 * their nodes' lines; a name two claim, or the file gives another node,
 * goes on neither; hostnames = off writes none. */
static void test_machine_names(void **state)
{
    struct device dev;
    struct peer *b = calloc(1, sizeof(*b));
    struct peer *list[1] = { b };

    (void)state;
    assert_non_null(b);
    device_of(&dev, HEAD NA NB);
    dev.peers = list;
    dev.n_peers = 1;
    memcpy(b->public_key, dev.cluster.nodes[1].public_key, WG_KEY_LEN);
    dev.n_self_names = 2;
    strcpy(dev.self_names[0], "ip-192-0-2-1");
    strcpy(dev.self_names[1], "ip-192-0-2-1.ec2.internal");
    b->disco.n_names = 2;
    strcpy(b->disco.names[0], "ip-192-0-2-2");     /* already b's alias: not twice */
    strcpy(b->disco.names[1], "gpu-c.internal");
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a ip-192-0-2-1 ip-192-0-2-1.ec2.internal\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal gpu-c.internal\n"
                        "# END ddpnet ddp0\n");
    /* Set-up writes without the writer: a member's word waits for it. */
    assert_string_equal(block_in(&dev, "", true),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a ip-192-0-2-1 ip-192-0-2-1.ec2.internal\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                        "# END ddpnet ddp0\n");
    /* b says it is a's machine, and "a" (a node name) and localhost. */
    strcpy(b->disco.names[0], "IP-192-0-2-1");
    strcpy(b->disco.names[1], "a");
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a ip-192-0-2-1.ec2.internal\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                        "# END ddpnet ddp0\n");
    strcpy(b->disco.names[0], "localhost");
    b->disco.n_names = 1;
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a ip-192-0-2-1 ip-192-0-2-1.ec2.internal\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                        "# END ddpnet ddp0\n");
    dev.cluster.hostnames_off = true;
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                        "# END ddpnet ddp0\n");
    free(b);
    cluster_free(&dev.cluster);
}

/* What no member may take, whatever it says its machine is called: a
 * public name (outside machine-domains), an ip6-* or localhost form, a
 * name the resolver gives another address (the metadata server's), a name
 * a line of the hosts file gives. Its own FQDN, which the resolver gives
 * its own underlay address, it may. */
static void test_machine_names_no_member_takes(void **state)
{
    static const char before[] = "127.0.0.1 localhost\n192.0.2.99 storage-1\n";
    static const char *const never[] = { "pypi.org", "ip6-localhost", "ip6-loopback",
                                         "metadata.google.internal", "storage-1",
                                         "LocalHost.localdomain" };
    struct device dev;
    struct peer *b = calloc(1, sizeof(*b));
    struct peer *list[1] = { b };

    (void)state;
    assert_non_null(b);
    device_of(&dev, HEAD NA NB);
    dev.peers = list;
    dev.n_peers = 1;
    memcpy(b->public_key, dev.cluster.nodes[1].public_key, WG_KEY_LEN);
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
        b->disco.n_names = 1;
        snprintf(b->disco.names[0], sizeof(b->disco.names[0]), "%s", never[i]);
        assert_string_equal(block_in(&dev, before, false),
                            "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                            "10.77.0.1 a\n"
                            "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                            "# END ddpnet ddp0\n"
                            "127.0.0.1 localhost\n192.0.2.99 storage-1\n");
    }
    /* gpu-b.internal resolves to 192.0.2.2: b's, once b is known there. */
    strcpy(b->disco.names[0], "gpu-b.internal");
    assert_string_equal(block_in(&dev, "", false),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                        "# END ddpnet ddp0\n");
    b->member.listed.in4.sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, "192.0.2.2", &b->member.listed.in4.sin_addr), 1);
    assert_string_equal(block_in(&dev, "", false),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal gpu-b.internal\n"
                        "# END ddpnet ddp0\n");
    free(b);
    cluster_free(&dev.cluster);
}

/* Registered nodes (not the file's): one whose record its key's holder
 * has not stated (pending) has no line and claims no name; one named as
 * another member's machine takes nothing to itself: the name goes on
 * neither line, whichever came first (a writer of the prefix decides
 * which record is later). */
static void test_registered_names(void **state)
{
    struct device dev;
    struct peer *b = calloc(1, sizeof(*b)), *c = calloc(1, sizeof(*c));
    struct peer *list[2] = { b, c };

    (void)state;
    assert_non_null(b);
    assert_non_null(c);
    device_of(&dev, HEAD NA "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\n"
                    "[node ip-192-0-2-2]\npublic-key = " K3 "\naddress = 10.77.0.3\n");
    assert_int_equal(cluster_parse(HEAD NA, strlen(HEAD NA), &dev.membership->file, NULL), 0);
    dev.membership->n_registered = 2;                 /* b and the other came from the registry */
    dev.peers = list;
    dev.n_peers = 2;
    memcpy(b->public_key, dev.cluster.nodes[1].public_key, WG_KEY_LEN);
    memcpy(c->public_key, dev.cluster.nodes[2].public_key, WG_KEY_LEN);
    b->disco.n_names = 1;
    strcpy(b->disco.names[0], "ip-192-0-2-2");  /* b's machine; the other record's name */
    c->disco.n_names = 1;
    strcpy(c->disco.names[0], "c-machine");
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a\n"
                        "10.77.0.2 b\n"
                        "10.77.0.3 c-machine\n"
                        "# END ddpnet ddp0\n");
    /* Pending: no line, and its name claims nothing: b's machine name is
     * b's alone again. */
    c->member.pending = true;
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a\n"
                        "10.77.0.2 b ip-192-0-2-2\n"
                        "# END ddpnet ddp0\n");
    /* The other order: the same, neither. */
    c->member.pending = false;
    c->disco.n_names = 0;
    struct cluster_node t = dev.cluster.nodes[1];
    dev.cluster.nodes[1] = dev.cluster.nodes[2];
    dev.cluster.nodes[2] = t;
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a\n"
                        "10.77.0.2 b\n"
                        "# END ddpnet ddp0\n");
    free(b);
    free(c);
    cluster_free(&dev.membership->file);
    cluster_free(&dev.cluster);
}

static void test_checksum(void **state)
{
    uint8_t x[MEMBERSHIP_CLUSTER_SUM_LEN], y[MEMBERSHIP_CLUSTER_SUM_LEN];

    (void)state;
    members_checksum(HEAD NA, strlen(HEAD NA), x);
    members_checksum(HEAD NA, strlen(HEAD NA), y);
    assert_memory_equal(x, y, sizeof(x));
    members_checksum(HEAD NA "# a comment\n", strlen(HEAD NA "# a comment\n"), y);
    assert_memory_not_equal(x, y, sizeof(x));
}

struct said {
    char text[4096];
};

static void collect(void *ctx, const char *kind, const char *line)
{
    struct said *s = ctx;
    size_t at = strlen(s->text);

    snprintf(s->text + at, sizeof(s->text) - at, "%s=%s\n", kind, line);
}

/* Each refusal: its exit code, its lines, and the device left as it was. */
static void test_refused(void **state)
{
    static const struct {
        const char *file;
        int ret;
        const char *said;
    } cases[] = {
        { HEAD NA NB "adress = 1\n", -EINVAL, "error=11: unknown key 'adress' (did you mean 'address'?)\n" },
        { HEAD "[node a]\npublic-key = " K3 "\naddress = 10.77.0.1\n" NB, -EPERM,
          "refused=the new file changes this node's (a) key: run `ddpnet down` and `ddpnet up` "
          "on this node with the new key file (-k)\n" },
        { HEAD "[node a]\npublic-key = " K1 "\naddress = 10.77.0.7\n" NB, -EPERM,
          "refused=the new file changes this node's (a) address: run `ddpnet down` and "
          "`ddpnet up` on this node\n" },
        { HEAD "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\nport = 9\n" NB, -EPERM,
          "refused=the new file changes this node's (a) port: run `ddpnet down` and "
          "`ddpnet up` on this node\n" },
        { "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\n" NA NB, -EPERM,
          "refused=the new file changes [cluster] network: run `ddpnet down` and `ddpnet up` "
          "on this node, and on every node\n" },
        { HEAD NB, -EPERM, "refused=this node (a) is not in the new file; to leave the "
                           "cluster, run `ddpnet down -i ddp0`\n" },
    };
    struct device dev;

    (void)state;
    device_of(&dev, HEAD NA NB);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct said s = { "" };
        assert_int_equal(members_reload(&dev, cases[i].file, strlen(cases[i].file), collect, &s,
                                         1000), cases[i].ret);
        assert_string_equal(s.text, cases[i].said);
        assert_int_equal(dev.cluster.n_nodes, 2);
        assert_int_equal(dev.membership->cluster_applied_unix, 0);
    }
    /* Run by systemd: the unit is what to restart (or stop, to leave). */
    snprintf(dev.membership->service, sizeof(dev.membership->service), "ddpnet@ddp0.service");
    static const struct {
        const char *file;
        const char *said;
    } unit_cases[] = {
        { HEAD "[node a]\npublic-key = " K1 "\naddress = 10.77.0.7\n" NB,
          "refused=the new file changes this node's (a) address: run `systemctl restart "
          "ddpnet@ddp0.service`\n" },
        { "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\n" NA NB,
          "refused=the new file changes [cluster] network: run `systemctl restart "
          "ddpnet@ddp0.service`, and on every node\n" },
        { HEAD NB, "refused=this node (a) is not in the new file; to leave the cluster, run "
                   "`systemctl disable --now ddpnet@ddp0.service`\n" },
    };
    for (size_t i = 0; i < sizeof(unit_cases) / sizeof(unit_cases[0]); i++) {
        struct said s = { "" };
        assert_int_equal(members_reload(&dev, unit_cases[i].file, strlen(unit_cases[i].file),
                                        collect, &s, 1000), -EPERM);
        assert_string_equal(s.text, unit_cases[i].said);
    }
    dev.membership->service[0] = '\0';
    /* The same file: applied (nothing to change), its checksum noted. */
    struct said s = { "" };
    assert_int_equal(members_reload(&dev, HEAD NA NB, strlen(HEAD NA NB), collect, &s, 1000), 0);
    assert_string_equal(s.text, "");
    assert_true(dev.membership->cluster_applied_unix > 0);
    uint8_t sum[MEMBERSHIP_CLUSTER_SUM_LEN];
    members_checksum(HEAD NA NB, strlen(HEAD NA NB), sum);
    assert_memory_equal(sum, dev.membership->cluster_sum, sizeof(sum));
    cluster_free(&dev.cluster);
    cluster_free(&dev.membership->file);
}

/* --- statements of the authority (joining with no server) ---------------------------- */

/* A statement handed to a running node (`ddpnet revoke`): refused without
 * an authority or when too long; judged by the store; a revocation taken.
 * A peer's CERTs: at most a burst, then its rate, are offered at all. */
static void test_statements(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN];
    char text[CERT_TEXT_MAX + 8], long_text[CERT_TEXT_MAX + 2];
    struct certs_stats st;
    struct device dev;
    struct peer p;
    const char *why;
    struct cert r = { .kind = CERT_REVOCATION, .not_before = 1000 };

    (void)state;
    device_of(&dev, HEAD NA NB);
    assert_int_equal(members_statement(&dev, "ddpnet-revoke:x", 15, 0, &why), -EPERM);
    assert_int_equal(cert_keypair(pub, secret), 0);
    dev.cluster.has_authority = true;
    memcpy(dev.cluster.authority, pub, sizeof(pub));
    assert_int_equal(members_certs_start(&dev), 0);
    memset(long_text, 'a', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    assert_int_equal(members_statement(&dev, long_text, strlen(long_text), 0, &why), -EINVAL);
    assert_int_equal(members_statement(&dev, "ddpnet-revoke:x\n", 16, 0, &why), CERTS_INVALID);
    memset(r.subject, 7, sizeof(r.subject));
    assert_int_equal(cert_sign(&r, secret, text, sizeof(text)), 0);
    strcat(text, "\n");                    /* a file's line, as read */
    assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), CERTS_REVOKING);
    assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), CERTS_KNOWN);
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.revoked, 1);

    /* A peer saying junk as fast as it can: CERT_BURST offers, then one
     * each 1/CERT_PER_SEC s. */
    memset(&p, 0, sizeof(p));
    p.dev = &dev;
    snprintf(p.member.name, sizeof(p.member.name), "x");
    for (unsigned i = 0; i < 200; i++)
        members_cert_said(&p, "ddpnet-member:junk", 18, 5 * WG_NSEC_PER_SEC);
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.invalid, 1 + 64);    /* the one above, and the burst */
    members_cert_said(&p, "ddpnet-member:junk", 18, 5 * WG_NSEC_PER_SEC + WG_NSEC_PER_SEC / 10);
    members_cert_said(&p, "ddpnet-member:junk", 18, 5 * WG_NSEC_PER_SEC + WG_NSEC_PER_SEC / 10);
    members_cert_said(&p, "ddpnet-member:junk", 18, 5 * WG_NSEC_PER_SEC + WG_NSEC_PER_SEC / 10);
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.invalid, 1 + 64 + 2);   /* 0.1 s: two more */
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
}

/* A revocation of key `fill` (every byte), signed with secret. */
static void revocation_of(char *text, size_t cap, const uint8_t secret[CERT_SECRET_LEN], int fill)
{
    struct cert r = { .kind = CERT_REVOCATION, .not_before = 1000 };

    memset(r.subject, fill, sizeof(r.subject));
    assert_int_equal(cert_sign(&r, secret, text, cap), 0);
}

/* A device of HEAD NA NB under the authority pub, its store made, the
 * state file of dir read back. */
static void authority_device(struct device *dev, const uint8_t pub[CERT_PUBKEY_LEN],
                             const char *dir)
{
    device_of(dev, HEAD NA NB);
    dev->cluster.has_authority = true;
    memcpy(dev->cluster.authority, pub, CERT_PUBKEY_LEN);
    assert_int_equal(members_certs_start(dev), 0);
    int fd = revocations_open(dir, "ddp0");
    assert_true(fd > 0);
    assert_true(revocations_load(dev, fd) >= 0);
}

/* Issue 43: a revocation lasts. Taken once, it is in the state file; a
 * node set up again from that file refuses what it names and says it on
 * every session; the latest REVOCATIONS_SAID_MAX are said; a junk line
 * costs nothing; the file's `revoked` keys count as revocations. */
static void test_revocations_last(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN], key[CERT_PUBKEY_LEN];
    char dir[] = "/tmp/ddpnet-state-XXXXXX", path[64], text[CERT_TEXT_MAX], buf[8192];
    struct cert m = { .kind = CERT_MEMBER, .not_before = 1000, .not_after = UINT64_MAX / 2 };
    struct certs_stats st;
    struct device dev;
    const char *why;
    int fd;

    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(cert_keypair(pub, secret), 0);
    authority_device(&dev, pub, dir);
    revocation_of(text, sizeof(text), secret, 7);
    assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), CERTS_REVOKING);
    assert_string_equal(dev.revocations_said, text);
    members_certs_free(&dev);
    cluster_free(&dev.cluster);

    /* A restart: read back, refused, said. A junk line is skipped. */
    snprintf(path, sizeof(path), "%s/ddp0.revoked", dir);
    assert_true((fd = open(path, O_WRONLY | O_APPEND)) >= 0);
    assert_int_equal(write(fd, "junk\n", 5), 5);
    close(fd);
    authority_device(&dev, pub, dir);
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.revoked, 1);
    assert_string_equal(dev.revocations_said, text);
    snprintf(m.name, sizeof(m.name), "spot-7");
    memset(m.subject, 7, sizeof(m.subject));
    assert_int_equal(cert_sign(&m, secret, buf, sizeof(buf)), 0);
    assert_int_equal(certs_offer(dev.membership->certs, buf, 2000, &why), CERTS_REVOKED);

    /* Ten more: the file holds eleven, the latest eight are said. */
    for (int i = 10; i < 20; i++) {
        revocation_of(text, sizeof(text), secret, i);
        assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), CERTS_REVOKING);
    }
    size_t lines = 0;
    for (const char *r = dev.revocations_said; *r; r++)
        lines += *r == '\n';
    assert_int_equal(lines + 1, REVOCATIONS_SAID_MAX);
    assert_non_null(strstr(dev.revocations_said, text));
    assert_true(strlen(dev.revocations_said) - strlen(text) ==
                (size_t)(strrchr(dev.revocations_said, '\n') + 1 - dev.revocations_said));
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
    assert_true((fd = open(path, O_RDONLY)) >= 0);
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    assert_true(n > 0);
    buf[n] = '\0';
    lines = 0;
    for (const char *r = buf; *r; r++)
        lines += *r == '\n';
    assert_int_equal(lines, 1 + 1 + 10);          /* the first, the junk, ten */

    /* The file's blocklist, at set-up. */
    device_of(&dev, HEAD NA NB);
    dev.cluster.has_authority = true;
    memcpy(dev.cluster.authority, pub, sizeof(pub));
    dev.membership->file.n_revoked = 1;
    memset(key, 9, sizeof(key));
    memcpy(dev.membership->file.revoked[0], key, sizeof(key));
    assert_int_equal(members_certs_start(&dev), 0);
    memset(m.subject, 9, sizeof(m.subject));
    assert_int_equal(cert_sign(&m, secret, buf, sizeof(buf)), 0);
    assert_int_equal(certs_offer(dev.membership->certs, buf, 2000, &why), CERTS_REVOKED);
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
    unlink(path);
    rmdir(dir);
}

/* Issue 55: the state directory is checked as opened. Another user's, or
 * one its group or others may write, is refused: they could put there
 * what revocations they like, or none. */
static void test_state_dir_checked(void **state)
{
    char dir[] = "/tmp/ddpnet-state-XXXXXX", path[64];
    int fd;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ddp0.revoked", dir);
    assert_int_equal(chmod(dir, 0770), 0);
    assert_int_equal(revocations_open(dir, "ddp0"), -EPERM);
    assert_int_equal(chmod(dir, 0702), 0);
    assert_int_equal(revocations_open(dir, "ddp0"), -EPERM);
    assert_int_equal(access(path, F_OK), -1);             /* nothing made there */
    assert_int_equal(chmod(dir, 0755), 0);
    assert_true((fd = revocations_open(dir, "ddp0")) >= 0);
    close(fd);
    /* Another user's (only root can make one). */
    if (geteuid() == 0) {
        assert_int_equal(chown(dir, 4242, (gid_t)-1), 0);
        assert_int_equal(revocations_open(dir, "ddp0"), -EPERM);
        assert_int_equal(chown(dir, 0, (gid_t)-1), 0);
    }
    unlink(path);
    rmdir(dir);
    if (geteuid() != 0)
        skip();   /* the owner's check needs root */
}

/* The state file's text, whole, in buf (cap bytes); its length. */
static size_t state_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    ssize_t n;

    assert_true(fd >= 0);
    n = read(fd, buf, cap);
    close(fd);
    assert_true(n >= 0 && (size_t)n < cap);
    return (size_t)n;
}

/* Appends len bytes of text to the state file, as a crash or a full disk
 * might have left them. */
static void state_append(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

/* Issue 55: a damaged state file loses no revocation but the damaged
 * line. A NUL byte inside a line spoils that line alone (read by length,
 * not as a C string); a torn tail (a short write, then a crash) is
 * followed by the next revocation taken on a line of its own, so both
 * the revocation before it and the one after it are read back. */
static void test_revocations_file_damaged(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN];
    char dir[] = "/tmp/ddpnet-state-XXXXXX", path[64], text[CERT_TEXT_MAX], buf[8192];
    struct certs_stats st;
    struct device dev;
    const char *why;
    size_t n;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ddp0.revoked", dir);
    assert_int_equal(cert_keypair(pub, secret), 0);
    authority_device(&dev, pub, dir);
    revocation_of(text, sizeof(text), secret, 1);
    assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), CERTS_REVOKING);
    members_certs_free(&dev);
    cluster_free(&dev.cluster);

    /* A NUL in a line of junk, then a revocation after it. */
    state_append(path, "ju\0nk\n", 6);
    revocation_of(text, sizeof(text), secret, 2);
    state_append(path, text, strlen(text));
    state_append(path, "\n", 1);
    /* A torn tail: the first half of a revocation, no newline. */
    revocation_of(text, sizeof(text), secret, 3);
    state_append(path, text, strlen(text) / 2);
    authority_device(&dev, pub, dir);
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.revoked, 2);                /* 1 and 2; the NUL's line and the torn one not */

    /* The next one taken starts on a line of its own, ends with one. */
    revocation_of(text, sizeof(text), secret, 4);
    assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), CERTS_REVOKING);
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
    n = state_file(path, buf, sizeof(buf));
    assert_true(n > strlen(text) + 2);
    assert_int_equal(buf[n - 1], '\n');
    assert_int_equal(buf[n - strlen(text) - 2], '\n');
    assert_memory_equal(buf + n - strlen(text) - 1, text, strlen(text));
    authority_device(&dev, pub, dir);
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.revoked, 3);                /* 1, 2 and 4 */
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
    unlink(path);
    rmdir(dir);
}

/* Issue 55: a revocation is said taken (to whoever handed it to the
 * node) only once it is in the state file and synced: a write that
 * fails (a full disk: /dev/full) or a sync that fails (a pipe cannot be
 * synced: fdatasync says EINVAL) is an error for the caller, not a
 * success. The revocation holds in the store all the same. */
static void test_revocations_kept_or_said_not(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN];
    char dir[] = "/tmp/ddpnet-state-XXXXXX", path[64], text[CERT_TEXT_MAX];
    struct certs_stats st;
    struct device dev;
    const char *why;
    int pipe_fds[2], full;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ddp0.revoked", dir);
    assert_int_equal(cert_keypair(pub, secret), 0);
    authority_device(&dev, pub, dir);

    assert_true((full = open("/dev/full", O_WRONLY | O_APPEND | O_CLOEXEC)) >= 0);
    close(dev.membership->revoked_fd);
    dev.membership->revoked_fd = full;
    revocation_of(text, sizeof(text), secret, 5);
    assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), -ENOSPC);
    assert_true(why[0] != '\0');
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.revoked, 1);

    /* Issue 62: descriptor 0 is a state file like any other (-1 says
     * none): a write there that fails is said too. */
    int saved = dup(0);
    assert_true(saved >= 0);
    assert_int_equal(dup2(full, 0), 0);
    dev.membership->revoked_fd = 0;
    revocation_of(text, sizeof(text), secret, 7);
    assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), -ENOSPC);
    assert_int_equal(dup2(saved, 0), 0);
    close(saved);
    dev.membership->revoked_fd = full;
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.revoked, 2);

    assert_int_equal(pipe(pipe_fds), 0);
    close(dev.membership->revoked_fd);
    dev.membership->revoked_fd = pipe_fds[1];
    revocation_of(text, sizeof(text), secret, 6);
    assert_int_equal(members_statement(&dev, text, strlen(text), 0, &why), -EINVAL);
    certs_stats(dev.membership->certs, &st);
    assert_int_equal(st.revoked, 3);
    members_certs_free(&dev);                      /* closes the pipe's write end */
    close(pipe_fds[0]);
    cluster_free(&dev.cluster);
    unlink(path);
    rmdir(dir);
}

/* --- issue 43: a derived address another member holds ----------------------------- */

/* A member certificate of the authority secret for key, named name, its
 * address derived from the key, valid around the real clock (membership
 * reads the wall clock). */
static void derived_cert(char *out, const uint8_t secret[CERT_SECRET_LEN], const char *name,
                         const uint8_t key[CERT_PUBKEY_LEN])
{
    struct cert c = { .kind = CERT_MEMBER, .not_before = (uint64_t)time(NULL) - 60,
                      .not_after = (uint64_t)time(NULL) + 3600 };

    memcpy(c.subject, key, CERT_PUBKEY_LEN);
    snprintf(c.name, sizeof(c.name), "%s", name);
    assert_int_equal(cert_sign(&c, secret, out, CERT_TEXT_MAX), 0);
}

/* Joined with a certificate and no server (spot-b, not in the file), a
 * node told a valid certificate of another key (spot-a) that derives its
 * own address -- what a member that holds spot-a there tells it -- has
 * the clash it lost noted for status: the holder's name and key, its
 * address, derived; spot-a is left out of its model, nothing else
 * changes. The clash ends when spot-a's certificate stops counting. */
static void test_derived_address_clash_reported(void **state)
{
    static const char file[] = "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\n" NA;
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN], ka[CERT_PUBKEY_LEN];
    char text[CERT_TEXT_MAX];
    struct cluster_addr qa, a1;
    struct cluster_node self = { .name = "spot-b" };
    struct noise_local local;
    struct device dev;
    const struct certs_clash *c;
    const char *why;
    size_t skipped, tries = 0;

    (void)state;
    assert_int_equal(cert_keypair(pub, secret), 0);
    memset(&dev, 0, sizeof(dev));
    give_membership(&dev);
    assert_int_equal(cluster_parse(file, strlen(file), &dev.membership->file, NULL), 0);
    dev.membership->file.has_authority = true;
    memcpy(dev.membership->file.authority, pub, sizeof(pub));
    assert_int_equal(cluster_addr_parse("10.77.0.1", &a1), 0);
    do {                                  /* ours: any derived address but a's */
        randombytes_buf(self.public_key, sizeof(self.public_key));
        assert_int_equal(cert_derive_address(self.public_key, 0, &dev.membership->file, &self.address), 0);
    } while (cluster_addr_equal(&self.address, &a1));
    do {                                  /* spot-a's key: one deriving ours */
        randombytes_buf(ka, sizeof(ka));
        assert_int_equal(cert_derive_address(ka, 0, &dev.membership->file, &qa), 0);
        assert_true(++tries < 1000000);
    } while (!cluster_addr_equal(&qa, &self.address));
    assert_int_equal(registry_model(&dev.membership->file, &self, NULL, 0, &dev.cluster, &skipped, NULL,
                                    NULL), 0);
    dev.self = cluster_find_name(&dev.cluster, "spot-b");
    dev.membership->self_registered = true;
    dev.membership->registry_self = self;
    memcpy(local.public_key, self.public_key, sizeof(local.public_key));
    dev.local = &local;
    snprintf(dev.ifname, sizeof(dev.ifname), "ddp0");
    dev.membership->hosts_fd = -1;
    assert_int_equal(members_certs_start(&dev), 0);
    derived_cert(text, secret, "spot-b", self.public_key);          /* ours, as up offers it */
    assert_int_equal(certs_offer(dev.membership->certs, text, (uint64_t)time(NULL), &why), CERTS_ADDED);
    members_certs_run(&dev, 1000 * WG_NSEC_PER_SEC);
    assert_false(certs_clash(dev.membership->certs)->on);

    derived_cert(text, secret, "spot-a", ka);                        /* told by a member */
    assert_int_equal(certs_offer(dev.membership->certs, text, (uint64_t)time(NULL), &why), CERTS_ADDED);
    members_certs_run(&dev, 1001 * WG_NSEC_PER_SEC);
    c = certs_clash(dev.membership->certs);
    assert_true(c->on);
    assert_true(c->derived);
    assert_string_equal(c->holder, "spot-a");
    assert_string_equal(c->ours, "spot-b");
    assert_memory_equal(c->holder_key, ka, sizeof(ka));
    assert_true(cluster_addr_equal(&c->address, &self.address));
    assert_null(cluster_find_name(&dev.cluster, "spot-a"));          /* left out here */
    assert_non_null(dev.self = cluster_find_name(&dev.cluster, "spot-b"));
    assert_int_equal(dev.cluster.n_nodes, 2);

    /* spot-a's key revoked: the clash is over. */
    assert_int_equal(certs_revoke_key(dev.membership->certs, ka), CERTS_REVOKING);
    members_certs_run(&dev, 1002 * WG_NSEC_PER_SEC);
    assert_false(certs_clash(dev.membership->certs)->on);
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
    cluster_free(&dev.membership->file);
}

/* A member certificate through a token (its secret tsec, its statement
 * token) for key, valid an hour around now. */
static void token_cert(char *out, const struct cert *token, const uint8_t tsec[CERT_SECRET_LEN],
                       const char *name, const uint8_t key[CERT_PUBKEY_LEN])
{
    struct cert c = { .kind = CERT_MEMBER, .not_before = (uint64_t)time(NULL) - 60,
                      .not_after = (uint64_t)time(NULL) + 3600 };

    memcpy(c.subject, key, CERT_PUBKEY_LEN);
    snprintf(c.name, sizeof(c.name), "%s", name);
    cert_token_embed(&c, token);
    assert_int_equal(cert_sign(&c, tsec, out, CERT_TEXT_MAX), 0);
}

/* A join token (prefix, max members) signed by the authority secret. */
static void token_of(struct cert *t, uint8_t tsec[CERT_SECRET_LEN],
                     const uint8_t secret[CERT_SECRET_LEN], const char *prefix, uint32_t max)
{
    char text[CERT_TEXT_MAX];

    memset(t, 0, sizeof(*t));
    t->kind = CERT_TOKEN;
    t->not_before = (uint64_t)time(NULL) - 120;
    t->not_after = (uint64_t)time(NULL) + 7200;
    t->max_members = max;
    snprintf(t->name, sizeof(t->name), "%s", prefix);
    assert_int_equal(cert_keypair(t->subject, tsec), 0);
    assert_int_equal(cert_sign(t, secret, text, sizeof(text)), 0);
}

/* A device of file (its first node this one, key K1) under the
 * authority pub, its store made, with no registry. */
static void no_server_device(struct device *dev, struct noise_local *local, const char *file,
                             const uint8_t pub[CERT_PUBKEY_LEN])
{
    device_of(dev, file);
    assert_int_equal(cluster_parse(file, strlen(file), &dev->membership->file, NULL), 0);
    dev->cluster.has_authority = dev->membership->file.has_authority = true;
    memcpy(dev->cluster.authority, pub, CERT_PUBKEY_LEN);
    memcpy(dev->membership->file.authority, pub, CERT_PUBKEY_LEN);
    memset(local, 0, sizeof(*local));
    memcpy(local->public_key, dev->self->public_key, sizeof(local->public_key));
    dev->local = local;
    assert_int_equal(members_certs_start(dev), 0);
}

/* Issue 55: a token's holder signs a certificate for V's key (keys are
 * public) and hands it to its own node through the control socket, or
 * its node passes it on: neither is V's word. The control socket refuses
 * it; passed on by a peer, it takes nothing from V, whose own
 * certificate, said on its own session, counts -- through a token, or the
 * authority's. */
static void test_squat_takes_nothing(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN], tsec[CERT_SECRET_LEN];
    uint8_t vkey[CERT_PUBKEY_LEN];
    char squat[CERT_TEXT_MAX], text[CERT_TEXT_MAX];
    struct noise_local local;
    struct cert token;
    struct device dev;
    struct peer t, v;
    const struct cert *held;
    const char *why;

    (void)state;
    assert_int_equal(cert_keypair(pub, secret), 0);
    token_of(&token, tsec, secret, "w-", 8);
    no_server_device(&dev, &local, HEAD NA, pub);
    randombytes_buf(vkey, sizeof(vkey));
    token_cert(squat, &token, tsec, "w-squat", vkey);
    assert_int_not_equal(members_statement(&dev, squat, strlen(squat), 0, &why), CERTS_ADDED);
    assert_null(certs_member(dev.membership->certs, vkey));

    memset(&t, 0, sizeof(t));
    t.dev = &dev;
    randombytes_buf(t.public_key, sizeof(t.public_key));
    snprintf(t.member.name, sizeof(t.member.name), "w-t");
    members_cert_said(&t, squat, strlen(squat), 5 * WG_NSEC_PER_SEC);
    memset(&v, 0, sizeof(v));
    v.dev = &dev;
    memcpy(v.public_key, vkey, sizeof(vkey));
    snprintf(v.member.name, sizeof(v.member.name), "v");
    token_cert(text, &token, tsec, "w-v", vkey);
    members_cert_said(&v, text, strlen(text), 6 * WG_NSEC_PER_SEC);
    assert_non_null(held = certs_member(dev.membership->certs, vkey));
    assert_string_equal(held->name, "w-v");
    /* The squat said again by t: refused. */
    members_cert_said(&t, squat, strlen(squat), 7 * WG_NSEC_PER_SEC);
    assert_string_equal(certs_member(dev.membership->certs, vkey)->name, "w-v");
    /* The authority signs V as gpu3: it replaces the token's. */
    derived_cert(text, secret, "gpu3", vkey);
    members_cert_said(&t, text, strlen(text), 8 * WG_NSEC_PER_SEC);
    assert_string_equal(certs_member(dev.membership->certs, vkey)->name, "gpu3");
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
    cluster_free(&dev.membership->file);
}

/* A token's certificate for key at address index idx (issue 59). */
static void token_cert_at(char *out, const struct cert *token, const uint8_t tsec[CERT_SECRET_LEN],
                          const char *name, const uint8_t key[CERT_PUBKEY_LEN], uint8_t idx)
{
    struct cert c = { .kind = CERT_MEMBER, .not_before = (uint64_t)time(NULL) - 60,
                      .not_after = (uint64_t)time(NULL) + 3600, .address_index = idx };

    memcpy(c.subject, key, CERT_PUBKEY_LEN);
    snprintf(c.name, sizeof(c.name), "%s", name);
    cert_token_embed(&c, token);
    assert_int_equal(cert_sign(&c, tsec, out, CERT_TEXT_MAX), 0);
}

/* A random key whose address at index idx in cl is want (NULL: any but
 * those in avoid[0..n_avoid)). */
static void key_at(uint8_t key[CERT_PUBKEY_LEN], unsigned idx, const struct cluster *cl,
                   const struct cluster_addr *want, const struct cluster_addr *avoid,
                   size_t n_avoid)
{
    struct cluster_addr a;
    bool ok;

    for (size_t tries = 0;; tries++) {
        assert_true(tries < 1000000);
        randombytes_buf(key, CERT_PUBKEY_LEN);
        assert_int_equal(cert_derive_address(key, idx, cl, &a), 0);
        ok = want ? cluster_addr_equal(&a, want) : true;
        for (size_t i = 0; ok && i < n_avoid; i++)
            ok = !cluster_addr_equal(&a, &avoid[i]);
        if (ok)
            return;
    }
}

/* Issue 59, on a member (a, 10.77.0.1 in a /24): w-n1 holds X; w-n2's
 * key derives X too at index 0 (left out: held first); w-n3 holds Y,
 * which w-n2's key derives at index 1. w-n2 moves to index 1 (its key's
 * own word, signed from the same token, ending no later): held, but Y
 * stays w-n3's, the running member's, though the store held w-n2 first
 * -- a move never takes a live member's address. Then index 2, free: w-n2
 * is in the model there. Passed on by a peer, another index for w-n2's
 * key is refused (only its key moves it); a certificate of index 8
 * cannot be made. */
static void test_address_index_move(void **state)
{
    static const char file[] = "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\n" NA;
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN], tsec[CERT_SECRET_LEN];
    uint8_t k1[CERT_PUBKEY_LEN], k2[CERT_PUBKEY_LEN], k3[CERT_PUBKEY_LEN];
    char text[CERT_TEXT_MAX];
    struct cluster_addr x, y, z, taken[3];
    struct noise_local local;
    struct cert token;
    struct device dev;
    const struct cluster_node *n;
    const char *why;
    uint64_t now = (uint64_t)time(NULL);

    static struct loop idle;             /* no crypto jobs: what a model change drains */

    (void)state;
    assert_int_equal(cert_keypair(pub, secret), 0);
    token_of(&token, tsec, secret, "w-", 8);
    no_server_device(&dev, &local, file, pub);
    dev.loop = &idle;
    assert_int_equal(index_table_init(&dev.indices, 16), 0);   /* the model's peers get indexes */
    assert_int_equal(cluster_addr_parse("10.77.0.1", &taken[0]), 0);
    key_at(k1, 0, &dev.membership->file, NULL, taken, 1);
    assert_int_equal(cert_derive_address(k1, 0, &dev.membership->file, &x), 0);
    taken[1] = x;
    do {                                 /* X at index 0; Y and Z apart from X, a's, each other */
        key_at(k2, 0, &dev.membership->file, &x, NULL, 0);
        assert_int_equal(cert_derive_address(k2, 1, &dev.membership->file, &y), 0);
        assert_int_equal(cert_derive_address(k2, 2, &dev.membership->file, &z), 0);
    } while (cluster_addr_equal(&y, &x) || cluster_addr_equal(&y, &taken[0]) ||
             cluster_addr_equal(&z, &x) || cluster_addr_equal(&z, &y) ||
             cluster_addr_equal(&z, &taken[0]));
    key_at(k3, 0, &dev.membership->file, &y, NULL, 0);

    token_cert_at(text, &token, tsec, "w-n1", k1, 0);
    assert_int_equal(certs_offer(dev.membership->certs, text, now, &why), CERTS_ADDED);
    members_certs_run(&dev, 1000 * WG_NSEC_PER_SEC);
    token_cert_at(text, &token, tsec, "w-n2", k2, 0);
    assert_int_equal(certs_offer(dev.membership->certs, text, now, &why), CERTS_ADDED);
    members_certs_run(&dev, 1001 * WG_NSEC_PER_SEC);
    assert_null(cluster_find_name(&dev.cluster, "w-n2"));           /* X is w-n1's */
    token_cert_at(text, &token, tsec, "w-n3", k3, 0);
    assert_int_equal(certs_offer(dev.membership->certs, text, now, &why), CERTS_ADDED);
    members_certs_run(&dev, 1002 * WG_NSEC_PER_SEC);
    assert_non_null(n = cluster_find_address(&dev.cluster, &y));
    assert_string_equal(n->name, "w-n3");

    /* w-n2 moves to index 1: Y, w-n3's */
    token_cert_at(text, &token, tsec, "w-n2", k2, 1);
    assert_int_equal(certs_offer(dev.membership->certs, text, now, &why), CERTS_ADDED);
    assert_int_equal(certs_member(dev.membership->certs, k2)->address_index, 1);
    members_certs_run(&dev, 1003 * WG_NSEC_PER_SEC);
    assert_non_null(n = cluster_find_address(&dev.cluster, &y));
    assert_string_equal(n->name, "w-n3");
    assert_null(cluster_find_name(&dev.cluster, "w-n2"));
    assert_non_null(n = cluster_find_address(&dev.cluster, &x));
    assert_string_equal(n->name, "w-n1");

    /* heard from a peer: another index for w-n2's key moves nothing */
    struct cert heard = { .kind = CERT_MEMBER, .not_before = now - 60,
                          .not_after = token.not_after, .address_index = 3, .name = "w-n2" };
    memcpy(heard.subject, k2, sizeof(k2));      /* later: a renewal's shape, another index */
    cert_token_embed(&heard, &token);
    assert_int_equal(cert_sign(&heard, tsec, text, sizeof(text)), 0);
    assert_int_equal(certs_offer_heard(dev.membership->certs, &heard, now, &why),
                     CERTS_NAME_TAKEN);
    assert_int_equal(certs_member(dev.membership->certs, k2)->address_index, 1);

    /* then index 2: free, w-n2 there */
    token_cert_at(text, &token, tsec, "w-n2", k2, 2);
    assert_int_equal(certs_offer(dev.membership->certs, text, now, &why), CERTS_ADDED);
    members_certs_run(&dev, 1004 * WG_NSEC_PER_SEC);
    assert_non_null(n = cluster_find_name(&dev.cluster, "w-n2"));
    assert_true(cluster_addr_equal(&n->address, &z));
    assert_string_equal(cluster_find_address(&dev.cluster, &y)->name, "w-n3");

    /* back to index 1 or 0, with the same end: no move back (a key moves
     * only forward, at most 7 times: no flapping between held indexes) */
    token_cert_at(text, &token, tsec, "w-n2", k2, 1);
    assert_int_equal(certs_offer(dev.membership->certs, text, now, &why), CERTS_KNOWN);
    token_cert_at(text, &token, tsec, "w-n2", k2, 0);
    assert_int_equal(certs_offer(dev.membership->certs, text, now, &why), CERTS_KNOWN);
    assert_int_equal(certs_member(dev.membership->certs, k2)->address_index, 2);
    members_certs_run(&dev, 1005 * WG_NSEC_PER_SEC);
    assert_true(cluster_addr_equal(&cluster_find_name(&dev.cluster, "w-n2")->address, &z));
    assert_int_equal(cert_derive_address(k2, CERT_ADDRESS_INDEXES, &dev.membership->file, &z),
                     -EINVAL);
    for (size_t i = 0; i < dev.n_peers; i++)     /* the peers the model made */
        peer_free(dev.peers[i]);
    free(dev.peers);
    device_map_free(dev.by_address);
    index_table_destroy(&dev.indices);
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
    cluster_free(&dev.membership->file);
}

/* Issue 60, as the attacker: a token holder whose token grants no route
 * signs itself a member that carries a prefix; the store refuses the
 * certificate whole, on the control socket and from a peer. The same
 * route signed by the authority is held. (What the model takes of a
 * held certificate's routes: test_routes' test_admit_cert_routes.) */
static void test_cert_routes_token_refused(void **state)
{
    static const char file[] = HEAD NA "routes = 192.168.50.0/24\n";
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN], tsec[CERT_SECRET_LEN];
    char text[CERT_TEXT_MAX];
    struct noise_local local;
    struct cert token, m;
    struct device dev;
    struct peer p;
    const char *why;

    (void)state;
    assert_int_equal(cert_keypair(pub, secret), 0);
    no_server_device(&dev, &local, file, pub);
    token_of(&token, tsec, secret, "w-", 8);
    memset(&m, 0, sizeof(m));
    m.kind = CERT_MEMBER;
    m.not_before = (uint64_t)time(NULL) - 60;
    m.not_after = (uint64_t)time(NULL) + 3600;
    randombytes_buf(m.subject, sizeof(m.subject));
    snprintf(m.name, sizeof(m.name), "w-evil");
    m.n_routes = 1;
    assert_int_equal(cluster_addr_parse("10.99.0.0", &m.routes[0].net), 0);
    m.routes[0].prefix = 16;
    cert_token_embed(&m, &token);
    assert_int_equal(cert_sign(&m, tsec, text, sizeof(text)), 0);
    assert_int_not_equal(members_statement(&dev, text, strlen(text), 0, &why), CERTS_ADDED);
    memset(&p, 0, sizeof(p));
    p.dev = &dev;
    memcpy(p.public_key, m.subject, sizeof(m.subject));
    snprintf(p.member.name, sizeof(p.member.name), "w-evil");
    members_cert_said(&p, text, strlen(text), 5 * WG_NSEC_PER_SEC);
    assert_null(certs_member(dev.membership->certs, m.subject));
    /* The authority's own grant of it is held. */
    m.has_token = false;
    memset(&m.token, 0, sizeof(m.token));
    memset(m.token_sig, 0, sizeof(m.token_sig));
    assert_int_equal(cert_sign(&m, secret, text, sizeof(text)), 0);
    assert_int_equal(certs_offer(dev.membership->certs, text, (uint64_t)time(NULL), &why),
                     CERTS_ADDED);
    assert_int_equal(certs_member(dev.membership->certs, m.subject)->n_routes, 1);
    members_certs_free(&dev);
    cluster_free(&dev.cluster);
    cluster_free(&dev.membership->file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts_block_with_aliases),
        cmocka_unit_test(test_hosts_paced),
        cmocka_unit_test(test_take_hosts),
        cmocka_unit_test(test_none_reachable),
        cmocka_unit_test(test_machine_names),
        cmocka_unit_test(test_machine_names_no_member_takes),
        cmocka_unit_test(test_registered_names),
        cmocka_unit_test(test_checksum),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_statements),
        cmocka_unit_test(test_revocations_last),
        cmocka_unit_test(test_state_dir_checked),
        cmocka_unit_test(test_revocations_file_damaged),
        cmocka_unit_test(test_revocations_kept_or_said_not),
        cmocka_unit_test(test_derived_address_clash_reported),
        cmocka_unit_test(test_squat_takes_nothing),
        cmocka_unit_test(test_address_index_move),
        cmocka_unit_test(test_cert_routes_token_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
