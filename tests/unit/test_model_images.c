/* Images of MCP tool results sent to the model: the Anthropic request
 * body's tool_result with image blocks (model_anthropic.c), the store of
 * their bytes and its caps (obs_images.c), and the check of an image's
 * bytes against the types a model takes (mcpc_result.c). */
#include "testlib.h"

#include "agent/model_http.h"
#include "agent/obs_images.h"
#include "common/config.h"
#include "common/status.h"
#include "mcpclient/mcpc_result.h"

#include <stdlib.h>
#include <string.h>

#define PNG_B64 "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

static void anthropic_model(lb_model *m)
{
    char err[256];
    setenv("LLMBOX_LLM_PROVIDER", "anthropic", 1);
    setenv("LLMBOX_LLM_URL", "http://127.0.0.1:9/v1/", 1);
    setenv("ANTHROPIC_API_KEY", "sk-ant-test", 1);
    setenv("LLMBOX_LLM_MODEL", "claude", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    CHECK(lb_model_init(m, lb_cfg(), NULL, NULL, err, sizeof err) == LB_OK);
}

static const char *const CONV =
    "[{\"role\":\"user\",\"content\":\"look\"},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"tu1\",\"type\":\"function\","
    "  \"function\":{\"name\":\"shot__take\",\"arguments\":\"{}\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"tu1\",\"content\":\"[an image (70 bytes) was written to /tmp/mcp/shot-1-1.png]\","
    "  \"images\":[{\"path\":\"/tmp/mcp/shot-1-1.png\",\"media_type\":\"image/png\"}]}]";

/* the content of the tool_result in the last user turn of body */
static const cJSON *tool_result_content(const cJSON *b)
{
    const cJSON *ms = cJSON_GetObjectItem(b, "messages");
    const cJSON *u = cJSON_GetArrayItem(ms, cJSON_GetArraySize(ms) - 1);
    const cJSON *tr = cJSON_GetArrayItem(cJSON_GetObjectItem(u, "content"), 0);
    CHECK_STR(cJSON_GetObjectItem(tr, "type")->valuestring, "tool_result");
    return cJSON_GetObjectItem(tr, "content");
}

TEST(anthropic_tool_result_carries_the_image)
{
    lb_model m;
    anthropic_model(&m);
    lb_obs_images st = {0};
    CHECK(lb_obs_images_add(&st, "/tmp/mcp/shot-1-1.png", "image/png", PNG_B64) == LB_OK);
    m.images = &st;
    cJSON *msgs = cJSON_Parse(CONV);
    char *body = lb_model_request_body(&m, msgs, NULL);
    cJSON *b = cJSON_Parse(body);
    const cJSON *c = tool_result_content(b);
    CHECK(cJSON_IsArray(c) && cJSON_GetArraySize(c) == 2);
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(c, 0), "type")->valuestring, "text");
    CHECK(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(c, 0), "text")->valuestring, "/tmp/mcp/shot-1-1.png") != NULL);
    const cJSON *im = cJSON_GetArrayItem(c, 1);
    CHECK_STR(cJSON_GetObjectItem(im, "type")->valuestring, "image");
    const cJSON *src = cJSON_GetObjectItem(im, "source");
    CHECK_STR(cJSON_GetObjectItem(src, "type")->valuestring, "base64");
    CHECK_STR(cJSON_GetObjectItem(src, "media_type")->valuestring, "image/png");
    CHECK_STR(cJSON_GetObjectItem(src, "data")->valuestring, PNG_B64);
    /* the conversation (what the trajectory keeps) names the image, no bytes */
    char *conv = cJSON_PrintUnformatted(msgs);
    CHECK(strstr(conv, PNG_B64) == NULL);
    free(conv);
    cJSON_Delete(b);
    free(body);

    /* an image the store let go: the text alone, as before */
    lb_obs_images_free(&st);
    body = lb_model_request_body(&m, msgs, NULL);
    b = cJSON_Parse(body);
    c = tool_result_content(b);
    CHECK(cJSON_IsString(c));
    CHECK(strstr(body, "\"image\"") == NULL);
    cJSON_Delete(b);
    free(body);
    cJSON_Delete(msgs);
    m.images = NULL;
    lb_model_free(&m);
}

