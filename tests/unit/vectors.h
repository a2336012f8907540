/* SPDX-License-Identifier: MIT */
/* Test support: reads the JSON vector files of ../shared/vectors (a small
 * JSON reader, enough for those files) and decodes hex. Tests only. */
#ifndef DDPNET_TEST_VECTORS_H
#define DDPNET_TEST_VECTORS_H

#include <stddef.h>
#include <stdint.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
    enum json_type type;
    char *str;              /* JSON_STRING: decoded text; JSON_NUMBER: its text */
    size_t n;               /* ARRAY/OBJECT: number of children */
    struct json *child;     /* ARRAY/OBJECT: children */
    char **keys;            /* OBJECT: child i's key */
    int boolean;
};

/* Path of a vector file: $DDPNET_VECTORS/rel (the Makefile sets it). */
const char *vectors_path(const char *rel);
/* Parses a file; NULL if it is missing (the suite skips). A file that is
 * there but not valid JSON fails the calling test (cmocka's fail_msg). */
struct json *json_load(const char *path);
void json_free(struct json *j);
/* Member of an object, or NULL. */
const struct json *json_get(const struct json *obj, const char *key);
/* String member, or "" when absent. */
const char *json_get_str(const struct json *obj, const char *key);
long json_get_int(const struct json *obj, const char *key);

/* Decodes hex into a new buffer (never NULL; *len set). Aborts on bad hex. */
uint8_t *hex_decode(const char *hex, size_t *len);
/* Decodes exactly outlen bytes of hex into out; aborts on a length mismatch. */
void hex_decode_to(uint8_t *out, size_t outlen, const char *hex);

/* Prints the suite's closing line "<name>: <passed>/<total>". */
void vectors_report(const char *name, size_t passed, size_t total);

#endif
