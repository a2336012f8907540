/* SPDX-License-Identifier: MIT */
/* Shards (see shard.h): their threads, and the steering of receives. */
#include <errno.h>
#include <linux/filter.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "crypto/aead.h"
#include "crypto/wg_const.h"
#include "overlay/base/log.h"
#include "overlay/loop/shard.h"

struct shard {
    pthread_t thread;
    bool started, made;
    int ret;                     /* loop_init's */
    sem_t ready, go;
    struct loop_config cfg;
    struct loop_handlers on;
    struct loop *timer_loop;
    struct loop loop;
};

int shards_init(struct shards *s, unsigned n)
{
    memset(s, 0, sizeof(*s));
    if (n < 1 || n > SHARDS_MAX)
        return -EINVAL;
    s->n = n;
    return -pthread_mutex_init(&s->lock, NULL);
}

int shard_steer(int fd, unsigned n)
{
    /* The receive socket for a datagram at the UDP payload: a transport
     * message's hint modulo n, anything else (or too short to say) 0. */
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, WG_MSG_TRANSPORT, 0, 3),
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, WG_SHARD_HINT_OFFSET),
        BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
        BPF_STMT(BPF_RET | BPF_A, 0),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

    if (n < 1)
        return -EINVAL;
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)))
        return -errno;
    return 0;
}

static void *shard_main(void *arg)
{
    struct shard *sh = arg;
    char name[16];

    snprintf(name, sizeof(name), "ddpnet-shard%u", sh->cfg.shard);
    pthread_setname_np(pthread_self(), name);
    /* Made here: an io_uring with one submitter belongs to its maker. */
    sh->ret = loop_init(&sh->loop, &sh->cfg, &sh->on);
    sh->made = sh->ret == 0;
    sem_post(&sh->ready);
    if (!sh->made)
        return NULL;
    while (sem_wait(&sh->go) && errno == EINTR)
        ;
    (void)aead_thread_init();
    int ret = loop_run(&sh->loop);
    /* Not asked to stop (ddp0 gone, the ring failed): its queue of ddp0
     * would go unread, and its socket would still take its share of the
     * receives, so the daemon stops. ddp0's loss sets the loop's own stop
     * too, which is no sign that it was asked. */
    if (!__atomic_load_n(&sh->loop.stop, __ATOMIC_ACQUIRE) || ret || sh->loop.tun_gone) {
        if (ret)
            log_error("%s: shard %u stopped: %s", sh->cfg.name, sh->cfg.shard, strerror(-ret));
        loop_stop(sh->timer_loop);
    }
    aead_thread_cleanup();
    return NULL;
}

int shards_start(struct shards *s, const struct loop_config *base, const struct loop_handlers *on,
                 struct loop *timer_loop, struct loop **current, const int *tun_fds,
                 const int *udp4_fds, const int *udp6_fds)
{
    int ret = 0;

    if (s->n < 2)
        return 0;
    s->shard = calloc(s->n, sizeof(*s->shard));
    if (!s->shard)
        return -ENOMEM;
    for (unsigned k = 1; k < s->n && !ret; k++) {
        struct shard *sh = &s->shard[k];

        sh->cfg = *base;
        sh->cfg.tun_fd = tun_fds[k];
        sh->cfg.udp4_fd = udp4_fds[k];
        sh->cfg.udp6_fd = udp6_fds[k];
        sh->cfg.control_fd = sh->cfg.signal_fd = -1;
        sh->cfg.engine_lock = &s->lock;
        sh->cfg.current = current;
        sh->cfg.timer_loop = timer_loop;
        sh->cfg.shard = k;
        sh->on = *on;
        sh->on.control = NULL;
        sh->on.control_timers = NULL;
        sh->on.hangup_read = NULL;
        sh->on.hangup = NULL;
        sh->timer_loop = timer_loop;
        sem_init(&sh->ready, 0, 0);
        sem_init(&sh->go, 0, 0);
        ret = -pthread_create(&sh->thread, NULL, shard_main, sh);
        if (ret)
            break;
        sh->started = true;
        while (sem_wait(&sh->ready) && errno == EINTR)
            ;
        ret = sh->ret;
    }
    for (unsigned k = 1; k < s->n; k++) {
        struct shard *sh = &s->shard[k];
        if (!sh->made)
            continue;
        if (ret)
            __atomic_store_n(&sh->loop.stop, true, __ATOMIC_RELEASE);
        sem_post(&sh->go);
    }
    if (ret) {
        shards_stop(s);
        shards_free(s);
    }
    return ret;
}

struct loop *shard_loop(struct shards *s, unsigned k)
{
    return s->shard && k >= 1 && k < s->n ? &s->shard[k].loop : NULL;
}

void shards_stop(struct shards *s)
{
    for (unsigned k = 1; s->shard && k < s->n; k++) {
        struct shard *sh = &s->shard[k];
        if (!sh->started)
            continue;
        if (sh->made)
            loop_stop(&sh->loop);
        pthread_join(sh->thread, NULL);
        sh->started = false;
    }
}

void shards_free(struct shards *s)
{
    for (unsigned k = 1; s->shard && k < s->n; k++) {
        struct shard *sh = &s->shard[k];
        if (sh->made)
            loop_destroy(&sh->loop);
        sh->made = false;
        sem_destroy(&sh->ready);
        sem_destroy(&sh->go);
    }
    free(s->shard);
    s->shard = NULL;
}
