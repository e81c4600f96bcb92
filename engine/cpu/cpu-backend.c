// cpu-backend.c - the CPU backend: host buffer type ("CPU"), host buffers
// (owned or wrapping caller memory) and a backend computing graphs with
// tg_cpu_graph_compute on a persistent thread pool.
#include "sched/backend-impl.h"
#include "tg/cpu.h"
#include "cpu/cpu-impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// ---- host buffers -------------------------------------------------------------

struct host_buffer_ctx {
    void * base;
    bool   owned;
};

static void host_free_buffer(struct tg_buffer * buf) {
    struct host_buffer_ctx * c = buf->context;
    if (c->owned) free(c->base);
    free(c);
}

static void * host_get_base(struct tg_buffer * buf) {
    return ((struct host_buffer_ctx *) buf->context)->base;
}

// Writes make a packed weight's copy again (pack.c).
static void host_memset(struct tg_buffer * buf, struct tg_tensor * t, uint8_t v, size_t off, size_t n) {
    (void) buf;
    memset((char *) t->data + off, v, n);
    tg_cpu_pack_refresh(t);
}

static void host_set(struct tg_buffer * buf, struct tg_tensor * t, const void * data, size_t off, size_t n) {
    (void) buf;
    memcpy((char *) t->data + off, data, n);
    tg_cpu_pack_refresh(t);
}

static void host_get(struct tg_buffer * buf, const struct tg_tensor * t, void * data, size_t off, size_t n) {
    (void) buf;
    memcpy(data, (const char *) t->data + off, n);
}

static bool host_cpy(struct tg_buffer * buf, const struct tg_tensor * src, struct tg_tensor * dst) {
    (void) buf;
    struct tg_buffer * sb = tg_tensor_buffer(src);
    if (sb && !tg_buffer_is_host(sb)) return false;
    memcpy(dst->data, src->data, tg_nbytes(src));
    tg_cpu_pack_refresh(dst);
    return true;
}

static void host_clear(struct tg_buffer * buf, uint8_t v) {
    memset(host_get_base(buf), v, buf->size);
}

static const struct tg_buffer_iface host_buffer_iface = {
    .free_buffer   = host_free_buffer,
    .get_base      = host_get_base,
    .init_tensor   = NULL,
    .memset_tensor = host_memset,
    .set_tensor    = host_set,
    .get_tensor    = host_get,
    .cpy_tensor    = host_cpy,
    .clear         = host_clear,
};

static const char * cpu_buft_name(struct tg_buffer_type * buft) { (void) buft; return "CPU"; }
static size_t cpu_buft_alignment(struct tg_buffer_type * buft) { (void) buft; return TG_MEM_ALIGN; }
static bool cpu_buft_is_host(struct tg_buffer_type * buft) { (void) buft; return true; }

static struct tg_buffer * wrap_host(void * base, bool owned, size_t size) {
    struct host_buffer_ctx * c = malloc(sizeof(*c));
    if (!c) { if (owned) free(base); tg_error(TG_ERR_NOMEM, "CPU buffer: out of memory"); return NULL; }
    c->base = base;
    c->owned = owned;
    struct tg_buffer * buf = tg_buffer_init(tg_cpu_buffer_type(), host_buffer_iface, c, size);
    if (!buf) { if (owned) free(base); free(c); }
    return buf;
}

static struct tg_buffer * cpu_buft_alloc(struct tg_buffer_type * buft, size_t size) {
    (void) buft;
    size_t n = (size + TG_MEM_ALIGN - 1) / TG_MEM_ALIGN * TG_MEM_ALIGN;
    void * base = NULL;
#ifdef MADV_HUGEPAGE
    // Large buffers (a KV cache, a compute buffer, weights loaded into a
    // buffer) on 2 MiB boundaries with transparent huge pages requested, as
    // gguf.c does for the file's bytes: generation reads the whole KV cache
    // once per token, each value dimension's cells a separate run (the
    // transposed V), with 4 KiB pages most runs on a page of their own
    // (100m Q8_0 at depth 1024, 2 threads: tg128 +5% with fa on, +2% off,
    // medians of 4 alternating rounds).
    // Advice only: nothing changes where the system does not grant them.
    const size_t huge = (size_t) 2 << 20;
    if (n >= 2 * huge) {
        if (posix_memalign(&base, huge, n) != 0) base = NULL;
        else (void) madvise(base, n, MADV_HUGEPAGE);
    } else
#endif
    base = aligned_alloc(TG_MEM_ALIGN, n ? n : TG_MEM_ALIGN);
    if (!base) { tg_error(TG_ERR_NOMEM, "CPU buffer: cannot allocate %zu bytes", size); return NULL; }
    return wrap_host(base, true, size);
}

static struct tg_buffer_type cpu_buft = {
    .iface = {
        .get_name       = cpu_buft_name,
        .alloc_buffer   = cpu_buft_alloc,
        .get_alignment  = cpu_buft_alignment,
        .get_max_size   = NULL,
        .get_alloc_size = NULL,
        .is_host        = cpu_buft_is_host,
    },
    .device  = NULL,   // set by tg_cpu_device()
    .context = NULL,
};

struct tg_buffer_type * tg_cpu_buffer_type(void) {
    cpu_buft.device = tg_cpu_device();
    return &cpu_buft;
}

struct tg_buffer * tg_cpu_buffer_from_ptr(void * ptr, size_t size) {
    if (!ptr && size) { tg_error(TG_ERR_INVALID_ARG, "tg_cpu_buffer_from_ptr: NULL memory"); return NULL; }
    return wrap_host(ptr, false, size);
}

// ---- backend --------------------------------------------------------------------

