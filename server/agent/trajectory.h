/*
 * A run's trajectory.json (trajectory.c).
 */
#ifndef LB_TRAJECTORY_H
#define LB_TRAJECTORY_H

#include <cjson/cJSON.h>

#include "common/status.h"
#include "store/store.h"

/* The record of a run, written as trajectory.json: task, model, tools,
 * the full message list, per-turn reasoning, usage and tool results,
 * timings and the final status. */
typedef struct lb_traj {
    cJSON *root;
    cJSON *turns;
} lb_traj;

/* config: what the run used (model name, provider, sampling, image,
 * limits); referenced into the file, copied. */
LB_MUST_CHECK int lb_traj_init(lb_traj *t, const char *task_id, const char *prompt, int max_turns,
                               const char *model_url, const char *model_name, const cJSON *tools,
                               const cJSON *config);
/* A turn object appended to "turns" (owned by t), to be filled by the caller. */
cJSON *lb_traj_turn(lb_traj *t, int turn);
/* Final fields; messages is referenced at write time, not copied. */
LB_MUST_CHECK int lb_traj_write(lb_traj *t, const char *path, const cJSON *messages, const char *status,
                                const char *reason, const char *answer, const lb_task_usage *usage,
                                const cJSON *timings);
void lb_traj_free(lb_traj *t);

#endif
