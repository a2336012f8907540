/* SPDX-License-Identifier: MIT */
/* rtnetlink requests over libmnl. Each request carries NLM_F_ACK and is read
 * to its ack, so the socket never holds a stale answer for the next request;
 * a reply's problems are recorded and reported after the ack, not by
 * stopping half way. Not on the data path: buffers live on the stack. */
#include "tun/netlink.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <limits.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

/* Requests are a header and a few attributes. */
#define NL_REQ_SIZE   512
/* Big enough for one link's full answer, which the kernel would otherwise
 * truncate (libmnl reports that as ENOSPC). */
#define NL_RECV_SIZE  32768

/* What a reply callback learnt: attributes of interest and its own error. */
struct nl_answer {
    int err;            /* 0 or -EBADMSG for a malformed reply */
    bool seen;          /* a reply of the expected type arrived */
    int ifindex;        /* RTM_NEWLINK: ifi_index */
    unsigned mtu;       /* IFLA_MTU, or the route's RTAX_MTU (0: none) */
    unsigned gso_max_segs;  /* IFLA_GSO_MAX_SEGS (0: absent) */
    int oif;            /* RTA_OIF of a route, 0 if absent */
    unsigned txqlen;    /* IFLA_TXQLEN (0: absent) */
    bool has_stats;     /* IFLA_STATS64 was there: tx_dropped is its */
    uint64_t tx_dropped;
};

static bool nl_ready(const struct nl *nl)
{
    return nl && nl->sock;
}

static bool nl_name_ok(const char *ifname)
{
    size_t len;

    if (!ifname)
        return false;
    len = strnlen(ifname, IFNAMSIZ);
    return len > 0 && len < IFNAMSIZ;
}

/* Sequence 0 would make libmnl accept any sequence, so it is skipped. */
static unsigned nl_next_seq(struct nl *nl)
{
    if (++nl->seq == 0)
        nl->seq = 1;
    return nl->seq;
}

int nl_open(struct nl *nl)
{
    int err;

    if (!nl)
        return -EINVAL;
    memset(nl, 0, sizeof(*nl));
    nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
    if (!nl->sock)
        return -errno;
    if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
        err = -errno;
        nl_close(nl);
        return err;
    }
    nl->portid = mnl_socket_get_portid(nl->sock);
    return 0;
}

void nl_close(struct nl *nl)
{
    if (!nl || !nl->sock)
        return;
    mnl_socket_close(nl->sock);
    nl->sock = NULL;
}

static struct nlmsghdr *nl_request(char *buf, uint16_t type, uint16_t flags)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
    return nlh;
}

