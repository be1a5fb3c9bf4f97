/* The gateway's DNS wire format; the contract is netgw_dns.h. A question
 * carries no compression pointers (RFC 1035 4.1.4 allows them only where
 * a name repeats), so one is refused. */
#include "netgw/netgw_dns.h"

#include "common/status.h"

#include <string.h>

int lb_dns_parse(const unsigned char *buf, size_t len, lb_dns_q *q)
{
    memset(q, 0, sizeof *q);
    if (len < 12 || len > LB_DNS_MSG_MAX)
        return LB_E_PROTO;
    q->id = (uint16_t)(buf[0] << 8 | buf[1]);
    /* a query (QR 0) of opcode QUERY, one question, nothing else */
    if ((buf[2] & 0x80) || ((buf[2] >> 3) & 0xf) != 0 || buf[4] || buf[5] != 1 || buf[6] || buf[7])
        return LB_E_PROTO;
    size_t i = 12, n = 0;
    for (;;) {
        if (i >= len)
            return LB_E_PROTO;
        size_t l = buf[i++];
        if (!l)
            break;
        if (l > 63 || i + l > len || n + l + 1 > sizeof q->name - 1)
            return LB_E_PROTO;
        if (n)
            q->name[n++] = '.';
        for (size_t k = 0; k < l; k++) {
            unsigned char c = buf[i + k];
            if (c >= 'A' && c <= 'Z')
                c = (unsigned char)(c - 'A' + 'a');
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
                return LB_E_PROTO;
            q->name[n++] = (char)c;
        }
        i += l;
    }
    q->name[n] = '\0';
    if (!n || i + 4 > len)
        return LB_E_PROTO;
    q->qtype = (uint16_t)(buf[i] << 8 | buf[i + 1]);
    if (buf[i + 2] != 0 || buf[i + 3] != 1) /* class IN */
        return LB_E_PROTO;
    q->qlen = i + 4;
    return LB_OK;
}

size_t lb_dns_answer(const unsigned char *qbuf, const lb_dns_q *q, int rcode, const unsigned char (*v4)[4], int n,
                     uint32_t ttl, unsigned char *out, size_t outsz)
{
    if (rcode != LB_DNS_NOERROR || q->qtype != LB_DNS_A)
        n = 0;
    if (n > LB_DNS_ANSWERS_MAX)
        n = LB_DNS_ANSWERS_MAX;
    size_t need = q->qlen + (size_t)n * 16;
    if (!q->qlen || need > outsz)
        return 0;
    memcpy(out, qbuf, q->qlen);
    out[2] = (unsigned char)(0x80 | (qbuf[2] & 0x01)); /* QR, opcode 0, RD echoed */
    out[3] = (unsigned char)(0x80 | (rcode & 0xf));    /* RA, rcode */
    out[6] = 0;
    out[7] = (unsigned char)n;
    memset(out + 8, 0, 4);
    size_t o = q->qlen;
    for (int k = 0; k < n; k++) {
        static const unsigned char head[] = {0xc0, 12, 0, 1, 0, 1};
        memcpy(out + o, head, sizeof head); /* the name: a pointer to the question's */
        o += sizeof head;
        out[o++] = (unsigned char)(ttl >> 24);
        out[o++] = (unsigned char)(ttl >> 16);
        out[o++] = (unsigned char)(ttl >> 8);
        out[o++] = (unsigned char)ttl;
        out[o++] = 0;
        out[o++] = 4;
        memcpy(out + o, v4[k], 4);
        o += 4;
    }
    return o;
}
