/*
 * A run's events as readable lines on a terminal (sink_term.c).
 */
#ifndef LB_SINK_TERM_H
#define LB_SINK_TERM_H

#include "agent/sink.h"

/* Readable lines on a terminal (colour when f is a tty). */
void lb_sink_term_init(lb_sink *s, void *file);

#endif
