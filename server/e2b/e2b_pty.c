/* E2B's pty: sizes, relay frames, which process is on one (e2b_pty.h). */
#include "e2b/e2b_pty.h"

#include "common/status.h"
#include "llmbox/sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int lb_pty_dim(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= LB_E2B_PTY_DIM_MAX ? (int)v->valuedouble : 0;
}

int lb_e2b_pty_size(const cJSON *pty, int *cols, int *rows)
{
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(pty, "size");
    *cols = lb_pty_dim(size, "cols");
    *rows = lb_pty_dim(size, "rows");
    return *cols && *rows ? 0 : -1;
}

int lb_e2b_pty_frame(char kind, const char *data, size_t len, int cols, int rows, char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (kind == 'r')
        len = 4;
    if (len > LBSB_PTY_FRAME_MAX || (kind != 'd' && kind != 'r'))
        return -1;
    unsigned char *f = malloc(5 + len);
    if (!f)
        return -1;
    f[0] = (unsigned char)kind;
    f[1] = (unsigned char)(len >> 24);
    f[2] = (unsigned char)(len >> 16);
    f[3] = (unsigned char)(len >> 8);
    f[4] = (unsigned char)len;
    if (kind == 'r') {
        f[5] = (unsigned char)(cols >> 8);
        f[6] = (unsigned char)cols;
        f[7] = (unsigned char)(rows >> 8);
        f[8] = (unsigned char)rows;
    } else if (len) {
        memcpy(f + 5, data, len);
    }
    *out = (char *)f;
    *outlen = 5 + len;
    return 0;
}

int lb_e2b_is_pty(lb_sbx *s, uint32_t pid, char *msg, size_t msgsz)
{
    char err[512] = "";
    char *json = NULL;
    if (lb_sbx_lock(s, msg, msgsz) != LB_OK)
        return -1;
    int rc = lbsb_proc_list(s->conn, s->sbx_id, &json, err, sizeof err);
    lb_sbx_unlock(s);
    if (rc) {
        snprintf(msg, msgsz, "%s", err);
        return -1;
    }
    cJSON *arr = cJSON_Parse(json);
    free(json);
    int pty = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, arr)
    {
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(p, "pid");
        const cJSON *tag = cJSON_GetObjectItemCaseSensitive(p, "tag");
        if (cJSON_IsNumber(pp) && pp->valuedouble == (double)pid) {
            pty = cJSON_IsString(tag) && !strcmp(tag->valuestring, LBSB_PTY_ARGV0);
            break;
        }
    }
    cJSON_Delete(arr);
    return pty;
}
