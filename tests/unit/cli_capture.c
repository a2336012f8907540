/* SPDX-License-Identifier: MIT */
/* A verb run with its standard streams captured (cli_capture.h). */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/unit/cli_capture.h"

#define ARGS_MAX 32

void capture_read(FILE *f, char *buf, size_t cap)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

void capture_verb(int (*fn)(int, char **), const char *const *argv, const char *in,
                  struct captured *c)
{
    FILE *fi = tmpfile(), *fo = tmpfile(), *fe = tmpfile();
    int saved[3], argc = 0;
    char *args[ARGS_MAX];

    while (argv[argc] != NULL && argc < ARGS_MAX - 1) {
        args[argc] = (char *)(uintptr_t)argv[argc];   /* verbs take char ** */
        argc++;
    }
    args[argc] = NULL;
    if (in != NULL)
        fputs(in, fi);
    fflush(fi);
    rewind(fi);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 3; i++)
        saved[i] = dup(i);
    dup2(fileno(fi), STDIN_FILENO);
    dup2(fileno(fo), STDOUT_FILENO);
    dup2(fileno(fe), STDERR_FILENO);
    c->rc = fn(argc, args);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 3; i++) {
        dup2(saved[i], i);
        close(saved[i]);
    }
    fclose(fi);
    capture_read(fo, c->out, sizeof(c->out));
    capture_read(fe, c->err, sizeof(c->err));
}
