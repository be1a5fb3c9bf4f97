/* create's restore (sandbox_restore.h), on a worker that holds the new
 * sandbox alone: build/llmbox-stateio applies the saved state through the
 * sandbox's root in its user namespace; then the shell is told to take the
 * saved cwd and variables (the exec wrapper keeps them in
 * /run/.llmbox-shell, part of the layer, so they came back with it). A
 * state that is damaged or refused destroys the sandbox: no half-restored
 * sandbox is ever handed out. */
#include "sandboxd/sandbox_restore.h"

#include "sandboxd/sandbox_save.h"
#include "sandboxd/sandbox_stateio.h"
#include "sandboxd/objects.h"
#include "sandboxd/sandbox_create.h"
#include "sandboxd/workers.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the shell runs first: the state's cwd and variables, silently (a
 * cwd that is gone leaves it where it starts). The file is the sandbox's
 * own, run by its own shell: nothing here reads it. */
static const char st_shell_line[] = ". /run/.llmbox-shell >/dev/null 2>&1 || :\n";

int lbsd_restore_check(const lb_config *cfg, uid_t uid, const char *name, char *msg, size_t msgsz)
{
    char p[LB_CFG_PATH + 160];
    struct stat st;
    if (lbsd_state_path(cfg, uid, name, p, sizeof p) != LB_OK || stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(msg, msgsz, "no saved state %s to restore", name);
        return LB_E_NOTFOUND;
    }
    return LB_OK;
}

static void st_restore_run(lbsd_job *j)
{
    lbsd_sandbox *sb = j->sb;
    char p[LB_CFG_PATH + 160], result[256], ns[64];
    int fd = -1, userns = -1;
    int64_t t0 = lb_mono_ms();
    snprintf(ns, sizeof ns, "/proc/%ld/ns/user", (long)sb->init_pid);
    if (lbsd_state_path(j->cfg, j->uid, j->req.state, p, sizeof p) != LB_OK ||
        (fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        j->rc = LB_E_NOTFOUND;
        snprintf(j->msg, sizeof j->msg, "no saved state %s to restore", j->req.state);
    } else if ((userns = open(ns, O_RDONLY | O_CLOEXEC)) < 0) {
        j->rc = LB_E_SANDBOX;
        snprintf(j->msg, sizeof j->msg, "the new sandbox is gone: %s", strerror(errno));
    } else {
        /* its files may fill the new sandbox's disk, no more */
        j->rc = lbsd_stateio_run(j->cfg, "restore", sb->image, userns, fd, -1, sb->root_fd,
                                 (uint64_t)sb->disk_mib << 20, LBSD_STATE_MAX_ENTRIES, result, sizeof result, j->msg,
                                 sizeof j->msg);
    }
    if (fd >= 0)
        close(fd);
    if (userns >= 0)
        close(userns);
    if (j->rc == LB_OK && (sb->sh_in < 0 || write(sb->sh_in, st_shell_line, sizeof st_shell_line - 1) !=
                                                (ssize_t)(sizeof st_shell_line - 1))) {
        j->rc = LB_E_SANDBOX;
        snprintf(j->msg, sizeof j->msg, "the new sandbox's shell did not take the saved cwd and environment");
    }
    /* the create's inputs after the state: beside the saved files, never
     * under a folder the state empties */
    if (j->rc == LB_OK && j->state)
        j->rc = lbsd_sandbox_load_input(sb, (const char *)j->state, j->uid, j->gid, j->msg, sizeof j->msg);
    if (j->rc != LB_OK) {
        lb_warn("sandbox %s: restore of %s failed: %s", sb->id, j->req.state, j->msg);
        if (j->rc == LB_E_TOOBIG) {
            /* a state that does not fit the sandbox asked for: the client's to
             * fix with a larger disk_mib, but the state is fine */
            snprintf(j->msg + strlen(j->msg), sizeof j->msg - strlen(j->msg),
                     " (restore into a sandbox with a larger disk_mib)");
        }
        lbsd_sandbox_destroy(sb);
        j->sb = NULL;
        return;
    }
    lb_info("sandbox %s restored from %s in %lld ms", sb->id, j->req.state, (long long)(lb_mono_ms() - t0));
}

static int g_restoring; /* on the loop's thread only */

int lbsd_restores_inflight(void)
{
    return g_restoring;
}

void lbsd_restore_done(void)
{
    if (g_restoring > 0)
        g_restoring--;
}

void lbsd_restore_submit(lbsd_job *j)
{
    g_restoring++;
    j->kind = LBSD_JOB_STATE;
    j->run = st_restore_run;
    j->rc = LB_OK;
    j->msg[0] = '\0';
    lbsd_workers_submit(j);
}
