/*
 * `llmbox image build [--force] [NAME]` (run as `llmbox-sandboxd image ...`:
 * root-only code, built into the daemon's executable): builds a sandbox
 * base image.
 *
 *   images/NAME/packages   one Debian package per line, # comments
 *   images/NAME/setup.sh   optional, run chrooted in the new root
 *
 * The root is made by debootstrap into <image_store>/NAME/rootfs.tmp and
 * only renamed to rootfs (then .complete touched) once everything worked,
 * so a half-built image is never used by sandboxd.
 *
 * This process is single-threaded, so fork() for the chrooted setup step
 * is allowed (it needs a private mount namespace, which posix_spawn
 * cannot give).
 */
#include "sandboxd/image_build.h"

#include "entry.h"
#include "sandboxd/idmap.h"
#include "sandboxd/image_list.h"
#include "sandboxd/mounts.h"
#include "sandbox/rpc.h"

#include "common/config.h"
#include "common/status.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define IMG_MAX_PACKAGES 2000
#define IMG_PKGFILE_MAX (256u << 10)
#define IMG_LINE_MAX 4096
#define IMG_DEFAULT_SUITE "bookworm"
#define IMG_DEFAULT_MIRROR "http://deb.debian.org/debian"

typedef struct img_ctx {
    char name[LBSD_IMAGE_MAX + 1];
    char dir[LB_CFG_PATH + 64];     /* <store>/NAME */
    char tmp[LB_CFG_PATH + 96];     /* <store>/NAME/rootfs.tmp */
    char root[LB_CFG_PATH + 96];    /* <store>/NAME/rootfs */
    char recipe[LB_CFG_PATH + 64];  /* images/NAME */
    uint32_t uid_base;              /* sandbox_uid_base: the new root is shifted to it */
    const char *suite;
    const char *mirror;
    char **pkgs;
    size_t npkgs;
    int64_t t0;
    FILE *log;                      /* <store>/NAME/build.log */
} img_ctx;

static void img_say(img_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void img_say(img_ctx *c, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    long s = (long)((lb_mono_ms() - c->t0) / 1000);
    fprintf(stderr, "[%3ld:%02ld] %s\n", s / 60, s % 60, msg);
    if (c->log) {
        fprintf(c->log, "%s\n", msg);
        fflush(c->log);
    }
}

/* Debian policy: [a-z0-9][a-z0-9+.-]+, optionally :arch. */
static int img_pkg_valid(const char *s)
{
    size_t n = strlen(s);
    if (n < 2 || n > 128)
        return 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return 0;
    int colon = 0;
    for (size_t i = 1; i < n; i++) {
        char ch = s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '+' || ch == '.' ||
            ch == '-')
            continue;
        if (ch == ':' && !colon && i + 1 < n) {
            colon = 1;
            continue;
        }
        return 0;
    }
    return 1;
}

static int img_read_packages(img_ctx *c)
{
    char path[LB_CFG_PATH + 96];
    snprintf(path, sizeof path, "%s/packages", c->recipe);
    char *text = NULL;
    size_t len;
    int rc = lb_read_file(path, IMG_PKGFILE_MAX, &text, &len);
    if (rc == LB_E_NOTFOUND) {
        fprintf(stderr, "llmbox image: no package list at %s\n", path);
        return rc;
    }
    if (rc) {
        fprintf(stderr, "llmbox image: cannot read %s: %s\n", path, lb_strerror(rc));
        return rc;
    }
    int lineno = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        /* a line may hold several names separated by blanks */
        char *s2 = NULL;
        for (char *w = strtok_r(line, " \t\r", &s2); w; w = strtok_r(NULL, " \t\r", &s2)) {
            if (!img_pkg_valid(w)) {
                fprintf(stderr, "llmbox image: %s:%d: '%s' is not a Debian package name\n", path,
                        lineno, w);
                rc = LB_E_INVAL;
                goto out;
            }
            if (c->npkgs >= IMG_MAX_PACKAGES) {
                fprintf(stderr, "llmbox image: %s: more than %d packages\n", path, IMG_MAX_PACKAGES);
                rc = LB_E_TOOBIG;
                goto out;
            }
            char **np = realloc(c->pkgs, (c->npkgs + 1) * sizeof *np);
            if (!np || !(np[c->npkgs] = strdup(w))) {
                if (np)
                    c->pkgs = np;
                rc = LB_E_NOMEM;
                goto out;
            }
            c->pkgs = np;
            c->npkgs++;
        }
    }
    if (c->npkgs == 0) {
        fprintf(stderr, "llmbox image: %s lists no packages\n", path);
        rc = LB_E_INVAL;
    }
