/* SPDX-License-Identifier: MIT */
/* Tests of overlay/membership/hosts and hosts_writer: the names block in a
 * hosts file, as pure edits of bytes and as in-place rewrites of real
 * temporary files (a member's claimed names left out where the file gives
 * them already, no reader seeing a torn file); the writer thread's pacing
 * and what the resolver's answers let in. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/addr.h"
#include "overlay/membership/hosts.h"
#include "overlay/membership/hosts_writer.h"

#define BEGIN0 "# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\n"
#define END0   "# END ddpnet ddp0\n"
#define BLOCK0 BEGIN0 "10.77.0.1 node-a\n" "10.77.0.2 node-b\n" END0
#define OTHER  "# BEGIN ddpnet ddp1 (managed by ddpnet; do not edit)\n" \
               "10.88.0.1 other-a\n" "# END ddpnet ddp1\n"

static const struct hosts_entry two[] = {
    { .address = "10.77.0.1", .name = "node-a" },
    { .address = "10.77.0.2", .name = "node-b" },
};

/* hosts_edit on a C string, which must succeed; returns the new text. */
static char *edit(const char *old, const char *ifname, const struct hosts_entry *e, size_t n)
{
    char *out = NULL;
    size_t outlen = 0;

    assert_int_equal(hosts_edit(old, strlen(old), ifname, e, n, &out, &outlen), 0);
    assert_non_null(out);
    assert_int_equal(strlen(out), outlen);
    return out;
}

static void assert_edit(const char *old, const struct hosts_entry *e, size_t n,
                        const char *want)
{
    char *out = edit(old, "ddp0", e, n);

    assert_string_equal(out, want);
    free(out);
}

/* hosts_edit that must fail with err and leave *out alone. */
static void assert_edit_fails(const char *old, const char *ifname,
                              const struct hosts_entry *e, size_t n, int err)
{
    char sentinel = 0, *out = &sentinel;
    size_t outlen = 7;

    assert_int_equal(hosts_edit(old, strlen(old), ifname, e, n, &out, &outlen), err);
    assert_ptr_equal(out, &sentinel);
    assert_int_equal(outlen, 7);
}

/* --- pure edits --------------------------------------------------------------- */

static void test_empty_file(void **state)
{
    (void)state;
    assert_edit("", two, 2, BLOCK0);
    /* NULL old with length 0 is an empty file too. */
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(hosts_edit(NULL, 0, "ddp0", two, 2, &out, &len), 0);
    assert_string_equal(out, BLOCK0);
    free(out);
}

/* A new block goes first, so that its names win over the machine's own
 * 127.0.1.1 line; the rest follows byte for byte. */
static void test_new_block_goes_first(void **state)
{
    (void)state;
    assert_edit("127.0.0.1 localhost\n127.0.1.1 ip-192-0-2-1\n", two, 2,
                BLOCK0 "127.0.0.1 localhost\n127.0.1.1 ip-192-0-2-1\n");
}

static void test_new_block_without_final_newline(void **state)
{
    (void)state;
    assert_edit("127.0.0.1 localhost", two, 2, BLOCK0 "127.0.0.1 localhost");
}

/* Entries of one address in a row share a line; the first name leads. */
static void test_names_of_one_address_share_a_line(void **state)
{
    static const struct hosts_entry e[] = {
        { .address = "10.77.0.1", .name = "node-a" }, { .address = "10.77.0.1", .name = "ip-192-0-2-1" },
        { .address = "10.77.0.1", .name = "ip-192-0-2-1.ec2.internal" }, { .address = "10.77.0.2", .name = "node-b" },
    };
    (void)state;
    assert_edit("", e, 4, BEGIN0 "10.77.0.1 node-a ip-192-0-2-1 ip-192-0-2-1.ec2.internal\n"
                              "10.77.0.2 node-b\n" END0);
}

