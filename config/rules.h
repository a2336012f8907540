/* SPDX-License-Identifier: MIT */
/* Groups and rules inside the overlay (issue 61): which member may open
 * what on which other member. Owns the rule syntax, the group names and
 * their bits, and the matcher; no I/O, no packets (the engine's filter,
 * overlay/engine/filter.c, reads headers and keeps the connections).
 *
 * Groups: a node belongs to groups (`groups = train, onprem` under its
 * [node], or its certificate's); each distinct name a file uses gets one
 * bit of a 64-bit mask, in order of first appearance, so a node's groups
 * are one word, resolved when the model is built.
 *
 * Rules: the lines of a [rules] section, in order, each
 *     allow SRC -> DST PROTO [PORT | PORT-PORT]
 * SRC and DST a group, several joined by commas (`spot,burst`), or
 * `any` (every member, one with no group too); PROTO tcp, udp, icmp (ICMP
 * and ICMPv6) or any; a port range for tcp and udp only, the destination
 * port of the packet that opens the connection (absent: every port).
 * Matching: the first rule whose source groups meet the opener's, whose
 * destination groups meet the other end's, whose protocol and port fit.
 * Default: no [rules] line at all is today's flat network, everything
 * allowed; once one rule is written, whatever no rule allows is refused.
 * Replies are not rules' business: the filter's connection table lets the
 * answers of an allowed opening through. */
#ifndef DDPNET_RULES_H
#define DDPNET_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RULES_MAX            256u   /* rules in one file */
/* Distinct group names, one bit each; 63 so that no set of groups is
 * ever the mask of `any`. */
#define RULES_GROUPS_MAX     63u
#define RULES_GROUP_NAME_MAX 31u    /* letters, digits, '-', '_' */
#define RULES_NODE_GROUPS_MAX 8u    /* groups one node names */
#define RULES_ANY            UINT64_MAX /* the mask `any` stands for */

/* IP protocol numbers a rule names; 0 stands for any. */
#define RULES_PROTO_ANY  0u
#define RULES_PROTO_ICMP 1u
#define RULES_PROTO_TCP  6u
#define RULES_PROTO_UDP  17u
#define RULES_PROTO_ICMPV6 58u

struct rule {
    uint64_t src, dst;              /* group masks; RULES_ANY for `any` */
    uint8_t proto;                  /* RULES_PROTO_*; ICMP stands for both ICMPs */
    uint16_t port_lo, port_hi;      /* 0-65535 when none was written */
    int line;                       /* in the cluster file, for explanations */
};

struct cluster_rules {
    uint16_t n;                     /* 0: no rule written, everything allowed */
    struct rule rule[RULES_MAX];
    uint8_t n_groups;
    char group[RULES_GROUPS_MAX][RULES_GROUP_NAME_MAX + 1];
};

/* A match's answer: the rule's index, or RULES_REFUSED when rules are
 * written and none allows it, RULES_OPEN when none is written. */
#define RULES_REFUSED (-1)
#define RULES_OPEN    (-2)

/* The bit of group name in r, added when new: 0 and *bit, or -EINVAL for
 * a bad name (why says what), -ENOSPC past RULES_GROUPS_MAX. A test seam
 * (the parser adds names through rules_groups_parse and rules_line_parse). */
int rules_group_bit(struct cluster_rules *r, const char *name, unsigned *bit,
                    const char **why);
/* Whether name may be a group's (letters, digits, '-', '_'; 1 to
 * RULES_GROUP_NAME_MAX; not `any`): what a certificate may carry. */
bool rules_group_name_valid(const char *name);
/* The mask of an existing group's name (0: none such; RULES_ANY: `any`). */
uint64_t rules_group_mask(const struct cluster_rules *r, const char *name);
/* `a, b c`: names separated by commas or spaces, added to r as needed, into
 * *mask. 0, or -EINVAL with why (a message for a person, in buf). */
int rules_groups_parse(struct cluster_rules *r, const char *text, uint64_t *mask,
                       char *why, size_t len);

/* One line of [rules] (trimmed, without comment) appended to r at line: 0,
 * or -EINVAL with a message for a person in why (r unchanged but for new
 * group names), -ENOSPC past RULES_MAX. */
int rules_line_parse(struct cluster_rules *r, const char *text, int line, char *why,
                     size_t len);

/* Which rule allows a connection opened from a member of groups src to one
 * of groups dst, IP protocol proto, destination port port (ignored for
 * other than TCP and UDP): an index, RULES_REFUSED or RULES_OPEN. Runs
 * over the rules in order, a few instructions each. */
int rules_match(const struct cluster_rules *r, uint64_t src, uint64_t dst, uint8_t proto,
                uint16_t port);

/* The rule i as written ("allow spot -> train tcp 29400-29600"). */
int rules_format(const struct cluster_rules *r, size_t i, char *buf, size_t len);
/* The names of mask's groups, comma-separated ("-" for none, "any"). */
int rules_groups_format(const struct cluster_rules *r, uint64_t mask, char *buf, size_t len);
/* Whether a and b say the same (no rule in either, or the same rules and
 * the same bit for each name): a reload that changes neither leaves the
 * connections alone. */
bool rules_equal(const struct cluster_rules *a, const struct cluster_rules *b);

#endif
