/* SPDX-License-Identifier: MIT */
/* Membership's own state (see state.h). */
#include <stdlib.h>
#include <string.h>

#include "overlay/membership/state.h"

void membership_init(struct membership *m)
{
    memset(m, 0, sizeof(*m));
    m->hosts_fd = -1;
    m->revoked_fd = -1;
    m->cert_fd = -1;
}

void membership_free(struct membership *m)
{
    cluster_free(&m->file);
    free(m->registered);
    m->registered = NULL;
    m->n_registered = 0;
    free(m->gone);
    m->gone = NULL;
    m->n_gone = 0;
}
