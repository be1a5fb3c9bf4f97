/* Follow-up rounds in the agent; the contract is followup.h. */
#include "agent/followup.h"

#include "common/buf.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LB_FOLLOWUP_FILE_MAX (64u << 20) /* one file copied in: one RPC frame */
#define LB_FOLLOWUP_DEPTH 32

const char *lb_followup_sandbox_name(lb_followup_sandbox how)
{
    return how == LB_FOLLOWUP_KEPT       ? "kept"
           : how == LB_FOLLOWUP_FRESH    ? "fresh"
           : how == LB_FOLLOWUP_RESTORED ? "restored"
                                         : "new";
}

void lb_followup_state_name(const char *task_id, int n, char *out, size_t outsz)
{
    snprintf(out, outsz, "t%.32s-r%d", task_id, n);
}

int lb_followup_history_load(const char *path, cJSON **messages, char *err, size_t errsz)
{
    *messages = NULL;
    char *data = NULL;
    size_t len = 0;
    int rc = lb_read_file(path, LB_FOLLOWUP_HISTORY_MAX, &data, &len);
    if (rc != LB_OK) {
        snprintf(err, errsz, rc == LB_E_TOOBIG ? "the conversation so far (trajectory.json) is over %u MiB"
                                               : "the conversation so far (trajectory.json) could not be read",
                 LB_FOLLOWUP_HISTORY_MAX >> 20);
        free(data);
        return rc == LB_E_TOOBIG ? LB_E_TOOBIG : LB_E_NOTFOUND;
    }
    cJSON *root = cJSON_ParseWithLength(data, len);
    free(data);
    cJSON *msgs = cJSON_DetachItemFromObjectCaseSensitive(root, "messages");
    cJSON_Delete(root);
    int ok = cJSON_IsArray(msgs) && cJSON_GetArraySize(msgs) >= 2;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs)
    {
        if (!cJSON_IsObject(m) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "role")))
            ok = 0;
    }
    if (!ok) {
        cJSON_Delete(msgs);
        snprintf(err, errsz, "the conversation so far (trajectory.json) is damaged");
        return LB_E_PROTO;
    }
    *messages = msgs;
    return LB_OK;
}

/* The bytes of a message's text as sent (roughly: the JSON of it). */
static size_t msg_bytes(const cJSON *m)
{
    char *t = cJSON_PrintUnformatted(m);
    size_t n = t ? strlen(t) : 0;
    free(t);
    return n;
}

/* Cuts the content of tool message m to its head and tail with a note;
 * returns the bytes saved (0 when it was short enough). */
static size_t cut_one(cJSON *m)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsString(c))
        return 0;
    const char *s = c->valuestring;
    size_t n = strlen(s);
    if (n <= LB_FOLLOWUP_CUT_HEAD + LB_FOLLOWUP_CUT_TAIL + 200)
        return 0;
    /* cut on UTF-8 boundaries: never inside a character */
    size_t h = LB_FOLLOWUP_CUT_HEAD, t = n - LB_FOLLOWUP_CUT_TAIL;
    while (h > 0 && ((unsigned char)s[h] & 0xC0) == 0x80)
        h--;
    while (t < n && ((unsigned char)s[t] & 0xC0) == 0x80)
        t++;
    char note[200];
    int nl = snprintf(note, sizeof note,
                      "\n[... %zu bytes of this output were cut by llmbox to fit the conversation into its "
                      "budget; run the command again if you need them ...]\n", t - h);
    size_t out_len = h + (size_t)nl + (n - t);
    char *out = malloc(out_len + 1);
    if (!out)
        return 0;
    memcpy(out, s, h);
    memcpy(out + h, note, (size_t)nl);
    memcpy(out + h + nl, s + t, n - t);
    out[out_len] = '\0';
    cJSON *nc = cJSON_CreateString(out);
    free(out);
    if (!nc || !cJSON_ReplaceItemInObjectCaseSensitive(m, "content", nc)) {
        cJSON_Delete(nc);
        return 0;
    }
    return n - out_len;
}

int lb_followup_fit(cJSON *messages, int64_t token_budget)
{
    size_t max = token_budget > 0 ? (size_t)token_budget * 2 : LB_FOLLOWUP_BYTES_DEFAULT;
    size_t total = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages)
        total += msg_bytes(m);
    int cut = 0;
    cJSON *it;
    cJSON_ArrayForEach(it, messages)
    {
        if (total <= max)
            break;
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
        if (!cJSON_IsString(role) || strcmp(role->valuestring, "tool"))
            continue;
        size_t saved = cut_one(it);
        if (saved) {
            cut++;
            total -= saved < total ? saved : total;
        }
    }
    return cut;
}

