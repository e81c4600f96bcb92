// gguf.c - GGUF reader: open (read into private memory) or parse a memory image, validating every
// field before use. Errors name the field and its file offset. Nothing is
// allocated from a count before the remaining bytes could hold that count.
#include "core/grow.h"
#include "gguf-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// Parse cursor. `what` describes the item being parsed, e.g.
// "key 'general.name' (kv 3 at offset 120)", and prefixes every message.
struct rd {
    const uint8_t * p;
    size_t          size;
    size_t          pos;
    char            what[192];
};

static void * fail_null(struct rd * r, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
static bool   fail(struct rd * r, const char * fmt, ...) __attribute__((format(printf, 2, 3)));

static void vfail(struct rd * r, const char * fmt, va_list ap) {
    char msg[640];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    tg_error(TG_ERR_FORMAT, "gguf: %s: %s", r->what, msg);
}
static bool fail(struct rd * r, const char * fmt, ...) {
    va_list ap; va_start(ap, fmt); vfail(r, fmt, ap); va_end(ap);
    return false;
}
static void * fail_null(struct rd * r, const char * fmt, ...) {
    va_list ap; va_start(ap, fmt); vfail(r, fmt, ap); va_end(ap);
    return NULL;
}

static void set_what(struct rd * r, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_what(struct rd * r, const char * fmt, ...) {
    va_list ap; va_start(ap, fmt);
    vsnprintf(r->what, sizeof(r->what), fmt, ap);
    va_end(ap);
}

// Copies a name for messages: printable ASCII, at most 64 characters.
static const char * printable(const char * s, size_t n, char * buf, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        if (i == 64) { memcpy(buf + o, "...", 3); o += 3; break; }
        unsigned char c = (unsigned char) s[i];
        buf[o++] = (c >= 0x20 && c < 0x7f && c != '\'') ? (char) c : '?';
    }
    buf[o] = '\0';
    return buf;
}

static size_t left(const struct rd * r) { return r->size - r->pos; }

static bool need(struct rd * r, size_t n, const char * field) {
    if (n <= left(r)) return true;
    return fail(r, "%s at offset %zu: file ends (needs %zu bytes, %zu left)", field, r->pos, n, left(r));
}

static bool rd_u32(struct rd * r, uint32_t * v, const char * field) {
    if (!need(r, 4, field)) return false;
    const uint8_t * b = r->p + r->pos;
    *v = (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
    r->pos += 4;
    return true;
}

static bool rd_u64(struct rd * r, uint64_t * v, const char * field) {
    if (!need(r, 8, field)) return false;
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = x << 8 | r->p[r->pos + (size_t) i];
    *v = x;
    r->pos += 8;
    return true;
}

// Reads a GGUF string header (u64 length) and checks the bytes are present.
// On success *s points into the image and the cursor is past the string.
static bool rd_str(struct rd * r, const char ** s, size_t * len, const char * field) {
    size_t at = r->pos;
    uint64_t n;
    if (!rd_u64(r, &n, field)) return false;
    if (n > left(r))
        return fail(r, "%s length %llu at offset %zu exceeds the %zu bytes left in the file",
                    field, (unsigned long long) n, at, left(r));
    *s = (const char *) r->p + r->pos;
    *len = (size_t) n;
    r->pos += (size_t) n;
    return true;
}

static char * dup_str(const char * s, size_t n) {
    char * d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

// A name (key or tensor name): non-empty, no NUL byte, at most max_len bytes.
static char * rd_name(struct rd * r, const char * field, size_t max_len) {
    const char * s; size_t n; size_t at = r->pos;
    if (!rd_str(r, &s, &n, field)) return NULL;
    if (n == 0) return fail_null(r, "%s at offset %zu is empty", field, at);
    if (memchr(s, '\0', n)) return fail_null(r, "%s at offset %zu contains a NUL byte", field, at);
    if (n > max_len) return fail_null(r, "%s at offset %zu is %zu bytes long (max %zu)", field, at, n, max_len);
    char * d = dup_str(s, n);
    if (!d) tg_error(TG_ERR_NOMEM, "gguf: %s: out of memory", r->what);
    return d;
}

static bool rd_value_type(struct rd * r, enum tg_gguf_type * t, const char * field) {
    size_t at = r->pos;
    uint32_t v;
    if (!rd_u32(r, &v, field)) return false;
    if ((int32_t) v < 0)
        return fail(r, "%s at offset %zu is %d (negative): not a valid value type", field, at, (int32_t) v);
    if (v >= TG_GGUF_TYPE_COUNT)
        return fail(r, "%s at offset %zu is %u: unknown value type id (valid: 0..%d)", field, at, v, TG_GGUF_TYPE_COUNT - 1);
    *t = (enum tg_gguf_type) v;
    return true;
}

// Array of strings: validate every length first (no allocation), then copy
// every item NUL-terminated into one blob.
static bool rd_str_array(struct rd * r, struct tg_gguf_kv * kv, uint64_t n) {
    size_t start = r->pos, total = 0;
    for (uint64_t j = 0; j < n; j++) {
        size_t at = r->pos;
        uint64_t len;
        if (!rd_u64(r, &len, "array item length")) return false;
        if (len > left(r))
            return fail(r, "string item %llu length %llu at offset %zu exceeds the %zu bytes left in the file",
                        (unsigned long long) j, (unsigned long long) len, at, left(r));
        r->pos += (size_t) len;
        total += (size_t) len + 1;
    }
    kv->arr_offs = malloc(((size_t) n + 1) * sizeof(size_t));
    kv->arr_blob = malloc(total ? total : 1);
    if (!kv->arr_offs || !kv->arr_blob) { tg_error(TG_ERR_NOMEM, "gguf: %s: out of memory", r->what); return false; }
    size_t pos = start, o = 0;
    for (uint64_t j = 0; j < n; j++) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--) len = len << 8 | r->p[pos + (size_t) i];
        pos += 8;
        kv->arr_offs[j] = o;
        memcpy(kv->arr_blob + o, r->p + pos, (size_t) len);
        o += (size_t) len;
        kv->arr_blob[o++] = '\0';
        pos += (size_t) len;
    }
    kv->arr_offs[n] = o;
    return true;
}

static bool rd_array(struct rd * r, struct tg_gguf_kv * kv) {
    size_t at = r->pos;
    if (!rd_value_type(r, &kv->arr_type, "array element type")) return false;
    if (kv->arr_type == TG_GGUF_ARRAY)
        return fail(r, "array element type at offset %zu is array: nested arrays (arrays of arrays) are not supported", at);
    at = r->pos;
    uint64_t n;
    if (!rd_u64(r, &n, "array length")) return false;
    size_t elem = kv->arr_type == TG_GGUF_STRING ? 8 : tg_gguf_type_size(kv->arr_type);
    if (n > left(r) / elem)
        return fail(r, "array length %llu at offset %zu: %llu %s items cannot fit in the %zu bytes left in the file",
                    (unsigned long long) n, at, (unsigned long long) n, tg_gguf_type_name(kv->arr_type), left(r));
    kv->arr_n = (int64_t) n;
    if (kv->arr_type == TG_GGUF_STRING) return rd_str_array(r, kv, n);
    kv->arr_data = r->p + r->pos;
    r->pos += (size_t) n * elem;
    return true;
}

static bool rd_value(struct rd * r, struct tg_gguf_kv * kv) {
    if (kv->type == TG_GGUF_ARRAY) return rd_array(r, kv);
    if (kv->type == TG_GGUF_STRING) {
        const char * s;
        if (!rd_str(r, &s, &kv->str_len, "string value")) return false;
        kv->str = dup_str(s, kv->str_len);
        if (!kv->str) { tg_error(TG_ERR_NOMEM, "gguf: %s: out of memory", r->what); return false; }
        return true;
    }
    size_t n = tg_gguf_type_size(kv->type);
    if (!need(r, n, "value")) return false;
    kv->val = r->p + r->pos;
    r->pos += n;
    return true;
}

static bool check_alignment_kv(struct rd * r, struct tg_gguf * g, const struct tg_gguf_kv * kv) {
    if (kv->type != TG_GGUF_UINT32)
        return fail(r, "must be uint32, got %s", tg_gguf_type_name(kv->type));
    uint32_t a;
    memcpy(&a, kv->val, 4);   // little-endian host (checked at open)
    if (a == 0) return fail(r, "value 0 at offset %zu is not a valid alignment", r->pos - 4);
    if (a & (a - 1)) return fail(r, "value %u at offset %zu is not a power of two", a, r->pos - 4);
    if (a > TG_GGUF_MAX_ALIGNMENT)
        return fail(r, "value %u at offset %zu is absurd (max %u)", a, r->pos - 4, TG_GGUF_MAX_ALIGNMENT);
    g->alignment = a;
    return true;
}

static bool parse_kvs(struct rd * r, struct tg_gguf * g, uint64_t n_kv) {
    size_t cap = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        size_t at = r->pos;
        set_what(r, "kv %llu (at offset %zu)", (unsigned long long) i, at);
        if (!TG_GROW(g->kv, cap, (size_t) g->n_kv + 1))
            return tg_error(TG_ERR_NOMEM, "gguf: out of memory"), false;
        struct tg_gguf_kv * kv = &g->kv[g->n_kv];
        memset(kv, 0, sizeof(*kv));
        kv->file_off = at;
        kv->key = rd_name(r, "key", SIZE_MAX);
        if (!kv->key) return false;
        g->n_kv++;
        char pb[80];
        set_what(r, "key '%s' (kv %llu at offset %zu)", printable(kv->key, strlen(kv->key), pb, sizeof(pb)),
                 (unsigned long long) i, at);
        if (!rd_value_type(r, &kv->type, "value type")) return false;
        if (!rd_value(r, kv)) return false;
        kv->end_off = r->pos;
        if (strcmp(kv->key, TG_GGUF_KEY_ALIGNMENT) == 0 && !check_alignment_kv(r, g, kv)) return false;
    }
    if (g->n_kv == 0) return true;
    int64_t dup;
    g->kv_hash = tg_gguf_index((const char * const *) &g->kv[0].key, sizeof(*g->kv), g->n_kv, &g->kv_hash_cap, &dup);
    if (!g->kv_hash) return tg_error(TG_ERR_NOMEM, "gguf: out of memory"), false;
    if (dup >= 0) {
        char pb[80];
        set_what(r, "key '%s' (kv %lld at offset %llu)", printable(g->kv[dup].key, strlen(g->kv[dup].key), pb, sizeof(pb)),
                 (long long) dup, (unsigned long long) g->kv[dup].file_off);
        return fail(r, "duplicate key (first defined by kv %lld)",
                    (long long) tg_gguf_index_find(g->kv_hash, g->kv_hash_cap, (const char * const *) &g->kv[0].key,
                                                   sizeof(*g->kv), g->kv[dup].key));
    }
    return true;
}

