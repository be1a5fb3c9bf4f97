/* `llmbox user add NAME | hash | list`: API tokens for llmbox.conf, so an
 * operator never hashes anything by hand. The token is printed once and
 * never written anywhere; llmbox.conf gets only its SHA-256. */
#include "entry.h"

#include "common/config.h"
#include "common/status.h"
#include "common/token.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void lb_user_usage(FILE *f)
{
    fprintf(f, "usage: llmbox user add NAME    a new API token for NAME and the llmbox.conf lines to paste\n"
               "       llmbox user hash        reads a token on stdin, prints its token_sha256 line\n"
               "       llmbox user list        the users of llmbox.conf and their limits\n");
}

static int lb_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n >= LB_CFG_USER_NAME)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("._-", *s)))
            return 0;
    return 1;
}

static int lb_user_add(const char *name, int have_cfg)
{
    if (!lb_name_ok(name)) {
        fprintf(stderr, "llmbox user add: a user name is 1 to %d letters, digits, '.', '-' or '_'\n",
                LB_CFG_USER_NAME - 1);
        return 2;
    }
    char tok[LB_TOKEN_LEN + 1], h[LB_SHA256_HEX];
    if (lb_token_new(tok, sizeof tok) != LB_OK || lb_sha256_hex(tok, strlen(tok), h) != LB_OK) {
        fprintf(stderr, "llmbox user add: cannot make a random token (getrandom failed)\n");
        return 1;
    }
    const lb_config *cfg = lb_cfg();
    int exists = have_cfg && lb_cfg_user(cfg, name) != NULL;
    char conf[LB_CFG_PATH + 16];
    if (have_cfg && cfg->conf_path[0])
        snprintf(conf, sizeof conf, "%s", cfg->conf_path);
    else if (have_cfg)
        snprintf(conf, sizeof conf, "%.*s/llmbox.conf", LB_CFG_PATH - 1, cfg->home);
    else
        snprintf(conf, sizeof conf, "llmbox.conf");
    /* where a script on this machine reaches the service */
    char url[LB_CFG_LISTEN + 32] = "127.0.0.1:8080";
    if (have_cfg && lb_cfg_addr_is_loopback(cfg->listen))
        snprintf(url, sizeof url, "%s", cfg->listen);
    else if (have_cfg && strrchr(cfg->listen, ':'))
        snprintf(url, sizeof url, "HOST%s", strrchr(cfg->listen, ':'));
    printf("The API token of %s (shown only now: llmbox keeps its SHA-256 alone):\n\n    %s\n\n", name, tok);
    if (exists)
        printf("%s already has a [user \"%s\"] section: add this hash to its token_sha256\n"
               "(\"token_sha256 = OLD, NEW\" while both should work), then restart llmbox web:\n\n"
               "token_sha256 = %s\n\n",
               conf, name, h);
    else
        printf("Add these lines to %s, then restart llmbox web:\n\n[user \"%s\"]\ntoken_sha256 = %s\n\n", conf,
               name, h);
    printf("Log in on the page with the token, or send it from scripts:\n"
           "    curl -H 'Authorization: Bearer %s' http://%s/api/tasks\n",
           tok, url);
    return 0;
}

static int lb_user_hash(void)
{
    char line[LB_TOKEN_MAX + 2], h[LB_SHA256_HEX];
    if (isatty(STDIN_FILENO))
        fprintf(stderr, "token: ");
    if (!fgets(line, sizeof line, stdin)) {
        fprintf(stderr, "llmbox user hash: no token on stdin\n");
        return 2;
    }
    size_t n = strcspn(line, "\r\n");
    line[n] = '\0';
    if (n < 32) {
        fprintf(stderr, "llmbox user hash: a token must be at least 32 characters of randomness "
                        "(`llmbox user add NAME` makes one)\n");
        return 2;
    }
    if (lb_sha256_hex(line, n, h) != LB_OK) {
        fprintf(stderr, "llmbox user hash: cannot hash the token (libcrypto failed)\n");
        return 1;
    }
    printf("token_sha256 = %s\n", h);
    return 0;
}

static int lb_user_list(void)
{
    const lb_config *cfg = lb_cfg();
    if (!cfg->n_users) {
        printf("no users configured%s%s: the service has no login and serves 127.0.0.1 only\n",
               cfg->conf_path[0] ? " in " : "", cfg->conf_path);
        return 0;
    }
    for (int i = 0; i < cfg->n_users; i++) {
        const lb_user_cfg *u = &cfg->users[i];
        char at_once[32] = "no limit", a_minute[32] = "no limit";
        if (u->max_tasks)
            snprintf(at_once, sizeof at_once, "%d", u->max_tasks);
        if (u->tasks_per_minute)
            snprintf(a_minute, sizeof a_minute, "%d", u->tasks_per_minute);
        printf("%-20s %d token%s  tasks at once: %s, starts a minute: %s, upload: %llu MiB\n", u->name,
               u->n_tokens, u->n_tokens == 1 ? " " : "s", at_once, a_minute,
               (unsigned long long)(u->max_upload_bytes >> 20));
    }
    return 0;
}

/* have_cfg: the configuration loaded (a file that does not load yet,
 * e.g. listen beyond loopback before the first user, must not keep
 * `user add` from making that first user). */
int lb_user_main(int argc, char **argv, int have_cfg)
{
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        lb_user_usage(stdout);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "add"))
        return lb_user_add(argv[2], have_cfg);
    if (argc == 2 && !strcmp(argv[1], "hash"))
        return lb_user_hash();
    if (argc == 2 && !strcmp(argv[1], "list")) {
        if (!have_cfg) {
            fprintf(stderr, "llmbox user list: cannot load the configuration: %s\n", lb_config_error());
            return 1;
        }
        return lb_user_list();
    }
    lb_user_usage(stderr);
    return 2;
}

/* `llmbox config check | listen` */
int lb_config_main(int argc, char **argv)
{
    const lb_config *cfg = lb_cfg();
    if (argc == 2 && !strcmp(argv[1], "listen")) {
        printf("%s\n", cfg->listen);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "check")) {
        printf("%s: ok: %d model%s (default %s), %d user%s, listen %s%s\n",
               cfg->conf_path[0] ? cfg->conf_path : "no llmbox.conf", cfg->n_models, cfg->n_models == 1 ? "" : "s",
               cfg->default_model, cfg->n_users, cfg->n_users == 1 ? "" : "s", cfg->listen,
               cfg->n_users ? "" : " (no login: loopback only)");
        return 0;
    }
    fprintf(argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr,
            "usage: llmbox config check     loads llmbox.conf and the environment, says what is wrong or ok\n"
            "       llmbox config listen    the address nginx listens on (scripts/run.sh)\n");
    return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
}
