// json.h - a small JSON writer and a minimal reader for files holding one
// JSON object per line (JSON Lines), as used by `tgdb tokenize --jsonl`.
//
// The reader accepts objects whose values are strings (every escape,
// including \uXXXX surrogate pairs, decoded to UTF-8), numbers, true, false,
// null and arrays of integers. Nested objects and other arrays are rejected
// with a clear message: this is not a general JSON library.
#ifndef TG_CLI_JSON_H
#define TG_CLI_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum tg_json_kind {
    TG_JSON_NULL,
    TG_JSON_BOOL,
    TG_JSON_NUMBER,
    TG_JSON_STRING,
    TG_JSON_INT_ARRAY,
};

struct tg_json_field {
    char *            key;        // NUL-terminated UTF-8
    size_t            key_len;
    enum tg_json_kind kind;
    char *            str;        // TG_JSON_STRING: decoded bytes, NUL-terminated (may hold NULs)
    size_t            str_len;
    double            num;        // TG_JSON_NUMBER; TG_JSON_BOOL: 0 or 1
    int64_t *         ints;       // TG_JSON_INT_ARRAY
    size_t            n_ints;
};

struct tg_json_object {
    struct tg_json_field * fields;
    size_t                 n;
};

// Parses s[0..n), which must hold exactly one JSON object (surrounding
// whitespace allowed). On success fills *obj (caller frees it with
// tg_json_object_free) and returns true; on failure returns false, leaves
// *obj empty and writes "column C: what" into err[0..err_size).
bool tg_json_parse_object(const char * s, size_t n, struct tg_json_object * obj, char * err, size_t err_size);

// Returns the field named key (the last one if repeated), or NULL.
const struct tg_json_field * tg_json_get(const struct tg_json_object * obj, const char * key);

// Frees what tg_json_parse_object allocated and empties *obj (NULL is fine).
void tg_json_object_free(struct tg_json_object * obj);

// Writes s[0..n) as a JSON string literal, escaped the way Python's
// json.dumps(ensure_ascii=False) does: \" \\ \n \r \t \b \f, other control
// characters as \u00xx, well-formed UTF-8 as is; a byte that does not start
// a well-formed UTF-8 sequence (a name cut inside a character) as \ufffd, so
// the output is always valid JSON.
void tg_json_write_string(FILE * f, const char * s, size_t n);

// Writes an array of integers as "[1, 2, 3]" (Python's json.dumps spacing).
void tg_json_write_ints(FILE * f, const int32_t * v, size_t n);

#endif // TG_CLI_JSON_H
