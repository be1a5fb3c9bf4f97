/* The file watch (see filewatch.h). */
#include "sandboxd/filewatch.h"

#include "sandboxd/cgroup.h"
#include "sandboxd/hostlimits.h"
#include "sandboxd/proc_walk.h"
#include "sandboxd/sandbox_create.h"

#include "common/log.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fw_fd = -1;
static uint64_t fw_low;      /* the lowest fs.file-nr seen: the host without sandbox load */
static int64_t fw_next_ms;
static uint64_t fw_scan_nr;  /* fs.file-nr at the last count */
static int64_t fw_scan_ms;   /* and when it was */

uint64_t lbsd_filewatch_nr_files(void)
{
    if (fw_fd < 0)
        return 0;
    char buf[96];
    ssize_t n = pread(fw_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtoull(buf, NULL, 10);
}

void lbsd_filewatch_init(void)
{
    fw_fd = open("/proc/sys/fs/file-nr", O_RDONLY | O_CLOEXEC);
    if (fw_fd < 0)
        lb_warn("open files: cannot read /proc/sys/fs/file-nr: files held without a descriptor "
                "are not watched");
    fw_low = lbsd_filewatch_nr_files();
}

int lbsd_filewatch_due(int64_t now, int nsandboxes)
{
    if (fw_fd < 0 || nsandboxes <= 0)
        return -1;
    return fw_next_ms > now ? (int)(fw_next_ms - now) : 0;
}

/* Entries of /proc/<pid>/fd. */
static uint64_t fw_count_fds(long pid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/fd", pid);
    DIR *d = opendir(p);
    if (!d)
        return 0;
    uint64_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Mappings of /proc/<pid>/maps backed by a file (inode field not 0); stops
 * counting past stop. Each holds a struct file; mappings of one open file
 * (a library's segments) are counted each, an upper bound. */
static uint64_t fw_count_file_maps(long pid, uint64_t stop)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/maps", pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    static char buf[1 << 16];
    uint64_t n = 0;
    /* fields: address perms offset dev inode [path]; field is the index of
     * the one being read on the current line, -1 once it is decided */
    int field = 0, in_field = 0, nonzero = 0;
    ssize_t r;
    while (n <= stop && (r = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < r; i++) {
            char c = buf[i];
            if (c == '\n') {
                field = in_field = nonzero = 0;
                continue;
            }
            if (field < 0)
                continue;
            if (c == ' ') {
                if (in_field) {
                    if (field == 4) {
                        n += nonzero;
                        field = -1;
                        continue;
                    }
                    field++;
                    in_field = 0;
                }
                continue;
            }
            in_field = 1;
            if (field == 4 && c != '0')
                nonzero = 1;
        }
    }
    close(fd);
    return n;
}

/* The walk's index: each live sandbox by its pid namespace, sorted, so
 * that finding a process's sandbox costs a binary search, not a walk of
 * the list (with 10,000 sandboxes and 20,000 processes the walk made the
 * count quadratic: most of sandboxd's CPU, bench/RESULTS.md). */
typedef struct {
    uint64_t ino, dev;
    lbsd_sandbox *sb;
} fw_ns;

typedef struct {
    fw_ns *v;
    size_t n;
} fw_index;

static int fw_ns_cmp(const void *a, const void *b)
{
    const fw_ns *x = a, *y = b;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->dev < y->dev ? -1 : x->dev > y->dev;
}

static lbsd_sandbox *fw_owner(const fw_index *ix, long pid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/ns/pid", pid);
    struct stat st;
    if (stat(p, &st) != 0)
        return NULL;
    fw_ns key = {.ino = (uint64_t)st.st_ino, .dev = (uint64_t)st.st_dev};
    fw_ns *hit = bsearch(&key, ix->v, ix->n, sizeof *ix->v, fw_ns_cmp);
    return hit ? hit->sb : NULL;
}

/* One process of the walk: its descriptors and file mappings count
 * against its sandbox's budget (none once a sandbox is over it: it is
 * stopped anyway). */
static int fw_count_pid(pid_t pid, void *arg)
{
    lbsd_sandbox *s = fw_owner(arg, pid);
    if (!s || s->files_held > s->files_budget)
        return 0;
    s->files_held += fw_count_fds(pid);
    uint64_t left = s->files_budget >= s->files_held ? s->files_budget - s->files_held : 0;
    s->files_held += fw_count_file_maps(pid, left);
    return 0;
}

static void fw_stop(lbsd_sandbox *s, uint64_t held, uint64_t nr)
{
    snprintf(s->gone_why, sizeof s->gone_why,
             "it was destroyed for holding more than its %llu open files (LLMBOX_SANDBOX_FILES; "
             "counted %llu or more, descriptors and file mappings)",
             (unsigned long long)s->files_budget, (unsigned long long)held);
    lb_warn("sandbox %s: holds %llu or more files (budget %llu; host table at %llu of %llu): "
            "destroying it",
            s->id, (unsigned long long)held, (unsigned long long)s->files_budget,
            (unsigned long long)nr, (unsigned long long)lbsd_host_get()->file_max);
    s->broken = 1;
    if (lbsd_cg_kill(&s->cg) != 0)
        lbsd_kill_all(s, 0);
    if (s->init_pid > 0 && !s->init_reaped)
        kill(s->init_pid, SIGKILL);
}

void lbsd_filewatch_tick(lbsd_sandbox *list, int64_t now)
{
    if (fw_fd < 0 || !list || now < fw_next_ms)
        return;
    fw_next_ms = now + LBSD_FILEWATCH_MS;
    uint64_t nr = lbsd_filewatch_nr_files();
    if (nr && nr < fw_low)
        fw_low = nr;
    /* Cheap while nothing grows: one read. A sandbox can only be over its
     * budget if the table grew by at least that much; counting starts at a
     * quarter of the smallest budget, so a fast attacker is caught before
     * it is far past its own. */
    uint64_t smallest = 0;
    for (lbsd_sandbox *s = list; s; s = s->next) {
        s->files_held = 0;
        if (!smallest || s->files_budget < smallest)
            smallest = s->files_budget;
    }
    if (!nr || nr < fw_low + smallest / 4)
        return;
    /* a busy host stays above that line: count again only when the table
     * grew by another quarter budget since the last count, or a second
     * later (a slow attacker) */
    if (fw_scan_ms && nr < fw_scan_nr + smallest / 4 && now - fw_scan_ms < 1000)
        return;

    fw_scan_nr = nr;
    fw_scan_ms = now;
    size_t n = 0;
    for (lbsd_sandbox *s = list; s; s = s->next)
        n++;
    fw_index ix = {.v = malloc((n ? n : 1) * sizeof *ix.v), .n = 0};
    if (!ix.v)
        return; /* the next tick tries again */
    for (lbsd_sandbox *s = list; s; s = s->next)
        if (!s->broken)
            ix.v[ix.n++] = (fw_ns){.ino = s->pidns_ino, .dev = s->pidns_dev, .sb = s};
    qsort(ix.v, ix.n, sizeof *ix.v, fw_ns_cmp);
    int walked = lbsd_proc_each(fw_count_pid, &ix);
    free(ix.v);
    if (walked < 0)
        return;
    for (lbsd_sandbox *s = list; s; s = s->next)
        if (!s->broken && s->files_budget && s->files_held > s->files_budget)
            fw_stop(s, s->files_held, nr);
}
