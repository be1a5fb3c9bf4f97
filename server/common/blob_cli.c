/* `llmbox blob`: the artifact store from the command line, for operators
 * (is the bucket reachable with these keys?) and for the tests, which
 * drive the same lb_blob_* calls the service makes. */
#include "common/blob_cli.h"

#include <stdio.h>
#include <string.h>

#include "common/blobstore.h"
#include "common/config.h"
#include "common/util.h"

#define CLI_MAX_KEYS 100000

static void usage(FILE *f)
{
    fprintf(f, "usage: llmbox blob <command>\n"
               "  where               the store in use (local folder or s3://bucket)\n"
               "  put KEY FILE        store FILE as KEY\n"
               "  get KEY FILE [--range A-B|A-]\n"
               "                      fetch KEY (or bytes A..B of it) into FILE, atomically\n"
               "  head KEY            print the size of KEY\n"
               "  rm KEY              delete KEY\n"
               "  ls [PREFIX]         print \"SIZE KEY\" for every object under the folder PREFIX\n"
               "  push DIR PREFIX     store every file under DIR as PREFIX/<path>\n"
               "  pull PREFIX DIR     fetch every object under PREFIX into DIR/<path>\n"
               "  mkbucket            create the bucket (S3 only; an existing one is fine)\n");
}

static int print_one(void *ctx, const char *key, uint64_t size)
{
    printf("%llu %s\n", (unsigned long long)size, key);
    return LB_OK;
}

static int parse_range(const char *s, int64_t *off, int64_t *len)
{
    const char *dash = strchr(s, '-');
    long long a, b;
    char first[32];
    if (!dash || (size_t)(dash - s) >= sizeof first || dash == s)
        return LB_E_INVAL;
    memcpy(first, s, (size_t)(dash - s));
    first[dash - s] = '\0';
    if (lb_parse_ll(first, 0, INT64_MAX / 2, &a) != LB_OK)
        return LB_E_INVAL;
    *off = a;
    *len = -1;
    if (!dash[1])
        return LB_OK;
    if (lb_parse_ll(dash + 1, a, INT64_MAX / 2, &b) != LB_OK)
        return LB_E_INVAL;
    *len = b - a + 1;
    return LB_OK;
}

int lb_blob_main(int argc, char **argv, const lb_config *cfg)
{
    char why[2048] = "", where[512];
    lb_blobstore b;
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    int rc = lb_blob_open(cfg, &b, why, sizeof why);
    if (rc != LB_OK) {
        fprintf(stderr, "llmbox blob: the configuration: %s\n", why);
        return 1;
    }
    const char *cmd = argv[1];
    int n = 0;
    if (!strcmp(cmd, "where") && argc == 2) {
        printf("%s\n", lb_blob_where(&b, where, sizeof where));
    } else if (!strcmp(cmd, "put") && argc == 4) {
        rc = lb_blob_put_file(&b, argv[2], argv[3], cfg->max_output_bytes, why, sizeof why);
    } else if (!strcmp(cmd, "get") && (argc == 4 || (argc == 6 && !strcmp(argv[4], "--range")))) {
        int64_t off = 0, len = -1;
        if (argc == 6 && parse_range(argv[5], &off, &len) != LB_OK) {
            fprintf(stderr, "llmbox blob: --range must be A-B or A- (bytes, from 0)\n");
            return 2;
        }
        rc = lb_blob_get_file(&b, argv[2], argv[3], off, len, cfg->max_output_bytes, why, sizeof why);
    } else if (!strcmp(cmd, "head") && argc == 3) {
        uint64_t size = 0;
        rc = lb_blob_head(&b, argv[2], &size, why, sizeof why);
        if (rc == LB_OK)
            printf("%llu\n", (unsigned long long)size);
    } else if (!strcmp(cmd, "rm") && argc == 3) {
        rc = lb_blob_delete(&b, argv[2], why, sizeof why);
    } else if (!strcmp(cmd, "ls") && argc <= 3) {
        rc = lb_blob_list(&b, argc == 3 ? argv[2] : "", CLI_MAX_KEYS, print_one, NULL, why, sizeof why);
    } else if (!strcmp(cmd, "push") && argc == 4) {
        rc = lb_blob_put_tree(&b, argv[3], argv[2], cfg->max_output_files, cfg->max_output_bytes, &n, why,
                              sizeof why);
        if (rc == LB_OK)
            printf("%d files\n", n);
    } else if (!strcmp(cmd, "pull") && argc == 4) {
        rc = lb_blob_get_tree(&b, argv[2], argv[3], cfg->max_output_files, cfg->max_output_bytes, &n, why,
                              sizeof why);
        if (rc == LB_OK)
            printf("%d files\n", n);
    } else if (!strcmp(cmd, "mkbucket") && argc == 2) {
        if (!b.is_s3) {
            fprintf(stderr, "llmbox blob: no bucket to create: s3_bucket is not set\n");
            return 1;
        }
        rc = lb_s3_create_bucket(&b.s3, why, sizeof why);
    } else {
        usage(stderr);
        return 2;
    }
    if (rc != LB_OK) {
        fprintf(stderr, "llmbox blob: %s (%s)\n", why[0] ? why : lb_strerror(rc), lb_strerror(rc));
        return 1;
    }
    return 0;
}
