// hash.c - content hashes (XXH3-64 over logical element order), numeric
// summaries and logical-order gathering of strided host data.
#include "tg/trace.h"

#include "tg/cpu.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
// XXH3 compiled here (the shared library is built for baseline x86-64): inlined,
// it takes the widest vector unit the build targets; a baseline build calls
// hash-xxh.c's AVX2 copy where the engine's SIMD level (sk_path) has AVX2.
#define XXH_INLINE_ALL
#include <xxhash.h>
#include "hash-xxh.h"

#define CHUNK 1024   // elements converted at a time (stack buffers)

static int sk_path(void);

// XXH_DISPATCH: a build below AVX2 that can call hash-xxh.c's AVX2 copy.
#if defined(__x86_64__) && !defined(__AVX2__)
#define XXH_DISPATCH 1
#else
#define XXH_DISPATCH 0
#endif

// XXH3-64 of n bytes, and a streaming update, at the width `path` (sk_path)
// allows: the same hash on every path.
static inline uint64_t xxh3_64(const void * p, size_t n, int path) {
#if XXH_DISPATCH
    if (path >= 1) return tg_trace_xxh3_avx2(p, n);
#endif
    (void) path;
    return XXH3_64bits(p, n);
}

static inline void xxh3_update(XXH3_state_t * st, const void * p, size_t n, int path) {
#if XXH_DISPATCH
    if (path >= 1) { tg_trace_xxh3_update_avx2(st, p, n); return; }
#endif
    (void) path;
    (void) XXH3_64bits_update(st, p, n);
}

struct layout {
    int64_t bs;        // elements per block
    size_t  ts;        // bytes per block
    int64_t nblk0;     // blocks per row
    size_t  row_bytes; // bytes of a dense row
    bool    dense_rows;
    bool    contiguous;
};

static bool get_layout(int type, const int64_t ne[4], const size_t nb[4], struct layout * L) {
    if (!tg_type_supported(type)) return false;
    L->bs = tg_blck_size((enum tg_type) type);
    L->ts = tg_type_size((enum tg_type) type);
    if (L->bs <= 0 || L->ts == 0) return false;
    for (int d = 0; d < 4; d++) if (ne[d] < 0) return false;
    if (ne[0] % L->bs != 0) return false;
    L->nblk0 = ne[0] / L->bs;
    L->row_bytes = (size_t) L->nblk0 * L->ts;
    L->dense_rows = nb[0] == L->ts;
    L->contiguous = L->dense_rows && (ne[1] <= 1 || nb[1] == L->row_bytes) &&
                    (ne[2] <= 1 || nb[2] == L->row_bytes * (size_t) ne[1]) &&
                    (ne[3] <= 1 || nb[3] == L->row_bytes * (size_t) ne[1] * (size_t) ne[2]);
    return true;
}

// Calls fn(bytes, len, user) over the tensor's bytes in logical order, in
// pieces of whole blocks. Small or strided rows are packed into a staging
// buffer first, so fn sees a few large pieces instead of many small rows.
typedef void (*row_fn)(const uint8_t * p, size_t n, void * user);

#define STAGE 16384

static void for_each_row(const uint8_t * data, const int64_t ne[4], const size_t nb[4],
                         const struct layout * L, row_fn fn, void * user) {
    if (L->contiguous) {
        size_t total = L->row_bytes * (size_t) ne[1] * (size_t) ne[2] * (size_t) ne[3];
        if (total) fn(data, total, user);
        return;
    }
    uint8_t stage[STAGE] __attribute__((aligned(64)));
    size_t at = 0;
    size_t cap = STAGE / L->ts * L->ts;   // whole blocks only
    if (L->dense_rows && L->row_bytes >= 32 && L->row_bytes < cap / 4) {
        // small dense rows (a head's slice of a KV cache row): whole rows, in
        // 32-byte moves the compiler inlines (a memcpy call per row costs
        // more); a row that is not a multiple of 32 bytes ends with one move
        // overlapping the previous one
        const size_t rb = L->row_bytes;
        for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++) {
            const uint8_t * plane = data + i2 * nb[2] + i3 * nb[3];
            for (int64_t i1 = 0; i1 < ne[1]; i1++) {
                if (at + rb > cap) { fn(stage, at, user); at = 0; }
                const uint8_t * row = plane + i1 * nb[1];
                if (i1 + 16 < ne[1])   // strided rows (often cold): fetch ahead, every line of the row
                    for (size_t o = 0; o < rb; o += 64) __builtin_prefetch(row + 16 * nb[1] + o);
                size_t o = 0;
                for (; o + 32 <= rb; o += 32) memcpy(stage + at + o, row + o, 32);
                if (o < rb) memcpy(stage + at + rb - 32, row + rb - 32, 32);
                at += rb;
            }
        }
        if (at) fn(stage, at, user);
        return;
    }
    if (L->nblk0 == 1 && (L->ts == 2 || L->ts == 4)) {   // one element per row: a column (the V store)
        const size_t ts = L->ts;
        for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++) {
            const uint8_t * src = data + i2 * nb[2] + i3 * nb[3];
            for (int64_t i1 = 0; i1 < ne[1]; i1++, src += nb[1]) {
                if (i1 + 24 < ne[1]) __builtin_prefetch(src + 24 * nb[1]);   // a cache line per element
                if (ts == 2) memcpy(stage + at, src, 2); else memcpy(stage + at, src, 4);
                at += ts;
                if (at + ts > cap) { fn(stage, at, user); at = 0; }
            }
        }
        if (at) fn(stage, at, user);
        return;
    }
    const bool short_rows = !L->dense_rows || L->row_bytes < 32;
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
    for (int64_t i2 = 0; i2 < ne[2]; i2++)
    for (int64_t i1 = 0; i1 < ne[1]; i1++) {
        const uint8_t * row = data + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
        if (short_rows && i1 + 16 < ne[1])   // a column of a KV cache (the V store): a cache line per row
            __builtin_prefetch(row + 16 * nb[1]);
        if (L->dense_rows && L->row_bytes >= cap / 4) {   // large rows: directly
            if (at) { fn(stage, at, user); at = 0; }
            fn(row, L->row_bytes, user);
            continue;
        }
        for (int64_t b = 0; b < L->nblk0; ) {
            if (L->dense_rows && L->row_bytes >= 32) {   // copy as much of the row as fits
                size_t k = (size_t) (L->nblk0 - b);
                if (k > (cap - at) / L->ts) k = (cap - at) / L->ts;
                memcpy(stage + at, row + (size_t) b * L->ts, k * L->ts);
                at += k * L->ts; b += (int64_t) k;
            } else {   // one element (block) at a time: a column, a transposed view
                const size_t ts = L->ts;
                const uint8_t * src = row + b * nb[0];
                for (; b < L->nblk0 && at + ts <= cap; b++, at += ts, src += nb[0]) {
                    switch (ts) {   // fixed sizes: inlined moves, not a call per element
                    case 2:  memcpy(stage + at, src, 2); break;
                    case 4:  memcpy(stage + at, src, 4); break;
                    case 8:  memcpy(stage + at, src, 8); break;
                    default: memcpy(stage + at, src, ts); break;
                    }
                }
            }
            if (at + L->ts > cap) { fn(stage, at, user); at = 0; }
        }
    }
    if (at) fn(stage, at, user);
}

