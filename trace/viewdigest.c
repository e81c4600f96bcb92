// viewdigest.c - the element-set digest of binary16 views (viewdigest.h,
// trace/FORMAT.md "Element-set digest"): exact sums over elements, kept per
// view and updated by the elements written since.
#include "viewdigest.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// ---- the digest of a set of elements ---------------------------------------------------
// Element (i0, i1, i2, i3) with bits u (binary16) adds:
//   hash   fmix64(key + (2u + 1) * C) (mod 2^64), key = i0 K0 + i1 K1 + i2 K2 + i3 K3
//   sums   v = x * 2^24 (an integer for every finite binary16) and v^2, if finite
//   sketch s * v to bucket 16 g + (l + r) % 16, from h = mix(bkey), bkey = (i0 / 16) K0 + i1 K1 +
//          i2 K2 + i3 K3 + B, l = i0 % 16 (g, r, s as scheme 1 takes them from its h)
// and counts (elements, NaN, +-infinity, zeros). All integer: any order gives the same sums.

static const uint64_t K0 = 0x9E3779B97F4A7C15ull, K1 = 0xC2B2AE3D27D4EB4Full, K2 = 0x165667B19E3779F9ull,
                      K3 = 0xD6E8FEB86659FD93ull, KB = 0x5851F42D4C957F2Dull, KC = 0x94D049BB133111EBull;

static inline uint64_t fmix64(uint64_t z) {
    z ^= z >> 33; z *= 0xFF51AFD7ED558CCDull;
    z ^= z >> 33; z *= 0xC4CEB9FE1A85EC53ull;
    return z ^ (z >> 33);
}

static inline uint64_t sk_mix(uint64_t z) {   // splitmix64's finalizer (scheme 1's mix)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct vd_acc {
    uint64_t hsum;
    __int128 sum, sumsq;                // of v and v^2, finite elements
    __int128 sk[TG_TRACE_SKETCH_N];
    int64_t  vmin, vmax;                // extremes of v over finite elements
    uint64_t cmin, cmax;                // elements holding them
    uint64_t n, n_nan, n_pinf, n_ninf, n_zero;
    bool     ext_ok;                    // false: an element holding an extreme was taken out
};

static void acc_init(struct vd_acc * a) {
    memset(a, 0, sizeof(*a));
    a->vmin = INT64_MAX;
    a->vmax = INT64_MIN;
    a->ext_ok = true;
}

// One element in (sgn 1) or out (sgn -1); h: the mix of its block's key (group, rotation, signs).
static inline void acc_elem(struct vd_acc * a, uint64_t key, uint64_t h, unsigned lane, uint16_t u, int sgn) {
    const uint64_t t = fmix64(key + (2 * (uint64_t) u + 1) * KC);
    const uint64_t one = (uint64_t) (int64_t) sgn;
    a->hsum += sgn > 0 ? t : -t;
    a->n += one;
    const unsigned e = (u >> 10) & 31, m = u & 1023;
    if (e == 31) {
        if (m) a->n_nan += one;
        else if (u & 0x8000) a->n_ninf += one;
        else a->n_pinf += one;
        return;
    }
    int64_t v = e ? (int64_t) (1024 + m) << (e - 1) : (int64_t) m;
    if (u & 0x8000) v = -v;
    if (v == 0) a->n_zero += one;
    const __int128 sv = sgn > 0 ? (__int128) v : -(__int128) v;
    a->sum += sv;
    a->sumsq += sv * v;
    const unsigned g = (unsigned) (h & 3), r = (unsigned) ((h >> 2) & 15);
    const __int128 term = (h >> (32 + lane)) & 1 ? -sv : sv;
    a->sk[16 * g + (lane + r) % 16] += term;
    if (sgn > 0) {
        if (v < a->vmin) { a->vmin = v; a->cmin = 1; } else if (v == a->vmin) a->cmin++;
        if (v > a->vmax) { a->vmax = v; a->cmax = 1; } else if (v == a->vmax) a->cmax++;
    } else {
        if (v == a->vmin && --a->cmin == 0) a->ext_ok = false;
        if (v == a->vmax && --a->cmax == 0) a->ext_ok = false;
    }
}

// Elements [lo0, hi0) of one row (dim 0 stride nb0; kr: the row's part of
// the key), one at a time.
static void run_scalar(struct vd_acc * a, const uint8_t * row, size_t nb0, int64_t lo0, int64_t hi0, uint64_t kr,
                       int sgn) {
    uint64_t blk = UINT64_MAX, h = 0;
    for (int64_t i0 = lo0; i0 < hi0; i0++) {
        if ((uint64_t) i0 / 16 != blk) { blk = (uint64_t) i0 / 16; h = sk_mix(blk * K0 + kr + KB); }
        uint16_t u;
        memcpy(&u, row + (size_t) i0 * nb0, 2);
        acc_elem(a, (uint64_t) i0 * K0 + kr, h, (unsigned) (i0 % 16), u, sgn);
    }
}

#if defined(__x86_64__)
#include <immintrin.h>
#include "tg/cpu.h"

// AVX-512 (F, BW, DQ, VL: the engine's avx512 level): 8 elements at a time in
// 64-bit lanes, the same integer terms as acc_elem, summed in the lanes and
// added to the totals every FLUSH vectors and at the end of a box (integer
// sums: the same totals in any order). v^2 (up to 82 bits) is summed in two
// parts, A 2^32 + B. Two shapes: rows of contiguous elements, an aligned
// block of 16 at a time (its sketch fields once, its lanes rotated into the
// buckets); and columns (a V cache's new position: one element in each of
// many rows), 8 rows at a time.
#define FLUSH 2048
#define VD512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,avx")))
#define VD512_INLINE static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512dq,avx512vl,avx2,avx")))

