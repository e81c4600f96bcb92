// kernels-decode.cu - tensors of any decodable type into dense F32
// (tg_cu_to_f32) and GET_ROWS out of them (tg_cu_get_rows).
#include "cuda/kernels-decode.cuh"

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