struct hash_state { XXH3_state_t st; int path; };

static void hash_row(const uint8_t * p, size_t n, void * user) {
    struct hash_state * h = user;
    xxh3_update(&h->st, p, n, h->path);
}

uint64_t tg_trace_hash_data(const void * data, int type, const int64_t ne[4], const size_t nb[4]) {
    struct layout L;
    if (!data || !ne || !nb || !get_layout(type, ne, nb, &L)) return 0;
    const int path = XXH_DISPATCH ? sk_path() : 0;   // the level is looked up only where it picks the width
    if (L.contiguous) {
        size_t total = L.row_bytes * (size_t) ne[1] * (size_t) ne[2] * (size_t) ne[3];
        return xxh3_64(data, total, path);
    }
    struct hash_state h = { .path = path };
    XXH3_64bits_reset(&h.st);
    for_each_row(data, ne, nb, &L, hash_row, &h);
    return XXH3_64bits_digest(&h.st);
}

uint64_t tg_trace_hash_tensor(const struct tg_tensor * t) {
    if (!t || !t->data) return 0;
    return tg_trace_hash_data(t->data, t->type, t->ne, t->nb);
}

// ---- sketches -----------------------------------------------------------------
// The count sketch of FORMAT.md "SKETCH": logical indices go in blocks of 16
// (block b = i / 16, lane l = i % 16); a fixed hash of b picks the block's
// group g (2 bits), rotation r (4 bits) and the 16 lanes' signs; element i
// adds +-x to bucket g * 16 + (l + r) % 16. Non-finite values add nothing.
// A whole block, sign-flipped, is added lane for lane to a binary32 partial
// sum kept per (group, rotation) - no rotation per block; every SK_FOLD
// blocks (and at the end) the partials are rotated into the binary64
// buckets, in (group, rotation) order. Every path (AVX-512, AVX2 or scalar,
// chosen at run time) adds the same terms in the same order, so the sums are
// the same bit for bit.

#define SK_LANES 16
#define SK_FOLD  1024   // blocks per fold: a partial holds ~16 blocks' terms

static inline uint64_t sk_hash(uint64_t b) {   // splitmix64's finalizer of a fixed affine map of b
    uint64_t z = b * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// What a block uses of sk_hash(b), packed: bits 0-5 the index 16g + r of
// its partial (group g = h & 3, rotation r = (h >> 2) & 15), bits 16-31 the 16 sign
// bits (h >> 32). A table holds the first SK_TAB blocks' (every sketch
// starts at block 0): the hash's multiply chain was a third of a block's time.
static inline uint32_t sk_pack(uint64_t h) {
    return (uint32_t) ((h & 3) * 16 + ((h >> 2) & 15)) | (uint32_t) ((h >> 32) & 0xFFFF) << 16;
}
#define SK_TAB 16384
static uint32_t sk_tab[SK_TAB];
static pthread_once_t sk_tab_once = PTHREAD_ONCE_INIT;
static void sk_tab_init(void) { for (uint64_t b = 0; b < SK_TAB; b++) sk_tab[b] = sk_pack(sk_hash(b)); }
static inline uint32_t sk_fields(uint64_t b) { return b < SK_TAB ? sk_tab[b] : sk_pack(sk_hash(b)); }
static inline unsigned sk_part_index(uint32_t h) { return h & 63; }

struct sk {
    uint64_t pos;                                  // logical index of the next element
    int      path;                                 // sk_path(): 0 scalar, 1 AVX2, 2 AVX-512
    uint32_t nblk;                                 // blocks in the partials since the last fold
    uint64_t used;                                 // bit 16g + r: partial (g, r) holds terms
    double   bucket[4][SK_LANES] __attribute__((aligned(64)));   // [g][m]: bucket g * 16 + m
    float    part[64][SK_LANES] __attribute__((aligned(64)));    // [16g + r][lane]: binary32 partial sums
};

// The block path for the engine's SIMD level (tg_cpu_simd_name, which
// TG_SIMD / TG_NO_SIMD force): every path adds the same terms in the same
// order, so the choice changes speed only.
static int sk_path(void) {
#if defined(__x86_64__)
    const char * n = tg_cpu_simd_name();
    if (!strncmp(n, "avx512", 6)) return 2;
    if (!strcmp(n, "avx2")) return 1;
#endif
    return 0;
}

// part_zero: the partials are known to be all zero (every fold clears the
// partials it adds, and sk_finish folds them all: a sketch state kept per
// thread needs its 4 KiB of partials cleared once only).
static void sk_init(struct sk * k, bool part_zero) {
    k->pos = 0;
    k->path = sk_path();
    k->nblk = 0;
    k->used = 0;
    memset(k->bucket, 0, sizeof(k->bucket));
    if (!part_zero) memset(k->part, 0, sizeof(k->part));
    pthread_once(&sk_tab_once, sk_tab_init);
}

// The partials into the buckets: partial (g, r) lane j to bucket (j + r) % 16
// of group g, partials in index order (one binary64 addition per bucket and
// partial on every path).
static void sk_fold_scalar(struct sk * k) {
    for (uint64_t u = k->used; u; u &= u - 1) {
        const unsigned pi = (unsigned) __builtin_ctzll(u), g = pi / 16, r = pi % 16;
        for (unsigned j = 0; j < SK_LANES; j++) k->bucket[g][(j + r) % SK_LANES] += (double) k->part[pi][j];
        memset(k->part[pi], 0, sizeof(k->part[pi]));
    }
}

#if defined(__x86_64__)
// AVX2: a partial rotated into bucket order in registers. With r = 8q + s,
// bucket half u takes lane (m - s) % 8 of half (u - q) % 2 where m >= s and
// of half (u - q - 1) % 2 where m < s: one permute of each half by
// (m - s) % 8, two blends (c0 = a0 with a1 below lane s, c1 the other way),
// c0 to half q, c1 to half 1 - q. A group's 16 buckets stay in four
// registers while its partials are added in index order (the same additions
// as through memory, without a store and reload between partials).
__attribute__((target("avx2,avx"))) static void sk_fold_avx2(struct sk * k) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (unsigned g = 0; g < 4; g++) {
        uint32_t u = (uint32_t) (k->used >> (16 * g)) & 0xFFFFu;
        if (!u) continue;
        double * d = k->bucket[g];
        __m256d d0 = _mm256_load_pd(d), d1 = _mm256_load_pd(d + 4), d2 = _mm256_load_pd(d + 8), d3 = _mm256_load_pd(d + 12);
        for (; u; u &= u - 1) {
            const unsigned r = (unsigned) __builtin_ctz(u), s = r & 7, q = r >> 3;
            float * part = k->part[16 * g + r];
            const __m256i sv = _mm256_set1_epi32((int) s);
            const __m256i idx = _mm256_sub_epi32(lane, sv);   // vpermps reads the low 3 bits: (m - s) % 8
            const __m256 below = _mm256_castsi256_ps(_mm256_cmpgt_epi32(sv, lane));   // m < s
            const __m256 a0 = _mm256_permutevar8x32_ps(_mm256_load_ps(part), idx);
            const __m256 a1 = _mm256_permutevar8x32_ps(_mm256_load_ps(part + 8), idx);
            const __m256 h0 = _mm256_blendv_ps(a0, a1, below), h1 = _mm256_blendv_ps(a1, a0, below);
            const __m256 lo = q ? h1 : h0, hi = q ? h0 : h1;   // buckets 0..7, 8..15
            d0 = _mm256_add_pd(d0, _mm256_cvtps_pd(_mm256_castps256_ps128(lo)));
            d1 = _mm256_add_pd(d1, _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)));
            d2 = _mm256_add_pd(d2, _mm256_cvtps_pd(_mm256_castps256_ps128(hi)));
            d3 = _mm256_add_pd(d3, _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1)));
            _mm256_store_ps(part, _mm256_setzero_ps());
            _mm256_store_ps(part + 8, _mm256_setzero_ps());
        }
        _mm256_store_pd(d, d0); _mm256_store_pd(d + 4, d1); _mm256_store_pd(d + 8, d2); _mm256_store_pd(d + 12, d3);
    }
}

