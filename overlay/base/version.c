/* SPDX-License-Identifier: MIT */
/* ddpnet's version (version.h): the Makefile defines DDPNET_VERSION for
 * this file alone. */
#include "overlay/base/version.h"

#ifndef DDPNET_VERSION
#error "DDPNET_VERSION is the Makefile's: the VERSION file, or git describe"
#endif

const char ddpnet_version[] = DDPNET_VERSION;
