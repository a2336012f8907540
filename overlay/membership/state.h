/* SPDX-License-Identifier: MIT */
/* Membership's own state: what it keeps to make the model the engine
 * runs (members.h), out of the engine's reach. The device points at it
 * (dev->membership) and never looks inside; the daemon owns it (one per
 * interface, made before set-up, freed after the device), a unit test
 * its own. Everything here runs on the event loop's thread, under the
 * engine lock with shards, as membership does; what membership tells the
 * engine (our names, record, certificate, revocations said) is the
 * device's, where the engine reads it. */
#ifndef DDPNET_MEMBERSHIP_STATE_H
#define DDPNET_MEMBERSHIP_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"

/* The cluster file's checksum as `status` shows it (members.h). */
#define MEMBERSHIP_CLUSTER_SUM_LEN 8u
/* Room for a systemd unit's name (systemd allows 255 characters). */
#define MEMBERSHIP_SERVICE_MAX 256u

/* How many peers removed by their certificate's end `status` shows. */
#define MEMBERSHIP_ENDED_MAX 4u

struct registry;
struct vouch_gone;
struct certs;
struct hosts_writer;
struct revocations;

struct membership {
    /* Membership's inputs (members.c): the cluster file as parsed; the
     * registry's latest nodes (registry/registry.h) and their etcd
     * revision; this node as it joined through the registry when the
     * file does not list it; the registry itself, opaque here (NULL:
     * none; the daemon's services make and free it). */
    struct cluster file;
    struct cluster_node *registered;
    size_t n_registered;
    int64_t registry_revision;
    bool self_registered;
    struct cluster_node registry_self;
    struct registry *registry;
    /* Which file that is, for a person: its checksum and when it was
     * applied (wall clock, s); and the hosts file, kept open from set-up
     * so that the names block follows a reload without root (-1: none). */
    uint8_t cluster_sum[MEMBERSHIP_CLUSTER_SUM_LEN];
    uint64_t cluster_applied_unix;
    int hosts_fd;
    /* The systemd unit running this daemon ("ddpnet@ddp0.service"; "":
     * none), so that what a refused reload says to run is what applies
     * (daemon/notify.h's notify_unit). */
    char service[MEMBERSHIP_SERVICE_MAX];
    /* Hostname endpoints that could not be asked of the resolver yet (it
     * was full): asked again on the next pass (endpoints.c). */
    bool resolve_backlog;
    /* The names block's writer thread (hosts_writer.h; NULL until the
     * daemon starts it after set-up), and the loop's side of its pacing:
     * a change marks the block dirty, and it is built and handed over
     * once hosts_due_ns has come (members_hosts_run). */
    struct hosts_writer *hosts_writer;
    bool hosts_dirty;
    uint64_t hosts_due_ns;
    /* Registered nodes that left, whose names and addresses no other key
     * takes for a while (registry/vouch.h). */
    struct vouch_gone *gone;
    size_t n_gone;
    /* With `[cluster] authority` (certs.h): the statements held, the
     * registry's last ones (lines, offered again at each apply), and
     * whether the store changed since the model was made. */
    struct certs *certs;
    char *statements;
    bool certs_dirty;
    /* With no registry: when members gone silent are next looked for
     * (members.c's let_go_silent, loop clock). */
    uint64_t gone_check_ns;
    /* Every revocation taken (revocations.c), and where each is kept
     * across restarts (STATE_DIR/IFNAME.revoked, opened at set-up; -1:
     * none). */
    struct revocations *revocations;
    int revoked_fd;
    /* Renewal (renewal.h): this node's newest certificate, kept across
     * restarts (STATE_DIR/IFNAME.cert, opened at set-up; -1: none); when
     * the set points were last looked at (unix s; 0: never); the peers
     * removed lately because their certificate ended, newest last. */
    int cert_fd;
    uint64_t renewal_checked, renewal_due;
    struct membership_ended {
        char name[CLUSTER_NAME_MAX + 1];
        uint64_t at;                      /* unix s */
    } ended[MEMBERSHIP_ENDED_MAX];
    size_t n_ended;
    /* Issue 60: the routes of member certificates left out of the model
     * now running (config/routes.h's cluster_routes_admit,
     * from members.c's with_certified): each overlapped the
     * network, a grant already held or a node's endpoint, or came past
     * the model's cap. Set at each model made: what runs now. */
    size_t cert_routes_refused;
};

/* A membership with nothing in it yet (no file, no hosts file, no
 * revocations file). */
void membership_init(struct membership *m);
/* Frees the inputs it holds (not the registry, the certificates' store,
 * the writer or the files: their owners free or close those). */
void membership_free(struct membership *m);

#endif