// A group's 16 buckets stay in two registers while its partials are added
// in index order (as the AVX2 fold: no store and reload between partials).
__attribute__((target("avx512f,avx2,avx"))) static void sk_fold_avx512(struct sk * k) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (unsigned g = 0; g < 4; g++) {
        uint32_t u = (uint32_t) (k->used >> (16 * g)) & 0xFFFFu;
        if (!u) continue;
        double * d = k->bucket[g];
        __m512d d0 = _mm512_load_pd(d), d1 = _mm512_load_pd(d + 8);
        for (; u; u &= u - 1) {
            const unsigned r = (unsigned) __builtin_ctz(u);
            float * part = k->part[16 * g + r];
            const __m512i idx = _mm512_and_si512(_mm512_sub_epi32(lane, _mm512_set1_epi32((int) r)), _mm512_set1_epi32(15));
            const __m512 rot = _mm512_permutexvar_ps(idx, _mm512_load_ps(part));   // rot[m] = lane (m - r) % 16
            d0 = _mm512_add_pd(d0, _mm512_cvtps_pd(_mm512_castps512_ps256(rot)));
            d1 = _mm512_add_pd(d1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(rot), 1))));
            _mm512_store_ps(part, _mm512_setzero_ps());
        }
        _mm512_store_pd(d, d0);
        _mm512_store_pd(d + 8, d1);
    }
}
#endif

static void sk_fold(struct sk * k) {
#if defined(__x86_64__)
    if (k->path == 2) sk_fold_avx512(k);
    else if (k->path == 1) sk_fold_avx2(k);
    else
#endif
    sk_fold_scalar(k);
    k->used = 0;
    k->nblk = 0;
}

// One element (block boundaries, tails, non-float types): straight into its
// bucket.
static inline void sk_one(struct sk * k, double v) {
    uint64_t i = k->pos++;
    if (!(v - v == 0.0)) return;
    uint64_t h = sk_hash(i / SK_LANES);
    unsigned l = (unsigned) (i % SK_LANES);
    double sgn = (h >> (32 + l)) & 1 ? -1.0 : 1.0;
    k->bucket[h & 3][(l + ((h >> 2) & 15)) % SK_LANES] += sgn * v;
}

// One whole block of 16 floats at p added to its partial: lanes whose exponent is all ones (NaN,
// infinity) become +0 (FIN: the caller knows the block is finite and skips
// the mask), the sign bit is flipped where the block's sign bit is set.
static inline void sk_block_scalar(struct sk * restrict k, uint32_t h, const uint8_t * p, bool fin) {
    (void) fin;
    const unsigned pi = sk_part_index(h);
    const uint32_t signs = h >> 16;
    float * restrict dst = k->part[pi];
    k->used |= 1ull << pi;
    for (unsigned j = 0; j < SK_LANES; j++) {
        uint32_t u;
        memcpy(&u, p + 4 * j, 4);
        uint32_t keep = (u & 0x7F800000u) != 0x7F800000u ? 0xFFFFFFFFu : 0u;
        uint32_t flip = (signs >> j) & 1u ? 0x80000000u : 0u;
        uint32_t x = (u ^ flip) & keep;
        float f;
        memcpy(&f, &x, 4);
        dst[j] += f;
    }
}

// n floats at p starting at logical index k->pos; fin: all of them finite.
#define DEFINE_SK(NAME, ATTR, BLOCK)                                                              \
ATTR static void NAME(struct sk * k, const uint8_t * p, size_t n, bool fin) {                    \
    size_t i = 0;                                                                                 \
    for (; i < n && k->pos % SK_LANES; i++) sk_one(k, ld_f32(p, i));                              \
    if (i + SK_LANES <= n) {                                                                      \
        uint64_t b = k->pos / SK_LANES;                                                           \
        while (i + SK_LANES <= n) {                                                               \
            if (k->nblk == SK_FOLD) sk_fold(k);                                                   \
            size_t m = (n - i) / SK_LANES, room = SK_FOLD - k->nblk;                              \
            if (m > room) m = room;                                                               \
            if (fin) for (size_t e = 0; e < m; e++, i += SK_LANES, b++) BLOCK(k, sk_fields(b), p + 4 * i, true);  \
            else     for (size_t e = 0; e < m; e++, i += SK_LANES, b++) BLOCK(k, sk_fields(b), p + 4 * i, false); \
            k->nblk += (uint32_t) m;                                                              \
        }                                                                                         \
        k->pos = b * SK_LANES;                                                                    \
    }                                                                                             \
    for (; i < n; i++) sk_one(k, ld_f32(p, i));                                                   \
}

static inline float ld_f32(const uint8_t * p, size_t k) { float v; memcpy(&v, p + 4 * k, 4); return v; }
DEFINE_SK(sk_f32_scalar, , sk_block_scalar)

#if defined(__x86_64__)
#define SK_AVX2 __attribute__((target("avx2,avx")))
#define SK_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,avx")))
// AVX2: the two halves, sign bits moved to bit 31 of their lanes by shifts,
// masked, added to the partial.
SK_AVX2_INLINE void sk_block_avx2(struct sk * restrict k, uint32_t h, const uint8_t * p, bool fin) {
    const unsigned pi = sk_part_index(h);
    float * restrict dst = k->part[pi];
    const __m256i top = _mm256_set1_epi32((int) 0x80000000u);
    const __m256i sg = _mm256_set1_epi32((int) (h >> 16));
    const __m256i f0 = _mm256_and_si256(_mm256_sllv_epi32(sg, _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24)), top);
    const __m256i f1 = _mm256_and_si256(_mm256_sllv_epi32(sg, _mm256_setr_epi32(23, 22, 21, 20, 19, 18, 17, 16)), top);
    const __m256i v0 = _mm256_loadu_si256((const __m256i *) p), v1 = _mm256_loadu_si256((const __m256i *) (p + 32));
    __m256i w0 = _mm256_xor_si256(v0, f0), w1 = _mm256_xor_si256(v1, f1);
    if (!fin) {
        const __m256i expo = _mm256_set1_epi32(0x7F800000);
        w0 = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(v0, expo), expo), w0);
        w1 = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(v1, expo), expo), w1);
    }
    k->used |= 1ull << pi;
    _mm256_store_ps(dst, _mm256_add_ps(_mm256_load_ps(dst), _mm256_castsi256_ps(w0)));
    _mm256_store_ps(dst + 8, _mm256_add_ps(_mm256_load_ps(dst + 8), _mm256_castsi256_ps(w1)));
}
DEFINE_SK(sk_f32_avx2, SK_AVX2, sk_block_avx2)

