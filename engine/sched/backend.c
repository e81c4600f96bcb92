// backend.c - generic buffer type / buffer / backend calls and the host API
// for tensor data (set/get/memset/copy), with observer events.
#include "sched/backend-impl.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char * tg_tensor_label(const struct tg_tensor * t, char * buf, size_t n) {
    if (!t) return "(null)";
    if (t->name[0]) return t->name;
    snprintf(buf, n, "#%d (unnamed %s)", (int) t->id, tg_op_name(t->op));
    return buf;
}

// ---- buffer types -----------------------------------------------------------

const char * tg_buft_name(struct tg_buffer_type * buft) {
    return buft ? buft->iface.get_name(buft) : "(none)";
}

struct tg_buffer * tg_buft_alloc_buffer(struct tg_buffer_type * buft, size_t size) {
    if (!buft) { tg_error(TG_ERR_INVALID_ARG, "tg_buft_alloc_buffer: buffer type is NULL"); return NULL; }
    size_t max = tg_buft_get_max_size(buft);
    if (size > max) {
        tg_error(TG_ERR_NOMEM, "buffer type %s: %zu bytes requested, at most %zu per buffer",
                 tg_buft_name(buft), size, max);
        return NULL;
    }
    return buft->iface.alloc_buffer(buft, size);
}

size_t tg_buft_get_alignment(struct tg_buffer_type * buft) {
    return buft->iface.get_alignment ? buft->iface.get_alignment(buft) : TG_MEM_ALIGN;
}

size_t tg_buft_get_max_size(struct tg_buffer_type * buft) {
    return buft->iface.get_max_size ? buft->iface.get_max_size(buft) : SIZE_MAX;
}

size_t tg_buft_get_alloc_size(struct tg_buffer_type * buft, const struct tg_tensor * t) {
    if (buft->iface.get_alloc_size) return buft->iface.get_alloc_size(buft, t);
    return tg_nbytes(t);
}

bool tg_buft_is_host(struct tg_buffer_type * buft) {
    return buft && buft->iface.is_host ? buft->iface.is_host(buft) : false;
}

// ---- buffers ----------------------------------------------------------------

static const char * const usage_names[TG_BUFFER_USAGE_COUNT] = { "any", "weights", "compute" };

const char * tg_buffer_usage_name(enum tg_buffer_usage usage) {
    return (unsigned) usage < TG_BUFFER_USAGE_COUNT ? usage_names[usage] : "?";
}

static atomic_uint_fast64_t next_buffer_id = 1;

struct tg_buffer * tg_buffer_init(struct tg_buffer_type * buft, struct tg_buffer_iface iface,
                                  void * context, size_t size) {
    struct tg_buffer * buf = calloc(1, sizeof(*buf));
    if (!buf) { tg_error(TG_ERR_NOMEM, "tg_buffer_init: out of memory"); return NULL; }
    buf->iface = iface;
    buf->buft = buft;
    buf->context = context;
    buf->size = size;
    buf->usage = TG_BUFFER_USAGE_ANY;
    buf->id = atomic_fetch_add(&next_buffer_id, 1);
    return buf;
}

void tg_buffer_free(struct tg_buffer * buf) {
    if (!buf) return;
    if (buf->iface.free_buffer) buf->iface.free_buffer(buf);
    free(buf);
}

void * tg_buffer_get_base(struct tg_buffer * buf) {
    if (!buf || buf->size == 0) return NULL;
    return buf->iface.get_base(buf);
}

size_t tg_buffer_get_size(const struct tg_buffer * buf) { return buf ? buf->size : 0; }
const char * tg_buffer_name(const struct tg_buffer * buf) { return buf ? tg_buft_name(buf->buft) : "(none)"; }
bool tg_buffer_is_host(const struct tg_buffer * buf) { return buf && tg_buft_is_host(buf->buft); }
void tg_buffer_set_usage(struct tg_buffer * buf, enum tg_buffer_usage usage) { if (buf) buf->usage = usage; }
enum tg_buffer_usage tg_buffer_get_usage(const struct tg_buffer * buf) { return buf ? buf->usage : TG_BUFFER_USAGE_ANY; }