static bool rd_dims(struct rd * r, struct tg_gguf_tensor_info * t) {
    size_t at = r->pos;
    uint32_t nd;
    if (!rd_u32(r, &nd, "n_dims")) return false;
    if (nd == 0 || nd > TG_MAX_DIMS)
        return fail(r, "n_dims %u at offset %zu is out of range (1..%d)", nd, at, TG_MAX_DIMS);
    t->n_dims = (int) nd;
    int64_t nel = 1;
    for (int d = 0; d < TG_MAX_DIMS; d++) t->ne[d] = 1;
    for (int d = 0; d < (int) nd; d++) {
        at = r->pos;
        uint64_t v;
        char field[32];
        snprintf(field, sizeof(field), "dimension %d", d);
        if (!rd_u64(r, &v, field)) return false;
        if ((int64_t) v < 0)
            return fail(r, "dimension %d at offset %zu is negative (%lld as int64)", d, at, (long long) (int64_t) v);
        if (v == 0) return fail(r, "dimension %d at offset %zu is 0", d, at);
        t->ne[d] = (int64_t) v;
        if (__builtin_mul_overflow(nel, t->ne[d], &nel))
            return fail(r, "dimension %d at offset %zu: element count overflows int64", d, at);
    }
    return true;
}

static bool rd_tensor_type(struct rd * r, struct tg_gguf_tensor_info * t) {
    size_t at = r->pos;
    uint32_t ty;
    if (!rd_u32(r, &ty, "type")) return false;
    if ((int32_t) ty < 0) return fail(r, "type id %d at offset %zu is negative", (int32_t) ty, at);
    const struct tg_gguf_type_layout * l = tg_gguf_layout(ty);
    if (!l) return fail(r, "type id %u at offset %zu is unknown or was removed from GGUF", ty, at);
    t->type = (enum tg_type) ty;
    if (t->ne[0] % l->blck_size != 0)
        return fail(r, "dimension 0 (%lld) is not a multiple of the %s block size %lld",
                    (long long) t->ne[0], l->name, (long long) l->blck_size);
    uint64_t bytes = (uint64_t) (t->ne[0] / l->blck_size) * l->type_size;
    for (int d = 1; d < t->n_dims; d++)
        if (__builtin_mul_overflow(bytes, (uint64_t) t->ne[d], &bytes) || bytes > SIZE_MAX)
            return fail(r, "byte size overflows (%s, %lld x %lld x %lld x %lld)", l->name, (long long) t->ne[0],
                        (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3]);
    t->size = (size_t) bytes;
    return true;
}

