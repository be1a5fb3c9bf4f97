/* The image's Env, WorkingDir and User in the sandbox (image_user.h). */
#include "sandboxd/image_user.h"

#include "sandboxd/image_layers.h"

#include <grp.h>
#include <string.h>
#include <unistd.h>

static char g_env[LBSD_IMG_ENV_BYTES];
static size_t g_envlen;
static char g_workdir[LBSD_IMG_WORKDIR_MAX + 1];
static int64_t g_uid = -1, g_gid = -1;

void lbsd_img_proc_set(const char *env, size_t envlen, const char *workdir, int64_t uid, int64_t gid)
{
    g_envlen = env && envlen <= sizeof g_env ? envlen : 0;
    if (g_envlen)
        memcpy(g_env, env, g_envlen);
    size_t wl = workdir ? strlen(workdir) : 0;
    if (wl >= sizeof g_workdir)
        wl = 0;
    memcpy(g_workdir, workdir ? workdir : "", wl);
    g_workdir[wl] = '\0';
    g_uid = uid;
    g_gid = gid;
}

static int same_name(const char *a, const char *b)
{
    size_t la = strcspn(a, "="), lb = strcspn(b, "=");
    return la == lb && !memcmp(a, b, la);
}

int lbsd_img_proc_env(const char *const *base, char **out, int max)
{
    int n = 0;
    for (int i = 0; base[i] && n < max; i++) {
        int over = 0;
        for (size_t at = 0; at < g_envlen && !over; at += strlen(g_env + at) + 1)
            over = same_name(base[i], g_env + at);
        if (!over)
            out[n++] = (char *)base[i];
    }
    for (size_t at = 0; at < g_envlen && n < max; at += strlen(g_env + at) + 1)
        out[n++] = g_env + at;
    out[n] = NULL;
    return n;
}

const char *lbsd_img_proc_workdir(void)
{
    return g_workdir;
}

int lbsd_img_proc_become(void)
{
    if (g_uid < 0)
        return 0;
    gid_t g = (gid_t)g_gid;
    if (setgroups(1, &g) != 0 || setresgid(g, g, g) != 0 || setresuid((uid_t)g_uid, (uid_t)g_uid, (uid_t)g_uid) != 0)
        return -1;
    return 0;
}
