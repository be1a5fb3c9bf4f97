/* `llmbox image import|ls|rm|gc` (image_cli.h). */
#include "images/image_cli.h"

#include "common/image_ref.h"
#include "images/image_admin.h"
#include "images/import.h"

#include <stdio.h>
#include <string.h>

static const char *const g_cmds[] = {"import", "ls", "rm", "gc"};

int lb_image_cli_handles(const char *sub)
{
    for (size_t i = 0; sub && i < sizeof g_cmds / sizeof g_cmds[0]; i++)
        if (!strcmp(sub, g_cmds[i]))
            return 1;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: llmbox image import FILE|DIR [NAME]  a docker-archive or oci-archive tarball, or an "
                    "OCI image layout\n"
                    "       llmbox image ls [--json]            the images, their disk use and users\n"
                    "       llmbox image rm NAME                removes an image no sandbox or pool uses\n"
                    "       llmbox image gc                     removes the layers no image references\n");
    return 2;
}

static void mib(char *out, size_t outsz, double bytes)
{
    snprintf(out, outsz, "%.1f MiB", bytes / 1048576.0);
}

static int cmd_ls(const lb_config *cfg, int json)
{
    uint64_t total = 0;
    cJSON *l = lb_image_list_json(cfg, &total, 1);
    if (!l) {
        fprintf(stderr, "llmbox image ls: out of memory\n");
        return 1;
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "images", l);
        cJSON_AddNumberToObject(o, "layers_bytes", (double)total);
        char *s = cJSON_Print(o);
        if (s)
            printf("%s\n", s);
        cJSON_free(s);
        cJSON_Delete(o);
        return s ? 0 : 1;
    }
    printf("%-48s %-11s %6s %12s %12s  %s\n", "NAME", "KIND", "LAYERS", "DISK", "SHARED", "USED BY");
    const cJSON *e;
    cJSON_ArrayForEach(e, l) {
        const char *kind = cJSON_GetObjectItem(e, "kind")->valuestring;
        char disk[32] = "-", shared[32] = "-", used[64] = "";
        if (!strcmp(kind, "layered")) {
            mib(disk, sizeof disk, cJSON_GetObjectItem(e, "bytes")->valuedouble);
            mib(shared, sizeof shared, cJSON_GetObjectItem(e, "shared_bytes")->valuedouble);
        }
        const cJSON *nsb = cJSON_GetObjectItem(e, "sandboxes");
        char sbs[32] = "";
        if (cJSON_IsTrue(cJSON_GetObjectItem(e, "in_use")))
            snprintf(sbs, sizeof sbs, "%d sandbox%s ", cJSON_IsNumber(nsb) ? nsb->valueint : 0,
                     cJSON_IsNumber(nsb) && nsb->valueint == 1 ? "" : "es");
        snprintf(used, sizeof used, "%s%s%s", sbs,
                 cJSON_IsTrue(cJSON_GetObjectItem(e, "pool")) ? "pool " : "",
                 cJSON_IsTrue(cJSON_GetObjectItem(e, "default")) ? "default" : "");
        const cJSON *nl = cJSON_GetObjectItem(e, "layers");
        printf("%-48s %-11s %6d %12s %12s  %s\n", cJSON_GetObjectItem(e, "name")->valuestring, kind,
               cJSON_IsNumber(nl) ? nl->valueint : 1, disk, shared, used);
    }
    char t[32];
    mib(t, sizeof t, (double)total);
    printf("layers on disk, each counted once: %s\n", t);
    cJSON_Delete(l);
    return 0;
}

int lb_image_main(int argc, char **argv, const lb_config *cfg)
{
    char msg[1536] = "";
    if (argc < 2)
        return usage();
    const char *cmd = argv[1];
    if (!strcmp(cmd, "import")) {
        if (argc < 3 || argc > 4)
            return usage();
        char canon[LB_IMAGE_REF_MAX + 8];
        int rc = lb_image_import_path(cfg, argv[2], argc == 4 ? argv[3] : NULL, canon, sizeof canon, msg,
                                      sizeof msg);
        if (rc != LB_OK) {
            fprintf(stderr, "llmbox image import: %s\n", msg[0] ? msg : lb_strerror(rc));
            return 1;
        }
        printf("imported %s\n", canon);
        return 0;
    }
    if (!strcmp(cmd, "ls"))
        return argc > 3 || (argc == 3 && strcmp(argv[2], "--json") != 0) ? usage() : cmd_ls(cfg, argc == 3);
    if (!strcmp(cmd, "rm")) {
        if (argc != 3)
            return usage();
        int rc = lb_image_rm(cfg, argv[2], msg, sizeof msg);
        if (rc != LB_OK) {
            fprintf(stderr, "llmbox image rm: %s\n", msg[0] ? msg : lb_strerror(rc));
            return 1;
        }
        printf("removed %s (its layers go at the next llmbox image gc)\n", argv[2]);
        return 0;
    }
    if (!strcmp(cmd, "gc")) {
        if (argc != 2)
            return usage();
        uint64_t freed = 0;
        int n = 0;
        int rc = lb_image_gc(cfg, &freed, &n, msg, sizeof msg);
        if (rc != LB_OK) {
            fprintf(stderr, "llmbox image gc: %s\n", msg[0] ? msg : lb_strerror(rc));
            return 1;
        }
        printf("removed %d layer(s), %.1f MiB\n", n, (double)freed / 1048576.0);
        return 0;
    }
    return usage();
}
