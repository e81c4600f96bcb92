// cli.c - shared helpers of the `tgdb` command: errors and exit codes,
// strict number parsers, option tables (parse + help), escaping of untrusted
// strings for a terminal.
#include "cli.h"
#include "core/text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int tg_cli_err(const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tgdb: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return TG_CLI_ERROR;
}

int tg_cli_usage(const char * name) {
    const struct tg_cli_command * c = tg_cli_find(name);
    if (c) fprintf(stderr, "usage: tgdb %s\n(see 'tgdb help %s')\n", c->usage, c->name);
    return TG_CLI_ERROR;
}

void tg_cli_print_help(FILE * f, const struct tg_cli_command * c) {
    fprintf(f, "usage: tgdb %s\n%s\n", c->usage, c->summary);
    if (c->opts) {
        fprintf(f, "\noptions:\n");
        tg_cli_print_opts(f, c->opts);
    }
    fprintf(f, "\n%s\n", TG_CLI_EXIT_HELP);
}

// --- strict numbers ---------------------------------------------------------

bool tg_cli_i64(const char * what, const char * s, long long lo, long long hi, long long * out) {
    char * end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || *s == ' ' || *s == '\t' || *s == '\n') {
        tg_cli_err("%s: '%s' is not an integer", what, s);
        return false;
    }
    if (errno == ERANGE || v < lo || v > hi) {
        tg_cli_err("%s: %s is out of range (must be in %lld..%lld)", what, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

bool tg_cli_int(const char * what, const char * s, long long lo, long long hi, int * out) {
    long long v;
    if (lo < INT32_MIN) lo = INT32_MIN;
    if (hi > INT32_MAX) hi = INT32_MAX;
    if (!tg_cli_i64(what, s, lo, hi, &v)) return false;
    *out = (int) v;
    return true;
}

bool tg_cli_u64(const char * what, const char * s, uint64_t * out) {
    char * end;
    errno = 0;
    if (*s < '0' || *s > '9') { // no sign, no space: strtoull would accept "-1"
        tg_cli_err("%s: '%s' is not a non-negative integer", what, s);
        return false;
    }
    unsigned long long v = strtoull(s, &end, 0);
    if (*end) { tg_cli_err("%s: '%s' is not a non-negative integer", what, s); return false; }
    if (errno == ERANGE) { tg_cli_err("%s: %s does not fit in 64 bits", what, s); return false; }
    *out = (uint64_t) v;
    return true;
}

bool tg_cli_float(const char * what, const char * s, double lo, double hi, float * out) {
    char * end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || *s == ' ' || *s == '\t' || *s == '\n') {
        tg_cli_err("%s: '%s' is not a number", what, s);
        return false;
    }
    if (!isfinite(v) || errno == ERANGE || !isfinite((float) v)) {
        tg_cli_err("%s: '%s' is not a finite number", what, s);
        return false;
    }
    if (v < lo || v > hi) {
        tg_cli_err("%s: %s is out of range (must be in %g..%g)", what, s, lo, hi);
        return false;
    }
    *out = (float) v;
    return true;
}

bool tg_cli_parse_int(const char * s, long lo, long hi, int * out) {
    char * end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || *s == ' ' || v < lo || v > hi) return false;
    *out = (int) v;
    return true;
}

// --- option tables ----------------------------------------------------------

