/* Unit tests for several nodes's sandbox ids with the node prefix
 * (server/common/node_id.c) and which node holds an id
 * (server/sbxapi/sandbox_node.c). The HTTP side, through HAProxy, is
 * tests/integration/test_node_ids.py. */
#include "testlib.h"

#include "common/node_id.h"
#include "common/status.h"
#include "sbxapi/sandbox_node.h"

#include <stdio.h>
#include <string.h>

#define HEX "0123456789abcdef0123456789abcdef"

TEST(valid_ids)
{
    CHECK(lb_node_id_valid(HEX));
    CHECK(lb_node_id_valid("n1." HEX));
    CHECK(lb_node_id_valid("a." HEX) && lb_node_id_valid("web-7." HEX));
    char name63[64], id[200];
    memset(name63, 'a', 63);
    name63[63] = '\0';
    snprintf(id, sizeof id, "%s.%s", name63, HEX);
    CHECK(strlen(id) == LB_NODE_ID_MAX && lb_node_id_valid(id));
    snprintf(id, sizeof id, "%s%s.%s", name63, "b", HEX); /* a name of 64 */
    CHECK(!lb_node_id_valid(id));
}

TEST(invalid_ids)
{
    CHECK(!lb_node_id_valid(NULL) && !lb_node_id_valid("") && !lb_node_id_valid("."));
    CHECK(!lb_node_id_valid(HEX "0") && !lb_node_id_valid("0123456789abcdef0123456789abcde"));
    CHECK(!lb_node_id_valid("0123456789ABCDEF0123456789abcdef"));
    CHECK(!lb_node_id_valid("." HEX));            /* an empty name */
    CHECK(!lb_node_id_valid("-n1." HEX));         /* a name starting with '-' */
    CHECK(!lb_node_id_valid("N1." HEX));          /* upper case */
    CHECK(!lb_node_id_valid("n_1." HEX) && !lb_node_id_valid("n 1." HEX) && !lb_node_id_valid("n/1." HEX));
    CHECK(!lb_node_id_valid("a.b." HEX));         /* two dots */
    CHECK(!lb_node_id_valid("n1." HEX "."));
    CHECK(!lb_node_id_valid("n1." HEX "0") && !lb_node_id_valid("n1.0123456789abcdef"));
    CHECK(!lb_node_id_valid(HEX ".n1"));          /* the other way round */
    CHECK(!lb_node_id_valid("n1..") && !lb_node_id_valid("n1.g123456789abcdef0123456789abcdef"));
}

TEST(node_of_an_id)
{
    char node[LB_NODE_ID_NAME_MAX + 1] = "x";
    CHECK(lb_node_id_node("n1." HEX, node, sizeof node) && !strcmp(node, "n1"));
    CHECK(lb_node_id_node(HEX, node, sizeof node) && !strcmp(node, ""));
    strcpy(node, "x");
    CHECK(!lb_node_id_node("n1.x", node, sizeof node) && !strcmp(node, ""));
}

TEST(new_ids)
{
    char a[LB_NODE_ID_MAX + 1], b[LB_NODE_ID_MAX + 1];
    CHECK(lb_node_id_new(NULL, a, sizeof a) == LB_OK && strlen(a) == 32 && lb_node_id_valid(a));
    CHECK(lb_node_id_new("", b, sizeof b) == LB_OK && strlen(b) == 32 && strcmp(a, b));
    CHECK(lb_node_id_new("n1", a, sizeof a) == LB_OK && !strncmp(a, "n1.", 3) && strlen(a) == 35 &&
          lb_node_id_valid(a));
    char node[LB_NODE_ID_NAME_MAX + 1];
    CHECK(lb_node_id_node(a, node, sizeof node) && !strcmp(node, "n1"));
    CHECK(lb_node_id_new("N1", a, sizeof a) == LB_E_INVAL && lb_node_id_new("a.b", a, sizeof a) == LB_E_INVAL);
    CHECK(lb_node_id_new("n1", a, 35) == LB_E_INVAL); /* no room for the NUL */
    CHECK(lb_node_id_new("n1", a, 36) == LB_OK);
}

