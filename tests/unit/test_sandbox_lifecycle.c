/* Unit tests of the sandbox life cycle pieces that need no root: the
 * network-mode setting, the installation tag, the pool's bookkeeping when
 * nothing is ready. (The real pool, TTLs, nat and restarts are tested
 * against a running sandboxd in tests/integration/test_sandbox_lifecycle.py.) */
#include "testlib.h"

#include "common/config.h"
#include "common/status.h"
#include "sandboxd/pool.h"
#include "sandboxd/sandbox_net.h"
#include "sandboxd/stale.h"

#include <stdlib.h>

static int allow(const char *setting, char *msg, size_t msgsz)
{
    snprintf(lb_cfg_mut()->network_allow, sizeof lb_cfg_mut()->network_allow, "%s", setting);
    return lbsd_net_check_config(lb_cfg()->network_allow, msg, msgsz);
}

TEST(network_allow_default_is_none_only)
{
    char msg[256] = "";
    CHECK(allow("none", msg, sizeof msg) == LB_OK);
    CHECK(lbsd_net_allowed(LBSD_NET_NONE));
    CHECK(!lbsd_net_allowed(LBSD_NET_NAT));
    CHECK(!lbsd_net_allowed(LBSD_NET_DEFAULT));
    cJSON *a = lbsd_net_allowed_json();
    char *t = cJSON_PrintUnformatted(a);
    CHECK_STR(t, "[\"none\"]");
    free(t);
    cJSON_Delete(a);
}

TEST(network_allow_lists_and_none_always)
{
    char msg[256] = "";
    CHECK(allow("none,nat", msg, sizeof msg) == LB_OK);
    CHECK(lbsd_net_allowed(LBSD_NET_NAT) && lbsd_net_allowed(LBSD_NET_NONE));
    CHECK(allow(" nat ", msg, sizeof msg) == LB_OK);
    CHECK(lbsd_net_allowed(LBSD_NET_NAT) && lbsd_net_allowed(LBSD_NET_NONE));
    CHECK(allow("", msg, sizeof msg) == LB_OK);
    CHECK(!lbsd_net_allowed(LBSD_NET_NAT) && lbsd_net_allowed(LBSD_NET_NONE));
}

TEST(network_allow_refuses_unknown_modes)
{
    char msg[256] = "";
    CHECK(allow("none,bridge", msg, sizeof msg) == LB_E_INVAL);
    CHECK(strstr(msg, "LLMBOX_NETWORK_ALLOW") && strstr(msg, "bridge"));
    CHECK(allow("default", msg, sizeof msg) == LB_E_INVAL); /* not a mode one can allow */
    allow("none", msg, sizeof msg);
}

TEST(install_tag_is_fnv_of_var_dir)
{
    /* the Python tests compute the same: FNV-1a 32 of the var dir */
    snprintf(lb_cfg_mut()->var_dir, sizeof lb_cfg_mut()->var_dir, "/tmp/x/var");
    lbsd_install_tag_init(lb_cfg()->var_dir);
    const char *t = lbsd_install_tag();
    CHECK(strlen(t) == 15 && !strncmp(t, "llmbox-", 7));
    uint32_t h = 2166136261u;
    for (const char *c = "/tmp/x/var"; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    char want[32];
    snprintf(want, sizeof want, "llmbox-%08x", h);
    CHECK_STR(t, want);
}

TEST(pool_counts_misses_and_other_without_making_anything)
{
    lb_config *cfg = lb_cfg_mut();
    cfg->pool_size = 3;
    snprintf(cfg->pool_images, sizeof cfg->pool_images, "default, other,default,Bad!");
    snprintf(cfg->default_image, sizeof cfg->default_image, "default");
    cfg->sandbox_memory_mib = 2048;
    cfg->sandbox_pids = 512;
    lbsd_pool_init(lb_cfg());
    lbsd_req req;
    memset(&req, 0, sizeof req);
    CHECK(lbsd_pool_take(&req) == NULL); /* fits, nothing ready: a miss */
    snprintf(req.image, sizeof req.image, "other");
    CHECK(lbsd_pool_take(&req) == NULL); /* a miss too */
    req.cpu_milli = 500;
    CHECK(lbsd_pool_take(&req) == NULL); /* its own CPU quota: other */
    req.cpu_milli = 0;
    snprintf(req.image, sizeof req.image, "unpooled");
    CHECK(lbsd_pool_take(&req) == NULL); /* an image without a pool: other */
    CHECK(lbsd_pool_refill_due(0, 0) == -1);   /* no room: nothing to do */
    CHECK(lbsd_pool_refill_due(0, 100) == 0);  /* wants one now */
    cJSON *o = lbsd_pool_json();
    CHECK(cJSON_GetObjectItem(o, "size")->valueint == 6);
    CHECK(cJSON_GetObjectItem(o, "ready")->valueint == 0);
    CHECK(cJSON_GetObjectItem(o, "hits")->valueint == 0);
    CHECK(cJSON_GetObjectItem(o, "misses")->valueint == 2);
    CHECK(cJSON_GetObjectItem(o, "other")->valueint == 2);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "images")) == 2);
    cJSON_Delete(o);
}

TEST(pool_size_zero_disables)
{
    lb_cfg_mut()->pool_size = 0;
    lbsd_pool_init(lb_cfg());
    lbsd_req req;
    memset(&req, 0, sizeof req);
    CHECK(lbsd_pool_take(&req) == NULL);
    CHECK(lbsd_pool_refill_due(0, 100) == -1);
    cJSON *o = lbsd_pool_json();
    CHECK(cJSON_GetObjectItem(o, "size")->valueint == 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "images")) == 0);
    cJSON_Delete(o);
}

int main(void)
{
    LB_IGNORE(lb_config_load(lb_cfg_mut())); /* the checks below say what a bad config did */
    RUN(network_allow_default_is_none_only);
    RUN(network_allow_lists_and_none_always);
    RUN(network_allow_refuses_unknown_modes);
    RUN(install_tag_is_fnv_of_var_dir);
    RUN(pool_counts_misses_and_other_without_making_anything);
    RUN(pool_size_zero_disables);
    return testlib_done();
}
