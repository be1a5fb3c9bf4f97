/* The tools an MCP server lists (tools/list), checked before the model is
 * offered any: a server's list is hostile, and what it says goes into
 * every request to the model. Per server at most LB_MCPC_TOOLS_MAX tools;
 * each inputSchema a JSON object of at most LB_MCPC_SCHEMA_MAX bytes and
 * LB_MCPC_SCHEMA_DEPTH levels; all of a server's schemas and descriptions
 * at most LB_MCPC_SERVER_MAX bytes. Past any of them the whole server is
 * refused with a sentence (its tools are then not offered at all: half a
 * server's tools would be a surprise to the model). A "$ref" is passed on
 * as written, never expanded, so a schema that refers to itself costs only
 * its text. A tool whose name cannot be offered as NAME__tool (characters
 * outside [A-Za-z0-9_-], or longer than 64 with the prefix) is left out
 * with a note. Descriptions are cut to LB_MCPC_DESC_MAX bytes. */
#ifndef LB_MCPC_TOOLS_H
#define LB_MCPC_TOOLS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/status.h"

#define LB_MCPC_TOOLS_MAX 64          /* tools of one server */
#define LB_MCPC_SCHEMA_MAX (16u << 10) /* one inputSchema as compact JSON */
#define LB_MCPC_SCHEMA_DEPTH 12       /* objects and arrays inside one another in a schema */
#define LB_MCPC_DESC_MAX 2048         /* one description, cut at a UTF-8 boundary */
#define LB_MCPC_SERVER_MAX (128u << 10) /* all schemas and descriptions of one server */
#define LB_MCPC_NAME_MAX 64           /* what a model's tool name may be (OpenAI's limit) */

typedef struct lb_mcpc_tool {
    char name[LB_MCPC_NAME_MAX + 1];    /* the server's name for it */
    char offered[LB_MCPC_NAME_MAX + 1]; /* SERVER__name, what the model calls */
    char *description;                  /* owned, valid UTF-8, capped */
    cJSON *schema;                      /* owned: the inputSchema */
} lb_mcpc_tool;

typedef struct lb_mcpc_toolset {
    lb_mcpc_tool *t;
    size_t n;
} lb_mcpc_toolset;

/* Adds the tools of result (a tools/list result: {tools: [...],
 * nextCursor?}) to ts under server's prefix. LB_OK (note gets a sentence
 * when some tools were left out, else ""); LB_E_TOOBIG or LB_E_INVAL with
 * a sentence in err when the server is refused, ts then unchanged;
 * LB_E_NOMEM. The count and size caps run over every page already added
 * for the same server (pass its running total in *bytes, 0 at first). */
LB_MUST_CHECK int lb_mcpc_tools_add(lb_mcpc_toolset *ts, const char *server, const cJSON *result, size_t *bytes,
                                    char *note, size_t notesz, char *err, size_t errsz);
/* Drops the tools of ts from index from on (a server refused on a later page). */
void lb_mcpc_tools_truncate(lb_mcpc_toolset *ts, size_t from);
void lb_mcpc_tools_free(lb_mcpc_toolset *ts);
/* How deep v's objects and arrays go (a scalar: 0), counting no further
 * than stop. Pure. */
int lb_mcpc_json_depth(const cJSON *v, int stop);

#endif
