// gguf-access.c - read accessors of a parsed GGUF file: header fields,
// key/values (typed getters with range-checked conversion, formatting) and
// tensor infos and data.
#include "core/text.h"
#include "gguf-impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

uint32_t tg_gguf_version(const struct tg_gguf * g)     { return g ? g->version : 0; }
size_t   tg_gguf_alignment(const struct tg_gguf * g)   { return g ? g->alignment : 0; }
size_t   tg_gguf_data_offset(const struct tg_gguf * g) { return g ? g->data_offset : 0; }
size_t   tg_gguf_file_size(const struct tg_gguf * g)   { return g ? g->size : 0; }
bool     tg_gguf_data_complete(const struct tg_gguf * g) { return g && g->data_complete; }
const char * tg_gguf_data_error(const struct tg_gguf * g) { return g ? g->data_error : NULL; }

const void * tg_gguf_data(const struct tg_gguf * g) {
    if (!g || !g->data_complete || g->data_offset > g->size) return NULL;
    return g->base + g->data_offset;
}

int64_t tg_gguf_n_kv(const struct tg_gguf * g)      { return g ? g->n_kv : 0; }
int64_t tg_gguf_n_tensors(const struct tg_gguf * g) { return g ? g->n_tensors : 0; }

int64_t tg_gguf_find_key(const struct tg_gguf * g, const char * key) {
    if (!g || !key || !g->kv_hash) return -1;
    return tg_gguf_index_find(g->kv_hash, g->kv_hash_cap, (const char * const *) &g->kv[0].key, sizeof(*g->kv), key);
}

int64_t tg_gguf_find_tensor(const struct tg_gguf * g, const char * name) {
    if (!g || !name || !g->ti_hash) return -1;
    return tg_gguf_index_find(g->ti_hash, g->ti_hash_cap, (const char * const *) &g->ti[0].name, sizeof(*g->ti), name);
}

static const struct tg_gguf_kv * kv_at(const struct tg_gguf * g, int64_t i) {
    if (!g || i < 0 || i >= g->n_kv) {
        tg_error(TG_ERR_INVALID_ARG, "gguf: kv index %lld out of range (%lld key/values)", (long long) i,
                 (long long) (g ? g->n_kv : 0));
        return NULL;
    }
    return &g->kv[i];
}

const char * tg_gguf_key(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    return kv ? kv->key : NULL;
}

enum tg_gguf_type tg_gguf_kv_type(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    return kv ? kv->type : TG_GGUF_TYPE_COUNT;
}

uint64_t tg_gguf_kv_offset(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    return kv ? kv->file_off : 0;
}

enum tg_gguf_type tg_gguf_arr_type(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    return kv && kv->type == TG_GGUF_ARRAY ? kv->arr_type : TG_GGUF_TYPE_COUNT;
}

int64_t tg_gguf_arr_n(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    return kv && kv->type == TG_GGUF_ARRAY ? kv->arr_n : -1;
}

const void * tg_gguf_arr_data(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    if (!kv || kv->type != TG_GGUF_ARRAY || kv->arr_type == TG_GGUF_STRING) return NULL;
    return kv->arr_data;
}

const char * tg_gguf_arr_str(const struct tg_gguf * g, int64_t i, int64_t j, size_t * len) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    if (!kv) return NULL;
    if (kv->type != TG_GGUF_ARRAY || kv->arr_type != TG_GGUF_STRING) {
        tg_error(TG_ERR_TYPE, "gguf: key '%s' is not an array of strings", kv->key);
        return NULL;
    }
    if (j < 0 || j >= kv->arr_n) {
        tg_error(TG_ERR_INVALID_ARG, "gguf: key '%s': item %lld out of range (%lld items)", kv->key,
                 (long long) j, (long long) kv->arr_n);
        return NULL;
    }
    if (len) *len = kv->arr_offs[j + 1] - kv->arr_offs[j] - 1;
    return kv->arr_blob + kv->arr_offs[j];
}

const char * tg_gguf_kv_str(const struct tg_gguf * g, int64_t i, size_t * len) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    if (!kv || kv->type != TG_GGUF_STRING) return NULL;
    if (len) *len = kv->str_len;
    return kv->str;
}

const void * tg_gguf_kv_data(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_kv * kv = kv_at(g, i);
    return kv ? kv->val : NULL;
}

// ---- typed getters ----------------------------------------------------------

// A numeric scalar as either an exact integer (is_int) or a double.
struct num { bool is_int; bool neg; uint64_t u; int64_t i; double f; };

