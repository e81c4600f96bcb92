// kernels.cu - the CUDA backend's kernels: element-wise maps with any strides
// and broadcasting, copies with type conversion, reductions, norms, softmax,
// rope, GLU, the causal mask, fused attention, decoding of the quantized
// types into F32, and matrix-vector products that read the weights in their
// stored type (generation). Each kernel computes the function of the CPU op
// of the same name (engine/cpu/ops-*.c, documented there); sums the CPU keeps
// in double are kept in double here too.
#include "core/alibi.h"
#include "core/quant-round.h"
#include "cuda/cuda-impl.h"
#include "tg/core.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#define TPB 256

static __host__ __device__ __forceinline__ int64_t nel(const tg_cu_t & t) { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }
static __host__ __device__ __forceinline__ int64_t nrows(const tg_cu_t & t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

static inline unsigned blocks_for(int64_t n, int per = TPB) {
    int64_t b = (n + per - 1) / per;
    if (b < 1) b = 1;
    if (b > 65535 * 16) b = 65535 * 16;   // grid-stride loops cover the rest
    return (unsigned) b;
}

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t) gridDim.x * blockDim.x)

static __device__ __forceinline__ float ld_plain(const char * p, int type) {
    switch (type) {
        case TG_TYPE_F32:  return *(const float *) p;
        case TG_TYPE_F16:  return __half2float(*(const __half *) p);
        case TG_TYPE_BF16: return __bfloat162float(*(const __nv_bfloat16 *) p);
        case TG_TYPE_I32:  return (float) *(const int32_t *) p;
        case TG_TYPE_F64:  return (float) *(const double *) p;
        default:           return 0.0f;
    }
}

static __device__ __forceinline__ void st_plain(char * p, int type, float v) {
    switch (type) {
        case TG_TYPE_F32:  *(float *) p = v; break;
        case TG_TYPE_F16:  *(__half *) p = __float2half_rn(v); break;
        case TG_TYPE_BF16: *(__nv_bfloat16 *) p = __float2bfloat16_rn(v); break;
        case TG_TYPE_I32:  *(int32_t *) p = (int32_t) v; break;
        case TG_TYPE_F64:  *(double *) p = (double) v; break;
        default: break;
    }
}

// Linear (row-major logical) index -> coordinates in t.
static __device__ __forceinline__ void unravel(int64_t i, const tg_cu_t & t, int64_t c[4]) {
    c[0] = i % t.ne[0]; i /= t.ne[0];
    c[1] = i % t.ne[1]; i /= t.ne[1];
    c[2] = i % t.ne[2];
    c[3] = i / t.ne[2];
}

static __device__ __forceinline__ char * at(const tg_cu_t & t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

static __device__ __forceinline__ char * row_at(const tg_cu_t & t, int64_t r) {   // row r in (i1, i2, i3) order
    const int64_t i1 = r % t.ne[1], i2 = (r / t.ne[1]) % t.ne[2], i3 = r / (t.ne[1] * t.ne[2]);
    return t.data + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024).
template <typename T> static __device__ T block_sum(T v) {
    __shared__ T part[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (l == 0) part[w] = v;
    __syncthreads();
    T s = 0;
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : (T) 0;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) part[0] = s;
    }
    __syncthreads();
    return part[0];
}

static __device__ float block_max(float v) {
    __shared__ float part[32];
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (l == 0) part[w] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) s = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, o));
        if (threadIdx.x == 0) part[0] = s;
    }
    __syncthreads();
    return part[0];
}

// ---- element-wise ------------------------------------------------------------------------------

#define GELU_K 0.7978845608028654f
#define GELU_C 0.044715f

static __device__ __forceinline__ float silu1(float x) { return x / (1.0f + expf(-x)); }
static __device__ __forceinline__ float gelu1(float x) { return x / (1.0f + expf(-2.0f * GELU_K * (x + GELU_C * x * x * x))); }
static __device__ __forceinline__ float relu1(float x) { return x > 0.0f ? x : 0.0f; }

static __global__ void k_unary(int op, float param, tg_cu_t d, tg_cu_t a) {
    const int64_t n = nel(d);
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, d, c);
        const float x = ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
        float y;
        switch (op) {
            case TG_CU_U_SCALE: y = x * param; break;
            case TG_CU_U_SQR:   y = x * x; break;
            case TG_CU_U_SQRT:  y = sqrtf(x); break;
            case TG_CU_U_LOG:   y = logf(x); break;
            case TG_CU_U_NEG:   y = -x; break;
            case TG_CU_U_ABS:   y = fabsf(x); break;
            case TG_CU_U_SILU:  y = silu1(x); break;
            case TG_CU_U_GELU:  y = gelu1(x); break;
            default:            y = relu1(x); break;
        }
        st_plain(at(d, c[0], c[1], c[2], c[3]), d.type, y);
    }
}

static __global__ void k_binary(int op, tg_cu_t d, tg_cu_t a, tg_cu_t b) {
    const int64_t n = nel(d);
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, d, c);
        const float x = ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
        const float y = ld_plain(at(b, c[0] % b.ne[0], c[1] % b.ne[1], c[2] % b.ne[2], c[3] % b.ne[3]), b.type);
        const float z = op == TG_CU_B_ADD ? x + y : op == TG_CU_B_SUB ? x - y : op == TG_CU_B_MUL ? x * y : x / y;
        st_plain(at(d, c[0], c[1], c[2], c[3]), d.type, z);
    }
}

// esize > 0: same type, esize bytes copied as they are.
static __device__ __forceinline__ void copy_elem(char * dp, int dt, const char * ap, int at_, int esize) {
    if (esize == 4) *(uint32_t *) dp = *(const uint32_t *) ap;
    else if (esize == 2) *(uint16_t *) dp = *(const uint16_t *) ap;
    else if (esize == 8) *(uint64_t *) dp = *(const uint64_t *) ap;
    else st_plain(dp, dt, ld_plain(ap, at_));
}

static __global__ void k_copy(tg_cu_t d, tg_cu_t a, int esize) {
    const int64_t n = nel(d);
    GRID_STRIDE(i, n) {
        int64_t cd[4], ca[4];
        unravel(i, d, cd);
        unravel(i, a, ca);
        copy_elem(at(d, cd[0], cd[1], cd[2], cd[3]), d.type, at(a, ca[0], ca[1], ca[2], ca[3]), a.type, esize);
    }
}


static __global__ void k_repeat(tg_cu_t d, tg_cu_t a, int esize) {
    const int64_t n = nel(d);
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, d, c);
        copy_elem(at(d, c[0], c[1], c[2], c[3]), d.type, at(a, c[0] % a.ne[0], c[1] % a.ne[1], c[2] % a.ne[2], c[3] % a.ne[3]),
                  a.type, esize);
    }
}

static __global__ void k_concat(tg_cu_t d, tg_cu_t a, tg_cu_t b, int dim) {
    const int64_t n = nel(d);
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, d, c);
        char * dp = at(d, c[0], c[1], c[2], c[3]);
        float v;
        if (c[dim] < a.ne[dim]) {
            v = ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
        } else {
            c[dim] -= a.ne[dim];
            v = ld_plain(at(b, c[0], c[1], c[2], c[3]), b.type);
        }
        st_plain(dp, d.type, v);
    }
}

static __global__ void k_diag_mask_inf(int n_past, tg_cu_t d, tg_cu_t a) {
    const int64_t n = nel(d);
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, d, c);
        const float x = ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
        st_plain(at(d, c[0], c[1], c[2], c[3]), d.type, c[0] > n_past + c[1] ? -INFINITY : x);
    }
}

