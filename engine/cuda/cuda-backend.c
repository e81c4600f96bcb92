// cuda-backend.c - the CUDA backend: one registry device per GPU ("CUDA0",
// "CUDA1", ...), a device-memory buffer type per device, and a backend that
// computes graphs on a stream of its own: element-wise ops, norms, softmax,
// rope, GLU, copies and fused attention with the kernels of kernels*.cu, and
// MUL_MAT with cuBLAS (SGEMM on F32 operands; other weight types decoded to
// F32 first) or, for a few columns (generation), with matrix-vector kernels
// that read the weights in their stored type.
//
// A graph is computed asynchronously on the stream and synchronised at its
// end; with per-node hooks (observers, eval callback) each node is
// synchronised before its after-hook, so node times are device times and the
// node's bytes are readable. Host reads and writes of device tensors go
// through the buffer's set/get (cudaMemcpy), so every one is observed like a
// CPU tensor's.
#include "cuda/cuda-impl.h"
#include "sched/backend-impl.h"
#include "tg/observe.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU_MAX_DEVICES 8
#define CU_ALIGN 256

struct cu_device {
    int                   id;
    char                  name[16];        // "CUDA0"
    char                  desc[320];       // "NVIDIA H100 80GB HBM3 (compute 9.0, 79.2 GiB)"
    size_t                mem_total;
    struct tg_buffer_type buft;
    struct tg_device      dev;
};

static struct cu_device g_dev[CU_MAX_DEVICES];
static int  g_n_dev;
static char g_probe[256] = "not probed";

static const char * cu_err(cudaError_t e) { return cudaGetErrorString(e); }

// ---- buffers -------------------------------------------------------------------------------------

struct cu_buffer { struct cu_device * d; void * base; };

static bool cu_set_device(const struct cu_device * d) { return cudaSetDevice(d->id) == cudaSuccess; }

static void cu_buf_free(struct tg_buffer * buf) {
    struct cu_buffer * b = buf->context;
    if (b->base) { cu_set_device(b->d); cudaFree(b->base); }
    free(b);
}

static void * cu_buf_base(struct tg_buffer * buf) { return ((struct cu_buffer *) buf->context)->base; }

// Errors of host access cannot be returned through the buffer interface:
// they become the thread's last error (the data stays what it was).
static void cu_report(cudaError_t e, const char * what, const struct tg_tensor * t) {
    if (e != cudaSuccess) tg_error(TG_ERR_INTERNAL, "CUDA: %s of tensor '%s' failed: %s", what, t->name, cu_err(e));
}

static void cu_buf_memset(struct tg_buffer * buf, struct tg_tensor * t, uint8_t value, size_t offset, size_t size) {
    cu_set_device(((struct cu_buffer *) buf->context)->d);
    cu_report(cudaMemset((char *) t->data + offset, value, size), "memset", t);
}

static void cu_buf_set(struct tg_buffer * buf, struct tg_tensor * t, const void * data, size_t offset, size_t size) {
    cu_set_device(((struct cu_buffer *) buf->context)->d);
    cu_report(cudaMemcpy((char *) t->data + offset, data, size, cudaMemcpyHostToDevice), "upload", t);
}

// The snapshots of a deferred run (cu_hooks_deferred): each node's bytes as
// they were when it finished, in pinned host memory, while its hooks run on
// this thread; a host read of one of those nodes is served from there.
struct cu_snap { const struct tg_tensor * t; size_t off, size; };
struct cu_replay { const struct cu_snap * snaps; int n, cur; const char * host; };
static _Thread_local struct cu_replay * g_replay;

// The snapshot of t in the deferred run replayed on this thread, or NULL.
static const struct cu_snap * replay_find(const struct tg_tensor * t) {
    const struct cu_replay * rp = g_replay;
    for (int k = 0; rp && k < rp->n; k++) {   // the node being replayed and the views after it come first
        const struct cu_snap * sn = &rp->snaps[(rp->cur + k) % rp->n];
        if (sn->t == t && sn->size) return sn;
    }
    return NULL;
}

static const void * cu_buf_host_view(struct tg_buffer * buf, const struct tg_tensor * t) {
    (void) buf;
    const struct cu_snap * sn = replay_find(t);
    return sn ? g_replay->host + sn->off : NULL;
}

static void cu_buf_get(struct tg_buffer * buf, const struct tg_tensor * t, void * data, size_t offset, size_t size) {
    const struct cu_snap * sn = replay_find(t);
    if (sn && offset + size <= sn->size) { memcpy(data, g_replay->host + sn->off + offset, size); return; }
    cu_set_device(((struct cu_buffer *) buf->context)->d);
    cu_report(cudaMemcpy(data, (const char *) t->data + offset, size, cudaMemcpyDeviceToHost), "download", t);
}

static bool cu_is_cuda_buft(const struct tg_buffer_type * buft);

static bool cu_buf_cpy(struct tg_buffer * buf, const struct tg_tensor * src, struct tg_tensor * dst) {
    struct tg_buffer * sb = tg_tensor_buffer(src);
    size_t n = tg_nbytes(src);
    cu_set_device(((struct cu_buffer *) buf->context)->d);
    if (!sb || tg_buffer_is_host(sb)) {
        cu_report(cudaMemcpy(dst->data, src->data, n, cudaMemcpyHostToDevice), "upload", dst);
        return true;
    }
    if (cu_is_cuda_buft(sb->buft)) {
        cu_report(cudaMemcpy(dst->data, src->data, n, cudaMemcpyDefault), "device copy", dst);
        return true;
    }
    return false;
}

static void cu_buf_clear(struct tg_buffer * buf, uint8_t value) {
    struct cu_buffer * b = buf->context;
    cu_set_device(b->d);
    cudaError_t e = cudaMemset(b->base, value, buf->size);
    if (e != cudaSuccess) tg_error(TG_ERR_INTERNAL, "CUDA: clearing buffer of %zu bytes failed: %s", buf->size, cu_err(e));
}

static const struct tg_buffer_iface cu_buffer_iface = {
    .free_buffer   = cu_buf_free,
    .get_base      = cu_buf_base,
    .init_tensor   = NULL,
    .memset_tensor = cu_buf_memset,
    .set_tensor    = cu_buf_set,
    .get_tensor    = cu_buf_get,
    .cpy_tensor    = cu_buf_cpy,
    .clear         = cu_buf_clear,
    .host_view     = cu_buf_host_view,
};

