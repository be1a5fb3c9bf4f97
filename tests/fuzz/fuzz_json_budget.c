/* libFuzzer target for the budget of client JSON bodies
 * (lb_json_prescan and lb_json_parse_checked, server/web/req_body.c): the
 * bytes are a request body, hostile. The first byte picks a small budget
 * (1..64 values, 1..8 levels) so the limits are met often; the rest is the
 * text.
 *
 * Promises: the pre-scan never reads past the text (ASan) and its count
 * is an upper bound of what cJSON builds for the same text, also when
 * cJSON gives up half-way (checked with a counting allocator: a parse of
 * a text the pre-scan passed makes at most 3 allocations per counted
 * value: a node, its key and its string); a text over the budget is
 * refused before cJSON allocates anything, with a sentence naming the
 * budget (or the UTF-8 / NUL rule checked before it); an accepted value has at most max values and max levels; every
 * refusal has a non-empty sentence. */
#include "common/status.h"
#include "web/req_body.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t allocs;

static void *count_malloc(size_t n)
{
    allocs++;
    return malloc(n);
}

static size_t nodes(const cJSON *j, int depth, int *deepest)
{
    if (depth > *deepest)
        *deepest = depth;
    size_t n = 1;
    for (const cJSON *c = j->child; c; c = c->next)
        n += nodes(c, depth + (cJSON_IsArray(c) || cJSON_IsObject(c)), deepest);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int hooked;
    if (!hooked) {
        cJSON_Hooks h = {count_malloc, free};
        cJSON_InitHooks(&h);
        hooked = 1;
    }
    if (size < 1)
        return 0;
    size_t max_values = 1 + (data[0] & 63);
    int max_depth = 1 + ((data[0] >> 6) & 3) * 2 + 1; /* 2, 4, 6, 8 */
    const char *s = (const char *)data + 1;
    size_t n = size - 1;

    lb_json_scan sc;
    int prc = lb_json_prescan(s, n, max_values, max_depth, &sc);
    if (prc == LB_OK && (sc.values > max_values || sc.depth > max_depth))
        __builtin_trap();
    if (prc != LB_OK && prc != LB_E_TOOBIG)
        __builtin_trap();

    /* cJSON on the raw text, whatever the pre-scan said: what it allocates
     * is bounded by the count of a text the pre-scan passed */
    if (prc == LB_OK) {
        lb_json_scan all;
        LB_IGNORE(lb_json_prescan(s, n, (size_t)-1, 256, &all)); /* only its counts matter here */
        allocs = 0;
        cJSON *j = cJSON_ParseWithLength(s, n);
        if (allocs > 3 * all.values + 1)
            __builtin_trap();
        if (j) {
            int deepest = cJSON_IsArray(j) || cJSON_IsObject(j);
            if (nodes(j, deepest, &deepest) > all.values)
                __builtin_trap();
        }
        cJSON_Delete(j);
    }

    char msg[400] = "";
    int rc = 0;
    allocs = 0;
    cJSON *j = lb_json_parse_checked(s, n, "request", max_values, max_depth, &rc, msg, sizeof msg);
    if (j) {
        int deepest = cJSON_IsArray(j) || cJSON_IsObject(j);
        if (prc != LB_OK || nodes(j, deepest, &deepest) > max_values || deepest > max_depth)
            __builtin_trap();
        cJSON_Delete(j);
    } else {
        if (!msg[0] || (rc != LB_E_INVAL && rc != LB_E_NOMEM))
            __builtin_trap();
        /* over the budget: refused before cJSON allocated anything, for
         * the budget unless an earlier check (UTF-8, NUL) refused first */
        if (prc == LB_E_TOOBIG &&
            (allocs != 0 || (!strstr(msg, "budget") && !strstr(msg, "UTF-8") && !strstr(msg, "NUL"))))
            __builtin_trap();
    }
    return 0;
}