static int plain_size(int type) {
    switch (type) {
        case TG_TYPE_F32: case TG_TYPE_I32: return 4;
        case TG_TYPE_F16: case TG_TYPE_BF16: return 2;
        case TG_TYPE_F64: return 8;
        default: return 0;
    }
}

extern "C" bool tg_cu_type_plain(int type) { return plain_size(type) != 0; }

extern "C" void tg_cu_unary(tg_cu_stream s, int op, float param, tg_cu_t dst, tg_cu_t a) {
    k_unary<<<blocks_for(nel(dst)), TPB, 0, s>>>(op, param, dst, a);
}

extern "C" void tg_cu_binary(tg_cu_stream s, int op, tg_cu_t dst, tg_cu_t a, tg_cu_t b) {
    k_binary<<<blocks_for(nel(dst)), TPB, 0, s>>>(op, dst, a, b);
}

extern "C" void tg_cu_copy(tg_cu_stream s, tg_cu_t dst, tg_cu_t a) {
    k_copy<<<blocks_for(nel(dst)), TPB, 0, s>>>(dst, a, dst.type == a.type ? plain_size(a.type) : 0);
}

extern "C" void tg_cu_repeat(tg_cu_stream s, tg_cu_t dst, tg_cu_t a) {
    k_repeat<<<blocks_for(nel(dst)), TPB, 0, s>>>(dst, a, dst.type == a.type ? plain_size(a.type) : 0);
}

extern "C" void tg_cu_concat(tg_cu_stream s, tg_cu_t dst, tg_cu_t a, tg_cu_t b, int dim) {
    k_concat<<<blocks_for(nel(dst)), TPB, 0, s>>>(dst, a, b, dim);
}

extern "C" void tg_cu_diag_mask_inf(tg_cu_stream s, int n_past, tg_cu_t dst, tg_cu_t a) {
    k_diag_mask_inf<<<blocks_for(nel(dst)), TPB, 0, s>>>(n_past, dst, a);
}

// ---- reductions and norms (a block per row) ------------------------------------------------------

static __global__ void k_sum_all(tg_cu_t d, tg_cu_t a) {
    double acc = 0;
    const int64_t n = nel(a);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        int64_t c[4];
        unravel(i, a, c);
        acc += ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) st_plain(d.data, d.type, (float) acc);
}

static __global__ void k_sum_rows(bool mean, tg_cu_t d, tg_cu_t a) {
    const int64_t r = blockIdx.x;
    const char * row = row_at(a, r);
    double acc = 0;
    for (int64_t i = threadIdx.x; i < a.ne[0]; i += blockDim.x) acc += ld_plain(row + i * a.nb[0], a.type);
    acc = block_sum(acc);
    if (threadIdx.x == 0) st_plain(row_at(d, r), d.type, (float) (mean ? acc / (double) a.ne[0] : acc));
}

static __global__ void k_argmax(tg_cu_t d, tg_cu_t a) {
    const int64_t r = blockIdx.x;
    const char * row = row_at(a, r);
    __shared__ float bv[TPB];
    __shared__ int64_t bi[TPB];
    float best = -INFINITY;
    int64_t bidx = -1;
    for (int64_t i = threadIdx.x; i < a.ne[0]; i += blockDim.x) {
        const float x = ld_plain(row + i * a.nb[0], a.type);
        if (bidx < 0 || x > best) { best = x; bidx = i; }
    }
    bv[threadIdx.x] = best;
    bi[threadIdx.x] = bidx;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {   // the first maximum: ties go to the lower index
        if ((int) threadIdx.x < o) {
            const float v2 = bv[threadIdx.x + o];
            const int64_t i2 = bi[threadIdx.x + o];
            if (i2 >= 0 && (bi[threadIdx.x] < 0 || v2 > bv[threadIdx.x] || (v2 == bv[threadIdx.x] && i2 < bi[threadIdx.x]))) {
                bv[threadIdx.x] = v2;
                bi[threadIdx.x] = i2;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) *(int32_t *) (d.data + r * d.nb[0]) = (int32_t) (bi[0] < 0 ? 0 : bi[0]);
}

extern "C" void tg_cu_reduce(tg_cu_stream s, int mode, tg_cu_t dst, tg_cu_t a) {
    if (mode == 0) k_sum_all<<<1, 1024, 0, s>>>(dst, a);
    else if (mode == 3) k_argmax<<<(unsigned) nrows(a), TPB, 0, s>>>(dst, a);
    else k_sum_rows<<<(unsigned) nrows(a), TPB, 0, s>>>(mode == 2, dst, a);
}

static __global__ void k_norm(bool rms, float eps, tg_cu_t d, tg_cu_t a) {
    const int64_t r = blockIdx.x, n = a.ne[0];
    const char * x = row_at(a, r);
    char * y = row_at(d, r);
    double s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const double v = ld_plain(x + i * a.nb[0], a.type);
        s1 += v;
        s2 += v * v;
    }
    s2 = block_sum(s2);
    double mean = 0, scale;
    if (rms) {
        scale = 1.0 / sqrt(s2 / (double) n + (double) eps);
    } else {
        s1 = block_sum(s1);
        mean = s1 / (double) n;
        double var = s2 / (double) n - mean * mean;
        if (var < 0) var = 0;
        scale = 1.0 / sqrt(var + (double) eps);
    }
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = ld_plain(x + i * a.nb[0], a.type);
        st_plain(y + i * d.nb[0], d.type, rms ? v * (float) scale : (float) ((v - mean) * scale));
    }
}

extern "C" void tg_cu_norm(tg_cu_stream s, bool rms, float eps, tg_cu_t dst, tg_cu_t a) {
    k_norm<<<(unsigned) nrows(a), TPB, 0, s>>>(rms, eps, dst, a);
}

// ---- softmax -------------------------------------------------------------------------------------

// dst row = softmax(a row * scale + slope * mask row); rows of -inf give 0,
// NaN propagates. w: the scaled row (dynamic shared memory, ne0 floats).
static __global__ void k_soft_max(float scale, float max_bias, tg_cu_t d, tg_cu_t a, tg_cu_t m, bool has_mask) {
    extern __shared__ float w[];
    const int64_t r = blockIdx.x, n = a.ne[0];
    const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
    const char * x = a.data + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3];
    const char * mr = has_mask ? m.data + i1 * m.nb[1] + (i2 % m.ne[2]) * m.nb[2] + (i3 % m.ne[3]) * m.nb[3] : NULL;
    const float slope = tg_alibi_slope(i2, a.ne[2], max_bias);
    float mx = -INFINITY;
    int nan = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        float v = ld_plain(x + i * a.nb[0], a.type) * scale;
        if (mr) v += slope * ld_plain(mr + i * m.nb[0], m.type);
        w[i] = v;
        nan |= v != v;
        mx = fmaxf(mx, v);
    }
    mx = block_max(mx);
    nan = block_sum(nan);
    char * y = d.data + i1 * d.nb[1] + i2 * d.nb[2] + i3 * d.nb[3];
    if (nan || mx == -INFINITY) {
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) st_plain(y + i * d.nb[0], d.type, nan ? NAN : 0.0f);
        return;
    }
    double sum = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float e = expf(w[i] - mx);
        w[i] = e;
        sum += e;
    }
    sum = block_sum(sum);
    const float inv = (float) (1.0 / sum);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) st_plain(y + i * d.nb[0], d.type, w[i] * inv);
}