static const char * cu_buft_name(struct tg_buffer_type * buft) { return ((struct cu_device *) buft->context)->name; }

static struct tg_buffer * cu_buft_alloc(struct tg_buffer_type * buft, size_t size) {
    struct cu_device * d = buft->context;
    struct cu_buffer * b = calloc(1, sizeof *b);
    if (!b) { tg_error(TG_ERR_NOMEM, "%s: out of host memory", d->name); return NULL; }
    b->d = d;
    if (!cu_set_device(d)) { free(b); tg_error(TG_ERR_INTERNAL, "%s: cannot select the device", d->name); return NULL; }
    cudaError_t e = cudaMalloc(&b->base, size ? size : 1);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        free(b);
        tg_error(TG_ERR_NOMEM, "%s: cannot allocate %.2f MiB of device memory (%s; %.2f MiB free of %.2f MiB)", d->name,
                 size / 1048576.0, cu_err(e), fr / 1048576.0, tot / 1048576.0);
        return NULL;
    }
    struct tg_buffer * buf = tg_buffer_init(buft, cu_buffer_iface, b, size);
    if (!buf) { cudaFree(b->base); free(b); }
    return buf;
}

static size_t cu_buft_align(struct tg_buffer_type * buft) { (void) buft; return CU_ALIGN; }
static size_t cu_buft_max(struct tg_buffer_type * buft) { return ((struct cu_device *) buft->context)->mem_total; }
static bool cu_buft_is_host(struct tg_buffer_type * buft) { (void) buft; return false; }

static const struct tg_buffer_type_iface cu_buft_iface = {
    .get_name       = cu_buft_name,
    .alloc_buffer   = cu_buft_alloc,
    .get_alignment  = cu_buft_align,
    .get_max_size   = cu_buft_max,
    .get_alloc_size = NULL,
    .is_host        = cu_buft_is_host,
};

static bool cu_is_cuda_buft(const struct tg_buffer_type * buft) {
    return buft && buft->iface.alloc_buffer == cu_buft_alloc;
}

// ---- backend ---------------------------------------------------------------------------------------

struct cu_backend {
    struct cu_device * d;
    cudaStream_t       stream;
    cublasHandle_t     blas;
    void *             scratch[2];   // operands converted for MUL_MAT (A, B)
    size_t             scratch_n[2];
    int *              d_err;        // device: 1 + index of the first node that met a bad row id
    bool               err_armed;    // a kernel that may set it ran since the last check
    // CUDA graphs (TG_CUDA_GRAPHS=1): a graph computed twice in a row with the
    // same fingerprint (every node's op, parameters, shapes, strides and
    // addresses, and the scratch addresses) is captured on its second run and
    // replayed after. Off by default: on an H200 with the ~100M model,
    // generation was 5-10% slower with them (the kernels' own time, not their
    // launches, bounds it there; a capture every 32 tokens costs more).
    bool               graphs;       // TG_CUDA_GRAPHS=1, until a capture fails
    uint64_t           last_fp;      // fingerprint of the last graph computed
    uint64_t           exec_fp;      // fingerprint of the captured one (0: none)
    cudaGraphExec_t    exec;
    void *             cublas_ws;    // cuBLAS workspace (no allocation inside a capture)
    // Deferred node hooks (observers that accept late node events): the
    // nodes' snapshots on the device and their pinned host copy, a timing
    // event after each node.
    bool               defer;        // off with TG_CUDA_DEFER=0
    char *             snap_dev;
    char *             snap_host;
    size_t             snap_n;
    struct cu_snap *   snaps;
    cudaEvent_t *      events;
    int                n_snaps, n_events;
};

static const char * cu_name(struct tg_backend * be) { return ((struct cu_backend *) be->context)->d->name; }

static void cu_free(struct tg_backend * be) {
    struct cu_backend * c = be->context;
    cu_set_device(c->d);
    cudaStreamSynchronize(c->stream);
    for (int i = 0; i < 2; i++) cudaFree(c->scratch[i]);
    cudaFree(c->d_err);
    if (c->exec) cudaGraphExecDestroy(c->exec);
    cudaFree(c->cublas_ws);
    cudaFree(c->snap_dev);
    cudaFreeHost(c->snap_host);
    free(c->snaps);
    for (int i = 0; i < c->n_events; i++) cudaEventDestroy(c->events[i]);
    free(c->events);
    cublasDestroy(c->blas);
    cudaStreamDestroy(c->stream);
    free(c);
    free(be);
}

static struct tg_buffer_type * cu_default_buft(struct tg_backend * be) { return &((struct cu_backend *) be->context)->d->buft; }

static void * cu_scratch(struct cu_backend * c, int i, size_t bytes) {
    if (c->scratch_n[i] >= bytes) return c->scratch[i];
    cudaStreamSynchronize(c->stream);   // the old scratch may still be read
    cudaFree(c->scratch[i]);
    c->scratch[i] = NULL;
    c->scratch_n[i] = 0;
    size_t n = bytes + bytes / 2;
    if (cudaMalloc(&c->scratch[i], n) != cudaSuccess) {
        cudaGetLastError();
        if (cudaMalloc(&c->scratch[i], bytes) != cudaSuccess) { cudaGetLastError(); c->scratch[i] = NULL; return NULL; }
        n = bytes;
    }
    c->scratch_n[i] = n;
    return c->scratch[i];
}

static struct tg_cu_t cu_t(const struct tg_tensor * t) {
    struct tg_cu_t d = { .data = t->data, .type = (int) t->type };
    for (int i = 0; i < 4; i++) { d.ne[i] = t->ne[i]; d.nb[i] = (int64_t) t->nb[i]; }
    return d;
}

