/* SPDX-License-Identifier: MIT */
/* Reading and marking ECN in an IP header (ecn.h). */
#include "tun/ecn.h"

#define IP4_HDR_MIN   20u
#define IP6_HDR_LEN   40u
#define IP4_OFF_TOS   1u
#define IP4_OFF_CSUM  10u

int ecn_get(const uint8_t *ip, uint32_t len)
{
    if (len >= IP4_HDR_MIN && ip[0] >> 4 == 4)
        return ip[IP4_OFF_TOS] & 3;
    if (len >= IP6_HDR_LEN && ip[0] >> 4 == 6)
        return ip[1] >> 4 & 3;   /* the class's low bits: byte 1's high nibble */
    return -1;
}

bool ecn_mark_ce(uint8_t *ip, uint32_t len)
{
    int ecn = ecn_get(ip, len);

    if (ecn <= (int)ECN_NOT_ECT)
        return false;
    if (ip[0] >> 4 == 6) {
        ip[1] |= ECN_CE << 4;
        return true;
    }
    /* RFC 1624's incremental update: HC' = ~(~HC + ~m + m'), over the
     * 16-bit word that holds version/IHL and TOS. */
    uint16_t old = (uint16_t)(ip[0] << 8 | ip[IP4_OFF_TOS]);
    uint16_t new = (uint16_t)(old | ECN_CE);
    uint32_t sum = (uint16_t)~(ip[IP4_OFF_CSUM] << 8 | ip[IP4_OFF_CSUM + 1]);

    sum += (uint16_t)~old;
    sum += new;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    ip[IP4_OFF_TOS] = (uint8_t)new;
    ip[IP4_OFF_CSUM] = (uint8_t)(~sum >> 8);
    ip[IP4_OFF_CSUM + 1] = (uint8_t)~sum;
    return true;
}