static int nl_recv(struct nl *nl, char *buf, size_t len)
{
    ssize_t n;

    do {
        n = mnl_socket_recvfrom(nl->sock, buf, len);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : (int)n;
}

/* Sends nlh and reads until its ack; cb (NULL for none) sees each reply.
 * Returns 0 or the ack's error as -errno. */
static int nl_talk(struct nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb,
                   struct nl_answer *ans)
{
    _Alignas(struct nlmsghdr) char buf[NL_RECV_SIZE];
    unsigned seq = nl_next_seq(nl);
    ssize_t sent;
    int n, ret;

    nlh->nlmsg_seq = seq;
    do {
        sent = mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0)
        return -errno;
    do {
        n = nl_recv(nl, buf, sizeof(buf));
        if (n < 0)
            return n;
        errno = 0;
        ret = mnl_cb_run(buf, (size_t)n, seq, nl->portid, cb, ans);
    } while (ret > MNL_CB_STOP);
    if (ret < 0)
        return errno ? -errno : -EPROTO;
    return 0;
}

/* nl_talk for a request that must be answered by one reply. */
static int nl_query(struct nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb,
                    struct nl_answer *ans)
{
    int err;

    memset(ans, 0, sizeof(*ans));
    err = nl_talk(nl, nlh, cb, ans);
    if (err)
        return err;
    if (ans->err)
        return ans->err;
    return ans->seen ? 0 : -EBADMSG;
}

/* --- links ------------------------------------------------------------------ */

/* IFLA_STATS64: struct rtnl_link_stats64, of which older kernels send a
 * shorter prefix; tx_dropped lies well inside every version of it. */
static int nl_link_stats_cb(const struct nlattr *attr, struct nl_answer *ans)
{
    struct rtnl_link_stats64 st;
    uint16_t len = mnl_attr_get_payload_len(attr);

    if (len < offsetof(struct rtnl_link_stats64, tx_dropped) + sizeof(st.tx_dropped)) {
        ans->err = -EBADMSG;
        return MNL_CB_OK;
    }
    memset(&st, 0, sizeof(st));
    memcpy(&st, mnl_attr_get_payload(attr), len < sizeof(st) ? len : sizeof(st));
    ans->tx_dropped = st.tx_dropped;
    ans->has_stats = true;
    return MNL_CB_OK;
}

static int nl_link_attr_cb(const struct nlattr *attr, void *data)
{
    struct nl_answer *ans = data;
    unsigned *into;

    switch (mnl_attr_get_type(attr)) {
    case IFLA_MTU:          into = &ans->mtu; break;
    case IFLA_GSO_MAX_SEGS: into = &ans->gso_max_segs; break;
    case IFLA_TXQLEN:       into = &ans->txqlen; break;
    case IFLA_STATS64:      return nl_link_stats_cb(attr, ans);
    default:                return MNL_CB_OK;
    }
    if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
        ans->err = -EBADMSG;
    else
        *into = mnl_attr_get_u32(attr);
    return MNL_CB_OK;
}

static int nl_link_reply_cb(const struct nlmsghdr *nlh, void *data)
{
    struct nl_answer *ans = data;
    const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

    if (nlh->nlmsg_type != RTM_NEWLINK ||
        mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifi)) {
        ans->err = -EBADMSG;
        return MNL_CB_OK;
    }
    ans->seen = true;
    ans->ifindex = ifi->ifi_index;
    if (mnl_attr_parse(nlh, sizeof(*ifi), nl_link_attr_cb, ans) < 0)
        ans->err = -EBADMSG;
    return MNL_CB_OK;
}

/* A link request addressed by index (> 0) or, with index 0, by name. */
static struct nlmsghdr *nl_link_request(char *buf, uint16_t type,
                                        int ifindex, const char *ifname)
{
    struct nlmsghdr *nlh = nl_request(buf, type, 0);
    struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = ifindex;
    if (ifname)
        mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
    return nlh;
}

static int nl_link_get_as(struct nl *nl, int ifindex, const char *ifname, bool stats,
                          struct nl_answer *ans)
{
    _Alignas(struct nlmsghdr) char buf[NL_REQ_SIZE];
    struct nlmsghdr *nlh = nl_link_request(buf, RTM_GETLINK, ifindex, ifname);

    /* Statistics are the bulk of the answer, and of use to one getter. */
    if (!stats)
        mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
    return nl_query(nl, nlh, nl_link_reply_cb, ans);
}

static int nl_link_get(struct nl *nl, int ifindex, const char *ifname,
                       struct nl_answer *ans)
{
    return nl_link_get_as(nl, ifindex, ifname, false, ans);
}

int nl_link_index(struct nl *nl, const char *ifname)
{
    struct nl_answer ans;
    int err;

    if (!nl_ready(nl) || !nl_name_ok(ifname))
        return -EINVAL;
    err = nl_link_get(nl, 0, ifname, &ans);
    if (err)
        return err;
    return ans.ifindex > 0 ? ans.ifindex : -EBADMSG;
}

