/* A tools/call result made into an observation; the contract is
 * mcpc_result.h. */
#include "mcpclient/mcpc_result.h"

#include "common/buf.h"
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lb_mcpc_result_free(lb_mcpc_result *r)
{
    free(r->text);
    for (int i = 0; i < r->n_images; i++)
        free(r->images[i].b64);
    memset(r, 0, sizeof *r);
}

/* Appends s with a blank line before it when text is already there;
 * what passes the cap is cut (truncated). */
static void add(lb_buf *b, lb_mcpc_result *r, const char *s, size_t n)
{
    if (b->len && lb_buf_append_trunc(b, "\n\n", 2))
        r->truncated = 1;
    if (lb_buf_append_trunc(b, s, n))
        r->truncated = 1;
}

static const char *ext_of(const char *mime)
{
    static const char *const map[][2] = {{"image/png", "png"}, {"image/jpeg", "jpg"}, {"image/gif", "gif"},
                                         {"image/webp", "webp"}};
    for (size_t i = 0; mime && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(mime, map[i][0]))
            return map[i][1];
    return "bin";
}

const char *lb_mcpc_image_sniff(const unsigned char *raw, size_t n)
{
    if (n >= 8 && !memcmp(raw, "\x89PNG\r\n\x1a\n", 8))
        return "image/png";
    if (n >= 3 && !memcmp(raw, "\xff\xd8\xff", 3))
        return "image/jpeg";
    if (n >= 6 && (!memcmp(raw, "GIF87a", 6) || !memcmp(raw, "GIF89a", 6)))
        return "image/gif";
    if (n >= 12 && !memcmp(raw, "RIFF", 4) && !memcmp(raw + 8, "WEBP", 4))
        return "image/webp";
    return NULL;
}

static int b64_ok(const char *s)
{
    size_t n = strlen(s);
    return n && n <= LB_MCPC_IMAGE_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == n;
}

int lb_mcpc_result_parse(const cJSON *result, lb_mcpc_result *r, char *err, size_t errsz)
{
    memset(r, 0, sizeof *r);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
    if (!cJSON_IsObject(result) || !cJSON_IsArray(content)) {
        snprintf(err, errsz, "its tools/call result has no \"content\" list");
        return LB_E_INVAL;
    }
    r->is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"));
    lb_buf b;
    lb_buf_init(&b, LB_MCPC_TEXT_MAX);
    const cJSON *c;
    char note[300];
    int rc = LB_OK;
    cJSON_ArrayForEach(c, content)
    {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type"));
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "text"));
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resource");
        const char *rtext = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "text"));
        const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "uri"));
        if (!uri)
            uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "uri"));
        if (!type) {
            add(&b, r, "[a content part without a type]", 31);
        } else if (!strcmp(type, "text") && text) {
            add(&b, r, text, strlen(text));
        } else if (!strcmp(type, "image")) {
            const char *data = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "data"));
            const char *mime = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "mimeType"));
            if (data && b64_ok(data) && r->n_images < LB_MCPC_IMAGES) {
                lb_mcpc_image *im = &r->images[r->n_images];
                if (!(im->b64 = strdup(data))) {
                    rc = LB_E_NOMEM;
                    break;
                }
                snprintf(im->ext, sizeof im->ext, "%s", ext_of(mime));
                r->n_images++;
            } else {
                r->images_dropped++;
            }
        } else if (!strcmp(type, "resource") && rtext) {
            add(&b, r, rtext, strlen(rtext));
        } else {
            /* audio, a binary resource, a link: named, not shown */
            snprintf(note, sizeof note, "[%.20s content%s%.200s not shown]", type, uri ? " " : "", uri ? uri : "");
            lb_utf8_trim_partial(note);
            for (char *q = note; *q; q++)
                if ((unsigned char)*q < 0x20)
                    *q = ' ';
            add(&b, r, note, strlen(note));
        }
    }
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
    if (rc == LB_OK && !b.len && sc) {
        char *t = cJSON_PrintUnformatted(sc);
        if (t)
            add(&b, r, t, strlen(t));
        free(t);
    }
    if (rc != LB_OK) {
        lb_buf_free(&b);
        lb_mcpc_result_free(r);
        snprintf(err, errsz, "out of memory");
        return rc;
    }
    /* every piece was valid UTF-8 (the message was checked); a cut at the cap may not be */
    size_t n = 0;
    char *s = lb_buf_steal(&b, &n);
    if (s && r->truncated)
        lb_utf8_trim_partial(s);
    r->text = s ? s : strdup("");
    if (!r->text) {
        lb_mcpc_result_free(r);
        snprintf(err, errsz, "out of memory");
        return LB_E_NOMEM;
    }
    return LB_OK;
}