struct acc8 {                      // a box's lane sums (kept in registers: never passed out of line)
    __m512i sum, sqa, sqb, hs;
    __m512i mn, mx, cmn, cmx;      // extremes per lane, and how many elements hold them (sgn 1)
    __m512i amin, amax;            // the totals' extremes (sgn -1: elements out equal to them)
    __m512i zc, omin, omax;        // per lane: zeros, elements out equal to amin / amax
    uint64_t out_min, out_max, zero, n, nan, pinf, ninf;
    int since, sgn;
};

VD512_INLINE void acc8_init(struct acc8 * L, const struct vd_acc * a, int sgn) {   // (sgn: a constant where inlined)
    L->sum = L->sqa = L->sqb = L->hs = L->cmn = L->cmx = _mm512_setzero_si512();
    L->zc = L->omin = L->omax = _mm512_setzero_si512();
    L->mn = _mm512_set1_epi64(INT64_MAX);
    L->mx = _mm512_set1_epi64(INT64_MIN);
    L->amin = _mm512_set1_epi64(a->vmin);
    L->amax = _mm512_set1_epi64(a->vmax);
    L->out_min = L->out_max = L->zero = L->n = L->nan = L->pinf = L->ninf = 0;
    L->since = 0;
    L->sgn = sgn;
}

VD512_INLINE __int128 hsum8(__m512i x) {
    const __m256i h = _mm256_add_epi64(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));   // (no overflow: < 2^62 a lane)
    int64_t v[4];
    _mm256_storeu_si256((__m256i *) (void *) v, h);
    return (__int128) v[0] + v[1] + v[2] + v[3];
}

// Row blocks' sketch terms (group g, buckets 0-7 and 8-15) into the totals.
VD512_INLINE void part_flush(struct vd_acc * a, __m512i part[4][2]) {
    int64_t v[16];
    for (int g = 0; g < 4; g++) {
        _mm512_storeu_si512((void *) v, part[g][0]);
        _mm512_storeu_si512((void *) (v + 8), part[g][1]);
        for (int j = 0; j < 16; j++) a->sk[16 * g + j] += v[j];
        part[g][0] = part[g][1] = _mm512_setzero_si512();
    }
}

// The lane sums into the totals (every FLUSH vectors: no lane sum can overflow).
VD512_INLINE void acc8_flush(struct vd_acc * a, struct acc8 * L) {
    a->sum += hsum8(L->sum);
    a->sumsq += hsum8(L->sqa) * ((__int128) 1 << 32) + hsum8(L->sqb);
    uint64_t hv[8];   // (wrapping: unsigned)
    _mm512_storeu_si512((void *) hv, L->hs);
    for (int j = 0; j < 8; j++) a->hsum += hv[j];
    L->sum = L->sqa = L->sqb = L->hs = _mm512_setzero_si512();
    L->since = 0;
}

// The end of a box: the sums, counts and extremes into the totals.
VD512_INLINE void acc8_done(struct vd_acc * a, struct acc8 * L) {
    acc8_flush(a, L);
    uint64_t c[8];
    _mm512_storeu_si512((void *) c, L->zc);   for (int j = 0; j < 8; j++) L->zero += c[j];
    _mm512_storeu_si512((void *) c, L->omin); for (int j = 0; j < 8; j++) L->out_min += c[j];
    _mm512_storeu_si512((void *) c, L->omax); for (int j = 0; j < 8; j++) L->out_max += c[j];
    const uint64_t o = (uint64_t) (int64_t) L->sgn;
    a->n += o * L->n; a->n_zero += o * L->zero;
    a->n_nan += o * L->nan; a->n_pinf += o * L->pinf; a->n_ninf += o * L->ninf;
    if (L->sgn > 0) {
        int64_t mn[8], mx[8], cn[8], cx[8];
        _mm512_storeu_si512((void *) mn, L->mn); _mm512_storeu_si512((void *) mx, L->mx);
        _mm512_storeu_si512((void *) cn, L->cmn); _mm512_storeu_si512((void *) cx, L->cmx);
        for (int j = 0; j < 8; j++) {
            if (!cn[j]) continue;   // no finite element went through this lane
            if (mn[j] < a->vmin) { a->vmin = mn[j]; a->cmin = (uint64_t) cn[j]; } else if (mn[j] == a->vmin) a->cmin += (uint64_t) cn[j];
            if (mx[j] > a->vmax) { a->vmax = mx[j]; a->cmax = (uint64_t) cx[j]; } else if (mx[j] == a->vmax) a->cmax += (uint64_t) cx[j];
        }
    } else {
        if (L->out_min && (a->cmin -= L->out_min) == 0) a->ext_ok = false;
        if (L->out_max && (a->cmax -= L->out_max) == 0) a->ext_ok = false;
    }
}

VD512_INLINE __m512i mix512(__m512i z, uint64_t c1, uint64_t c2, int s1, int s2, int s3) {
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, s1)), _mm512_set1_epi64((int64_t) c1));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, s2)), _mm512_set1_epi64((int64_t) c2));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, s3));
}

