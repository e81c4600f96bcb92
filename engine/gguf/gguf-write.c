// gguf-write.c - GGUF v3 writer. Key/values are serialized when set (so a
// file's key/values can be copied byte for byte); tensors are referenced and
// streamed out by tg_gguf_write, each padded to the alignment.
#include "core/grow.h"
#include "gguf-impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct wkv {
    char *    key;
    uint8_t * bytes;   // serialized key + type + value
    size_t    n;
};

struct wtensor {
    char         name[TG_MAX_NAME];
    uint32_t     type;
    int          n_dims;
    int64_t      ne[TG_MAX_DIMS];
    const void * data;   // NULL = zeros
    size_t       size;
};

struct tg_gguf_writer {
    struct wkv *     kv;
    int64_t          n_kv;
    size_t           cap_kv;
    struct wtensor * t;
    int64_t          n_t;
    size_t           cap_t;
    uint32_t         alignment;
};

// Growable byte buffer used to serialize one key/value.
struct bb { uint8_t * p; size_t n, cap; bool oom; };

static void bb_put(struct bb * b, const void * src, size_t n) {
    if (b->oom) return;
    if (n > SIZE_MAX - b->n || !TG_GROW(b->p, b->cap, b->n + n)) { b->oom = true; return; }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void bb_u32(struct bb * b, uint32_t v) { bb_put(b, &v, 4); }   // little-endian host
static void bb_u64(struct bb * b, uint64_t v) { bb_put(b, &v, 8); }
static void bb_str(struct bb * b, const char * s, size_t n) { bb_u64(b, n); bb_put(b, s, n); }

struct tg_gguf_writer * tg_gguf_writer_new(void) {
    struct tg_gguf_writer * w = calloc(1, sizeof(*w));
    if (!w) { tg_error(TG_ERR_NOMEM, "gguf writer: out of memory"); return NULL; }
    w->alignment = TG_GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void tg_gguf_writer_free(struct tg_gguf_writer * w) {
    if (!w) return;
    for (int64_t i = 0; i < w->n_kv; i++) { free(w->kv[i].key); free(w->kv[i].bytes); }
    free(w->kv);
    free(w->t);
    free(w);
}

// Stores a serialized key/value (takes ownership of b), replacing an
// existing one with the same key.
static enum tg_status put_kv(struct tg_gguf_writer * w, const char * key, struct bb * b) {
    if (b->oom) { free(b->p); return tg_error(TG_ERR_NOMEM, "gguf writer: out of memory for key '%s'", key); }
    for (int64_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) == 0) {
            free(w->kv[i].bytes);
            w->kv[i].bytes = b->p;
            w->kv[i].n = b->n;
            return TG_OK;
        }
    }
    char * k = strdup(key);
    if (!k || !TG_GROW(w->kv, w->cap_kv, (size_t) w->n_kv + 1)) {
        free(k); free(b->p);
        return tg_error(TG_ERR_NOMEM, "gguf writer: out of memory for key '%s'", key);
    }
    w->kv[w->n_kv++] = (struct wkv) {k, b->p, b->n};
    return TG_OK;
}

static enum tg_status check_key(struct tg_gguf_writer * w, const char * key) {
    if (!w || !key || !key[0]) return tg_error(TG_ERR_INVALID_ARG, "gguf writer: NULL writer or empty key");
    return TG_OK;
}

static enum tg_status set_scalar(struct tg_gguf_writer * w, const char * key, enum tg_gguf_type t, const void * v) {
    enum tg_status st = check_key(w, key);
    if (st) return st;
    if (strcmp(key, TG_GGUF_KEY_ALIGNMENT) == 0) {
        uint32_t a;
        if (t != TG_GGUF_UINT32)
            return tg_error(TG_ERR_INVALID_ARG, "gguf writer: general.alignment must be uint32, got %s", tg_gguf_type_name(t));
        memcpy(&a, v, 4);
        if (a == 0 || (a & (a - 1)) || a > TG_GGUF_MAX_ALIGNMENT)
            return tg_error(TG_ERR_INVALID_ARG, "gguf writer: alignment %u is not a power of two <= %u", a, TG_GGUF_MAX_ALIGNMENT);
        w->alignment = a;
    }
    struct bb b = {0};
    bb_str(&b, key, strlen(key));
    bb_u32(&b, (uint32_t) t);
    bb_put(&b, v, tg_gguf_type_size(t));
    return put_kv(w, key, &b);
}

enum tg_status tg_gguf_set_u32(struct tg_gguf_writer * w, const char * key, uint32_t v) { return set_scalar(w, key, TG_GGUF_UINT32, &v); }
enum tg_status tg_gguf_set_i32(struct tg_gguf_writer * w, const char * key, int32_t v) { return set_scalar(w, key, TG_GGUF_INT32, &v); }
enum tg_status tg_gguf_set_u64(struct tg_gguf_writer * w, const char * key, uint64_t v) { return set_scalar(w, key, TG_GGUF_UINT64, &v); }
enum tg_status tg_gguf_set_f32(struct tg_gguf_writer * w, const char * key, float v) { return set_scalar(w, key, TG_GGUF_FLOAT32, &v); }
enum tg_status tg_gguf_set_bool(struct tg_gguf_writer * w, const char * key, bool v) {
    uint8_t b = v ? 1 : 0;
    return set_scalar(w, key, TG_GGUF_BOOL, &b);
}
enum tg_status tg_gguf_set_alignment(struct tg_gguf_writer * w, uint32_t alignment) {
    return set_scalar(w, TG_GGUF_KEY_ALIGNMENT, TG_GGUF_UINT32, &alignment);
}