/* The link's attributes, for a getter whose result goes to out. */
static int nl_link_query(struct nl *nl, int ifindex, const void *out, struct nl_answer *ans)
{
    if (!nl_ready(nl) || ifindex <= 0 || !out)
        return -EINVAL;
    return nl_link_get(nl, ifindex, NULL, ans);
}

int nl_link_mtu(struct nl *nl, int ifindex, unsigned *mtu)
{
    struct nl_answer ans;
    int err = nl_link_query(nl, ifindex, mtu, &ans);

    if (err)
        return err;
    if (ans.mtu == 0)
        return -EBADMSG;
    *mtu = ans.mtu;
    return 0;
}

int nl_link_gso_max_segs(struct nl *nl, int ifindex, unsigned *segs)
{
    struct nl_answer ans;
    int err = nl_link_query(nl, ifindex, segs, &ans);

    if (err)
        return err;
    if (ans.gso_max_segs == 0)
        return -EOPNOTSUPP;    /* a kernel that does not report it */
    *segs = ans.gso_max_segs;
    return 0;
}

int nl_link_txqlen(struct nl *nl, int ifindex, unsigned *len)
{
    struct nl_answer ans;
    int err = nl_link_query(nl, ifindex, len, &ans);

    if (err)
        return err;
    *len = ans.txqlen;
    return 0;
}

int nl_link_tx_dropped(struct nl *nl, int ifindex, uint64_t *dropped)
{
    struct nl_answer ans;
    int err;

    if (!nl_ready(nl) || ifindex <= 0 || !dropped)
        return -EINVAL;
    if ((err = nl_link_get_as(nl, ifindex, NULL, true, &ans)))
        return err;
    if (!ans.has_stats)
        return -EOPNOTSUPP;
    *dropped = ans.tx_dropped;
    return 0;
}

/* RTM_SETLINK with one u32 attribute. */
static int nl_link_set_u32(struct nl *nl, int ifindex, uint16_t type, uint32_t value)
{
    _Alignas(struct nlmsghdr) char buf[NL_REQ_SIZE];
    struct nlmsghdr *nlh;

    if (!nl_ready(nl) || ifindex <= 0)
        return -EINVAL;
    nlh = nl_link_request(buf, RTM_SETLINK, ifindex, NULL);
    mnl_attr_put_u32(nlh, type, value);
    return nl_talk(nl, nlh, NULL, NULL);
}

int nl_link_set_mtu(struct nl *nl, int ifindex, unsigned mtu)
{
    return nl_link_set_u32(nl, ifindex, IFLA_MTU, mtu);
}

int nl_link_set_txqlen(struct nl *nl, int ifindex, unsigned len)
{
    if (len == 0)
        return -EINVAL;
    return nl_link_set_u32(nl, ifindex, IFLA_TXQLEN, len);
}

int nl_link_set_gso_max_segs(struct nl *nl, int ifindex, unsigned segs)
{
    if (segs == 0)
        return -EINVAL;
    return nl_link_set_u32(nl, ifindex, IFLA_GSO_MAX_SEGS, segs);
}

int nl_link_set_up(struct nl *nl, int ifindex, bool up)
{
    _Alignas(struct nlmsghdr) char buf[NL_REQ_SIZE];
    struct nlmsghdr *nlh;
    struct ifinfomsg *ifi;

    if (!nl_ready(nl) || ifindex <= 0)
        return -EINVAL;
    nlh = nl_link_request(buf, RTM_SETLINK, ifindex, NULL);
    ifi = mnl_nlmsg_get_payload(nlh);
    ifi->ifi_change = IFF_UP;
    ifi->ifi_flags = up ? IFF_UP : 0;
    return nl_talk(nl, nlh, NULL, NULL);
}

int nl_link_delete(struct nl *nl, const char *ifname)
{
    _Alignas(struct nlmsghdr) char buf[NL_REQ_SIZE];

    if (!nl_ready(nl) || !nl_name_ok(ifname))
        return -EINVAL;
    return nl_talk(nl, nl_link_request(buf, RTM_DELLINK, 0, ifname),
                   NULL, NULL);
}