void tg_buffer_clear(struct tg_buffer * buf, uint8_t value) {
    if (!buf || buf->size == 0 || !buf->iface.clear) return;
    buf->iface.clear(buf, value);
    // a memset of the whole buffer (tensor NULL): observers that follow its bytes must know
    if (__builtin_expect(tg_obs_n_global != 0, 0)) tg_obs_emit_io(TG_OBS_IO_MEMSET, NULL, buf, 0, buf->size, NULL);
}

enum tg_status tg_buffer_alloc_tensor(struct tg_buffer * buf, struct tg_tensor * t, void * addr) {
    char lb[64];
    if (!buf || !t) return tg_error(TG_ERR_INVALID_ARG, "tg_buffer_alloc_tensor: NULL buffer or tensor");
    char * base = tg_buffer_get_base(buf);
    size_t need = tg_buft_get_alloc_size(buf->buft, t);
    if (!base || (char *) addr < base || (size_t) ((char *) addr - base) + need > buf->size)
        return tg_error(TG_ERR_INVALID_ARG, "tensor %s (%zu bytes) does not fit in buffer %s at offset %td (size %zu)",
                        tg_tensor_label(t, lb, sizeof lb), need, tg_buffer_name(buf),
                        base ? (char *) addr - base : (ptrdiff_t) 0, buf->size);
    t->buffer = buf;
    t->data = addr;
    if (buf->iface.init_tensor) return buf->iface.init_tensor(buf, t);
    return TG_OK;
}

enum tg_status tg_buffer_init_view(struct tg_tensor * t) {
    char lb[64];
    struct tg_tensor * src = t ? t->view_src : NULL;
    if (!src) return tg_error(TG_ERR_INVALID_ARG, "tg_buffer_init_view: tensor is not a view");
    if (!src->data)
        return tg_error(TG_ERR_NO_BUFFER, "view %s: its source %s has no memory yet",
                        tg_tensor_label(t, lb, sizeof lb), src->name);
    t->buffer = src->buffer;
    t->data = (char *) src->data + t->view_offs;
    if (t->buffer && t->buffer->iface.init_tensor) return t->buffer->iface.init_tensor(t->buffer, t);
    return TG_OK;
}

// ---- backends ---------------------------------------------------------------

const char * tg_backend_name(struct tg_backend * b) { return b ? b->iface.get_name(b) : "(none)"; }

void tg_backend_free(struct tg_backend * b) {
    if (b && b->iface.free) b->iface.free(b);
}

struct tg_buffer_type * tg_backend_get_default_buffer_type(struct tg_backend * b) {
    return b->iface.get_default_buffer_type(b);
}

struct tg_buffer * tg_backend_alloc_buffer(struct tg_backend * b, size_t size) {
    return tg_buft_alloc_buffer(tg_backend_get_default_buffer_type(b), size);
}

size_t tg_backend_get_alignment(struct tg_backend * b) {
    return tg_buft_get_alignment(tg_backend_get_default_buffer_type(b));
}

enum tg_status tg_backend_graph_compute(struct tg_backend * b, struct tg_graph * g) {
    if (!b || !g) return tg_error(TG_ERR_INVALID_ARG, "tg_backend_graph_compute: NULL backend or graph");
    return b->iface.graph_compute(b, g);
}

bool tg_backend_supports_op(struct tg_backend * b, const struct tg_tensor * op) {
    return b->iface.supports_op(b, op);
}

bool tg_backend_supports_buft(struct tg_backend * b, struct tg_buffer_type * buft) {
    return b->iface.supports_buft(b, buft);
}

bool tg_backend_offload_op(struct tg_backend * b, const struct tg_tensor * op) {
    return b->iface.offload_op ? b->iface.offload_op(b, op) : false;
}

void tg_backend_synchronize(struct tg_backend * b) {
    if (b && b->iface.synchronize) b->iface.synchronize(b);
}

// ---- host API -----------------------------------------------------------------

struct tg_buffer * tg_tensor_buffer(const struct tg_tensor * t) {
    if (!t) return NULL;
    if (t->buffer) return t->buffer;
    if (t->view_src) return t->view_src->buffer;
    return NULL;
}

