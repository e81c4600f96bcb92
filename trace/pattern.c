// pattern.c - glob matching for contents selection ("blk.3.*", "op=MUL_MAT").
#include "tg/trace.h"

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
