/*
 * The daemon's live sandboxes: one list, newest first, of every sandbox a
 * connection owns or a lease keeps, and the lookups over it. A generation
 * counter changes with every join and leave, so the loop can cache what it
 * derives from the list (its poll set, the next expiry) and notice when a
 * handler it called took a sandbox off. Event loop thread only.
 */
#include "sandboxd/sandbox_set.h"

#include <string.h>

static lbsd_sandbox *g_sandboxes;
static int g_nsandboxes;
static unsigned g_set_gen;

lbsd_sandbox *lbsd_set_first(void)
{
    return g_sandboxes;
}

int lbsd_set_count(void)
{
    return g_nsandboxes;
}

unsigned lbsd_set_gen(void)
{
    return g_set_gen;
}

void lbsd_set_add(lbsd_sandbox *sb)
{
    sb->next = g_sandboxes;
    g_sandboxes = sb;
    g_nsandboxes++;
    g_set_gen++;
}

void lbsd_set_remove(lbsd_sandbox *sb)
{
    for (lbsd_sandbox **pp = &g_sandboxes; *pp; pp = &(*pp)->next) {
        if (*pp == sb) {
            *pp = sb->next;
            g_nsandboxes--;
            g_set_gen++;
            return;
        }
    }
}

lbsd_sandbox *lbsd_set_find(const lbsd_conn *c, const char *id)
{
    for (lbsd_sandbox *s = g_sandboxes; s; s = s->next)
        if (!strcmp(s->id, id))
            return s->owner == c ? s : NULL; /* others' sandboxes do not exist for you */
    return NULL;
}

lbsd_sandbox *lbsd_sandbox_by_id(const char *id)
{
    for (lbsd_sandbox *s = g_sandboxes; s; s = s->next)
        if (!strcmp(s->id, id))
            return s;
    return NULL;
}