static bool parse_tensor(struct rd * r, struct tg_gguf * g, struct tg_gguf_tensor_info * t, uint64_t i) {
    size_t at = r->pos;
    set_what(r, "tensor %llu (info at offset %zu)", (unsigned long long) i, at);
    char * name = rd_name(r, "name", TG_MAX_NAME - 1);
    if (!name) return false;
    t->name = name;
    g->n_tensors++;
    char pb[80];
    set_what(r, "tensor '%s' (info at offset %zu)", printable(name, strlen(name), pb, sizeof(pb)), at);
    if (!rd_dims(r, t) || !rd_tensor_type(r, t)) return false;
    size_t oat = r->pos;
    if (!rd_u64(r, &t->offset, "data offset")) return false;
    if (t->offset % g->alignment != 0)
        return fail(r, "data offset %llu at offset %zu is not a multiple of the alignment %zu",
                    (unsigned long long) t->offset, oat, g->alignment);
    uint64_t end;
    if (__builtin_add_overflow(t->offset, (uint64_t) t->size, &end))
        return fail(r, "data offset %llu + size %zu overflows", (unsigned long long) t->offset, t->size);
    return true;
}

static bool parse_tensors(struct rd * r, struct tg_gguf * g, uint64_t n_tensors) {
    size_t cap = 0, cap2 = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (!TG_GROW(g->ti, cap, (size_t) g->n_tensors + 1) || !TG_GROW(g->ti_file_off, cap2, (size_t) g->n_tensors + 1))
            return tg_error(TG_ERR_NOMEM, "gguf: out of memory"), false;
        struct tg_gguf_tensor_info * t = &g->ti[g->n_tensors];
        memset(t, 0, sizeof(*t));
        g->ti_file_off[g->n_tensors] = r->pos;
        if (!parse_tensor(r, g, t, i)) return false;
    }
    if (g->n_tensors == 0) return true;
    int64_t dup;
    g->ti_hash = tg_gguf_index((const char * const *) &g->ti[0].name, sizeof(*g->ti), g->n_tensors, &g->ti_hash_cap, &dup);
    if (!g->ti_hash) return tg_error(TG_ERR_NOMEM, "gguf: out of memory"), false;
    if (dup >= 0) {
        char pb[80];
        set_what(r, "tensor '%s' (info at offset %llu)", printable(g->ti[dup].name, strlen(g->ti[dup].name), pb, sizeof(pb)),
                 (unsigned long long) g->ti_file_off[dup]);
        return fail(r, "duplicate tensor name");
    }
    return true;
}