// Checks that t has memory and [offset, offset+size) lies within it.
static enum tg_status check_access(const struct tg_tensor * t, const char * what, size_t offset, size_t size) {
    char lb[64];
    if (!t) return tg_error(TG_ERR_INVALID_ARG, "%s: tensor is NULL", what);
    if (!tg_tensor_buffer(t) && !t->data)
        return tg_error(TG_ERR_NO_BUFFER,
                        "%s: tensor '%s' (of %scontext %p) has no buffer (no memory was given to it): allocate its context "
                        "with tg_backend_alloc_ctx_tensors, or add it to a graph the scheduler allocates "
                        "(tg_sched_alloc_graph)", what, tg_tensor_label(t, lb, sizeof lb),
                        t->ctx && tg_context_no_alloc(t->ctx) ? "no_alloc " : "", (void *) t->ctx);
    if (!t->data)
        return tg_error(TG_ERR_NO_BUFFER, "%s: tensor '%s' is a view whose source has no memory yet",
                        what, tg_tensor_label(t, lb, sizeof lb));
    size_t nb = tg_nbytes(t);
    if (offset > nb || size > nb - offset)
        return tg_error(TG_ERR_INVALID_ARG, "%s: tensor '%s': bytes [%zu, %zu) outside its %zu bytes",
                        what, tg_tensor_label(t, lb, sizeof lb), offset, offset + size, nb);
    return TG_OK;
}

// A refused access of a tensor without memory is reported (unallocated use).
static enum tg_status access_failed(enum tg_status st, enum tg_obs_io_what what, const struct tg_tensor * t,
                                    size_t offset, size_t size) {
    if (st == TG_ERR_NO_BUFFER && t && __builtin_expect(tg_obs_n_global != 0, 0))
        tg_obs_emit_access_error(what, t, offset, size);
    return st;
}

enum tg_status tg_backend_tensor_set(struct tg_tensor * t, const void * data, size_t offset, size_t size) {
    enum tg_status st = check_access(t, "tg_backend_tensor_set", offset, size);
    if (st != TG_OK) return access_failed(st, TG_OBS_IO_SET, t, offset, size);
    struct tg_buffer * buf = tg_tensor_buffer(t);
    if (size) {
        if (buf && buf->iface.set_tensor) buf->iface.set_tensor(buf, t, data, offset, size);
        else memcpy((char *) t->data + offset, data, size);
    }
    if (__builtin_expect(tg_obs_n_global != 0, 0)) tg_obs_emit_io(TG_OBS_IO_SET, t, buf, offset, size, data);
    return TG_OK;
}

enum tg_status tg_backend_tensor_get(const struct tg_tensor * t, void * data, size_t offset, size_t size) {
    enum tg_status st = check_access(t, "tg_backend_tensor_get", offset, size);
    if (st != TG_OK) return access_failed(st, TG_OBS_IO_GET, t, offset, size);
    struct tg_buffer * buf = tg_tensor_buffer(t);
    if (size) {
        if (buf && buf->iface.get_tensor) buf->iface.get_tensor(buf, t, data, offset, size);
        else memcpy(data, (const char *) t->data + offset, size);
    }
    if (__builtin_expect(tg_obs_n_global != 0, 0)) tg_obs_emit_io(TG_OBS_IO_GET, t, buf, offset, size, data);
    return TG_OK;
}

enum tg_status tg_backend_tensor_memset(struct tg_tensor * t, uint8_t value, size_t offset, size_t size) {
    enum tg_status st = check_access(t, "tg_backend_tensor_memset", offset, size);
    if (st != TG_OK) return access_failed(st, TG_OBS_IO_MEMSET, t, offset, size);
    struct tg_buffer * buf = tg_tensor_buffer(t);
    if (size) {
        if (buf && buf->iface.memset_tensor) buf->iface.memset_tensor(buf, t, value, offset, size);
        else memset((char *) t->data + offset, value, size);
    }
    if (__builtin_expect(tg_obs_n_global != 0, 0)) tg_obs_emit_io(TG_OBS_IO_MEMSET, t, buf, offset, size, NULL);
    return TG_OK;
}

