/* The S3 list parser (common/s3_list.c): entries, entities, pages, and
 * every refusal with its sentence. */
#include "common/s3_list.h"
#include "testlib.h"

#include <stdlib.h>

static char keys[8][LB_S3_KEY_MAX + 1];
static uint64_t sizes[8];
static int n;

static int collect(void *ctx, const char *key, uint64_t size)
{
    if (n >= 8)
        return LB_E_TOOBIG;
    snprintf(keys[n], sizeof keys[n], "%s", key);
    sizes[n++] = size;
    return LB_OK;
}

static int collect_all(void *ctx, const char *key, uint64_t size)
{
    return LB_OK;
}

static int parse(const char *doc, int *truncated, char *next, char *why)
{
    n = 0;
    why[0] = '\0';
    return lb_s3_list_parse(doc, strlen(doc), collect, NULL, truncated, next, why, 512);
}

TEST(entries_and_entities)
{
    char next[LB_S3_TOKEN_MAX + 1], why[512];
    int tr = -1;
    CHECK(parse("<ListBucketResult><Contents><Key>a&amp;b&lt;&gt;&quot;&apos;</Key><Size>12</Size></Contents>"
                "<Contents><Key>&#233;&#x65E5;&#x1F600;</Key><Size>0</Size></Contents>"
                "<IsTruncated>false</IsTruncated></ListBucketResult>", &tr, next, why) == LB_OK);
    CHECK(n == 2 && tr == 0);
    CHECK_STR(keys[0], "a&b<>\"'");
    CHECK(sizes[0] == 12);
    CHECK_STR(keys[1], "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80");
}

TEST(pages)
{
    char next[LB_S3_TOKEN_MAX + 1], why[512];
    int tr = 0;
    CHECK(parse("<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents><IsTruncated>true</IsTruncated>"
                "<NextContinuationToken>t/+=&amp;</NextContinuationToken></ListBucketResult>", &tr, next,
                why) == LB_OK);
    CHECK(tr == 1);
    CHECK_STR(next, "t/+=&");
    CHECK(parse("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", &tr, next, why) ==
          LB_E_PROTO);
    CHECK(strstr(why, "no continuation token") != NULL);
    CHECK(parse("<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken></NextContinuationToken>"
                "</ListBucketResult>", &tr, next, why) == LB_E_PROTO);
}

TEST(refusals)
{
    char next[LB_S3_TOKEN_MAX + 1], why[512];
    int tr;
    static const struct { const char *doc; int rc; const char *why; } cases[] = {
        {"<Error/>", LB_E_PROTO, "not an object list"},
        {"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", LB_E_PROTO, "no Key"},
        {"<ListBucketResult><Contents><Key></Key><Size>1</Size></Contents></ListBucketResult>", LB_E_PROTO,
         "empty key"},
        {"<ListBucketResult><Contents><Key>a</Key><Size>1x</Size></Contents></ListBucketResult>", LB_E_PROTO,
         "malformed size"},
        {"<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999</Size></Contents></ListBucketResult>",
         LB_E_PROTO, "malformed size"},
        {"<ListBucketResult><Contents><Key>a&#0;</Key><Size>1</Size></Contents></ListBucketResult>", LB_E_PROTO,
         "entity"},
        {"<ListBucketResult><Contents><Key>a&#xD800;</Key><Size>1</Size></Contents></ListBucketResult>",
         LB_E_PROTO, "entity"},
        {"<ListBucketResult><Contents><Key>a&#x110000;</Key><Size>1</Size></Contents></ListBucketResult>",
         LB_E_PROTO, "entity"},
        {"<ListBucketResult><Contents><Key>a&nbsp;</Key><Size>1</Size></Contents></ListBucketResult>", LB_E_PROTO,
         "entity"},
        {"<ListBucketResult><Contents><Key>a & b</Key><Size>1</Size></Contents></ListBucketResult>", LB_E_PROTO,
         "stray"},
        {"<ListBucketResult><Contents><Key>a</Key><Size>1</Size>", LB_E_PROTO, "ends inside an entry"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = parse(cases[i].doc, &tr, next, why);
        CHECK(rc == cases[i].rc);
        CHECK(strstr(why, cases[i].why) != NULL);
        if (rc != cases[i].rc || !strstr(why, cases[i].why))
            printf("# case %zu: rc %d why %s\n", i, rc, why);
    }
}

TEST(caps)
{
    char next[LB_S3_TOKEN_MAX + 1], why[512];
    int tr;
    /* a key one byte over S3's limit */
    char *doc = malloc(LB_S3_KEY_MAX + 200);
    int off = sprintf(doc, "<ListBucketResult><Contents><Key>");
    memset(doc + off, 'k', LB_S3_KEY_MAX + 1);
    sprintf(doc + off + LB_S3_KEY_MAX + 1, "</Key><Size>1</Size></Contents></ListBucketResult>");
    CHECK(parse(doc, &tr, next, why) == LB_E_TOOBIG);
    CHECK(strstr(why, "longer than 1024 bytes") != NULL);
    free(doc);
    /* more entries than one page may hold */
    size_t cap = (LB_S3_LIST_MAX_ENTRIES + 2) * 48 + 64, len = 0;
    doc = malloc(cap);
    len += (size_t)sprintf(doc, "<ListBucketResult>");
    for (int i = 0; i <= LB_S3_LIST_MAX_ENTRIES; i++)
        len += (size_t)sprintf(doc + len, "<Contents><Key>k</Key><Size>1</Size></Contents>");
    sprintf(doc + len, "</ListBucketResult>");
    n = 0;
    why[0] = '\0';
    /* count with a callback that accepts everything */
    CHECK(lb_s3_list_parse(doc, strlen(doc), collect_all, NULL, &tr, next, why, sizeof why) == LB_E_TOOBIG);
    CHECK(strstr(why, "more than 1000 entries") != NULL);
    free(doc);
    /* the whole document */
    CHECK(lb_s3_list_parse("<ListBucketResult>", LB_S3_LIST_MAX_DOC + 1, collect, NULL, &tr, next, why,
                           sizeof why) == LB_E_TOOBIG);
}

TEST(callback_stops)
{
    char next[LB_S3_TOKEN_MAX + 1], why[512];
    int tr;
    const char *doc = "<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents><Contents><Key>b</Key>"
                      "<Size>1</Size></Contents></ListBucketResult>";
    n = 7; /* one more fits: the second entry's refusal stops the parse with its status */
    CHECK(lb_s3_list_parse(doc, strlen(doc), collect, NULL, &tr, next, why, sizeof why) == LB_E_TOOBIG);
    CHECK(n == 8);
}

TEST(error_code)
{
    char code[32];
    const char *doc = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>m</Message></Error>";
    lb_s3_error_code(doc, strlen(doc), code, sizeof code);
    CHECK_STR(code, "NoSuchKey");
    lb_s3_error_code("<Code>a<b>c</Code>", 18, code, sizeof code);
    CHECK_STR(code, "a");
    lb_s3_error_code("nothing", 7, code, sizeof code);
    CHECK_STR(code, "");
    const char *lng = "<Code>AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA</Code>";
    lb_s3_error_code(lng, strlen(lng), code, 8);
    CHECK_STR(code, "AAAAAAA");
}

int main(void)
{
    RUN(entries_and_entities);
    RUN(pages);
    RUN(refusals);
    RUN(caps);
    RUN(callback_stops);
    RUN(error_code);
    return testlib_done();
}
