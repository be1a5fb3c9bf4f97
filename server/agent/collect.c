/* Copying a task's output tree out of the sandbox. The tree is written
 * by the model's code, so every name, size and type in it is hostile:
 * paths are cleaned, counts and bytes capped, links never followed. */
#include "agent/collect.h"

#include "agent/run_state.h"
#include "common/log.h"
#include "common/mime.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LB_LIST_DEPTH 32
/* Files larger than this are copied in ranges of this size: one RPC frame
 * holds at most ~64 MiB, and a range bounds the agent's memory per file. */
#define LB_COLLECT_CHUNK (16u << 20)
/* copy_in_ranges: the host side failed (not the sandbox connection) */
#define LB_COLLECT_HOST_FAILED (LB_E__COUNT + 1)

static int mkparents(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return LB_OK;
    *slash = '\0';
    return lb_mkdirs(dir, 0755);
}

/* Copies sandbox file src to host file dst in ranges, through a temporary
 * file renamed into place (a task never shows half a file). At most cap
 * bytes: a file that grew past it is LB_E_TOOBIG. *len gets its size. */
static int copy_in_ranges(lbsb_conn *c, const char *sb_id, const char *src, const char *dst, uint64_t cap,
                          uint64_t *len, int *werr, char *err, size_t errsz)
{
    *werr = 0;
    char tmp[4200], rnd[17];
    *len = 0;
    if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK ||
        (size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%s", dst, rnd) >= sizeof tmp)
        return LB_E_INVAL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        *werr = errno;
        snprintf(err, errsz, "cannot create %.300s: %s", tmp, strerror(errno));
        return LB_COLLECT_HOST_FAILED;
    }
    uint64_t off = 0;
    int rc = LB_OK;
    for (;;) {
        char *data = NULL;
        size_t n = 0;
        uint64_t fsz = 0;
        rc = lbsb_read_range(c, sb_id, src, off, LB_COLLECT_CHUNK, &data, &n, &fsz, err, errsz);
        if (rc != LB_OK)
            break;
        if (n > cap - off) {
            free(data);
            rc = LB_E_TOOBIG;
            break;
        }
        if (n && lb_write_all(fd, data, n) != LB_OK) {
            *werr = errno;
            snprintf(err, errsz, "writing %.300s: %s", tmp, strerror(errno));
            rc = LB_COLLECT_HOST_FAILED;
        }
        free(data);
        if (rc != LB_OK)
            break;
        off += n;
        if (n == 0 || off >= fsz)
            break;
    }
    if (rc == LB_OK && fsync(fd) != 0)
        rc = LB_COLLECT_HOST_FAILED, *werr = errno;
    if (close(fd) != 0 && rc == LB_OK)
        rc = LB_COLLECT_HOST_FAILED, *werr = errno;
    if (rc == LB_OK && rename(tmp, dst) != 0)
        rc = LB_COLLECT_HOST_FAILED, *werr = errno;
    if (rc == LB_COLLECT_HOST_FAILED && !err[0])
        snprintf(err, errsz, "%s", strerror(*werr));
    if (rc != LB_OK)
        unlink(tmp);
    else
        *len = off;
    return rc;
}

