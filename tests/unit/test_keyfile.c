/* SPDX-License-Identifier: MIT */
/* Tests of overlay/keyfile: decoding and encoding WireGuard keys against
 * pairs that `wg genkey` and `wg pubkey` printed, and reading key files
 * with every refusal and its exact message (permissions, missing, not a
 * regular file, not a key), with the key wiped on each of them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/x25519.h"
#include "overlay/daemon/keyfile.h"
#include "tests/unit/alloc_count.h"

/* Private and public keys as `wg genkey | tee k | wg pubkey` printed them;
 * the last two are not clamped (wg pubkey clamps, and so must we). */
static const struct {
    const char *priv, *pub;
} wg_pairs[] = {
    { "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3E=",
      "DNAWmnT2QifBYO65SpqskpErSH6K7lf3IILszNNeZCc=" },
    { "wC9XXeY1XJ43WaROWUlFUk+9/WH2k6YEeydMBJbCJWA=",
      "MfEmnnjWLoTnOcOaQh4knjAGQidLNo6LVdkQByFx+Wo=" },
    { "6LpLBFYDDwpeOvH04qUA1EYVasMXu/lQJHxs4LcqbGY=",
      "fPQrJDWt4YOR6Gp8Ud55Yy6RemIRuPSwil9NOybwyhE=" },
    { "//////////////////////////////////////////8=",
      "hHwNLDdSNPNl5mCVUYejc1oPdhPRYJ06ak2MU66qWiI=" },
    { "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
      "L+V9o0fNYkMVKNqsX7spBzD/9oSvxM/C7ZCZX1jLO3Q=" },
};
#define N_PAIRS (sizeof(wg_pairs) / sizeof(wg_pairs[0]))

#define K0 "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3E="
static const uint8_t k0_bytes[WG_KEY_LEN] = {
    0x38, 0x36, 0x77, 0x50, 0x76, 0x5c, 0x5b, 0x8e, 0xe1, 0x71, 0x29, 0x09,
    0xc7, 0x2c, 0xa0, 0x23, 0x6a, 0x6f, 0x05, 0x7b, 0xc0, 0xda, 0x5f, 0xd0,
    0x63, 0x24, 0xc3, 0x58, 0x05, 0x15, 0xaf, 0x71,
};

#define NOT_A_KEY ": not a WireGuard private key (expected 44 base64 characters)"

/* Short, so that paths built from it fit the buffers below. */
#define PATH_CAP 256
#define MSG_CAP 1024
static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    if (crypto_core_init() != 0)
        return -1;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_keyfile.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[sizeof(tmpdir) + 16];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A file in tmpdir with content (len bytes) and exactly mode. */
static const char *make_file(const char *name, const char *content, size_t len,
                             mode_t mode)
{
    static char path[PATH_CAP];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    unlink(path);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
    return path;
}

static const char *make_key_file(const char *name, const char *content, mode_t mode)
{
    return make_file(name, content, strlen(content), mode);
}

/* keyfile_read must fail with ret and message "PATH" suffix, key wiped. */
static void assert_read_fails(const char *path, int ret, const char *suffix)
{
    uint8_t key[WG_KEY_LEN];
    char err[MSG_CAP], want[MSG_CAP];

    memset(key, 0xaa, sizeof(key));
    assert_int_equal(keyfile_read(path, key, err, sizeof(err)), ret);
    snprintf(want, sizeof(want), "%s%s", path, suffix);
    assert_string_equal(err, want);
    assert_true(sodium_is_zero(key, sizeof(key)));
}

static void assert_read_ok(const char *path, const uint8_t want[WG_KEY_LEN])
{
    uint8_t key[WG_KEY_LEN];
    char err[MSG_CAP] = "untouched";

    assert_int_equal(keyfile_read(path, key, err, sizeof(err)), 0);
    assert_memory_equal(key, want, WG_KEY_LEN);
}

/* --- text ------------------------------------------------------------------------ */

/* Decoding wg's private key and deriving the public key gives wg's public
 * key; encoding gives back wg's text. */
static void test_wg_pairs(void **state)
{
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
    char text[KEYFILE_B64_LEN + 1];

    (void)state;
    assert_int_equal(KEYFILE_B64_LEN, 44);
    for (size_t i = 0; i < N_PAIRS; i++) {
        assert_int_equal(keyfile_parse(wg_pairs[i].priv, strlen(wg_pairs[i].priv), priv), 0);
        keyfile_format(text, priv);
        assert_string_equal(text, wg_pairs[i].priv);
        assert_int_equal(x25519_public(pub, priv), 0);
        keyfile_format(text, pub);
        assert_string_equal(text, wg_pairs[i].pub);
    }
}

