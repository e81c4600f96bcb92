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
#include <sys/stat.h>

int tg_cli_err(const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tgdb: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return TG_CLI_ERROR;
}

char * tg_cli_read_file(const char * cmd, const char * path, size_t * len) {
    FILE * f = fopen(path, "rb");
    if (!f) { tg_cli_err("%s: cannot open %s: %s", cmd, path, strerror(errno)); return NULL; }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        tg_cli_err("%s: %s is a directory, not a file", cmd, path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    int err = 0;
    char * buf = malloc(cap + 1);
    while (buf) {
        errno = 0;
        n += fread(buf + n, 1, cap - n, f);
        if (ferror(f)) { err = errno ? errno : EIO; break; }
        if (n < cap) break;   // the end of the file
        char * nb = cap <= SIZE_MAX / 2 - 1 ? realloc(buf, cap * 2 + 1) : NULL;
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (!buf) { tg_cli_err("%s: out of memory reading %s (over %zu bytes)", cmd, path, n); return NULL; }
    if (err) { free(buf); tg_cli_err("%s: cannot read %s: %s", cmd, path, strerror(err)); return NULL; }
    buf[n] = 0;
    *len = n;
    return buf;
}

int tg_cli_usage(const char * name) {
    const struct tg_cli_command * c = tg_cli_find(name);
    if (c) fprintf(stderr, "usage: tgdb %s\n(see 'tgdb help %s')\n", c->usage, c->name);
    return TG_CLI_ERROR;
}

void tg_cli_print_help(FILE * f, const struct tg_cli_command * c) {
    fprintf(f, "usage: tgdb %s\n%s\n", c->usage, c->summary);
    if (c->opts) {
        void * d = c->opts_size ? calloc(1, c->opts_size) : NULL;
        if (d && c->opts_init) c->opts_init(d);
        fprintf(f, "\noptions:\n");
        tg_cli_print_opts(f, c->opts, d);
        free(d);
    }
    fprintf(f, "\n%s\n", TG_CLI_EXIT_HELP);
}

// --- strict numbers ---------------------------------------------------------

// The one integer parser: the whole of s, decimal, optional sign, no
// spaces. 0 ok, 1 not an integer, 2 out of long long range.
static int parse_ll(const char * s, long long * out) {
    char * end;
    errno = 0;
    if (!*s || *s == ' ' || *s == '\t' || *s == '\n') return 1;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end) return 1;
    if (errno == ERANGE) return 2;
    *out = v;
    return 0;
}

bool tg_cli_i64(const char * what, const char * s, long long lo, long long hi, long long * out) {
    long long v = 0;
    int r = parse_ll(s, &v);
    if (r == 1) {
        tg_cli_err("%s: '%s' is not an integer", what, s);
        return false;
    }
    if (r == 2 || v < lo || v > hi) {
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

bool tg_cli_double(const char * what, const char * s, double lo, double hi, double * out) {
    char * end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || *s == ' ' || *s == '\t' || *s == '\n') {
        tg_cli_err("%s: '%s' is not a number", what, s);
        return false;
    }
    if (!isfinite(v) || errno == ERANGE) {
        tg_cli_err("%s: '%s' is not a finite number", what, s);
        return false;
    }
    if (v < lo || v > hi) {
        tg_cli_err("%s: %s is out of range (must be in %g..%g)", what, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

bool tg_cli_float(const char * what, const char * s, double lo, double hi, float * out) {
    double v;
    if (!tg_cli_double(what, s, lo, hi, &v)) return false;
    if (!isfinite((float) v)) {
        tg_cli_err("%s: '%s' is not a finite number", what, s);
        return false;
    }
    *out = (float) v;
    return true;
}

bool tg_cli_parse_int(const char * s, long lo, long hi, int * out) {
    long long v = 0;
    if (parse_ll(s, &v) || v < lo || v > hi) return false;
    *out = (int) v;
    return true;
}

bool tg_cli_int_list(const char * what, const char * s, long long lo, long long hi, struct tg_cli_ints * out) {
    struct tg_cli_ints r = { 0 };
    const char * p = s;
    for (;;) {
        const char * comma = strchr(p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen(p);
        char item[32];
        if (len == 0 || len >= sizeof item) {
            tg_cli_err("%s: '%s' is not a comma-separated list of integers", what, s);
            return false;
        }
        if (r.n == TG_CLI_INTS_MAX) {
            tg_cli_err("%s: '%s' has more than %d values", what, s, TG_CLI_INTS_MAX);
            return false;
        }
        memcpy(item, p, len);
        item[len] = 0;
        if (!tg_cli_int(what, item, lo, hi, &r.v[r.n])) return false;
        r.n++;
        if (!comma) break;
        p = comma + 1;
    }
    *out = r;
    return true;
}

// --- option tables ----------------------------------------------------------

// Index of v among the '|'-separated words of choices, or -1.
static int choice_index(const char * choices, const char * v, size_t n) {
    int i = 0;
    for (const char * p = choices; *p; i++) {
        const char * bar = strchr(p, '|');
        size_t len = bar ? (size_t) (bar - p) : strlen(p);
        if (len == n && n && !strncmp(p, v, n)) return i;
        if (!bar) break;
        p = bar + 1;
    }
    return -1;
}

// The i-th word of choices into buf.
static const char * choice_word(const char * choices, int i, char * buf, size_t cap) {
    const char * p = choices;
    for (; i > 0 && p; i--) { p = strchr(p, '|'); if (p) p++; }
    if (!p) return "?";
    const char * bar = strchr(p, '|');
    size_t len = bar ? (size_t) (bar - p) : strlen(p);
    if (len >= cap) len = cap - 1;
    memcpy(buf, p, len);
    buf[len] = 0;
    return buf;
}

static bool set_choices(const char * what, const struct tg_cli_opt * o, const char * v, struct tg_cli_ints * out) {
    struct tg_cli_ints r = { 0 };
    for (const char * p = v;;) {
        const char * comma = strchr(p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen(p);
        int k = choice_index(o->choices, p, len);
        if (k < 0 || r.n == TG_CLI_INTS_MAX) {
            tg_cli_err("%s: '%.*s' is not one of %s", what, (int) len, p, o->choices);
            return false;
        }
        r.v[r.n++] = k;
        if (!comma) break;
        p = comma + 1;
    }
    *out = r;
    return true;
}

static bool set_value(const char * cmd, const struct tg_cli_opt * o, char * base, const char * v) {
    char * dst = base + o->off;
    char what[160];
    snprintf(what, sizeof what, "%s: %s", cmd, o->name);
    switch (o->kind) {
    case TG_CLI_STR:   *(const char **) dst = v; return true;
    case TG_CLI_INT:   return tg_cli_int(what, v, (long long) o->lo, (long long) o->hi, (int *) dst);
    case TG_CLI_U64:   return tg_cli_u64(what, v, (uint64_t *) dst);
    case TG_CLI_INTS:  return tg_cli_int_list(what, v, (long long) o->lo, (long long) o->hi, (struct tg_cli_ints *) dst);
    case TG_CLI_CHOICES: return set_choices(what, o, v, (struct tg_cli_ints *) dst);
    case TG_CLI_FLOAT:
    case TG_CLI_DOUBLE: {
        double f;
        if (!tg_cli_double(what, v, o->lo, o->hi, &f)) return false;
        if (o->open_lo && f <= o->lo) {
            tg_cli_err("%s: %s is out of range (must be > %g)", what, v, o->lo);
            return false;
        }
        if (o->kind == TG_CLI_DOUBLE) { *(double *) dst = f; return true; }
        return tg_cli_float(what, v, o->lo, o->hi, (float *) dst);
    }
    case TG_CLI_CHOICE: {
        int k = choice_index(o->choices, v, strlen(v));
        if (k < 0) {
            tg_cli_err("%s: '%s' is not one of %s", what, v, o->choices);
            return false;
        }
        *(int *) dst = k;
        return true;
    }
    case TG_CLI_FLAG:
    case TG_CLI_TABLE: break;
    }
    return false;
}

// The first option named a[0..len) in opts (depth first, in order); *base_off
// gets the offset of the group it belongs to.
static const struct tg_cli_opt * find_opt(const struct tg_cli_opt * opts, const char * a, size_t len, size_t * base_off) {
    for (const struct tg_cli_opt * o = opts; o && o->name; o++) {
        if (o->kind == TG_CLI_TABLE) {
            size_t sub = 0;
            const struct tg_cli_opt * r = find_opt(o->table, a, len, &sub);
            if (r) { *base_off = o->off + sub; return r; }
            continue;
        }
        if (strlen(o->name) == len && !strncmp(o->name, a, len)) { *base_off = 0; return o; }
        if (o->short_name && strlen(o->short_name) == len && !strncmp(o->short_name, a, len)) { *base_off = 0; return o; }
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
        const char * eq = strchr(a, '=');
        size_t len = eq ? (size_t) (eq - a) : strlen(a);
        size_t off = 0;
        const struct tg_cli_opt * o = find_opt(opts, a, len, &off);
        if (!o) {
            // a negative number as a positional word ("-1") is not an option
            if ((a[1] >= '0' && a[1] <= '9') || a[1] == '.') {
                if (np >= max_pos) return tg_cli_err("%s: too many arguments ('%s')", cmd, a);
                pos[np++] = a;
                continue;
            }
            return tg_cli_err("%s: unknown option %.*s (see 'tgdb help %s')", cmd, (int) len, a, cmd);
        }
        char * b = (char *) base + off;
        if (o->kind == TG_CLI_FLAG) {
            if (eq) return tg_cli_err("%s: %s takes no value", cmd, o->name);
            *(bool *) (b + o->off) = true;
            continue;
        }
        const char * v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) return tg_cli_err("%s: %s needs a value (%s)", cmd, o->name, o->value ? o->value : "VALUE");
            v = argv[++i];
        }
        if (!set_value(cmd, o, b, v)) return TG_CLI_ERROR;
    }
    if (n_pos) *n_pos = np;
    return TG_CLI_OK;
}

// The default of o (an option at b + o->off) as text, or NULL when it has none.
static const char * default_text(const struct tg_cli_opt * o, const char * b, char * buf, size_t cap) {
    const char * p = b + o->off;
    switch (o->kind) {
    case TG_CLI_STR:   return *(const char * const *) p;
    case TG_CLI_INT:   // a value outside the range is the "not given" sentinel: no default
        if (*(const int *) p < o->lo || *(const int *) p > o->hi) return NULL;
        snprintf(buf, cap, "%d", *(const int *) p);
        return buf;
    case TG_CLI_U64:   snprintf(buf, cap, "%llu", (unsigned long long) *(const uint64_t *) p); return buf;
    case TG_CLI_FLOAT: snprintf(buf, cap, "%g", (double) *(const float *) p); return buf;
    case TG_CLI_DOUBLE: snprintf(buf, cap, "%g", *(const double *) p); return buf;
    case TG_CLI_CHOICE: return *(const int *) p < 0 ? NULL : choice_word(o->choices, *(const int *) p, buf, cap);
    case TG_CLI_INTS:
    case TG_CLI_CHOICES: {
        const struct tg_cli_ints * l = (const struct tg_cli_ints *) p;
        if (l->n == 0) return NULL;
        size_t n = 0;
        buf[0] = 0;
        for (int i = 0; i < l->n && n + 1 < cap; i++) {
            char w[32];
            const char * t = w;
            if (o->kind == TG_CLI_INTS) snprintf(w, sizeof w, "%d", l->v[i]);
            else t = choice_word(o->choices, l->v[i], w, sizeof w);
            n += (size_t) snprintf(buf + n, cap - n, "%s%s", i ? "," : "", t);
        }
        return buf;
    }
    case TG_CLI_FLAG:
    case TG_CLI_TABLE: break;
    }
    return NULL;
}

static void print_opts(FILE * f, const struct tg_cli_opt * root, const struct tg_cli_opt * opts, const char * b) {
    for (const struct tg_cli_opt * o = opts; o && o->name; o++) {
        if (o->kind == TG_CLI_TABLE) {
            fprintf(f, "%s:\n", o->name);
            print_opts(f, root, o->table, b ? b + o->off : NULL);
            continue;
        }
        size_t off;
        if (find_opt(root, o->name, strlen(o->name), &off) != o) continue; // overridden by the command
        char left[96];
        snprintf(left, sizeof left, "%s%s%s%s%s", o->short_name ? o->short_name : "", o->short_name ? ", " : "",
                 o->name, o->value ? " " : "", o->value ? o->value : "");
        fprintf(f, "  %-26s %s", left, o->help);
        if (o->kind == TG_CLI_INT || o->kind == TG_CLI_INTS) fprintf(f, " [%.0f..%.0f]", o->lo, o->hi);
        else if (o->kind == TG_CLI_FLOAT || o->kind == TG_CLI_DOUBLE) fprintf(f, o->open_lo ? " [>%g..%g]" : " [%g..%g]", o->lo, o->hi);
        else if (o->kind == TG_CLI_CHOICE || o->kind == TG_CLI_CHOICES) fprintf(f, " [%s]", o->choices);
        char buf[160];
        const char * d = b ? default_text(o, b, buf, sizeof buf) : NULL;
        if (d) fprintf(f, " (default %s)", d);
        fputc('\n', f);
    }
}

void tg_cli_print_opts(FILE * f, const struct tg_cli_opt * opts, const void * defaults) {
    print_opts(f, opts, opts, (const char *) defaults);
}

// --- tensor slices -----------------------------------------------------------

// A slice bound: empty (open end) gives def; false for junk.
static bool slice_num(const char * s, size_t len, long long def, long long * out) {
    char buf[32];
    if (len == 0) { *out = def; return true; }
    if (len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    return parse_ll(buf, out) == 0;
}

bool tg_cli_parse_slice(const char * s, const int64_t ne[4], int64_t * lo, int64_t * hi, char * err, size_t n_err) {
    long long n = (long long) (ne[0] * ne[1] * ne[2] * ne[3]), a, b;
    size_t len = strlen(s);
    const char * p = s;
    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') { p = s + 1; len -= 2; }
    else if (len && (s[0] == '[' || s[len - 1] == ']')) goto bad;
    const char * comma = memchr(p, ',', len), * colon = memchr(p, ':', len);
    if (comma) {
        size_t l1 = (size_t) (comma - p), l2 = len - l1 - 1;
        if (!slice_num(p, l1, -1, &a) || a < 0) goto bad;
        if (l2 == 1 && comma[1] == ':') { a *= ne[0]; b = a + ne[0]; }
        else if (slice_num(comma + 1, l2, -1, &b) && b >= 0) {
            if (b >= ne[0]) { snprintf(err, n_err, "slice %s: column %lld out of range (rows have %lld elements)", s, b, (long long) ne[0]); return false; }
            a = a * ne[0] + b;
            b = a + 1;
        } else goto bad;
    } else if (colon) {
        size_t l1 = (size_t) (colon - p);
        if (!slice_num(p, l1, 0, &a) || !slice_num(colon + 1, len - l1 - 1, n, &b)) goto bad;
    } else goto bad;
    if (a < 0 || b > n || a >= b) {
        snprintf(err, n_err, "slice %s out of range: the tensor has %lld elements (%lld per row)", s, n, (long long) ne[0]);
        return false;
    }
    *lo = a;
    *hi = b;
    return true;
bad:
    snprintf(err, n_err, "bad slice '%s' (use [a:b], [a:], [:b], [row,:], [row,col] or [:])", s);
    return false;
}

void tg_cli_print_range(const float * v, const int64_t ne[4], int64_t lo, int64_t hi) {
    int64_t n0 = ne[0];
    for (int64_t i = lo; i < hi;) {
        int64_t row = i / n0;
        int64_t end = (row + 1) * n0 < hi ? (row + 1) * n0 : hi;
        int64_t i1 = row % ne[1], i2 = (row / ne[1]) % ne[2], i3 = row / (ne[1] * ne[2]);
        printf("  [%lld,%lld,%lld][%lld:%lld]", (long long) i1, (long long) i2, (long long) i3, (long long) (i % n0),
               (long long) (end - row * n0));
        for (int64_t k = i; k < end; k++) printf("%s%.6g", (k - i) % 8 == 0 ? "\n    " : " ", v[k]);
        printf("\n");
        i = end;
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