// plain: elements the kernels load and store (F32, F16, BF16, I32, F64);
// plain_float: the types the arithmetic kernels take (F32, F16, BF16).
static bool plain(const struct tg_tensor * t) { return t && tg_cu_type_plain((int) t->type); }
static bool plain_float(const struct tg_tensor * t) {
    return plain(t) && t->type != TG_TYPE_I32 && t->type != TG_TYPE_F64;
}
static bool dim0_dense(const struct tg_tensor * t) { return t->nb[0] == tg_type_size(t->type); }
static bool same_shape(const struct tg_tensor * a, const struct tg_tensor * b) {
    return a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
}
static bool quant_rows(const struct tg_tensor * t) {   // rows of whole blocks the kernels decode
    return !plain(t) && tg_cu_type_decodable((int) t->type) && dim0_dense(t) && t->ne[0] % 32 == 0;
}
// A copy of a into t: plain elements, out of quantized rows (decoded), into
// Q8_0 / Q4_0 rows (quantized, or blocks copied for the same type and shape).
static bool copy_ok(const struct tg_tensor * a, const struct tg_tensor * t) {
    if (plain(a) && plain(t)) return a->type == t->type || (a->type != TG_TYPE_I32 && t->type != TG_TYPE_I32);
    const bool tq = tg_cu_type_quantizable((int) t->type) && dim0_dense(t) && t->ne[0] % 32 == 0;
    if (quant_rows(a)) {
        if (a->type == t->type && same_shape(a, t) && tq) return true;
        return tq || (plain(t) && t->type != TG_TYPE_I32);
    }
    return tq && plain(a) && a->type != TG_TYPE_I32;
}

static bool cu_supports_op(struct tg_backend * be, const struct tg_tensor * op) {
    (void) be;
    const struct tg_tensor * a = op->src[0], * b = op->src[1];
    switch (op->op) {
        case TG_OP_NONE: case TG_OP_VIEW: case TG_OP_RESHAPE: case TG_OP_PERMUTE: case TG_OP_TRANSPOSE:
            return true;
        case TG_OP_DUP: case TG_OP_CONT: case TG_OP_CPY:
            return copy_ok(a, op);
        case TG_OP_REPEAT:
            return plain(a) && plain(op) && (a->type == op->type || (plain_float(a) && plain_float(op)));
        case TG_OP_SET_ROWS: {
            const struct tg_tensor * ids = op->src[2];
            return b && plain_float(b) && ids && (ids->type == TG_TYPE_I32 || ids->type == TG_TYPE_I64) &&
                   (plain_float(op) || (tg_cu_type_quantizable((int) op->type) && dim0_dense(op) && op->ne[0] % 32 == 0));
        }
        case TG_OP_SET: case TG_OP_ACC:
            return a->type == TG_TYPE_F32 && b && b->type == TG_TYPE_F32 && op->type == TG_TYPE_F32 && tg_is_contiguous(op);
        case TG_OP_OUT_PROD:
            return op->type == TG_TYPE_F32 && op->nb[0] == sizeof(float) && plain_float(b) &&
                   (plain_float(a) || (tg_cu_type_decodable((int) a->type) && dim0_dense(a) && a->ne[0] % 32 == 0));
        case TG_OP_CROSS_ENTROPY_LOSS:
            return plain_float(a) && b && plain_float(b) && op->type == TG_TYPE_F32;
        case TG_OP_ADD: case TG_OP_SUB: case TG_OP_MUL: case TG_OP_DIV:
            return plain_float(a) && plain_float(b) && plain_float(op);
        case TG_OP_SCALE: case TG_OP_SQR: case TG_OP_SQRT: case TG_OP_LOG: case TG_OP_NEG: case TG_OP_ABS:
        case TG_OP_SILU: case TG_OP_GELU: case TG_OP_RELU: case TG_OP_DIAG_MASK_INF:
            return plain_float(a) && plain_float(op);
        case TG_OP_CONCAT:
            return plain_float(a) && plain_float(b) && plain_float(op);
        case TG_OP_SUM: case TG_OP_SUM_ROWS: case TG_OP_MEAN:
            return plain_float(a) && plain_float(op);
        case TG_OP_ARGMAX:
            return plain_float(a) && op->type == TG_TYPE_I32;
        case TG_OP_GET_ROWS:
            return b && b->type == TG_TYPE_I32 && op->type == TG_TYPE_F32 &&
                   ((plain(a) && a->type != TG_TYPE_I32) || (tg_cu_type_decodable((int) a->type) && dim0_dense(a) && a->ne[0] % 32 == 0));
        case TG_OP_RMS_NORM: case TG_OP_NORM:
            return plain_float(a) && plain_float(op);
        case TG_OP_SOFT_MAX:
            return plain_float(a) && plain_float(op) && (!b || plain_float(b)) && a->ne[0] <= 12288;
        case TG_OP_ROPE:
            return plain_float(a) && plain_float(op) && b && b->type == TG_TYPE_I32 &&
                   (!op->src[2] || op->src[2]->type == TG_TYPE_F32);
        case TG_OP_GLU:
            return plain_float(a) && plain_float(op) && (!b || plain_float(b));
        case TG_OP_FLASH_ATTN_EXT: {
            const struct tg_tensor * v = op->src[2], * m = op->src[3];
            return a->type == TG_TYPE_F32 && op->type == TG_TYPE_F32 && a->ne[0] <= 512 && v->ne[1] <= 512 &&
                   (!m || plain_float(m));
        }
        case TG_OP_MUL_MAT:
            if (op->type != TG_TYPE_F32 || !plain_float(b) || op->nb[0] != sizeof(float)) return false;
            if (plain_float(a)) return true;
            return tg_cu_type_decodable((int) a->type) && dim0_dense(a) && a->ne[0] % 32 == 0;
        default:
            return false;
    }
}

// Matrix products of at least TG_CUDA_OFFLOAD_BATCH columns whose weights are
// in host memory: worth copying the weights over (prompts), like BLAS.
static bool cu_offload_op(struct tg_backend * be, const struct tg_tensor * op) {
    return (op->op == TG_OP_MUL_MAT || op->op == TG_OP_OUT_PROD) && op->ne[1] >= TG_CUDA_OFFLOAD_BATCH && cu_supports_op(be, op);
}

static bool cu_supports_buft(struct tg_backend * be, struct tg_buffer_type * buft) {
    return buft == &((struct cu_backend *) be->context)->d->buft;
}

static enum tg_status blas_status(cublasStatus_t st, const struct tg_tensor * n) {
    if (st == CUBLAS_STATUS_SUCCESS) return TG_OK;
    return tg_error(TG_ERR_INTERNAL, "CUDA: cuBLAS failed on node '%s' (MUL_MAT): status %d", n->name, (int) st);
}

