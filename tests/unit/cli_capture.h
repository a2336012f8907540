/* SPDX-License-Identifier: MIT */
/* A verb of the CLI run inside a unit test: stdin fed from a string,
 * stdout and stderr captured into buffers, the exit status kept. Shared
 * by the tests of the verbs (test_cli.c, test_cli_authority.c). */
#ifndef DDPNET_TEST_CLI_CAPTURE_H
#define DDPNET_TEST_CLI_CAPTURE_H

#include <stddef.h>
#include <stdio.h>

#define CAPTURE_MAX 8192

struct captured {
    int rc;
    char out[CAPTURE_MAX];
    char err[CAPTURE_MAX];
};

/* Reads f from its start into buf (NUL-terminated, cut at cap - 1) and
 * closes it. */
void capture_read(FILE *f, char *buf, size_t cap);

/* Runs fn(argc, argv) (argv NULL-terminated, at most 31 words) with stdin
 * reading in (NULL: empty) and stdout/stderr captured. Asserts nothing,
 * so it also serves child processes. */
void capture_verb(int (*fn)(int, char **), const char *const *argv, const char *in,
                  struct captured *c);

#endif