// Lanes `valid` of u (binary16 bits in 64-bit lanes) with keys `key`: every
// term but the sketch's; returns each lane's v (0 where not finite or not valid).
VD512_INLINE __m512i lanes8(struct acc8 * L, __m512i u, __m512i key, __mmask8 valid) {
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1), c32 = _mm512_set1_epi64(32);
    const __m512i ex = _mm512_and_si512(_mm512_srli_epi64(u, 10), _mm512_set1_epi64(31));
    const __m512i mb = _mm512_and_si512(u, _mm512_set1_epi64(1023));
    const __mmask8 e31 = _mm512_mask_cmpeq_epi64_mask(valid, ex, _mm512_set1_epi64(31)), fin = (__mmask8) (valid & ~e31);
    if (__builtin_expect(e31 != 0, 0)) {   // NaN and infinities: counted, nothing else
        const __mmask8 m0 = _mm512_cmpeq_epi64_mask(mb, zero), sgnb = _mm512_test_epi64_mask(u, _mm512_set1_epi64(0x8000));
        L->nan += (uint64_t) __builtin_popcount((unsigned) (e31 & ~m0));
        L->ninf += (uint64_t) __builtin_popcount((unsigned) (e31 & m0 & sgnb));
        L->pinf += (uint64_t) __builtin_popcount((unsigned) (e31 & m0 & ~sgnb));
    }
    const __mmask8 norm = _mm512_cmpneq_epi64_mask(ex, zero);
    const __m512i mant = _mm512_maskz_mov_epi64(fin, _mm512_mask_add_epi64(mb, norm, mb, _mm512_set1_epi64(1024)));
    const __m512i sh = _mm512_max_epi64(_mm512_sub_epi64(ex, one), zero);
    L->zc = _mm512_mask_add_epi64(L->zc, _mm512_mask_cmpeq_epi64_mask(fin, mant, zero), L->zc, one);
    __m512i v = _mm512_sllv_epi64(mant, sh);
    v = _mm512_mask_sub_epi64(v, _mm512_test_epi64_mask(u, _mm512_set1_epi64(0x8000)), zero, v);
    const __m512i q = _mm512_mul_epu32(mant, mant), s2 = _mm512_add_epi64(sh, sh);   // v^2 = q 2^s2
    const __mmask8 big = _mm512_cmpge_epu64_mask(s2, c32);
    const __m512i A = _mm512_mask_mov_epi64(_mm512_srlv_epi64(q, _mm512_sub_epi64(c32, s2)), big,
                                            _mm512_sllv_epi64(q, _mm512_sub_epi64(s2, c32)));
    const __m512i B = _mm512_and_si512(_mm512_sllv_epi64(q, s2), _mm512_set1_epi64(0xFFFFFFFFll));
    // (2u + 1) KC with 32-bit multiplies: u < 2^16
    const __m512i u2 = _mm512_add_epi64(_mm512_add_epi64(u, u), one);
    const __m512i ukc = _mm512_add_epi64(_mm512_mul_epu32(u2, _mm512_set1_epi64((int64_t) (KC & 0xFFFFFFFFu))),
                                         _mm512_slli_epi64(_mm512_mul_epu32(u2, _mm512_set1_epi64((int64_t) (KC >> 32))), 32));
    const __m512i z = mix512(_mm512_add_epi64(key, ukc), 0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 33, 33, 33);   // fmix64
    if (L->sgn > 0) {
        L->sum = _mm512_add_epi64(L->sum, v);
        L->sqa = _mm512_add_epi64(L->sqa, A);
        L->sqb = _mm512_add_epi64(L->sqb, B);
        L->hs = _mm512_mask_add_epi64(L->hs, valid, L->hs, z);
        const __mmask8 lt = _mm512_mask_cmplt_epi64_mask(fin, v, L->mn), eq = _mm512_mask_cmpeq_epi64_mask(fin, v, L->mn);
        L->mn = _mm512_mask_mov_epi64(L->mn, lt, v);
        L->cmn = _mm512_mask_mov_epi64(_mm512_mask_add_epi64(L->cmn, eq, L->cmn, one), lt, one);
        const __mmask8 gt = _mm512_mask_cmpgt_epi64_mask(fin, v, L->mx), eg = _mm512_mask_cmpeq_epi64_mask(fin, v, L->mx);
        L->mx = _mm512_mask_mov_epi64(L->mx, gt, v);
        L->cmx = _mm512_mask_mov_epi64(_mm512_mask_add_epi64(L->cmx, eg, L->cmx, one), gt, one);
    } else {
        L->sum = _mm512_sub_epi64(L->sum, v);
        L->sqa = _mm512_sub_epi64(L->sqa, A);
        L->sqb = _mm512_sub_epi64(L->sqb, B);
        L->hs = _mm512_mask_sub_epi64(L->hs, valid, L->hs, z);
        L->omin = _mm512_mask_add_epi64(L->omin, _mm512_mask_cmpeq_epi64_mask(fin, v, L->amin), L->omin, one);
        L->omax = _mm512_mask_add_epi64(L->omax, _mm512_mask_cmpeq_epi64_mask(fin, v, L->amax), L->omax, one);
    }
    return v;
}