char *lb_followup_opening(int round, const char *prompt, const cJSON *new_inputs, lb_followup_sandbox how,
                          int n_cut, int max_turns, const char *finish_tool)
{
    lb_buf b;
    lb_buf_init(&b, (size_t)LB_FOLLOWUP_HISTORY_MAX);
    int rc = lb_buf_printf(&b, "Follow-up message (round %d of this conversation):\n\n%s\n\n---\n", round, prompt);
    int n = cJSON_GetArraySize(new_inputs);
    if (rc == LB_OK && n > 0) {
        rc = lb_buf_printf(&b, "New input file%s in /testbed/input (beside the earlier ones):", n == 1 ? "" : "s");
        const cJSON *it;
        cJSON_ArrayForEach(it, new_inputs)
        {
            const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
            if (rc == LB_OK && p)
                rc = lb_buf_printf(&b, " %s", p);
        }
        if (rc == LB_OK)
            rc = lb_buf_printf(&b, "\n");
    }
    if (rc == LB_OK && how == LB_FOLLOWUP_KEPT)
        rc = lb_buf_printf(&b, "The sandbox is the same one as in the previous round: files, installed "
                               "packages, the shell's working directory and environment are as you left "
                               "them. A command that was still running when the round ended was stopped.\n");
    else if (rc == LB_OK && how == LB_FOLLOWUP_RESTORED)
        rc = lb_buf_printf(&b, "The sandbox was restored from the state saved at the end of the previous round: "
                               "files (installed packages included), the shell's working directory and its "
                               "exported variables are as you left them. Running processes (servers, background "
                               "jobs) did not survive, and /tmp is empty: start again what you need.\n");
    else if (rc == LB_OK && how == LB_FOLLOWUP_FRESH)
        rc = lb_buf_printf(&b, "This round runs in a fresh sandbox: only the input files (/testbed/input) and "
                               "the previous round's outputs (/testbed/output) were copied in. Installed "
                               "packages, other files, running processes and the shell's working directory "
                               "and environment of earlier rounds are gone: set up again what you need.\n");
    if (rc == LB_OK && n_cut > 0)
        rc = lb_buf_printf(&b, "%d earlier tool output%s shortened to fit the conversation into its budget "
                               "(marked where the cut is).\n", n_cut, n_cut == 1 ? " was" : "s were");
    if (rc == LB_OK)
        rc = lb_buf_printf(&b, "/testbed/output/answer.txt of the previous round was removed: write this "
                               "round's answer there, or give it to %s. You have %d turns for this round; "
                               "call %s when you are done.", finish_tool, max_turns, finish_tool);
    if (rc != LB_OK) {
        lb_buf_free(&b);
        return NULL;
    }
    return lb_buf_steal(&b, NULL);
}

/* Opens rel beneath root for reading, never through a symlink and never
 * out of root (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS). */
static int open_beneath(int root, const char *rel)
{
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    return (int)syscall(SYS_openat2, root, rel, &how, sizeof how);
}

/* Reads the regular file fd (at most LB_FOLLOWUP_FILE_MAX) and writes it to
 * sb_path. LB_E_NOTFOUND: not a regular file; LB_E_TOOBIG: too big. */
static int copy_fd(lbsb_conn *c, const char *sb_id, int fd, const char *sb_path, uint64_t *bytes, char *err,
                   size_t errsz)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return LB_E_NOTFOUND;
    if ((uint64_t)st.st_size > LB_FOLLOWUP_FILE_MAX)
        return LB_E_TOOBIG;
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return LB_E_NOMEM;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    int rc = lbsb_write(c, sb_id, sb_path, buf, got, 0, err, errsz);
    free(buf);
    if (rc == LB_OK)
        *bytes = got;
    return rc;
}

/* Whether rc is the sandbox's failure (stop) rather than this file's. */
static int sandbox_failed(int rc)
{
    return rc == LB_E_UNAVAILABLE || rc == LB_E_SANDBOX || rc == LB_E_CANCELLED || rc == LB_E_PROTO ||
           rc == LB_E_IO;
}

