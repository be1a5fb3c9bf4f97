/* GET /healthz of `llmbox node`; the contract is node_health.h. Anything
 * may connect: a request is read up to LB_HEALTH_REQ_MAX bytes within
 * LB_HEALTH_TIMEOUT_MS, one connection at a time, and only its first line
 * is looked at. */
#include "node/node_health.h"


#include <cjson/cJSON.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define LB_HEALTH_REQ_MAX 4096
#define LB_HEALTH_TIMEOUT_MS 2000

static pthread_mutex_t lb_h_mu = PTHREAD_MUTEX_INITIALIZER;
static lb_node_health lb_h;
static int lb_h_fd = -1;

void lb_node_health_set(const lb_node_health *h)
{
    pthread_mutex_lock(&lb_h_mu);
    lb_h = *h;
    pthread_mutex_unlock(&lb_h_mu);
}

/* Writes all of buf (the peer may read slowly: bounded by SO_SNDTIMEO) */
static void lb_write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

static void lb_answer(int fd, int status, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                     status, status == 200 ? "OK" : status == 503 ? "Service Unavailable" : "Not Found",
                     strlen(body));
    lb_write_all(fd, head, (size_t)n);
    lb_write_all(fd, body, strlen(body));
}

static void lb_serve(int fd)
{
    struct timeval tv = {LB_HEALTH_TIMEOUT_MS / 1000, (LB_HEALTH_TIMEOUT_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char req[LB_HEALTH_REQ_MAX + 1];
    size_t len = 0;
    /* up to the end of the headers, or the cap */
    while (len < LB_HEALTH_REQ_MAX) {
        ssize_t n = recv(fd, req + len, LB_HEALTH_REQ_MAX - len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        req[len] = '\0';
        if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
            break;
    }
    req[len] = '\0';
    if (strncmp(req, "GET /healthz ", 13) && strncmp(req, "HEAD /healthz ", 14)) {
        lb_answer(fd, 404, "{\"error\":\"not found: this is llmbox node, which answers GET /healthz only\"}");
        return;
    }
    pthread_mutex_lock(&lb_h_mu);
    lb_node_health h = lb_h;
    pthread_mutex_unlock(&lb_h_mu);
    cJSON *o = cJSON_CreateObject();
    char *body = NULL;
    if (o && cJSON_AddStringToObject(o, "name", h.name) && cJSON_AddStringToObject(o, "state", h.state) &&
        cJSON_AddNumberToObject(o, "tasks", h.tasks) && cJSON_AddNumberToObject(o, "capacity", h.capacity) &&
        cJSON_AddNumberToObject(o, "lease_expires", (double)h.lease_expires_ms))
        body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    int ok = !strcmp(h.state, "running") || !strcmp(h.state, "draining");
    lb_answer(fd, body ? (ok ? 200 : 503) : 503, body ? body : "{\"error\":\"out of memory\"}");
    free(body);
}

static void *lb_health_main(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept4(lb_h_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EINTR && errno != ECONNABORTED)
                usleep(100 * 1000); /* EMFILE and the like: do not spin */
            continue;
        }
        lb_serve(fd);
        close(fd);
    }
    return NULL;
}

int lb_node_health_start(const char *listen_at, char *err, size_t errsz)
{
    char host[256], port[16];
    const char *colon = strrchr(listen_at, ':');
    if (!colon || (size_t)(colon - listen_at) >= sizeof host || strlen(colon + 1) >= sizeof port ||
        !colon[1]) {
        snprintf(err, errsz, "node_listen must be host:port, not %s", listen_at);
        return LB_E_INVAL;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen_at), listen_at);
    snprintf(port, sizeof port, "%s", colon + 1);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:8090 */
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int g = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (g != 0) {
        snprintf(err, errsz, "node_listen %s: %s", listen_at, gai_strerror(g));
        return LB_E_INVAL;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
        snprintf(err, errsz, "cannot listen on %s: %s", listen_at, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return LB_E_IO;
    }
    freeaddrinfo(ai);
    lb_h_fd = fd;
    pthread_t t;
    if (pthread_create(&t, NULL, lb_health_main, NULL) != 0) {
        snprintf(err, errsz, "cannot start the health thread");
        close(fd);
        lb_h_fd = -1;
        return LB_E_INTERNAL;
    }
    pthread_detach(t);
    return LB_OK;
}