struct ord_item { uint64_t offset; int64_t i; };
static int cmp_offset(const void * a, const void * b) {
    const struct ord_item * x = a, * y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

// Checks tensor extents: no overlap; data past the end of the file is a
// "cut short" data section when the layout is the packed one every writer
// produces (in offset order, gaps below the alignment), else an error.
static bool check_layout(struct rd * r, struct tg_gguf * g) {
    if (g->n_tensors == 0) return true;
    struct ord_item * o = malloc((size_t) g->n_tensors * sizeof(*o));
    int64_t * ord = malloc((size_t) g->n_tensors * sizeof(*ord));
    if (!o || !ord) { free(o); free(ord); return tg_error(TG_ERR_NOMEM, "gguf: out of memory"), false; }
    for (int64_t i = 0; i < g->n_tensors; i++) o[i] = (struct ord_item) {g->ti[i].offset, i};
    qsort(o, (size_t) g->n_tensors, sizeof(*o), cmp_offset);
    for (int64_t i = 0; i < g->n_tensors; i++) ord[i] = o[i].i;
    bool packed = o[0].offset < g->alignment;
    free(o);
    uint64_t end = 0;
    const struct tg_gguf_tensor_info * prev = NULL;
    char pb[80], pb2[80];
    for (int64_t k = 0; k < g->n_tensors; k++) {
        const struct tg_gguf_tensor_info * t = &g->ti[ord[k]];
        if (prev && t->offset < end) {
            set_what(r, "tensor '%s' (info at offset %llu)", printable(t->name, strlen(t->name), pb, sizeof(pb)),
                     (unsigned long long) g->ti_file_off[ord[k]]);
            fail(r, "data [%llu, %llu) overlaps tensor '%s' [%llu, %llu)", (unsigned long long) t->offset,
                 (unsigned long long) (t->offset + t->size), printable(prev->name, strlen(prev->name), pb2, sizeof(pb2)),
                 (unsigned long long) prev->offset, (unsigned long long) (prev->offset + prev->size));
            free(ord);
            return false;
        }
        if (prev && t->offset - end >= g->alignment) packed = false;
        end = t->offset + t->size;
        prev = t;
    }
    g->data_needed = end;
    size_t avail = g->size > g->data_offset ? g->size - g->data_offset : 0;
    g->data_complete = end <= avail && g->data_offset <= g->size;
    if (!g->data_complete && !packed) {
        for (int64_t k = 0; k < g->n_tensors; k++) {
            const struct tg_gguf_tensor_info * t = &g->ti[ord[k]];
            if (t->offset + t->size <= avail) continue;
            set_what(r, "tensor '%s' (info at offset %llu)", printable(t->name, strlen(t->name), pb, sizeof(pb)),
                     (unsigned long long) g->ti_file_off[ord[k]]);
            fail(r, "data [%llu, %llu) runs past the end of the file (the data section at offset %zu has %zu bytes)",
                 (unsigned long long) t->offset, (unsigned long long) (t->offset + t->size), g->data_offset, avail);
            free(ord);
            return false;
        }
    }
    free(ord);
    return true;
}

static void note_cut_short(struct tg_gguf * g) {
    size_t avail = g->size > g->data_offset ? g->size - g->data_offset : 0;
    int64_t missing = 0, first = -1;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        if (g->ti[i].offset + g->ti[i].size <= avail) continue;
        if (first < 0) first = i;
        missing++;
    }
    char buf[512];
    snprintf(buf, sizeof(buf),
             "gguf: data section cut short: the file has %zu bytes, the tensors need %llu (data at offset %zu, "
             "%lld of %lld tensors incomplete, first '%s')", g->size,
             (unsigned long long) (g->data_offset + g->data_needed), g->data_offset, (long long) missing,
             (long long) g->n_tensors, first >= 0 ? g->ti[first].name : "?");
    g->data_error = dup_str(buf, strlen(buf));
}