// F32 view of t for cuBLAS: t itself when its rows are F32 and dense along
// dim 0, else a dense copy in scratch slot `slot`. *ld and the slice strides
// in floats. NULL when scratch memory runs out.
static const float * f32_operand(struct cu_backend * c, const struct tg_tensor * t, int slot, int64_t min_ld,
                                 int64_t * ld, int64_t * s2, int64_t * s3) {
    if (t->type == TG_TYPE_F32 && t->nb[0] == 4 && t->nb[1] % 4 == 0 && t->nb[2] % 4 == 0 && t->nb[3] % 4 == 0 &&
        (int64_t) t->nb[1] / 4 >= min_ld) {
        *ld = (int64_t) t->nb[1] / 4; *s2 = (int64_t) t->nb[2] / 4; *s3 = (int64_t) t->nb[3] / 4;
        return t->data;
    }
    float * s = cu_scratch(c, slot, (size_t) tg_nelements(t) * sizeof(float));
    if (!s) return NULL;
    tg_cu_to_f32(c->stream, s, cu_t(t));
    *ld = t->ne[0]; *s2 = t->ne[0] * t->ne[1]; *s3 = *s2 * t->ne[2];
    return s;
}

// dst [M, N, ...] = sum over l of a[i0, l] b[i1, l]: C = A B^T per slice.
static enum tg_status cu_out_prod(struct cu_backend * c, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0], * b = dst->src[1];
    const int64_t M = a->ne[0], N = b->ne[0], L = a->ne[1];
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    int64_t lda, sa2, sa3, ldb, sb2, sb3;
    const float * A = f32_operand(c, a, 0, M, &lda, &sa2, &sa3);
    const float * B = f32_operand(c, b, 1, N, &ldb, &sb2, &sb3);
    if (!A || !B) return tg_error(TG_ERR_NOMEM, "CUDA: no device memory to convert the operands of '%s'", dst->name);
    const int64_t ldc = (int64_t) dst->nb[1] / 4, sc2 = (int64_t) dst->nb[2] / 4, sc3 = (int64_t) dst->nb[3] / 4;
    const float one = 1.0f, zero = 0.0f;
    for (int64_t i3 = 0; i3 < b->ne[3]; i3++) {
        for (int64_t j = 0; j < r2; j++) {
            cublasStatus_t st = cublasSgemmStridedBatched(
                c->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int) M, (int) N, (int) L, &one,
                A + (i3 / r3) * sa3, (int) lda, (long long) sa2, B + j * sb2 + i3 * sb3, (int) ldb, (long long) (sb2 * r2),
                &zero, (float *) dst->data + j * sc2 + i3 * sc3, (int) ldc, (long long) (sc2 * r2), (int) a->ne[2]);
            if (st != CUBLAS_STATUS_SUCCESS) return blas_status(st, dst);
        }
    }
    return TG_OK;
}

// dst [M, N, ne2, ne3] = a[K, M, ...]^T b[K, N, ...] with a's slices broadcast
// over b's (r2 = ne12/ne02, r3 = ne13/ne03).
static enum tg_status cu_mul_mat(struct cu_backend * c, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0], * b = dst->src[1];
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    int64_t ldb, sb2, sb3, lda, sa2, sa3;
    const float * B = f32_operand(c, b, 1, K, &ldb, &sb2, &sb3);
    if (!B) return tg_error(TG_ERR_NOMEM, "CUDA: no device memory to convert '%s' for node '%s'", b->name, dst->name);
    const int64_t ldc = (int64_t) dst->nb[1] / 4, sc2 = (int64_t) dst->nb[2] / 4, sc3 = (int64_t) dst->nb[3] / 4;
    float * C = dst->data;
    const bool aligned = ldb % 4 == 0 && sb2 % 4 == 0 && sb3 % 4 == 0 && ((uintptr_t) B % 16) == 0;
    if (N <= TG_CU_MMV_MAX_COLS && K % 32 == 0 && dim0_dense(a) && aligned && tg_cu_type_decodable((int) a->type)) {
        for (int64_t i3 = 0; i3 < b->ne[3]; i3++)   // generation: the weights read once, in their own type
            for (int64_t i2 = 0; i2 < b->ne[2]; i2++)
                tg_cu_mmv(c->stream, (const char *) a->data + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3], (int) a->type, K,
                          (int64_t) a->nb[1], M, B + i2 * sb2 + i3 * sb3, ldb, C + i2 * sc2 + i3 * sc3, ldc, (int) N);
        return TG_OK;
    }
    const float * A = f32_operand(c, a, 0, K, &lda, &sa2, &sa3);
    if (!A) return tg_error(TG_ERR_NOMEM, "CUDA: no device memory to convert '%s' for node '%s'", a->name, dst->name);
    const float one = 1.0f, zero = 0.0f;
    for (int64_t i3 = 0; i3 < b->ne[3]; i3++) {
        for (int64_t j = 0; j < r2; j++) {   // b slice i2 = ia * r2 + j reads a slice ia
            cublasStatus_t st = cublasSgemmStridedBatched(
                c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int) M, (int) N, (int) K, &one,
                A + (i3 / r3) * sa3, (int) lda, (long long) sa2,
                B + j * sb2 + i3 * sb3, (int) ldb, (long long) (sb2 * r2), &zero,
                C + j * sc2 + i3 * sc3, (int) ldc, (long long) (sc2 * r2), (int) a->ne[2]);
            if (st != CUBLAS_STATUS_SUCCESS) return blas_status(st, dst);
        }
    }
    return TG_OK;
}

// A node's sources must be in this device's memory: a CPU tensor read here
// would be a stray host pointer. Names the tensor and where it is.
static enum tg_status check_node(struct cu_backend * c, const struct tg_tensor * n) {
    if (!n->data)
        return tg_error(TG_ERR_NO_BUFFER, "%s: node '%s' (%s) has no memory: tensor buffer not set (allocate the graph "
                        "with the scheduler or tg_backend_alloc_ctx_tensors)", c->d->name, n->name, tg_op_name(n->op));
    struct tg_buffer * nb = tg_tensor_buffer(n);
    if (!nb || nb->buft != &c->d->buft)
        return tg_error(TG_ERR_UNSUPPORTED, "%s: node '%s' (%s) is in buffer %s, not in %s memory", c->d->name, n->name,
                        tg_op_name(n->op), nb ? tg_buffer_name(nb) : "(none)", c->d->name);
    for (int j = 0; j < TG_MAX_SRC; j++) {
        const struct tg_tensor * s = n->src[j];
        if (!s) continue;
        if (!s->data)
            return tg_error(TG_ERR_NO_BUFFER, "%s: node '%s' (%s) reads '%s', which has no memory: tensor buffer not set",
                            c->d->name, n->name, tg_op_name(n->op), s->name);
        struct tg_buffer * sb = tg_tensor_buffer(s);
        if (!sb || sb->buft != &c->d->buft)
            return tg_error(TG_ERR_UNSUPPORTED, "%s: node '%s' (%s) reads '%s' from buffer %s: %s kernels read %s memory only "
                            "(the scheduler copies such inputs)", c->d->name, n->name, tg_op_name(n->op), s->name,
                            sb ? tg_buffer_name(sb) : "(none)", c->d->name, c->d->name);
    }
    return TG_OK;
}