out:
    free(text);
    return rc;
}

/* Streams the child's combined output line by line to the terminal and the
 * build log, and waits for it. Returns the wait status, or -1. */
static int img_stream_child(img_ctx *c, pid_t pid, int fd, const char *label)
{
    char buf[8192], line[IMG_LINE_MAX];
    size_t ll = 0;
    int64_t last = 0;
    unsigned long nlines = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r; i++) {
            char ch = buf[i];
            if (ch != '\n' && ll + 1 < sizeof line) {
                line[ll++] = ch;
                continue;
            }
            if (ch != '\n')
                continue; /* overlong line: keep its head only */
            line[ll] = '\0';
            ll = 0;
            nlines++;
            if (c->log)
                fprintf(c->log, "%s\n", line);
            /* progress: debootstrap's I:/W:/E: lines are few enough to show
             * all of them; other tools get one line per second at most */
            int64_t now = lb_mono_ms();
            int important = !strncmp(line, "E:", 2) || !strncmp(line, "W:", 2) ||
                            !strncmp(line, "I: Base", 7) || strstr(line, "rror");
            if (important || now - last >= 1000) {
                long s = (long)((now - c->t0) / 1000);
                fprintf(stderr, "[%3ld:%02ld] %s: %.200s\n", s / 60, s % 60, label, line);
                last = now;
            }
        }
    }
    if (c->log)
        fflush(c->log);
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    (void)nlines;
    return st;
}

static int img_debootstrap(img_ctx *c)
{
    int rc = LB_E_IO;
    char *include = NULL;
    size_t ilen = 0;
    for (size_t i = 0; i < c->npkgs; i++)
        ilen += strlen(c->pkgs[i]) + 1;
    include = malloc(ilen + 16);
    if (!include)
        return LB_E_NOMEM;
    size_t at = (size_t)snprintf(include, ilen + 16, "--include=");
    for (size_t i = 0; i < c->npkgs; i++)
        at += (size_t)snprintf(include + at, ilen + 16 - at, "%s%s", i ? "," : "", c->pkgs[i]);
    const char *prog = access("/usr/sbin/debootstrap", X_OK) == 0 ? "/usr/sbin/debootstrap"
                                                                   : "debootstrap";
    char *argv[] = {(char *)prog, "--variant=minbase", include, (char *)c->suite, c->tmp,
                    (char *)c->mirror, NULL};

    int pfd[2] = {-1, -1};
    if (pipe2(pfd, O_CLOEXEC) != 0)
        goto out;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);

    /* debootstrap needs the sbin dirs and must never ask questions */
    char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C", "HOME=/root", NULL};
    pid_t pid;
    img_say(c, "debootstrap %s (%zu packages) from %s into %s", c->suite, c->npkgs, c->mirror,
            c->tmp);
    int e = posix_spawnp(&pid, prog, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    pfd[1] = -1;
    if (e != 0) {
        fprintf(stderr, "llmbox image: cannot run debootstrap: %s (apt-get install debootstrap)\n",
                strerror(e));
        goto out;
    }
    int st = img_stream_child(c, pid, pfd[0], "debootstrap");
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr,
                "llmbox image: debootstrap failed (%s %d); see %s/build.log and %s/debootstrap/debootstrap.log\n",
                WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
                c->dir, c->tmp);
        goto out;
    }
    rc = LB_OK;
out:
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    free(include);
    return rc;
}

/* Runs images/NAME/setup.sh chrooted in the new root, in a private mount
 * namespace holding /proc and /dev, so nothing stays mounted afterwards. */
