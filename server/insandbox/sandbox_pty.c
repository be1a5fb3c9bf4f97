/* The pty relay of E2B's pty, inside the sandbox (sandbox_pty.h). */
#include "insandbox/sandbox_pty.h"

#include "llmbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

static int pty_write_all(int fd, const char *d, size_t n)
{
    while (n) {
        ssize_t w = write(fd, d, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        d += w;
        n -= (size_t)w;
    }
    return 0;
}

static int pty_dim(const char *s)
{
    long v = strtol(s, NULL, 10);
    return v >= 1 && v <= 10000 ? (int)v : 0;
}

/* Input for the terminal. The master is non-blocking: while the program
 * does not read its input, its output is still copied (else a program
 * that writes while it is being typed at would wait on us forever). */
static int pty_to_master(int master, const char *d, size_t n)
{
    static char out[16 * 1024];
    while (n) {
        ssize_t w = write(master, d, n);
        if (w > 0) {
            d += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        struct pollfd pf = {.fd = master, .events = POLLIN | POLLOUT};
        if (poll(&pf, 1, -1) < 0 && errno != EINTR)
            return -1;
        if (pf.revents & POLLIN) {
            ssize_t r = read(master, out, sizeof out);
            if (r > 0 && pty_write_all(1, out, (size_t)r) != 0)
                return -1;
        }
        if ((pf.revents & (POLLHUP | POLLERR)) && !(pf.revents & POLLOUT))
            return -1;
    }
    return 0;
}

/* The frames of stdin: a header, then a payload passed on (d) or kept (r). */
typedef struct pty_in {
    unsigned char head[5];
    size_t have;                  /* header bytes so far */
    uint32_t left;                /* payload bytes still to come */
    unsigned char size[4];        /* a resize's payload */
    size_t sizelen;
} pty_in;

/* 0, -1 on a malformed frame, -2 when the terminal is gone (its program
 * ended: the rest of the input has nowhere to go). */
static int pty_feed(pty_in *in, int master, const unsigned char *d, size_t n)
{
    while (n) {
        if (in->have < 5) {
            in->head[in->have++] = *d++;
            n--;
            if (in->have < 5)
                continue;
            in->left = (uint32_t)in->head[1] << 24 | (uint32_t)in->head[2] << 16 | (uint32_t)in->head[3] << 8 |
                       in->head[4];
            in->sizelen = 0;
            if ((in->head[0] != 'd' && in->head[0] != 'r') || (in->head[0] == 'r' && in->left != 4) ||
                in->left > LBSB_PTY_FRAME_MAX)
                return -1;
            if (in->left == 0)
                in->have = 0;
            continue;
        }
        size_t k = n < in->left ? n : in->left;
        if (in->head[0] == 'd') {
            if (pty_to_master(master, (const char *)d, k) != 0)
                return -2;
        } else {
            memcpy(in->size + in->sizelen, d, k);
            in->sizelen += k;
        }
        d += k;
        n -= k;
        in->left -= (uint32_t)k;
        if (in->left)
            continue;
        if (in->head[0] == 'r') {
            struct winsize ws = {.ws_col = (unsigned short)(in->size[0] << 8 | in->size[1]),
                                 .ws_row = (unsigned short)(in->size[2] << 8 | in->size[3])};
            if (ws.ws_col && ws.ws_row)
                ioctl(master, TIOCSWINSZ, &ws);
        }
        in->have = 0;
    }
    return 0;
}

static __attribute__((noreturn)) void pty_exit_as(int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        signal(sig, SIG_DFL);
        prctl(PR_SET_DUMPABLE, 0); /* no core of the relay for the program's SIGSEGV */
        kill(getpid(), sig);
        _exit(128 + sig);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

void lbsd_pty_main(char **argv, void (*exec_program)(char **prog_argv))
{
    prctl(PR_SET_NAME, "llmbox-pty");
    int cols = argv[1] ? pty_dim(argv[1]) : 0, rows = cols && argv[2] ? pty_dim(argv[2]) : 0;
    if (!rows || !argv[3]) {
        fprintf(stderr, "%s: cols and rows (1..10000) and a program are needed\n", LBSB_PTY_ARGV0);
        _exit(2);
    }
    int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    int unlock = 0;
    if (master < 0 || ioctl(master, TIOCSPTLCK, &unlock) != 0) {
        fprintf(stderr, "%s: no pty in the sandbox: %s\n", LBSB_PTY_ARGV0, strerror(errno));
        _exit(2);
    }
    struct winsize ws = {.ws_col = (unsigned short)cols, .ws_row = (unsigned short)rows};
    ioctl(master, TIOCSWINSZ, &ws);
    int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
    if (slave < 0) {
        fprintf(stderr, "%s: cannot open the pty's peer: %s\n", LBSB_PTY_ARGV0, strerror(errno));
        _exit(2);
    }
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "%s: fork: %s\n", LBSB_PTY_ARGV0, strerror(errno));
        _exit(2);
    }
    if (child == 0) {
        setsid();
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (ioctl(slave, TIOCSCTTY, 0) != 0 || dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
            _exit(126);
        if (slave > 2)
            close(slave);
        close(master);
        exec_program(argv + 3);
        dprintf(2, "%s: %s\r\n", argv[3], strerror(errno));
        _exit(127);
    }
    close(slave);
    fcntl(master, F_SETFL, O_NONBLOCK);
    pty_in in;
    memset(&in, 0, sizeof in);
    int in_open = 1;
    static unsigned char buf[64 * 1024];
    for (;;) {
        struct pollfd pf[2] = {{.fd = master, .events = POLLIN}, {.fd = in_open ? 0 : -1, .events = POLLIN}};
        int pr = poll(pf, 2, 200);
        if (pr < 0 && errno != EINTR)
            break;
        int status;
        if (pr <= 0) {
            if (waitpid(child, &status, WNOHANG) == child) {
                /* what the terminal still holds, then the program's end */
                ssize_t n;
                while ((n = read(master, buf, sizeof buf)) > 0)
                    if (pty_write_all(1, (const char *)buf, (size_t)n) != 0)
                        break;
                pty_exit_as(status);
            }
            continue;
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(master, buf, sizeof buf);
            if (n > 0) {
                if (pty_write_all(1, (const char *)buf, (size_t)n) != 0)
                    break; /* nobody reads the terminal: sandboxd has gone */
            } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
                /* EIO: every holder of the terminal's side has closed it */
                if (waitpid(child, &status, 0) == child)
                    pty_exit_as(status);
                break;
            }
        }
        if (in_open && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(0, buf, sizeof buf);
            int fr = n > 0 ? pty_feed(&in, master, buf, (size_t)n) : 0;
            if (n == 0 || fr == -2)
                in_open = 0; /* no more input (or nowhere for it); the program's end decides */
            else if (fr == -1) {
                fprintf(stderr, "%s: malformed input frame\n", LBSB_PTY_ARGV0);
                break;
            }
        }
    }
    kill(child, SIGKILL);
    _exit(1);
}
