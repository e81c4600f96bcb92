// json.c - see json.h.
#include "core/grow.h"
#include "core/text.h"
#include "json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------
// reader

struct jparse {
    const char * s;
    size_t       n, pos;
    char *       err;
    size_t       err_size;
    bool         failed;
};

// Growable byte buffer for decoded strings.
struct jbuf {
    char * p;
    size_t n, cap;
};

static bool jbuf_put(struct jbuf * b, const char * s, size_t n) {
    if (n > SIZE_MAX - b->n - 1 || !TG_GROW(b->p, b->cap, b->n + n + 1)) return false;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

__attribute__((format(printf, 2, 3)))
static bool jfail(struct jparse * j, const char * fmt, ...) {
    if (j->failed) return false;
    j->failed = true;
    int k = snprintf(j->err, j->err_size, "column %zu: ", j->pos + 1);
    if (k >= 0 && (size_t) k < j->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(j->err + k, j->err_size - (size_t) k, fmt, ap);
        va_end(ap);
    }
    return false;
}

static void jskip_ws(struct jparse * j) {
    while (j->pos < j->n && (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' || j->s[j->pos] == '\n' ||
                             j->s[j->pos] == '\r')) {
        j->pos++;
    }
}

static bool jexpect(struct jparse * j, char c) {
    jskip_ws(j);
    if (j->pos >= j->n) return jfail(j, "expected '%c', found end of line", c);
    if (j->s[j->pos] != c) return jfail(j, "expected '%c', found '%c'", c, j->s[j->pos]);
    j->pos++;
    return true;
}

static int jhex4(const char * s) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t jutf8(uint32_t cp, char * o) {
    if (cp < 0x80) { o[0] = (char) cp; return 1; }
    if (cp < 0x800) { o[0] = (char) (0xC0 | cp >> 6); o[1] = (char) (0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char) (0xE0 | cp >> 12); o[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char) (0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char) (0xF0 | cp >> 18); o[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char) (0x80 | ((cp >> 6) & 0x3F)); o[3] = (char) (0x80 | (cp & 0x3F));
    return 4;
}

// Decodes \uXXXX (j->pos at the 'u'), joining a surrogate pair.
static bool jparse_u(struct jparse * j, struct jbuf * b) {
    if (j->pos + 5 > j->n) return jfail(j, "truncated \\u escape");
    int hi = jhex4(j->s + j->pos + 1);
    if (hi < 0) return jfail(j, "bad \\u escape");
    j->pos += 5;
    uint32_t cp = (uint32_t) hi;
    if (hi >= 0xDC00 && hi <= 0xDFFF) return jfail(j, "lone low surrogate \\u%04X", (unsigned) hi);
    if (hi >= 0xD800 && hi <= 0xDBFF) {
        if (j->pos + 6 > j->n || j->s[j->pos] != '\\' || j->s[j->pos + 1] != 'u') {
            return jfail(j, "high surrogate \\u%04X not followed by a low one", (unsigned) hi);
        }
        int lo = jhex4(j->s + j->pos + 2);
        if (lo < 0xDC00 || lo > 0xDFFF) {
            return jfail(j, "high surrogate \\u%04X not followed by a low one", (unsigned) hi);
        }
        j->pos += 6;
        cp = 0x10000 + (((uint32_t) hi - 0xD800) << 10) + ((uint32_t) lo - 0xDC00);
    }
    char o[4];
    return jbuf_put(b, o, jutf8(cp, o)) || jfail(j, "out of memory");
}

// Parses a string literal (j->pos at the opening quote) into *b.
static bool jparse_string(struct jparse * j, struct jbuf * b) {
    if (!jexpect(j, '"')) return false;
    if (!jbuf_put(b, "", 0)) return jfail(j, "out of memory");
    for (;;) {
        size_t start = j->pos;
        while (j->pos < j->n && j->s[j->pos] != '"' && j->s[j->pos] != '\\' &&
               (unsigned char) j->s[j->pos] >= 0x20) {
            j->pos++;
        }
        if (!jbuf_put(b, j->s + start, j->pos - start)) return jfail(j, "out of memory");
        if (j->pos >= j->n) return jfail(j, "unterminated string");
        char c = j->s[j->pos];
        if (c == '"') { j->pos++; return true; }
        if (c != '\\') return jfail(j, "raw control character 0x%02X in string", (unsigned) c);
        if (++j->pos >= j->n) return jfail(j, "unterminated escape");
        c = j->s[j->pos];
        const char * rep = NULL;
        switch (c) {
            case '"': rep = "\""; break;
            case '\\': rep = "\\"; break;
            case '/': rep = "/"; break;
            case 'b': rep = "\b"; break;
            case 'f': rep = "\f"; break;
            case 'n': rep = "\n"; break;
            case 'r': rep = "\r"; break;
            case 't': rep = "\t"; break;
            case 'u': if (!jparse_u(j, b)) return false; continue;
            default: return jfail(j, "bad escape '\\%c'", c);
        }
        if (!jbuf_put(b, rep, 1)) return jfail(j, "out of memory");
        j->pos++;
    }
}

// Parses a JSON number; *is_int tells whether it had no fraction/exponent.
static bool jparse_number(struct jparse * j, double * out, int64_t * iout, bool * is_int) {
    size_t start = j->pos;
    if (j->pos < j->n && j->s[j->pos] == '-') j->pos++;
    size_t digits = j->pos;
    while (j->pos < j->n && j->s[j->pos] >= '0' && j->s[j->pos] <= '9') j->pos++;
    if (j->pos == digits) return jfail(j, "expected a value");
    if (j->s[digits] == '0' && j->pos - digits > 1) return jfail(j, "number with a leading zero");
    *is_int = true;
    if (j->pos < j->n && j->s[j->pos] == '.') {
        *is_int = false;
        size_t d = ++j->pos;
        while (j->pos < j->n && j->s[j->pos] >= '0' && j->s[j->pos] <= '9') j->pos++;
        if (j->pos == d) return jfail(j, "digits expected after '.'");
    }
    if (j->pos < j->n && (j->s[j->pos] == 'e' || j->s[j->pos] == 'E')) {
        *is_int = false;
        j->pos++;
        if (j->pos < j->n && (j->s[j->pos] == '+' || j->s[j->pos] == '-')) j->pos++;
        size_t d = j->pos;
        while (j->pos < j->n && j->s[j->pos] >= '0' && j->s[j->pos] <= '9') j->pos++;
        if (j->pos == d) return jfail(j, "digits expected in exponent");
    }
    char tmp[64];
    size_t len = j->pos - start;
    if (len >= sizeof(tmp)) return jfail(j, "number too long");
    memcpy(tmp, j->s + start, len);
    tmp[len] = 0;
    *out = strtod(tmp, NULL);
    if (*is_int) {
        errno = 0;
        long long v = strtoll(tmp, NULL, 10);
        if (errno == ERANGE) return jfail(j, "integer out of range");
        *iout = v;
    }
    return true;
}

static bool jparse_int_array(struct jparse * j, struct tg_json_field * f) {
    j->pos++;   // '['
    size_t cap = 0;
    jskip_ws(j);
    if (j->pos < j->n && j->s[j->pos] == ']') { j->pos++; return true; }
    for (;;) {
        jskip_ws(j);
        double d;
        int64_t v = 0;
        bool is_int = false;
        if (j->pos < j->n && (j->s[j->pos] == '[' || j->s[j->pos] == '{' || j->s[j->pos] == '"')) {
            return jfail(j, "only arrays of integers are supported");
        }
        if (!jparse_number(j, &d, &v, &is_int)) return false;
        if (!is_int) return jfail(j, "only arrays of integers are supported");
        if (!TG_GROW(f->ints, cap, (size_t) f->n_ints + 1)) return jfail(j, "out of memory");
        f->ints[f->n_ints++] = v;
        jskip_ws(j);
        if (j->pos < j->n && j->s[j->pos] == ']') { j->pos++; return true; }
        if (!jexpect(j, ',')) return false;
    }
}

static bool jparse_literal(struct jparse * j, const char * word) {
    size_t l = strlen(word);
    if (j->pos + l > j->n || memcmp(j->s + j->pos, word, l) != 0) return jfail(j, "expected a value");
    j->pos += l;
    return true;
}

static bool jparse_value(struct jparse * j, struct tg_json_field * f) {
    jskip_ws(j);
    if (j->pos >= j->n) return jfail(j, "expected a value, found end of line");
    char c = j->s[j->pos];
    if (c == '"') {
        struct jbuf b = {0};
        bool ok = jparse_string(j, &b);
        f->kind = TG_JSON_STRING;
        f->str = b.p;
        f->str_len = b.n;
        return ok;
    }
    if (c == '[') { f->kind = TG_JSON_INT_ARRAY; return jparse_int_array(j, f); }
    if (c == '{') return jfail(j, "nested objects are not supported");
    if (c == 't' || c == 'f') {
        f->kind = TG_JSON_BOOL;
        f->num = c == 't';
        return jparse_literal(j, c == 't' ? "true" : "false");
    }
    if (c == 'n') { f->kind = TG_JSON_NULL; return jparse_literal(j, "null"); }
    int64_t iv;
    bool is_int;
    f->kind = TG_JSON_NUMBER;
    return jparse_number(j, &f->num, &iv, &is_int);
}

static bool jparse_members(struct jparse * j, struct tg_json_object * obj) {
    size_t cap = 0;
    jskip_ws(j);
    if (j->pos < j->n && j->s[j->pos] == '}') { j->pos++; return true; }
    for (;;) {
        if (!TG_GROW(obj->fields, cap, (size_t) obj->n + 1)) return jfail(j, "out of memory");
        struct tg_json_field * f = &obj->fields[obj->n++];
        memset(f, 0, sizeof(*f));
        struct jbuf key = {0};
        jskip_ws(j);
        bool ok = j->pos < j->n && j->s[j->pos] == '"' ? jparse_string(j, &key)
                                                         : jfail(j, "expected a key string");
        f->key = key.p;
        f->key_len = key.n;
        if (!ok || !jexpect(j, ':') || !jparse_value(j, f)) return false;
        jskip_ws(j);
        if (j->pos < j->n && j->s[j->pos] == '}') { j->pos++; return true; }
        if (!jexpect(j, ',')) return false;
    }
}

bool tg_json_parse_object(const char * s, size_t n, struct tg_json_object * obj, char * err, size_t err_size) {
    struct jparse j = {s, n, 0, err, err_size, false};
    obj->fields = NULL;
    obj->n = 0;
    if (err_size) err[0] = 0;
    bool ok = jexpect(&j, '{') && jparse_members(&j, obj);
    if (ok) {
        jskip_ws(&j);
        if (j.pos < j.n) ok = jfail(&j, "unexpected text after the object");
    }
    if (!ok) tg_json_object_free(obj);
    return ok;
}

const struct tg_json_field * tg_json_get(const struct tg_json_object * obj, const char * key) {
    size_t kl = strlen(key);
    for (size_t i = obj->n; i-- > 0;) {
        const struct tg_json_field * f = &obj->fields[i];
        if (f->key && f->key_len == kl && memcmp(f->key, key, kl) == 0) return f;
    }
    return NULL;
}

void tg_json_object_free(struct tg_json_object * obj) {
    if (!obj) return;
    for (size_t i = 0; i < obj->n; i++) {
        free(obj->fields[i].key);
        free(obj->fields[i].str);
        free(obj->fields[i].ints);
    }
    free(obj->fields);
    obj->fields = NULL;
    obj->n = 0;
}

// ---------------------------------------------------------------------------
// writer

void tg_json_write_string(FILE * f, const char * s, size_t n) {
    fputc('"', f);
    size_t run = 0;   // start of the pending run of unescaped bytes
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        const char * esc = NULL;
        char ubuf[8];
        switch (c) {
            case '"': esc = "\\\""; break;
            case '\\': esc = "\\\\"; break;
            case '\n': esc = "\\n"; break;
            case '\r': esc = "\\r"; break;
            case '\t': esc = "\\t"; break;
            case '\b': esc = "\\b"; break;
            case '\f': esc = "\\f"; break;
            default:
                if (c < 0x20) {
                    snprintf(ubuf, sizeof(ubuf), "\\u%04x", c);
                    esc = ubuf;
                } else if (c >= 0x80) {   // valid UTF-8 passes whole; a stray byte (a name cut mid-character) is U+FFFD
                    size_t k = tg_utf8_seq((const unsigned char *) s + i, n - i);
                    if (k) { i += k - 1; continue; }
                    esc = "\\ufffd";
                }
        }
        if (!esc) continue;
        fwrite(s + run, 1, i - run, f);
        fputs(esc, f);
        run = i + 1;
    }
    fwrite(s + run, 1, n - run, f);
    fputc('"', f);
}

void tg_json_write_ints(FILE * f, const int32_t * v, size_t n) {
    fputc('[', f);
    for (size_t i = 0; i < n; i++) fprintf(f, i ? ", %d" : "%d", (int) v[i]);
    fputc(']', f);
}