// The box's rows, contiguous (nb[0] 2): aligned blocks of 16 in the lanes,
// the elements before and after them one by one (into the totals directly).
VD512_INLINE void rows_avx512(struct vd_acc * a, const uint8_t * base, const size_t nb[4], const int64_t lo[4],
                              const int64_t hi[4], int sgn) {
    const __m512i lane_lo = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), lane_hi = _mm512_setr_epi64(8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i klo = _mm512_mullo_epi64(lane_lo, _mm512_set1_epi64((int64_t) K0));
    const __m512i khi = _mm512_mullo_epi64(lane_hi, _mm512_set1_epi64((int64_t) K0));
    const __m512i zero = _mm512_setzero_si512(), m15 = _mm512_set1_epi64(15);
    struct acc8 L;
    acc8_init(&L, a, sgn);
    __m512i part[4][2];   // (apart from L: indexed by the block's group, it lives in memory)
    for (int g = 0; g < 4; g++) part[g][0] = part[g][1] = zero;
    const int64_t b0 = (lo[0] + 15) / 16, b1 = hi[0] / 16;
    for (int64_t i3 = lo[3]; i3 < hi[3]; i3++)
    for (int64_t i2 = lo[2]; i2 < hi[2]; i2++)
    for (int64_t i1 = lo[1]; i1 < hi[1]; i1++) {
        const uint8_t * row = base + (size_t) i1 * nb[1] + (size_t) i2 * nb[2] + (size_t) i3 * nb[3];
        const uint64_t kr = (uint64_t) i1 * K1 + (uint64_t) i2 * K2 + (uint64_t) i3 * K3;
        run_scalar(a, row, 2, lo[0], 16 * b0, kr, sgn);
        run_scalar(a, row, 2, 16 * b1, hi[0], kr, sgn);
        for (int64_t b = b0; b < b1; b++) {
            const uint64_t h = sk_mix((uint64_t) b * K0 + kr + KB);
            const __m512i kb = _mm512_set1_epi64((int64_t) ((uint64_t) (16 * b) * K0 + kr));
            const __m256i raw = _mm256_loadu_si256((const __m256i *) (const void *) (row + 32 * b));
            __m512i v0 = lanes8(&L, _mm512_cvtepu16_epi64(_mm256_castsi256_si128(raw)), _mm512_add_epi64(kb, klo), 0xFF);
            __m512i v1 = lanes8(&L, _mm512_cvtepu16_epi64(_mm256_extracti128_si256(raw, 1)), _mm512_add_epi64(kb, khi), 0xFF);
            L.n += 16;
            // the sketch: lane l's signed term to bucket 16 g + (l + r) % 16 (the lanes rotated by r)
            const uint32_t sg = (uint32_t) (h >> 32);
            const unsigned g = (unsigned) (h & 3);
            const __m512i r = _mm512_set1_epi64((int64_t) ((h >> 2) & 15));
            v0 = _mm512_mask_sub_epi64(v0, (__mmask8) sg, zero, v0);
            v1 = _mm512_mask_sub_epi64(v1, (__mmask8) (sg >> 8), zero, v1);
            const __m512i ilo = _mm512_and_si512(_mm512_sub_epi64(lane_lo, r), m15), ihi = _mm512_and_si512(_mm512_sub_epi64(lane_hi, r), m15);
            const __m512i t0 = _mm512_permutex2var_epi64(v0, ilo, v1), t1 = _mm512_permutex2var_epi64(v0, ihi, v1);
            if (sgn > 0) {
                part[g][0] = _mm512_add_epi64(part[g][0], t0);
                part[g][1] = _mm512_add_epi64(part[g][1], t1);
            } else {
                part[g][0] = _mm512_sub_epi64(part[g][0], t0);
                part[g][1] = _mm512_sub_epi64(part[g][1], t1);
            }
            if (++L.since >= FLUSH) { acc8_flush(a, &L); part_flush(a, part); }
        }
    }
    part_flush(a, part);
    acc8_done(a, &L);
}

// The box's columns: element i0 of 8 rows (dim 1) at a time (read one by
// one: a gather is no faster here); the sketch terms added one by one.
VD512_INLINE void columns_avx512(struct vd_acc * a, const uint8_t * base, const size_t nb[4], const int64_t lo[4],
                                 const int64_t hi[4], int sgn) {
    const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i k1 = _mm512_mullo_epi64(lane, _mm512_set1_epi64((int64_t) K1));
    struct acc8 L;
    acc8_init(&L, a, sgn);
    int64_t skp[TG_TRACE_SKETCH_N + 1] = { 0 };   // the sketch terms (bucket 64: lanes not valid)
    const __m512i m15 = _mm512_set1_epi64(15), m3 = _mm512_set1_epi64(3);
    for (int64_t i3 = lo[3]; i3 < hi[3]; i3++)
    for (int64_t i2 = lo[2]; i2 < hi[2]; i2++)
    for (int64_t i0 = lo[0]; i0 < hi[0]; i0++) {
        const unsigned l = (unsigned) (i0 % 16);
        const uint64_t kr = (uint64_t) i2 * K2 + (uint64_t) i3 * K3;
        const uint8_t * col = base + (size_t) i0 * nb[0] + (size_t) i2 * nb[2] + (size_t) i3 * nb[3];
        for (int64_t i1 = lo[1]; i1 < hi[1]; i1 += 8) {
            const __mmask8 valid = (__mmask8) (hi[1] - i1 >= 8 ? 0xFF : (1u << (hi[1] - i1)) - 1);
            uint16_t uu[8] = { 0 };
            const uint8_t * p = col + (size_t) i1 * nb[1];
            for (int j = 0; j < 8 && i1 + j < hi[1]; j++) memcpy(&uu[j], p + (size_t) j * nb[1], 2);
            const __m512i u = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *) (const void *) uu));
            const uint64_t kb = (uint64_t) i1 * K1 + kr;
            const __m512i v = lanes8(&L, u, _mm512_add_epi64(_mm512_set1_epi64((int64_t) ((uint64_t) i0 * K0 + kb)), k1), valid);
            L.n += (uint64_t) (hi[1] - i1 >= 8 ? 8 : hi[1] - i1);
            const __m512i bkey = _mm512_add_epi64(_mm512_set1_epi64((int64_t) ((uint64_t) (i0 / 16) * K0 + kb + KB)), k1);
            const __m512i h = mix512(bkey, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull, 30, 27, 31);   // sk_mix
            // lane j's term s v to bucket 16 g + (l + r) % 16 of its own h
            const __mmask8 neg = _mm512_test_epi64_mask(h, _mm512_set1_epi64((int64_t) (1ull << (32 + l))));
            __m512i t = _mm512_mask_sub_epi64(v, neg, _mm512_setzero_si512(), v);
            if (sgn < 0) t = _mm512_sub_epi64(_mm512_setzero_si512(), t);
            __m512i idx = _mm512_add_epi64(_mm512_slli_epi64(_mm512_and_si512(h, m3), 4),
                                           _mm512_and_si512(_mm512_add_epi64(_mm512_srli_epi64(h, 2), _mm512_set1_epi64(l)), m15));
            idx = _mm512_mask_mov_epi64(_mm512_set1_epi64(TG_TRACE_SKETCH_N), valid, idx);
            int64_t iv[8], tv[8];
            _mm512_storeu_si512((void *) iv, idx);
            _mm512_storeu_si512((void *) tv, t);
            for (int j = 0; j < 8; j++) skp[iv[j]] += tv[j];
            if (++L.since >= FLUSH) {
                acc8_flush(a, &L);
                for (int k = 0; k < TG_TRACE_SKETCH_N; k++) { a->sk[k] += skp[k]; skp[k] = 0; }
            }
        }
    }
    for (int k = 0; k < TG_TRACE_SKETCH_N; k++) a->sk[k] += skp[k];
    acc8_done(a, &L);
}

