/* E2B's template API (the SDK's Template.build, Template.exists) over
 * llmbox's Dockerfile builder: a build is requested (POST /v3/templates),
 * its COPY files are uploaded as tar.gz archives to a one-time URL
 * (GET /templates/{id}/files/{hash}, then PUT to that URL), its steps are
 * sent (POST /v2/templates/{id}/builds/{build}) and made a Dockerfile
 * (e2b_template_steps.h), the folder of both is published atomically as
 * <var_dir>/image-contexts/<name>, and sandboxd's image job builds it
 * into the image <name> (only sandboxd writes the image store); the
 * status (GET /templates/{id}/builds/{build}/status) carries the job's
 * log. The template's name is the image's local name, so
 * Sandbox.create(name) runs in it. docs/E2B.md "Templates". */
#ifndef LB_E2B_TEMPLATE_H
#define LB_E2B_TEMPLATE_H

#include "web/request.h"

/* The template routes of E2B's control plane: answers r and returns 1
 * when r->path is one of them, 0 (nothing answered) otherwise. */
int lb_e2b_tpl_handle(lb_req *r);

/* Whether path is a files-upload URL this module hands out
 * (/e2b/template-uploads/...): the SDK sends no API key there; the URL's
 * one-time token is checked by the handler instead. */
int lb_e2b_tpl_is_upload(const char *path);

#endif
