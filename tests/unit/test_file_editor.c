/* The file_editor plugin driven through an in-memory fake host table:
 * view, create, str_replace, insert and undo_edit without a sandbox. */
#include "testlib.h"

#include "llmbox/tool.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <stdlib.h>

/* ---- a tiny in-memory file system -------------------------------------- */

#define MAXF 64
static struct {
    char *path;
    char *data;
    size_t len;
} files[MAXF];
static int nfiles;

static int find(const char *p)
{
    for (int i = 0; i < nfiles; i++)
        if (!strcmp(files[i].path, p))
            return i;
    return -1;
}

static void put(const char *p, const char *d, size_t n)
{
    int i = find(p);
    if (i < 0) {
        i = nfiles++;
        files[i].path = strdup(p);
    } else {
        free(files[i].data);
    }
    files[i].data = malloc(n + 1);
    memcpy(files[i].data, d, n);
    files[i].data[n] = '\0';
    files[i].len = n;
}

static const char *get(const char *p)
{
    int i = find(p);
    return i < 0 ? NULL : files[i].data;
}

static void reset(void)
{
    for (int i = 0; i < nfiles; i++) {
        free(files[i].path);
        free(files[i].data);
    }
    nfiles = 0;
}

static int is_dir(const char *p)
{
    size_t l = strlen(p);
    for (int i = 0; i < nfiles; i++)
        if (!strncmp(files[i].path, p, l) && files[i].path[l] == '/')
            return 1;
    return 0;
}

struct llmbox_result {
    char text[1 << 20];
    size_t len;
    char status[64];
};
struct llmbox_ctx {
    int dummy;
};

static int f_path_type(llmbox_ctx *c, const char *p)
{
    (void)c;
    return find(p) >= 0 ? 1 : is_dir(p) ? 2 : 0;
}

static int f_read(llmbox_ctx *c, const char *p, size_t max, const char **d, size_t *n)
{
    (void)c;
    int i = find(p);
    if (i < 0)
        return is_dir(p) ? LLMBOX_ERR_ISDIR : LLMBOX_ERR_NOTFOUND;
    if (files[i].len > max)
        return LLMBOX_ERR_TOOBIG;
    /* a copy, like the real host: valid until the next read, not only until
     * the next write (the plugin keeps the old content across its write) */
    static char *readbuf;
    free(readbuf);
    readbuf = malloc(files[i].len + 1);
    memcpy(readbuf, files[i].data, files[i].len + 1);
    *d = readbuf;
    *n = files[i].len;
    return LLMBOX_OK;
}

static int writes;
static int f_write(llmbox_ctx *c, const char *p, const void *d, size_t n, unsigned flags)
{
    (void)c;
    if ((flags & LLMBOX_WRITE_EXCL) && (find(p) >= 0 || is_dir(p)))
        return LLMBOX_ERR_EXISTS;
    writes++;
    put(p, d, n);
    return LLMBOX_OK;
}

static llmbox_dirent ents[256];
static char entpaths[256][256];
static int cmp_ent(const void *a, const void *b)
{
    return strcmp(((const llmbox_dirent *)a)->path, ((const llmbox_dirent *)b)->path);
}
static int f_list(llmbox_ctx *c, const char *p, int depth, const llmbox_dirent **out, size_t *n)
{
    (void)c;
    size_t k = 0, l = strlen(p);
    if (!is_dir(p))
        return LLMBOX_ERR_NOTFOUND;
    for (int i = 0; i < nfiles; i++) {
        if (strncmp(files[i].path, p, l) || files[i].path[l] != '/')
            continue;
        const char *rel = files[i].path + l + 1;
        /* the file and each parent directory, down to depth */
        int level = 0;
        for (const char *q = rel;; q++) {
            if (*q == '/' || *q == '\0') {
                level++;
                if (level > depth)
                    break;
                size_t len = (size_t)(q - rel);
                int dir = *q == '/';
                int dup = 0;
                for (size_t e = 0; e < k; e++)
                    dup |= strlen(entpaths[e]) == len && !strncmp(entpaths[e], rel, len);
                if (!dup) {
                    snprintf(entpaths[k], sizeof entpaths[k], "%.*s", (int)len, rel);
                    ents[k].path = entpaths[k];
                    ents[k].is_dir = dir;
                    ents[k].size = dir ? 0 : files[i].len;
                    k++;
                }
                if (!*q)
                    break;
            }
        }
    }
    qsort(ents, k, sizeof ents[0], cmp_ent);
    *out = ents;
    *n = k;
    return LLMBOX_OK;
}