static int img_setup_script(img_ctx *c)
{
    char src[LB_CFG_PATH + 96], dst[LB_CFG_PATH + 160];
    snprintf(src, sizeof src, "%s/setup.sh", c->recipe);
    char *script = NULL;
    size_t len;
    int rc = lb_read_file(src, 1u << 20, &script, &len);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    if (rc) {
        fprintf(stderr, "llmbox image: cannot read %s: %s\n", src, lb_strerror(rc));
        return rc;
    }
    snprintf(dst, sizeof dst, "%s/tmp/llmbox-setup.sh", c->tmp);
    rc = lb_write_file_atomic(dst, script, len, 0700);
    free(script);
    if (rc) {
        fprintf(stderr, "llmbox image: cannot copy setup.sh into the root: %s\n", strerror(errno));
        return rc;
    }
    img_say(c, "running %s chrooted", src);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return LB_E_IO;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return LB_E_IO;
    }
    if (pid == 0) {
        char p[LB_CFG_PATH + 160];
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
            fprintf(stderr, "E: private mount namespace: %s\n", strerror(errno));
            _exit(127);
        }
        snprintf(p, sizeof p, "%s/proc", c->tmp);
        if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
            fprintf(stderr, "W: mount proc: %s\n", strerror(errno));
        snprintf(p, sizeof p, "%s/dev", c->tmp);
        if (mount("/dev", p, NULL, MS_BIND | MS_REC, NULL) != 0)
            fprintf(stderr, "W: bind /dev: %s\n", strerror(errno));
        if (chroot(c->tmp) != 0 || chdir("/") != 0) {
            fprintf(stderr, "E: chroot: %s\n", strerror(errno));
            _exit(127);
        }
        char *argv[] = {"/bin/sh", "-e", "/tmp/llmbox-setup.sh", NULL};
        char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                        "DEBIAN_FRONTEND=noninteractive", "LANG=C.UTF-8", "HOME=/root", NULL};
        execve(argv[0], argv, envp);
        fprintf(stderr, "E: exec /bin/sh: %s\n", strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    int st = img_stream_child(c, pid, pfd[0], "setup.sh");
    close(pfd[0]);
    unlink(dst);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "llmbox image: setup.sh failed (see %s/build.log)\n", c->dir);
        return LB_E_IO;
    }
    return LB_OK;
}

/* Package versions from the root's dpkg status file, for the manifest. */
static cJSON *img_installed(img_ctx *c)
{
    char path[LB_CFG_PATH + 160];
    snprintf(path, sizeof path, "%s/var/lib/dpkg/status", c->tmp);
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    char *line = NULL, pkg[256] = "";
    size_t cap = 0;
    ssize_t n;
    while (o && (n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        if (!strncmp(line, "Package: ", 9))
            snprintf(pkg, sizeof pkg, "%s", line + 9);
        else if (!strncmp(line, "Version: ", 9) && pkg[0])
            cJSON_AddStringToObject(o, pkg, line + 9);
        else if (!line[0])
            pkg[0] = '\0';
    }
    free(line);
    fclose(f);
    return o;
}

/* Finishing touches inside the new root, then the manifest. */
static int img_finish_root(img_ctx *c, int64_t started)
{
    char p[LB_CFG_PATH + 200];
    static const char *const dirs[] = {"testbed", "testbed/input", "testbed/output"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", c->tmp, dirs[i]);
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "llmbox image: mkdir %s: %s\n", p, strerror(errno));
            return LB_E_IO;
        }
    }
    /* the sandbox's hostname resolves without DNS */
    snprintf(p, sizeof p, "%s/etc/hosts", c->tmp);
    static const char hosts[] = "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n";
    if (lb_write_file_atomic(p, hosts, sizeof hosts - 1, 0644) != LB_OK)
        fprintf(stderr, "llmbox image: warning: cannot write %s\n", p);
    snprintf(p, sizeof p, "%s/etc/hostname", c->tmp);
    if (lb_write_file_atomic(p, "sandbox\n", 8, 0644) != LB_OK)
        fprintf(stderr, "llmbox image: warning: cannot write %s\n", p);
    /* downloaded .debs are dead weight in every sandbox's lower layer */
    snprintf(p, sizeof p, "%s/var/cache/apt/archives", c->tmp);
    int dfd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0) {
        DIR *d = fdopendir(dfd);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            size_t l = strlen(de->d_name);
            if (l > 4 && !strcmp(de->d_name + l - 4, ".deb"))
                unlinkat(dfd, de->d_name, 0);
        }
        if (d)
            closedir(d);
        else
            close(dfd);
    }

    cJSON *m = cJSON_CreateObject();
    cJSON *pk = cJSON_CreateArray();
    int rc = LB_E_NOMEM;
    if (!m || !pk)
        goto out;
    cJSON_AddItemToObject(m, "packages", pk);
    for (size_t i = 0; i < c->npkgs; i++)
        cJSON_AddItemToArray(pk, cJSON_CreateString(c->pkgs[i]));
    cJSON_AddStringToObject(m, "name", c->name);
    cJSON_AddStringToObject(m, "suite", c->suite);
    cJSON_AddStringToObject(m, "mirror", c->mirror);
    cJSON_AddStringToObject(m, "variant", "minbase");
    cJSON_AddNumberToObject(m, "built_at_ms", (double)lb_now_ms());
    cJSON_AddNumberToObject(m, "build_seconds", (double)((lb_mono_ms() - started) / 1000));
    cJSON_AddStringToObject(m, "llmbox_version", LLMBOX_VERSION);
    cJSON *inst = img_installed(c);
    if (inst) {
        cJSON_AddNumberToObject(m, "installed_count", cJSON_GetArraySize(inst));
        cJSON_AddItemToObject(m, "installed", inst);
    }
    char *txt = cJSON_Print(m);
    if (!txt)
        goto out;
    snprintf(p, sizeof p, "%s/etc/llmbox-image.json", c->tmp);
    rc = lb_write_file_atomic(p, txt, strlen(txt), 0644);
    snprintf(p, sizeof p, "%s/manifest.json", c->dir);
    if (rc == LB_OK)
        rc = lb_write_file_atomic(p, txt, strlen(txt), 0644);
    if (rc)
        fprintf(stderr, "llmbox image: cannot write the manifest %s: %s\n", p, strerror(errno));
    free(txt);