extern "C" void tg_cu_soft_max(tg_cu_stream s, float scale, float max_bias, tg_cu_t dst, tg_cu_t a, const tg_cu_t * mask) {
    tg_cu_t m = mask ? *mask : a;
    k_soft_max<<<(unsigned) nrows(a), TPB, (size_t) a.ne[0] * sizeof(float), s>>>(scale, max_bias, dst, a, m, mask != NULL);
}

// ---- rope ----------------------------------------------------------------------------------------

// One thread per rotated pair (or copied tail element) of dst [d, h, n, x]:
// theta = pos[i2] * freq_scale * freq_base^(-2i/n_dims) (/ factor[i]), in
// double like the CPU.
static __global__ void k_rope(int n_dims, bool neox, double base, double fscale, tg_cu_t d, tg_cu_t a, tg_cu_t pos,
                              tg_cu_t ff, bool has_ff) {
    const int64_t half = n_dims / 2, tail = d.ne[0] - n_dims, per_row = half + (tail > 0 ? tail : 0);
    const int64_t n = per_row * nrows(d);
    GRID_STRIDE(i, n) {
        const int64_t j = i % per_row, r = i / per_row;
        const int64_t i1 = r % d.ne[1], i2 = (r / d.ne[1]) % d.ne[2], i3 = r / (d.ne[1] * d.ne[2]);
        const char * x = a.data + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3];
        char * y = d.data + i1 * d.nb[1] + i2 * d.nb[2] + i3 * d.nb[3];
        if (j >= half) {   // elements past n_dims are copied
            const int64_t e = n_dims + (j - half);
            st_plain(y + e * d.nb[0], d.type, ld_plain(x + e * a.nb[0], a.type));
            continue;
        }
        const int32_t p = *(const int32_t *) (pos.data + i2 * pos.nb[0]);
        double inv = pow(base, -2.0 * (double) j / (double) n_dims);
        if (has_ff) inv /= (double) *(const float *) (ff.data + j * ff.nb[0]);
        const double theta = (double) p * fscale * inv;
        const float cs = (float) cos(theta), sn = (float) sin(theta);
        const int64_t e0 = neox ? j : 2 * j, e1 = neox ? j + half : 2 * j + 1;
        const float x0 = ld_plain(x + e0 * a.nb[0], a.type), x1 = ld_plain(x + e1 * a.nb[0], a.type);
        st_plain(y + e0 * d.nb[0], d.type, x0 * cs - x1 * sn);
        st_plain(y + e1 * d.nb[0], d.type, x0 * sn + x1 * cs);
    }
}

extern "C" void tg_cu_rope(tg_cu_stream s, int n_dims, bool neox, float freq_base, float freq_scale, tg_cu_t dst, tg_cu_t a,
                           tg_cu_t pos, const tg_cu_t * factors) {
    const int64_t half = n_dims / 2, tail = dst.ne[0] - n_dims;
    const int64_t n = (half + (tail > 0 ? tail : 0)) * nrows(dst);
    k_rope<<<blocks_for(n), TPB, 0, s>>>(n_dims, neox, freq_base, freq_scale, dst, a, pos, factors ? *factors : pos,
                                         factors != NULL);
}

// ---- GLU -----------------------------------------------------------------------------------------

static __global__ void k_glu(int op, bool swapped, tg_cu_t d, tg_cu_t a, tg_cu_t b, bool two) {
    const int64_t n = nel(d), nc = d.ne[0];
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, d, c);
        float x, g;
        if (two) {
            x = ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
            g = ld_plain(at(b, c[0], c[1], c[2], c[3]), b.type);
            if (swapped) { const float t = x; x = g; g = t; }
        } else {
            const float lo = ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
            const float hi = ld_plain(at(a, c[0] + nc, c[1], c[2], c[3]), a.type);
            x = swapped ? hi : lo;
            g = swapped ? lo : hi;
        }
        const float act = op == TG_GLU_SWIGLU ? silu1(x) : op == TG_GLU_GEGLU ? gelu1(x) : relu1(x);
        st_plain(at(d, c[0], c[1], c[2], c[3]), d.type, act * g);
    }
}

extern "C" void tg_cu_glu(tg_cu_stream s, int op, bool swapped, tg_cu_t dst, tg_cu_t a, const tg_cu_t * b) {
    k_glu<<<blocks_for(nel(dst)), TPB, 0, s>>>(op, swapped, dst, a, b ? *b : a, b != NULL);
}

// ---- quantized types: 32-element sub-blocks --------------------------------------------------------

static __device__ __forceinline__ float h2f(const uint8_t * p) { return __half2float(*(const __half *) p); }