/* --- addresses -------------------------------------------------------------- */

/* Length of an address of family; 0 for a family we do not handle. */
static size_t nl_addr_len(int family)
{
    switch (family) {
    case AF_INET:
        return sizeof(struct in_addr);
    case AF_INET6:
        return sizeof(struct in6_addr);
    default:
        return 0;
    }
}

int nl_addr_add(struct nl *nl, int ifindex, int family, const void *addr,
                unsigned prefix)
{
    _Alignas(struct nlmsghdr) char buf[NL_REQ_SIZE];
    size_t len = nl_addr_len(family);
    struct nlmsghdr *nlh;
    struct ifaddrmsg *ifa;

    if (!nl_ready(nl) || ifindex <= 0 || !addr)
        return -EINVAL;
    if (len == 0)
        return -EAFNOSUPPORT;
    if (prefix > len * CHAR_BIT)
        return -EINVAL;
    nlh = nl_request(buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
    ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
    ifa->ifa_family = (uint8_t)family;
    ifa->ifa_prefixlen = (uint8_t)prefix;
    ifa->ifa_scope = RT_SCOPE_UNIVERSE;
    ifa->ifa_index = (uint32_t)ifindex;
    /* IPv4 reads IFA_ADDRESS as the peer, so the local address goes in
     * both; IPv6 would read both as local/peer, so it gets one. */
    if (family == AF_INET)
        mnl_attr_put(nlh, IFA_LOCAL, len, addr);
    mnl_attr_put(nlh, IFA_ADDRESS, len, addr);
    return nl_talk(nl, nlh, NULL, NULL);
}

/* --- neighbours ------------------------------------------------------------- */

int nl_neigh_pin(struct nl *nl, int ifindex)
{
    _Alignas(struct nlmsghdr) char buf[NL_REQ_SIZE];
    struct in_addr any = { .s_addr = htonl(INADDR_ANY) };
    struct nlmsghdr *nlh;
    struct ndmsg *ndm;

    if (!nl_ready(nl) || ifindex <= 0)
        return -EINVAL;
    nlh = nl_request(buf, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE);
    ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
    ndm->ndm_family = AF_INET;
    ndm->ndm_ifindex = ifindex;
    ndm->ndm_state = NUD_PERMANENT;
    ndm->ndm_type = RTN_UNICAST;
    mnl_attr_put(nlh, NDA_DST, sizeof(any), &any);
    return nl_talk(nl, nlh, NULL, NULL);
}

/* --- routes ----------------------------------------------------------------- */

static int nl_metrics_attr_cb(const struct nlattr *attr, void *data)
{
    struct nl_answer *ans = data;

    if (mnl_attr_get_type(attr) != RTAX_MTU)
        return MNL_CB_OK;
    if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
        ans->err = -EBADMSG;
    else
        ans->mtu = mnl_attr_get_u32(attr);
    return MNL_CB_OK;
}

static int nl_route_attr_cb(const struct nlattr *attr, void *data)
{
    struct nl_answer *ans = data;

    switch (mnl_attr_get_type(attr)) {
    case RTA_OIF:
        if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
            ans->err = -EBADMSG;
        else
            ans->oif = (int)mnl_attr_get_u32(attr);
        break;
    case RTA_METRICS:
        if (mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0 ||
            mnl_attr_parse_nested(attr, nl_metrics_attr_cb, ans) < 0)
            ans->err = -EBADMSG;
        break;
    default:
        break;
    }
    return MNL_CB_OK;
}

static int nl_route_reply_cb(const struct nlmsghdr *nlh, void *data)
{
    struct nl_answer *ans = data;
    const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);

    if (nlh->nlmsg_type != RTM_NEWROUTE ||
        mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm)) {
        ans->err = -EBADMSG;
        return MNL_CB_OK;
    }
    ans->seen = true;
    if (mnl_attr_parse(nlh, sizeof(*rtm), nl_route_attr_cb, ans) < 0)
        ans->err = -EBADMSG;
    return MNL_CB_OK;
}