static void test_replace_in_place(void **state)
{
    static const struct hosts_entry one[] = { { .address = "fd00::5", .name = "node_c.example" } };
    const char *old = "127.0.0.1 localhost\n"
                      BLOCK0
                      OTHER
                      "# a comment\t kept as is  \n"
                      "::1 ip6-localhost";
    const char *want = "127.0.0.1 localhost\n"
                       BEGIN0 "fd00::5 node_c.example\n" END0
                       OTHER
                       "# a comment\t kept as is  \n"
                       "::1 ip6-localhost";
    (void)state;
    assert_edit(old, one, 1, want);
}

static void test_other_interface_untouched(void **state)
{
    char *out;
    (void)state;
    /* "ddp" is a prefix of "ddp0" and "ddp1": their blocks are not ours. */
    out = edit(BLOCK0 OTHER, "ddp", two, 1);
    assert_string_equal(out, "# BEGIN ddpnet ddp (managed by ddpnet; do not edit)\n"
                             "10.77.0.1 node-a\n# END ddpnet ddp\n" BLOCK0 OTHER);
    free(out);
    /* Removing ddp1's block leaves ddp0's, byte for byte. */
    out = edit("x\n" BLOCK0 OTHER "y\n", "ddp1", NULL, 0);
    assert_string_equal(out, "x\n" BLOCK0 "y\n");
    free(out);
}

static void test_round_trip(void **state)
{
    static const char *const originals[] = {
        "",
        "127.0.0.1 localhost\n",
        "127.0.0.1 localhost\n\n\n",
        "127.0.0.1 localhost\r\n::1 localhost\r\n",
        OTHER,
        "a\n" OTHER "b\n",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(originals) / sizeof(originals[0]); i++) {
        char *added = edit(originals[i], "ddp0", two, 2);
        char *removed = edit(added, "ddp0", NULL, 0);

        assert_string_not_equal(added, originals[i]);
        assert_string_equal(removed, originals[i]);
        free(added);
        free(removed);
    }
}

static void test_idempotent(void **state)
{
    char *once, *twice;
    (void)state;
    once = edit("127.0.0.1 localhost\n" OTHER, "ddp0", two, 2);
    twice = edit(once, "ddp0", two, 2);
    assert_string_equal(once, twice);
    free(once);
    free(twice);
}

static void test_remove(void **state)
{
    (void)state;
    /* n == 0 and e == NULL both remove. */
    assert_edit("a\n" BLOCK0 "b\n", two, 0, "a\nb\n");
    assert_edit("a\n" BLOCK0 "b\n", NULL, 2, "a\nb\n");
    /* Nothing to remove: the same bytes, even without a final newline. */
    assert_edit("a\nb", NULL, 0, "a\nb");
    assert_edit("", NULL, 0, "");
    /* A block that ends the file without a newline. */
    assert_edit("a\n" BEGIN0 "# END ddpnet ddp0", NULL, 0, "a\n");
}

static void test_crlf_markers(void **state)
{
    const char *old = "a\r\n# BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)\r\n"
                      "10.0.0.9 old\r\n# END ddpnet ddp0\r\nb\r\n";
    (void)state;
    assert_edit(old, two, 2, "a\r\n" BLOCK0 "b\r\n");
}

static void test_damaged_block(void **state)
{
    (void)state;
    /* BEGIN without END. */
    assert_edit_fails("a\n" BEGIN0 "10.0.0.1 x\n", "ddp0", two, 2, -EBADMSG);
    assert_edit_fails("a\n" BEGIN0 "10.0.0.1 x\n", "ddp0", NULL, 0, -EBADMSG);
    /* END without BEGIN. */
    assert_edit_fails("a\n" END0, "ddp0", two, 2, -EBADMSG);
    /* BEGIN inside a block. */
    assert_edit_fails(BEGIN0 BLOCK0, "ddp0", two, 2, -EBADMSG);
    /* Two blocks. */
    assert_edit_fails(BLOCK0 "x\n" BLOCK0, "ddp0", NULL, 0, -EBADMSG);
    /* Another interface's damage is not ours to judge. */
    char *out = edit("# BEGIN ddpnet ddp1\n", "ddp0", two, 2);
    assert_string_equal(out, BLOCK0 "# BEGIN ddpnet ddp1\n");
    free(out);
}