#define SK_AVX512 __attribute__((target("avx512f,avx2,avx")))
#define SK_AVX512_INLINE static inline __attribute__((always_inline, target("avx512f,avx2,avx")))
// AVX-512: one register, a masked sign flip.
SK_AVX512_INLINE void sk_block_avx512(struct sk * restrict k, uint32_t h, const uint8_t * p, bool fin) {
    const unsigned pi = sk_part_index(h);
    float * restrict dst = k->part[pi];
    const __m512i expo = _mm512_set1_epi32(0x7F800000);
    __m512i w = _mm512_loadu_si512((const void *) p);
    __mmask16 keep = fin ? (__mmask16) 0xFFFF : _mm512_cmpneq_epi32_mask(_mm512_and_si512(w, expo), expo);
    w = _mm512_maskz_xor_epi32(keep, w, _mm512_maskz_mov_epi32((__mmask16) (h >> 16), _mm512_set1_epi32((int) 0x80000000u)));
    k->used |= 1ull << pi;
    _mm512_store_ps(dst, _mm512_add_ps(_mm512_load_ps(dst), _mm512_castsi512_ps(w)));
}
DEFINE_SK(sk_f32_avx512, SK_AVX512, sk_block_avx512)
#endif

// fin: the caller's summary found no NaN or infinity among the n values.
static void sk_f32(struct sk * k, const uint8_t * p, size_t n, bool fin) {
#if defined(__x86_64__)
    if (k->path == 2) { sk_f32_avx512(k, p, n, fin); return; }
    if (k->path == 1) { sk_f32_avx2(k, p, n, fin); return; }
#endif
    sk_f32_scalar(k, p, n, fin);
}
static void sk_floats(struct sk * k, const float * x, size_t n, bool fin) { sk_f32(k, (const uint8_t *) x, n, fin); }

static void sk_finish(struct sk * k, double * out) {
    sk_fold(k);
    memcpy(out, k->bucket, TG_TRACE_SKETCH_N * sizeof(*out));
}

// ---- summaries --------------------------------------------------------------

struct acc {
    int     type;
    int64_t bs;
    size_t  ts;
    double  min, max, sum, sumsq;
    uint64_t n_nan, n_inf, n_zero, n;
    struct sk * sk;   // the sketch too (NULL: none)
    int     path;     // sk_path(): 1 or 2 take the one-pass AVX2 loop below for f32 and f16
};

// NaN and infinities counted so far: unchanged over a piece, the piece is
// finite and its sketch skips the masking.
static inline uint64_t acc_bad(const struct acc * a) { return a->n_nan + a->n_inf; }

// Lane-explicit so the compiler vectorizes it without reassociating a
// scalar reduction (hash.c is built with -O3): 16 independent lanes, folded
// into double accumulators every block. One loop per element type, reading
// the elements in place (LOAD(p, k): element k of p as a float, unaligned).
#define LANES 16
// A block goes through a fast pass first (sums, squares, extremes, zeros);
// only a block whose sums come out non-finite (it holds a NaN or an
// infinity, or its float squares overflow) is summed again, masking NaN and
// infinities and accumulating in double.
#define DEFINE_ACC(NAME, LOAD)                                                                    \
static void NAME(struct acc * a, const uint8_t * p, size_t n) {                                  \
    float mn[LANES], mx[LANES];                                                                   \
    for (int j = 0; j < LANES; j++) { mn[j] = (float) a->min; mx[j] = (float) a->max; }           \
    size_t i = 0;                                                                                 \
    while (i + LANES <= n) {                                                                      \
        const size_t i0 = i;                                                                      \
        const size_t end = i + 256 * LANES < n ? i + 256 * LANES : n - (n - i) % LANES;           \
        float s[LANES] = {0}, ss[LANES] = {0};                                                    \
        uint32_t zero[LANES] = {0};                                                               \
        for (; i < end; i += LANES) {                                                             \
            for (int j = 0; j < LANES; j++) {                                                     \
                float v = LOAD(p, i + j);                                                         \
                zero[j] += (uint32_t) (v == 0.0f);                                                \
                mn[j] = v < mn[j] ? v : mn[j];                                                    \
                mx[j] = v > mx[j] ? v : mx[j];                                                    \
                s[j] += v;                                                                        \
                ss[j] += v * v;                                                                   \
            }                                                                                     \
        }                                                                                         \
        double bs = 0, bss = 0;                                                                   \
        for (int j = 0; j < LANES; j++) { bs += s[j]; bss += ss[j]; }                             \
        if (!isfinite(bs) || !isfinite(bss)) {   /* again, masking NaN and infinities */          \
            uint32_t nan[LANES] = {0}, inf[LANES] = {0};                                          \
            double ds[LANES] = {0}, dss[LANES] = {0};   /* double: squares of huge values */      \
            for (int j = 0; j < LANES; j++) zero[j] = 0;                                          \
            for (i = i0; i < end; i += LANES) {                                                   \
                for (int j = 0; j < LANES; j++) {                                                 \
                    float v = LOAD(p, i + j);                                                     \
                    int is_nan = v != v;                                                          \
                    int is_inf = fabsf(v) == INFINITY;                                            \
                    nan[j] += (uint32_t) is_nan;                                                  \
                    inf[j] += (uint32_t) is_inf;                                                  \
                    zero[j] += (uint32_t) (v == 0.0f);                                            \
                    double f = (is_nan | is_inf) ? 0.0 : (double) v;                              \
                    ds[j] += f;                                                                   \
                    dss[j] += f * f;                                                              \
                }                                                                                 \
            }                                                                                     \
            bs = bss = 0;                                                                         \
            for (int j = 0; j < LANES; j++) {                                                     \
                bs += ds[j]; bss += dss[j]; a->n_nan += nan[j]; a->n_inf += inf[j];               \
            }                                                                                     \
        }                                                                                         \
        a->sum += bs; a->sumsq += bss;                                                            \
        for (int j = 0; j < LANES; j++) a->n_zero += zero[j];                                     \
    }                                                                                             \
    double m0 = a->min, m1 = a->max;                                                              \
    for (int j = 0; j < LANES; j++) { if (mn[j] < m0) m0 = mn[j]; if (mx[j] > m1) m1 = mx[j]; }   \
    a->min = m0; a->max = m1;                                                                     \
    for (; i < n; i++) {   /* tail */                                                             \
        float v = LOAD(p, i);                                                                     \
        bool is_nan = v != v, is_inf = fabsf(v) == INFINITY;                                      \
        a->n_nan += is_nan; a->n_inf += is_inf; a->n_zero += v == 0.0f;                           \
        if (v < a->min) a->min = v;                                                               \
        if (v > a->max) a->max = v;                                                               \
        if (!is_nan && !is_inf) { a->sum += v; a->sumsq += (double) v * v; }                      \
    }                                                                                             \
    a->n += n;                                                                                    \
}