static enum tg_status cu_compute_node(struct cu_backend * c, struct tg_tensor * n, int tag) {
    if (n->op == TG_OP_NONE || tg_op_is_view(n->op)) return TG_OK;
    if (!cu_supports_op(NULL, n))
        return tg_error(TG_ERR_UNSUPPORTED, "%s cannot compute node '%s' (%s, %s)", c->d->name, n->name, tg_op_name(n->op),
                        tg_type_name(n->src[0] ? n->src[0]->type : n->type));
    enum tg_status st = check_node(c, n);
    if (st != TG_OK) return st;
    const struct tg_tensor * a = n->src[0], * b = n->src[1];
    struct tg_cu_t d = cu_t(n), ta = a ? cu_t(a) : d, tb = b ? cu_t(b) : d;
    cudaStream_t s = c->stream;
    switch (n->op) {
        case TG_OP_DUP: case TG_OP_CONT: case TG_OP_CPY:
            if (quant_rows(a) && !(a->type == n->type && same_shape(a, n))) tg_cu_copy_from_quant(s, d, ta);
            else if (tg_cu_type_quantizable((int) n->type)) tg_cu_copy_quant(s, d, ta);
            else tg_cu_copy(s, d, ta);
            break;
        case TG_OP_SET_ROWS:
            tg_cu_set_rows(s, d, tb, cu_t(n->src[2]), c->d_err, tag);
            c->err_armed = true;
            break;
        case TG_OP_SET: case TG_OP_ACC: {
            const int64_t nb1 = tg_get_op_param_i32(n, 0), nb2 = tg_get_op_param_i32(n, 1), nb3 = tg_get_op_param_i32(n, 2);
            const int64_t off = tg_get_op_param_i32(n, 3);
            const int64_t last = off + (b->ne[0] - 1) * 4 + (b->ne[1] - 1) * nb1 + (b->ne[2] - 1) * nb2 + (b->ne[3] - 1) * nb3 + 4;
            if (last > (int64_t) tg_nbytes(n))
                return tg_error(TG_ERR_SHAPE, "%s '%s': view of b (ends at byte %lld) does not fit in the %zu-byte result",
                                tg_op_name(n->op), n->name, (long long) last, tg_nbytes(n));
            if (n->data != a->data) tg_cu_copy(s, d, ta);
            tg_cu_set_acc(s, n->op == TG_OP_ACC, off, nb1, nb2, nb3, d, tb);
            break;
        }
        case TG_OP_OUT_PROD:
            st = cu_out_prod(c, n);
            if (st != TG_OK) return st;
            break;
        case TG_OP_CROSS_ENTROPY_LOSS: tg_cu_cross_entropy(s, d, ta, tb); break;
        case TG_OP_ADD: tg_cu_binary(s, TG_CU_B_ADD, d, ta, tb); break;
        case TG_OP_SUB: tg_cu_binary(s, TG_CU_B_SUB, d, ta, tb); break;
        case TG_OP_MUL: tg_cu_binary(s, TG_CU_B_MUL, d, ta, tb); break;
        case TG_OP_DIV: tg_cu_binary(s, TG_CU_B_DIV, d, ta, tb); break;
        case TG_OP_SCALE: tg_cu_unary(s, TG_CU_U_SCALE, tg_get_op_param_f32(n, 0), d, ta); break;
        case TG_OP_SQR:  tg_cu_unary(s, TG_CU_U_SQR, 0, d, ta); break;
        case TG_OP_SQRT: tg_cu_unary(s, TG_CU_U_SQRT, 0, d, ta); break;
        case TG_OP_LOG:  tg_cu_unary(s, TG_CU_U_LOG, 0, d, ta); break;
        case TG_OP_NEG:  tg_cu_unary(s, TG_CU_U_NEG, 0, d, ta); break;
        case TG_OP_ABS:  tg_cu_unary(s, TG_CU_U_ABS, 0, d, ta); break;
        case TG_OP_SILU: tg_cu_unary(s, TG_CU_U_SILU, 0, d, ta); break;
        case TG_OP_GELU: tg_cu_unary(s, TG_CU_U_GELU, 0, d, ta); break;
        case TG_OP_RELU: tg_cu_unary(s, TG_CU_U_RELU, 0, d, ta); break;
        case TG_OP_SUM:      tg_cu_reduce(s, 0, d, ta); break;
        case TG_OP_SUM_ROWS: tg_cu_reduce(s, 1, d, ta); break;
        case TG_OP_MEAN:     tg_cu_reduce(s, 2, d, ta); break;
        case TG_OP_ARGMAX:   tg_cu_reduce(s, 3, d, ta); break;
        case TG_OP_REPEAT: tg_cu_repeat(s, d, ta); break;
        case TG_OP_CONCAT: tg_cu_concat(s, d, ta, tb, tg_get_op_param_i32(n, 0)); break;
        case TG_OP_GET_ROWS:
            tg_cu_get_rows(s, d, ta, tb, c->d_err, tag);
            c->err_armed = true;
            break;
        case TG_OP_RMS_NORM: tg_cu_norm(s, true, tg_get_op_param_f32(n, 0), d, ta); break;
        case TG_OP_NORM:     tg_cu_norm(s, false, tg_get_op_param_f32(n, 0), d, ta); break;
        case TG_OP_SOFT_MAX:
            tg_cu_soft_max(s, tg_get_op_param_f32(n, 0), tg_get_op_param_f32(n, 1), d, ta, b ? &tb : NULL);
            break;
        case TG_OP_ROPE: {
            struct tg_cu_t ff = n->src[2] ? cu_t(n->src[2]) : d;
            tg_cu_rope(s, tg_get_op_param_i32(n, 0), (tg_get_op_param_i32(n, 1) & TG_ROPE_NEOX) != 0,
                       tg_get_op_param_f32(n, 3), tg_get_op_param_f32(n, 4), d, ta, tb, n->src[2] ? &ff : NULL);
            break;
        }
        case TG_OP_GLU: tg_cu_glu(s, tg_get_op_param_i32(n, 0), tg_get_op_param_i32(n, 1) != 0, d, ta, b ? &tb : NULL); break;
        case TG_OP_DIAG_MASK_INF: tg_cu_diag_mask_inf(s, tg_get_op_param_i32(n, 0), d, ta); break;
        case TG_OP_FLASH_ATTN_EXT: {
            struct tg_cu_t tv = cu_t(n->src[2]), tm = n->src[3] ? cu_t(n->src[3]) : d;
            const int64_t need = tg_cu_flash_attn_scratch(ta, tb, tv);
            float * part = need > 0 ? cu_scratch(c, 0, (size_t) need) : NULL;   // NULL: the tiled form
            tg_cu_flash_attn(s, tg_get_op_param_f32(n, 0), d, ta, tb, tv, n->src[3] ? &tm : NULL, part);
            break;
        }
        case TG_OP_MUL_MAT: {
            st = cu_mul_mat(c, n);
            if (st != TG_OK) return st;
            break;
        }
        default:
            return tg_error(TG_ERR_UNSUPPORTED, "%s cannot compute node '%s' (%s)", c->d->name, n->name, tg_op_name(n->op));
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return tg_error(TG_ERR_INTERNAL, "%s: launching node '%s' (%s) failed: %s", c->d->name, n->name, tg_op_name(n->op), cu_err(e));
    return TG_OK;
}

// Waits for the stream; then a kernel error, or a row id out of range that
// a GET_ROWS / SET_ROWS node met (its rows were skipped), is this status.
static enum tg_status cu_sync(struct cu_backend * c, const struct tg_graph * g, const struct tg_tensor * last) {
    cudaError_t e = cudaStreamSynchronize(c->stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess)
        return tg_error(TG_ERR_INTERNAL, "%s: computing failed at or before node '%s': %s", c->d->name,
                        last ? last->name : "?", cu_err(e));
    if (!c->err_armed) return TG_OK;
    c->err_armed = false;
    int tag = 0;
    if (cudaMemcpy(&tag, c->d_err, sizeof tag, cudaMemcpyDeviceToHost) != cudaSuccess || tag == 0) return TG_OK;
    cudaMemset(c->d_err, 0, sizeof tag);
    const struct tg_tensor * n = g && tag - 1 < g->n_nodes ? g->nodes[tag - 1] : last;
    const struct tg_tensor * ids = n ? (n->op == TG_OP_SET_ROWS ? n->src[2] : n->src[1]) : NULL;
    return tg_error(TG_ERR_INVALID_ARG, "%s '%s': a row id in '%s' is out of range [0, %lld) (those rows were not %s)",
                    n ? tg_op_name(n->op) : "?", n ? n->name : "?", ids ? ids->name : "?",
                    n ? (long long) (n->op == TG_OP_SET_ROWS ? n->ne[1] : n->src[0]->ne[1]) : 0LL,
                    n && n->op == TG_OP_SET_ROWS ? "written" : "read");
}

static inline uint64_t fp_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
}