static bool choice_ok(const char * choices, const char * v) {
    size_t n = strlen(v);
    for (const char * p = choices; *p;) {
        const char * bar = strchr(p, '|');
        size_t len = bar ? (size_t) (bar - p) : strlen(p);
        if (len == n && n && !strncmp(p, v, n)) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static bool set_value(const char * cmd, const struct tg_cli_opt * o, void * base, const char * v) {
    char * dst = (char *) base + o->off;
    char what[160];
    snprintf(what, sizeof what, "%s: %s", cmd, o->name);
    switch (o->kind) {
    case TG_CLI_STR:   *(const char **) dst = v; return true;
    case TG_CLI_INT:   return tg_cli_int(what, v, (long long) o->lo, (long long) o->hi, (int *) dst);
    case TG_CLI_U64:   return tg_cli_u64(what, v, (uint64_t *) dst);
    case TG_CLI_FLOAT: return tg_cli_float(what, v, o->lo, o->hi, (float *) dst);
    case TG_CLI_CHOICE:
        if (!choice_ok(o->choices, v)) {
            tg_cli_err("%s: '%s' is not one of %s", what, v, o->choices);
            return false;
        }
        *(const char **) dst = v;
        return true;
    case TG_CLI_FLAG:  break;
    }
    return false;
}

static const struct tg_cli_opt * find_opt(const struct tg_cli_opt * opts, const char * a, size_t len) {
    for (const struct tg_cli_opt * o = opts; o && o->name; o++) {
        if (strlen(o->name) == len && !strncmp(o->name, a, len)) return o;
        if (o->short_name && strlen(o->short_name) == len && !strncmp(o->short_name, a, len)) return o;
    }
    return NULL;
}

int tg_cli_parse_opts(const char * cmd, const struct tg_cli_opt * opts, void * base,
                      int argc, char ** argv, const char ** pos, int max_pos, int * n_pos) {
    int np = 0;
    bool only_pos = false;
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (np >= max_pos) return tg_cli_err("%s: too many arguments ('%s'; see 'tgdb help %s')", cmd, a, cmd);
            pos[np++] = a;
            continue;
        }
        if (!strcmp(a, "--")) { only_pos = true; continue; }
        const char * eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t) (eq - a) : strlen(a);
        const struct tg_cli_opt * o = find_opt(opts, a, len);
        if (!o) {
            // a negative number as a positional word ("-1") is not an option
            if ((a[1] >= '0' && a[1] <= '9') || a[1] == '.') {
                if (np >= max_pos) return tg_cli_err("%s: too many arguments ('%s')", cmd, a);
                pos[np++] = a;
                continue;
            }
            return tg_cli_err("%s: unknown option %.*s (see 'tgdb help %s')", cmd, (int) len, a, cmd);
        }
        if (o->kind == TG_CLI_FLAG) {
            if (eq) return tg_cli_err("%s: %s takes no value", cmd, o->name);
            *(bool *) ((char *) base + o->off) = true;
            continue;
        }
        const char * v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) return tg_cli_err("%s: %s needs a value (%s)", cmd, o->name, o->value ? o->value : "VALUE");
            v = argv[++i];
        }
        if (!set_value(cmd, o, base, v)) return TG_CLI_ERROR;
    }
    if (n_pos) *n_pos = np;
    return TG_CLI_OK;
}

void tg_cli_print_opts(FILE * f, const struct tg_cli_opt * opts) {
    for (const struct tg_cli_opt * o = opts; o && o->name; o++) {
        char left[96];
        snprintf(left, sizeof left, "%s%s%s%s%s", o->short_name ? o->short_name : "", o->short_name ? ", " : "",
                 o->name, o->value ? " " : "", o->value ? o->value : "");
        fprintf(f, "  %-28s %s", left, o->help);
        if (o->kind == TG_CLI_INT) fprintf(f, " [%.0f..%.0f]", o->lo, o->hi);
        else if (o->kind == TG_CLI_FLOAT) fprintf(f, " [%g..%g]", o->lo, o->hi);
        else if (o->kind == TG_CLI_CHOICE) fprintf(f, " [%s]", o->choices);
        fputc('\n', f);
    }
}

// --- untrusted strings ------------------------------------------------------

void tg_cli_fputs_escaped(FILE * f, const char * s) {
    size_t n = strlen(s);
    char small[256];
    size_t need = tg_escape(small, sizeof small, s, n);
    if (need < sizeof small) { fputs(small, f); return; }
    char * big = malloc(need + 1);
    if (!big) { fputs("(name too long)", f); return; }
    tg_escape(big, need + 1, s, n);
    fputs(big, f);
    free(big);
}