static bool parse_header(struct rd * r, uint64_t * n_tensors, uint64_t * n_kv, struct tg_gguf * g) {
    set_what(r, "header");
    if (r->size == 0) return fail(r, "file is empty (0 bytes)");
    if (r->size < 4 || memcmp(r->p, TG_GGUF_MAGIC, 4) != 0) {
        if (r->size >= 4 && memcmp(r->p, "FUGG", 4) == 0)
            return fail(r, "magic 'FUGG' at offset 0: big-endian/byte-swapped GGUF is not supported");
        char pb[16];
        return fail(r, "bad magic '%s' at offset 0 (expected 'GGUF'): not a GGUF file",
                    printable((const char *) r->p, r->size < 4 ? r->size : 4, pb, sizeof(pb)));
    }
    r->pos = 4;
    uint32_t v;
    if (!rd_u32(r, &v, "version")) return false;
    if (v != 0 && (v & 0xffff) == 0 && __builtin_bswap32(v) <= 0xffff)
        return fail(r, "version at offset 4 reads as %u (%u byte-swapped): big-endian/byte-swapped GGUF is not supported",
                    v, __builtin_bswap32(v));
    if (v == 0) return fail(r, "version 0 at offset 4 is not a valid GGUF version");
    if (v == 1) return fail(r, "version 1 at offset 4: GGUF v1 (32-bit counts) is not supported; re-convert the model");
    if (v > TG_GGUF_VERSION) return fail(r, "version %u at offset 4 is newer than the supported version %d", v, TG_GGUF_VERSION);
    g->version = v;
    if (!rd_u64(r, n_tensors, "tensor_count") || !rd_u64(r, n_kv, "kv_count")) return false;
    // Smallest encodings: a kv is 8 (key length) + 1 (key) + 4 (type) + 1 (u8);
    // a tensor info is 8 + 1 + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset).
    if (*n_kv > left(r) / 14)
        return fail(r, "kv_count %llu at offset 16 cannot fit in the %zu bytes left in the file",
                    (unsigned long long) *n_kv, left(r));
    if (*n_tensors > left(r) / 33)
        return fail(r, "tensor_count %llu at offset 8 cannot fit in the %zu bytes left in the file",
                    (unsigned long long) *n_tensors, left(r));
    return true;
}