static int f_append(llmbox_result *r, int s, const char *d, size_t n)
{
    (void)s;
    if (r->len + n >= sizeof r->text)
        n = sizeof r->text - r->len - 1;
    memcpy(r->text + r->len, d, n);
    r->len += n;
    r->text[r->len] = '\0';
    return LLMBOX_OK;
}

static void f_status(llmbox_result *r, const char *s) { snprintf(r->status, sizeof r->status, "%s", s); }

static const llmbox_host host = {
    .size = sizeof(llmbox_host),
    .abi_major = LLMBOX_TOOL_ABI_MAJOR,
    .abi_minor = LLMBOX_TOOL_ABI_MINOR,
    .read_file = f_read,
    .write_file = f_write,
    .list_dir = f_list,
    .path_type = f_path_type,
    .result_append = f_append,
    .result_set_status = f_status,
};

static const llmbox_tool *tool;
static llmbox_result R;
static llmbox_ctx C;

/* Runs the tool with a JSON argument object; returns its status code. */
static int fe(const char *json)
{
    memset(&R, 0, sizeof R);
    return tool->invoke(&C, json, strlen(json), &R);
}

/* Builds argument JSON safely (contents with quotes, tabs, CRs). */
static int fe_obj(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    int rc = fe(s);
    free(s);
    cJSON_Delete(o);
    return rc;
}

TEST(view_numbers_lines_and_keeps_tabs)
{
    reset();
    put("/t/a.py", "a\n\tb\nc", 6);
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/a.py\"}") == LLMBOX_OK);
    CHECK(strstr(R.text, "     1\ta\n     2\t\tb\n     3\tc\n") != NULL);
    CHECK_STR(R.status, "ok");
}

TEST(view_range)
{
    reset();
    put("/t/a", "1\n2\n3\n4\n", 8);
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/a\",\"view_range\":[2,3]}") == LLMBOX_OK);
    CHECK(strstr(R.text, "     2\t2\n     3\t3\n") && !strstr(R.text, "     4\t"));
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/a\",\"view_range\":[3,-1]}") == LLMBOX_OK);
    CHECK(strstr(R.text, "     3\t3\n     4\t4\n") && !strstr(R.text, "     2\t"));
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/a\",\"view_range\":[9,10]}") != LLMBOX_OK);
    CHECK(strstr(R.text, "Invalid view_range [9, 10]") != NULL);
    CHECK_STR(R.status, "error");
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/a\",\"view_range\":[3,2]}") != LLMBOX_OK);
}

TEST(view_directory_two_levels_no_hidden)
{
    reset();
    put("/t/a.txt", "x", 1);
    put("/t/sub/b.txt", "x", 1);
    put("/t/sub/deep/c.txt", "x", 1);
    put("/t/.git/config", "x", 1);
    put("/t/.env", "x", 1);
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t\"}") == LLMBOX_OK);
    CHECK(strstr(R.text, "/t/a.txt\n") != NULL);
    CHECK(strstr(R.text, "/t/sub/\n") != NULL);
    CHECK(strstr(R.text, "/t/sub/b.txt\n") != NULL);
    CHECK(strstr(R.text, "/t/sub/deep/\n") != NULL);
    CHECK(strstr(R.text, "c.txt") == NULL);
    CHECK(strstr(R.text, ".git") == NULL && strstr(R.text, ".env") == NULL);
}