static __device__ const int8_t iq4nl_values[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0..7).
static __device__ __forceinline__ void scale_min_k4(int j, const uint8_t * q, int & sc, int & m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// The 32 values of sub-block s (elements 32s .. 32s+31) of a row of type T.
template <int T> static __device__ __forceinline__ void deq32(const uint8_t * row, int64_t s, float v[32]) {
    if (T == TG_TYPE_F32) {
        const float * p = (const float *) row + 32 * s;
        for (int i = 0; i < 32; i++) v[i] = p[i];
    } else if (T == TG_TYPE_F16) {
        const __half * p = (const __half *) row + 32 * s;
        for (int i = 0; i < 32; i++) v[i] = __half2float(p[i]);
    } else if (T == TG_TYPE_BF16) {
        const __nv_bfloat16 * p = (const __nv_bfloat16 *) row + 32 * s;
        for (int i = 0; i < 32; i++) v[i] = __bfloat162float(p[i]);
    } else if (T == TG_TYPE_Q8_0) {
        const uint8_t * b = row + 34 * s;
        const float d = h2f(b);
        for (int i = 0; i < 32; i++) v[i] = d * (float) (int8_t) b[2 + i];
    } else if (T == TG_TYPE_Q4_0) {
        const uint8_t * b = row + 18 * s;
        const float d = h2f(b);
        for (int i = 0; i < 16; i++) {
            v[i] = d * (float) ((b[2 + i] & 0xF) - 8);
            v[i + 16] = d * (float) ((b[2 + i] >> 4) - 8);
        }
    } else if (T == TG_TYPE_Q4_1) {
        const uint8_t * b = row + 20 * s;
        const float d = h2f(b), m = h2f(b + 2);
        for (int i = 0; i < 16; i++) {
            v[i] = d * (float) (b[4 + i] & 0xF) + m;
            v[i + 16] = d * (float) (b[4 + i] >> 4) + m;
        }
    } else if (T == TG_TYPE_Q5_0 || T == TG_TYPE_Q5_1) {
        const bool one = T == TG_TYPE_Q5_1;
        const uint8_t * b = row + (one ? 24 : 22) * s;
        const float d = h2f(b), m = one ? h2f(b + 2) : 0.0f;
        const uint8_t * qhp = b + (one ? 4 : 2);
        const uint32_t qh = (uint32_t) qhp[0] | ((uint32_t) qhp[1] << 8) | ((uint32_t) qhp[2] << 16) | ((uint32_t) qhp[3] << 24);
        const uint8_t * qs = qhp + 4;
        for (int i = 0; i < 16; i++) {
            const int q0 = (qs[i] & 0xF) | (int) (((qh >> i) & 1) << 4);
            const int q1 = (qs[i] >> 4) | (int) (((qh >> (i + 16)) & 1) << 4);
            v[i] = one ? d * (float) q0 + m : d * (float) (q0 - 16);
            v[i + 16] = one ? d * (float) q1 + m : d * (float) (q1 - 16);
        }
    } else if (T == TG_TYPE_Q2_K) {
        const uint8_t * b = row + 84 * (s / 8);
        const int j = (int) (s % 8), n = j / 4, sh = 2 * (j % 4);
        const float d = h2f(b + 80), dmin = h2f(b + 82);
        const uint8_t * q = b + 16 + 32 * n;
        for (int h = 0; h < 2; h++) {
            const uint8_t sc = b[8 * n + 2 * (j % 4) + h];
            const float dl = d * (float) (sc & 0xF), ml = dmin * (float) (sc >> 4);
            for (int l = 0; l < 16; l++) v[16 * h + l] = dl * (float) ((q[16 * h + l] >> sh) & 3) - ml;
        }
    } else if (T == TG_TYPE_Q3_K) {
        // 16 sub-blocks of 16: 6-bit scales (minus 32) packed in 12 bytes (low
        // 4 bits in bytes 0..7, high 2 bits in bytes 8..11), q = 2 low bits
        // (qs) minus 4 where the hmask bit is clear.
        const uint8_t * b = row + 110 * (s / 8);
        const int j = (int) (s % 8), n = j / 4, sh = 2 * (j % 4);
        const float d = h2f(b + 108);
        const uint8_t * hm = b, * q = b + 32 + 32 * n, * sc = b + 96;
        const uint8_t m = (uint8_t) (1u << j);
        for (int h = 0; h < 2; h++) {
            const int k = 2 * j + h;   // scale index 0..15
            const int lo = k < 8 ? sc[k] & 0xF : sc[k - 8] >> 4;
            const int hi = (sc[8 + k % 4] >> (2 * (k / 4))) & 3;
            const float dl = d * (float) ((lo | (hi << 4)) - 32);
            for (int l = 16 * h; l < 16 * h + 16; l++)
                v[l] = dl * (float) ((int) ((q[l] >> sh) & 3) - ((hm[l] & m) ? 0 : 4));
        }
    } else if (T == TG_TYPE_Q4_K || T == TG_TYPE_Q5_K) {
        const bool five = T == TG_TYPE_Q5_K;
        const uint8_t * b = row + (five ? 176 : 144) * (s / 8);
        const int j = (int) (s % 8);
        const float d = h2f(b), dmin = h2f(b + 2);
        int sc, m;
        scale_min_k4(j, b + 4, sc, m);
        const float dl = d * (float) sc, ml = dmin * (float) m;
        const uint8_t * qs = b + (five ? 48 : 16) + 32 * (j / 2);
        const uint8_t * qh = b + 16;
        const int shift = (j & 1) ? 4 : 0;
        for (int l = 0; l < 32; l++) {
            int q = (qs[l] >> shift) & 0xF;
            if (five) q |= ((qh[l] >> j) & 1) << 4;
            v[l] = dl * (float) q - ml;
        }
    } else if (T == TG_TYPE_Q6_K) {
        const uint8_t * b = row + 210 * (s / 8);
        const int j = (int) (s % 8), n = j / 4, k = j % 4;
        const float d = h2f(b + 208);
        const uint8_t * ql = b + 64 * n + ((k & 1) ? 32 : 0);
        const uint8_t * qh = b + 128 + 32 * n;
        const int8_t * sc = (const int8_t *) (b + 192) + 8 * n + 2 * k;
        const int lsh = k >= 2 ? 4 : 0, hsh = 2 * k;
        for (int l = 0; l < 32; l++) {
            const int q = (((ql[l] >> lsh) & 0xF) | (((qh[l] >> hsh) & 3) << 4)) - 32;
            v[l] = d * (float) sc[l / 16] * (float) q;
        }
    } else if (T == TG_TYPE_IQ4_NL) {
        const uint8_t * b = row + 18 * s;
        const float d = h2f(b);
        for (int i = 0; i < 16; i++) {
            v[i] = d * (float) iq4nl_values[b[2 + i] & 0xF];
            v[i + 16] = d * (float) iq4nl_values[b[2 + i] >> 4];
        }
    } else if (T == TG_TYPE_IQ4_XS) {
        const uint8_t * b = row + 136 * (s / 8);
        const int j = (int) (s % 8);
        const float d = h2f(b);
        const uint16_t sh = (uint16_t) (b[2] | (b[3] << 8));
        const int ls = ((b[4 + j / 2] >> (4 * (j % 2))) & 0xF) | (((sh >> (2 * j)) & 3) << 4);
        const float dl = d * (float) (ls - 32);
        const uint8_t * qs = b + 8 + 16 * j;
        for (int i = 0; i < 16; i++) {
            v[i] = dl * (float) iq4nl_values[qs[i] & 0xF];
            v[i + 16] = dl * (float) iq4nl_values[qs[i] >> 4];
        }
    }
}

#define DECODABLE(X) X(F32) X(F16) X(BF16) X(Q8_0) X(Q4_0) X(Q4_1) X(Q5_0) X(Q5_1) X(Q2_K) X(Q3_K) X(Q4_K) X(Q5_K) X(Q6_K) \
                     X(IQ4_NL) X(IQ4_XS)

extern "C" bool tg_cu_type_decodable(int type) {
    switch (type) {
#define CASE(T) case TG_TYPE_##T:
        DECODABLE(CASE) return true;
#undef CASE
        default: return false;
    }
}

// Dense F32 rows from a's rows (dim 0 contiguous): one thread per sub-block.
template <int T> static __global__ void k_to_f32(float * out, tg_cu_t a) {
    const int64_t nsub = a.ne[0] / 32, n = nsub * nrows(a);
    GRID_STRIDE(i, n) {
        const int64_t r = i / nsub, sb = i % nsub;
        float v[32];
        deq32<T>((const uint8_t *) row_at(a, r), sb, v);
        float * o = out + r * a.ne[0] + sb * 32;
        for (int k = 0; k < 32; k++) o[k] = v[k];
    }
}

// Plain types with any ne0 (and any element stride): one thread per element.
static __global__ void k_plain_to_f32(float * out, tg_cu_t a) {
    const int64_t n = nel(a);
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, a, c);
        out[i] = ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
    }
}

extern "C" void tg_cu_to_f32(tg_cu_stream s, float * out, tg_cu_t a) {
    if (tg_cu_type_plain(a.type)) {
        k_plain_to_f32<<<blocks_for(nel(a)), TPB, 0, s>>>(out, a);
        return;
    }
    const int64_t n = a.ne[0] / 32 * nrows(a);
    switch (a.type) {
#define CASE(T) case TG_TYPE_##T: k_to_f32<TG_TYPE_##T><<<blocks_for(n), TPB, 0, s>>>(out, a); break;
        DECODABLE(CASE)
#undef CASE
        default: break;
    }
}

// GET_ROWS: dst F32 row (i1,i2,i3) = row ids[i1,i2,i3] of a's slice (i2,i3).
template <int T> static __global__ void k_get_rows_q(tg_cu_t d, tg_cu_t a, tg_cu_t ids, int * err, int tag) {
    const int64_t nsub = a.ne[0] / 32, n = nsub * nrows(d);
    GRID_STRIDE(i, n) {
        const int64_t r = i / nsub, sb = i % nsub;
        const int64_t i1 = r % d.ne[1], i2 = (r / d.ne[1]) % d.ne[2], i3 = r / (d.ne[1] * d.ne[2]);
        const int32_t id = *(const int32_t *) (ids.data + i1 * ids.nb[0] + i2 * ids.nb[1] + i3 * ids.nb[2]);
        if (id < 0 || id >= a.ne[1]) { atomicCAS(err, 0, tag); continue; }
        float v[32];
        deq32<T>((const uint8_t *) (a.data + (int64_t) id * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3]), sb, v);
        char * o = d.data + i1 * d.nb[1] + i2 * d.nb[2] + i3 * d.nb[3] + sb * 32 * d.nb[0];
        for (int k = 0; k < 32; k++) *(float *) (o + k * d.nb[0]) = v[k];
    }
}