static int vd_force_scalar = -1;   // tests: 1 scalar, 0 the engine's level
void tg_trace_vd_force_scalar(bool on) { vd_force_scalar = on; }
static bool use_avx512(void) {
    if (vd_force_scalar == 1) return false;
    return !strncmp(tg_cpu_simd_name(), "avx512", 6);
}

VD512 static bool box_avx512(struct vd_acc * a, const uint8_t * base, const size_t nb[4], const int64_t lo[4],
                             const int64_t hi[4], int sgn) {
    // (each sign its own copy: the constant folds the branches on it)
    if (nb[0] == 2 && hi[0] - lo[0] >= 32) {
        if (sgn > 0) rows_avx512(a, base, nb, lo, hi, 1); else rows_avx512(a, base, nb, lo, hi, -1);
        return true;
    }
    if (hi[1] - lo[1] >= 8) {
        if (sgn > 0) columns_avx512(a, base, nb, lo, hi, 1); else columns_avx512(a, base, nb, lo, hi, -1);
        return true;
    }
    return false;
}
#else
void tg_trace_vd_force_scalar(bool on) { (void) on; }
#endif

// The elements of box [lo, hi) (coordinates) of the view at base with strides nb.
static void acc_box(struct vd_acc * a, const uint8_t * base, const size_t nb[4], const int64_t lo[4],
                    const int64_t hi[4], int sgn) {
    for (int d = 0; d < 4; d++) if (lo[d] >= hi[d]) return;
#if defined(__x86_64__)
    if (use_avx512() && box_avx512(a, base, nb, lo, hi, sgn)) return;
#endif
    for (int64_t i3 = lo[3]; i3 < hi[3]; i3++)
    for (int64_t i2 = lo[2]; i2 < hi[2]; i2++)
    for (int64_t i1 = lo[1]; i1 < hi[1]; i1++) {
        const uint8_t * row = base + (size_t) i1 * nb[1] + (size_t) i2 * nb[2] + (size_t) i3 * nb[3];
        const uint64_t kr = (uint64_t) i1 * K1 + (uint64_t) i2 * K2 + (uint64_t) i3 * K3;
        run_scalar(a, row, nb[0], lo[0], hi[0], kr, sgn);
    }
}

static void acc_out(const struct vd_acc * a, int type, const int64_t ne[4], uint64_t * hash,
                    struct tg_trace_summary * s, double * sketch) {
    if (hash) {
        const uint64_t shape = fmix64((uint64_t) ne[0] * K0 + (uint64_t) ne[1] * K1 + (uint64_t) ne[2] * K2 +
                                      (uint64_t) ne[3] * K3 + (uint64_t) type);
        *hash = fmix64(a->hsum ^ shape);
    }
    if (s) {
        const uint64_t n_inf = a->n_pinf + a->n_ninf, fin = a->n - a->n_nan - n_inf;
        memset(s, 0, sizeof(*s));
        s->n_elem = a->n; s->n_nan = a->n_nan; s->n_inf = n_inf; s->n_zero = a->n_zero;
        if (a->n == a->n_nan) { s->min = s->max = NAN; }
        else {
            s->min = a->n_ninf ? -INFINITY : fin ? ldexp((double) a->vmin, -24) : INFINITY;
            s->max = a->n_pinf ? INFINITY : fin ? ldexp((double) a->vmax, -24) : -INFINITY;
        }
        s->mean = fin ? ldexp((double) a->sum, -24) / (double) fin : 0.0;
        s->rms = fin ? sqrt(ldexp((double) a->sumsq, -48) / (double) fin) : 0.0;
    }
    if (sketch) for (int k = 0; k < TG_TRACE_SKETCH_N; k++) sketch[k] = ldexp((double) a->sk[k], -24);
}

// Views the digest covers: binary16, element strides that do not overlap
// (sorted by stride, each at least the extent of the one before).
static bool layout_ok(int type, const int64_t ne[4], const size_t nb[4]) {
    if (type != TG_TYPE_F16) return false;
    int d[4] = { 0, 1, 2, 3 };
    for (int a = 1; a < 4; a++)
        for (int b = a; b > 0 && nb[d[b]] < nb[d[b - 1]]; b--) { int t = d[b]; d[b] = d[b - 1]; d[b - 1] = t; }
    size_t span = 2;
    for (int k = 0; k < 4; k++) {
        if (ne[d[k]] < 0) return false;
        if (ne[d[k]] <= 1) continue;
        if (nb[d[k]] < span) return false;
        span = nb[d[k]] * (size_t) ne[d[k]];
    }
    return true;
}