static void test_parse_known_bytes(void **state)
{
    uint8_t key[WG_KEY_LEN];

    (void)state;
    assert_int_equal(keyfile_parse(K0, strlen(K0), key), 0);
    assert_memory_equal(key, k0_bytes, WG_KEY_LEN);
}

/* A generated key survives format and parse, and is clamped. */
static void test_generated_round_trip(void **state)
{
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN], back[WG_KEY_LEN];
    char text[KEYFILE_B64_LEN + 1];

    (void)state;
    for (int i = 0; i < 64; i++) {
        x25519_generate(priv, pub);
        keyfile_format(text, priv);
        assert_int_equal(strlen(text), KEYFILE_B64_LEN);
        assert_int_equal(text[KEYFILE_B64_LEN - 1], '=');
        assert_int_equal(keyfile_parse(text, strlen(text), back), 0);
        assert_memory_equal(back, priv, WG_KEY_LEN);
        assert_int_equal(back[0] & 7, 0);
        assert_int_equal(back[WG_KEY_LEN - 1] & 0xc0, 0x40);
    }
}

static void test_parse_trailing_whitespace(void **state)
{
    static const char *const ok[] = {
        K0 "\n", K0 "\r\n", K0 "  \t \n\n", K0 " ", K0 "\n\r\n",
    };
    uint8_t key[WG_KEY_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        memset(key, 0, sizeof(key));
        assert_int_equal(keyfile_parse(ok[i], strlen(ok[i]), key), 0);
        assert_memory_equal(key, k0_bytes, WG_KEY_LEN);
    }
}

static void test_parse_refuses(void **state)
{
    static const char *const bad[] = {
        "",
        "\n",
        " " K0,                                           /* leading blank, as wg */
        K0 "x",                                           /* trailing characters */
        K0 "\n" K0 "\n",                                  /* two keys */
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3E",    /* 43: no padding */
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3E==",  /* 45 */
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3=",    /* 43 with '=' */
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3EA",   /* 44: 33 bytes */
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3==",   /* 44: 31 bytes */
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=",   /* padding bits set */
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l_QYyTDWAUVr3E=",   /* URL-safe alphabet */
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr!E=",
        "ODZ3UHZcW47hcSkJ xyygI2pvBXvA2l/QYyTDWAUVr3E=",  /* blank inside */
        "AAAA",
    };
    uint8_t key[WG_KEY_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(key, 0xaa, sizeof(key));
        assert_int_equal(keyfile_parse(bad[i], strlen(bad[i]), key), -EBADMSG);
        assert_true(sodium_is_zero(key, sizeof(key)));
    }
    /* A NUL inside the text, and no text at all. */
    static const char nul[] = K0 "\0";
    assert_int_equal(keyfile_parse(nul, sizeof(nul), key), -EBADMSG);
    static const char nul_in[] = "ODZ3UHZcW47hcSkJxyygI2pv\0XvA2l/QYyTDWAUVr3E=";
    assert_int_equal(keyfile_parse(nul_in, sizeof(nul_in) - 1, key), -EBADMSG);
    assert_int_equal(keyfile_parse(NULL, 0, key), -EBADMSG);
}

/* --- streams ------------------------------------------------------------------- */

static int pipe_with(const char *text, size_t len)
{
    int fds[2];

    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], text, len), (ssize_t)len);
    close(fds[1]);
    return fds[0];
}

static void test_read_fd(void **state)
{
    uint8_t key[WG_KEY_LEN];
    char big[KEYFILE_TEXT_MAX + 1];
    int fd;

    (void)state;
    fd = pipe_with(K0 "\n", strlen(K0) + 1);
    assert_int_equal(keyfile_read_fd(fd, key), 0);
    assert_memory_equal(key, k0_bytes, WG_KEY_LEN);
    close(fd);

    /* Exactly KEYFILE_TEXT_MAX bytes (key and blanks) is still a key... */
    memset(big, ' ', sizeof(big));
    memcpy(big, K0, strlen(K0));
    fd = pipe_with(big, KEYFILE_TEXT_MAX);
    assert_int_equal(keyfile_read_fd(fd, key), 0);
    close(fd);
    /* ...one byte more is not, however blank. */
    fd = pipe_with(big, sizeof(big));
    memset(key, 0xaa, sizeof(key));
    assert_int_equal(keyfile_read_fd(fd, key), -EBADMSG);
    assert_true(sodium_is_zero(key, sizeof(key)));
    close(fd);

    /* An empty stream, and a descriptor that cannot be read. */
    fd = pipe_with("", 0);
    assert_int_equal(keyfile_read_fd(fd, key), -EBADMSG);
    close(fd);
    memset(key, 0xaa, sizeof(key));
    assert_int_equal(keyfile_read_fd(-1, key), -EBADF);
    assert_true(sodium_is_zero(key, sizeof(key)));
}

