/* The llm-mode prompt of an eval's run; the contract is eval_prompt.h. */
#include "jobs/eval_prompt.h"

#include "common/buf.h"
#include "common/utf8.h"

#include <stdio.h>
#include <string.h>

void lb_eval_document_name(size_t k, char *out, size_t outsz)
{
    snprintf(out, outsz, "document_%zu.txt", k + 1);
}

static int add_doc(lb_buf *b, const char *name, const char *text, size_t len)
{
    if (lb_buf_printf(b, "\n\n=== FILE: %s ===\n", name) != LB_OK)
        return LB_E_TOOBIG;
    return lb_buf_append(b, text, len);
}

char *lb_eval_llm_prompt(const lb_eval_row *row)
{
    lb_buf b;
    lb_buf_init(&b, LB_EVAL_PROMPT_MAX);
    int rc = lb_buf_appends(&b, row->problem ? row->problem : "");
    int long_context = row->ndocuments > 0 || (row->domain && !strcmp(row->domain, "long_context"));
    if (rc == LB_OK && long_context) {
        char name[64];
        for (size_t k = 0; rc == LB_OK && k < row->ndocuments; k++) {
            lb_eval_document_name(k, name, sizeof name);
            rc = add_doc(&b, name, row->documents[k], strlen(row->documents[k]));
        }
        /* no documents field: the text files are the documents (a binary
         * file cannot go into a prompt; sandbox mode has it) */
        for (size_t k = 0; rc == LB_OK && !row->ndocuments && k < row->nfiles; k++) {
            const lb_eval_file *f = &row->files[k];
            if (!memchr(f->data, '\0', f->len) && lb_utf8_valid((const char *)f->data, f->len))
                rc = add_doc(&b, f->name, (const char *)f->data, f->len);
        }
    }
    if (rc == LB_OK && !b.data)
        rc = lb_buf_append(&b, "", 0);
    if (rc != LB_OK) {
        lb_buf_free(&b);
        return NULL;
    }
    return lb_buf_steal(&b, NULL);
}