static struct tg_gguf * parse(const uint8_t * data, size_t size, bool mapped) {
    static const uint16_t probe = 1;
    if (*(const uint8_t *) &probe != 1) {
        tg_error(TG_ERR_UNSUPPORTED, "gguf: big-endian hosts are not supported");
        return NULL;
    }
    struct tg_gguf * g = calloc(1, sizeof(*g));
    if (!g) { tg_error(TG_ERR_NOMEM, "gguf: out of memory"); return NULL; }
    g->base = data;
    g->size = size;
    g->mapped = mapped;
    g->alignment = TG_GGUF_DEFAULT_ALIGNMENT;
    struct rd r = {.p = data, .size = size};
    uint64_t n_tensors, n_kv;
    if (!parse_header(&r, &n_tensors, &n_kv, g) || !parse_kvs(&r, g, n_kv) || !parse_tensors(&r, g, n_tensors))
        goto bad;
    // Data section: after the tensor infos, padded to the alignment.
    g->data_offset = (r.pos + g->alignment - 1) / g->alignment * g->alignment;
    if (!check_layout(&r, g)) goto bad;
    if (g->n_tensors == 0) g->data_complete = true;
    if (!g->data_complete) note_cut_short(g);
    return g;
bad:
    g->mapped = false;   // the caller unmaps on failure
    tg_gguf_close(g);
    return NULL;
}