static __global__ void k_get_rows_plain(tg_cu_t d, tg_cu_t a, tg_cu_t ids, int * err, int tag) {
    const int64_t n = nel(d);
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, d, c);
        const int32_t id = *(const int32_t *) (ids.data + c[1] * ids.nb[0] + c[2] * ids.nb[1] + c[3] * ids.nb[2]);
        if (id < 0 || id >= a.ne[1]) { atomicCAS(err, 0, tag); continue; }
        st_plain(at(d, c[0], c[1], c[2], c[3]), d.type, ld_plain(at(a, c[0], id, c[2], c[3]), a.type));
    }
}

extern "C" void tg_cu_get_rows(tg_cu_stream s, tg_cu_t dst, tg_cu_t a, tg_cu_t ids, int * err, int tag) {
    if (tg_cu_type_plain(a.type)) {
        k_get_rows_plain<<<blocks_for(nel(dst)), TPB, 0, s>>>(dst, a, ids, err, tag);
        return;
    }
    const int64_t n = a.ne[0] / 32 * nrows(dst);
    switch (a.type) {
#define CASE(T) case TG_TYPE_##T: k_get_rows_q<TG_TYPE_##T><<<blocks_for(n), TPB, 0, s>>>(dst, a, ids, err, tag); break;
        DECODABLE(CASE)
#undef CASE
        default: break;
    }
}

// ---- matrix-vector products (generation) -----------------------------------------------------------

// A warp per weight row; its lanes take the row's sub-blocks in turn and
// keep one partial sum per column, reduced across the warp at the end.
#define MMV_ROWS 4
template <int T> static __global__ void k_mmv(const char * w, int64_t ne0, int64_t nb1, int64_t nr, const float * x,
                                              int64_t ldx, float * y, int64_t ldy, int ncols) {
    const int64_t r = (int64_t) blockIdx.x * MMV_ROWS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (r >= nr) return;
    const uint8_t * row = (const uint8_t *) (w + r * nb1);
    float acc[TG_CU_MMV_MAX_COLS];
    for (int c = 0; c < TG_CU_MMV_MAX_COLS; c++) acc[c] = 0.0f;
    const int64_t nsub = ne0 / 32;
    for (int64_t sb = lane; sb < nsub; sb += 32) {
        float v[32];
        deq32<T>(row, sb, v);
        for (int c = 0; c < ncols; c++) {
            const float4 * xp = (const float4 *) (x + c * ldx + sb * 32);
            float s = 0.0f;
            for (int k = 0; k < 8; k++) {
                const float4 q = xp[k];
                s += v[4 * k] * q.x + v[4 * k + 1] * q.y + v[4 * k + 2] * q.z + v[4 * k + 3] * q.w;
            }
            acc[c] += s;
        }
    }
    for (int c = 0; c < ncols; c++) {
        float s = acc[c];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) y[r + c * ldy] = s;
    }
}

extern "C" void tg_cu_mmv(tg_cu_stream s, const char * w, int type, int64_t ne0, int64_t nb1, int64_t nr, const float * x,
                          int64_t ldx, float * y, int64_t ldy, int ncols) {
    const unsigned grid = (unsigned) ((nr + MMV_ROWS - 1) / MMV_ROWS);
    switch (type) {
#define CASE(T) case TG_TYPE_##T: k_mmv<TG_TYPE_##T><<<grid, 32 * MMV_ROWS, 0, s>>>(w, ne0, nb1, nr, x, ldx, y, ldy, ncols); break;
        DECODABLE(CASE)
#undef CASE
        default: break;
    }
}

// ---- fused attention ------------------------------------------------------------------------------

// One block per (query token t, query head h); cells in chunks of the block
// size: each thread scores one cell (q rounded to f16 when K is f16, like the
// CPU), the chunk's softmax is folded into the running max / sum / output
// (P rounded to f16 when V is f16), each thread accumulating output dims.
// dst [Dv, H, T]; q [D, T, H]; k [D, C, Hk]; v [C, Dv, Hk]; mask [C, >=T].
#define FA_THREADS 128
#define FA_MAX_D 512
static __global__ void k_flash_attn(float scale, tg_cu_t d, tg_cu_t q, tg_cu_t k, tg_cu_t v, tg_cu_t m, bool has_mask) {
    const int64_t t = blockIdx.x, h = blockIdx.y;
    const int64_t D = q.ne[0], C = k.ne[1], Dv = v.ne[1], group = q.ne[2] / k.ne[2], hk = h / group;
    __shared__ float qs[FA_MAX_D];
    __shared__ float ps[FA_THREADS];
    __shared__ float o[FA_MAX_D];
    const bool kf16 = k.type == TG_TYPE_F16, vf16 = v.type == TG_TYPE_F16;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
        float x = ld_plain(q.data + i * q.nb[0] + t * q.nb[1] + h * q.nb[2], q.type);
        qs[i] = kf16 ? __half2float(__float2half_rn(x)) : x;
    }
    for (int64_t i = threadIdx.x; i < Dv; i += blockDim.x) o[i] = 0.0f;
    __syncthreads();
    float M = -INFINITY, L = 0.0f;
    int nan = 0;
    const char * mrow = has_mask ? m.data + t * m.nb[1] : NULL;
    for (int64_t c0 = 0; c0 < C; c0 += blockDim.x) {
        const int64_t c = c0 + threadIdx.x;
        float sv = -INFINITY;
        if (c < C) {
            const char * kr = k.data + c * k.nb[1] + hk * k.nb[2];
            float acc = 0.0f;
            for (int64_t i = 0; i < D; i++) acc += qs[i] * ld_plain(kr + i * k.nb[0], k.type);
            sv = acc * scale;
            if (mrow) sv += ld_plain(mrow + c * m.nb[0], m.type);
        }
        nan |= sv != sv;
        const int any_nan = block_sum(nan);
        if (any_nan) { nan = 1; break; }
        const float mb = block_max(sv);
        if (mb == -INFINITY) continue;
        const float Mn = fmaxf(M, mb);
        const float alpha = M == -INFINITY ? 0.0f : expf(M - Mn);
        float p = c < C ? expf(sv - Mn) : 0.0f;
        const float sum = block_sum(p);
        if (vf16) p = __half2float(__float2half_rn(p));
        ps[threadIdx.x] = p;
        L = L * alpha + sum;
        M = Mn;
        __syncthreads();
        const int64_t nc = C - c0 < (int64_t) blockDim.x ? C - c0 : (int64_t) blockDim.x;
        for (int64_t i = threadIdx.x; i < Dv; i += blockDim.x) {
            const char * vr = v.data + i * v.nb[1] + hk * v.nb[2] + c0 * v.nb[0];
            float acc = 0.0f;
            for (int64_t cc = 0; cc < nc; cc++) acc += ps[cc] * ld_plain(vr + cc * v.nb[0], v.type);
            o[i] = o[i] * alpha + acc;
        }
        __syncthreads();
    }
    char * out = d.data + h * d.nb[1] + t * d.nb[2];
    for (int64_t i = threadIdx.x; i < Dv; i += blockDim.x)
        *(float *) (out + i * d.nb[0]) = nan ? NAN : L == 0.0f ? 0.0f : o[i] / L;
}