/* --- files --------------------------------------------------------------------- */

static void test_file_modes_accepted(void **state)
{
    static const mode_t ok[] = { 0600, 0400, 0200 | 0400, 0700 };

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_read_ok(make_key_file("k", K0 "\n", ok[i]), k0_bytes);
}

static void test_file_modes_refused(void **state)
{
    static const mode_t bad[] = { 0640, 0604, 0660, 0644, 0606, 0666, 0610, 0601,
                                  0620, 0602, 0777 };
    char suffix[MSG_CAP];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *path = make_key_file("k", K0 "\n", bad[i]);
        snprintf(suffix, sizeof(suffix), ": permissions %04o are too open; run: "
                 "chmod 600 %s", (unsigned)bad[i], path);
        assert_read_fails(path, -EPERM, suffix);
    }
}

static void test_file_exact_messages(void **state)
{
    char path[PATH_CAP], want[MSG_CAP], err[MSG_CAP];
    uint8_t key[WG_KEY_LEN];

    (void)state;
    /* The brief's examples, spelled out once in full. */
    snprintf(path, sizeof(path), "%s/k", tmpdir);
    make_key_file("k", K0, 0644);
    assert_int_equal(keyfile_read(path, key, err, sizeof(err)), -EPERM);
    snprintf(want, sizeof(want), "%s: permissions 0644 are too open; run: chmod 600 %s",
             path, path);
    assert_string_equal(err, want);

    snprintf(path, sizeof(path), "%s/missing", tmpdir);
    assert_int_equal(keyfile_read(path, key, err, sizeof(err)), -ENOENT);
    snprintf(want, sizeof(want), "%s: no such file", path);
    assert_string_equal(err, want);
}

static void test_file_trailing_newlines(void **state)
{
    (void)state;
    assert_read_ok(make_key_file("k", K0, 0600), k0_bytes);
    assert_read_ok(make_key_file("k", K0 "\n", 0600), k0_bytes);
    assert_read_ok(make_key_file("k", K0 "\r\n", 0600), k0_bytes);
    assert_read_ok(make_key_file("k", K0 " \t\n\n", 0600), k0_bytes);
}