static inline float ld_bf16(const uint8_t * p, size_t k) {
    uint16_t u; memcpy(&u, p + 2 * k, 2);
    uint32_t w = (uint32_t) u << 16;
    float v; memcpy(&v, &w, 4); return v;
}
DEFINE_ACC(acc_f32, ld_f32)
DEFINE_ACC(acc_bf16, ld_bf16)
#if defined(__x86_64__)
// ---- summary and sketch in one pass (AVX2) ------------------------------------
// acc_f32 and then sk_f32 read every value twice (halves: from a converted
// copy). This pass loads 16 values once and feeds both from registers, with
// the same arithmetic in the same order: lane j of the summary is element
// i + j, its float sums go to double at the same points (the end of a
// DEFINE_ACC block or of the call), extremes and zeros lane by lane; the
// sketch block is masked as sk_block_avx2 masks a block that may hold NaN or
// infinities (the same terms where it holds none). So every SIMD level still
// gives the same bits. Calls must start on a sketch block (k->pos % 16 == 0).

// DEFINE_ACC's second loop over one block of n values (a multiple of LANES)
// whose float sums came out non-finite: NaN and infinities counted and left
// out, sums in double. Zeros were counted by the first loop already.
static void acc_block_masked(struct acc * a, const float * x, size_t n, double * bs, double * bss) {
    uint32_t nan[LANES] = {0}, inf[LANES] = {0};
    double ds[LANES] = {0}, dss[LANES] = {0};
    for (size_t i = 0; i < n; i += LANES) {
        for (int j = 0; j < LANES; j++) {
            float v = x[i + j];
            int is_nan = v != v;
            int is_inf = fabsf(v) == INFINITY;
            nan[j] += (uint32_t) is_nan;
            inf[j] += (uint32_t) is_inf;
            double f = (is_nan | is_inf) ? 0.0 : (double) v;
            ds[j] += f;
            dss[j] += f * f;
        }
    }
    *bs = *bss = 0;
    for (int j = 0; j < LANES; j++) { *bs += ds[j]; *bss += dss[j]; a->n_nan += nan[j]; a->n_inf += inf[j]; }
}

// What the one-pass loops share (plain C, inlined into each): the end of a
// DEFINE_ACC block from its 16 lanes' float sums, squares and zero counts
// (again in double, masking NaN and infinities, where the sums came out
// non-finite); the lanes' extremes into the summary; the elements past the
// last whole block.
static inline __attribute__((always_inline)) void fused_block_end(struct acc * a, const float * s, const float * ss,
                                                                  const uint32_t * zc, const uint8_t * p, size_t i0,
                                                                  size_t end, bool half) {
    double bs = 0, bss = 0;
    for (int j = 0; j < LANES; j++) { bs += s[j]; bss += ss[j]; }
    if (!isfinite(bs) || !isfinite(bss)) {   // again, masking NaN and infinities
        float tmp[256 * LANES];
        if (half) tg_fp16_to_fp32_row((const tg_fp16_t *) (const void *) (p + 2 * i0), tmp, (int64_t) (end - i0));
        else memcpy(tmp, p + 4 * i0, 4 * (end - i0));
        acc_block_masked(a, tmp, end - i0, &bs, &bss);
    }
    a->sum += bs; a->sumsq += bss;
    for (int j = 0; j < LANES; j++) a->n_zero += zc[j];
}

// Where the blocks from i on must stop for the sketch's partials to fold
// (every SK_FOLD blocks); counts the blocks up to there.
static inline __attribute__((always_inline)) size_t fused_sketch_stop(struct sk * k, size_t i, size_t end) {
    if (k->nblk == SK_FOLD) sk_fold(k);
    const size_t room = (size_t) (SK_FOLD - k->nblk) * LANES;
    const size_t stop = end - i > room ? i + room : end;
    k->nblk += (uint32_t) ((stop - i) / LANES);
    return stop;
}

static inline __attribute__((always_inline)) void fused_extremes(struct acc * a, const float * mn, const float * mx) {
    double m0 = a->min, m1 = a->max;
    for (int j = 0; j < LANES; j++) { if (mn[j] < m0) m0 = mn[j]; if (mx[j] > m1) m1 = mx[j]; }
    a->min = m0; a->max = m1;
}

static inline __attribute__((always_inline)) void fused_tail(struct acc * a, const uint8_t * p, size_t i, size_t n,
                                                             bool half, bool sketch) {
    for (; i < n; i++) {   // as DEFINE_ACC's and sk_f32's
        float v;
        if (half) tg_fp16_to_fp32_row((const tg_fp16_t *) (const void *) (p + 2 * i), &v, 1);
        else memcpy(&v, p + 4 * i, 4);
        bool is_nan = v != v, is_inf = fabsf(v) == INFINITY;
        a->n_nan += is_nan; a->n_inf += is_inf; a->n_zero += v == 0.0f;
        if (v < a->min) a->min = v;
        if (v > a->max) a->max = v;
        if (!is_nan && !is_inf) { a->sum += v; a->sumsq += (double) v * v; }
        if (sketch) sk_one(a->sk, v);
    }
    a->n += n;
}

#define FUSED_INLINE static inline __attribute__((always_inline, target("avx2,avx,f16c")))

FUSED_INLINE __m256 fused_load(const uint8_t * p, size_t i, bool half) {
    if (half) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (const void *) (p + 2 * i)));
    return _mm256_loadu_ps((const float *) (const void *) (p + 4 * i));
}

