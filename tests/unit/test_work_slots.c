/* Unit tests for the places of long work in request threads
 * (server/web/work_slots.h): folder bundles and E2B port relays take them.
 * The HTTP side is tests/security/test_web_exhaustion.py. */
#include "testlib.h"

#include "common/status.h"
#include "web/work_slots.h"

#include <stdio.h>
#include <string.h>

TEST(per_key_then_total)
{
    static lb_slots s = LB_SLOTS_INIT;
    CHECK(lb_slots_take(&s, 3, 2, "u:alice") == LB_OK);
    CHECK(lb_slots_take(&s, 3, 2, "u:alice") == LB_OK);
    CHECK(lb_slots_take(&s, 3, 2, "u:alice") == LB_E_TOOBIG);
    CHECK(lb_slots_count(&s, "u:alice") == 2);
    CHECK(lb_slots_take(&s, 3, 2, "u:bob") == LB_OK);
    /* three held: the total is reached whoever asks */
    CHECK(lb_slots_take(&s, 3, 2, "u:carol") == LB_E_BUSY);
    CHECK(lb_slots_count(&s, NULL) == 3);
    lb_slots_release(&s, "u:alice");
    CHECK(lb_slots_take(&s, 3, 2, "u:carol") == LB_OK);
    lb_slots_release(&s, "u:alice");
    lb_slots_release(&s, "u:bob");
    lb_slots_release(&s, "u:carol");
    CHECK(lb_slots_count(&s, NULL) == 0);
    lb_slots_release(&s, "u:nobody"); /* never taken: no effect */
    CHECK(lb_slots_count(&s, NULL) == 0 && lb_slots_count(&s, "u:nobody") == 0);
}

TEST(settings_below_one_still_allow_one)
{
    static lb_slots s = LB_SLOTS_INIT;
    CHECK(lb_slots_take(&s, 0, 0, "s:x") == LB_OK);
    CHECK(lb_slots_take(&s, 0, 0, "s:y") == LB_E_BUSY);
    lb_slots_release(&s, "s:x");
}

TEST(many_keys_up_to_the_table)
{
    static lb_slots s = LB_SLOTS_INIT;
    char key[LB_SLOT_KEY_MAX];
    int ok = 0;
    /* a total above the table is the table */
    for (int i = 0; i < LB_SLOTS_MAX + 10; i++) {
        snprintf(key, sizeof key, "a:10.0.%d.%d", i / 256, i % 256);
        ok += lb_slots_take(&s, 100000, 1, key) == LB_OK;
    }
    CHECK(ok == LB_SLOTS_MAX);
    CHECK(lb_slots_count(&s, NULL) == LB_SLOTS_MAX);
    /* freed entries are found again */
    lb_slots_release(&s, "a:10.0.0.7");
    CHECK(lb_slots_take(&s, 100000, 1, "u:new") == LB_OK);
    CHECK(lb_slots_count(&s, "u:new") == 1);
}

int main(void)
{
    RUN(per_key_then_total);
    RUN(settings_below_one_still_allow_one);
    RUN(many_keys_up_to_the_table);
    return testlib_done();
}