static void test_file_not_a_key(void **state)
{
    static const char *const bad[] = {
        "",
        "not base64 at all, not even close!!!!!!!!!!!\n",
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3E\n",   /* short */
        "AAAA\n",                                            /* short key */
        "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3EA\n",  /* 33 bytes */
        "# a comment\n" K0 "\n",
        K0 "\n" K0 "\n",
        "[Interface]\nPrivateKey = " K0 "\n",              /* a wg config */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_read_fails(make_key_file("k", bad[i], 0600), -EBADMSG, NOT_A_KEY);

    /* Longer than KEYFILE_TEXT_MAX: refused without reading it all. */
    char big[KEYFILE_TEXT_MAX * 4];
    memset(big, '\n', sizeof(big));
    memcpy(big, K0, strlen(K0));
    assert_read_fails(make_file("k", big, sizeof(big), 0600), -EBADMSG, NOT_A_KEY);
}

static void test_file_missing(void **state)
{
    char path[PATH_CAP];

    (void)state;
    snprintf(path, sizeof(path), "%s/no-such-key", tmpdir);
    assert_read_fails(path, -ENOENT, ": no such file");
    /* A missing directory on the way is a missing file too. */
    snprintf(path, sizeof(path), "%s/no-such-dir/key", tmpdir);
    assert_read_fails(path, -ENOENT, ": no such file");
}

static void test_file_not_regular(void **state)
{
    char path[PATH_CAP];

    (void)state;
    /* A directory (even one only we may enter). */
    snprintf(path, sizeof(path), "%s/dir", tmpdir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_read_fails(path, -EINVAL, ": not a regular file");
    rmdir(path);

    /* A FIFO with no writer: refused at once, never waited on. */
    snprintf(path, sizeof(path), "%s/fifo", tmpdir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_read_fails(path, -EINVAL, ": not a regular file");
    unlink(path);

    /* A character device. */
    assert_read_fails("/dev/null", -EINVAL, ": not a regular file");
}

static void test_file_other_errors(void **state)
{
    char path[PATH_CAP];

    (void)state;
    /* A path through a regular file: the system's own words. */
    make_key_file("k", K0, 0600);
    snprintf(path, sizeof(path), "%s/k/sub", tmpdir);
    assert_read_fails(path, -ENOTDIR, ": Not a directory");
}

/* A link to a key file is judged by the file it names, as ssh does. */
static void test_file_symlink(void **state)
{
    char link_path[PATH_CAP], target[PATH_CAP];
    char suffix[MSG_CAP];

    (void)state;
    snprintf(target, sizeof(target), "%s", make_key_file("k", K0 "\n", 0600));
    snprintf(link_path, sizeof(link_path), "%s/link", tmpdir);
    unlink(link_path);
    assert_int_equal(symlink(target, link_path), 0);
    assert_read_ok(link_path, k0_bytes);

    assert_int_equal(chmod(target, 0644), 0);
    snprintf(suffix, sizeof(suffix), ": permissions 0644 are too open; run: "
             "chmod 600 %s", link_path);
    assert_read_fails(link_path, -EPERM, suffix);
    unlink(link_path);
}

/* A key file another user owns is refused, even at mode 0600: that user
 * could change it. (Needs root to give it away.) */
static void test_file_owner(void **state)
{
    char suffix[MSG_CAP];
    const char *path;

    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "skipped: giving a file away needs root\n");
        skip();
    }
    path = make_key_file("k", K0 "\n", 0600);
    assert_int_equal(chown(path, 65534, 65534), 0);
    snprintf(suffix, sizeof(suffix), ": owned by uid 65534, not by root; run: chown root %s",
             path);
    assert_read_fails(path, -EPERM, suffix);
    assert_int_equal(chown(path, 0, 0), 0);
    assert_read_ok(path, k0_bytes);
}

static void test_file_bad_arguments(void **state)
{
    uint8_t key[WG_KEY_LEN];
    char err[64];
    const char *path = make_key_file("k", K0, 0644);

    (void)state;
    memset(key, 0xaa, sizeof(key));
    assert_int_equal(keyfile_read(NULL, key, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "no key file given");
    assert_true(sodium_is_zero(key, sizeof(key)));

    /* A short error buffer is truncated, never overrun; none at all is fine. */
    memset(err, 'x', sizeof(err));
    assert_int_equal(keyfile_read(path, key, err, 8), -EPERM);
    assert_int_equal(strlen(err), 7);
    assert_int_equal(err[8], 'x');
    assert_int_equal(keyfile_read(path, key, NULL, 0), -EPERM);
    assert_read_ok(make_key_file("k", K0, 0600), k0_bytes);
    assert_int_equal(keyfile_read(path, key, NULL, 0), 0);
}

/* Reading a key allocates nothing from the heap. */
static void test_no_allocation(void **state)
{
    uint8_t key[WG_KEY_LEN];
    const char *path = make_key_file("k", K0 "\n", 0600);
    size_t before = alloc_count();

    (void)state;
    assert_int_equal(keyfile_read(path, key, NULL, 0), 0);
    assert_int_equal(keyfile_parse(K0, strlen(K0), key), 0);
    assert_int_equal(alloc_count(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wg_pairs),
        cmocka_unit_test(test_parse_known_bytes),
        cmocka_unit_test(test_generated_round_trip),
        cmocka_unit_test(test_parse_trailing_whitespace),
        cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_read_fd),
        cmocka_unit_test(test_file_modes_accepted),
        cmocka_unit_test(test_file_modes_refused),
        cmocka_unit_test(test_file_exact_messages),
        cmocka_unit_test(test_file_trailing_newlines),
        cmocka_unit_test(test_file_not_a_key),
        cmocka_unit_test(test_file_missing),
        cmocka_unit_test(test_file_not_regular),
        cmocka_unit_test(test_file_other_errors),
        cmocka_unit_test(test_file_symlink),
        cmocka_unit_test(test_file_owner),
        cmocka_unit_test(test_file_bad_arguments),
        cmocka_unit_test(test_no_allocation),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