// n values at p (binary32, or binary16 with `half`): what acc_f32(a, values,
// n) and, with `sketch`, sk_f32(a->sk, values, n, false) compute.
FUSED_INLINE void fused_avx2(struct acc * a, const uint8_t * p, size_t n, bool half, bool sketch) {
    struct sk * k = a->sk;
    const __m256 zero = _mm256_setzero_ps();
    const __m256i expo = _mm256_set1_epi32(0x7F800000), top = _mm256_set1_epi32((int) 0x80000000u);
    const __m256i sh0 = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
    const __m256i sh1 = _mm256_setr_epi32(23, 22, 21, 20, 19, 18, 17, 16);
    __m256 mn0 = _mm256_set1_ps((float) a->min), mn1 = mn0, mx0 = _mm256_set1_ps((float) a->max), mx1 = mx0;
    uint64_t b = sketch ? k->pos / SK_LANES : 0;
    size_t i = 0;
    while (i + LANES <= n) {
        const size_t i0 = i;
        const size_t end = i + 256 * LANES < n ? i + 256 * LANES : n - (n - i) % LANES;
        __m256 s0 = zero, s1 = zero, q0 = zero, q1 = zero;
        __m256i z0 = _mm256_setzero_si256(), z1 = z0;
        while (i < end) {
            const size_t stop = sketch ? fused_sketch_stop(k, i, end) : end;
            for (; i < stop; i += LANES) {
                const __m256 v0 = fused_load(p, i, half), v1 = fused_load(p, i + 8, half);
                z0 = _mm256_sub_epi32(z0, _mm256_castps_si256(_mm256_cmp_ps(v0, zero, _CMP_EQ_OQ)));
                z1 = _mm256_sub_epi32(z1, _mm256_castps_si256(_mm256_cmp_ps(v1, zero, _CMP_EQ_OQ)));
                mn0 = _mm256_min_ps(v0, mn0); mn1 = _mm256_min_ps(v1, mn1);   // v < mn ? v : mn
                mx0 = _mm256_max_ps(v0, mx0); mx1 = _mm256_max_ps(v1, mx1);   // v > mx ? v : mx
                s0 = _mm256_add_ps(s0, v0); s1 = _mm256_add_ps(s1, v1);
                q0 = _mm256_add_ps(q0, _mm256_mul_ps(v0, v0)); q1 = _mm256_add_ps(q1, _mm256_mul_ps(v1, v1));
                if (sketch) {   // sk_block_avx2, masked
                    const uint32_t h = sk_fields(b++);
                    const unsigned pi = sk_part_index(h);
                    float * dst = k->part[pi];
                    const __m256i sg = _mm256_set1_epi32((int) (h >> 16));
                    const __m256i w0i = _mm256_castps_si256(v0), w1i = _mm256_castps_si256(v1);
                    __m256i w0 = _mm256_xor_si256(w0i, _mm256_and_si256(_mm256_sllv_epi32(sg, sh0), top));
                    __m256i w1 = _mm256_xor_si256(w1i, _mm256_and_si256(_mm256_sllv_epi32(sg, sh1), top));
                    w0 = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(w0i, expo), expo), w0);
                    w1 = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(w1i, expo), expo), w1);
                    k->used |= 1ull << pi;
                    _mm256_store_ps(dst, _mm256_add_ps(_mm256_load_ps(dst), _mm256_castsi256_ps(w0)));
                    _mm256_store_ps(dst + 8, _mm256_add_ps(_mm256_load_ps(dst + 8), _mm256_castsi256_ps(w1)));
                }
            }
        }
        float s[LANES], ss[LANES];
        uint32_t zc[LANES];
        _mm256_storeu_ps(s, s0); _mm256_storeu_ps(s + 8, s1);
        _mm256_storeu_ps(ss, q0); _mm256_storeu_ps(ss + 8, q1);
        _mm256_storeu_si256((__m256i *) (void *) zc, z0); _mm256_storeu_si256((__m256i *) (void *) (zc + 8), z1);
        fused_block_end(a, s, ss, zc, p, i0, end, half);
    }
    if (sketch) k->pos = b * SK_LANES;
    float mn[LANES], mx[LANES];
    _mm256_storeu_ps(mn, mn0); _mm256_storeu_ps(mn + 8, mn1);
    _mm256_storeu_ps(mx, mx0); _mm256_storeu_ps(mx + 8, mx1);
    fused_extremes(a, mn, mx);
    fused_tail(a, p, i, n, half, sketch);
}

// The same pass at AVX-512: one register holds the 16 lanes the AVX2 pass
// keeps in two, so every lane sees the same operations in the same order
// (masks for the zero count, the signs and the non-finite lanes): the same bits.
#define FUSED512_INLINE static inline __attribute__((always_inline, target("avx512f,avx2,avx,f16c")))

FUSED512_INLINE __m512 fused_load512(const uint8_t * p, size_t i, bool half) {
    if (half) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (const void *) (p + 2 * i)));
    return _mm512_loadu_ps((const float *) (const void *) (p + 4 * i));
}

FUSED512_INLINE void fused_avx512(struct acc * a, const uint8_t * p, size_t n, bool half, bool sketch) {
    struct sk * k = a->sk;
    const __m512 zero = _mm512_setzero_ps();
    const __m512i expo = _mm512_set1_epi32(0x7F800000), top = _mm512_set1_epi32((int) 0x80000000u);
    const __m512i one = _mm512_set1_epi32(1);
    __m512 mn = _mm512_set1_ps((float) a->min), mx = _mm512_set1_ps((float) a->max);
    uint64_t b = sketch ? k->pos / SK_LANES : 0;
    size_t i = 0;
    while (i + LANES <= n) {
        const size_t i0 = i;
        const size_t end = i + 256 * LANES < n ? i + 256 * LANES : n - (n - i) % LANES;
        __m512 s = zero, q = zero;
        __m512i z = _mm512_setzero_si512();
        while (i < end) {
            const size_t stop = sketch ? fused_sketch_stop(k, i, end) : end;
            for (; i < stop; i += LANES) {
                const __m512 v = fused_load512(p, i, half);
                z = _mm512_mask_add_epi32(z, _mm512_cmp_ps_mask(v, zero, _CMP_EQ_OQ), z, one);
                mn = _mm512_min_ps(v, mn);   // v < mn ? v : mn
                mx = _mm512_max_ps(v, mx);   // v > mx ? v : mx
                s = _mm512_add_ps(s, v);
                q = _mm512_add_ps(q, _mm512_mul_ps(v, v));
                if (sketch) {   // lane j's sign: bit 16 + j of the packed fields; non-finite lanes add +0
                    const uint32_t h = sk_fields(b++);
                    const unsigned pi = sk_part_index(h);
                    float * dst = k->part[pi];
                    const __m512i wi = _mm512_castps_si512(v);
                    const __m512i w = _mm512_mask_xor_epi32(wi, (__mmask16) (h >> 16), wi, top);
                    const __mmask16 fin = _mm512_cmpneq_epi32_mask(_mm512_and_si512(wi, expo), expo);
                    k->used |= 1ull << pi;
                    _mm512_store_ps(dst, _mm512_add_ps(_mm512_load_ps(dst), _mm512_castsi512_ps(_mm512_maskz_mov_epi32(fin, w))));
                }
            }
        }
        float sv[LANES], ssv[LANES];
        uint32_t zc[LANES];
        _mm512_storeu_ps(sv, s);
        _mm512_storeu_ps(ssv, q);
        _mm512_storeu_si512((void *) zc, z);
        fused_block_end(a, sv, ssv, zc, p, i0, end, half);
    }
    if (sketch) k->pos = b * SK_LANES;
    float mnv[LANES], mxv[LANES];
    _mm512_storeu_ps(mnv, mn);
    _mm512_storeu_ps(mxv, mx);
    fused_extremes(a, mnv, mxv);
    fused_tail(a, p, i, n, half, sketch);
}

__attribute__((target("avx2,avx,f16c"))) static void fused_f32(struct acc * a, const uint8_t * p, size_t n) { fused_avx2(a, p, n, false, true); }
__attribute__((target("avx2,avx,f16c"))) static void fused_f16(struct acc * a, const uint8_t * p, size_t n) { fused_avx2(a, p, n, true, true); }
__attribute__((target("avx2,avx,f16c"))) static void fused_f16_nosk(struct acc * a, const uint8_t * p, size_t n) { fused_avx2(a, p, n, true, false); }
__attribute__((target("avx512f,avx2,avx,f16c"))) static void fused512_f32(struct acc * a, const uint8_t * p, size_t n) { fused_avx512(a, p, n, false, true); }
__attribute__((target("avx512f,avx2,avx,f16c"))) static void fused512_f16(struct acc * a, const uint8_t * p, size_t n) { fused_avx512(a, p, n, true, true); }
__attribute__((target("avx512f,avx2,avx,f16c"))) static void fused512_f16_nosk(struct acc * a, const uint8_t * p, size_t n) { fused_avx512(a, p, n, true, false); }
#endif