enum tg_status tg_gguf_set_str(struct tg_gguf_writer * w, const char * key, const char * v) {
    enum tg_status st = check_key(w, key);
    if (st) return st;
    if (!v) return tg_error(TG_ERR_INVALID_ARG, "gguf writer: key '%s': NULL string", key);
    if (strcmp(key, TG_GGUF_KEY_ALIGNMENT) == 0)
        return tg_error(TG_ERR_INVALID_ARG, "gguf writer: general.alignment must be uint32, got string");
    struct bb b = {0};
    bb_str(&b, key, strlen(key));
    bb_u32(&b, TG_GGUF_STRING);
    bb_str(&b, v, strlen(v));
    return put_kv(w, key, &b);
}

enum tg_status tg_gguf_set_arr(struct tg_gguf_writer * w, const char * key, enum tg_gguf_type t, const void * data, int64_t n) {
    enum tg_status st = check_key(w, key);
    if (st) return st;
    size_t sz = tg_gguf_type_size(t);
    if (sz == 0) return tg_error(TG_ERR_INVALID_ARG, "gguf writer: key '%s': %s is not a numeric array type", key, tg_gguf_type_name(t));
    if (n < 0 || (n > 0 && !data) || (uint64_t) n > SIZE_MAX / sz)
        return tg_error(TG_ERR_INVALID_ARG, "gguf writer: key '%s': bad array (n=%lld)", key, (long long) n);
    if (strcmp(key, TG_GGUF_KEY_ALIGNMENT) == 0)
        return tg_error(TG_ERR_INVALID_ARG, "gguf writer: general.alignment must be uint32, got array");
    struct bb b = {0};
    bb_str(&b, key, strlen(key));
    bb_u32(&b, TG_GGUF_ARRAY);
    bb_u32(&b, (uint32_t) t);
    bb_u64(&b, (uint64_t) n);
    bb_put(&b, data, (size_t) n * sz);
    return put_kv(w, key, &b);
}

enum tg_status tg_gguf_set_arr_str(struct tg_gguf_writer * w, const char * key, const char * const * strs, int64_t n) {
    enum tg_status st = check_key(w, key);
    if (st) return st;
    if (n < 0 || (n > 0 && !strs)) return tg_error(TG_ERR_INVALID_ARG, "gguf writer: key '%s': bad array (n=%lld)", key, (long long) n);
    if (strcmp(key, TG_GGUF_KEY_ALIGNMENT) == 0)
        return tg_error(TG_ERR_INVALID_ARG, "gguf writer: general.alignment must be uint32, got array");
    struct bb b = {0};
    bb_str(&b, key, strlen(key));
    bb_u32(&b, TG_GGUF_ARRAY);
    bb_u32(&b, TG_GGUF_STRING);
    bb_u64(&b, (uint64_t) n);
    for (int64_t j = 0; j < n; j++) {
        if (!strs[j]) { free(b.p); return tg_error(TG_ERR_INVALID_ARG, "gguf writer: key '%s': item %lld is NULL", key, (long long) j); }
        bb_str(&b, strs[j], strlen(strs[j]));
    }
    return put_kv(w, key, &b);
}

enum tg_status tg_gguf_set_kv_from(struct tg_gguf_writer * w, const struct tg_gguf * src) {
    if (!w || !src) return tg_error(TG_ERR_INVALID_ARG, "gguf writer: NULL writer or source");
    for (int64_t i = 0; i < src->n_kv; i++) {
        const struct tg_gguf_kv * kv = &src->kv[i];
        if (kv->type == TG_GGUF_UINT32 && strcmp(kv->key, TG_GGUF_KEY_ALIGNMENT) == 0) {
            enum tg_status st = set_scalar(w, kv->key, kv->type, kv->val);
            if (st) return st;
            continue;
        }
        // The source was validated: its bytes are a well-formed key/value.
        struct bb b = {0};
        bb_put(&b, src->base + kv->file_off, (size_t) (kv->end_off - kv->file_off));
        enum tg_status st = put_kv(w, kv->key, &b);
        if (st) return st;
    }
    return TG_OK;
}