struct cpu_backend_ctx {
    struct tg_cpu_pool * pool;
    int n_threads;
};

static const char * cpu_get_name(struct tg_backend * b) { (void) b; return "CPU"; }

static void cpu_free(struct tg_backend * b) {
    struct cpu_backend_ctx * c = b->context;
    tg_cpu_pool_free(c->pool);
    free(c);
    free(b);
}

static struct tg_buffer_type * cpu_default_buft(struct tg_backend * b) { (void) b; return tg_cpu_buffer_type(); }

static enum tg_status cpu_graph_compute(struct tg_backend * b, struct tg_graph * g) {
    struct cpu_backend_ctx * c = b->context;
    return tg_cpu_graph_compute(c->pool, g, NULL);
}

static enum tg_status cpu_graph_compute_hooks(struct tg_backend * b, struct tg_graph * g,
                                              const struct tg_node_hooks * hooks) {
    struct cpu_backend_ctx * c = b->context;
    struct tg_cpu_hooks h = { 0 };
    if (hooks) {
        h.before = hooks->before; h.after = hooks->after; h.user = hooks->user;
        h.deferrable = hooks->deferrable && hooks->t_ns;
        h.t_ns = hooks->t_ns;
    }
    return tg_cpu_graph_compute(c->pool, g, hooks ? &h : NULL);
}

static void cpu_parallel(struct tg_backend * b, int n, void (*fn)(int i, void * arg), void * arg) {
    struct cpu_backend_ctx * c = b->context;
    tg_cpu_pool_parallel(c->pool, n, fn, arg);
}

static bool cpu_supports_op(struct tg_backend * b, const struct tg_tensor * op) {
    (void) b;
    if (op->op == TG_OP_NONE || tg_op_is_view(op->op)) return true;
    return tg_cpu_supports_op(op);
}

static bool cpu_supports_buft(struct tg_backend * b, struct tg_buffer_type * buft) {
    (void) b;
    return tg_buft_is_host(buft);
}

static const struct tg_backend_iface cpu_backend_iface = {
    .get_name                = cpu_get_name,
    .free                    = cpu_free,
    .get_default_buffer_type = cpu_default_buft,
    .graph_compute           = cpu_graph_compute,
    .graph_compute_hooks     = cpu_graph_compute_hooks,
    .parallel                = cpu_parallel,
    .supports_op             = cpu_supports_op,
    .supports_buft           = cpu_supports_buft,
    .offload_op              = NULL,
    .synchronize             = NULL,
    .set_tensor_async        = NULL,
    .get_tensor_async        = NULL,
};

struct tg_backend * tg_backend_cpu_init(void) {
    struct tg_backend * b = calloc(1, sizeof(*b));
    struct cpu_backend_ctx * c = calloc(1, sizeof(*c));
    if (!b || !c) { free(b); free(c); tg_error(TG_ERR_NOMEM, "tg_backend_cpu_init: out of memory"); return NULL; }
    c->n_threads = tg_cpu_default_threads();
    c->pool = tg_cpu_pool_new(c->n_threads);
    if (!c->pool) { free(b); free(c); return NULL; }
    b->iface = cpu_backend_iface;
    b->device = tg_cpu_device();
    b->context = c;
    return b;
}

bool tg_backend_is_cpu(const struct tg_backend * b) {
    return b && b->iface.get_name == cpu_get_name;
}

enum tg_status tg_backend_cpu_set_n_threads(struct tg_backend * b, int n_threads) {
    if (!tg_backend_is_cpu(b)) return tg_error(TG_ERR_INVALID_ARG, "tg_backend_cpu_set_n_threads: not a CPU backend");
    if (n_threads < 1) return tg_error(TG_ERR_INVALID_ARG, "tg_backend_cpu_set_n_threads: n_threads = %d (>= 1)", n_threads);
    struct cpu_backend_ctx * c = b->context;
    if (n_threads == c->n_threads) return TG_OK;
    struct tg_cpu_pool * pool = tg_cpu_pool_new(n_threads);
    if (!pool) return tg_last_status() != TG_OK ? tg_last_status() : TG_ERR_NOMEM;
    tg_cpu_pool_free(c->pool);
    c->pool = pool;
    c->n_threads = n_threads;
    return TG_OK;
}

int tg_backend_cpu_get_n_threads(const struct tg_backend * b) {
    return tg_backend_is_cpu(b) ? ((struct cpu_backend_ctx *) b->context)->n_threads : 0;
}

// ---- device ---------------------------------------------------------------------

static const char * cpu_dev_name(struct tg_device * d) { (void) d; return "CPU"; }
static const char * cpu_dev_desc(struct tg_device * d) { (void) d; return tg_cpu_simd_name(); }
static enum tg_device_type cpu_dev_type(struct tg_device * d) { (void) d; return TG_DEVICE_CPU; }

static struct tg_backend * cpu_dev_init(struct tg_device * d, const char * params) {
    (void) d;
    struct tg_backend * b = tg_backend_cpu_init();
    if (b && params && *params) {
        int n = atoi(params);
        if (n > 0 && tg_backend_cpu_set_n_threads(b, n) != TG_OK) { tg_backend_free(b); return NULL; }
    }
    return b;
}

static struct tg_buffer_type * cpu_dev_buft(struct tg_device * d) { (void) d; return tg_cpu_buffer_type(); }

static struct tg_device cpu_device = {
    .iface = {
        .get_name        = cpu_dev_name,
        .get_description = cpu_dev_desc,
        .get_type        = cpu_dev_type,
        .init_backend    = cpu_dev_init,
        .get_buffer_type = cpu_dev_buft,
    },
    .context = NULL,
};

struct tg_device * tg_cpu_device(void) { return &cpu_device; }
