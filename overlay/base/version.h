/* SPDX-License-Identifier: MIT */
/* ddpnet's version and its control protocol's, each named in one place.
 *
 * The version comes from the VERSION file at the top of the tree, or from
 * `git describe` when the checkout has that version's tag (v0.4.0, then
 * 0.4.0-3-gabc1234 three commits later); the Makefile passes it to
 * version.c alone, so a new version rebuilds one object. `ddpnet
 * --version`, the metrics (ddpnet_build_info) and the package all show it. */
#ifndef DDPNET_VERSION_H
#define DDPNET_VERSION_H

/* "0.4.0", or git describe's longer name. */
extern const char ddpnet_version[];

/* The control socket's own requests (get=ddpnet, get=ddpnet-env,
 * set=ddpnet-cluster) and answers, numbered: raised by every change that a
 * CLI of the previous number would misread or that a daemon of it would
 * refuse, so that a CLI and a daemon of different numbers refuse to talk
 * (control.h) rather than misunderstand each other. WireGuard's own get=1
 * and set=1 are WireGuard's, and not numbered. */
#define DDPNET_CONTROL_PROTOCOL 1u

#endif