// Tiled form (head sizes up to FT_D): one block per (tile of FT_Q query
// tokens, query head); per chunk of FT_C cells the chunk's K rows and then
// its V rows are staged in shared memory (coalesced loads, read by all the
// tile's tokens), S = Q K^T, the online softmax per token (a warp per token
// row, FT_C = 32 lanes), O += P V. Chunks every token of the tile has
// masked are skipped.
#define FT_Q 16
#define FT_C 32
#define FT_D 128
#define FT_THREADS 128
static __global__ void k_flash_attn_tiled(float scale, tg_cu_t d, tg_cu_t q, tg_cu_t k, tg_cu_t v, tg_cu_t m, bool has_mask) {
    const int64_t t0 = (int64_t) blockIdx.x * FT_Q, h = blockIdx.y;
    const int64_t T = q.ne[1], D = q.ne[0], C = k.ne[1], Dv = v.ne[1], hk = h / (q.ne[2] / k.ne[2]);
    const int nt = (int) (T - t0 < FT_Q ? T - t0 : FT_Q);
    __shared__ float Qs[FT_Q][FT_D];
    __shared__ float KV[FT_C][FT_D + 1];   // K rows [cell][dim], then V as [dim][cell] (transposed use)
    __shared__ float S[FT_Q][FT_C];
    __shared__ float Ms[FT_Q], Ls[FT_Q], As[FT_Q];
    __shared__ int nanf[FT_Q];
    __shared__ int any;
    const bool kf16 = k.type == TG_TYPE_F16, vf16 = v.type == TG_TYPE_F16;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    for (int i = tid; i < FT_Q * FT_D; i += FT_THREADS) {
        const int t = i / FT_D, e = i % FT_D;
        float x = 0.0f;
        if (t < nt && e < D) {
            x = ld_plain(q.data + e * q.nb[0] + (t0 + t) * q.nb[1] + h * q.nb[2], q.type);
            if (kf16) x = __half2float(__float2half_rn(x));
        }
        Qs[t][e] = x;
    }
    if (tid < FT_Q) { Ms[tid] = -INFINITY; Ls[tid] = 0.0f; nanf[tid] = 0; }
    // Each thread owns output elements (t, e) = idx / Dv, idx % Dv for idx = tid, tid + 128, ...
    float O[FT_Q * FT_D / FT_THREADS];
    for (int r = 0; r < FT_Q * FT_D / FT_THREADS; r++) O[r] = 0.0f;
    __syncthreads();
    for (int64_t c0 = 0; c0 < C; c0 += FT_C) {
        const int nc = (int) (C - c0 < FT_C ? C - c0 : FT_C);
        if (tid == 0) any = 0;
        for (int i = tid; i < FT_C * FT_D; i += FT_THREADS) {
            const int c = i / FT_D, e = i % FT_D;
            KV[c][e] = c < nc && e < D ? ld_plain(k.data + e * k.nb[0] + (c0 + c) * k.nb[1] + hk * k.nb[2], k.type) : 0.0f;
        }
        __syncthreads();
        for (int i = tid; i < FT_Q * FT_C; i += FT_THREADS) {
            const int t = i / FT_C, c = i % FT_C;
            float sv = -INFINITY;
            if (t < nt && c < nc) {
                float acc = 0.0f;
                for (int e = 0; e < D; e++) acc += Qs[t][e] * KV[c][e];
                sv = acc * scale;
                if (has_mask) sv += ld_plain(m.data + (c0 + c) * m.nb[0] + (t0 + t) * m.nb[1], m.type);
                if (sv != -INFINITY) any = 1;   // finite or NaN: the chunk counts
            }
            S[t][c] = sv;
        }
        __syncthreads();
        if (!any) continue;   // every token masked every cell of the chunk (uniform: shared flag)
        for (int t = warp; t < FT_Q; t += FT_THREADS / 32) {   // a warp per token row
            float sv = S[t][lane];
            int bad = sv != sv;
            bad = __any_sync(0xffffffffu, bad);
            float mb = sv;
            for (int o = 16; o > 0; o >>= 1) mb = fmaxf(mb, __shfl_xor_sync(0xffffffffu, mb, o));
            if (bad) nanf[t] = 1;
            const float Mo = Ms[t];
            if (nanf[t] || mb == -INFINITY) {
                S[t][lane] = 0.0f;
                if (lane == 0) As[t] = 1.0f;
                continue;
            }
            const float Mn = fmaxf(Mo, mb);
            const float alpha = Mo == -INFINITY ? 0.0f : expf(Mo - Mn);
            float p = expf(sv - Mn);
            float sum = p;
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            if (vf16) p = __half2float(__float2half_rn(p));
            S[t][lane] = p;
            if (lane == 0) { Ls[t] = Ls[t] * alpha + sum; Ms[t] = Mn; As[t] = alpha; }
        }
        __syncthreads();
        for (int i = tid; i < FT_C * FT_D; i += FT_THREADS) {   // V rows: dim e, cells contiguous
            const int e = i / FT_C, c = i % FT_C;
            if (e < FT_D) KV[c][e] = c < nc && e < Dv ? ld_plain(v.data + (c0 + c) * v.nb[0] + e * v.nb[1] + hk * v.nb[2], v.type) : 0.0f;
        }
        __syncthreads();
        for (int r = 0; r < FT_Q * FT_D / FT_THREADS; r++) {
            const int idx = tid + r * FT_THREADS, t = idx / FT_D, e = idx % FT_D;
            if (t >= nt || e >= Dv) continue;
            float acc = 0.0f;
            for (int c = 0; c < FT_C; c++) acc += S[t][c] * KV[c][e];
            O[r] = O[r] * As[t] + acc;
        }
        __syncthreads();
    }
    for (int r = 0; r < FT_Q * FT_D / FT_THREADS; r++) {
        const int idx = tid + r * FT_THREADS, t = idx / FT_D, e = idx % FT_D;
        if (t >= nt || e >= Dv) continue;
        float * out = (float *) (d.data + e * d.nb[0] + h * d.nb[1] + (t0 + t) * d.nb[2]);
        *out = nanf[t] ? NAN : Ls[t] == 0.0f ? 0.0f : O[r] / Ls[t];
    }
}