TEST(view_missing_binary_and_relative)
{
    reset();
    CHECK(fe("{\"command\":\"view\",\"path\":\"/nope\"}") == LLMBOX_ERR_NOTFOUND);
    CHECK(strstr(R.text, "does not exist") != NULL);
    put("/t/bin", "\x7f" "ELF\0\0\1", 7);
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/bin\"}") != LLMBOX_OK);
    CHECK(strstr(R.text, "binary (7 bytes") != NULL);
    put("/t/latin1", "caf\xe9", 4);
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/latin1\"}") != LLMBOX_OK);
    CHECK(strstr(R.text, "binary") != NULL);
    CHECK(fe("{\"command\":\"view\",\"path\":\"t/a\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "not absolute") != NULL);
}

TEST(view_big_file_refused)
{
    reset();
    size_t n = (2u << 20) + 1;
    char *big = malloc(n);
    memset(big, 'a', n);
    put("/t/big", big, n);
    free(big);
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/big\"}") == LLMBOX_ERR_TOOBIG);
    CHECK(strstr(R.text, "larger than 2 MiB") != NULL);
}

TEST(view_long_file_is_cut_with_a_note)
{
    reset();
    char *d = malloc(100000 * 8 + 1);
    size_t o = 0;
    for (int i = 0; i < 100000; i++)
        o += (size_t)sprintf(d + o, "line%03d\n", i % 1000);
    put("/t/long", d, o);
    free(d);
    CHECK(fe("{\"command\":\"view\",\"path\":\"/t/long\"}") == LLMBOX_OK);
    CHECK(R.len < 60000);
    CHECK(strstr(R.text, "use view_range") != NULL);
}

TEST(create_new_and_refuse_existing)
{
    reset();
    const char *content = "#!/bin/sh\necho \"$(rm -rf /)\" 'q' `x`\r\n\tend\n";
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "command", "create");
    cJSON_AddStringToObject(o, "path", "/testbed/new/x.sh");
    cJSON_AddStringToObject(o, "file_text", content);
    CHECK(fe_obj(o) == LLMBOX_OK);
    CHECK_STR(get("/testbed/new/x.sh"), content);
    CHECK(strstr(R.text, "File created successfully at: /testbed/new/x.sh") != NULL);
    CHECK(fe("{\"command\":\"create\",\"path\":\"/testbed/new/x.sh\",\"file_text\":\"other\"}") == LLMBOX_ERR_EXISTS);
    CHECK(strstr(R.text, "File already exists at: /testbed/new/x.sh") != NULL);
    CHECK_STR(get("/testbed/new/x.sh"), content);
    CHECK(fe("{\"command\":\"create\",\"path\":\"/testbed/y\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "'file_text' is required") != NULL);
    /* an empty file is a file */
    CHECK(fe("{\"command\":\"create\",\"path\":\"/testbed/empty\",\"file_text\":\"\"}") == LLMBOX_OK);
    CHECK_STR(get("/testbed/empty"), "");
}

TEST(str_replace_unique_keeps_tabs_and_crlf)
{
    reset();
    const char *orig = "x\r\n\ty = 1\r\nz\r\n";
    put("/t/f", orig, strlen(orig));
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/t/f\",\"old_str\":\"y = 1\",\"new_str\":\"y = 2\"}") == LLMBOX_OK);
    CHECK_STR(get("/t/f"), "x\r\n\ty = 2\r\nz\r\n");
    CHECK(strstr(R.text, "has been edited") != NULL);
    CHECK(strstr(R.text, "     2\t\ty = 2\r\n") != NULL);
    /* multi-line old_str with the tab, deleting it (new_str missing) */
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/t/f\",\"old_str\":\"\\r\\n\\ty = 2\"}") == LLMBOX_OK);
    CHECK_STR(get("/t/f"), "x\r\nz\r\n");
}

TEST(str_replace_zero_or_many)
{
    reset();
    const char *orig = "a = 1\nb = 2\na = 1\n";
    put("/t/f", orig, strlen(orig));
    writes = 0;
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/t/f\",\"old_str\":\"c = 3\",\"new_str\":\"x\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "did not appear verbatim in /t/f") != NULL);
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/t/f\",\"old_str\":\"a = 1\",\"new_str\":\"x\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "occurs 2 times in /t/f, at lines 1, 3") != NULL);
    /* overlapping matches count too: "aa" in "aaa" is not unique */
    put("/t/g", "aaa", 3);
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/t/g\",\"old_str\":\"aa\",\"new_str\":\"b\"}") == LLMBOX_ERR_INVALID);
    CHECK(writes == 0);
    CHECK_STR(get("/t/f"), orig);
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/t/f\",\"old_str\":\"\",\"new_str\":\"x\"}") == LLMBOX_ERR_INVALID);
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/t/missing\",\"old_str\":\"a\",\"new_str\":\"x\"}") == LLMBOX_ERR_NOTFOUND);
}