static uint64_t fp_tensor(uint64_t h, const struct tg_tensor * t) {
    h = fp_mix(h, (uint64_t) (uintptr_t) t->data);
    h = fp_mix(h, (uint64_t) t->type);
    for (int d = 0; d < TG_MAX_DIMS; d++) h = fp_mix(fp_mix(h, (uint64_t) t->ne[d]), (uint64_t) t->nb[d]);
    return h;
}

// What a captured graph depends on: every kernel argument (the nodes and
// their sources) and the scratch addresses the matrix products use.
static uint64_t fingerprint(const struct cu_backend * c, const struct tg_graph * g) {
    uint64_t h = fp_mix(fp_mix(0x1234567ull, (uint64_t) (uintptr_t) c->scratch[0]), (uint64_t) (uintptr_t) c->scratch[1]);
    for (int i = 0; i < g->n_nodes; i++) {
        const struct tg_tensor * n = g->nodes[i];
        h = fp_mix(fp_tensor(h, n), (uint64_t) n->op);
        for (int k = 0; k < TG_MAX_OP_PARAMS; k++) h = fp_mix(h, (uint64_t) (uint32_t) n->op_params[k]);
        for (int j = 0; j < TG_MAX_SRC; j++) h = n->src[j] ? fp_tensor(h, n->src[j]) : fp_mix(h, 0);
    }
    return h ? h : 1;
}

static enum tg_status cu_enqueue(struct cu_backend * c, struct tg_graph * g) {
    for (int i = 0; i < g->n_nodes; i++) {
        enum tg_status st = cu_compute_node(c, g->nodes[i], i + 1);
        if (st != TG_OK) return st;
    }
    return TG_OK;
}

// Captures g's kernels into c->exec; false (graphs turned off, the stream
// out of capture) when the capture or its instantiation fails.
static bool cu_capture(struct cu_backend * c, struct tg_graph * g, uint64_t fp) {
    cudaGraph_t graph = NULL;
    if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) goto fail;
    const bool armed = c->err_armed;
    enum tg_status st = cu_enqueue(c, g);
    c->err_armed = armed || c->err_armed;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    if (st != TG_OK || e != cudaSuccess || !graph) goto fail;
    if (c->exec) { cudaGraphExecDestroy(c->exec); c->exec = NULL; }
    e = cudaGraphInstantiate(&c->exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) { c->exec = NULL; goto fail; }
    c->exec_fp = fp;
    return true;
fail:
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    c->graphs = false;
    c->exec_fp = 0;
    tg_clear_error();
    return false;
}

static enum tg_status cu_graph_compute(struct tg_backend * be, struct tg_graph * g) {
    struct cu_backend * c = be->context;
    if (!cu_set_device(c->d)) return tg_error(TG_ERR_INTERNAL, "%s: cannot select the device", c->d->name);
    const struct tg_tensor * last = g->n_nodes ? g->nodes[g->n_nodes - 1] : NULL;
    if (c->graphs && g->n_nodes > 0) {
        const uint64_t fp = fingerprint(c, g);
        const bool again = fp == c->last_fp;
        c->last_fp = fp;
        if (again && (c->exec_fp == fp || cu_capture(c, g, fp))) {
            for (int i = 0; i < g->n_nodes; i++)   // the row-id checks of the replayed kernels
                if (g->nodes[i]->op == TG_OP_GET_ROWS || g->nodes[i]->op == TG_OP_SET_ROWS) c->err_armed = true;
            cudaError_t e = cudaGraphLaunch(c->exec, c->stream);
            if (e != cudaSuccess)
                return tg_error(TG_ERR_INTERNAL, "%s: launching the captured graph failed: %s", c->d->name, cu_err(e));
            return cu_sync(c, g, last);
        }
    }
    enum tg_status st = cu_enqueue(c, g);
    if (st != TG_OK) { cudaStreamSynchronize(c->stream); return st; }
    return cu_sync(c, g, last);
}