// Few query tokens (generation): the cells are split into runs of FD_CELLS,
// one block per (run, query head, token) scoring its run (a warp per cell,
// lanes over the head dimension), with the run's own softmax (max M, sum L,
// P V); a second kernel merges the runs of each (head, token):
// M* = max M_s, L = sum L_s e^(M_s - M*), O = sum O_s e^(M_s - M*), out = O / L.
// Partials: [token][head][run] of (M, L, NaN flag, O[Dv]).
#define FD_CELLS 256
#define FD_MAX_D 256
static __global__ void k_fa_split(float scale, tg_cu_t q, tg_cu_t k, tg_cu_t v, tg_cu_t m, bool has_mask, float * part,
                                  int nsplit) {
    const int64_t sp = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
    const int64_t D = q.ne[0], C = k.ne[1], Dv = v.ne[1], hk = h / (q.ne[2] / k.ne[2]);
    const int64_t c0 = sp * FD_CELLS, nc = C - c0 < FD_CELLS ? C - c0 : FD_CELLS;
    __shared__ float qs[FD_MAX_D];
    __shared__ float S[FD_CELLS];
    const bool kf16 = k.type == TG_TYPE_F16, vf16 = v.type == TG_TYPE_F16;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarp = blockDim.x / 32;
    for (int64_t e = threadIdx.x; e < D; e += blockDim.x) {
        float x = ld_plain(q.data + e * q.nb[0] + t * q.nb[1] + h * q.nb[2], q.type);
        qs[e] = kf16 ? __half2float(__float2half_rn(x)) : x;
    }
    __syncthreads();
    const char * mrow = has_mask ? m.data + t * m.nb[1] : NULL;
    for (int64_t c = warp; c < nc; c += nwarp) {
        const char * kr = k.data + (c0 + c) * k.nb[1] + hk * k.nb[2];
        float acc = 0.0f;
        for (int64_t e = lane; e < D; e += 32) acc += qs[e] * ld_plain(kr + e * k.nb[0], k.type);
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == 0) S[c] = acc * scale + (mrow ? ld_plain(mrow + (c0 + c) * m.nb[0], m.type) : 0.0f);
    }
    __syncthreads();
    float mx = -INFINITY;
    int nan = 0;
    for (int64_t c = threadIdx.x; c < nc; c += blockDim.x) { nan |= S[c] != S[c]; mx = fmaxf(mx, S[c]); }
    mx = block_max(mx);
    nan = block_sum(nan);
    float * out = part + ((t * q.ne[2] + h) * nsplit + sp) * (Dv + 3);
    if (nan || mx == -INFINITY) {   // nothing from this run (or NaN: the token's output is NaN)
        if (threadIdx.x == 0) { out[0] = -INFINITY; out[1] = 0.0f; out[2] = nan ? 1.0f : 0.0f; }
        for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) out[3 + e] = 0.0f;
        return;
    }
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < nc; c += blockDim.x) {
        float p = expf(S[c] - mx);
        sum += p;
        S[c] = vf16 ? __half2float(__float2half_rn(p)) : p;
    }
    sum = block_sum(sum);
    for (int64_t e = warp; e < Dv; e += nwarp) {   // a warp per value dimension, lanes over cells
        const char * vr = v.data + e * v.nb[1] + hk * v.nb[2] + c0 * v.nb[0];
        float acc = 0.0f;
        for (int64_t c = lane; c < nc; c += 32) acc += S[c] * ld_plain(vr + c * v.nb[0], v.type);
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == 0) out[3 + e] = acc;
    }
    if (threadIdx.x == 0) { out[0] = mx; out[1] = sum; out[2] = 0.0f; }
}

static __global__ void k_fa_merge(tg_cu_t d, const float * part, int nsplit, int64_t H, int64_t Dv) {
    const int64_t h = blockIdx.x, t = blockIdx.y;
    const float * p = part + (t * H + h) * nsplit * (Dv + 3);
    float M = -INFINITY;
    bool nan = false;
    for (int s = 0; s < nsplit; s++) { M = fmaxf(M, p[s * (Dv + 3)]); nan |= p[s * (Dv + 3) + 2] != 0.0f; }
    float L = 0.0f;
    for (int s = 0; s < nsplit; s++) {
        const float Ms = p[s * (Dv + 3)];
        if (Ms != -INFINITY) L += p[s * (Dv + 3) + 1] * expf(Ms - M);
    }
    for (int64_t e = threadIdx.x; e < Dv; e += blockDim.x) {
        float o = 0.0f;
        for (int s = 0; s < nsplit; s++) {
            const float Ms = p[s * (Dv + 3)];
            if (Ms != -INFINITY) o += p[s * (Dv + 3) + 3 + e] * expf(Ms - M);
        }
        *(float *) (d.data + e * d.nb[0] + h * d.nb[1] + t * d.nb[2]) = nan ? NAN : L == 0.0f ? 0.0f : o / L;
    }
}

extern "C" int64_t tg_cu_flash_attn_scratch(tg_cu_t q, tg_cu_t k, tg_cu_t v) {
    if (q.ne[1] > TG_CU_FA_SPLIT_MAX_T || q.ne[0] > FD_MAX_D) return 0;
    const int64_t nsplit = (k.ne[1] + FD_CELLS - 1) / FD_CELLS;
    return q.ne[1] * q.ne[2] * nsplit * (v.ne[1] + 3) * (int64_t) sizeof(float);
}

extern "C" void tg_cu_flash_attn(tg_cu_stream s, float scale, tg_cu_t dst, tg_cu_t q, tg_cu_t k, tg_cu_t v, const tg_cu_t * mask,
                                 float * scratch) {
    if (scratch && tg_cu_flash_attn_scratch(q, k, v) > 0) {
        const int nsplit = (int) ((k.ne[1] + FD_CELLS - 1) / FD_CELLS);
        k_fa_split<<<dim3((unsigned) nsplit, (unsigned) q.ne[2], (unsigned) q.ne[1]), 128, 0, s>>>(
            scale, q, k, v, mask ? *mask : q, mask != NULL, scratch, nsplit);
        k_fa_merge<<<dim3((unsigned) q.ne[2], (unsigned) q.ne[1]), 128, 0, s>>>(dst, scratch, nsplit, q.ne[2], v.ne[1]);
        return;
    }
    if (q.ne[0] <= FT_D && v.ne[1] <= FT_D) {
        dim3 grid((unsigned) ((q.ne[1] + FT_Q - 1) / FT_Q), (unsigned) q.ne[2]);
        k_flash_attn_tiled<<<grid, FT_THREADS, 0, s>>>(scale, dst, q, k, v, mask ? *mask : q, mask != NULL);
        return;
    }
    dim3 grid((unsigned) q.ne[1], (unsigned) q.ne[2]);
    k_flash_attn<<<grid, FA_THREADS, 0, s>>>(scale, dst, q, k, v, mask ? *mask : q, mask != NULL);
}

// ---- quantizing copies, whole-block copies, SET_ROWS, SET / ACC, cross entropy ---------------------

// Q8_0 and Q4_0 of 32 floats, as the CPU's tg_quantize_row_q8_0 / _q4_0
// (engine/core/types.c): the same scale, rounding and byte for each block.
static __device__ void quantize_block(int type, const float * x, uint8_t * out) {
    if (type == TG_TYPE_Q8_0) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        *(__half *) out = __float2half_rn(d);
        for (int j = 0; j < 32; j++) {
            const float v = x[j] * id;
            out[2 + j] = v == v ? (uint8_t) tg_q8_low_byte(tg_round_half_even(v)) : 0;
        }
    } else {   // Q4_0
        float amax = 0.0f, mx = 0.0f;
        for (int j = 0; j < 32; j++) if (amax < fabsf(x[j])) { amax = fabsf(x[j]); mx = x[j]; }
        const float d = mx / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        *(__half *) out = __float2half_rn(d);
        for (int j = 0; j < 16; j++) out[2 + j] = (uint8_t) (tg_q4_nibble(x[j] * id) | (tg_q4_nibble(x[j + 16] * id) << 4));
    }
}

extern "C" bool tg_cu_type_quantizable(int type) { return type == TG_TYPE_Q8_0 || type == TG_TYPE_Q4_0; }

// dst (Q8_0 / Q4_0, rows of blocks) = a's elements in logical order: one
// thread per destination block.
static __global__ void k_quantize(tg_cu_t d, tg_cu_t a) {
    const int64_t nblk = d.ne[0] / 32, n = nblk * nrows(d);
    GRID_STRIDE(i, n) {
        const int64_t r = i / nblk, b = i % nblk;
        float x[32];
        for (int j = 0; j < 32; j++) {
            int64_t c[4];
            unravel(r * d.ne[0] + b * 32 + j, a, c);
            x[j] = ld_plain(at(a, c[0], c[1], c[2], c[3]), a.type);
        }
        quantize_block(d.type, x, (uint8_t *) row_at(d, r) + b * d.nb[0]);
    }
}

