// kernels.cu - the CUDA backend's kernels: element-wise maps with any strides
// and broadcasting, copies with type conversion, reductions, norms, softmax,
// rope, GLU, the causal mask, fused attention, quantizing and whole-block
// copies, SET_ROWS, SET / ACC and cross entropy (the quantized types' decoding
// and the kernels built on it: kernels-decode.cu, kernels-mmv.cu; what they
// share: kernels-common.cuh). Each kernel computes the function of the CPU op
// of the same name (engine/cpu/ops-*.c, documented there); sums the CPU keeps
// in double are kept in double here too.
#include "cuda/kernels-common.cuh"

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