/* The kernel's route to one address (`ip route get DST`): its MTU and
 * output link, for nl_route_mtu and nl_route_oif. */
static int nl_route_get(struct nl *nl, int family, const void *dst, struct nl_answer *ans)
{
    _Alignas(struct nlmsghdr) char buf[NL_REQ_SIZE];
    size_t len = nl_addr_len(family);
    struct nlmsghdr *nlh;
    struct rtmsg *rtm;

    if (!nl_ready(nl) || !dst)
        return -EINVAL;
    if (len == 0)
        return -EAFNOSUPPORT;
    nlh = nl_request(buf, RTM_GETROUTE, 0);
    rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
    rtm->rtm_family = (uint8_t)family;
    rtm->rtm_dst_len = (uint8_t)(len * CHAR_BIT);
    mnl_attr_put(nlh, RTA_DST, len, dst);
    return nl_query(nl, nlh, nl_route_reply_cb, ans);
}

int nl_route_mtu(struct nl *nl, int family, const void *dst, unsigned *mtu)
{
    struct nl_answer ans;
    int err;

    if (!mtu)
        return -EINVAL;
    if ((err = nl_route_get(nl, family, dst, &ans)))
        return err;
    if (ans.mtu) {
        *mtu = ans.mtu;
        return 0;
    }
    /* No MTU on the route itself: it is its output link's. */
    if (ans.oif <= 0)
        return -ENETUNREACH;
    return nl_link_mtu(nl, ans.oif, mtu);
}

/* A route to dst/prefix through ifindex alone (no gateway: ddp0 is a
 * point-to-multipoint link whose daemon picks the peer), in the main
 * table, as `ip route add dst/prefix dev IF` makes it. */
static int nl_route_change(struct nl *nl, uint16_t type, uint16_t flags, int ifindex,
                           int family, const void *dst, unsigned prefix)
{
    _Alignas(struct nlmsghdr) char buf[NL_REQ_SIZE];
    size_t len = nl_addr_len(family);
    struct nlmsghdr *nlh;
    struct rtmsg *rtm;

    if (!nl_ready(nl) || ifindex <= 0 || !dst)
        return -EINVAL;
    if (len == 0)
        return -EAFNOSUPPORT;
    if (prefix > len * CHAR_BIT)
        return -EINVAL;
    nlh = nl_request(buf, type, flags);
    rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
    rtm->rtm_family = (uint8_t)family;
    rtm->rtm_dst_len = (uint8_t)prefix;
    rtm->rtm_table = RT_TABLE_MAIN;
    rtm->rtm_protocol = RTPROT_STATIC;
    rtm->rtm_scope = RT_SCOPE_LINK;
    rtm->rtm_type = RTN_UNICAST;
    mnl_attr_put(nlh, RTA_DST, len, dst);
    mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
    return nl_talk(nl, nlh, NULL, NULL);
}

int nl_route_add(struct nl *nl, int ifindex, int family, const void *dst, unsigned prefix)
{
    return nl_route_change(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, ifindex, family, dst,
                           prefix);
}

int nl_route_del(struct nl *nl, int ifindex, int family, const void *dst, unsigned prefix)
{
    return nl_route_change(nl, RTM_DELROUTE, 0, ifindex, family, dst, prefix);
}

int nl_route_oif(struct nl *nl, int family, const void *dst, int *ifindex)
{
    struct nl_answer ans;
    int err;

    if (!ifindex)
        return -EINVAL;
    if ((err = nl_route_get(nl, family, dst, &ans)))
        return err;
    if (ans.oif <= 0)
        return -ENETUNREACH;
    *ifindex = ans.oif;
    return 0;
}