const void * tg_backend_tensor_host_view(const struct tg_tensor * t) {
    if (!t || !t->data) return NULL;
    struct tg_buffer * b = tg_tensor_buffer(t);
    if (!b || tg_buffer_is_host(b)) return t->data;
    return b->iface.host_view ? b->iface.host_view(b, t) : NULL;
}

enum tg_status tg_backend_tensor_copy(const struct tg_tensor * src, struct tg_tensor * dst) {
    char la[64], lb[64];
    enum tg_status st = check_access(src, "tg_backend_tensor_copy (source)", 0, 0);
    if (st != TG_OK) return access_failed(st, TG_OBS_IO_GET, src, 0, 0);
    st = check_access(dst, "tg_backend_tensor_copy (destination)", 0, 0);
    if (st != TG_OK) return access_failed(st, TG_OBS_IO_COPY, dst, 0, 0);
    size_t n = tg_nbytes(src);
    if (n != tg_nbytes(dst))
        return tg_error(TG_ERR_SHAPE, "tg_backend_tensor_copy: %s has %zu bytes, %s has %zu",
                        tg_tensor_label(src, la, sizeof la), n, tg_tensor_label(dst, lb, sizeof lb), tg_nbytes(dst));
    if (src == dst || n == 0) return TG_OK;
    struct tg_buffer * sb = tg_tensor_buffer(src);
    struct tg_buffer * db = tg_tensor_buffer(dst);
    bool s_host = !sb || tg_buffer_is_host(sb);
    bool d_host = !db || tg_buffer_is_host(db);
    if (s_host && d_host) {
        memcpy(dst->data, src->data, n);
    } else if (db && db->iface.cpy_tensor && db->iface.cpy_tensor(db, src, dst)) {
        // done by the destination buffer
    } else if (s_host) {
        db->iface.set_tensor(db, dst, src->data, 0, n);
    } else if (d_host) {
        sb->iface.get_tensor(sb, src, dst->data, 0, n);
    } else {
        void * tmp = malloc(n);
        if (!tmp) return tg_error(TG_ERR_NOMEM, "tg_backend_tensor_copy: %zu bytes of staging memory", n);
        sb->iface.get_tensor(sb, src, tmp, 0, n);
        db->iface.set_tensor(db, dst, tmp, 0, n);
        free(tmp);
    }
    if (__builtin_expect(tg_obs_n_global != 0, 0)) tg_obs_emit_io(TG_OBS_IO_COPY, dst, db, 0, n, src->data);
    return TG_OK;
}

#ifndef TG_HAVE_BLAS
// ---- BLAS backend stubs (built without OpenBLAS) ----------------------------------
struct tg_backend * tg_backend_blas_init(void) {
    tg_error(TG_ERR_UNSUPPORTED, "the BLAS backend is not in this build (configure with TG_BLAS=ON and OpenBLAS installed)");
    return NULL;
}
bool tg_backend_is_blas(const struct tg_backend * b) { (void) b; return false; }
enum tg_status tg_backend_blas_set_n_threads(struct tg_backend * b, int n) {
    (void) b; (void) n;
    return tg_error(TG_ERR_UNSUPPORTED, "the BLAS backend is not in this build");
}
enum tg_status tg_backend_blas_set_batch_limits(struct tg_backend * b, int m, int o) {
    (void) b; (void) m; (void) o;
    return tg_error(TG_ERR_UNSUPPORTED, "the BLAS backend is not in this build");
}
void tg_backend_blas_clear_cache(struct tg_backend * b) { (void) b; }
const char * tg_blas_library(void) { return NULL; }
#endif

#ifndef TG_HAVE_CUDA
// ---- CUDA backend stubs (built without the CUDA toolkit) ----------------------------
bool tg_backend_is_cuda(const struct tg_backend * b) { (void) b; return false; }
bool tg_buffer_type_is_cuda(const struct tg_buffer_type * buft) { (void) buft; return false; }
const char * tg_cuda_probe(void) { return "this build has no CUDA backend (configure with TG_CUDA=ON and the CUDA toolkit)"; }
bool tg_cuda_versions(int * runtime, int * driver) {
    if (runtime) *runtime = 0;
    if (driver) *driver = 0;
    return false;
}
#endif
