/* Unit tests for the OCI and docker-archive documents (server/images/
 * oci_json.c): what is taken, what is refused with which sentence, the
 * caps, and the choice of a manifest in a multi-arch index. */
#include "testlib.h"

#include "common/status.h"
#include "images/oci_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D1 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define D2 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define MT_M "application/vnd.oci.image.manifest.v1+json"
#define MT_I "application/vnd.oci.image.index.v1+json"
#define MT_C "application/vnd.oci.image.config.v1+json"
#define MT_L "application/vnd.oci.image.layer.v1.tar+gzip"

static int index_of(const char *json, lb_oci_index *idx, char *msg)
{
    return lb_oci_parse_index(json, strlen(json), idx, msg, 256);
}

TEST(digest_valid_takes_sha256_lowercase_hex_only)
{
    CHECK(lb_oci_digest_valid(D1));
    CHECK(!lb_oci_digest_valid("sha512:0123"));
    CHECK(!lb_oci_digest_valid("sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
    CHECK(!lb_oci_digest_valid(D1 "0"));
    CHECK(!lb_oci_digest_valid("sha256:../../etc/passwd"));
    CHECK(!lb_oci_digest_valid(NULL));
}

TEST(index_picks_linux_amd64_of_a_multiarch_list)
{
    lb_oci_index *idx = malloc(sizeof *idx);
    char msg[256];
    const char *j = "{\"schemaVersion\":2,\"manifests\":["
                    "{\"mediaType\":\"" MT_M "\",\"digest\":\"" D1 "\",\"size\":10,"
                    "\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
                    "{\"mediaType\":\"" MT_M "\",\"digest\":\"" D2 "\",\"size\":11,"
                    "\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
    CHECK((index_of(j, idx, msg)) == (LB_OK));
    CHECK((idx->n) == (2));
    CHECK((lb_oci_index_pick(idx, NULL, msg, sizeof msg)) == (1));
    CHECK_STR(idx->m[1].digest, D2);
    CHECK(((int)idx->m[1].size) == (11));
    free(idx);
}

TEST(index_without_amd64_says_so)
{
    lb_oci_index *idx = malloc(sizeof *idx);
    char msg[256];
    const char *j = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" MT_M "\",\"digest\":\"" D1
                    "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
                    "{\"mediaType\":\"" MT_M "\",\"digest\":\"" D2
                    "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":\"s390x\"}}]}";
    CHECK((index_of(j, idx, msg)) == (LB_OK));
    CHECK((lb_oci_index_pick(idx, NULL, msg, sizeof msg)) == (-1));
    CHECK(strstr(msg, "linux/amd64") != NULL);
    free(idx);
}

TEST(index_picks_by_ref_name_and_takes_a_lone_unplatformed_manifest)
{
    lb_oci_index *idx = malloc(sizeof *idx);
    char msg[256];
    const char *j = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" MT_M "\",\"digest\":\"" D1
                    "\",\"size\":1,\"annotations\":{\"org.opencontainers.image.ref.name\":\"v1\"}}]}";
    CHECK((index_of(j, idx, msg)) == (LB_OK));
    CHECK((lb_oci_index_pick(idx, NULL, msg, sizeof msg)) == (0));
    CHECK((lb_oci_index_pick(idx, "v1", msg, sizeof msg)) == (0));
    CHECK((lb_oci_index_pick(idx, "v2", msg, sizeof msg)) == (-1));
    CHECK(strstr(msg, "v2") != NULL);
    free(idx);
}

TEST(index_refuses_bad_digests_sizes_and_schema)
{
    lb_oci_index *idx = malloc(sizeof *idx);
    char msg[256];
    CHECK((index_of("{\"schemaVersion\":1,\"manifests\":[]}", idx, msg)) == (LB_E_INVAL));
    CHECK(strstr(msg, "schemaVersion 2") != NULL);
    CHECK(index_of("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" MT_M
                       "\",\"digest\":\"md5:00\",\"size\":1}]}", idx, msg) == LB_E_INVAL);
    CHECK(strstr(msg, "sha256") != NULL);
    CHECK(index_of("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" MT_M "\",\"digest\":\"" D1
                       "\",\"size\":-1}]}", idx, msg) == LB_E_INVAL);
    CHECK((index_of("[1,2]", idx, msg)) == (LB_E_INVAL));
    CHECK((index_of("{\"schemaVersion\":2}", idx, msg)) == (LB_E_INVAL));
    free(idx);
}

TEST(index_caps_the_manifests)
{
    lb_oci_index *idx = malloc(sizeof *idx);
    char msg[256];
    char *j = malloc(200 * 160 + 100);
    size_t at = (size_t)sprintf(j, "{\"schemaVersion\":2,\"manifests\":[");
    for (int i = 0; i < LB_OCI_INDEX_MAX + 1; i++)
        at += (size_t)sprintf(j + at, "%s{\"mediaType\":\"" MT_M "\",\"digest\":\"" D1 "\",\"size\":1}", i ? "," : "");
    sprintf(j + at, "]}");
    CHECK((index_of(j, idx, msg)) == (LB_E_TOOBIG));
    free(j);
    free(idx);
}

TEST(manifest_takes_config_and_tar_layers)
{
    lb_oci_manifest *m = malloc(sizeof *m);
    char msg[256];
    const char *j = "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"" MT_C "\",\"digest\":\"" D1
                    "\",\"size\":5},\"layers\":[{\"mediaType\":\"" MT_L "\",\"digest\":\"" D2 "\",\"size\":7}]}";
    CHECK((lb_oci_parse_manifest(j, strlen(j), m, msg, sizeof msg)) == (LB_OK));
    CHECK((m->nlayers) == (1));
    CHECK_STR(m->config.digest, D1);
    CHECK_STR(m->layers[0].digest, D2);
    free(m);
}

TEST(manifest_refuses_foreign_layers_and_none)
{
    lb_oci_manifest *m = malloc(sizeof *m);
    char msg[256];
    const char *j = "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"" MT_C "\",\"digest\":\"" D1
                    "\",\"size\":5},\"layers\":[{\"mediaType\":"
                    "\"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip\",\"digest\":\"" D2 "\",\"size\":7}]}";
    CHECK((lb_oci_parse_manifest(j, strlen(j), m, msg, sizeof msg)) == (LB_E_INVAL));
    CHECK(strstr(msg, "not a tar layer") != NULL);
    const char *k = "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"" MT_C "\",\"digest\":\"" D1
                    "\",\"size\":5},\"layers\":[]}";
    CHECK((lb_oci_parse_manifest(k, strlen(k), m, msg, sizeof msg)) == (LB_E_INVAL));
    CHECK(strstr(msg, "no layers") != NULL);
    free(m);
}

TEST(config_takes_env_workdir_user_and_refuses_bad_ones)
{
    lb_oci_config c;
    char msg[256];
    const char *j = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"A=1\",\"PATH=/x\"],"
                    "\"WorkingDir\":\"/testbed\",\"User\":\"app:staff\",\"Cmd\":[\"bash\"]},"
                    "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\"]}}";
    CHECK((lb_oci_parse_config(j, strlen(j), &c, msg, sizeof msg)) == (LB_OK));
    CHECK((c.nenv) == (2));
    CHECK_STR(c.env[1], "PATH=/x");
    CHECK_STR(c.workdir, "/testbed");
    CHECK_STR(c.user, "app:staff");
    CHECK((c.ndiff) == (1));
    lb_oci_config_free(&c);
    const char *bad_env = "{\"config\":{\"Env\":[\"=nothing\"]},\"rootfs\":{\"diff_ids\":[]}}";
    CHECK((lb_oci_parse_config(bad_env, strlen(bad_env), &c, msg, sizeof msg)) == (LB_E_INVAL));
    lb_oci_config_free(&c);
    const char *rel = "{\"config\":{\"WorkingDir\":\"testbed\"},\"rootfs\":{\"diff_ids\":[]}}";
    CHECK((lb_oci_parse_config(rel, strlen(rel), &c, msg, sizeof msg)) == (LB_E_INVAL));
    CHECK(strstr(msg, "WorkingDir") != NULL);
    lb_oci_config_free(&c);
    const char *win = "{\"os\":\"windows\",\"rootfs\":{\"diff_ids\":[]}}";
    CHECK((lb_oci_parse_config(win, strlen(win), &c, msg, sizeof msg)) == (LB_E_INVAL));
    lb_oci_config_free(&c);
    const char *notutf8 = "{\"config\":{\"User\":\"\xff\"},\"rootfs\":{\"diff_ids\":[]}}";
    CHECK((lb_oci_parse_config(notutf8, strlen(notutf8), &c, msg, sizeof msg)) == (LB_E_INVAL));
    lb_oci_config_free(&c);
}

TEST(docker_manifest_names_clean_relative_files)
{
    lb_docker_manifest *d = malloc(sizeof *d);
    char msg[256];
    const char *j = "[{\"Config\":\"abc.json\",\"RepoTags\":[\"team/x:1\"],\"Layers\":[\"l1/layer.tar\",\"l2.tar\"]}]";
    CHECK((lb_docker_parse_manifest(j, strlen(j), d, msg, sizeof msg)) == (LB_OK));
    CHECK_STR(d->config, "abc.json");
    CHECK_STR(d->repo_tag, "team/x:1");
    CHECK((d->nlayers) == (2));
    CHECK_STR(d->layers[0], "l1/layer.tar");
    const char *evil = "[{\"Config\":\"../../etc/passwd\",\"Layers\":[\"a\"]}]";
    CHECK((lb_docker_parse_manifest(evil, strlen(evil), d, msg, sizeof msg)) == (LB_E_INVAL));
    const char *abs = "[{\"Config\":\"c\",\"Layers\":[\"/etc/shadow\"]}]";
    CHECK((lb_docker_parse_manifest(abs, strlen(abs), d, msg, sizeof msg)) == (LB_E_INVAL));
    free(d);
}

int main(void)
{
    RUN(digest_valid_takes_sha256_lowercase_hex_only);
    RUN(index_picks_linux_amd64_of_a_multiarch_list);
    RUN(index_without_amd64_says_so);
    RUN(index_picks_by_ref_name_and_takes_a_lone_unplatformed_manifest);
    RUN(index_refuses_bad_digests_sizes_and_schema);
    RUN(index_caps_the_manifests);
    RUN(manifest_takes_config_and_tar_layers);
    RUN(manifest_refuses_foreign_layers_and_none);
    RUN(config_takes_env_workdir_user_and_refuses_bad_ones);
    RUN(docker_manifest_names_clean_relative_files);
    return testlib_done();
}