// Same quantized type and row length: blocks copied as bytes (CONT / DUP of
// a permuted or viewed quantized tensor), one thread per block.
static __global__ void k_copy_blocks(tg_cu_t d, tg_cu_t a, int64_t bytes) {
    const int64_t nblk = d.ne[0] / 32, n = nblk * nrows(d);
    (void) bytes;
    GRID_STRIDE(i, n) {
        const int64_t r = i / nblk, b = i % nblk;
        const uint8_t * src = (const uint8_t *) row_at(a, r) + b * a.nb[0];
        uint8_t * dst = (uint8_t *) row_at(d, r) + b * d.nb[0];
        for (int64_t k = 0; k < d.nb[0]; k++) dst[k] = src[k];
    }
}

extern "C" void tg_cu_copy_quant(tg_cu_stream s, tg_cu_t dst, tg_cu_t a) {
    const int64_t n = dst.ne[0] / 32 * nrows(dst);
    if (dst.type == a.type) k_copy_blocks<<<blocks_for(n), TPB, 0, s>>>(dst, a, dst.nb[0]);
    else k_quantize<<<blocks_for(n), TPB, 0, s>>>(dst, a);
}

// SET_ROWS: row ids[i1, i2 % x, i3 % y] of dst = row (i1, i2, i3) of b,
// converted (Q8_0 / Q4_0 dst: quantized per block). One thread per element
// (per block for quantized dst).
static __global__ void k_set_rows(tg_cu_t d, tg_cu_t b, tg_cu_t ids, int * err, int tag) {
    const bool q = d.type == TG_TYPE_Q8_0 || d.type == TG_TYPE_Q4_0;
    const int64_t per = q ? b.ne[0] / 32 : b.ne[0], n = per * nrows(b);
    GRID_STRIDE(i, n) {
        const int64_t r = i / per, e = i % per;
        const int64_t i1 = r % b.ne[1], i2 = (r / b.ne[1]) % b.ne[2], i3 = r / (b.ne[1] * b.ne[2]);
        const char * ip = ids.data + i1 * ids.nb[0] + (i2 % ids.ne[1]) * ids.nb[1] + (i3 % ids.ne[2]) * ids.nb[2];
        const int64_t id = ids.type == TG_TYPE_I64 ? *(const int64_t *) ip : (int64_t) *(const int32_t *) ip;
        if (id < 0 || id >= d.ne[1]) { atomicCAS(err, 0, tag); continue; }
        const char * src = b.data + i1 * b.nb[1] + i2 * b.nb[2] + i3 * b.nb[3];
        char * drow = d.data + id * d.nb[1] + (i2 % d.ne[2]) * d.nb[2] + (i3 % d.ne[3]) * d.nb[3];
        if (q) {
            float x[32];
            for (int j = 0; j < 32; j++) x[j] = ld_plain(src + (e * 32 + j) * b.nb[0], b.type);
            quantize_block(d.type, x, (uint8_t *) drow + e * d.nb[0]);
        } else {
            st_plain(drow + e * d.nb[0], d.type, ld_plain(src + e * b.nb[0], b.type));
        }
    }
}

extern "C" void tg_cu_set_rows(tg_cu_stream s, tg_cu_t dst, tg_cu_t b, tg_cu_t ids, int * err, int tag) {
    const bool q = dst.type == TG_TYPE_Q8_0 || dst.type == TG_TYPE_Q4_0;
    k_set_rows<<<blocks_for((q ? b.ne[0] / 32 : b.ne[0]) * nrows(b)), TPB, 0, s>>>(dst, b, ids, err, tag);
}

// SET (add false) / ACC (add true) of b into the view of dst at byte offset
// off with strides nb1..nb3 (dst already holds a's values).
static __global__ void k_set_acc(bool add, int64_t off, int64_t nb1, int64_t nb2, int64_t nb3, tg_cu_t d, tg_cu_t b) {
    const int64_t n = nel(b);
    GRID_STRIDE(i, n) {
        int64_t c[4];
        unravel(i, b, c);
        float * y = (float *) (d.data + off + c[0] * 4 + c[1] * nb1 + c[2] * nb2 + c[3] * nb3);
        const float x = ld_plain(at(b, c[0], c[1], c[2], c[3]), b.type);
        *y = add ? *y + x : x;
    }
}

extern "C" void tg_cu_set_acc(tg_cu_stream s, bool add, int64_t off, int64_t nb1, int64_t nb2, int64_t nb3, tg_cu_t dst, tg_cu_t b) {
    k_set_acc<<<blocks_for(nel(b)), TPB, 0, s>>>(add, off, nb1, nb2, nb3, dst, b);
}

// CROSS_ENTROPY_LOSS: dst[0] = mean over rows of -sum_i t_i (x_i - logsumexp(x)).
static __global__ void k_cross_entropy(tg_cu_t d, tg_cu_t a, tg_cu_t b) {
    const int64_t n = a.ne[0], nr = nrows(a);
    double total = 0;
    for (int64_t r = 0; r < nr; r++) {
        const char * x = row_at(a, r), * t = row_at(b, r);
        float mx = -INFINITY;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, ld_plain(x + i * a.nb[0], a.type));
        mx = block_max(mx);
        double es = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) es += expf(ld_plain(x + i * a.nb[0], a.type) - mx);
        es = block_sum(es);
        const double lse = log(es) + mx;
        double loss = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            const float ti = ld_plain(t + i * b.nb[0], b.type);
            if (ti != 0.0f) loss -= (double) ti * ((double) ld_plain(x + i * a.nb[0], a.type) - lse);
        }
        loss = block_sum(loss);
        total += loss;
    }
    if (threadIdx.x == 0) *(float *) d.data = (float) (total / (double) nr);
}

extern "C" void tg_cu_cross_entropy(tg_cu_stream s, tg_cu_t dst, tg_cu_t a, tg_cu_t b) {
    k_cross_entropy<<<1, TPB, 0, s>>>(dst, a, b);
}

// Copies out of a quantized tensor (rows of whole blocks): one thread per
// 32-element sub-block of a, decoded, then stored at the same logical
// indices of dst (converted, or quantized again when dst is Q8_0 / Q4_0:
// with both row lengths multiples of 32 a sub-block is one dst block).
template <int T> static __global__ void k_copy_from_quant(tg_cu_t d, tg_cu_t a) {
    const int64_t nsub = a.ne[0] / 32, n = nsub * nrows(a);
    const bool q = d.type == TG_TYPE_Q8_0 || d.type == TG_TYPE_Q4_0;
    GRID_STRIDE(i, n) {
        const int64_t r = i / nsub, sb = i % nsub, lin = r * a.ne[0] + sb * 32;
        float v[32];
        deq32<T>((const uint8_t *) row_at(a, r), sb, v);
        if (q) {
            quantize_block(d.type, v, (uint8_t *) row_at(d, lin / d.ne[0]) + (lin % d.ne[0]) / 32 * d.nb[0]);
            continue;
        }
        for (int j = 0; j < 32; j++) {
            int64_t c[4];
            unravel(lin + j, d, c);
            st_plain(at(d, c[0], c[1], c[2], c[3]), d.type, v[j]);
        }
    }
}

extern "C" void tg_cu_copy_from_quant(tg_cu_stream s, tg_cu_t dst, tg_cu_t a) {
    const int64_t n = a.ne[0] / 32 * nrows(a);
    switch (a.type) {
#define CASE(T) case TG_TYPE_##T: k_copy_from_quant<TG_TYPE_##T><<<blocks_for(n), TPB, 0, s>>>(dst, a); break;
        DECODABLE(CASE)
#undef CASE
        default: break;
    }
}