static void test_invalid_names(void **state)
{
    static const char *const bad[] = {
        "node a", "node\ta", "node#a", "#node", "", "-node", ".node", "node\n",
        "nöde", "node/a",
    };
    struct hosts_entry e[2] = { { .address = "10.77.0.1", .name = "ok" }, { .address = "10.77.0.2", .name = "" } };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(e[1].name, sizeof(e[1].name), "%s", bad[i]);
        assert_edit_fails("a\n", "ddp0", e, 2, -EINVAL);
    }
    /* Not NUL-terminated within its field. */
    memset(e[1].name, 'a', sizeof(e[1].name));
    assert_edit_fails("a\n", "ddp0", e, 2, -EINVAL);
    /* The longest name that fits is fine. */
    e[1].name[sizeof(e[1].name) - 1] = '\0';
    char *out = edit("", "ddp0", e, 2);
    assert_non_null(strstr(out, e[1].name));
    free(out);
}

static void test_invalid_addresses(void **state)
{
    static const char *const bad[] = {
        "10.77.0", "10.77.0.1 x", "", "node-a", "10.77.0.256", "fd00::1::2",
        "10.77.0.1#", " 10.77.0.1",
    };
    struct hosts_entry e = { .address = "", .name = "node" };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(e.address, sizeof(e.address), "%s", bad[i]);
        assert_edit_fails("", "ddp0", &e, 1, -EINVAL);
    }
    memset(e.address, '1', sizeof(e.address));
    assert_edit_fails("", "ddp0", &e, 1, -EINVAL);
    snprintf(e.address, sizeof(e.address), "fd00::1");
    char *out = edit("", "ddp0", &e, 1);
    assert_string_equal(out, BEGIN0 "fd00::1 node\n" END0);
    free(out);
}

static void test_invalid_args(void **state)
{
    char *out = NULL;
    size_t len = 0;
    (void)state;
    assert_edit_fails("", NULL, two, 2, -EINVAL);
    assert_edit_fails("", "", two, 2, -EINVAL);
    assert_edit_fails("", "ddp 0", two, 2, -EINVAL);
    assert_edit_fails("", "ddp#0", two, 2, -EINVAL);
    assert_edit_fails("", "ddp/0", two, 2, -EINVAL);
    free(edit("", "a23456789012345", two, 2)); /* 15 chars: the longest name */
    assert_edit_fails("", "a234567890123456", two, 2, -EINVAL); /* 16: too long */
    assert_edit_fails("", "ddp0", two, HOSTS_MAX_ENTRIES + 1, -E2BIG);
    assert_int_equal(hosts_edit(NULL, 1, "ddp0", two, 2, &out, &len), -EINVAL);
    assert_int_equal(hosts_edit("", 0, "ddp0", two, 2, NULL, &len), -EINVAL);
    assert_int_equal(hosts_edit("", 0, "ddp0", two, 2, &out, NULL), -EINVAL);
    assert_null(out);
}

static void test_embedded_nul_kept(void **state)
{
    static const char old[] = "a\0b\n";
    char *out = NULL;
    size_t len = 0;
    (void)state;
    /* Content is bytes, not a C string: a NUL in it is carried over. */
    assert_int_equal(hosts_edit(old, sizeof(old) - 1, "ddp0", two, 2, &out, &len), 0);
    assert_int_equal(len, sizeof(old) - 1 + strlen(BLOCK0));
    assert_memory_equal(out, BLOCK0, strlen(BLOCK0));
    assert_memory_equal(out + strlen(BLOCK0), old, sizeof(old) - 1);
    free(out);
}

