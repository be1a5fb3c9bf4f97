/* Descriptors over a unix socket (SCM_RIGHTS), the one way sandboxd, the
 * zygote and init hand each other pipes, sockets and namespaces. No
 * allocation and no lock: init (a clone) calls these too. */
#ifndef LBSD_FDPASS_H
#define LBSD_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

#define LBSD_FDPASS_MAX 4      /* the most any message carries */

/* Sends len bytes of buf with nfds (1..LBSD_FDPASS_MAX) descriptors, as one
 * message; flags go to sendmsg (MSG_NOSIGNAL is added). Retries EINTR.
 * Returns what sendmsg returned. */
ssize_t lbsd_fds_send(int sock, const void *buf, size_t len, const int *fds, int nfds, int flags);
/* Receives one message into buf (up to len bytes) and its descriptors
 * (close-on-exec) into fds: at most maxfds (<= LBSD_FDPASS_MAX), the
 * rest closed. *nfds: how many; *cut: 1 if the message or its control
 * data were cut short. Retries EINTR. Returns what recvmsg returned. */
ssize_t lbsd_fds_recv(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds, int *cut);

#endif