bool tg_trace_set_digest(const void * data, int type, const int64_t ne[4], const size_t nb[4], uint64_t * hash,
                         struct tg_trace_summary * s, double * sketch) {
    if (!data || !ne || !nb || !layout_ok(type, ne, nb)) return false;
    struct vd_acc * a = malloc(sizeof(*a));
    if (!a) return false;
    acc_init(a);
    const int64_t lo[4] = { 0, 0, 0, 0 };
    acc_box(a, data, nb, lo, ne, 1);
    acc_out(a, type, ne, hash, s, sketch);
    free(a);
    return true;
}

// ---- the memo ------------------------------------------------------------------------

#define VD_MAX     64      // views memoized (least recently used out)
#define VD_DIRTY   4       // boxes written since a view's last digest
#define VD_MIN_EL  1024    // smaller views (a KV row about to be stored) are hashed like other nodes

struct vd_entry {
    uint64_t        buf_id;
    const uint8_t * base;
    int64_t         ne[4];
    size_t          nb[4];
    int             order[4];   // dims of more than one element, by stride, largest first
    int             n_order;
    uintptr_t       lo, hi;     // the bytes the elements lie in
    struct vd_acc   acc;        // over the elements in [0, ne), with their bytes as last seen
    int64_t         dlo[VD_DIRTY][4], dhi[VD_DIRTY][4];   // taken out before a write: to add back
    const void *    dwriter[VD_DIRTY];   // the node about to write it (taken out ahead), NULL once it ran
    int             n_dirty;
    bool            stale;      // start from scratch
    bool            used;
    uint64_t        tick;
};

#define VD_RAN     64      // writers that ran, waiting for the lock's next holder (tg_trace_vd_written)

struct vd_memo {
    pthread_mutex_t mu;
    const void *    ran[VD_RAN];   // (atomic) non-NULL: a writer that ran, its marks still to clear
    unsigned        n_ran;         // (atomic) how many may be set
    struct vd_entry e[VD_MAX];
    uint64_t        tick;
    uintptr_t       lo, hi;     // all entries' bytes lie in [lo, hi)
    struct vd_stats st;
};

struct vd_memo * tg_trace_vd_new(void) {
    struct vd_memo * m = calloc(1, sizeof(struct vd_memo));
    if (m && pthread_mutex_init(&m->mu, NULL) != 0) { free(m); return NULL; }
    return m;
}
void tg_trace_vd_free(struct vd_memo * m) {
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}
// The writer's marks cleared: the views it wrote into may be digested from
// the memo again.
static void vd_ran(struct vd_memo * m, const void * writer) {
    for (int i = 0; i < VD_MAX; i++)
        for (int d = 0; d < m->e[i].n_dirty; d++)
            if (m->e[i].dwriter[d] == writer) m->e[i].dwriter[d] = NULL;
}

// Takes the lock and applies the writers that ran meanwhile (in the order
// their nodes ran: before anything the lock's holder does after).
static void vd_lock(struct vd_memo * m) {
    pthread_mutex_lock(&m->mu);
    if (!__atomic_load_n(&m->n_ran, __ATOMIC_SEQ_CST)) return;
    for (int k = 0; k < VD_RAN; k++) {
        const void * w = __atomic_exchange_n(&m->ran[k], NULL, __ATOMIC_SEQ_CST);
        if (w) { vd_ran(m, w); __atomic_fetch_sub(&m->n_ran, 1, __ATOMIC_SEQ_CST); }
    }
}

void tg_trace_vd_stats(struct vd_memo * m, struct vd_stats * out) {
    if (!out) return;
    memset(out, 0, sizeof(*out));
    if (!m) return;
    vd_lock(m);
    *out = m->st;
    pthread_mutex_unlock(&m->mu);
}
bool tg_trace_vd_covers(int type, const int64_t ne[4], const size_t nb[4]) {
    return ne && nb && tg_trace_vd_memoized(ne) && layout_ok(type, ne, nb);
}
bool tg_trace_vd_memoized(const int64_t ne[4]) { return ne[0] * ne[1] * ne[2] * ne[3] >= VD_MIN_EL; }

static void entry_geometry(struct vd_entry * e) {
    e->n_order = 0;
    size_t last = 0;
    for (int k = 0; k < 4; k++) if (e->ne[k] > 1) e->order[e->n_order++] = k;
    for (int a = 1; a < e->n_order; a++)   // largest stride first
        for (int b = a; b > 0 && e->nb[e->order[b]] > e->nb[e->order[b - 1]]; b--) {
            int t = e->order[b]; e->order[b] = e->order[b - 1]; e->order[b - 1] = t;
        }
    for (int k = 0; k < 4; k++) if (e->ne[k] > 0) last += (size_t) (e->ne[k] - 1) * e->nb[k];
    bool empty = e->ne[0] <= 0 || e->ne[1] <= 0 || e->ne[2] <= 0 || e->ne[3] <= 0;
    e->lo = (uintptr_t) e->base;
    e->hi = empty ? e->lo : (uintptr_t) e->base + last + 2;
}

static void memo_span(struct vd_memo * m) {
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < VD_MAX; i++) {
        const struct vd_entry * e = &m->e[i];
        if (!e->used || e->stale) continue;
        if (e->lo < lo) lo = e->lo;
        if (e->hi > hi) hi = e->hi;
    }
    __atomic_store_n(&m->lo, lo, __ATOMIC_RELAXED);   // (read without the lock: tg_trace_vd_before_write)
    __atomic_store_n(&m->hi, hi, __ATOMIC_RELAXED);
}

