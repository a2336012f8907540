/* SPDX-License-Identifier: MIT */
/* Routes to what is not in the overlay (issue 60): the prefixes the
 * cluster file grants a node to carry (`routes = 192.168.50.0/24, ...`
 * under its [node]). This module owns the grant's text form and the rules
 * a set of grants must follow, whole-file: no grant overlaps another (one
 * carrier per address, so a lookup finds at most one), none overlaps the
 * overlay's network (whose addresses are the members' own), and none holds
 * a node's underlay endpoint (routing it into ddp0 would carry the tunnel
 * inside itself). A route is granted, never claimed: nothing here comes
 * from a member's word. Pure functions over the model. */
#ifndef DDPNET_CONFIG_ROUTES_H
#define DDPNET_CONFIG_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include "config/cluster.h"

/* Grants per node and in the whole file (CLUSTER_ROUTES_MAX,
 * CLUSTER_ROUTES_TOTAL_MAX, cluster.h): routes are for a few gateways, and
 * the caps keep every check and lookup over them small. */

/* A prefix as "192.168.50.0/24" or "fd10::/64" (host bits clear), at most
 * this long. */
#define CLUSTER_ROUTE_TEXT_MAX 44u

/* "A/LEN, B/LEN" (commas and/or spaces): each ADDR/LEN with LEN 1..32 for
 * ipv4 or 1..128 for ipv6, host bits clear, at most CLUSTER_ROUTES_MAX.
 * Fills routes[] and *n. 0, or -EINVAL with *why (static text) and *bad
 * (the word at fault, cut to badlen) set. */
int cluster_routes_parse(const char *value, struct cluster_route *routes, uint8_t *n,
                         const char **why, char *bad, size_t badlen);

/* Whether a and b are the same prefix. */
bool cluster_route_equal(const struct cluster_route *a, const struct cluster_route *b);
/* Whether a and b share an address (one holds the other). */
bool cluster_route_overlaps(const struct cluster_route *a, const struct cluster_route *b);
/* Whether address a is inside route r. */
bool cluster_route_holds(const struct cluster_route *r, const struct cluster_addr *a);
/* "192.168.50.0/24": 0 or -ENOSPC. */
int cluster_route_format(const struct cluster_route *r, char *buf, size_t len);

/* One complaint of cluster_routes_check: the node (index into the nodes
 * given) and its text. */
typedef void (*cluster_routes_complain)(void *ctx, size_t node, const char *message);
/* The whole-file rules over n nodes and the overlay's network: calls
 * complain once per fault (at most CLUSTER_ROUTES_TOTAL_MAX grants are
 * looked at; more is one fault). Returns the faults found. */
size_t cluster_routes_check(const struct cluster_node *const *nodes, size_t n,
                            const struct cluster_addr *network, unsigned prefix,
                            cluster_routes_complain complain, void *ctx);

/* Issue 60: the routes of node (made of a member certificate, not of the
 * file) under the file's rules, against the grants held first: the
 * file's nodes' and held[0..n)'s. node keeps those that overlap none of
 * them nor file's network and hold no file node's endpoint, in order;
 * refused(ctx, node, route, what it overlaps) is called for each other,
 * and for each past CLUSTER_ROUTES_TOTAL_MAX routes held in all (*total:
 * how many are held so far, counted up for each kept). Returns how many
 * were refused. */
typedef void (*cluster_route_refused)(void *ctx, const struct cluster_node *node,
                                      const struct cluster_route *r, const char *why);
size_t cluster_routes_admit(const struct cluster *file, const struct cluster_node *held, size_t n,
                            struct cluster_node *node, size_t *total,
                            cluster_route_refused refused, void *ctx);

#endif