TEST(store_caps_let_the_oldest_go)
{
    lb_obs_images st = {0};
    char path[64];
    for (int i = 0; i < LB_OBS_IMAGES_MAX + 3; i++) {
        snprintf(path, sizeof path, "/tmp/mcp/s-%d-1.png", i);
        CHECK(lb_obs_images_add(&st, path, "image/png", PNG_B64) == LB_OK);
    }
    const char *mt = NULL;
    CHECK(cJSON_GetArraySize(st.by_path) == LB_OBS_IMAGES_MAX);
    CHECK(lb_obs_images_get(&st, "/tmp/mcp/s-0-1.png", &mt) == NULL);
    CHECK(lb_obs_images_get(&st, "/tmp/mcp/s-2-1.png", &mt) == NULL);
    CHECK(lb_obs_images_get(&st, path, &mt) != NULL);
    CHECK_STR(mt, "image/png");
    CHECK(st.bytes == LB_OBS_IMAGES_MAX * strlen(PNG_B64));

    /* bytes: a big one pushes out as many as it needs */
    size_t big = LB_OBS_IMAGES_BYTES - 10;
    char *b64 = malloc(big + 1);
    CHECK(b64 != NULL);
    memset(b64, 'A', big);
    b64[big] = 0;
    CHECK(lb_obs_images_add(&st, "/tmp/mcp/big-1-1.png", "image/png", b64) == LB_OK);
    CHECK(st.bytes <= LB_OBS_IMAGES_BYTES);
    CHECK(cJSON_GetArraySize(st.by_path) == 1);
    free(b64);
    /* one alone over the cap is refused and keeps nothing of it */
    b64 = malloc(LB_OBS_IMAGES_BYTES + 2);
    CHECK(b64 != NULL);
    memset(b64, 'A', LB_OBS_IMAGES_BYTES + 1);
    b64[LB_OBS_IMAGES_BYTES + 1] = 0;
    CHECK(lb_obs_images_add(&st, "/tmp/mcp/huge-1-1.png", "image/png", b64) == LB_E_INVAL);
    CHECK(lb_obs_images_get(&st, "/tmp/mcp/huge-1-1.png", &mt) == NULL);
    free(b64);
    /* the same path again replaces, and the count of bytes follows */
    CHECK(lb_obs_images_add(&st, "/tmp/mcp/big-1-1.png", "image/gif", "R0lGODlh") == LB_OK);
    CHECK(st.bytes == 8);
    CHECK(lb_obs_images_get(&st, "/tmp/mcp/big-1-1.png", &mt) != NULL);
    CHECK_STR(mt, "image/gif");
    CHECK(lb_obs_images_get(NULL, "/tmp/mcp/big-1-1.png", &mt) == NULL);
    lb_obs_images_free(&st);
}

TEST(sniff_takes_only_the_four_types)
{
    CHECK_STR(lb_mcpc_image_sniff((const unsigned char *)"\x89PNG\r\n\x1a\n....", 12), "image/png");
    CHECK_STR(lb_mcpc_image_sniff((const unsigned char *)"\xff\xd8\xff\xe0", 4), "image/jpeg");
    CHECK_STR(lb_mcpc_image_sniff((const unsigned char *)"GIF89a", 6), "image/gif");
    CHECK_STR(lb_mcpc_image_sniff((const unsigned char *)"RIFF\x10\0\0\0WEBPVP8 ", 16), "image/webp");
    CHECK(lb_mcpc_image_sniff((const unsigned char *)"<svg xmlns=", 11) == NULL);
    CHECK(lb_mcpc_image_sniff((const unsigned char *)"\x89PNG", 4) == NULL); /* cut short */
    CHECK(lb_mcpc_image_sniff((const unsigned char *)"RIFF\x10\0\0\0WAVE", 12) == NULL);
    CHECK(lb_mcpc_image_sniff((const unsigned char *)"", 0) == NULL);
}

int main(void)
{
    RUN(anthropic_tool_result_carries_the_image);
    RUN(store_caps_let_the_oldest_go);
    RUN(sniff_takes_only_the_four_types);
    return testlib_done();
}