out:
    cJSON_Delete(m);
    return rc;
}

static void img_say_line(void *ctx, const char *line)
{
    img_say((img_ctx *)ctx, "%s", line);
}

/* The sandbox's root is host uid BASE (idmap.h): the files debootstrap made
 * for uid u become BASE+u, so that root and apt's users inside own them. */
static int img_shift(img_ctx *c)
{
    char msg[512];
    if (lbsd_idmap_shift_root(c->dir, "rootfs.tmp", c->uid_base, 0, img_say_line, c, msg, sizeof msg) != LB_OK) {
        fprintf(stderr, "llmbox image: shifting the ownership of the new root failed: %s\n", msg);
        return LB_E_IO;
    }
    return LB_OK;
}

/* rootfs.tmp -> rootfs. With an old rootfs the two are exchanged in one
 * step (renameat2 RENAME_EXCHANGE) so there is never a moment without one. */
static int img_publish(img_ctx *c)
{
    char done[LB_CFG_PATH + 96];
    snprintf(done, sizeof done, "%s/.complete", c->dir);
    struct stat st;
    if (lstat(c->root, &st) == 0) {
        if (renameat2(AT_FDCWD, c->tmp, AT_FDCWD, c->root, RENAME_EXCHANGE) != 0) {
            fprintf(stderr, "llmbox image: cannot swap in the new root: %s\n", strerror(errno));
            return LB_E_IO;
        }
        img_say(c, "removing the previous root");
        if (lbsd_rmtree_force(c->tmp) != LB_OK) /* the new root is in place: only disk is lost */
            fprintf(stderr, "llmbox image: warning: cannot remove %s: %s\n", c->tmp, strerror(errno));
    } else if (rename(c->tmp, c->root) != 0) {
        fprintf(stderr, "llmbox image: rename %s -> %s: %s\n", c->tmp, c->root, strerror(errno));
        return LB_E_IO;
    }
    /* the new root was shifted before the swap; the stamp says so before
     * .complete lets sandboxd use it */
    if (lbsd_idmap_write_stamp(c->dir, c->uid_base) != LB_OK) {
        fprintf(stderr, "llmbox image: cannot write %s/.idmap: %s\n", c->dir, strerror(errno));
        return LB_E_IO;
    }
    char stamp[64];
    int n = snprintf(stamp, sizeof stamp, "%lld\n", (long long)lb_now_ms());
    if (lb_write_file_atomic(done, stamp, (size_t)n, 0644) != LB_OK) {
        fprintf(stderr, "llmbox image: cannot write %s: %s\n", done, strerror(errno));
        return LB_E_IO;
    }
    return LB_OK;
}

static void img_usage(const lb_config *cfg, FILE *f)
{
    fprintf(f, "usage: llmbox image build [--force] [NAME]\n"
               "       llmbox image list\n"
               "  Builds images/NAME (default: %s) into %s/NAME with debootstrap.\n"
               "  --force   rebuild even if the image is complete\n"
               "  env: LLMBOX_DEBIAN_MIRROR (default %s), LLMBOX_DEBIAN_SUITE (default %s)\n",
            cfg->default_image, cfg->image_store, IMG_DEFAULT_MIRROR, IMG_DEFAULT_SUITE);
}