struct tg_gguf * tg_gguf_open_memory(const void * data, size_t size) {
    if (!data && size) { tg_error(TG_ERR_INVALID_ARG, "gguf: NULL buffer"); return NULL; }
    static const uint8_t empty[1];
    return parse(data ? data : empty, size, false);
}

struct tg_gguf * tg_gguf_open(const char * path) {
    if (!path) { tg_error(TG_ERR_INVALID_ARG, "gguf: NULL path"); return NULL; }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { tg_error(TG_ERR_IO, "gguf: cannot open: %s", strerror(errno)); return NULL; }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        tg_error(TG_ERR_IO, "gguf: cannot stat: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) { close(fd); tg_error(TG_ERR_IO, "gguf: is a directory, not a GGUF file"); return NULL; }
    if (!S_ISREG(st.st_mode)) { close(fd); tg_error(TG_ERR_IO, "gguf: not a regular file"); return NULL; }
    size_t size = (size_t) st.st_size;
    if (size == 0) { close(fd); tg_error(TG_ERR_FORMAT, "gguf: header: file is empty (0 bytes)"); return NULL; }
    // The file is read into private anonymous memory, not mapped: a file
    // mapping (even MAP_PRIVATE) shares the file's pages, so truncating the
    // file under a running shell, TUI or generate (a model re-exported in
    // place, `truncate`) would raise SIGBUS on the next weight access and kill
    // the process; a library cannot sensibly catch that. One sequential read
    // costs about the time the first pass over a mapping would take to fault
    // the pages in; memory is the model's size either way (the page cache copy
    // can be dropped). The handle keeps the version it read; a file that
    // shrinks during the read is parsed as cut short at what was read.
    void * p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        close(fd);
        tg_error(TG_ERR_NOMEM, "gguf: cannot allocate %zu bytes: %s", size, strerror(err));
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    // Transparent huge pages where the system grants them on request
    // (/sys/kernel/mm/transparent_hugepage/enabled = madvise, Debian's
    // default): generation streams every weight once per token, and with
    // 2 MiB pages its reads miss the TLB 512 times less often (F32 100M
    // model, 2 threads: tg 46.6 -> 48.6 tok/s, medians of 10 alternating
    // runs). Advice only: nothing changes where it is not granted.
    (void) madvise(p, size, MADV_HUGEPAGE);
#endif
    (void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    size_t got = 0;
    while (got < size) {
        size_t want = size - got < ((size_t) 1 << 30) ? size - got : ((size_t) 1 << 30);
        ssize_t r = pread(fd, (uint8_t *) p + got, want, (off_t) got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int err = errno;
            close(fd);
            munmap(p, size);
            tg_error(TG_ERR_IO, "gguf: cannot read: %s", strerror(err));
            return NULL;
        }
        if (r == 0) break;   // shrank since fstat
        got += (size_t) r;
    }
    close(fd);
    mprotect(p, size, PROT_READ);
    if (got == 0) { munmap(p, size); tg_error(TG_ERR_FORMAT, "gguf: header: file is empty (0 bytes)"); return NULL; }
    struct tg_gguf * g = parse(p, got, true);
    if (!g) { munmap(p, size); return NULL; }
    g->map_size = size;
    return g;
}

void tg_gguf_close(struct tg_gguf * g) {
    if (!g) return;
    for (int64_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].str);
        free(g->kv[i].arr_blob);
        free(g->kv[i].arr_offs);
    }
    for (int64_t i = 0; i < g->n_tensors; i++) free((char *) g->ti[i].name);
    free(g->kv);
    free(g->kv_hash);
    free(g->ti);
    free(g->ti_file_off);
    free(g->ti_hash);
    free(g->data_error);
    if (g->mapped) munmap((void *) g->base, g->map_size ? g->map_size : g->size);
    free(g);
}