static bool kv_num(const struct tg_gguf_kv * kv, struct num * n) {
    const uint8_t * v = kv->val;
    memset(n, 0, sizeof(*n));
    n->is_int = true;
    switch (kv->type) {
    case TG_GGUF_UINT8:  n->u = v[0]; break;
    case TG_GGUF_INT8:   n->i = (int8_t) v[0]; n->neg = n->i < 0; n->u = (uint64_t) n->i; break;
    case TG_GGUF_UINT16: { uint16_t x; memcpy(&x, v, 2); n->u = x; break; }
    case TG_GGUF_INT16:  { int16_t x; memcpy(&x, v, 2); n->i = x; n->neg = x < 0; n->u = (uint64_t) n->i; break; }
    case TG_GGUF_UINT32: { uint32_t x; memcpy(&x, v, 4); n->u = x; break; }
    case TG_GGUF_INT32:  { int32_t x; memcpy(&x, v, 4); n->i = x; n->neg = x < 0; n->u = (uint64_t) n->i; break; }
    case TG_GGUF_UINT64: memcpy(&n->u, v, 8); break;
    case TG_GGUF_INT64:  memcpy(&n->i, v, 8); n->neg = n->i < 0; n->u = (uint64_t) n->i; break;
    case TG_GGUF_FLOAT32: { float x; memcpy(&x, v, 4); n->is_int = false; n->f = x; return true; }
    case TG_GGUF_FLOAT64: memcpy(&n->f, v, 8); n->is_int = false; return true;
    default: return false;
    }
    if (!n->neg) n->i = (int64_t) n->u;   // may wrap for u64 > INT64_MAX: checked by callers
    n->f = n->neg ? (double) n->i : (double) n->u;
    return true;
}

static const struct tg_gguf_kv * get_kv(const struct tg_gguf * g, const char * key) {
    int64_t i = tg_gguf_find_key(g, key);
    if (i < 0) { tg_error(TG_ERR_INVALID_ARG, "gguf: key '%s' not found", key ? key : "(null)"); return NULL; }
    return &g->kv[i];
}

static bool get_int(const struct tg_gguf * g, const char * key, struct num * n, const char * want) {
    const struct tg_gguf_kv * kv = get_kv(g, key);
    if (!kv) return false;
    if (!kv_num(kv, n) || !n->is_int) {
        tg_error(TG_ERR_TYPE, "gguf: key '%s' is %s, expected %s", key, tg_gguf_type_name(kv->type), want);
        return false;
    }
    return true;
}

static bool range_err(const char * key, const struct num * n, const char * want) {
    if (n->neg) tg_error(TG_ERR_TYPE, "gguf: key '%s' value %" PRId64 " does not fit %s", key, n->i, want);
    else tg_error(TG_ERR_TYPE, "gguf: key '%s' value %" PRIu64 " does not fit %s", key, n->u, want);
    return false;
}

bool tg_gguf_get_u32(const struct tg_gguf * g, const char * key, uint32_t * out) {
    struct num n;
    if (!get_int(g, key, &n, "uint32")) return false;
    if (n.neg || n.u > UINT32_MAX) return range_err(key, &n, "uint32");
    *out = (uint32_t) n.u;
    return true;
}

bool tg_gguf_get_i32(const struct tg_gguf * g, const char * key, int32_t * out) {
    struct num n;
    if (!get_int(g, key, &n, "int32")) return false;
    if (n.neg ? n.i < INT32_MIN : n.u > INT32_MAX) return range_err(key, &n, "int32");
    *out = n.neg ? (int32_t) n.i : (int32_t) n.u;
    return true;
}

bool tg_gguf_get_u64(const struct tg_gguf * g, const char * key, uint64_t * out) {
    struct num n;
    if (!get_int(g, key, &n, "uint64")) return false;
    if (n.neg) return range_err(key, &n, "uint64");
    *out = n.u;
    return true;
}

bool tg_gguf_get_i64(const struct tg_gguf * g, const char * key, int64_t * out) {
    struct num n;
    if (!get_int(g, key, &n, "int64")) return false;
    if (!n.neg && n.u > INT64_MAX) return range_err(key, &n, "int64");
    *out = n.neg ? n.i : (int64_t) n.u;
    return true;
}

bool tg_gguf_get_f32(const struct tg_gguf * g, const char * key, float * out) {
    const struct tg_gguf_kv * kv = get_kv(g, key);
    if (!kv) return false;
    struct num n;
    if (!kv_num(kv, &n)) {
        tg_error(TG_ERR_TYPE, "gguf: key '%s' is %s, expected a number", key, tg_gguf_type_name(kv->type));
        return false;
    }
    *out = (float) n.f;
    return true;
}

bool tg_gguf_get_bool(const struct tg_gguf * g, const char * key, bool * out) {
    const struct tg_gguf_kv * kv = get_kv(g, key);
    if (!kv) return false;
    if (kv->type != TG_GGUF_BOOL) {
        tg_error(TG_ERR_TYPE, "gguf: key '%s' is %s, expected bool", key, tg_gguf_type_name(kv->type));
        return false;
    }
    *out = kv->val[0] != 0;
    return true;
}