/* --- files ------------------------------------------------------------------------ */

struct tmpfile {
    char path[64];
};

static void tmp_create(struct tmpfile *t, const char *content)
{
    int fd;

    snprintf(t->path, sizeof(t->path), "/tmp/ddpnet-hosts-XXXXXX");
    fd = mkstemp(t->path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    assert_int_equal(close(fd), 0);
}

/* The file's content as a malloc'd C string. */
static char *tmp_read(const struct tmpfile *t)
{
    static char buf[1 << 16];
    FILE *f = fopen(t->path, "rb");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void assert_file(const struct tmpfile *t, const char *want)
{
    char *got = tmp_read(t);

    assert_string_equal(got, want);
    free(got);
}

static ino_t inode_of(const char *path)
{
    struct stat st;

    assert_int_equal(stat(path, &st), 0);
    return st.st_ino;
}

static void test_file_update_in_place(void **state)
{
    const char *orig = "127.0.0.1 localhost\n" OTHER "::1 ip6-localhost";
    struct tmpfile t;
    ino_t ino;
    (void)state;
    tmp_create(&t, orig);
    ino = inode_of(t.path);

    assert_int_equal(hosts_update(t.path, "ddp0", two, 2), 0);
    assert_file(&t, BLOCK0 "127.0.0.1 localhost\n" OTHER "::1 ip6-localhost");
    assert_int_equal(inode_of(t.path), ino);

    /* A shorter block: the file shrinks (ftruncate), nothing stale remains. */
    assert_int_equal(hosts_update(t.path, "ddp0", two, 1), 0);
    assert_file(&t, BEGIN0 "10.77.0.1 node-a\n" END0
                "127.0.0.1 localhost\n" OTHER "::1 ip6-localhost");

    assert_int_equal(hosts_remove(t.path, "ddp0"), 0);
    assert_file(&t, orig);      /* byte for byte, as it was */
    assert_int_equal(inode_of(t.path), ino);
    unlink(t.path);
}

/* Through a descriptor kept open (the daemon's, after it dropped root):
 * the same edits, the lock given back each time, the fd left open. */
static void test_file_update_by_fd(void **state)
{
    struct tmpfile t;
    int fd, other;
    (void)state;
    tmp_create(&t, "127.0.0.1 localhost\n");
    fd = hosts_open(t.path);
    assert_true(fd >= 0);
    assert_int_equal(hosts_update_fd(fd, "ddp0", two, 2), 0);
    assert_file(&t, BLOCK0 "127.0.0.1 localhost\n");
    other = open(t.path, O_RDONLY);
    assert_true(other >= 0);
    assert_int_equal(flock(other, LOCK_EX | LOCK_NB), 0);      /* not held by us */
    close(other);
    assert_int_equal(hosts_update_fd(fd, "ddp0", two, 1), 0);
    assert_file(&t, BEGIN0 "10.77.0.1 node-a\n" END0 "127.0.0.1 localhost\n");
    assert_int_equal(hosts_update_fd(fd, "ddp0", NULL, 0), 0);
    assert_file(&t, "127.0.0.1 localhost\n");
    assert_int_equal(close(fd), 0);
    assert_int_equal(hosts_update_fd(-1, "ddp0", two, 2), -EBADF);
    assert_int_equal(hosts_open(NULL), -EINVAL);
    unlink(t.path);
    assert_int_equal(hosts_open(t.path), -ENOENT);
}

static void test_file_unchanged_not_written(void **state)
{
    struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
    struct tmpfile t;
    struct stat st;
    (void)state;
    tmp_create(&t, "a\n" BLOCK0);
    assert_int_equal(utimensat(AT_FDCWD, t.path, old, 0), 0);
    assert_int_equal(hosts_update(t.path, "ddp0", two, 2), 0);
    assert_int_equal(stat(t.path, &st), 0);
    assert_int_equal(st.st_mtim.tv_sec, old[1].tv_sec);
    /* A change does write. */
    assert_int_equal(hosts_update(t.path, "ddp0", two, 1), 0);
    assert_int_equal(stat(t.path, &st), 0);
    assert_int_not_equal(st.st_mtim.tv_sec, old[1].tv_sec);
    unlink(t.path);
}

static void test_file_missing(void **state)
{
    (void)state;
    assert_int_equal(hosts_update("/tmp/ddpnet-no-such-dir/hosts", "ddp0", two, 2), -ENOENT);
    assert_int_equal(hosts_remove("/tmp/ddpnet-no-such-dir/hosts", "ddp0"), -ENOENT);
    assert_int_equal(hosts_update(NULL, "ddp0", two, 2), -EINVAL);
}

static void test_file_errors_leave_it_untouched(void **state)
{
    const char *damaged = "a\n" BEGIN0 "10.0.0.1 x\n";
    struct hosts_entry bad = { .address = "10.0.0.1", .name = "bad name" };
    struct tmpfile t;
    (void)state;
    tmp_create(&t, damaged);
    assert_int_equal(hosts_update(t.path, "ddp0", two, 2), -EBADMSG);
    assert_int_equal(hosts_remove(t.path, "ddp0"), -EBADMSG);
    assert_file(&t, damaged);
    unlink(t.path);

    tmp_create(&t, "a\n");
    assert_int_equal(hosts_update(t.path, "ddp0", &bad, 1), -EINVAL);
    assert_int_equal(hosts_update(t.path, "bad if", two, 2), -EINVAL);
    assert_file(&t, "a\n");
    unlink(t.path);
}

static void test_file_not_regular(void **state)
{
    char dir[] = "/tmp/ddpnet-hosts-dir-XXXXXX", fifo[64];
    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(hosts_update(dir, "ddp0", two, 2), -EISDIR);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(hosts_update(fifo, "ddp0", two, 2), -EINVAL);
    unlink(fifo);
    rmdir(dir);
}

/* hosts_update waits for another holder of the lock before it reads. */
static void test_file_waits_for_lock(void **state)
{
    struct timespec pause = { 0, 200 * 1000 * 1000 };
    struct tmpfile t;
    pid_t pid;
    int fd, status;
    (void)state;
    tmp_create(&t, "a\n");
    fd = open(t.path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(hosts_update(t.path, "ddp0", two, 2) == 0 ? 0 : 1);
    nanosleep(&pause, NULL);
    assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
    assert_file(&t, "a\n");
    assert_int_equal(flock(fd, LOCK_UN), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_file(&t, BLOCK0 "a\n");
    close(fd);
    unlink(t.path);
}

static void test_file_too_big(void **state)
{
    struct tmpfile t;
    (void)state;
    tmp_create(&t, "");
    /* Sparse: costs no disk. */
    assert_int_equal(truncate(t.path, (off_t)HOSTS_MAX_FILE + 1), 0);
    assert_int_equal(hosts_update(t.path, "ddp0", two, 2), -EFBIG);
    unlink(t.path);
}

/* --- a member's word: names the file gives outside the block ------------------- */

/* A claimed entry (a member's own word) whose name a line outside our
 * block carries -- the metadata server's, another interface's block, in
 * any case -- is left out; names in comments, and in our own old block,
 * do not count; the file's own names (not claimed) are written whatever
 * the rest of the file says. */
static void test_claimed_name_outside_block_left_out(void **state)
{
    static const char old[] =
        "127.0.0.1 localhost\n"
        "169.254.169.254 Metadata.Google.Internal   # GCE\n"
        "# 192.0.2.9 commented-out\n"
        BEGIN0 "10.77.0.2 node-b gpu-b\n" END0
        OTHER;
    struct hosts_entry e[] = {
        { .address = "10.77.0.1", .name = "node-a" },
        { .address = "10.77.0.1", .name = "localhost" },                    /* the file's word */
        { .address = "10.77.0.2", .name = "metadata.google.internal", .claimed = true },
        { .address = "10.77.0.2", .name = "commented-out", .claimed = true },
        { .address = "10.77.0.2", .name = "other-a", .claimed = true },
        { .address = "10.77.0.2", .name = "gpu-b", .claimed = true },
    };
    char *out = edit(old, "ddp0", e, sizeof(e) / sizeof(e[0]));

    (void)state;
    assert_string_equal(out, "127.0.0.1 localhost\n"
                             "169.254.169.254 Metadata.Google.Internal   # GCE\n"
                             "# 192.0.2.9 commented-out\n"
                             BEGIN0 "10.77.0.1 node-a localhost\n"
                             "10.77.0.2 commented-out gpu-b\n" END0 OTHER);
    free(out);
}

/* --- no reader sees a half file ------------------------------------------------- */

/* The file's every state between two of the writer's system calls: this
 * test's pwrite and ftruncate stand in for the C library's (the
 * executable's definitions win over libc's at link time), do the real
 * call, and -- while watch is set -- read the file whole through another
 * descriptor and note a state that is neither the old file nor the new
 * one (either perhaps followed by empty lines). The old pwrite-then-cut
 * left the new head over the old tail between its two calls. */
static struct {
    bool on;
    int fd;                               /* the watcher's own descriptor */
    const char *a, *b;
    unsigned states, torn;
    char seen[4096];
} watch;

static bool same_but_padding(const char *got, size_t len, const char *want)
{
    size_t wl = strlen(want);

    if (len < wl || memcmp(got, want, wl))
        return false;
    for (size_t i = wl; i < len; i++)
        if (got[i] != '\n')
            return false;
    return true;
}

static void watch_state(void)
{
    char buf[4096];
    long n;

    if (!watch.on)
        return;
    n = syscall(SYS_pread64, watch.fd, buf, sizeof(buf), 0L);
    watch.states++;
    if (n < 0 || (!same_but_padding(buf, (size_t)n, watch.a) &&
                  !same_but_padding(buf, (size_t)n, watch.b))) {
        if (!watch.torn++)
            snprintf(watch.seen, sizeof(watch.seen), "%.*s", (int)(n < 0 ? 0 : n), buf);
    }
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t at)
{
    long r = syscall(SYS_pwrite64, fd, buf, len, (long)at);

    watch_state();
    return (ssize_t)r;
}

int ftruncate(int fd, off_t len)
{
    long r = syscall(SYS_ftruncate, fd, (long)len);

    watch_state();
    return (int)r;
}

/* A block that shrinks (24 lines to 2) and grows back: after each of the
 * writer's calls the file is the old one or the new one, never the new
 * block over the old file's tail (a shrink) or the new bytes cut at the
 * old length (a growth). */
static void test_file_never_torn(void **state)
{
    struct hosts_entry many[24];
    struct tmpfile t;
    char *a, *b;
    int fd;

    (void)state;
    for (unsigned i = 0; i < 24; i++) {
        snprintf(many[i].address, sizeof(many[i].address), "10.77.0.%u", i + 1);
        snprintf(many[i].name, sizeof(many[i].name), "node-%u", i);
        many[i].claimed = false;
        many[i].own[0] = '\0';
    }
    tmp_create(&t, "127.0.0.1 localhost\n::1 ip6-localhost ip6-loopback\n");
    fd = hosts_open(t.path);
    assert_true(fd >= 0);
    assert_int_equal(hosts_update_fd(fd, "ddp0", many, 24), 0);
    a = tmp_read(&t);
    assert_int_equal(hosts_update_fd(fd, "ddp0", many, 2), 0);
    b = tmp_read(&t);
    watch.fd = open(t.path, O_RDONLY);
    assert_true(watch.fd >= 0);
    watch.a = a;
    watch.b = b;
    watch.on = true;
    assert_int_equal(hosts_update_fd(fd, "ddp0", many, 24), 0);
    assert_int_equal(hosts_update_fd(fd, "ddp0", many, 2), 0);
    watch.on = false;
    if (watch.torn)
        fail_msg("%u of %u states were neither file, the first:\n%s", watch.torn, watch.states,
                 watch.seen);
    assert_true(watch.states >= 3);       /* a growth and a shrink: each seen */
    assert_file(&t, b);
    close(watch.fd);
    close(fd);
    unlink(t.path);
    free(a);
    free(b);
}

/* --- the writer thread ------------------------------------------------------------ */

/* A resolver whose answers the test sets: by name, or "not yet". */
struct fake_dns {
    int hold;                             /* every lookup still unanswered */
    unsigned asked;
};

static int fake_resolve(void *ctx, const char *name, struct hosts_answer *a)
{
    struct fake_dns *d = ctx;
    static const struct { const char *name, *addr; } table[] = {
        { "metadata.google.internal", "169.254.169.254" },
        { "gpu-b", "10.77.0.2" },                     /* a member's address already */
        { "gpu-c.internal", "192.0.2.3" },            /* its own underlay address */
        { "gpu-d", "192.0.2.3" },                     /* someone else's */
    };

    __atomic_add_fetch(&d->asked, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&d->hold, __ATOMIC_ACQUIRE))
        return -EAGAIN;
    memset(a, 0, sizeof(*a));
    if (!strcmp(name, "many")) {
        a->n = HOSTS_ANSWER_MAX;
        a->too_many = true;
        for (unsigned i = 0; i < a->n; i++)
            assert_int_equal(cluster_addr_parse("10.77.0.5", &a->addr[i]), 0);
        return 0;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (!strcmp(table[i].name, name)) {
            a->n = 1;
            assert_int_equal(cluster_addr_parse(table[i].addr, &a->addr[0]), 0);
        }
    return 0;
}

static struct hosts_writer *writer_on(int fd, struct fake_dns *dns)
{
    struct hosts_writer_config cfg = { .fd = fd, .ifname = "ddp0", .prefix = 16,
                                       .resolve = fake_resolve, .resolve_ctx = dns };
    struct hosts_writer *w = NULL;

    assert_int_equal(cluster_addr_parse("10.77.0.0", &cfg.network), 0);
    assert_int_equal(hosts_writer_start(&w, &cfg), 0);
    return w;
}

/* Waits up to 5 s for the file to hold want; false if it never does. */
static bool file_becomes(const struct tmpfile *t, const char *want)
{
    for (int i = 0; i < 500; i++) {
        char *got = tmp_read(t);
        bool same = !strcmp(got, want);
        free(got);
        if (same)
            return true;
        usleep(10000);
    }
    return false;
}

static struct hosts_entry *entries_copy(const struct hosts_entry *e, size_t n)
{
    struct hosts_entry *c = malloc(n * sizeof(*c));

    assert_non_null(c);
    memcpy(c, e, n * sizeof(*c));
    return c;
}

/* 100 blocks handed over at once are one or two writes, the last block
 * the one that stays: a member changing its names as fast as it can costs
 * a node a write a second. */
static void test_writer_coalesces(void **state)
{
    struct fake_dns dns = { 0 };
    struct tmpfile t;
    struct hosts_writer *w;
    int fd;

    (void)state;
    tmp_create(&t, "127.0.0.1 localhost\n");
    fd = hosts_open(t.path);
    assert_true(fd >= 0);
    w = writer_on(fd, &dns);
    for (unsigned i = 0; i < 100; i++) {
        struct hosts_entry e = { .address = "10.77.0.1" };
        snprintf(e.name, sizeof(e.name), "name-%u", i);
        hosts_writer_submit(w, entries_copy(&e, 1), 1);
    }
    assert_true(file_becomes(&t, BEGIN0 "10.77.0.1 name-99\n" END0 "127.0.0.1 localhost\n"));
    usleep(1200 * 1000);                  /* a pass that was due has run */
    assert_in_range(hosts_writer_writes(w), 1, 2);
    hosts_writer_submit(w, NULL, 0);
    assert_true(file_becomes(&t, "127.0.0.1 localhost\n"));
    hosts_writer_stop(w);
    close(fd);
    unlink(t.path);
}

/* What the resolver says decides a claimed name: the metadata server's
 * address, another machine's, or more addresses than are looked at keep
 * it out; a member's overlay address, the claimant's own underlay
 * address, or no address at all let it in; an answer not come yet keeps
 * it out until it comes. The file's own names never wait. */
static void test_writer_asks_the_resolver(void **state)
{
    struct fake_dns dns = { .hold = 1 };
    struct hosts_entry e[] = {
        { .address = "10.77.0.1", .name = "node-a" },
        { .address = "10.77.0.2", .name = "metadata.google.internal", .claimed = true },
        { .address = "10.77.0.2", .name = "gpu-b", .claimed = true },
        { .address = "10.77.0.3", .name = "gpu-c.internal", .claimed = true, .own = "192.0.2.3" },
        { .address = "10.77.0.4", .name = "gpu-d", .claimed = true, .own = "192.0.2.4" },
        { .address = "10.77.0.4", .name = "nowhere", .claimed = true },
        { .address = "10.77.0.4", .name = "many", .claimed = true },
    };
    struct tmpfile t;
    struct hosts_writer *w;
    int fd;

    (void)state;
    tmp_create(&t, "127.0.0.1 localhost\n");
    fd = hosts_open(t.path);
    assert_true(fd >= 0);
    w = writer_on(fd, &dns);
    hosts_writer_submit(w, entries_copy(e, 7), 7);
    /* Nothing answered: the file's names only. */
    assert_true(file_becomes(&t, BEGIN0 "10.77.0.1 node-a\n" END0 "127.0.0.1 localhost\n"));
    __atomic_store_n(&dns.hold, 0, __ATOMIC_RELEASE);
    assert_true(file_becomes(&t, BEGIN0 "10.77.0.1 node-a\n" "10.77.0.2 gpu-b\n"
                             "10.77.0.3 gpu-c.internal\n" "10.77.0.4 nowhere\n" END0
                             "127.0.0.1 localhost\n"));
    hosts_writer_stop(w);
    close(fd);
    unlink(t.path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_new_block_goes_first),
        cmocka_unit_test(test_new_block_without_final_newline),
        cmocka_unit_test(test_names_of_one_address_share_a_line),
        cmocka_unit_test(test_replace_in_place),
        cmocka_unit_test(test_other_interface_untouched),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_idempotent),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_crlf_markers),
        cmocka_unit_test(test_damaged_block),
        cmocka_unit_test(test_invalid_names),
        cmocka_unit_test(test_invalid_addresses),
        cmocka_unit_test(test_invalid_args),
        cmocka_unit_test(test_embedded_nul_kept),
        cmocka_unit_test(test_file_update_in_place),
        cmocka_unit_test(test_file_unchanged_not_written),
        cmocka_unit_test(test_file_missing),
        cmocka_unit_test(test_file_errors_leave_it_untouched),
        cmocka_unit_test(test_file_not_regular),
        cmocka_unit_test(test_file_waits_for_lock),
        cmocka_unit_test(test_file_too_big),
        cmocka_unit_test(test_file_update_by_fd),
        cmocka_unit_test(test_claimed_name_outside_block_left_out),
        cmocka_unit_test(test_file_never_torn),
        cmocka_unit_test(test_writer_coalesces),
        cmocka_unit_test(test_writer_asks_the_resolver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
