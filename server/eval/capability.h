/* Capability usage (the paper's Appendix D): which sandbox-mode turns used
 * external resources, file management or computation, by the patterns of
 * eval/capabilities.conf (its header comment documents the format). */
#ifndef LB_EVAL_CAPABILITY_H
#define LB_EVAL_CAPABILITY_H
#include <stddef.h>
#include "common/status.h"

/* Turns whose actions matched each capability, and all turns. */
typedef struct lb_capability_counts {
    long long external, file, compute, turns;
    /* external access by traffic, where the task ran with network rules:
     * its gateway's allowed connections to names (network.json); traffic
     * is 1 when the task had such a record (no rules: the patterns alone say) */
    long long external_conns;
    int traffic;
} lb_capability_counts;

enum { LB_CAP_EXTERNAL = 0, LB_CAP_FILE = 1, LB_CAP_COMPUTE = 2, LB_CAP__COUNT };

/* The compiled-in copy of eval/capabilities.conf (used until
 * lb_capability_load succeeds). A static string. */
const char *lb_capability_default_conf(void);

/* Replaces the patterns with those of the file at path (its format: the
 * header of eval/capabilities.conf; at most 256 patterns, 64 KiB). On an
 * error (unreadable, unknown capability, a regex that does not compile)
 * err says "PATH:LINE: why" and the patterns in use stay. Call it before
 * threads count (the web's start, `llmbox score`'s). */
LB_MUST_CHECK int lb_capability_load(const char *path, char *err, size_t errsz);

/* The service's patterns: home/eval/capabilities.conf (home: the
 * configuration's home, where the prompts and plugins are found too) when
 * it exists, else the compiled-in copy (LB_OK). A file that exists but
 * does not load is an error (err says why), not a silent fallback. */
LB_MUST_CHECK int lb_capability_load_home(const char *home, char *err, size_t errsz);

/* Parses conf text as lb_capability_load does (path labels errors) and
 * keeps it when ok. */
LB_MUST_CHECK int lb_capability_load_text(const char *text, const char *path, char *err, size_t errsz);

/* Bit set (1 << LB_CAP_x) of the capabilities whose patterns match the
 * action text s (NUL-terminated; only its first 1 MiB is looked at). */
unsigned lb_capability_match(const char *s);

/* Counts, in a trajectory.json's text (len bytes, docs/TRAJECTORY.md), the
 * turns (assistant messages) whose actions match each capability: a
 * turn's actions are its tool calls (name and decoded arguments), or its
 * text when it has none (text tool mode). LB_E_INVAL when the text is not
 * a trajectory (not JSON, no `messages` array); *out untouched then. */
LB_MUST_CHECK int lb_capability_count_trajectory(const char *trajectory_json_text, size_t len,
                                                 lb_capability_counts *out);

/* Counts, in a task's network.json text (len bytes, docs/NETWORK.md), the
 * allowed TCP connections to a name (what the sandbox fetched from
 * outside) into out->external_conns, and out->traffic = 1. LB_E_INVAL when the text is not a
 * record (not JSON, no `connections` array); *out untouched then. */
LB_MUST_CHECK int lb_capability_count_network(const char *network_json_text, size_t len,
                                              lb_capability_counts *out);

#endif