TEST(e2b_host_names)
{
    char id[LB_NODE_ID_MAX + 1];
    int port = 0;
    const char *h = "49983-n1." HEX ".e2b.example";
    CHECK(lb_node_id_host(h, strlen(h), "e2b.example", id, sizeof id, &port) && port == 49983 &&
          !strcmp(id, "n1." HEX));
    h = "8080-" HEX ".E2B.example:443"; /* the URL's port is ignored, the domain's case too */
    CHECK(lb_node_id_host(h, strlen(h), "e2b.example", id, sizeof id, &port) && port == 8080 && !strcmp(id, HEX));
    /* without a domain: the labels that make an id */
    h = "49983-n1." HEX ".e2b.example";
    CHECK(lb_node_id_host(h, strlen(h), "", id, sizeof id, &port) && !strcmp(id, "n1." HEX));
    h = "49983-" HEX ".e2b.example";
    CHECK(lb_node_id_host(h, strlen(h), NULL, id, sizeof id, &port) && !strcmp(id, HEX));
    h = "49983-" HEX;
    CHECK(lb_node_id_host(h, strlen(h), NULL, id, sizeof id, &port) && !strcmp(id, HEX));
    /* not an id, a bad port, another domain, a label too many */
    const char *bad[] = {
        "49983-n1.e2b.example", "49983-n1.0123.e2b.example", "0-" HEX ".e2b.example", "65536-" HEX ".e2b.example",
        "123456-" HEX ".e2b.example", "-" HEX ".e2b.example", "49983" HEX ".e2b.example", "49983-" HEX ".evil",
        "49983-x.n1." HEX ".e2b.example", "49983-N1." HEX ".e2b.example", "49983-" HEX "0.e2b.example",
        "49983-" HEX ".e2b.example.evil", "49983-.e2b.example", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        strcpy(id, "x");
        port = 7;
        int got = lb_node_id_host(bad[i], strlen(bad[i]), "e2b.example", id, sizeof id, &port);
        if (got)
            printf("  taken: %s\n", bad[i]);
        CHECK(!got && !id[0] && port == 7);
    }
    /* a host longer than it says is cut at n */
    h = "49983-" HEX ".e2b.example";
    CHECK(!lb_node_id_host(h, 20, "e2b.example", id, sizeof id, &port));
    CHECK(!lb_node_id_host(h, strlen(h), "e2b.example", id, 10, &port)); /* no room */
}

TEST(which_node_holds_it)
{
    char node[LB_NODE_ID_NAME_MAX + 1] = "x", msg[512];
    CHECK(lb_sbx_id_mine("n1", "n1." HEX, node, sizeof node) && !node[0]);
    CHECK(lb_sbx_id_mine("n1", HEX, node, sizeof node));  /* made before node_name was set */
    CHECK(lb_sbx_id_mine("", HEX, node, sizeof node));
    CHECK(!lb_sbx_id_mine("n1", "n2." HEX, node, sizeof node) && !strcmp(node, "n2"));
    CHECK(!lb_sbx_id_mine("", "n2." HEX, node, sizeof node) && !strcmp(node, "n2"));
    CHECK(!lb_sbx_id_mine("n1", "n10." HEX, node, sizeof node) && !strcmp(node, "n10"));
    lb_sbx_id_elsewhere_msg("n1", "n2." HEX, "n2", msg, sizeof msg);
    CHECK(strstr(msg, "held by node n2") && strstr(msg, "(node n1)"));
    lb_sbx_id_elsewhere_msg("", "n2." HEX, "n2", msg, sizeof msg);
    CHECK(strstr(msg, "held by node n2") && strstr(msg, "node_name is not set"));
}

int main(void)
{
    RUN(valid_ids);
    RUN(invalid_ids);
    RUN(node_of_an_id);
    RUN(new_ids);
    RUN(e2b_host_names);
    RUN(which_node_holds_it);
    return testlib_done();
}
