/* SPDX-License-Identifier: MIT */
/* A small recursive-descent JSON reader for the vector files, and hex. */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/vectors.h"

struct cursor {
    const char *p, *end;
    int failed;
};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        abort();
    return p;
}

static void skip_space(struct cursor *c)
{
    while (c->p < c->end && isspace((unsigned char)*c->p))
        c->p++;
}

static int parse_value(struct cursor *c, struct json *out);

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Strings in the vector files are ASCII; \u escapes below 0x80 decode,
 * others become '?'. */
static char *parse_string(struct cursor *c)
{
    if (c->p >= c->end || *c->p != '"')
        return NULL;
    c->p++;
    char *s = xcalloc((size_t)(c->end - c->p) + 1, 1), *o = s;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if (ch == '\\' && c->p < c->end) {
            char e = *c->p++;
            switch (e) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case 'u': {
                int v = 0;
                for (int i = 0; i < 4 && c->p < c->end; i++)
                    v = v * 16 + hexval(*c->p++);
                ch = v < 0x80 && v >= 0 ? (char)v : '?';
                break;
            }
            default: ch = e;
            }
        }
        *o++ = ch;
    }
    if (c->p >= c->end) {
        free(s);
        return NULL;
    }
    c->p++;
    return s;
}

static int parse_container(struct cursor *c, struct json *out, char close, int is_object)
{
    size_t cap = 8;
    out->child = xcalloc(cap, sizeof(*out->child));
    if (is_object)
        out->keys = xcalloc(cap, sizeof(*out->keys));
    c->p++;
    skip_space(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        if (out->n == cap) {
            cap *= 2;
            out->child = realloc(out->child, cap * sizeof(*out->child));
            if (is_object)
                out->keys = realloc(out->keys, cap * sizeof(*out->keys));
            if (!out->child || (is_object && !out->keys))
                abort();
        }
        skip_space(c);
        if (is_object) {
            out->keys[out->n] = parse_string(c);
            skip_space(c);
            if (!out->keys[out->n] || c->p >= c->end || *c->p++ != ':')
                return -1;
        }
        memset(&out->child[out->n], 0, sizeof(out->child[0]));
        out->n++;
        if (parse_value(c, &out->child[out->n - 1]))
            return -1;
        skip_space(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == close) {
            c->p++;
            return 0;
        }
        return -1;
    }
}

static int parse_literal(struct cursor *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n))
        return -1;
    c->p += n;
    return 0;
}

static int parse_value(struct cursor *c, struct json *out)
{
    skip_space(c);
    if (c->p >= c->end)
        return -1;
    switch (*c->p) {
    case '{': out->type = JSON_OBJECT; return parse_container(c, out, '}', 1);
    case '[': out->type = JSON_ARRAY;  return parse_container(c, out, ']', 0);
    case '"': out->type = JSON_STRING; out->str = parse_string(c); return out->str ? 0 : -1;
    case 't': out->type = JSON_BOOL; out->boolean = 1; return parse_literal(c, "true");
    case 'f': out->type = JSON_BOOL; return parse_literal(c, "false");
    case 'n': out->type = JSON_NULL; return parse_literal(c, "null");
    default: {
        const char *start = c->p;
        while (c->p < c->end && strchr("+-0123456789.eE", *c->p))
            c->p++;
        if (c->p == start)
            return -1;
        out->type = JSON_NUMBER;
        out->str = strndup(start, (size_t)(c->p - start));
        return out->str ? 0 : -1;
    }
    }
}

const char *vectors_path(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("DDPNET_VECTORS");
    snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "../shared/vectors", rel);
    return path;
}

struct json *json_load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = xcalloc((size_t)size + 1, 1);
    size_t got = fread(text, 1, (size_t)size, f);
    fclose(f);
    struct cursor c = { text, text + got, 0 };
    struct json *j = xcalloc(1, sizeof(*j));
    if (parse_value(&c, j)) {
        long at = (long)(c.p - text);
        json_free(j);
        free(text);
        /* There but broken is not "missing": the test fails, never skips. */
        fail_msg("%s: not valid JSON near byte %ld", path, at);
        return NULL;
    }
    free(text);
    return j;
}

static void json_release(struct json *j)
{
    for (size_t i = 0; i < j->n; i++) {
        json_release(&j->child[i]);
        if (j->keys)
            free(j->keys[i]);
    }
    free(j->child);
    free(j->keys);
    free(j->str);
}

void json_free(struct json *j)
{
    if (!j)
        return;
    json_release(j);
    free(j);
}

const struct json *json_get(const struct json *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i] && !strcmp(obj->keys[i], key))
            return &obj->child[i];
    return NULL;
}

const char *json_get_str(const struct json *obj, const char *key)
{
    const struct json *v = json_get(obj, key);
    return v && v->type == JSON_STRING ? v->str : "";
}

long json_get_int(const struct json *obj, const char *key)
{
    const struct json *v = json_get(obj, key);
    return v && v->type == JSON_NUMBER ? strtol(v->str, NULL, 10) : 0;
}

uint8_t *hex_decode(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    if (n % 2) {
        fprintf(stderr, "odd-length hex: %s\n", hex);
        abort();
    }
    uint8_t *out = xcalloc(n / 2, 1);
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            fprintf(stderr, "bad hex: %s\n", hex);
            abort();
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    *len = n / 2;
    return out;
}

void hex_decode_to(uint8_t *out, size_t outlen, const char *hex)
{
    size_t len;
    uint8_t *buf = hex_decode(hex, &len);
    if (len != outlen) {
        fprintf(stderr, "hex of %zu bytes where %zu expected: %s\n", len, outlen, hex);
        abort();
    }
    memcpy(out, buf, len);
    free(buf);
}

void vectors_report(const char *name, size_t passed, size_t total)
{
    printf("%s: %zu/%zu\n", name, passed, total);
    fflush(stdout);
}
