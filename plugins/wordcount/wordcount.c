/* wordcount: the second example plugin (docs/PLUGINS.md). Its folder is
 * plugins/wordcount/, so it builds to plugins/wordcount.so, but the tool it
 * defines is `count_words`: the model sees tool names, the loader sees
 * files, and the two need not match. It counts the lines, words and
 * characters (code points, not bytes) of a file in the sandbox or of a text
 * given as an argument, like `wc`, and reports the words' mean length
 * rounded to a tenth (with round() from libm: this folder's LDLIBS file
 * says -lm, the way a plugin links a library of its own). */
#include "llmbox/tool.h"
#include "llmbox/utf8.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define WC_MAX_FILE (16u << 20) /* larger files are refused, not cut */

LLMBOX_PLUGIN_INIT;

static const char description[] =
    "Count the lines, words and characters of a text file in the sandbox (like `wc`), or of "
    "a text you pass. Give exactly one of 'path' (an absolute path, e.g. /testbed/input/a.txt) "
    "or 'text'. Characters are Unicode code points; words are runs of non-blank characters.";

static const char parameters[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"description\":\"Absolute path of a text file in the sandbox.\"},"
    "\"text\":{\"type\":\"string\",\"description\":\"The text to count, instead of a file.\"}}}";

typedef struct {
    long lines, words, chars, word_chars, invalid;
} wc_counts;

static int is_blank(uint32_t cp)
{
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || cp == 0xA0 ||
           cp == 0x3000 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029;
}

static void count(const char *p, size_t n, wc_counts *c)
{
    memset(c, 0, sizeof *c);
    int in_word = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t l = llmbox_utf8_decode((const unsigned char *)p + i, n - i, &cp);
        if (!l) { /* a byte that is not UTF-8 counts as one character */
            l = 1;
            cp = 0xFFFD;
            c->invalid++;
        }
        i += l;
        c->chars++;
        if (cp == '\n')
            c->lines++;
        if (is_blank(cp)) {
            in_word = 0;
            continue;
        }
        if (!in_word)
            c->words++;
        in_word = 1;
        c->word_chars++;
    }
}

static int say(llmbox_result *r, const char *status, const char *text)
{
    host->result_append(r, LLMBOX_STREAM_TEXT, text, strlen(text));
    host->result_set_status(r, status);
    return LLMBOX_OK;
}

static int wc_invoke(llmbox_ctx *ctx, const char *args_json, size_t args_len, llmbox_result *r)
{
    cJSON *args = cJSON_ParseWithLength(args_json, args_len);
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(args, "path");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(args, "text");
    const char *data = NULL;
    size_t len = 0;
    int rc = LLMBOX_OK;
    char msg[512];
    if (!path == !text) {
        say(r, "error", "Give exactly one of 'path' and 'text'.");
        rc = LLMBOX_ERR_INVALID;
        goto out;
    }
    if (text) {
        data = text->valuestring;
        len = strlen(data);
    } else {
        if (path->valuestring[0] != '/') {
            say(r, "error", "'path' must be an absolute path, such as /testbed/input/notes.txt.");
            rc = LLMBOX_ERR_INVALID;
            goto out;
        }
        rc = host->read_file(ctx, path->valuestring, WC_MAX_FILE, &data, &len);
        if (rc != LLMBOX_OK) {
            /* on failure data is "" (tool.h): say why from the status */
            snprintf(msg, sizeof msg, "Cannot read %.300s: %s.", path->valuestring,
                     rc == LLMBOX_ERR_NOTFOUND ? "no such file"
                     : rc == LLMBOX_ERR_ISDIR  ? "it is a directory"
                     : rc == LLMBOX_ERR_TOOBIG ? "it is larger than 16 MiB"
                                               : "the sandbox could not read it");
            say(r, "error", msg);
            goto out;
        }
    }
    wc_counts c;
    count(data, len, &c);
    double mean = c.words ? round(10.0 * (double)c.word_chars / (double)c.words) / 10.0 : 0.0;
    snprintf(msg, sizeof msg, "%ld lines, %ld words, %ld characters, %zu bytes; mean word length %.1f%s",
             c.lines, c.words, c.chars, len, mean,
             c.invalid ? " (some bytes are not UTF-8: each counted as one character)" : "");
    say(r, "ok", msg);
out:
    cJSON_Delete(args);
    return rc;
}

static const llmbox_tool tools[] = {{
    .size = sizeof(llmbox_tool),
    .name = "count_words",
    .description = description,
    .parameters = parameters,
    .invoke = wc_invoke,
}};

LLMBOX_PLUGIN_DEFINE("wordcount", "1.0", tools);
