/* The gateway's DNS (netgw_dns.c): a sandbox's question read, and the
 * answer built, in the wire format of RFC 1035. Only one question of class
 * IN is answered; the bytes are the sandbox's, hostile. */
#ifndef LB_NETGW_DNS_H
#define LB_NETGW_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#define LB_DNS_MSG_MAX 512  /* a query over UDP; a longer one is refused */
#define LB_DNS_ANSWERS_MAX 8

enum { LB_DNS_A = 1, LB_DNS_AAAA = 28 };
enum { LB_DNS_NOERROR = 0, LB_DNS_FORMERR = 1, LB_DNS_SERVFAIL = 2, LB_DNS_NXDOMAIN = 3, LB_DNS_REFUSED = 5 };

typedef struct lb_dns_q {
    uint16_t id;
    char name[254];   /* lowercased, no trailing dot */
    uint16_t qtype;
    size_t qlen;      /* bytes of header and question, echoed in the answer */
} lb_dns_q;

/* Reads a query from buf. LB_OK; LB_E_PROTO when it is not one question of
 * class IN with a well-formed name (the caller answers FORMERR when the
 * header at least was read: q->id is then set). */
LB_MUST_CHECK int lb_dns_parse(const unsigned char *buf, size_t len, lb_dns_q *q);
/* The answer to q (its question bytes qbuf) into out: rcode, and for
 * rcode NOERROR with qtype A the n IPv4 addresses v4 (4 bytes each) with
 * ttl. Returns the length, or 0 when out is too small. */
size_t lb_dns_answer(const unsigned char *qbuf, const lb_dns_q *q, int rcode, const unsigned char (*v4)[4], int n,
                     uint32_t ttl, unsigned char *out, size_t outsz);

#endif
