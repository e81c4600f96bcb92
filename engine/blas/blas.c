// blas.c - the BLAS backend: MUL_MAT and OUT_PROD with OpenBLAS cblas_sgemm
// on host memory. Weights of other types are converted to F32 (cached per
// weight in weights-usage buffers, within a byte budget).
#include "core/grow.h"
#include "sched/backend-impl.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLAS_CACHE_BUDGET ((size_t) 1 << 30)   // bytes of converted weights kept

struct conv_entry {
    const struct tg_tensor * t;
    const void *             data;
    enum tg_type             type;
    int64_t                  ne[TG_MAX_DIMS];
    float *                  f32;     // [ne0*ne1*ne2*ne3] dense
    size_t                   bytes;
};

struct blas_ctx {
    int    n_threads;
    int    min_batch;
    int    offload_batch;
    struct conv_entry * cache;
    int    n_cache;
    size_t cap_cache;
    size_t cache_bytes;
    float * scratch;          // conversion of uncached weights
    size_t  scratch_n;
};

static const char * blas_name(struct tg_backend * b) { (void) b; return "BLAS"; }

static void clear_cache(struct blas_ctx * c) {
    for (int i = 0; i < c->n_cache; i++) free(c->cache[i].f32);
    c->n_cache = 0;
    c->cache_bytes = 0;
}

static void blas_free(struct tg_backend * b) {
    struct blas_ctx * c = b->context;
    clear_cache(c);
    free(c->cache);
    free(c->scratch);
    free(c);
    free(b);
}

static struct tg_buffer_type * blas_buft(struct tg_backend * b) { (void) b; return tg_cpu_buffer_type(); }

// Column count the policy looks at: the batch (dst ne1).
static int64_t batch_of(const struct tg_tensor * op) { return op->ne[1]; }

static bool convertible(enum tg_type type) {
    const struct tg_type_traits * tr = tg_type_traits(type);
    return type == TG_TYPE_F32 || (tr && tr->to_float);
}

static bool blas_can(const struct tg_tensor * op) {
    const struct tg_tensor * a = op->src[0], * b = op->src[1];
    if (!a || !b || op->type != TG_TYPE_F32 || b->type != TG_TYPE_F32 || !convertible(a->type)) return false;
    if (!tg_is_contiguous(op) || b->nb[0] != sizeof(float) || b->nb[1] % sizeof(float)) return false;
    if (a->type == TG_TYPE_F32) { if (a->nb[0] != sizeof(float) || a->nb[1] % sizeof(float)) return false; }
    else if (!tg_is_contiguous(a)) return false;
    return true;
}

static bool blas_supports_op(struct tg_backend * be, const struct tg_tensor * op) {
    struct blas_ctx * c = be->context;
    switch (op->op) {
        case TG_OP_NONE: case TG_OP_VIEW: case TG_OP_RESHAPE: case TG_OP_PERMUTE: case TG_OP_TRANSPOSE:
            return true;
        case TG_OP_MUL_MAT: case TG_OP_OUT_PROD:
            return batch_of(op) >= c->min_batch && blas_can(op);
        default:
            return false;
    }
}

static bool blas_offload_op(struct tg_backend * be, const struct tg_tensor * op) {
    struct blas_ctx * c = be->context;
    return (op->op == TG_OP_MUL_MAT || op->op == TG_OP_OUT_PROD) && batch_of(op) >= c->offload_batch;
}

static bool blas_supports_buft(struct tg_backend * be, struct tg_buffer_type * buft) {
    (void) be;
    return tg_buft_is_host(buft);
}