// Halves: the engine's row converter (F16C where the CPU has it) into a
// small buffer that stays in L1, then the float loop; at AVX2 and above the
// one-pass loop, a CHUNK at a time (the same points of rounding to double).
static void acc_f16(struct acc * a, const uint8_t * p, size_t n) {
    float tmp[CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
#if defined(__x86_64__)
        if (a->path == 2 && !a->sk) { fused512_f16_nosk(a, p + 2 * i, k); continue; }
        if (a->path == 2 && a->sk->pos % SK_LANES == 0) { fused512_f16(a, p + 2 * i, k); continue; }
        if (a->path >= 1 && !a->sk) { fused_f16_nosk(a, p + 2 * i, k); continue; }
        if (a->path >= 1 && a->sk->pos % SK_LANES == 0) { fused_f16(a, p + 2 * i, k); continue; }
#endif
        tg_fp16_to_fp32_row((const tg_fp16_t *) (const void *) (p + 2 * i), tmp, (int64_t) k);
        const uint64_t bad = acc_bad(a);
        acc_f32(a, (const uint8_t *) tmp, k);
        if (a->sk) sk_floats(a->sk, tmp, k, acc_bad(a) == bad);
    }
}

// Floats already converted (the generic path for block types).
static void acc_floats(struct acc * a, const float * x, size_t n) {
    const uint64_t bad = acc_bad(a);
    acc_f32(a, (const uint8_t *) x, n);
    if (a->sk) sk_floats(a->sk, x, n, acc_bad(a) == bad);
}

// The sketch of bf16 elements: converted a chunk at a time.
static void sk_bf16(struct sk * k, const uint8_t * p, size_t n, bool fin) {
    float tmp[CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? n - i : CHUNK;
        for (size_t j = 0; j < m; j++) tmp[j] = ld_bf16(p, i + j);
        sk_floats(k, tmp, m, fin);
    }
}

static void acc_double(struct acc * a, double v) {
    if (a->sk) sk_one(a->sk, v);
    a->n++;
    if (v != v) { a->n_nan++; return; }
    if (v < a->min) a->min = v;
    if (v > a->max) a->max = v;
    if (isinf(v)) { a->n_inf++; return; }
    if (v == 0) a->n_zero++;
    a->sum += v; a->sumsq += v * v;
}

static void summary_row(const uint8_t * p, size_t nbytes, void * user) {
    struct acc * a = user;
    size_t nblk = nbytes / a->ts;
    int64_t n = (int64_t) nblk * a->bs;
    const uint64_t bad = acc_bad(a);
    switch (a->type) {
    case TG_TYPE_F32:
#if defined(__x86_64__)
        if (a->path == 2 && a->sk && a->sk->pos % SK_LANES == 0) { fused512_f32(a, p, (size_t) n); return; }
        if (a->path >= 1 && a->sk && a->sk->pos % SK_LANES == 0) { fused_f32(a, p, (size_t) n); return; }
#endif
        acc_f32(a, p, (size_t) n);
        if (a->sk) sk_f32(a->sk, p, (size_t) n, acc_bad(a) == bad);
        return;
    case TG_TYPE_BF16:
        acc_bf16(a, p, (size_t) n);
        if (a->sk) sk_bf16(a->sk, p, (size_t) n, acc_bad(a) == bad);
        return;
    case TG_TYPE_F16: acc_f16(a, p, (size_t) n); return;
    case TG_TYPE_F64: for (int64_t i = 0; i < n; i++) { double v; memcpy(&v, p + 8 * i, 8); acc_double(a, v); } return;
    case TG_TYPE_I8:  for (int64_t i = 0; i < n; i++) acc_double(a, (int8_t) p[i]); return;
    case TG_TYPE_I16: for (int64_t i = 0; i < n; i++) { int16_t v; memcpy(&v, p + 2 * i, 2); acc_double(a, v); } return;
    case TG_TYPE_I32: for (int64_t i = 0; i < n; i++) { int32_t v; memcpy(&v, p + 4 * i, 4); acc_double(a, v); } return;
    case TG_TYPE_I64: for (int64_t i = 0; i < n; i++) { int64_t v; memcpy(&v, p + 8 * i, 8); acc_double(a, (double) v); } return;
    default: break;
    }
    const struct tg_type_traits * tt = tg_type_traits((enum tg_type) a->type);
    if (!tt || !tt->to_float) return;
    // convert whole blocks, CHUNK elements at a time
    int64_t blk_per = CHUNK / a->bs > 0 ? CHUNK / a->bs : 1;
    float tmp[CHUNK > 256 ? CHUNK : 256];
    uint8_t src[CHUNK * 2 + 64];
    for (size_t b = 0; b < nblk; b += (size_t) blk_per) {
        size_t k = nblk - b < (size_t) blk_per ? nblk - b : (size_t) blk_per;
        if (k * a->ts > sizeof(src) || (int64_t) k * a->bs > (int64_t) (sizeof(tmp) / sizeof(float))) return;
        memcpy(src, p + b * a->ts, k * a->ts);   // aligned copy for the converter
        tt->to_float(src, tmp, (int64_t) k * a->bs);
        acc_floats(a, tmp, (size_t) k * (size_t) a->bs);
    }
}

static bool summary_type_ok(int type, const struct layout * L) {
    if (type == TG_TYPE_F32 || type == TG_TYPE_F64 || type == TG_TYPE_I8 || type == TG_TYPE_I16 ||
        type == TG_TYPE_I32 || type == TG_TYPE_I64) return true;
    const struct tg_type_traits * tt = tg_type_traits((enum tg_type) type);
    return tt && tt->to_float && L->bs <= 256 && L->ts <= 2 * CHUNK;
}

static void summary_finish(const struct acc * a, struct tg_trace_summary * s) {
    uint64_t fin = a->n - a->n_nan - a->n_inf;
    s->n_elem = a->n;
    s->n_nan = a->n_nan; s->n_inf = a->n_inf; s->n_zero = a->n_zero;
    s->min = a->n > a->n_nan ? a->min : NAN;
    s->max = a->n > a->n_nan ? a->max : NAN;
    s->mean = fin ? a->sum / (double) fin : 0.0;
    s->rms = fin ? sqrt(a->sumsq / (double) fin) : 0.0;
}

// One pass for both: each piece is hashed, then summarized while it is in L1.
struct both { XXH3_state_t * h; struct acc * a; };

static void both_row(const uint8_t * p, size_t n, void * user) {
    struct both * b = user;
    size_t piece = STAGE / b->a->ts * b->a->ts;
    for (size_t at = 0; at < n; at += piece) {
        size_t k = n - at < piece ? n - at : piece;
        if (b->h) xxh3_update(b->h, p + at, k, b->a->path);
        summary_row(p + at, k, b->a);
    }
}

