/* Tests of overlay/membership/members.c that need no running engine: the
 * names block written from the cluster model (a line per node: its name,
 * aliases and machine names, a machine name written only when one node
 * claims it) through a kept descriptor, the checksum `status` shows, and a
 * reload refused before anything is touched (a file with errors, a change
 * of this node's key, address or port, of [cluster]'s network, a file
 * without this node) -- each said in the lines a person reads. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "overlay/membership/hosts.h"
#include "overlay/membership/members.h"

#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="
#define K3 "Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo="

#define HEAD "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
#define NA "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\n"
#define NB "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\naliases = ip-192-0-2-2 b.internal\n"

/* A device holding only what membership reads before it applies: the
 * model, this node, the interface name, the hosts descriptor. */
static void device_of(struct device *dev, const char *text)
{
    memset(dev, 0, sizeof(*dev));
    assert_int_equal(cluster_parse(text, strlen(text), &dev->cluster, NULL), 0);
    dev->self = &dev->cluster.nodes[0];
    snprintf(dev->ifname, sizeof(dev->ifname), "ddp0");
    dev->hosts_fd = -1;
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
    dev.hosts_fd = fd;
    assert_int_equal(members_write_hosts(&dev), 0);
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                             "10.77.0.1 a\n"
                             "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                             "# END ddpnet ddp0\n"
                             "127.0.0.1 localhost\n");
    dev.hosts_fd = -1;
    assert_int_equal(members_write_hosts(&dev), -EBADF);
    close(fd);
    unlink(path);
    cluster_free(&dev.cluster);
}

/* The hosts block's text for dev, through a fresh temporary file. */
static char *block_of(struct device *dev)
{
    static char buf[2048];
    char path[] = "/tmp/ddpnet-members-XXXXXX";
    int fd = mkstemp(path);
    ssize_t n;

    assert_true(fd >= 0);
    dev->hosts_fd = fd;
    assert_int_equal(members_write_hosts(dev), 0);
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    close(fd);
    unlink(path);
    dev->hosts_fd = -1;
    return buf;
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
    b->n_names = 2;
    strcpy(b->names[0], "ip-192-0-2-2");     /* already b's alias: not twice */
    strcpy(b->names[1], "gpu-b.internal");
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a ip-192-0-2-1 ip-192-0-2-1.ec2.internal\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal gpu-b.internal\n"
                        "# END ddpnet ddp0\n");
    /* b says it is a's machine, and "a" (a node name) and localhost. */
    strcpy(b->names[0], "IP-192-0-2-1");
    strcpy(b->names[1], "a");
    assert_string_equal(block_of(&dev),
                        "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
                        "10.77.0.1 a ip-192-0-2-1.ec2.internal\n"
                        "10.77.0.2 b ip-192-0-2-2 b.internal\n"
                        "# END ddpnet ddp0\n");
    strcpy(b->names[0], "localhost");
    b->n_names = 1;
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

static void test_checksum(void **state)
{
    uint8_t x[DEVICE_CLUSTER_SUM_LEN], y[DEVICE_CLUSTER_SUM_LEN];

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
        assert_int_equal(dev.cluster_applied_unix, 0);
    }
    /* Run by systemd: the unit is what to restart (or stop, to leave). */
    snprintf(dev.service, sizeof(dev.service), "ddpnet@ddp0.service");
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
    dev.service[0] = '\0';
    /* The same file: applied (nothing to change), its checksum noted. */
    struct said s = { "" };
    assert_int_equal(members_reload(&dev, HEAD NA NB, strlen(HEAD NA NB), collect, &s, 1000), 0);
    assert_string_equal(s.text, "");
    assert_true(dev.cluster_applied_unix > 0);
    uint8_t sum[DEVICE_CLUSTER_SUM_LEN];
    members_checksum(HEAD NA NB, strlen(HEAD NA NB), sum);
    assert_memory_equal(sum, dev.cluster_sum, sizeof(sum));
    cluster_free(&dev.cluster);
    cluster_free(&dev.file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts_block_with_aliases),
        cmocka_unit_test(test_machine_names),
        cmocka_unit_test(test_checksum),
        cmocka_unit_test(test_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
