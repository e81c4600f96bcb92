// kernels-mmv.cu - matrix-vector products that read the weights in their
// stored type (generation, tg_cu_mmv), and copies out of quantized tensors
// (tg_cu_copy_from_quant).
#include "cuda/kernels-decode.cuh"

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
        // not unrolled: 32 copies of the index arithmetic, for each of the 15
        // types, took ptxas ~70 s of the build (a copy, not a hot path)
#pragma unroll 1
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