#define CU_SNAP_MAX ((size_t) 4 << 30)   // more snapshot bytes than this: hooks one node at a time

// Room for n snapshots / events and `bytes` of snapshot memory; false when
// the memory cannot be had (the caller then runs node by node).
static bool snap_reserve(struct cu_backend * c, int n, size_t bytes) {
    if (n > c->n_snaps) {
        struct cu_snap * sn = realloc(c->snaps, (size_t) n * sizeof *sn);
        if (!sn) return false;
        c->snaps = sn;
        c->n_snaps = n;
    }
    if (n + 1 > c->n_events) {
        cudaEvent_t * ev = realloc(c->events, (size_t) (n + 1) * sizeof *ev);
        if (!ev) return false;
        c->events = ev;
        for (; c->n_events < n + 1; c->n_events++)
            if (cudaEventCreate(&c->events[c->n_events]) != cudaSuccess) { cudaGetLastError(); return false; }
    }
    if (bytes > c->snap_n) {
        cudaStreamSynchronize(c->stream);
        cudaFree(c->snap_dev);
        cudaFreeHost(c->snap_host);
        c->snap_dev = c->snap_host = NULL;
        c->snap_n = 0;
        size_t want = bytes + bytes / 4;
        if (cudaMalloc((void **) &c->snap_dev, want) != cudaSuccess ||
            cudaMallocHost((void **) &c->snap_host, want) != cudaSuccess) {
            cudaGetLastError();
            cudaFree(c->snap_dev);
            c->snap_dev = NULL;
            return false;
        }
        c->snap_n = want;
    }
    return true;
}

// Bytes of t's snapshot: its span in this device's memory (0: elsewhere).
static size_t snap_size(const struct cu_backend * c, const struct tg_tensor * t) {
    const struct tg_buffer * b = tg_tensor_buffer(t);
    return t->data && b && b->buft == &c->d->buft ? tg_nbytes(t) : 0;
}

// Every node first, each followed by a device copy of its bytes (view nodes
// too: a view's bytes at that point) and a timing event; one copy of all the
// snapshots to pinned host memory and one wait; then the hooks in order, with
// the nodes' device times and host reads served from the snapshots. Returns
// 1 when it cannot (too many bytes, no memory): the caller runs node by node.
static int cu_hooks_deferred(struct cu_backend * c, struct tg_graph * g, const struct tg_node_hooks * h, enum tg_status * out) {
    const int n = g->n_nodes;
    size_t total = 0;
    for (int i = 0; i < n && total <= CU_SNAP_MAX; i++) total += (snap_size(c, g->nodes[i]) + 255) / 256 * 256;
    if (total > CU_SNAP_MAX || !snap_reserve(c, n, total ? total : 256)) return 1;
    for (size_t i = 0, off = 0; i < (size_t) n; i++) {
        c->snaps[i] = (struct cu_snap) { g->nodes[i], off, snap_size(c, g->nodes[i]) };
        off += (c->snaps[i].size + 255) / 256 * 256;
    }
    cudaEventRecord(c->events[0], c->stream);
    for (int i = 0; i < n; i++) {
        struct tg_tensor * t = g->nodes[i];
        enum tg_status st = cu_compute_node(c, t, i + 1);
        if (st != TG_OK) { cudaStreamSynchronize(c->stream); *out = st; return 0; }
        cudaEventRecord(c->events[i + 1], c->stream);
        if (c->snaps[i].size)
            cudaMemcpyAsync(c->snap_dev + c->snaps[i].off, t->data, c->snaps[i].size, cudaMemcpyDeviceToDevice, c->stream);
    }
    if (total) cudaMemcpyAsync(c->snap_host, c->snap_dev, total, cudaMemcpyDeviceToHost, c->stream);
    enum tg_status st = cu_sync(c, g, n ? g->nodes[n - 1] : NULL);
    if (st != TG_OK) { *out = st; return 0; }
    // device times on the host clock: the last node ended before now (the
    // snapshots' copy to the host came after it)
    const uint64_t now = tg_observe_now_ns();
    float ms_all = 0;
    cudaEventElapsedTime(&ms_all, c->events[0], c->events[n]);
    const double base = (double) now - (double) ms_all * 1e6;
    struct cu_replay rp = { c->snaps, n, 0, c->snap_host };
    g_replay = &rp;
    float mb = 0, me = 0;   // node i ran from event i to event i + 1
    for (int i = 0; i < n; i++, mb = me) {
        struct tg_tensor * t = g->nodes[i];
        cudaEventElapsedTime(&me, c->events[0], c->events[i + 1]);
        rp.cur = i;
        *h->t_ns = (uint64_t) (base + (double) mb * 1e6);
        if (h->before && !h->before(t, i, h->user)) {
            g_replay = NULL;
            *h->t_ns = 0;
            *out = tg_error(TG_ERR_ABORTED, "computation stopped at node %d '%s' (its events came after the run)", i, t->name);
            return 0;
        }
        *h->t_ns = (uint64_t) (base + (double) me * 1e6);
        if (h->after) h->after(t, i, h->user);
    }
    g_replay = NULL;
    *h->t_ns = 0;
    cudaGetLastError();
    *out = TG_OK;
    return 0;
}

static enum tg_status cu_graph_compute_hooks(struct tg_backend * be, struct tg_graph * g, const struct tg_node_hooks * h) {
    struct cu_backend * c = be->context;
    if (!cu_set_device(c->d)) return tg_error(TG_ERR_INTERNAL, "%s: cannot select the device", c->d->name);
    enum tg_status dst;
    if (h->deferrable && h->t_ns && c->defer && cu_hooks_deferred(c, g, h, &dst) == 0) return dst;
    for (int i = 0; i < g->n_nodes; i++) {
        struct tg_tensor * n = g->nodes[i];
        if (h->before && !h->before(n, i, h->user))
            return tg_error(TG_ERR_ABORTED, "computation stopped before node %d '%s'", i, n->name);
        enum tg_status st = cu_compute_node(c, n, i + 1);
        if (st == TG_OK) st = cu_sync(c, g, n);
        else cudaStreamSynchronize(c->stream);
        if (st != TG_OK) return st;
        if (h->after) h->after(n, i, h->user);
    }
    return TG_OK;
}

