/* Image references: parse, normalize, format, and the file name of one
 * (image_ref.h). The grammar is the distribution spec's reference grammar
 * (Docker's "reference" package), narrowed to sha256 digests. */
#include "common/util.h"
#include "common/image_ref.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static int is_hex_lower(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* One path component: [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)*. 1 when s[0..n)
 * is one; 0 with a sentence otherwise. */
static int component_ok(const char *s, size_t n, char *msg, size_t msgsz)
{
    if (n == 0) {
        lb_say(msg, msgsz, "The image reference has an empty path component (\"//\", or a '/' at an end).");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') {
            lb_say(msg, msgsz, "An image repository name must be lowercase.");
            return 0;
        }
        if (is_lower_alnum(c))
            continue;
        if (c != '.' && c != '_' && c != '-') {
            lb_say(msg, msgsz, "An image repository name may hold only lowercase letters, digits, '.', '_', '-' and '/'.");
            return 0;
        }
        /* a separator run: one '.', one or two '_', or any number of '-',
         * between two alphanumerics */
        size_t j = i;
        while (j < n && s[j] == c)
            j++;
        size_t run = j - i;
        if (i == 0 || j == n || (c == '.' && run > 1) || (c == '_' && run > 2) ||
            !is_lower_alnum(s[j])) {
            lb_say(msg, msgsz, "An image repository name's parts must start and end with a letter or digit, "
                            "with single '.', one or two '_' or dashes between.");
            return 0;
        }
        i = j - 1;
    }
    return 1;
}

/* A registry host: DNS labels of [A-Za-z0-9-] joined by '.', or a
 * bracketed IPv6 address, then an optional ":port" of 1..65535. Written
 * lowercase into out (outsz > n). */
static int host_ok(const char *s, size_t n, char *out, size_t outsz, char *msg, size_t msgsz)
{
    size_t i = 0;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close || close == s + 1) {
            lb_say(msg, msgsz, "The image registry's IPv6 address is not closed with ']'.");
            return 0;
        }
        for (const char *p = s + 1; p < close; p++)
            if (!is_hex_lower(*p) && !(*p >= 'A' && *p <= 'F') && *p != ':' && *p != '.') {
                lb_say(msg, msgsz, "The image registry's IPv6 address may hold only hex digits, ':' and '.'.");
                return 0;
            }
        i = (size_t)(close - s) + 1;
    } else {
        size_t label = 0;
        for (; i < n && s[i] != ':'; i++) {
            char c = s[i];
            if (c == '.') {
                if (label == 0 || s[i - 1] == '-') {
                    lb_say(msg, msgsz, "The image registry's host name has an empty label or one ending in '-'.");
                    return 0;
                }
                label = 0;
                continue;
            }
            if (!is_alnum(c) && c != '-') {
                lb_say(msg, msgsz, "The image registry's host name may hold only letters, digits, '-' and '.'.");
                return 0;
            }
            if (c == '-' && label == 0) {
                lb_say(msg, msgsz, "A label of the image registry's host name starts with '-'.");
                return 0;
            }
            if (++label > 63) {
                lb_say(msg, msgsz, "A label of the image registry's host name is longer than 63 characters.");
                return 0;
            }
        }
        if (label == 0 || s[i - 1] == '-') {
            lb_say(msg, msgsz, "The image registry's host name is empty or ends in '.' or '-'.");
            return 0;
        }
    }
    if (i < n) {
        if (s[i] != ':' || i + 1 == n || n - i - 1 > 5) {
            lb_say(msg, msgsz, "The image registry's port must be a number from 1 to 65535.");
            return 0;
        }
        long port = 0;
        for (size_t j = i + 1; j < n; j++) {
            if (s[j] < '0' || s[j] > '9') {
                lb_say(msg, msgsz, "The image registry's port must be a number from 1 to 65535.");
                return 0;
            }
            port = port * 10 + (s[j] - '0');
        }
        if (port < 1 || port > 65535 || s[i + 1] == '0') {
            lb_say(msg, msgsz, "The image registry's port must be a number from 1 to 65535.");
            return 0;
        }
    }
    if (n >= outsz) {
        lb_say(msg, msgsz, "The image registry's name is too long.");
        return 0;
    }
    for (size_t j = 0; j < n; j++)
        out[j] = (s[j] >= 'A' && s[j] <= 'Z') ? (char)(s[j] - 'A' + 'a') : s[j];
    out[n] = '\0';
    return 1;
}

