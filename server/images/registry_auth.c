/* Registry authentication: the challenge parser and the operator's
 * credentials (registry_auth.h). */
#include "images/registry_auth.h"

#include "common/util.h"

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static size_t skip_ows(const char *s, size_t i, size_t n)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

int lb_reg_challenge_parse(const char *s, size_t n, lb_reg_challenge *out, char *msg, size_t msgsz)
{
    lb_reg_challenge c;
    memset(&c, 0, sizeof c);
    if (!s || n == 0) {
        lb_say(msg, msgsz, "The registry asked for credentials without saying how (no WWW-Authenticate).");
        return LB_E_PROTO;
    }
    if (n > LB_REG_CHALLENGE_MAX) {
        lb_say(msg, msgsz, "The registry's WWW-Authenticate header is longer than %d bytes.", LB_REG_CHALLENGE_MAX);
        return LB_E_TOOBIG;
    }
    size_t i = skip_ows(s, 0, n);
    size_t start = i;
    while (i < n && is_token_char(s[i]))
        i++;
    size_t sl = i - start;
    if (sl == 6 && !strncasecmp(s + start, "bearer", 6)) {
        c.bearer = 1;
    } else if (sl == 5 && !strncasecmp(s + start, "basic", 5)) {
        c.bearer = 0;
    } else {
        lb_say(msg, msgsz, "The registry asks for an authentication scheme other than Basic or Bearer.");
        return LB_E_PROTO;
    }
    if (i < n && s[i] != ' ' && s[i] != '\t') {
        lb_say(msg, msgsz, "The registry's WWW-Authenticate header is malformed.");
        return LB_E_PROTO;
    }
    for (;;) {
        i = skip_ows(s, i, n);
        while (i < n && s[i] == ',')
            i = skip_ows(s, i + 1, n);
        if (i >= n)
            break;
        size_t ks = i;
        while (i < n && is_token_char(s[i]))
            i++;
        size_t kl = i - ks;
        i = skip_ows(s, i, n);
        if (kl == 0 || i >= n || s[i] != '=') {
            lb_say(msg, msgsz, "The registry's WWW-Authenticate header has a parameter without a value.");
            return LB_E_PROTO;
        }
        i = skip_ows(s, i + 1, n);
        char val[LB_REG_REALM_MAX + 1];
        size_t vl = 0;
        if (i < n && s[i] == '"') {
            i++;
            for (;;) {
                if (i >= n) {
                    lb_say(msg, msgsz, "The registry's WWW-Authenticate header has an unclosed quote.");
                    return LB_E_PROTO;
                }
                char ch = s[i++];
                if (ch == '"')
                    break;
                if (ch == '\\') {
                    if (i >= n) {
                        lb_say(msg, msgsz, "The registry's WWW-Authenticate header has an unclosed quote.");
                        return LB_E_PROTO;
                    }
                    ch = s[i++];
                }
                if ((unsigned char)ch < 0x20 || ch == 0x7f) {
                    lb_say(msg, msgsz, "The registry's WWW-Authenticate header holds a control character.");
                    return LB_E_PROTO;
                }
                if (vl >= LB_REG_REALM_MAX) {
                    lb_say(msg, msgsz, "A WWW-Authenticate parameter is longer than %d bytes.", LB_REG_REALM_MAX);
                    return LB_E_TOOBIG;
                }
                val[vl++] = ch;
            }
        } else {
            while (i < n && is_token_char(s[i])) {
                if (vl >= LB_REG_REALM_MAX) {
                    lb_say(msg, msgsz, "A WWW-Authenticate parameter is longer than %d bytes.", LB_REG_REALM_MAX);
                    return LB_E_TOOBIG;
                }
                val[vl++] = s[i++];
            }
        }
        val[vl] = '\0';
        i = skip_ows(s, i, n);
        if (i < n && s[i] != ',') {
            lb_say(msg, msgsz, "The registry's WWW-Authenticate header is malformed.");
            return LB_E_PROTO;
        }
        char *dst = NULL;
        size_t dsz = 0;
        if (kl == 5 && !strncasecmp(s + ks, "realm", 5)) {
            dst = c.realm;
            dsz = sizeof c.realm;
        } else if (kl == 7 && !strncasecmp(s + ks, "service", 7)) {
            dst = c.service;
            dsz = sizeof c.service;
        } else if (kl == 5 && !strncasecmp(s + ks, "scope", 5)) {
            dst = c.scope;
            dsz = sizeof c.scope;
        }
        if (dst) {
            if (vl >= dsz) {
                lb_say(msg, msgsz, "A WWW-Authenticate parameter is too long.");
                return LB_E_TOOBIG;
            }
            memcpy(dst, val, vl + 1);
        }
    }
    if (c.bearer && strncmp(c.realm, "https://", 8) && strncmp(c.realm, "http://", 7)) {
        lb_say(msg, msgsz, "The registry's token server (the Bearer realm) is not an http(s) URL.");
        return LB_E_PROTO;
    }
    *out = c;
    return LB_OK;
}