static void cu_synchronize(struct tg_backend * be) {
    struct cu_backend * c = be->context;
    cu_set_device(c->d);
    cudaStreamSynchronize(c->stream);
}

static const struct tg_backend_iface cu_backend_iface = {
    .get_name                = cu_name,
    .free                    = cu_free,
    .get_default_buffer_type = cu_default_buft,
    .graph_compute           = cu_graph_compute,
    .graph_compute_hooks     = cu_graph_compute_hooks,
    .parallel                = NULL,
    .supports_op             = cu_supports_op,
    .supports_buft           = cu_supports_buft,
    .offload_op              = cu_offload_op,
    .synchronize             = cu_synchronize,
    .set_tensor_async        = NULL,
    .get_tensor_async        = NULL,
};

static struct tg_backend * cu_dev_init(struct tg_device * dev, const char * params) {
    (void) params;
    struct cu_device * d = dev->context;
    struct tg_backend * be = calloc(1, sizeof *be);
    struct cu_backend * c = calloc(1, sizeof *c);
    if (!be || !c) { free(be); free(c); tg_error(TG_ERR_NOMEM, "%s: out of host memory", d->name); return NULL; }
    c->d = d;
    cudaError_t e = cu_set_device(d) ? cudaStreamCreate(&c->stream) : cudaErrorInvalidDevice;
    if (e != cudaSuccess) {
        free(be); free(c);
        tg_error(TG_ERR_INTERNAL, "%s: cannot create a stream: %s", d->name, cu_err(e));
        return NULL;
    }
    e = cudaMalloc((void **) &c->d_err, sizeof(int));
    if (e == cudaSuccess) e = cudaMemset(c->d_err, 0, sizeof(int));
    if (e != cudaSuccess) {
        cudaStreamDestroy(c->stream);
        free(be); free(c);
        tg_error(TG_ERR_NOMEM, "%s: cannot allocate device memory: %s", d->name, cu_err(e));
        return NULL;
    }
    cublasStatus_t bs = cublasCreate(&c->blas);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        cudaFree(c->d_err);
        cudaStreamDestroy(c->stream);
        free(be); free(c);
        tg_error(TG_ERR_INTERNAL, "%s: cuBLAS could not start (status %d)", d->name, (int) bs);
        return NULL;
    }
    cublasSetStream(c->blas, c->stream);
    cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH);   // F32 products in F32 (no TF32)
    const char * dv = getenv("TG_CUDA_DEFER");
    c->defer = !(dv && strcmp(dv, "0") == 0);
    const char * gv = getenv("TG_CUDA_GRAPHS");
    c->graphs = gv && strcmp(gv, "1") == 0;
    if (c->graphs) {   // cuBLAS must not allocate inside a capture: a workspace of its own
        if (cudaMalloc(&c->cublas_ws, (size_t) 32 << 20) == cudaSuccess) cublasSetWorkspace(c->blas, c->cublas_ws, (size_t) 32 << 20);
        else { cudaGetLastError(); c->graphs = false; }
    }
    be->iface = cu_backend_iface;
    be->device = dev;
    be->context = c;
    return be;
}

// ---- devices -----------------------------------------------------------------------------------------

static const char * cu_dev_name(struct tg_device * dev) { return ((struct cu_device *) dev->context)->name; }
static const char * cu_dev_desc(struct tg_device * dev) { return ((struct cu_device *) dev->context)->desc; }
static enum tg_device_type cu_dev_type(struct tg_device * dev) { (void) dev; return TG_DEVICE_GPU; }
static struct tg_buffer_type * cu_dev_buft(struct tg_device * dev) { return &((struct cu_device *) dev->context)->buft; }

static bool cu_dev_memory(struct tg_device * dev, size_t * free_b, size_t * total_b) {
    struct cu_device * d = dev->context;
    if (!cu_set_device(d) || cudaMemGetInfo(free_b, total_b) != cudaSuccess) { cudaGetLastError(); return false; }
    return true;
}

int tg_cuda_register_devices(struct tg_device ** out, int max) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(g_probe, sizeof g_probe, "no CUDA device (%s)", cu_err(e));
        cudaGetLastError();
        return 0;
    }
    if (n == 0) { snprintf(g_probe, sizeof g_probe, "no CUDA device"); return 0; }
    if (n > CU_MAX_DEVICES) n = CU_MAX_DEVICES;
    if (n > max) n = max;
    for (int i = 0; i < n; i++) {
        struct cu_device * d = &g_dev[g_n_dev];
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) { cudaGetLastError(); continue; }
        d->id = i;
        snprintf(d->name, sizeof d->name, "CUDA%d", i);
        d->mem_total = p.totalGlobalMem;
        snprintf(d->desc, sizeof d->desc, "%.200s (compute %d.%d, %.1f GiB, %d SMs)", p.name, p.major, p.minor,
                 p.totalGlobalMem / 1073741824.0, p.multiProcessorCount);
        d->buft = (struct tg_buffer_type) { .iface = cu_buft_iface, .device = &d->dev, .context = d };
        d->dev = (struct tg_device) {
            .iface = { .get_name = cu_dev_name, .get_description = cu_dev_desc, .get_type = cu_dev_type,
                       .init_backend = cu_dev_init, .get_buffer_type = cu_dev_buft, .get_memory = cu_dev_memory },
            .context = d,
        };
        out[g_n_dev++] = &d->dev;
    }
    snprintf(g_probe, sizeof g_probe, "%d CUDA device%s", g_n_dev, g_n_dev == 1 ? "" : "s");
    return g_n_dev;
}

bool tg_cuda_versions(int * runtime, int * driver) {
    int r = 0, d = 0;
    if (cudaRuntimeGetVersion(&r) != cudaSuccess) { r = 0; cudaGetLastError(); }
    if (cudaDriverGetVersion(&d) != cudaSuccess) { d = 0; cudaGetLastError(); }
    if (runtime) *runtime = r;
    if (driver) *driver = d;
    return true;
}

const char * tg_cuda_probe(void) {
    tg_device_count();   // the registry probes once
    return g_probe;
}

bool tg_backend_is_cuda(const struct tg_backend * b) { return b && b->iface.get_name == cu_name; }
bool tg_buffer_type_is_cuda(const struct tg_buffer_type * buft) { return cu_is_cuda_buft(buft); }