TEST(insert_top_middle_end)
{
    reset();
    put("/t/f", "one\ntwo\n", 8);
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/t/f\",\"insert_line\":0,\"new_str\":\"zero\"}") == LLMBOX_OK);
    CHECK_STR(get("/t/f"), "zero\none\ntwo\n");
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/t/f\",\"insert_line\":2,\"new_str\":\"1.5\\n\"}") == LLMBOX_OK);
    CHECK_STR(get("/t/f"), "zero\none\n1.5\ntwo\n");
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/t/f\",\"insert_line\":4,\"new_str\":\"end\"}") == LLMBOX_OK);
    CHECK_STR(get("/t/f"), "zero\none\n1.5\ntwo\nend\n");
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/t/f\",\"insert_line\":9,\"new_str\":\"x\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "between 0 and 5") != NULL);
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/t/f\",\"new_str\":\"x\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "'insert_line' is required") != NULL);
}

TEST(insert_after_last_line_without_newline_and_crlf)
{
    reset();
    put("/t/f", "a\nb", 3);
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/t/f\",\"insert_line\":2,\"new_str\":\"c\"}") == LLMBOX_OK);
    CHECK_STR(get("/t/f"), "a\nb\nc\n");
    put("/t/w", "a\r\nb\r\n", 6);
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/t/w\",\"insert_line\":1,\"new_str\":\"x\"}") == LLMBOX_OK);
    CHECK_STR(get("/t/w"), "a\r\nx\r\nb\r\n");
    put("/t/e", "", 0);
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/t/e\",\"insert_line\":0,\"new_str\":\"first\"}") == LLMBOX_OK);
    CHECK_STR(get("/t/e"), "first\n");
}

TEST(undo_edit_steps_back_through_edits)
{
    reset();
    CHECK(fe("{\"command\":\"create\",\"path\":\"/u/a\",\"file_text\":\"one\\ntwo\\n\"}") == LLMBOX_OK);
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/u/a\",\"old_str\":\"two\",\"new_str\":\"2\"}") == LLMBOX_OK);
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/u/a\",\"insert_line\":0,\"new_str\":\"zero\"}") == LLMBOX_OK);
    CHECK_STR(get("/u/a"), "zero\none\n2\n");
    /* a failed edit records nothing */
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/u/a\",\"old_str\":\"nope\",\"new_str\":\"x\"}") == LLMBOX_ERR_INVALID);
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/a\"}") == LLMBOX_OK);
    CHECK_STR(get("/u/a"), "one\n2\n");
    CHECK(strstr(R.text, "Last edit to /u/a undone.") != NULL);
    CHECK(strstr(R.text, "     2\t2\n") != NULL);
    CHECK(strstr(R.text, "changed after that edit") == NULL);
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/a\"}") == LLMBOX_OK);
    CHECK_STR(get("/u/a"), "one\ntwo\n");
    /* the creation stays: the file is left as it is, with a clear reason */
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/a\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "Cannot undo the creation of /u/a; the file is left as it is") != NULL);
    CHECK_STR(get("/u/a"), "one\ntwo\n");
    CHECK_STR(R.status, "error");
    /* a file never edited here */
    put("/u/b", "b\n", 2);
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/b\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "No edit to undo for /u/b") != NULL);
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"u/b\"}") == LLMBOX_ERR_INVALID);
}