// Dense F32 copy of a (all dims), from the cache, or in scratch. NULL on OOM.
static const float * as_f32(struct blas_ctx * c, const struct tg_tensor * a) {
    int64_t n = tg_nelements(a);
    struct tg_buffer * buf = tg_tensor_buffer(a);
    bool cacheable = buf && buf->usage == TG_BUFFER_USAGE_WEIGHTS;
    for (int i = 0; cacheable && i < c->n_cache; i++) {
        struct conv_entry * e = &c->cache[i];
        if (e->t == a && e->data == a->data && e->type == a->type && memcmp(e->ne, a->ne, sizeof e->ne) == 0) return e->f32;
    }
    size_t bytes = (size_t) n * sizeof(float);
    float * dst;
    bool keep = cacheable && c->cache_bytes + bytes <= BLAS_CACHE_BUDGET;
    if (keep) {
        if (!TG_GROW(c->cache, c->cap_cache, (size_t) c->n_cache + 1)) return NULL;
        dst = malloc(bytes);
        if (!dst) return NULL;
    } else {
        if (!TG_GROW(c->scratch, c->scratch_n, (size_t) n)) return NULL;
        dst = c->scratch;
    }
    tg_to_float_fn to_float = tg_type_traits(a->type)->to_float;
    int64_t ne0 = a->ne[0], rows = n / ne0;
    for (int64_t r = 0; r < rows; r++)   // a is contiguous: rows follow each other
        to_float((const char *) a->data + (size_t) r * a->nb[1], dst + r * ne0, ne0);
    if (keep) {
        struct conv_entry * e = &c->cache[c->n_cache++];
        e->t = a; e->data = a->data; e->type = a->type; memcpy(e->ne, a->ne, sizeof e->ne);
        e->f32 = dst; e->bytes = bytes;
        c->cache_bytes += bytes;
    }
    return dst;
}

// Slice (i2, i3) of a as an F32 matrix with leading dimension *ld.
static const float * a_slice(const struct tg_tensor * a, const float * conv, int64_t i2, int64_t i3, int * ld) {
    if (!conv) {
        *ld = (int) (a->nb[1] / sizeof(float));
        return (const float *) ((const char *) a->data + i2 * a->nb[2] + i3 * a->nb[3]);
    }
    *ld = (int) a->ne[0];
    return conv + (i2 + i3 * a->ne[2]) * a->ne[0] * a->ne[1];
}

static enum tg_status blas_matmul(struct blas_ctx * c, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0], * b = dst->src[1];
    const float * conv = NULL;
    if (a->type != TG_TYPE_F32 && !(conv = as_f32(c, a)))
        return tg_error(TG_ERR_NOMEM, "BLAS: converting %s to f32", a->name);
    bool outp = dst->op == TG_OP_OUT_PROD;
    int64_t m = dst->ne[0], n = dst->ne[1];
    int64_t k = outp ? a->ne[1] : a->ne[0];
    int64_t r2 = dst->ne[2] / a->ne[2], r3 = dst->ne[3] / a->ne[3];
    for (int64_t i3 = 0; i3 < dst->ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < dst->ne[2]; i2++) {
            int lda;
            const float * A = a_slice(a, conv, i2 / r2, i3 / r3, &lda);
            const float * B = (const float *) ((const char *) b->data + i2 * b->nb[2] + i3 * b->nb[3]);
            float * C = (float *) ((char *) dst->data + i2 * dst->nb[2] + i3 * dst->nb[3]);
            int ldb = (int) (b->nb[1] / sizeof(float)), ldc = (int) (dst->nb[1] / sizeof(float));
            if (outp)   // C[n x m] = B^T[n x k] * A[k x m]
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int) n, (int) m, (int) k,
                            1.0f, B, ldb, A, lda, 0.0f, C, ldc);
            else        // C[n x m] = B[n x k] * A^T[k x m]
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) n, (int) m, (int) k,
                            1.0f, B, ldb, A, lda, 0.0f, C, ldc);
        }
    }
    return TG_OK;
}

static enum tg_status blas_graph_compute(struct tg_backend * be, struct tg_graph * g) {
    struct blas_ctx * c = be->context;
    openblas_set_num_threads(c->n_threads);
    for (int i = 0; i < g->n_nodes; i++) {
        struct tg_tensor * n = g->nodes[i];
        if (n->op == TG_OP_NONE || tg_op_is_view(n->op)) continue;
        if ((n->op != TG_OP_MUL_MAT && n->op != TG_OP_OUT_PROD) || !blas_can(n))
            return tg_error(TG_ERR_UNSUPPORTED, "BLAS backend cannot compute node '%s' (%s)", n->name, tg_op_name(n->op));
        if (!n->data || !n->src[0]->data || !n->src[1]->data)
            return tg_error(TG_ERR_NO_BUFFER, "BLAS: node '%s' or a source has no memory", n->name);
        enum tg_status st = blas_matmul(c, n);
        if (st != TG_OK) return st;
    }
    return TG_OK;
}