int lb_collect_outputs(lbsb_conn *c, const char *sb_id, const char *sb_dir,
                       const char *host_dir, const lb_collect_limits *lim,
                       lb_artifact **arts, size_t *n, char *notes, size_t notesz)
{
    *arts = NULL;
    *n = 0;
    if (notes && notesz)
        notes[0] = '\0';
    lbsb_entry *ents = NULL;
    size_t n_ents = 0;
    char err[512] = "";
    size_t skipped_caps = 0, skipped_other = 0, skipped_names = 0, failed = 0;
    int lost = 0, nospace = 0;
    uint64_t bytes = 0;
    lb_artifact *a = NULL;
    size_t na = 0;

    int rc = lb_mkdirs(host_dir, 0755);
    if (rc != LB_OK) {
        lb_error("cannot create %s", host_dir);
        if (notes)
            snprintf(notes, notesz, "The output directory %s could not be created.", host_dir);
        return rc;
    }
    /* one entry more than allowed, to notice the cap */
    rc = lbsb_list(c, sb_id, sb_dir, LB_LIST_DEPTH, lim->max_files * 4 + 1, &ents, &n_ents,
                   err, sizeof err);
    if (rc == LB_E_NOTFOUND) {
        rc = LB_OK; /* the model removed the output dir: no outputs */
        goto out;
    }
    if (rc != LB_OK) {
        lb_warn("listing %s in the sandbox failed: %s", sb_dir, err);
        if (notes)
            snprintf(notes, notesz, "The output files could not be listed: %s", err);
        goto out;
    }
    a = calloc(lim->max_files ? lim->max_files : 1, sizeof *a);
    if (!a) {
        rc = LB_E_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n_ents; i++) {
        const lbsb_entry *e = &ents[i];
        if (e->type == 2)
            continue;
        if (e->type != 1) {
            skipped_other++;
            continue;
        }
        char rel[LB_PATH_MAX + 1];
        if (!e->path || lb_path_clean_rel(e->path, strlen(e->path), rel, sizeof rel) != LB_OK) {
            skipped_names++;
            continue;
        }
        if (na >= lim->max_files || e->size > lim->max_bytes - bytes) {
            skipped_caps++;
            continue;
        }
        char src[LB_PATH_MAX + 600], dst[4096];
        snprintf(src, sizeof src, "%s/%s", sb_dir, rel);
        if (lb_path_join(dst, sizeof dst, host_dir, rel) != LB_OK) {
            skipped_names++;
            continue;
        }
        char *data = NULL;
        size_t len = 0;
        int r;
        if (e->size > LB_COLLECT_CHUNK) {
            /* large: in ranges, straight to its file */
            uint64_t got = 0;
            int herr = 0;
            err[0] = '\0';
            r = mkparents(dst);
            if (r != LB_OK) {
                herr = errno;
                snprintf(err, sizeof err, "%s", strerror(herr));
                r = LB_COLLECT_HOST_FAILED;
            } else {
                r = copy_in_ranges(c, sb_id, src, dst, lim->max_bytes - bytes, &got, &herr, err, sizeof err);
            }
            if (r == LB_COLLECT_HOST_FAILED) {
                lb_warn("writing %s failed: %s", dst, err);
                if (herr == ENOSPC || herr == EDQUOT) {
                    failed += n_ents - i; /* as below: the disk is better spent on the task's end */
                    nospace = 1;
                    break;
                }
                failed++;
                continue;
            }
            if (r == LB_OK) {
                len = (size_t)got;
                goto stored;
            }
        } else {
            /* the file may have grown since the listing: the byte cap holds anyway */
            r = lbsb_read(c, sb_id, src, (size_t)(lim->max_bytes - bytes), &data, &len, err, sizeof err);
        }
        if (r == LB_E_TOOBIG) {
            skipped_caps++;
            continue;
        }
        if (r == LB_E_UNAVAILABLE || r == LB_E_CANCELLED || r == LB_E_IO || r == LB_E_PROTO) {
            /* the connection is gone: nothing more can be read */
            lb_warn("reading %s from the sandbox failed: %s", src, err);
            failed += n_ents - i;
            lost = 1;
            break;
        }
        if (r != LB_OK) {
            lb_warn("reading %s from the sandbox failed: %s", src, err);
            failed++;
            continue;
        }
        r = mkparents(dst);
        if (r == LB_OK)
            r = lb_write_file_atomic(dst, data ? data : "", len, 0644);
        int werr = errno;
        free(data);
        if (r != LB_OK) {
            lb_warn("writing %s failed: %s", dst, r == LB_E_IO ? strerror(werr) : lb_strerror(r));
            if (r == LB_E_IO && (werr == ENOSPC || werr == EDQUOT)) {
                /* the rest would fail too; what is left of the disk is
                 * better spent on recording how the task ended */
                failed += n_ents - i;
                nospace = 1;
                break;
            }
            failed++;
            continue;
        }
    stored:;
        lb_artifact *art = &a[na];
        memset(art, 0, sizeof *art);
        snprintf(art->path, sizeof art->path, "%s", rel);
        art->size = len;
        if (lb_mime_of_file(dst, art->mime, sizeof art->mime) != LB_OK)
            snprintf(art->mime, sizeof art->mime, "application/octet-stream");
        if (lb_sha256_file(dst, art->sha256) != LB_OK)
            art->sha256[0] = '\0';
        bytes += len;
        na++;
    }
    if (notes && (skipped_caps || skipped_other || skipped_names || failed)) {
        size_t o = 0;
        int w = snprintf(notes, notesz, "Some output files were not copied:");
        o = w > 0 ? (size_t)w : 0;
        if (skipped_caps && o < notesz)
            o += (size_t)snprintf(notes + o, notesz - o, " %zu over the limits (%zu files, %llu MiB);",
                                  skipped_caps, lim->max_files,
                                  (unsigned long long)(lim->max_bytes >> 20));
        if (skipped_other && o < notesz)
            o += (size_t)snprintf(notes + o, notesz - o, " %zu symlinks or special files;", skipped_other);
        if (skipped_names && o < notesz)
            o += (size_t)snprintf(notes + o, notesz - o, " %zu with unusable names;", skipped_names);
        if (failed && nospace && o < notesz)
            o += (size_t)snprintf(notes + o, notesz - o, " the server's disk is full;");
        else if (failed && o < notesz)
            o += (size_t)snprintf(notes + o, notesz - o, " %zu could not be read or written;", failed);
        if (o > 0 && o < notesz && notes[o - 1] == ';')
            notes[o - 1] = '.';
    }
    rc = nospace ? LB_E_NOSPACE : lost ? LB_E_UNAVAILABLE : LB_OK;
out:
    lbsb_entries_free(ents, n_ents);
    if (na) {
        *arts = a;
        *n = na;
    } else {
        free(a);
    }
    return rc;
}
