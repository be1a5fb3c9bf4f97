/* libFuzzer target for the sandbox API's exec line (server/sbxapi/
 * sandbox_spec.c, lb_sbx_exec_line): the command is any text a client
 * sends. Promises: a line is always built; the fast form (a call of the
 * __llmbox_exec helper in the persistent shell) is chosen only for one
 * plain command, checked here against a plain reference (bytes of
 * [A-Za-z0-9 _./:,+=%-], a first word that is not empty, does not start
 * with '-', holds no '=' or '%', and no "__llmbox" anywhere), and then
 * carries the command exactly; every other command gets the subshell
 * line, quoted. The helper's "command not found" test never reads outside
 * what it is given. */
#include "sbxapi/sandbox_spec.h"

#include "common/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int ref_plain(const char *s, size_t n)
{
    if (n == 0 || n > 4096 || strstr(s, "__llmbox"))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              strchr(" _./:,+=%-", s[i]) != NULL))
            return 0;
    size_t i = 0;
    while (s[i] == ' ')
        i++;
    size_t w = strcspn(s + i, " ");
    if (w == 0 || s[i] == '-' || memchr(s + i, '=', w) || memchr(s + i, '%', w))
        return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192 || memchr(data, 0, size))
        return 0;
    char *cmd = malloc(size + 1);
    if (!cmd)
        return 0;
    memcpy(cmd, data, size);
    cmd[size] = '\0';
    lb_sbx_exec_req er;
    memset(&er, 0, sizeof er);
    er.command = cmd;
    strcpy(er.cwd, "/testbed");
    lb_buf line;
    if (lb_sbx_exec_line(&er, NULL, NULL, &line) != LB_OK)
        abort();
    static const char call[] = "__llmbox_exec '/testbed' ";
    if (strncmp(line.data, call, sizeof call - 1) == 0) {
        /* fast: only a plain command (the builtins are refused on top) */
        if (!ref_plain(cmd, size) || strcmp(line.data + sizeof call - 1, cmd) != 0)
            abort();
    } else {
        if (strncmp(line.data, "( cd -- '/testbed' && eval '", 28) != 0 || line.len < 14 ||
            strcmp(line.data + line.len - 14, " ) < /dev/null") != 0)
            abort();
    }
    lb_buf_free(&line);
    (void)lb_sbx_exec_fast_missing(127, "", 0, cmd, size);
    free(cmd);
    return 0;
}
