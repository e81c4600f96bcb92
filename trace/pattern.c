// pattern.c - glob matching for contents selection ("blk.3.*", "op=MUL_MAT").
#include "tg/trace.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

bool tg_trace_glob(const char * pat, const char * s) {
    if (!pat || !s) return false;
    const char * star = NULL, * back = NULL;
    while (*s) {
        if (*pat == '*') { star = ++pat; back = s; continue; }
        if (*pat == '?' || *pat == *s) { pat++; s++; continue; }
        if (!star) return false;
        pat = star;
        s = ++back;
    }
    while (*pat == '*') pat++;
    return *pat == '\0';
}

bool tg_trace_pattern_match(const char * patterns, const char * name, const char * op_name) {
    if (!patterns || !*patterns) return false;
    char item[256];
    const char * p = patterns;
    while (*p) {
        const char * comma = strchr(p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen(p);
        if (n > 0 && n < sizeof(item)) {
            memcpy(item, p, n);
            item[n] = '\0';
            if (strncmp(item, "op=", 3) == 0) {
                if (op_name && tg_trace_glob(item + 3, op_name)) return true;
            } else if (name && tg_trace_glob(item, name)) {
                return true;
            }
        }
        if (!comma) break;
        p = comma + 1;
    }
    return false;
}

// Case-insensitive glob (op and type names).
static bool glob_nocase(const char * pat, const char * s) {
    char p2[256], s2[256];
    size_t i;
    for (i = 0; pat[i] && i + 1 < sizeof(p2); i++) p2[i] = (char) toupper((unsigned char) pat[i]);
    p2[i] = '\0';
    for (i = 0; s[i] && i + 1 < sizeof(s2); i++) s2[i] = (char) toupper((unsigned char) s[i]);
    s2[i] = '\0';
    return tg_trace_glob(p2, s2);
}

// One item against one node.
static bool filter_item(const char * item, const char * name, const char * op_name, const char * type_name) {
    if (!strncmp(item, "op=", 3)) return op_name && glob_nocase(item + 3, op_name);
    if (!strncmp(item, "type=", 5)) return type_name && glob_nocase(item + 5, type_name);
    if (!strncmp(item, "name=", 5)) return name && tg_trace_glob(item + 5, name);
    return name && tg_trace_glob(item, name);
}

bool tg_trace_filter_match(const char * filter, const char * name, const char * op_name, const char * type_name) {
    if (!filter || !*filter) return true;
    char item[256];
    for (const char * p = filter;;) {
        const char * comma = strchr(p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen(p);
        if (n > 0 && n < sizeof(item)) {
            memcpy(item, p, n);
            item[n] = '\0';
            if (filter_item(item, name, op_name, type_name)) return true;
        }
        if (!comma) return false;
        p = comma + 1;
    }
}

bool tg_trace_filter_check(const char * filter, char * why, size_t cap) {
    if (!filter) return true;
    for (const char * p = filter;;) {
        const char * comma = strchr(p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen(p);
        const char * eq = memchr(p, '=', n);
        if (n == 0) { snprintf(why, cap, "empty item (items are separated by single commas)"); return false; }
        if (n >= 256) { snprintf(why, cap, "item longer than 255 characters"); return false; }
        if (eq && !(eq - p == 2 && !strncmp(p, "op", 2)) && !(eq - p == 4 && !strncmp(p, "type", 4)) &&
            !(eq - p == 4 && !strncmp(p, "name", 4))) {
            snprintf(why, cap, "unknown key '%.*s=' (items: NAME-GLOB, name=GLOB, op=GLOB, type=GLOB)", (int) (eq - p), p);
            return false;
        }
        if (!comma) return true;
        p = comma + 1;
    }
}