static void entry_scratch(struct vd_memo * m, struct vd_entry * e) {
    acc_init(&e->acc);
    const int64_t lo[4] = { 0, 0, 0, 0 };
    acc_box(&e->acc, e->base, e->nb, lo, e->ne, 1);
    e->n_dirty = 0;
    e->stale = false;
    m->st.n_scratch++;
}

static uintptr_t span_bytes(int type, const int64_t ne[4], const size_t nb[4]) {
    uintptr_t n = tg_type_size((enum tg_type) type);
    for (int k = 0; k < 4; k++) if (ne[k] > 0) n += (uintptr_t) (ne[k] - 1) * nb[k]; else return 0;
    return n;
}

static bool dirty_written(const struct vd_entry * e) {
    for (int d = 0; d < e->n_dirty; d++) if (e->dwriter[d]) return false;
    return true;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static bool vd_digest(struct vd_memo * m, uint64_t buf_id, const void * data, int type, const int64_t ne[4],
                      const size_t nb[4], uint64_t * hash, struct tg_trace_summary * s, double * sketch) {
    // the view's entry: the same memory, strides and extents but for at most one dim
    struct vd_entry * e = NULL, * lru = &m->e[0];
    int g = -1;
    for (int i = 0; i < VD_MAX && !e; i++) {
        struct vd_entry * x = &m->e[i];
        if (!x->used) { if (lru->used) lru = x; continue; }
        if (lru->used && x->tick < lru->tick) lru = x;
        if (x->buf_id != buf_id || x->base != (const uint8_t *) data || memcmp(x->nb, nb, sizeof(x->nb)) != 0) continue;
        int diff = 0, gd = -1;
        for (int k = 0; k < 4; k++) if (x->ne[k] != ne[k]) { diff++; gd = k; }
        if (diff <= 1) { e = x; g = gd; }
    }
    if (!e) {   // a new entry
        e = lru;
        memset(e, 0, sizeof(*e));
        e->used = true;
        e->buf_id = buf_id;
        e->base = data;
        memcpy(e->ne, ne, sizeof(e->ne));
        memcpy(e->nb, nb, sizeof(e->nb));
        entry_geometry(e);
        entry_scratch(m, e);
    } else if (e->stale) {
        memcpy(e->ne, ne, sizeof(e->ne));
        entry_geometry(e);
        entry_scratch(m, e);
    } else if (!dirty_written(e)) {   // taken out ahead for a node that has not run: its bytes to come
        memcpy(e->ne, ne, sizeof(e->ne));
        entry_geometry(e);
        entry_scratch(m, e);
    } else {
        for (int d = 0; d < e->n_dirty; d++) acc_box(&e->acc, e->base, e->nb, e->dlo[d], e->dhi[d], 1);   // their new bytes
        e->n_dirty = 0;
        if (g >= 0) {   // the view grew or shrank along dim g: those elements in or out
            int64_t lo[4] = { 0, 0, 0, 0 }, hi[4];
            memcpy(hi, e->ne, sizeof(hi));
            lo[g] = min64(e->ne[g], ne[g]);
            hi[g] = e->ne[g] > ne[g] ? e->ne[g] : ne[g];
            acc_box(&e->acc, e->base, e->nb, lo, hi, ne[g] > e->ne[g] ? 1 : -1);
            memcpy(e->ne, ne, sizeof(e->ne));
            entry_geometry(e);
        }
        if (!e->acc.ext_ok) entry_scratch(m, e);   // an extreme went out: count them again
        else m->st.n_memo++;
    }
    e->tick = ++m->tick;
    memo_span(m);
    acc_out(&e->acc, type, e->ne, hash, s, sketch);
    return true;
}

static void vd_invalidate(struct vd_memo * m, uintptr_t lo, uintptr_t hi) {
    if (lo >= hi || hi <= m->lo || lo >= m->hi) return;
    for (int i = 0; i < VD_MAX; i++) {
        struct vd_entry * e = &m->e[i];
        if (e->used && !e->stale && e->lo < hi && lo < e->hi) { e->stale = true; m->st.n_invalidated++; }
    }
    memo_span(m);
}

// The written tensor's elements as a box of e's coordinates, clipped to e's
// extents (*empty: none of them is e's). False if they do not form one: a
// start between e's elements, a stride that is not one of e's, a run that
// does not split into e's dims.
static bool map_box(const struct vd_entry * e, uintptr_t w, const int64_t wne[4], const size_t wnb[4],
                    int64_t lo[4], int64_t hi[4], bool * empty) {
    if (w < (uintptr_t) e->base || e->n_order == 0) return false;
    uintptr_t rem = w - (uintptr_t) e->base;
    int64_t c[4] = { 0, 0, 0, 0 }, steps[4] = { 1, 1, 1, 1 };
    for (int k = 0; k < e->n_order; k++) {
        const int d = e->order[k];
        c[d] = (int64_t) (rem / e->nb[d]);
        rem -= (uintptr_t) c[d] * e->nb[d];
    }
    if (rem != 0) return false;
    for (int k = 0; k < 4; k++) {
        if (wne[k] <= 1) continue;
        int64_t n = wne[k];
        int o = -1;   // position in e->order of the dim with W's stride
        for (int j = 0; j < e->n_order; j++) if (e->nb[e->order[j]] == wnb[k]) o = j;
        if (o < 0) return false;
        for (;;) {
            const int d = e->order[o];
            if (steps[d] != 1) return false;
            if (o == 0) { steps[d] = n; break; }   // the outermost dim: no limit
            const size_t outer = e->nb[e->order[o - 1]];
            const int64_t cap = (int64_t) (outer / e->nb[d]);
            if (c[d] + n <= cap) { steps[d] = n; break; }
            if (c[d] != 0 || n % cap != 0 || (size_t) cap * e->nb[d] != outer) return false;
            steps[d] = cap;   // W's run goes on into the next dim out
            n /= cap;
            o--;
        }
    }
    *empty = false;
    for (int d = 0; d < 4; d++) {
        lo[d] = c[d];   // (dims of one element: 0, one step)
        hi[d] = min64(c[d] + steps[d], e->ne[d]);
        if (lo[d] >= hi[d]) *empty = true;
    }
    return true;
}

static bool boxes_meet(const int64_t alo[4], const int64_t ahi[4], const int64_t blo[4], const int64_t bhi[4]) {
    for (int d = 0; d < 4; d++) if (ahi[d] <= blo[d] || bhi[d] <= alo[d]) return false;
    return true;
}

static void vd_before_write(struct vd_memo * m, const void * data, int type, const int64_t ne[4], const size_t nb[4],
                            const void * writer) {
    uintptr_t lo = (uintptr_t) data, hi = lo;
    bool empty = false;
    for (int k = 0; k < 4; k++) {
        if (ne[k] <= 0) empty = true;
        else hi += (uintptr_t) (ne[k] - 1) * nb[k];
    }
    if (empty) return;
    hi += tg_type_size((enum tg_type) type);
    for (int i = 0; i < VD_MAX; i++) {
        struct vd_entry * e = &m->e[i];
        if (!e->used || e->stale || e->hi <= lo || hi <= e->lo) continue;
        int64_t blo[4], bhi[4];
        bool none = false;
        bool ok = type == TG_TYPE_F16 && nb[0] == 2 && map_box(e, lo, ne, nb, blo, bhi, &none);
        if (ok && none) continue;
        for (int d = 0; ok && d < e->n_dirty; d++) if (boxes_meet(blo, bhi, e->dlo[d], e->dhi[d])) ok = false;
        if (!ok || e->n_dirty == VD_DIRTY) { e->stale = true; m->st.n_invalidated++; continue; }
        acc_box(&e->acc, e->base, e->nb, blo, bhi, -1);   // their bytes before the write
        memcpy(e->dlo[e->n_dirty], blo, sizeof(blo));
        memcpy(e->dhi[e->n_dirty], bhi, sizeof(bhi));
        e->dwriter[e->n_dirty] = writer;
        e->n_dirty++;
        m->st.n_taken_out += (uint64_t) ((bhi[0] - blo[0]) * (bhi[1] - blo[1]) * (bhi[2] - blo[2]) * (bhi[3] - blo[3]));
    }
    memo_span(m);
}

bool tg_trace_vd_digest(struct vd_memo * m, uint64_t buf_id, const void * data, int type, const int64_t ne[4],
                        const size_t nb[4], uint64_t * hash, struct tg_trace_summary * s, double * sketch) {
    if (!data || !ne || !nb || !layout_ok(type, ne, nb)) return false;
    if (!m || !tg_trace_vd_memoized(ne)) return tg_trace_set_digest(data, type, ne, nb, hash, s, sketch);
    vd_lock(m);
    bool ok = vd_digest(m, buf_id, data, type, ne, nb, hash, s, sketch);
    pthread_mutex_unlock(&m->mu);
    return ok;
}

void tg_trace_vd_invalidate(struct vd_memo * m, uintptr_t lo, uintptr_t hi) {
    if (!m) return;
    vd_lock(m);
    vd_invalidate(m, lo, hi);
    pthread_mutex_unlock(&m->mu);
}

bool tg_trace_vd_overlaps(struct vd_memo * m, const void * data, int type, const int64_t ne[4], const size_t nb[4]) {
    const uintptr_t lo = (uintptr_t) data;
    return m && data && lo < __atomic_load_n(&m->hi, __ATOMIC_RELAXED) &&
           lo + span_bytes(type, ne, nb) > __atomic_load_n(&m->lo, __ATOMIC_RELAXED);
}

void tg_trace_vd_written(struct vd_memo * m, const void * writer) {
    if (!m || !writer) return;
    // without waiting for the lock where it is held (the hashing thread digesting a view): the
    // writer goes into a free slot, cleared by the lock's next holder before it uses the marks
    if (pthread_mutex_trylock(&m->mu) != 0) {
        __atomic_fetch_add(&m->n_ran, 1, __ATOMIC_SEQ_CST);   // first: n_ran never counts fewer than the slots set
        for (int k = 0; k < VD_RAN; k++) {
            const void * none = NULL;
            if (__atomic_compare_exchange_n(&m->ran[k], &none, writer, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return;
        }
        __atomic_fetch_sub(&m->n_ran, 1, __ATOMIC_SEQ_CST);
        vd_lock(m);   // no slot free: wait
    } else if (__atomic_load_n(&m->n_ran, __ATOMIC_SEQ_CST)) {
        pthread_mutex_unlock(&m->mu);
        vd_lock(m);
    }
    vd_ran(m, writer);
    pthread_mutex_unlock(&m->mu);
}

void tg_trace_vd_before_write(struct vd_memo * m, const void * data, int type, const int64_t ne[4], const size_t nb[4],
                              const void * writer) {
    if (!m || !data) return;
    // most nodes write a compute buffer: no lock for them (an entry made since by another thread was
    // made from bytes this write waited for: the recorder's hashing thread is done with them)
    if (!tg_trace_vd_overlaps(m, data, type, ne, nb)) return;
    vd_lock(m);
    vd_before_write(m, data, type, ne, nb, writer);
    pthread_mutex_unlock(&m->mu);
}