static const struct tg_backend_iface blas_iface = {
    .get_name                = blas_name,
    .free                    = blas_free,
    .get_default_buffer_type = blas_buft,
    .graph_compute           = blas_graph_compute,
    .graph_compute_hooks     = NULL,
    .supports_op             = blas_supports_op,
    .supports_buft           = blas_supports_buft,
    .offload_op              = blas_offload_op,
    .synchronize             = NULL,
    .set_tensor_async        = NULL,
    .get_tensor_async        = NULL,
};

struct tg_backend * tg_backend_blas_init(void) {
    struct tg_backend * b = calloc(1, sizeof(*b));
    struct blas_ctx * c = calloc(1, sizeof(*c));
    if (!b || !c) { free(b); free(c); tg_error(TG_ERR_NOMEM, "tg_backend_blas_init: out of memory"); return NULL; }
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    c->n_threads = nt < 1 ? 1 : (int) nt;
    c->min_batch = TG_BLAS_MIN_BATCH;
    c->offload_batch = TG_BLAS_OFFLOAD_BATCH;
    b->iface = blas_iface;
    b->device = tg_blas_device();
    b->context = c;
    return b;
}

bool tg_backend_is_blas(const struct tg_backend * b) { return b && b->iface.get_name == blas_name; }

enum tg_status tg_backend_blas_set_n_threads(struct tg_backend * b, int n_threads) {
    if (!tg_backend_is_blas(b)) return tg_error(TG_ERR_INVALID_ARG, "tg_backend_blas_set_n_threads: not a BLAS backend");
    if (n_threads < 1) return tg_error(TG_ERR_INVALID_ARG, "tg_backend_blas_set_n_threads: n_threads = %d (>= 1)", n_threads);
    ((struct blas_ctx *) b->context)->n_threads = n_threads;
    return TG_OK;
}

enum tg_status tg_backend_blas_set_batch_limits(struct tg_backend * b, int min_batch, int offload_batch) {
    if (!tg_backend_is_blas(b)) return tg_error(TG_ERR_INVALID_ARG, "tg_backend_blas_set_batch_limits: not a BLAS backend");
    if (min_batch < 1 || offload_batch < 1)
        return tg_error(TG_ERR_INVALID_ARG, "tg_backend_blas_set_batch_limits: limits must be >= 1 (got %d, %d)", min_batch, offload_batch);
    struct blas_ctx * c = b->context;
    c->min_batch = min_batch;
    c->offload_batch = offload_batch;
    return TG_OK;
}

void tg_backend_blas_clear_cache(struct tg_backend * b) {
    if (tg_backend_is_blas(b)) clear_cache(b->context);
}

// ---- device ---------------------------------------------------------------------

static const char * blas_dev_name(struct tg_device * d) { (void) d; return "BLAS"; }
const char * tg_blas_library(void) { return openblas_get_config(); }

static const char * blas_dev_desc(struct tg_device * d) { (void) d; return "OpenBLAS cblas_sgemm (MUL_MAT, OUT_PROD)"; }
static enum tg_device_type blas_dev_type(struct tg_device * d) { (void) d; return TG_DEVICE_ACCEL; }

static struct tg_backend * blas_dev_init(struct tg_device * d, const char * params) {
    (void) d;
    struct tg_backend * b = tg_backend_blas_init();
    if (b && params && *params) {
        int n = atoi(params);
        if (n > 0) tg_backend_blas_set_n_threads(b, n);
    }
    return b;
}

static struct tg_buffer_type * blas_dev_buft(struct tg_device * d) { (void) d; return tg_cpu_buffer_type(); }

static struct tg_device blas_device = {
    .iface = {
        .get_name        = blas_dev_name,
        .get_description = blas_dev_desc,
        .get_type        = blas_dev_type,
        .init_backend    = blas_dev_init,
        .get_buffer_type = blas_dev_buft,
    },
    .context = NULL,
};

struct tg_device * tg_blas_device(void) { return &blas_device; }