/* user and pass from base64("user:pass") */
static int split_auth(const char *b64, char *user, char *pass, size_t credsz)
{
    size_t n = strlen(b64);
    if (n == 0 || n > 4 * ((2 * LB_REG_CRED_MAX + 3) / 3) || n % 4)
        return LB_E_INVAL;
    unsigned char raw[2 * LB_REG_CRED_MAX + 8];
    int k = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    if (k < 0)
        return LB_E_INVAL;
    /* EVP_DecodeBlock counts the padding's zero bytes */
    if (n >= 1 && b64[n - 1] == '=')
        k--;
    if (n >= 2 && b64[n - 2] == '=')
        k--;
    raw[k] = '\0';
    if (memchr(raw, '\0', (size_t)k))
        return LB_E_INVAL;
    char *colon = strchr((char *)raw, ':');
    if (!colon)
        return LB_E_INVAL;
    *colon = '\0';
    if (strlen((char *)raw) >= credsz || strlen(colon + 1) >= credsz)
        return LB_E_TOOBIG;
    snprintf(user, credsz, "%s", (char *)raw);
    snprintf(pass, credsz, "%s", colon + 1);
    return LB_OK;
}

int lb_reg_credentials(const char *host, const char *auth_file, char *user, char *pass, size_t credsz,
                       int *found, char *msg, size_t msgsz)
{
    *found = 0;
    const char *eu = getenv("LLMBOX_REGISTRY_USER"), *ep = getenv("LLMBOX_REGISTRY_PASSWORD");
    if (eu && *eu && ep) {
        if (strlen(eu) >= credsz || strlen(ep) >= credsz) {
            lb_say(msg, msgsz, "LLMBOX_REGISTRY_USER or LLMBOX_REGISTRY_PASSWORD is too long.");
            return LB_E_TOOBIG;
        }
        snprintf(user, credsz, "%s", eu);
        snprintf(pass, credsz, "%s", ep);
        *found = 1;
        return LB_OK;
    }
    if (!auth_file || !*auth_file)
        return LB_OK;
    char *data = NULL;
    size_t len = 0;
    int rc = lb_read_file(auth_file, 1 << 20, &data, &len);
    if (rc == LB_E_NOTFOUND)
        return LB_OK;
    if (rc) {
        lb_say(msg, msgsz, "Cannot read the registry auth file %s: %s.", auth_file, lb_strerror(rc));
        return rc;
    }
    cJSON *doc = cJSON_ParseWithLength(data, len);
    free(data);
    cJSON *auths = doc ? cJSON_GetObjectItemCaseSensitive(doc, "auths") : NULL;
    if (!cJSON_IsObject(auths)) {
        cJSON_Delete(doc);
        lb_say(msg, msgsz, "The registry auth file %s is not a JSON object with \"auths\".", auth_file);
        return LB_E_INVAL;
    }
    cJSON *e = cJSON_GetObjectItemCaseSensitive(auths, host);
    if (!e && !strcmp(host, "docker.io"))
        e = cJSON_GetObjectItemCaseSensitive(auths, "https://index.docker.io/v1/");
    rc = LB_OK;
    if (cJSON_IsObject(e)) {
        cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "auth");
        cJSON *u = cJSON_GetObjectItemCaseSensitive(e, "username");
        cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "password");
        if (cJSON_IsString(a)) {
            rc = split_auth(a->valuestring, user, pass, credsz);
        } else if (cJSON_IsString(u) && cJSON_IsString(p)) {
            rc = strlen(u->valuestring) < credsz && strlen(p->valuestring) < credsz ? LB_OK : LB_E_TOOBIG;
            if (!rc) {
                snprintf(user, credsz, "%s", u->valuestring);
                snprintf(pass, credsz, "%s", p->valuestring);
            }
        } else {
            rc = LB_E_INVAL;
        }
        if (rc)
            lb_say(msg, msgsz, "The entry for %s in the registry auth file %s is not base64 \"user:password\".",
                host, auth_file);
        else
            *found = 1;
    }
    cJSON_Delete(doc);
    return rc;
}