static int tag_ok(const char *s, size_t n)
{
    if (n < 1 || n > LB_IMAGE_REF_TAG_MAX || !(is_alnum(s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
            return 0;
    return 1;
}

static int digest_ok(const char *s, size_t n)
{
    if (n != LB_IMAGE_REF_DIGEST_LEN || memcmp(s, "sha256:", 7))
        return 0;
    for (size_t i = 7; i < n; i++)
        if (!is_hex_lower(s[i]))
            return 0;
    return 1;
}

/* Whether the first part of a name is a registry: Docker's rule. */
static int looks_like_host(const char *s, size_t n)
{
    return memchr(s, '.', n) || memchr(s, ':', n) || (n && s[0] == '[') ||
           (n == 9 && !memcmp(s, "localhost", 9));
}

int lb_image_ref_parse(const char *s, unsigned flags, lb_image_ref *out, char *msg, size_t msgsz)
{
    lb_image_ref r;
    memset(&r, 0, sizeof r);
    if (!s || !*s) {
        lb_say(msg, msgsz, "The image reference is empty.");
        return LB_E_INVAL;
    }
    size_t n = strnlen(s, LB_IMAGE_REF_INPUT_MAX + 1);
    if (n > LB_IMAGE_REF_INPUT_MAX) {
        lb_say(msg, msgsz, "The image reference is longer than %d bytes.", LB_IMAGE_REF_INPUT_MAX);
        return LB_E_TOOBIG;
    }
    /* the digest: after the last '@' */
    const char *at = memchr(s, '@', n);
    size_t name_end = n;
    if (at) {
        size_t dn = n - (size_t)(at - s) - 1;
        if (memchr(at + 1, '@', dn) || !digest_ok(at + 1, dn)) {
            lb_say(msg, msgsz, "An image digest must be \"sha256:\" followed by 64 lowercase hex digits.");
            return LB_E_INVAL;
        }
        memcpy(r.digest, at + 1, dn);
        name_end = (size_t)(at - s);
    }
    /* the tag: after a ':' that follows the last '/' (a ':' before it is a port) */
    const char *slash = NULL;
    for (size_t i = 0; i < name_end; i++)
        if (s[i] == '/')
            slash = s + i;
    const char *from = slash ? slash + 1 : s;
    const char *colon = memchr(from, ':', name_end - (size_t)(from - s));
    if (colon) {
        size_t tn = name_end - (size_t)(colon - s) - 1;
        if (!tag_ok(colon + 1, tn)) {
            lb_say(msg, msgsz, "An image tag must be 1 to 128 of letters, digits, '_', '.' and '-', "
                            "not starting with '.' or '-'.");
            return LB_E_INVAL;
        }
        memcpy(r.tag, colon + 1, tn);
        name_end = (size_t)(colon - s);
    }
    if (name_end == 0) {
        lb_say(msg, msgsz, "The image reference has no name.");
        return LB_E_INVAL;
    }
    /* the registry: the first part, when it looks like one and more follows */
    const char *name = s;
    const char *first = memchr(s, '/', name_end);
    if (first && looks_like_host(s, (size_t)(first - s))) {
        if (!host_ok(s, (size_t)(first - s), r.host, sizeof r.host, msg, msgsz))
            return LB_E_INVAL;
        name = first + 1;
    }
    size_t rn = name_end - (size_t)(name - s);
    for (size_t i = 0, start = 0; i <= rn; i++)
        if (i == rn || name[i] == '/') {
            if (!component_ok(name + start, i - start, msg, msgsz))
                return LB_E_INVAL;
            start = i + 1;
        }
    if (rn > LB_IMAGE_REF_MAX) {
        lb_say(msg, msgsz, "The image name is longer than %d bytes.", LB_IMAGE_REF_MAX);
        return LB_E_TOOBIG;
    }
    int prefix = 0;
    if (!r.host[0] && !(flags & LB_IMAGE_REF_LOCAL))
        snprintf(r.host, sizeof r.host, "docker.io");
    if (!strcmp(r.host, "index.docker.io") || !strcmp(r.host, "registry-1.docker.io"))
        snprintf(r.host, sizeof r.host, "docker.io");
    if (!strcmp(r.host, "docker.io") && !memchr(name, '/', rn))
        prefix = 1; /* Docker Hub's official images live under library/ */
    if (rn + (prefix ? 8 : 0) > LB_IMAGE_REF_MAX) {
        lb_say(msg, msgsz, "The image name is longer than %d bytes.", LB_IMAGE_REF_MAX);
        return LB_E_TOOBIG;
    }
    snprintf(r.repo, sizeof r.repo, "%s%.*s", prefix ? "library/" : "", (int)rn, name);
    if (!r.host[0]) {
        if (r.digest[0]) {
            lb_say(msg, msgsz, "A local image name cannot carry a digest; name a registry to pull by digest.");
            return LB_E_INVAL;
        }
        if (!strcmp(r.tag, "latest"))
            r.tag[0] = '\0'; /* "default" and "default:latest" are one local image */
    } else if (!r.tag[0] && !r.digest[0]) {
        snprintf(r.tag, sizeof r.tag, "latest");
    }
    char text[LB_IMAGE_REF_MAX + 1];
    if (lb_image_ref_format(&r, text, sizeof text) != LB_OK) {
        lb_say(msg, msgsz, "The image reference is longer than %d bytes once normalized.", LB_IMAGE_REF_MAX);
        return LB_E_TOOBIG;
    }
    *out = r;
    return LB_OK;
}

int lb_image_ref_is_local(const lb_image_ref *r)
{
    return r && !r->host[0];
}

int lb_image_ref_tail(const lb_image_ref *r, char *out, size_t outsz)
{
    int k = snprintf(out, outsz, "%s%s%s%s%s", r->repo, r->tag[0] ? ":" : "", r->tag,
                     r->digest[0] ? "@" : "", r->digest);
    return k < 0 || (size_t)k >= outsz ? LB_E_TOOBIG : LB_OK;
}

int lb_image_ref_format(const lb_image_ref *r, char *out, size_t outsz)
{
    char tail[2 * LB_IMAGE_REF_MAX + 2];
    if (lb_image_ref_tail(r, tail, sizeof tail) != LB_OK)
        return LB_E_TOOBIG;
    int k = snprintf(out, outsz, "%s%s%s", r->host, r->host[0] ? "/" : "", tail);
    if (k < 0 || (size_t)k >= outsz || k > LB_IMAGE_REF_MAX)
        return LB_E_TOOBIG;
    return LB_OK;
}

int lb_image_ref_file_name(const lb_image_ref *r, char *out, size_t outsz)
{
    if (lb_image_ref_format(r, out, outsz) != LB_OK)
        return LB_E_TOOBIG;
    for (char *p = out; *p; p++)
        *p = *p == '/' ? '+' : *p == ':' ? '=' : *p == '@' ? ',' : *p;
    return LB_OK;
}

int lb_image_ref_from_file_name(const char *name, lb_image_ref *out, char *msg, size_t msgsz)
{
    char text[LB_IMAGE_REF_MAX + 1];
    size_t n = name ? strnlen(name, sizeof text) : 0;
    if (!n || n > LB_IMAGE_REF_MAX) {
        lb_say(msg, msgsz, "The file name is not one of an image reference.");
        return LB_E_INVAL;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c == '/' || c == ':' || c == '@') {
            lb_say(msg, msgsz, "The file name is not one of an image reference.");
            return LB_E_INVAL;
        }
        text[i] = c == '+' ? '/' : c == '=' ? ':' : c == ',' ? '@' : c;
    }
    text[n] = '\0';
    lb_image_ref r;
    int rc = lb_image_ref_parse(text, LB_IMAGE_REF_LOCAL, &r, msg, msgsz);
    if (rc)
        return rc;
    /* only the name we would have written: one reference, one file name */
    char back[LB_IMAGE_REF_MAX + 1];
    if (lb_image_ref_file_name(&r, back, sizeof back) != LB_OK || strcmp(back, name)) {
        lb_say(msg, msgsz, "The file name is not the normalized name of an image reference.");
        return LB_E_INVAL;
    }
    *out = r;
    return LB_OK;
}