static int img_build(const lb_config *cfg, const char *name, int force)
{
    img_ctx c;
    memset(&c, 0, sizeof c);
    c.t0 = lb_mono_ms();
    c.uid_base = cfg->sandbox_uid_base;
    int lockfd = -1, rc = 1, began = 0;
    snprintf(c.name, sizeof c.name, "%s", name);
    c.suite = getenv("LLMBOX_DEBIAN_SUITE");
    if (!c.suite || !*c.suite)
        c.suite = IMG_DEFAULT_SUITE;
    c.mirror = getenv("LLMBOX_DEBIAN_MIRROR");
    if (!c.mirror || !*c.mirror)
        c.mirror = IMG_DEFAULT_MIRROR;
    if (!lbsd_image_name_valid(c.suite) || strncmp(c.mirror, "http", 4) != 0) {
        fprintf(stderr, "llmbox image: bad LLMBOX_DEBIAN_SUITE or LLMBOX_DEBIAN_MIRROR\n");
        return 2;
    }
    if ((size_t)snprintf(c.dir, sizeof c.dir, "%s/%s", cfg->image_store, name) >= sizeof c.dir ||
        (size_t)snprintf(c.recipe, sizeof c.recipe, "%s/%s", cfg->images_dir, name) >= sizeof c.recipe) {
        fprintf(stderr, "llmbox image: paths too long\n");
        return 2;
    }
    snprintf(c.tmp, sizeof c.tmp, "%s/rootfs.tmp", c.dir);
    snprintf(c.root, sizeof c.root, "%s/rootfs", c.dir);
    if (img_read_packages(&c) != LB_OK)
        goto out;
    if (geteuid() != 0) {
        fprintf(stderr, "llmbox image: building an image needs root (debootstrap, chroot)\n");
        goto out;
    }
    if (lb_mkdirs(c.dir, 0755) != LB_OK) {
        fprintf(stderr, "llmbox image: cannot create %s: %s\n", c.dir, strerror(errno));
        goto out;
    }
    char p[LB_CFG_PATH + 96];
    snprintf(p, sizeof p, "%s/.lock", c.dir);
    lockfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "llmbox image: another build of '%s' is running (%s)\n", name, p);
        goto out;
    }
    snprintf(p, sizeof p, "%s/.complete", c.dir);
    if (!force && access(p, F_OK) == 0) {
        fprintf(stderr, "llmbox image: '%s' is already built (%s); use --force to rebuild\n", name,
                c.root);
        rc = 0;
        goto out;
    }
    snprintf(p, sizeof p, "%s/build.log", c.dir);
    c.log = fopen(p, "we");
    /* a previous build that died may have left /proc mounted in rootfs.tmp */
    if (lbsd_rmtree_force(c.tmp) != LB_OK) {
        fprintf(stderr, "llmbox image: cannot remove the stale %s: %s\n", c.tmp, strerror(errno));
        goto out;
    }
    int64_t started = lb_mono_ms();
    began = 1;
    if (img_debootstrap(&c) != LB_OK)
        goto out;
    lbsd_umount_under(c.tmp); /* debootstrap should have unmounted; be sure */
    if (img_setup_script(&c) != LB_OK)
        goto out;
    if (img_finish_root(&c, started) != LB_OK)
        goto out;
    if (img_shift(&c) != LB_OK)
        goto out;
    if (img_publish(&c) != LB_OK)
        goto out;
    img_say(&c, "image '%s' ready: %s (%zu packages requested)", name, c.root, c.npkgs);
    rc = 0;
out:
    if (rc != 0 && began && access(c.tmp, F_OK) == 0)
        fprintf(stderr, "llmbox image: build of '%s' failed; %s was left for inspection\n", name,
                c.tmp);
    if (c.log)
        fclose(c.log);
    if (lockfd >= 0)
        close(lockfd);
    for (size_t i = 0; i < c.npkgs; i++)
        free(c.pkgs[i]);
    free(c.pkgs);
    return rc;
}

int lbsd_image_main(int argc, char **argv)
{
    const lb_config *cfg = lb_cfg();
    if (argc == 2 && !strcmp(argv[1], "list"))
        return lbsd_image_list(cfg);
    if (argc < 2 || strcmp(argv[1], "build") != 0) {
        img_usage(cfg, argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
        return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    int force = 0;
    const char *name = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f")) {
            force = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            img_usage(cfg, stdout);
            return 0;
        } else if (argv[i][0] == '-' || name) {
            img_usage(cfg, stderr);
            return 2;
        } else {
            name = argv[i];
        }
    }
    if (!name)
        name = cfg->default_image;
    if (!lbsd_image_name_valid(name)) {
        fprintf(stderr, "llmbox image: bad image name '%s': use 1-32 of [a-z0-9_-]\n", name);
        return 2;
    }
    if (!strcmp(name, "oci")) { /* <image_store>/oci is the layered store (docs/IMAGES.md) */
        fprintf(stderr, "llmbox image: 'oci' is the layered images' folder: choose another name\n");
        return 2;
    }
    /* SIGPIPE would kill us silently if the terminal goes away mid-build */
    signal(SIGPIPE, SIG_IGN);
    return img_build(cfg, name, force);
}
