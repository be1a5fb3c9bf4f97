/* SCM_RIGHTS in one place (see fdpass.h). */
#include "sandboxd/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

ssize_t lbsd_fds_send(int sock, const void *buf, size_t len, const int *fds, int nfds, int flags)
{
    if (nfds < 1 || nfds > LBSD_FDPASS_MAX) {
        errno = EINVAL;
        return -1;
    }
    char cbuf[CMSG_SPACE(LBSD_FDPASS_MAX * sizeof(int))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
    ssize_t w;
    do
        w = sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    return w;
}

ssize_t lbsd_fds_recv(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds, int *cut)
{
    char cbuf[CMSG_SPACE(LBSD_FDPASS_MAX * sizeof(int))];
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof cbuf};
    *nfds = 0;
    *cut = 0;
    ssize_t n;
    do
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return n;
    *cut = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (*nfds < maxfds && *nfds < LBSD_FDPASS_MAX)
                fds[(*nfds)++] = fd;
            else
                close(fd);
        }
    }
    return n;
}