const char * tg_gguf_get_str(const struct tg_gguf * g, const char * key) {
    const struct tg_gguf_kv * kv = get_kv(g, key);
    if (!kv) return NULL;
    if (kv->type != TG_GGUF_STRING) {
        tg_error(TG_ERR_TYPE, "gguf: key '%s' is %s, expected string", key, tg_gguf_type_name(kv->type));
        return NULL;
    }
    return kv->str;
}

// ---- formatting ---------------------------------------------------------------

struct sbuf { char * p; size_t n, len; };

static void sb_printf(struct sbuf * b, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf * b, const char * fmt, ...) {
    if (b->len + 1 >= b->n) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p + b->len, b->n - b->len, fmt, ap);
    va_end(ap);
    if (k > 0) b->len = b->len + (size_t) k < b->n ? b->len + (size_t) k : b->n - 1;
}

// s (n bytes, from the file) as "...": escaped by tg_escape (control
// characters, C1 and bytes that are not UTF-8 as \xNN) and \" ; cut, when
// the buffer is full, between whole characters and escapes only.
static void sb_quoted(struct sbuf * b, const char * s, size_t n) {
    sb_printf(b, "\"");
    for (size_t i = 0; i < n;) {
        size_t k = tg_utf8_seq((const unsigned char *) s + i, n - i);
        if (k == 0) k = 1;
        char piece[16];
        size_t plen = s[i] == '"' ? (size_t) snprintf(piece, sizeof piece, "\\\"") : tg_escape(piece, sizeof piece, s + i, k);
        if (b->len + plen + 2 >= b->n) break;   // room for the piece and the closing quote
        memcpy(b->p + b->len, piece, plen + 1);
        b->len += plen;
        i += k;
    }
    sb_printf(b, "\"");
}

// One scalar of type t at v (little-endian bytes).
static void sb_scalar(struct sbuf * b, enum tg_gguf_type t, const uint8_t * v) {
    struct tg_gguf_kv tmp = {.type = t, .val = v};
    struct num n;
    if (t == TG_GGUF_BOOL) { sb_printf(b, "%s", v[0] ? "true" : "false"); return; }
    if (!kv_num(&tmp, &n)) { sb_printf(b, "?"); return; }
    if (!n.is_int) sb_printf(b, "%.9g", n.f);
    else if (n.neg) sb_printf(b, "%" PRId64, n.i);
    else sb_printf(b, "%" PRIu64, n.u);
}

char * tg_gguf_value_str(const struct tg_gguf * g, int64_t i, size_t max_elems, char * buf, size_t n) {
    if (!buf || n == 0) return buf;
    buf[0] = '\0';
    const struct tg_gguf_kv * kv = kv_at(g, i);
    if (!kv) return buf;
    struct sbuf b = {buf, n, 0};
    if (kv->type == TG_GGUF_STRING) { sb_quoted(&b, kv->str, kv->str_len); return buf; }
    if (kv->type != TG_GGUF_ARRAY) { sb_scalar(&b, kv->type, kv->val); return buf; }
    sb_printf(&b, "[");
    size_t sz = tg_gguf_type_size(kv->arr_type);
    for (int64_t j = 0; j < kv->arr_n && (size_t) j < max_elems; j++) {
        if (j) sb_printf(&b, ", ");
        if (kv->arr_type == TG_GGUF_STRING)
            sb_quoted(&b, kv->arr_blob + kv->arr_offs[j], kv->arr_offs[j + 1] - kv->arr_offs[j] - 1);
        else
            sb_scalar(&b, kv->arr_type, kv->arr_data + (size_t) j * sz);
    }
    if ((uint64_t) kv->arr_n > max_elems)
        sb_printf(&b, "%s... (%lld items)", max_elems ? ", " : "", (long long) kv->arr_n);
    sb_printf(&b, "]");
    return buf;
}

// ---- tensors --------------------------------------------------------------------

const struct tg_gguf_tensor_info * tg_gguf_tensor(const struct tg_gguf * g, int64_t i) {
    if (!g || i < 0 || i >= g->n_tensors) {
        tg_error(TG_ERR_INVALID_ARG, "gguf: tensor index %lld out of range (%lld tensors)", (long long) i,
                 (long long) (g ? g->n_tensors : 0));
        return NULL;
    }
    return &g->ti[i];
}

uint64_t tg_gguf_tensor_info_offset(const struct tg_gguf * g, int64_t i) {
    return tg_gguf_tensor(g, i) ? g->ti_file_off[i] : 0;
}

const void * tg_gguf_tensor_data(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, i);
    if (!t) return NULL;
    size_t avail = g->size > g->data_offset ? g->size - g->data_offset : 0;
    if (t->offset > avail || t->size > avail - t->offset) {
        tg_error(TG_ERR_FORMAT, "gguf: tensor '%s': data [%zu, %zu) is past the end of the file (%zu bytes): "
                 "the data section is cut short", t->name, g->data_offset + (size_t) t->offset,
                 g->data_offset + (size_t) t->offset + t->size, g->size);
        return NULL;
    }
    return g->base + g->data_offset + t->offset;
}