int lb_followup_copy_inputs(lbsb_conn *c, const char *sb_id, const char *host_root, const cJSON *inputs,
                            const char *sb_root, size_t *copied, char *err, size_t errsz)
{
    *copied = 0;
    int root = open(host_root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0)
        return cJSON_GetArraySize(inputs) ? LB_E_NOTFOUND : LB_OK;
    int rc = LB_OK;
    const cJSON *it;
    cJSON_ArrayForEach(it, inputs)
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
        char clean[LB_PATH_MAX + 1], sb_path[LB_PATH_MAX + 64];
        if (!p || lb_path_clean_rel(p, strlen(p), clean, sizeof clean) != LB_OK || strcmp(clean, p))
            continue; /* never written by this service */
        snprintf(sb_path, sizeof sb_path, "%s/%s", sb_root, clean);
        int fd = open_beneath(root, clean);
        if (fd < 0)
            continue;
        uint64_t bytes = 0;
        int frc = copy_fd(c, sb_id, fd, sb_path, &bytes, err, errsz);
        close(fd);
        if (frc == LB_OK)
            (*copied)++;
        else if (sandbox_failed(frc)) {
            rc = frc;
            break;
        }
    }
    close(root);
    return rc;
}

size_t lb_followup_keep_outputs(const char *task_dir, int n, const char *artifacts_json)
{
    char out[4200], dst[4300];
    snprintf(out, sizeof out, "%s/output", task_dir);
    snprintf(dst, sizeof dst, "%s/rounds/%d/output", task_dir, n);
    cJSON *list = artifacts_json ? cJSON_Parse(artifacts_json) : NULL;
    int src = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    size_t failed = 0;
    const cJSON *it;
    const cJSON *walk = src >= 0 ? list : NULL;
    cJSON_ArrayForEach(it, walk)
    {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "path"));
        char clean[LB_PATH_MAX + 1], to[sizeof dst + LB_PATH_MAX + 2], parent[sizeof to];
        if (!p || lb_path_clean_rel(p, strlen(p), clean, sizeof clean) != LB_OK || strcmp(clean, p))
            continue;
        snprintf(to, sizeof to, "%s/%s", dst, clean);
        snprintf(parent, sizeof parent, "%s", to);
        *strrchr(parent, '/') = '\0';
        int fd = open_beneath(src, clean);
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        /* linking the opened file itself: what was checked is what is linked */
        if (fd < 0 || lb_mkdirs(parent, 0750) != LB_OK ||
            (unlink(to), linkat(AT_FDCWD, proc, AT_FDCWD, to, AT_SYMLINK_FOLLOW)) != 0)
            failed++;
        if (fd >= 0)
            close(fd);
    }
    if (src >= 0)
        close(src);
    cJSON_Delete(list);
    return failed;
}

typedef struct tree_copy {
    lbsb_conn *c;
    const char *sb_id;
    size_t max_files, copied, skipped;
    uint64_t max_bytes, bytes;
    char *err;
    size_t errsz;
} tree_copy;

/* Copies the folder dfd (rel under the tree, "" at the top) into sb_dir/rel. */
static int copy_dir(tree_copy *t, int dfd, const char *sb_dir, const char *rel, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return LB_OK;
    }
    int rc = LB_OK;
    struct dirent *e;
    while (rc == LB_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[LB_PATH_MAX + 1], sb_path[LB_PATH_MAX + 64];
        int n = snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        if (n < 0 || (size_t)n >= sizeof sub) {
            t->skipped++;
            continue;
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            int sfd = depth < LB_FOLLOWUP_DEPTH
                          ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                          : -1;
            if (sfd < 0)
                t->skipped++;
            else
                rc = copy_dir(t, sfd, sb_dir, sub, depth + 1);
            continue;
        }
        if (!S_ISREG(st.st_mode) || t->copied >= t->max_files ||
            t->bytes + (uint64_t)st.st_size > t->max_bytes) {
            t->skipped++;
            continue;
        }
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            t->skipped++;
            continue;
        }
        snprintf(sb_path, sizeof sb_path, "%s/%s", sb_dir, sub);
        uint64_t bytes = 0;
        int frc = copy_fd(t->c, t->sb_id, fd, sb_path, &bytes, t->err, t->errsz);
        close(fd);
        if (frc == LB_OK) {
            t->copied++;
            t->bytes += bytes;
        } else if (sandbox_failed(frc)) {
            rc = frc;
        } else {
            t->skipped++;
        }
    }
    closedir(d);
    return rc;
}

int lb_followup_copy_tree(lbsb_conn *c, const char *sb_id, const char *host_dir, const char *sb_dir,
                          size_t max_files, uint64_t max_bytes, size_t *copied, size_t *skipped, char *err,
                          size_t errsz)
{
    *copied = *skipped = 0;
    int dfd = open(host_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return LB_OK; /* no outputs yet: nothing to copy */
    tree_copy t = {.c = c, .sb_id = sb_id, .max_files = max_files, .max_bytes = max_bytes, .err = err,
                   .errsz = errsz};
    int rc = copy_dir(&t, dfd, sb_dir, "", 0);
    *copied = t.copied;
    *skipped = t.skipped;
    return rc;
}