TEST(undo_edit_notes_changes_made_outside_and_empty_files)
{
    reset();
    put("/u/c", "x\n", 2);
    CHECK(fe("{\"command\":\"str_replace\",\"path\":\"/u/c\",\"old_str\":\"x\\n\"}") == LLMBOX_OK);
    CHECK_STR(get("/u/c"), "");
    put("/u/c", "by bash\n", 8);
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/c\"}") == LLMBOX_OK);
    CHECK_STR(get("/u/c"), "x\n");
    CHECK(strstr(R.text, "changed after that edit by something other than the file editor") != NULL);
    /* back to an empty file */
    put("/u/e", "", 0);
    CHECK(fe("{\"command\":\"insert\",\"path\":\"/u/e\",\"insert_line\":0,\"new_str\":\"t\"}") == LLMBOX_OK);
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/e\"}") == LLMBOX_OK);
    CHECK_STR(get("/u/e"), "");
    CHECK(strstr(R.text, "The file is now empty.") != NULL);
}

TEST(undo_edit_keeps_ten_versions_per_file)
{
    reset();
    put("/u/n", "0", 1);
    for (int i = 1; i <= 12; i++) {
        char j[160];
        snprintf(j, sizeof j, "{\"command\":\"str_replace\",\"path\":\"/u/n\",\"old_str\":\"%d\",\"new_str\":\"%d\"}",
                 i - 1, i);
        CHECK(fe(j) == LLMBOX_OK);
    }
    CHECK_STR(get("/u/n"), "12");
    int undone = 0;
    while (fe("{\"command\":\"undo_edit\",\"path\":\"/u/n\"}") == LLMBOX_OK)
        undone++;
    CHECK(undone == 10);
    CHECK_STR(get("/u/n"), "2");
    CHECK(strstr(R.text, "No edit to undo for /u/n") != NULL);
}

TEST(undo_edit_total_cap_drops_oldest_versions)
{
    reset();
    /* five 1.9 MiB versions of different files exceed the 8 MiB cap */
    size_t sz = 1900u << 10;
    char *d = malloc(sz);
    memset(d, 'a', sz);
    d[0] = 'X';
    char path[32], j[160];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "/u/big%d", i);
        put(path, d, sz);
        snprintf(j, sizeof j, "{\"command\":\"str_replace\",\"path\":\"%s\",\"old_str\":\"X\",\"new_str\":\"Y\"}", path);
        CHECK(fe(j) == LLMBOX_OK);
    }
    free(d);
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/big0\"}") == LLMBOX_ERR_INVALID);
    CHECK(strstr(R.text, "No edit to undo") != NULL);
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/big4\"}") == LLMBOX_OK);
    CHECK(get("/u/big4")[0] == 'X');
    CHECK(fe("{\"command\":\"undo_edit\",\"path\":\"/u/big1\"}") == LLMBOX_OK);
}

int main(void)
{
    void *h = dlopen("plugins/file_editor.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL setup: cannot load plugins/file_editor.so (run from the repo root after make): %s\n", dlerror());
        return 1;
    }
    llmbox_tool_plugin_fn fn;
    void *sym = dlsym(h, LLMBOX_TOOL_ENTRY);
    memcpy(&fn, &sym, sizeof fn);
    const llmbox_plugin *p = sym ? fn(&host) : NULL;
    if (!p || p->n_tools != 1) {
        printf("FAIL setup: file_editor.so has no usable descriptor\n");
        return 1;
    }
    tool = &p->tools[0];
    RUN(view_numbers_lines_and_keeps_tabs);
    RUN(view_range);
    RUN(view_directory_two_levels_no_hidden);
    RUN(view_missing_binary_and_relative);
    RUN(view_big_file_refused);
    RUN(view_long_file_is_cut_with_a_note);
    RUN(create_new_and_refuse_existing);
    RUN(str_replace_unique_keeps_tabs_and_crlf);
    RUN(str_replace_zero_or_many);
    RUN(insert_top_middle_end);
    RUN(insert_after_last_line_without_newline_and_crlf);
    RUN(undo_edit_steps_back_through_edits);
    RUN(undo_edit_notes_changes_made_outside_and_empty_files);
    RUN(undo_edit_keeps_ten_versions_per_file);
    RUN(undo_edit_total_cap_drops_oldest_versions);
    reset();
    dlclose(h);
    return testlib_done();
}
