/* SPDX-License-Identifier: MIT */
/* Test support: a real etcd for the tests that talk to one (test_etcd,
 * test_registry_join, test_registry_flood). It owns the etcd process and
 * its scratch directory: etcd runs on loopback on random free ports with its data in
 * /dev/shm (/tmp without it), and is killed and its directory removed on
 * every way out -- etcd_fixture_stop (the group's teardown), atexit,
 * SIGINT/SIGTERM/SIGHUP, and PR_SET_PDEATHSIG should the test die
 * without either; what a run killed by SIGKILL left is removed by the
 * next start. It exposes what a test reads of it (etcd_fixture), the
 * skip when there is no etcd (ETCD_FIXTURE_NEED), and the clock and port
 * helpers those tests share. Tests only. */
#ifndef DDPNET_TEST_ETCD_FIXTURE_H
#define DDPNET_TEST_ETCD_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

/* Written by this module alone; tests read it. */
struct etcd_fixture {
    bool up;                              /* etcd answers at url */
    const char *why;                      /* why not, for the skip line */
    char dir[128];                        /* scratch: data/, etcd.log, a test's own files */
    char etcdctl[512];                    /* its path; "" when none is on PATH */
    char url[64];                         /* http://127.0.0.1:PORT */
};

extern struct etcd_fixture etcd_fixture;

/* A group's setup: starts etcd (three tries on fresh ports, each waiting
 * until it answers) with extra_args after the fixture's own (a
 * NULL-terminated list, NULL for none; at most ETCD_FIXTURE_EXTRA_MAX).
 * 0 with etcd_fixture.up when it answers, and 0 with .up false and .why
 * set when there is no etcd on PATH or no scratch directory (the tests
 * skip); -1 when etcd is there and would not start (its log printed): a
 * failure, not a skip. */
#define ETCD_FIXTURE_EXTRA_MAX 8
int etcd_fixture_start(const char *const *extra_args);
/* A group's teardown: kills etcd and removes the scratch directory. */
void etcd_fixture_stop(void);

/* At the top of each test: skip() with the reason unless etcd is up
 * (cmocka's print_message and skip, from the test's <cmocka.h>). */
#define ETCD_FIXTURE_NEED()                                                          \
    do {                                                                             \
        if (!etcd_fixture.up) {                                                      \
            print_message("skipped: %s\n",                                           \
                          etcd_fixture.why ? etcd_fixture.why : "etcd is not up");   \
            skip();                                                                  \
        }                                                                            \
    } while (0)

/* CLOCK_MONOTONIC in milliseconds. */
int64_t etcd_fixture_now_ms(void);
/* Sleeps ms milliseconds, through signals. */
void etcd_fixture_sleep_ms(unsigned ms);
/* A loopback TCP port nobody listens on now (connecting to it is
 * refused); -1 when none could be had. */
int etcd_fixture_free_port(void);

#endif