enum tg_status tg_gguf_add_tensor(struct tg_gguf_writer * w, const char * name, enum tg_type type,
                                  int n_dims, const int64_t * ne, const void * data) {
    if (!w || !name || !ne) return tg_error(TG_ERR_INVALID_ARG, "gguf writer: NULL argument");
    size_t len = strlen(name);
    if (len == 0 || len >= TG_MAX_NAME)
        return tg_error(TG_ERR_INVALID_ARG, "gguf writer: tensor name '%s' must be 1..%d bytes", name, TG_MAX_NAME - 1);
    if (!tg_gguf_tensor_type_known((int) type))
        return tg_error(TG_ERR_INVALID_ARG, "gguf writer: tensor '%s': unknown type id %d", name, (int) type);
    if (n_dims < 1 || n_dims > TG_MAX_DIMS)
        return tg_error(TG_ERR_INVALID_ARG, "gguf writer: tensor '%s': n_dims %d out of range 1..%d", name, n_dims, TG_MAX_DIMS);
    size_t size = tg_gguf_tensor_nbytes((int) type, n_dims, ne);
    if (size == 0)
        return tg_error(TG_ERR_INVALID_ARG, "gguf writer: tensor '%s': invalid shape for %s (dims >= 1, ne0 a multiple "
                        "of the block size, no overflow)", name, tg_gguf_tensor_type_name((int) type));
    for (int64_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return tg_error(TG_ERR_INVALID_ARG, "gguf writer: duplicate tensor name '%s'", name);
    if (!TG_GROW(w->t, w->cap_t, (size_t) w->n_t + 1))
        return tg_error(TG_ERR_NOMEM, "gguf writer: out of memory");
    struct wtensor * t = &w->t[w->n_t++];
    memset(t, 0, sizeof(*t));
    memcpy(t->name, name, len + 1);
    t->type = (uint32_t) type;
    t->n_dims = n_dims;
    for (int d = 0; d < TG_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->data = data;
    t->size = size;
    return TG_OK;
}

static size_t pad_to(size_t n, size_t a) { return (n + a - 1) / a * a; }

static bool put_zeros(FILE * f, size_t n) {
    static const uint8_t zeros[4096];
    while (n > 0) {
        size_t k = n < sizeof(zeros) ? n : sizeof(zeros);
        if (fwrite(zeros, 1, k, f) != k) return false;
        n -= k;
    }
    return true;
}

// Writes the whole file to f. False on a write error (errno set).
static bool write_stream(const struct tg_gguf_writer * w, FILE * f) {
    struct bb b = {0};
    bb_put(&b, TG_GGUF_MAGIC, 4);
    bb_u32(&b, TG_GGUF_VERSION);
    bb_u64(&b, (uint64_t) w->n_t);
    bb_u64(&b, (uint64_t) w->n_kv);
    for (int64_t i = 0; i < w->n_kv; i++) bb_put(&b, w->kv[i].bytes, w->kv[i].n);
    size_t off = 0;
    for (int64_t i = 0; i < w->n_t; i++) {
        const struct wtensor * t = &w->t[i];
        bb_str(&b, t->name, strlen(t->name));
        bb_u32(&b, (uint32_t) t->n_dims);
        for (int d = 0; d < t->n_dims; d++) bb_u64(&b, (uint64_t) t->ne[d]);
        bb_u32(&b, t->type);
        bb_u64(&b, off);
        off += pad_to(t->size, w->alignment);
    }
    if (b.oom) { free(b.p); errno = ENOMEM; return false; }
    bool ok = fwrite(b.p, 1, b.n, f) == b.n && put_zeros(f, pad_to(b.n, w->alignment) - b.n);
    free(b.p);
    for (int64_t i = 0; ok && i < w->n_t; i++) {
        const struct wtensor * t = &w->t[i];
        ok = (t->data ? fwrite(t->data, 1, t->size, f) == t->size : put_zeros(f, t->size)) &&
             put_zeros(f, pad_to(t->size, w->alignment) - t->size);
    }
    return ok;
}

enum tg_status tg_gguf_write(struct tg_gguf_writer * w, const char * path) {
    if (!w || !path) return tg_error(TG_ERR_INVALID_ARG, "gguf writer: NULL writer or path");
    FILE * f = fopen(path, "wb");
    if (!f) return tg_error(TG_ERR_IO, "gguf writer: cannot create '%s': %s", path, strerror(errno));
    bool ok = write_stream(w, f);
    int err = errno;
    if (fclose(f) != 0 && ok) { ok = false; err = errno; }
    if (!ok) {
        unlink(path);
        return tg_error(TG_ERR_IO, "gguf writer: cannot write '%s': %s", path, strerror(err));
    }
    return TG_OK;
}

enum tg_status tg_gguf_write_memory(struct tg_gguf_writer * w, void ** data, size_t * size) {
    if (!w || !data || !size) return tg_error(TG_ERR_INVALID_ARG, "gguf writer: NULL argument");
    char * p = NULL;
    size_t n = 0;
    FILE * f = open_memstream(&p, &n);
    if (!f) return tg_error(TG_ERR_NOMEM, "gguf writer: cannot open a memory stream: %s", strerror(errno));
    bool ok = write_stream(w, f);
    if (fclose(f) != 0) ok = false;
    if (!ok) { free(p); return tg_error(TG_ERR_NOMEM, "gguf writer: out of memory"); }
    *data = p;
    *size = n;
    return TG_OK;
}