// ---- views: gathered whole, in memory order ------------------------------------
// A strided view (a head's slice of a KV cache: rows of 64 values 512 bytes
// apart, read head after head) streamed through the staging buffer in
// logical order reads its memory in several strided passes. Gathered whole
// instead, rows in the order they lie in memory into their logical places,
// its memory is read once, front to back; it is then summarized like a
// contiguous tensor (the same pieces, so the same bits as its contiguous
// copy). Up to GATHER_MAX bytes, into a buffer kept per thread.
#define GATHER_MAX (8u << 20)

static pthread_key_t gather_key;
static bool gather_key_ok;   // else views stream through the staging buffer as before
static pthread_once_t gather_once = PTHREAD_ONCE_INIT;
struct gather_buf { uint8_t * p; size_t cap; };
static void gather_free(void * v) { struct gather_buf * g = v; if (g) { free(g->p); free(g); } }
static void gather_key_init(void) { gather_key_ok = pthread_key_create(&gather_key, gather_free) == 0; }

static uint8_t * gather_space(size_t n) {
    pthread_once(&gather_once, gather_key_init);
    if (!gather_key_ok) return NULL;
    struct gather_buf * g = pthread_getspecific(gather_key);
    if (!g) {
        g = calloc(1, sizeof(*g));
        if (!g || pthread_setspecific(gather_key, g) != 0) { free(g); return NULL; }
    }
    if (g->cap < n) {
        uint8_t * q = realloc(g->p, n);
        if (!q) return NULL;
        g->p = q;
        g->cap = n;
    }
    return g->p;
}

// Dense rows (nb[0] == one block) copied to dst in logical order, visiting
// dims 1..3 from the smallest source stride outwards. False if the rows are
// not dense.
static bool gather_rows(const uint8_t * data, const int64_t ne[4], const size_t nb[4], const struct layout * L,
                        uint8_t * dst) {
    if (!L->dense_rows) return false;
    int d[3] = { 1, 2, 3 };   // loop order, innermost first
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            if (nb[d[b]] < nb[d[a]] || (nb[d[b]] == nb[d[a]] && d[b] < d[a])) { int t = d[a]; d[a] = d[b]; d[b] = t; }
    const size_t rb = L->row_bytes;
    size_t dstep[4];   // destination bytes per index step of each dim
    dstep[1] = rb; dstep[2] = rb * (size_t) ne[1]; dstep[3] = dstep[2] * (size_t) ne[2];
    const int a = d[0], b = d[1], c = d[2];
    for (int64_t ic = 0; ic < ne[c]; ic++)
    for (int64_t ib = 0; ib < ne[b]; ib++) {
        const uint8_t * src = data + (size_t) ic * nb[c] + (size_t) ib * nb[b];
        uint8_t * out = dst + (size_t) ic * dstep[c] + (size_t) ib * dstep[b];
        if (rb >= 32 && rb <= 256) {   // short rows (a head's slice): inlined 32-byte moves
            for (int64_t ia = 0; ia < ne[a]; ia++, src += nb[a], out += dstep[a]) {
                size_t o = 0;
                for (; o + 32 <= rb; o += 32) memcpy(out + o, src + o, 32);
                if (o < rb) memcpy(out + rb - 32, src + rb - 32, 32);
            }
        } else {
            for (int64_t ia = 0; ia < ne[a]; ia++, src += nb[a], out += dstep[a]) memcpy(out, src, rb);
        }
    }
    return true;
}

bool tg_trace_hash_summarize_sketch(const void * data, int type, const int64_t ne[4], const size_t nb[4],
                                    uint64_t * hash, struct tg_trace_summary * s, double * sketch) {
    if (hash) *hash = 0;
    if (s) memset(s, 0, sizeof(*s));
    if (sketch) memset(sketch, 0, TG_TRACE_SKETCH_N * sizeof(*sketch));
    struct layout L;
    if (!data || !ne || !nb || !get_layout(type, ne, nb, &L)) return false;
    if (!s) { if (hash) *hash = tg_trace_hash_data(data, type, ne, nb); return !sketch; }
    if (!summary_type_ok(type, &L)) return false;
    static _Thread_local struct sk tls_sk;   // partials all zero between calls
    static _Thread_local bool tls_sk_ready;
    struct sk * k = &tls_sk;
    if (sketch) { sk_init(k, tls_sk_ready); tls_sk_ready = true; }
    struct acc a = { .type = type, .bs = L.bs, .ts = L.ts, .min = INFINITY, .max = -INFINITY, .sk = sketch ? k : NULL,
                     .path = sketch ? k->path : sk_path() };
    size_t total = L.row_bytes * (size_t) ne[1] * (size_t) ne[2] * (size_t) ne[3];
    if (!L.contiguous && total > STAGE && total <= GATHER_MAX) {
        uint8_t * buf = gather_space(total);
        if (buf && gather_rows(data, ne, nb, &L, buf)) {   // now a contiguous tensor of the same shape
            data = buf;
            L.contiguous = true;
        }
    }
    if (L.contiguous && total <= STAGE) {   // small and dense (most activations): no streaming state
        if (hash) *hash = xxh3_64(data, total, a.path);
        if (total) summary_row(data, total, &a);
    } else {
        XXH3_state_t st;
        if (hash) XXH3_64bits_reset(&st);
        struct both b = { hash ? &st : NULL, &a };
        for_each_row(data, ne, nb, &L, both_row, &b);
        if (hash) *hash = XXH3_64bits_digest(&st);
    }
    summary_finish(&a, s);
    if (sketch) sk_finish(k, sketch);
    return true;
}

bool tg_trace_hash_summarize(const void * data, int type, const int64_t ne[4], const size_t nb[4],
                             uint64_t * hash, struct tg_trace_summary * s) {
    return tg_trace_hash_summarize_sketch(data, type, ne, nb, hash, s, NULL);
}

bool tg_trace_summarize_data(const void * data, int type, const int64_t ne[4], const size_t nb[4],
                             struct tg_trace_summary * s) {
    return s && tg_trace_hash_summarize(data, type, ne, nb, NULL, s);
}

// ---- gather -----------------------------------------------------------------

struct gather { uint8_t * dst; size_t at; };

static void gather_row(const uint8_t * p, size_t n, void * user) {
    struct gather * g = user;
    memcpy(g->dst + g->at, p, n);
    g->at += n;
}

size_t tg_trace_gather_data(const void * data, int type, const int64_t ne[4], const size_t nb[4],
                            void * dst, size_t cap) {
    struct layout L;
    if (!data || !ne || !nb || !get_layout(type, ne, nb, &L)) return 0;
    size_t total = L.row_bytes * (size_t) ne[1] * (size_t) ne[2] * (size_t) ne[3];
    if (total > cap || !dst) return total;
    if (L.contiguous) { memcpy(dst, data, total); return total; }
    if (gather_rows(data, ne, nb, &L, dst)) return total;   // dense rows: memory read front to back
    struct gather g = { dst, 0 };
    for_each_row(data, ne, nb, &L, gather_row, &g);
    return total;
}
