/* Copying a task's output tree out of the sandbox. The tree is written
 * by the model's code, so every name, size and type in it is hostile:
 * paths are cleaned, counts and bytes capped, links never followed. */
#include "agent/agent.h"
#include "common/log.h"
#include "common/mime.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LB_LIST_DEPTH 32

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
        /* the file may have grown since the listing: the byte cap holds anyway */
        int r = lbsb_read(c, sb_id, src, (size_t)(lim->max_bytes - bytes), &data, &len, err, sizeof err);
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
