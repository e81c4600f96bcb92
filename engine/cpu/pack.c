// pack.c - packed weights: an interleaved copy of a Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K or IQ4_XS weight matrix that the AVX-512
// VNNI matrix kernels read with whole-vector loads (Q4_0 also the AVX2 ones,
// at the end of this file).
//
// Layout: the rows in groups of 16; a group is its nb blocks in order, each
//   uint16 d[16]            the 16 rows' f16 scales
//   uint8  q[C][16][4]      chunk c: bytes 4c..4c+3 of each row's quants,
//                           row r at 4r (one 32-bit lane per row)
// with C = 4 for Q4_0 (its 16 bytes of nibbles, as stored) and C = 8 for
// Q8_0 (its 32 quants, each + 128: unsigned, as vpdpbusd takes them). A
// block of a group is 16 blocks of the weight (288 or 544 bytes), so a
// group is as long as its 16 rows. One vpdpbusd per chunk (two for Q4_0:
// the low and the high nibbles) leaves every row's exact int32 block sum in
// its own lane: no horizontal sums, the 16 scales in one load.
//
// Q4_K (super-blocks of 256, vec-kquant.c's arithmetic): a group's
// super-block is d[16], dmin[16] (f16), the 12 scale bytes as three 4-byte
// chunks [3][16][4], then the 128 bytes of nibbles as 32 chunks [32][16][4]
// (2304 bytes, 16 super-blocks); the 6-bit scales and mins are unpacked in
// registers, 16 rows at a time. Q5_K: the same with the 32 bytes of fifth
// bits as 8 chunks, each followed by the nibble chunk read with it first
// (qh chunk c, qs chunk c for c = 0..7, then qs chunks 8..31: the order the
// kernel first reads them; 2816 bytes). Q6_K: d[16] (f16), the 16 int8 scales as
// four chunks [4][16][4], then for p = 0..15 the chunks of ql bytes 64 c + 4 k,
// ql bytes 64 c + 32 + 4 k and qh bytes 32 c + 4 k (c = p / 8, k = p % 8): the
// order the kernel reads them, one sequential stream (3360 bytes; with the
// low nibbles and the high bits in regions of their own the first read of
// the high bits waited on memory: tg64 of the 100m Q6_K model fell by half);
// the 6-bit levels are put together in registers.
//
// Q5_0: d[16], the fifth bits as one chunk [16][4] with their order changed
// (bit 2c + h of byte i: the bit of element 16 h + 4 c + i, so one shift
// brings those of nibble chunk c's low (h = 0) or high (h = 1) nibbles to bit
// 4 of their bytes), then the 4 nibble chunks as Q4_0's (352 bytes); levels
// 0..31, the sums starting from -16 * sum(y).
//
// Q4_1 / Q5_1: d[16], m[16] (f16), for Q5_1 the fifth bits as Q5_0's, then
// the 4 nibble chunks (320 / 384 bytes); their kernel keeps vec-legacy.c's
// reduction: per row 8 f32 accumulators (lane u: elements 4u..4u+3 of each
// block, multiply-added with dx * dy), the offsets m * s multiply-added apart,
// the 8-lane tree and the offset sum at the end - 9 registers a column, so
// two columns a pass.
//
// IQ4_NL is laid out as Q4_0 (the same block: d and 16 bytes of nibbles);
// its kernel turns a nibble into its table value + 128 (vpshufb), unsigned
// like Q8_0's, the sums starting from -128 * sum(y). IQ4_XS: a group's
// super-block is d[16] (f16), scales_h[16] (uint16), the scales_l bytes as
// one chunk [16][4], then the 128 bytes of nibbles as 32 chunks [32][16][4]
// (2176 bytes); nibbles become table values + 128 the same way, and each
// 32-group's sum starts from -128 times its two activation bsums.
//
// Q3_K: a group's super-block is its 12 scale bytes as three chunks
// [3][16][4], then hmask chunk c and qs chunk c for c = 0..7, then qs chunks
// 8..15 (the order the kernel first reads them), then d[16] (1760 bytes).
// Q2_K: the 16 scale bytes as four chunks, the 16 qs chunks, d[16], dmin[16]
// (1344 bytes). Their 2-bit levels (and Q3_K's third bit) are put together in
// registers, 16 rows at a time.
//
// Every output element is the same as the unpacked kernels' (vec-quant.c
// for the 32-blocks against Q8_0, vec-kquant.c for the super-blocks,
// vec-legacy.c for Q4_1 / Q5_1): for the Q8_0 ones per block the exact
// integer sum s, then acc = fma((float) s, dx * dy, acc) block after block.
// Q4_0's nibbles carry +8, Q5_0's levels +16, Q8_0's packed quants and
// IQ4_NL's table values +128; the sums start from -8, -16 or -128 * sum(y),
// which the matrix driver computes with the activation rows (tg_mm_pack_ysums).
//
// The weight's own bytes are not touched: every other reader (other ops,
// traces, dumps, other backends, lower SIMD levels) reads them as before. The
// copy lives in memory the caller owns, found through w->extra (its header
// names the data it was made from: a weight moved since is not used packed);
// the CPU buffer's set/memset/copy calls make it again (cpu-backend.c).
#include "vec-impl.h"

#include "tg/cpu.h"

// The K-quant sums are added as vec-kquant.c adds them: a product, then an
// addition, never fused.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include <stddef.h>
#include <string.h>

enum { TG_PACK_MAGIC = 0x4b504754 };   // "TGPK"

struct tg_cpu_pack_hdr {
    uint32_t     magic;
    int32_t      type;      // enum tg_type
    const void * src;       // w->data when it was packed
    int64_t      rows, nb;  // rows (a multiple of 16), blocks per row
    size_t       gstride;   // bytes of a group of 16 rows
    size_t       size;      // bytes of the packed data (after the header)
};
#define TG_PACK_HDR 64   // header bytes before the data (64-aligned data)
_Static_assert(sizeof(struct tg_cpu_pack_hdr) <= TG_PACK_HDR, "pack header");
_Static_assert(offsetof(tg_block_q4_K, dmin) == offsetof(tg_block_q5_K, dmin) &&
               offsetof(tg_block_q4_K, scales) == offsetof(tg_block_q5_K, scales), "Q4_K / Q5_K heads");

// Bytes of one block of a 16-row group.
static size_t pack_gblock(enum tg_type t) { return 16 * tg_type_size(t); }

// Where chunk c (0..31) of a packed Q5_K super-block's nibbles is: the first 8
// each after the fifth-bit chunk of the same bytes, the rest in order.
static inline size_t pk_q5K_qs(int c) { return c < 8 ? 256 + 128 * (size_t) c + 64 : 1280 + 64 * (size_t) (c - 8); }

// Whether this CPU's level has packed kernels for type t: AVX-512 VNNI for
// every packable type; AVX2 for Q4_0 (its nibbles through maddubs; the
// others' signed or + 128 levels would overflow maddubs' int16 sums).
static bool pack_kernel_level(enum tg_type t) {
#ifdef TG_X86
    const int level = tg_cpu_simd_level();
    return level >= TG_SIMD_AVX512VNNI || (level >= TG_SIMD_AVX2 && t == TG_TYPE_Q4_0);
#else
    (void) t;
    return false;
#endif
}

// Whether w's layout can be packed at all (any SIMD level).
static bool pack_shape_ok(const struct tg_tensor * w) {
    if (!w || !w->data || (w->type != TG_TYPE_Q4_0 && w->type != TG_TYPE_Q5_0 && w->type != TG_TYPE_Q8_0 &&
                           w->type != TG_TYPE_Q4_1 && w->type != TG_TYPE_Q5_1 &&
                           w->type != TG_TYPE_IQ4_NL &&
                           w->type != TG_TYPE_Q4_K && w->type != TG_TYPE_Q5_K && w->type != TG_TYPE_Q6_K &&
                           w->type != TG_TYPE_IQ4_XS && w->type != TG_TYPE_Q2_K && w->type != TG_TYPE_Q3_K)) return false;
    if (w->ne[0] <= 0 || w->ne[0] % tg_blck_size(w->type) || w->ne[1] <= 0 || w->ne[1] % 16 || w->ne[2] != 1 ||
        w->ne[3] != 1)
        return false;
    return w->nb[0] == tg_type_size(w->type) && w->nb[1] == tg_row_size(w->type, w->ne[0]);
}

size_t tg_cpu_pack_size(const struct tg_tensor * w) {
    if (!pack_shape_ok(w) || !pack_kernel_level(w->type)) return 0;
    return TG_PACK_HDR + (size_t) (w->ne[1] / 16) * (size_t) (w->ne[0] / tg_blck_size(w->type)) * pack_gblock(w->type);
}

// The fifth bits of a Q5_0 / Q5_1 block (bit e: element e) reordered: bit 2c
// + h of byte i is element 16 h + 4 c + i's, where the kernels' one shift
// for nibble chunk c's low (h = 0) or high (h = 1) nibbles finds it.
static uint32_t pack_q5_bits(const uint8_t qh4[4]) {
    uint32_t qh, hp = 0;
    memcpy(&qh, qh4, 4);
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < 4; c++)
            for (int hf = 0; hf < 2; hf++) hp |= ((qh >> (16 * hf + 4 * c + i)) & 1u) << (8 * i + 2 * c + hf);
    return hp;
}

// Writes the packed data of w (hdr's shape) after hdr.
static void pack_fill(const struct tg_tensor * w, struct tg_cpu_pack_hdr * h) {
    char * out = (char *) h + TG_PACK_HDR;
    const size_t gb = pack_gblock(w->type), rb = w->nb[1];
    const bool q4 = w->type == TG_TYPE_Q4_0 || w->type == TG_TYPE_IQ4_NL;   // the same block layout
    const int chunks = q4 ? 4 : 8;
    for (int64_t g = 0; g < h->rows / 16; g++)
        for (int64_t b = 0; b < h->nb; b++) {
            char * o = out + (size_t) g * h->gstride + (size_t) b * gb;
            for (int r = 0; r < 16 && (w->type == TG_TYPE_Q4_K || w->type == TG_TYPE_Q5_K); r++) {
                // the two share d, dmin, scales and qs; Q5_K adds qh (fields at the same offsets but qs)
                const char * row = (const char *) w->data + (size_t) (16 * g + r) * rb + (size_t) b * tg_type_size(w->type);
                const tg_block_q4_K * x4 = (const tg_block_q4_K *) row;
                const tg_block_q5_K * x5 = (const tg_block_q5_K *) row;
                const bool q5 = w->type == TG_TYPE_Q5_K;
                memcpy(o + 2 * r, &x4->d, 2);
                memcpy(o + 32 + 2 * r, &x4->dmin, 2);
                for (int c = 0; c < 3; c++) memcpy(o + 64 + 64 * c + 4 * r, x4->scales + 4 * c, 4);
                for (int c = 0; q5 && c < 8; c++) memcpy(o + 256 + 128 * c + 4 * r, x5->qh + 4 * c, 4);
                for (int c = 0; c < 32; c++)
                    memcpy(o + (q5 ? pk_q5K_qs(c) : 256 + 64 * (size_t) c) + 4 * r, (q5 ? x5->qs : x4->qs) + 4 * c, 4);
            }
            for (int r = 0; r < 16 && w->type == TG_TYPE_Q6_K; r++) {
                const tg_block_q6_K * x = (const tg_block_q6_K *) ((const char *) w->data + (size_t) (16 * g + r) * rb) + b;
                memcpy(o + 2 * r, &x->d, 2);
                for (int c = 0; c < 4; c++) memcpy(o + 32 + 64 * c + 4 * r, x->scales + 4 * c, 4);
                for (int p = 0; p < 16; p++) {   // in the order the kernel reads them: ql, ql + 32, qh chunks
                    const int cc = p / 8, k = p % 8;
                    memcpy(o + 288 + 192 * p + 4 * r, x->ql + 64 * cc + 4 * k, 4);
                    memcpy(o + 288 + 192 * p + 64 + 4 * r, x->ql + 64 * cc + 32 + 4 * k, 4);
                    memcpy(o + 288 + 192 * p + 128 + 4 * r, x->qh + 32 * cc + 4 * k, 4);
                }
            }
            for (int r = 0; r < 16 && w->type == TG_TYPE_Q5_0; r++) {
                const tg_block_q5_0 * x = (const tg_block_q5_0 *) ((const char *) w->data + (size_t) (16 * g + r) * rb) + b;
                const uint32_t hp = pack_q5_bits(x->qh);
                memcpy(o + 2 * r, &x->d, 2);
                memcpy(o + 32 + 4 * r, &hp, 4);
                for (int c = 0; c < 4; c++) memcpy(o + 96 + 64 * c + 4 * r, x->qs + 4 * c, 4);
            }
            for (int r = 0; r < 16 && (w->type == TG_TYPE_Q4_1 || w->type == TG_TYPE_Q5_1); r++) {
                const char * row = (const char *) w->data + (size_t) (16 * g + r) * rb;
                const bool q5 = w->type == TG_TYPE_Q5_1;
                const tg_block_q4_1 * x4 = (const tg_block_q4_1 *) row + b;
                const tg_block_q5_1 * x5 = (const tg_block_q5_1 *) row + b;
                memcpy(o + 2 * r, q5 ? &x5->d : &x4->d, 2);
                memcpy(o + 32 + 2 * r, q5 ? &x5->m : &x4->m, 2);
                if (q5) { const uint32_t hp = pack_q5_bits(x5->qh); memcpy(o + 64 + 4 * r, &hp, 4); }
                for (int c = 0; c < 4; c++) memcpy(o + (q5 ? 128 : 64) + 64 * c + 4 * r, (q5 ? x5->qs : x4->qs) + 4 * c, 4);
            }
            for (int r = 0; r < 16 && w->type == TG_TYPE_Q3_K; r++) {
                const tg_block_q3_K * x = (const tg_block_q3_K *) ((const char *) w->data + (size_t) (16 * g + r) * rb) + b;
                for (int c = 0; c < 3; c++) memcpy(o + 64 * c + 4 * r, x->scales + 4 * c, 4);
                for (int c = 0; c < 8; c++) {
                    memcpy(o + 192 + 128 * c + 4 * r, x->hmask + 4 * c, 4);
                    memcpy(o + 192 + 128 * c + 64 + 4 * r, x->qs + 4 * c, 4);
                }
                for (int c = 8; c < 16; c++) memcpy(o + 1216 + 64 * (c - 8) + 4 * r, x->qs + 4 * c, 4);
                memcpy(o + 1728 + 2 * r, &x->d, 2);
            }
            for (int r = 0; r < 16 && w->type == TG_TYPE_Q2_K; r++) {
                const tg_block_q2_K * x = (const tg_block_q2_K *) ((const char *) w->data + (size_t) (16 * g + r) * rb) + b;
                for (int c = 0; c < 4; c++) memcpy(o + 64 * c + 4 * r, x->scales + 4 * c, 4);
                for (int c = 0; c < 16; c++) memcpy(o + 256 + 64 * c + 4 * r, x->qs + 4 * c, 4);
                memcpy(o + 1280 + 2 * r, &x->d, 2);
                memcpy(o + 1312 + 2 * r, &x->dmin, 2);
            }
            for (int r = 0; r < 16 && w->type == TG_TYPE_IQ4_XS; r++) {
                const tg_block_iq4_xs * x = (const tg_block_iq4_xs *) ((const char *) w->data + (size_t) (16 * g + r) * rb) + b;
                memcpy(o + 2 * r, &x->d, 2);
                memcpy(o + 32 + 2 * r, &x->scales_h, 2);
                memcpy(o + 64 + 4 * r, x->scales_l, 4);
                for (int c = 0; c < 32; c++) memcpy(o + 128 + 64 * c + 4 * r, x->qs + 4 * c, 4);
            }
            for (int r = 0; r < 16 && (q4 || w->type == TG_TYPE_Q8_0); r++) {
                const char * row = (const char *) w->data + (size_t) (16 * g + r) * rb;
                const uint8_t * qs;
                tg_fp16_t d;
                if (q4) {
                    const tg_block_q4_0 * x = (const tg_block_q4_0 *) row + b;
                    d = x->d; qs = x->qs;
                } else {
                    const tg_block_q8_0 * x = (const tg_block_q8_0 *) row + b;
                    d = x->d; qs = (const uint8_t *) x->qs;
                }
                memcpy(o + 2 * r, &d, 2);
                const uint32_t flip = q4 ? 0 : 0x80808080u;   // Q8_0: + 128, unsigned
                for (int c = 0; c < chunks; c++) {
                    uint32_t v;
                    memcpy(&v, qs + 4 * c, 4);
                    v ^= flip;
                    memcpy(o + 32 + 64 * c + 4 * r, &v, 4);
                }
            }
        }
}

enum tg_status tg_cpu_pack(struct tg_tensor * w, void * mem, size_t size) {
    if (!w || !mem) return tg_error(TG_ERR_INVALID_ARG, "tg_cpu_pack: %s is NULL", w ? "mem" : "the weight");
    const size_t need = tg_cpu_pack_size(w);
    if (!need)
        return tg_error(TG_ERR_UNSUPPORTED, "tg_cpu_pack: '%s' (%s, %lld x %lld) cannot be packed here "
                        "(Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/IQ4_NL/Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/IQ4_XS matrices with rows in multiples of 16, dense, on a CPU with "
                        "AVX-512 VNNI, or Q4_0 with AVX2; this one: %s)",
                        tg_cpu_tname(w), tg_type_name(w->type), (long long) w->ne[0], (long long) w->ne[1],
                        tg_cpu_simd_name());
    if (size < need)
        return tg_error(TG_ERR_INVALID_ARG, "tg_cpu_pack: '%s' needs %zu bytes, %zu given", tg_cpu_tname(w), need, size);
    if ((uintptr_t) mem % 64)
        return tg_error(TG_ERR_INVALID_ARG, "tg_cpu_pack: memory for '%s' is not 64-byte aligned", tg_cpu_tname(w));
    struct tg_cpu_pack_hdr * h = mem;
    *h = (struct tg_cpu_pack_hdr) {
        .magic = TG_PACK_MAGIC, .type = (int32_t) w->type, .src = w->data, .rows = w->ne[1],
        .nb = w->ne[0] / tg_blck_size(w->type), .gstride = (size_t) (w->ne[0] / tg_blck_size(w->type)) * pack_gblock(w->type),
        .size = need - TG_PACK_HDR,
    };
    pack_fill(w, h);
    w->extra = h;
    return TG_OK;
}

// w's pack header when w->extra is one (whether or not it is still valid).
static struct tg_cpu_pack_hdr * pack_hdr(const struct tg_tensor * w) {
    struct tg_cpu_pack_hdr * h = w ? w->extra : NULL;
    return h && h->magic == TG_PACK_MAGIC ? h : NULL;
}

void tg_cpu_unpack(struct tg_tensor * w) {
    if (pack_hdr(w)) w->extra = NULL;
}

const char * tg_mm_packed(const struct tg_tensor * a, size_t * gstride) {
    const struct tg_cpu_pack_hdr * h = pack_hdr(a);
    if (!h || h->src != a->data || h->type != (int32_t) a->type || h->rows != a->ne[1] ||
        h->nb * tg_blck_size(a->type) != a->ne[0] || !pack_shape_ok(a)) return NULL;
    *gstride = h->gstride;
    return (const char *) h + TG_PACK_HDR;
}

bool tg_cpu_is_packed(const struct tg_tensor * w) {
    size_t gs;
    return w && tg_mm_packed(w, &gs) != NULL;
}

void tg_cpu_pack_refresh(struct tg_tensor * t) {
    struct tg_tensor * w = t && t->view_src ? t->view_src : t;
    struct tg_cpu_pack_hdr * h = pack_hdr(w);
    if (!h) return;
    if (h->src == w->data && pack_shape_ok(w)) pack_fill(w, h);
    else w->extra = NULL;   // moved or reshaped: the copy no longer describes it
}

void tg_mm_pack_ysums(enum tg_type wtype, const tg_block_q8_0 * y, int64_t nb, int32_t * ys, float * dy) {
    const int mul = wtype == TG_TYPE_Q4_0 ? 8 : wtype == TG_TYPE_Q5_0 ? 16 : 128;
    for (int64_t b = 0; b < nb; b++) {
        int32_t s = 0;
        for (int e = 0; e < TG_QK8_0; e++) s += y[b].qs[e];
        ys[b] = mul * s;
        dy[b] = tg_fp16_to_fp32(y[b].d);
    }
}

#ifdef TG_X86
#define TG_PK_TARGET "avx512f,avx512bw,avx512vl,avx512vnni,avx2,avx,fma,f16c"
#define TG_PK_INLINE static inline __attribute__((always_inline, target(TG_PK_TARGET)))
#define TG_PK __attribute__((target(TG_PK_TARGET)))

// Q5_0 / Q5_1: the fifth bits of nibble chunk ch (bits 2 ch, 2 ch + 1 of each
// byte of qh, pack_q5_bits) to bit 4 of its low and high nibbles' bytes.
TG_PK_INLINE void pk_q5_or(const __m512i qh, const int ch, __m512i * lo, __m512i * hi) {
    const __m512i m10 = _mm512_set1_epi8(0x10);
    const __m512i hl = 2 * ch <= 4 ? _mm512_slli_epi32(qh, 4 - 2 * ch) : _mm512_srli_epi32(qh, 2 * ch - 4);
    const __m512i hh = 2 * ch + 1 <= 4 ? _mm512_slli_epi32(qh, 3 - 2 * ch) : _mm512_srli_epi32(qh, 2 * ch - 3);
    *lo = _mm512_ternarylogic_epi32(*lo, hl, m10, 0xF8);   // lo | (hl & 0x10)
    *hi = _mm512_ternarylogic_epi32(*hi, hh, m10, 0xF8);
}

// Q4_1 / Q5_1 (Q5): 16 rows x NC (1..2) columns over nb blocks against Q8_1
// activation rows, vec-legacy.c's arithmetic (the header above).
TG_PK_INLINE void pk_group_lg(const int NC, const bool Q5, int64_t nb, const char * x,
                              const tg_block_q8_1 * const * y, float * c, size_t ldc) {
    const size_t gb = Q5 ? 16 * sizeof(tg_block_q5_1) : 16 * sizeof(tg_block_q4_1);
    const size_t q0 = Q5 ? 128 : 64;
    const __m512i m4 = _mm512_set1_epi8(0x0F), zero = _mm512_setzero_si512();
    __m512 acc[8][2], macc[2];
    TG_UNROLL for (int j = 0; j < NC; j++) {
        macc[j] = _mm512_setzero_ps();
        TG_UNROLL for (int u = 0; u < 8; u++) acc[u][j] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++, x += gb) {
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (const void *) x));
        const __m512 mx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (const void *) (x + 32)));
        const __m512i qh = Q5 ? _mm512_loadu_si512(x + 64) : m4;
        __m512 dd[2];
        TG_UNROLL for (int j = 0; j < NC; j++) {
            dd[j] = _mm512_mul_ps(dx, _mm512_set1_ps(_cvtsh_ss(y[j][b].d)));
            macc[j] = _mm512_fmadd_ps(mx, _mm512_set1_ps(_cvtsh_ss(y[j][b].s)), macc[j]);
        }
        TG_UNROLL for (int ch = 0; ch < 4; ch++) {   // lanes u = ch (low nibbles) and 4 + ch (high)
            const __m512i v = _mm512_loadu_si512(x + q0 + 64 * ch);
            __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (Q5) pk_q5_or(qh, ch, &lo, &hi);
            TG_UNROLL for (int j = 0; j < NC; j++) {
                int32_t ya, yb;
                memcpy(&ya, y[j][b].qs + 4 * ch, 4);
                memcpy(&yb, y[j][b].qs + 16 + 4 * ch, 4);
                const __m512i pl = _mm512_dpbusd_epi32(zero, lo, _mm512_set1_epi32(ya));
                const __m512i ph = _mm512_dpbusd_epi32(zero, hi, _mm512_set1_epi32(yb));
                acc[ch][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pl), dd[j], acc[ch][j]);
                acc[4 + ch][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ph), dd[j], acc[4 + ch][j]);
            }
        }
    }
    TG_UNROLL for (int j = 0; j < NC; j++) {   // tree8, then the offsets
        const __m512 t = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0][j], acc[4][j]), _mm512_add_ps(acc[2][j], acc[6][j])),
                                       _mm512_add_ps(_mm512_add_ps(acc[1][j], acc[5][j]), _mm512_add_ps(acc[3][j], acc[7][j])));
        _mm512_storeu_ps(c + j * ldc, _mm512_add_ps(t, macc[j]));
    }
}

// IQ4_NL / IQ4_XS: nibble n -> tg_iq4nl_values[n] + 128 (unsigned, for
// vpdpbusd), the table in each 128-bit lane for vpshufb.
TG_PK_INLINE __m512i pk_iq4_lut(void) {
    return _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *) (const void *) tg_iq4nl_values)),
                            _mm512_set1_epi8((char) 0x80));
}

// 16 rows (one group) x NC columns (1..4) over the nb blocks: c[j * ldc + r].
// No software prefetch: a thread reads one sequential stream, which the
// hardware prefetcher follows (bench_mul_mat -g, 2 alternating rounds: from
// DRAM q8_0 92-95% and q4_0 94-97% of the read bandwidth without, 80-89% and
// 90-95% prefetching 2-4 KiB ahead).
// x: the group; y[j]: column j's Q8_0 row; ys[j], dy[j]: its per-block
// offsets and scales. Q4 (Q4_0, IQ4_NL with IQ4, Q5_0 with Q5): the 4 chunks'
// low and high nibbles against bytes 4c.. and 16 + 4c.. of the activation
// block; IQ4 looks each nibble up in the table (+ 128), Q5 ors in the fifth
// bits (bit 2c + h of each byte of its chunk); Q8: 8 chunks against bytes 4c...
TG_PK_INLINE void pk_group(const int NC, const bool Q4, const bool IQ4, const bool Q5, int64_t nb, const char * x,
                           const tg_block_q8_0 * const * y, const int32_t * const * ys, const float * const * dy,
                           float * c, size_t ldc) {
    const size_t gb = Q5 ? 16 * sizeof(tg_block_q5_0) : Q4 ? 16 * sizeof(tg_block_q4_0) : 16 * sizeof(tg_block_q8_0);
    const size_t q0 = Q5 ? 96 : 32;   // where the quant chunks start
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i lut = pk_iq4_lut();
    __m512 acc[4];
    TG_UNROLL for (int j = 0; j < NC; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, x += gb) {
        __m512i q[8];
        if (Q4) {
            const __m512i qh = Q5 ? _mm512_loadu_si512(x + 32) : m4;
            TG_UNROLL for (int ch = 0; ch < 4; ch++) {
                const __m512i v = _mm512_loadu_si512(x + q0 + 64 * ch);
                q[ch] = _mm512_and_si512(v, m4);
                q[4 + ch] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (IQ4) { q[ch] = _mm512_shuffle_epi8(lut, q[ch]); q[4 + ch] = _mm512_shuffle_epi8(lut, q[4 + ch]); }
                if (Q5) pk_q5_or(qh, ch, &q[ch], &q[4 + ch]);
            }
        } else {
            TG_UNROLL for (int ch = 0; ch < 8; ch++) q[ch] = _mm512_loadu_si512(x + q0 + 64 * ch);
        }
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) x));
        TG_UNROLL for (int j = 0; j < NC; j++) {
            int32_t yq[8];
            memcpy(yq, y[j][b].qs, 32);
            __m512i s = _mm512_set1_epi32(-ys[j][b]);
            // Q4: q[ch] (elements 4ch..) with bytes 4ch.., q[4 + ch] (16 + 4ch..) with 16 + 4ch..
            TG_UNROLL for (int ch = 0; ch < 8; ch++) s = _mm512_dpbusd_epi32(s, q[ch], _mm512_set1_epi32(yq[ch]));
            acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dx, _mm512_set1_ps(dy[j][b])), acc[j]);
        }
    }
    TG_UNROLL for (int j = 0; j < NC; j++) _mm512_storeu_ps(c + j * ldc, acc[j]);
}


// Two chunks of levels (lo, hi: 16 rows' 4 bytes each) against activation
// bytes oa.. and ob.. of each column's super-block b, into da[j] and db[j]
// (the same array for one sum of both).
TG_PK_INLINE void pk_dp2(const int NC, __m512i * da, __m512i * db, const __m512i lo, const __m512i hi,
                         const tg_block_q8_K * const * y, int64_t b, int oa, int ob) {
    TG_UNROLL for (int j = 0; j < NC; j++) {
        int32_t ya, yb;
        memcpy(&ya, y[j][b].qs + oa, 4);
        memcpy(&yb, y[j][b].qs + ob, 4);
        da[j] = _mm512_dpbusd_epi32(da[j], lo, _mm512_set1_epi32(ya));
        db[j] = _mm512_dpbusd_epi32(db[j], hi, _mm512_set1_epi32(yb));
    }
}

// Q4_K: 16 rows x NC columns over nsb super-blocks, vec-kquant.c's sums:
// isum = sum over the 8 groups of 32 of sc * (nibbles . activations), msum =
// sum of mn * (the group's two bsums), then s = s + (d8 * d) * isum and
// s = s - (d8 * dmin) * msum, super-block after super-block.
// Q5 (Q5_K): the fifth bit of element 64 p + l is bit 2p of qh[l], of 64 p + 32 + l bit 2p + 1.
TG_PK_INLINE void pk_group_k45(const int NC, const bool Q5, int64_t nsb, const char * x, const tg_block_q8_K * const * y,
                               float * c, size_t ldc) {
    const size_t sb = Q5 ? 16 * sizeof(tg_block_q5_K) : 16 * sizeof(tg_block_q4_K);
    const __m512i one = _mm512_set1_epi8(1);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m6 = _mm512_set1_epi8(0x3F), m2 = _mm512_set1_epi8(0x03);
    const __m512i mb = _mm512_set1_epi32(0xFF);
    __m512 acc[4];
    TG_UNROLL for (int j = 0; j < NC; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, x += sb) {
        const __m512i u0 = _mm512_loadu_si512(x + 64), u1 = _mm512_loadu_si512(x + 128), u2 = _mm512_loadu_si512(x + 192);
        // per lane: bytes 0..3 the scales (mins) of groups 0..3, then 4..7
        const __m512i s_lo = _mm512_and_si512(u0, m6), m_lo = _mm512_and_si512(u1, m6);
        const __m512i s_hi = _mm512_or_si512(_mm512_and_si512(u2, m4),
                                             _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), m2), 4));
        const __m512i m_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), m4),
                                             _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), m2), 4));
        __m512i isum[4], msum[4];
        TG_UNROLL for (int j = 0; j < NC; j++) { isum[j] = _mm512_setzero_si512(); msum[j] = _mm512_setzero_si512(); }
        TG_UNROLL for (int g = 0; g < 8; g++) {
            const __m512i sg = _mm512_and_si512(_mm512_srli_epi32(g < 4 ? s_lo : s_hi, 8 * (g % 4)), mb);
            const __m512i mg = _mm512_and_si512(_mm512_srli_epi32(g < 4 ? m_lo : m_hi, 8 * (g % 4)), mb);
            TG_UNROLL for (int j = 0; j < NC; j++) {
                const int32_t yg = y[j][b].bsums[2 * g] + y[j][b].bsums[2 * g + 1];
                msum[j] = _mm512_add_epi32(msum[j], _mm512_mullo_epi32(mg, _mm512_set1_epi32(yg)));
            }
            if (g % 2) continue;
            // groups g (low nibbles) and g + 1 (high) from chunks 8 (g / 2) ..: elements 64 (g / 2) + 4 (c % 8) ..
            __m512i dl[4], dh[4];
            TG_UNROLL for (int j = 0; j < NC; j++) { dl[j] = _mm512_setzero_si512(); dh[j] = _mm512_setzero_si512(); }
            TG_UNROLL for (int cc = 0; cc < 8; cc++) {
                const __m512i v = _mm512_loadu_si512(x + (Q5 ? pk_q5K_qs(4 * g + cc) : 256 + 64 * (size_t) (4 * g + cc)));
                __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (Q5) {
                    const __m512i hb = _mm512_loadu_si512(x + 256 + 128 * cc);
                    lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, g), one), 4));
                    hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, g + 1), one), 4));
                }
                pk_dp2(NC, dl, dh, lo, hi, y, b, 32 * g + 4 * cc, 32 * g + 32 + 4 * cc);
            }
            const __m512i sg1 = _mm512_and_si512(_mm512_srli_epi32(g < 4 ? s_lo : s_hi, 8 * (g % 4 + 1)), mb);
            TG_UNROLL for (int j = 0; j < NC; j++)
                isum[j] = _mm512_add_epi32(isum[j], _mm512_add_epi32(_mm512_mullo_epi32(dl[j], sg),
                                                                     _mm512_mullo_epi32(dh[j], sg1)));
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) x));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (x + 32)));
        TG_UNROLL for (int j = 0; j < NC; j++) {
            const __m512 d8 = _mm512_set1_ps(y[j][b].d);
            acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(_mm512_mul_ps(d8, d), _mm512_cvtepi32_ps(isum[j])));
            acc[j] = _mm512_sub_ps(acc[j], _mm512_mul_ps(_mm512_mul_ps(d8, dmin), _mm512_cvtepi32_ps(msum[j])));
        }
    }
    TG_UNROLL for (int j = 0; j < NC; j++) _mm512_storeu_ps(c + j * ldc, acc[j]);
}

// Q6_K: 16 rows x NC columns over nsb super-blocks, vec-kquant.c's sums:
// levels q = low nibble | 2 high bits << 4 (0..63), isum = sum over the 16
// groups of 16 of sc * (q . activations), msum = sum of 32 * sc * bsums, then
// s = s + (d8 * d) * (isum - msum), super-block after super-block (msum
// comes off as each group's sum starts from -32 x its bsum). Element
// 128 c + 32 s + l: nibble of ql[64 c + 32 (s % 2) + l] (high for s >= 2),
// bits 2s, 2s + 1 of qh[32 c + l].
TG_PK_INLINE void pk_group_q6K(const int NC, int64_t nsb, const char * x, const tg_block_q8_K * const * y,
                               float * c, size_t ldc) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    __m512 acc[4];
    TG_UNROLL for (int j = 0; j < NC; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, x += 16 * sizeof(tg_block_q6_K)) {
        __m512i isum[4];
        TG_UNROLL for (int j = 0; j < NC; j++) isum[j] = _mm512_setzero_si512();
        __m512i scv[4];
        TG_UNROLL for (int q = 0; q < 4; q++) scv[q] = _mm512_loadu_si512(x + 32 + 64 * q);
        TG_UNROLL for (int cc = 0; cc < 2; cc++)
        TG_UNROLL for (int h = 0; h < 2; h++) {   // elements 128 cc + 32 s + 16 h + (0..15), s = 0..3
            // the levels come + 32: each group's sum starts from -32 times its bsum (msum
            // taken off group by group: isum - msum = sum of sc * (dt - 32 bsum), the same integer)
            __m512i dt[4][4];
            TG_UNROLL for (int s = 0; s < 4; s++)
            TG_UNROLL for (int j = 0; j < NC; j++) dt[s][j] = _mm512_set1_epi32(-32 * y[j][b].bsums[8 * cc + 2 * s + h]);
            TG_UNROLL for (int k = 4 * h; k < 4 * h + 4; k++) {
                const char * xp = x + 288 + 192 * (8 * cc + k);
                const __m512i A = _mm512_loadu_si512(xp), B = _mm512_loadu_si512(xp + 64), H = _mm512_loadu_si512(xp + 128);
                __m512i lv[4];
                lv[0] = _mm512_or_si512(_mm512_and_si512(A, m4), _mm512_and_si512(_mm512_slli_epi16(H, 4), m30));
                lv[1] = _mm512_or_si512(_mm512_and_si512(B, m4), _mm512_and_si512(_mm512_slli_epi16(H, 2), m30));
                lv[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(A, 4), m4), _mm512_and_si512(H, m30));
                lv[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(B, 4), m4),
                                        _mm512_and_si512(_mm512_srli_epi16(H, 2), m30));
                TG_UNROLL for (int s = 0; s < 4; s++)
                TG_UNROLL for (int j = 0; j < NC; j++) {
                    int32_t ya;
                    memcpy(&ya, y[j][b].qs + 128 * cc + 32 * s + 4 * k, 4);
                    dt[s][j] = _mm512_dpbusd_epi32(dt[s][j], lv[s], _mm512_set1_epi32(ya));
                }
            }
            TG_UNROLL for (int s = 0; s < 4; s++) {
                const int g = 8 * cc + 2 * s + h;
                const __m512i sg = _mm512_srai_epi32(_mm512_slli_epi32(scv[g / 4], 24 - 8 * (g % 4)), 24);
                TG_UNROLL for (int j = 0; j < NC; j++) isum[j] = _mm512_add_epi32(isum[j], _mm512_mullo_epi32(dt[s][j], sg));
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) x));
        TG_UNROLL for (int j = 0; j < NC; j++)
            acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(y[j][b].d), d), _mm512_cvtepi32_ps(isum[j])));
    }
    TG_UNROLL for (int j = 0; j < NC; j++) _mm512_storeu_ps(c + j * ldc, acc[j]);
}

// Q2_K / Q3_K (Q3): 16 rows x NC columns over nsb super-blocks,
// vec-kquant.c's sums: isum = sum over the 16 groups of 16 of sc * (levels .
// activations), msum = sum of mn * bsums; Q2_K: s = s + (d8 * d) * isum, s =
// s - (d8 * dmin) * msum (sc, mn: the low and high nibbles of its scale
// bytes); Q3_K: levels + 4 (0..7), mn = 4 sc, s = s + (d8 * d) * (isum -
// msum) (sc: 6 bits, minus 32). Element 128 h + 32 s + l: bits 2s, 2s + 1 of
// qs[32 h + l], Q3_K's third bit bit 4h + s of hmask[l]; group 8 h + 2 s + l / 16.
// u: the scale chunks; the scale of group g in each row's lane.
TG_PK_INLINE __m512i pk_k23_sc(const bool Q3, const __m512i * u, const int g) {
    const __m512i m4 = _mm512_set1_epi32(0x0F);
    if (!Q3) return _mm512_and_si512(_mm512_srli_epi32(u[g / 4], 8 * (g % 4)), m4);
    const __m512i lo = _mm512_and_si512(_mm512_srli_epi32(u[(g % 8) / 4], 8 * (g % 4) + 4 * (g / 8)), m4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi32(u[2], 8 * (g % 4) + 2 * (g / 4)), _mm512_set1_epi32(3));
    return _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)), _mm512_set1_epi32(32));
}

TG_PK_INLINE void pk_group_k23(const int NC, const bool Q3, int64_t nsb, const char * x, const tg_block_q8_K * const * y,
                               float * c, size_t ldc) {
    const size_t sb = Q3 ? 16 * sizeof(tg_block_q3_K) : 16 * sizeof(tg_block_q2_K);
    const __m512i m2 = _mm512_set1_epi8(0x03), m4 = _mm512_set1_epi8(0x04);
    __m512 acc[4];
    TG_UNROLL for (int j = 0; j < NC; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, x += sb) {
        __m512i u[4];
        u[0] = _mm512_loadu_si512(x); u[1] = _mm512_loadu_si512(x + 64); u[2] = _mm512_loadu_si512(x + 128);
        u[3] = Q3 ? u[2] : _mm512_loadu_si512(x + 192);
        __m512i isum[4], msum[4];
        TG_UNROLL for (int j = 0; j < NC; j++) { isum[j] = _mm512_setzero_si512(); msum[j] = _mm512_setzero_si512(); }
        if (!Q3) {   // msum: the mins against the bsums (Q3_K: in the group sums below)
            TG_UNROLL for (int g = 0; g < 16; g++) {
                const __m512i mg = _mm512_and_si512(_mm512_srli_epi32(u[g / 4], 8 * (g % 4) + 4), _mm512_set1_epi32(0x0F));
                TG_UNROLL for (int j = 0; j < NC; j++)
                    msum[j] = _mm512_add_epi32(msum[j], _mm512_mullo_epi32(mg, _mm512_set1_epi32(y[j][b].bsums[g])));
            }
        }
        TG_UNROLL for (int h = 0; h < 2; h++)
        TG_UNROLL for (int lh = 0; lh < 2; lh++) {   // elements 128 h + 32 s + 16 lh + (0..15), s = 0..3
            __m512i dt[4][4];
            // Q3_K's levels come + 4: its group sums start from -4 times the group's bsum
            // (msum, the same integer: isum - msum = sum of sc * (dt - 4 bsum))
            TG_UNROLL for (int s = 0; s < 4; s++)
            TG_UNROLL for (int j = 0; j < NC; j++)
                dt[s][j] = Q3 ? _mm512_set1_epi32(-4 * y[j][b].bsums[8 * h + 2 * s + lh]) : _mm512_setzero_si512();
            TG_UNROLL for (int cc = 0; cc < 4; cc++) {
                const int k = 8 * h + 4 * lh + cc;   // qs chunk (bytes 32 h + 16 lh + 4 cc ..)
                const __m512i Q = _mm512_loadu_si512(x + (Q3 ? (k < 8 ? 192 + 128 * (size_t) k + 64 : 1216 + 64 * (size_t) (k - 8))
                                                             : 256 + 64 * (size_t) k));
                const __m512i H = Q3 ? _mm512_loadu_si512(x + 192 + 128 * (size_t) (4 * lh + cc)) : Q;
                TG_UNROLL for (int s = 0; s < 4; s++) {
                    __m512i lv = _mm512_and_si512(_mm512_srli_epi16(Q, 2 * s), m2);
                    if (Q3) {   // bit 4 h + s of H to bit 2
                        const int sh = 4 * h + s - 2;
                        const __m512i hs = sh >= 0 ? _mm512_srli_epi16(H, sh) : _mm512_slli_epi16(H, -sh);
                        lv = _mm512_ternarylogic_epi32(lv, hs, m4, 0xF8);   // lv | (hs & m4)
                    }
                    TG_UNROLL for (int j = 0; j < NC; j++) {
                        int32_t ya;
                        memcpy(&ya, y[j][b].qs + 128 * h + 32 * s + 16 * lh + 4 * cc, 4);
                        dt[s][j] = _mm512_dpbusd_epi32(dt[s][j], lv, _mm512_set1_epi32(ya));
                    }
                }
            }
            TG_UNROLL for (int s = 0; s < 4; s++) {
                const __m512i sg = pk_k23_sc(Q3, u, 8 * h + 2 * s + lh);
                TG_UNROLL for (int j = 0; j < NC; j++) isum[j] = _mm512_add_epi32(isum[j], _mm512_mullo_epi32(dt[s][j], sg));
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (const void *) (x + (Q3 ? 1728 : 1280))));
        TG_UNROLL for (int j = 0; j < NC; j++) {
            const __m512 d8 = _mm512_set1_ps(y[j][b].d);
            acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(_mm512_mul_ps(d8, d), _mm512_cvtepi32_ps(isum[j])));
            if (!Q3) {
                const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (const void *) (x + 1312)));
                acc[j] = _mm512_sub_ps(acc[j], _mm512_mul_ps(_mm512_mul_ps(d8, dmin), _mm512_cvtepi32_ps(msum[j])));
            }
        }
    }
    TG_UNROLL for (int j = 0; j < NC; j++) _mm512_storeu_ps(c + j * ldc, acc[j]);
}

// IQ4_XS: 16 rows x NC columns over nsb super-blocks, vec-kquant.c's sums:
// isum = sum over the 8 groups of 32 of (ls - 32) * (levels . activations)
// (ls: 4 bits of scales_l, 2 of scales_h), then s = s + (d8 * d) * isum,
// super-block after super-block. Group t's element l < 16 is the low nibble
// of qs[16 t + l], element 16 + l its high nibble; the table values come +
// 128, so each group's sum starts from -128 times its two bsums.
TG_PK_INLINE void pk_group_iq4xs(const int NC, int64_t nsb, const char * x, const tg_block_q8_K * const * y,
                                 float * c, size_t ldc) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), lut = pk_iq4_lut();
    const __m512i m4d = _mm512_set1_epi32(0x0F), m2d = _mm512_set1_epi32(0x03), k32 = _mm512_set1_epi32(32);
    __m512 acc[4];
    TG_UNROLL for (int j = 0; j < NC; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, x += 16 * sizeof(tg_block_iq4_xs)) {
        const __m512i sh = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *) (const void *) (x + 32)));
        const __m512i sl = _mm512_loadu_si512(x + 64);
        __m512i isum[4];
        TG_UNROLL for (int j = 0; j < NC; j++) isum[j] = _mm512_setzero_si512();
        TG_UNROLL for (int t = 0; t < 8; t++) {
            const __m512i ls = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sl, 4 * t), m4d),
                                               _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * t), m2d), 4));
            const __m512i sc = _mm512_sub_epi32(ls, k32);
            __m512i dt[4];
            TG_UNROLL for (int j = 0; j < NC; j++)
                dt[j] = _mm512_set1_epi32(-128 * (y[j][b].bsums[2 * t] + y[j][b].bsums[2 * t + 1]));
            TG_UNROLL for (int cc = 0; cc < 4; cc++) {   // bytes 16 t + 4 cc .. of each row
                const __m512i v = _mm512_loadu_si512(x + 128 + 64 * (4 * t + cc));
                const __m512i lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m4));
                const __m512i hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
                pk_dp2(NC, dt, dt, lo, hi, y, b, 32 * t + 4 * cc, 32 * t + 16 + 4 * cc);
            }
            TG_UNROLL for (int j = 0; j < NC; j++) isum[j] = _mm512_add_epi32(isum[j], _mm512_mullo_epi32(dt[j], sc));
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (const void *) x));
        TG_UNROLL for (int j = 0; j < NC; j++)
            acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(y[j][b].d), d),
                                                         _mm512_cvtepi32_ps(isum[j])));
    }
    TG_UNROLL for (int j = 0; j < NC; j++) _mm512_storeu_ps(c + j * ldc, acc[j]);
}

// The group kernels with one signature (NC columns: their rows y, and for
// Q4_0 / Q8_0 their per-block offsets ys and scales dy).
#define TG_PK_Q8_GROUP(NAME, Q4, IQ4, Q5)                                                      \
TG_PK_INLINE void NAME(const int NC, int64_t nb, const char * x, const char * const * y,      \
                       const int32_t * const * ys, const float * const * dy, float * c, size_t ldc) { \
    const tg_block_q8_0 * yb[4];                                                               \
    TG_UNROLL for (int j = 0; j < NC; j++) yb[j] = (const tg_block_q8_0 *) y[j];               \
    pk_group(NC, Q4, IQ4, Q5, nb, x, yb, ys, dy, c, ldc);                                      \
}
#define TG_PK_Y_GROUP(NAME, YT, KERNEL)                                                        \
TG_PK_INLINE void NAME(const int NC, int64_t nb, const char * x, const char * const * y,      \
                       const int32_t * const * ys, const float * const * dy, float * c, size_t ldc) { \
    (void) ys; (void) dy;                                                                      \
    const YT * yb[4];                                                                          \
    TG_UNROLL for (int j = 0; j < NC; j++) yb[j] = (const YT *) y[j];                          \
    KERNEL(NC, nb, x, yb, c, ldc);                                                             \
}
#define TG_PK_K_GROUP(NAME, KERNEL) TG_PK_Y_GROUP(NAME, tg_block_q8_K, KERNEL)
TG_PK_Q8_GROUP(pk_run_q4, true, false, false)
TG_PK_Q8_GROUP(pk_run_q8, false, false, false)
TG_PK_Q8_GROUP(pk_run_iq4nl, true, true, false)
TG_PK_Q8_GROUP(pk_run_q5_0, true, false, true)
// One type of a two-type kernel (FLAG picks it).
#define TG_PK_VARIANT(NAME, YT, KERNEL, FLAG)                                                  \
TG_PK_INLINE void NAME(const int NC, int64_t nsb, const char * x, const YT * const * y,       \
                       float * c, size_t ldc) { KERNEL(NC, FLAG, nsb, x, y, c, ldc); }
TG_PK_VARIANT(pk_group_q4K, tg_block_q8_K, pk_group_k45, false)
TG_PK_VARIANT(pk_group_q5K, tg_block_q8_K, pk_group_k45, true)
TG_PK_VARIANT(pk_group_q2K, tg_block_q8_K, pk_group_k23, false)
TG_PK_VARIANT(pk_group_q3K, tg_block_q8_K, pk_group_k23, true)
TG_PK_VARIANT(pk_group_q4_1, tg_block_q8_1, pk_group_lg, false)
TG_PK_VARIANT(pk_group_q5_1, tg_block_q8_1, pk_group_lg, true)
TG_PK_K_GROUP(pk_run_q4K, pk_group_q4K)
TG_PK_K_GROUP(pk_run_q5K, pk_group_q5K)
TG_PK_K_GROUP(pk_run_q6K, pk_group_q6K)
TG_PK_K_GROUP(pk_run_iq4xs, pk_group_iq4xs)
TG_PK_K_GROUP(pk_run_q2K, pk_group_q2K)
TG_PK_K_GROUP(pk_run_q3K, pk_group_q3K)
TG_PK_Y_GROUP(pk_run_q4_1, tg_block_q8_1, pk_group_q4_1)
TG_PK_Y_GROUP(pk_run_q5_1, tg_block_q8_1, pk_group_q5_1)

// A block of the driver: g->a the first group of g->ni rows (a multiple of
// 16), g->lda the bytes of a group; g->b the activation rows (Q8_0 or
// Q8_K), g->ldb apart; for Q4_0 / Q8_0 g->ys their offsets and scales (nb
// int32 then nb float per column, g->ldys apart). Up to 4 columns a pass.
#define TG_PK_BLOCK(NAME, BLCK, RUN, MAXC) TG_PK_BLOCK_AT(TG_PK, NAME, BLCK, RUN, MAXC)
#define TG_PK_BLOCK_AT(ATTR, NAME, BLCK, RUN, MAXC)                                            \
ATTR static void NAME(const struct tg_mm_args * g) {                                          \
    const int64_t nb = g->k / (BLCK);                                                          \
    for (int64_t j0 = 0; j0 < g->nj; j0 += (MAXC)) {                                           \
        const int nc = g->nj - j0 < (MAXC) ? (int) (g->nj - j0) : (MAXC);                      \
        const char * y[4];                                                                     \
        const int32_t * ys[4] = { NULL, NULL, NULL, NULL };                                    \
        const float * dy[4] = { NULL, NULL, NULL, NULL };                                      \
        for (int j = 0; j < nc; j++) {                                                         \
            y[j] = g->b + (size_t) (j0 + j) * g->ldb;                                          \
            if (g->ys) {                                                                       \
                ys[j] = (const int32_t *) (g->ys + (size_t) (j0 + j) * g->ldys);               \
                dy[j] = (const float *) (ys[j] + nb);                                          \
            }                                                                                  \
        }                                                                                      \
        for (int64_t i = 0; i < g->ni; i += 16) {                                              \
            const char * x = g->a + (size_t) (i / 16) * g->lda;                                \
            float * c = g->c + j0 * g->ldc + i;                                                \
            switch (nc) {                                                                      \
            case 4: if ((MAXC) >= 4) RUN((MAXC) >= 4 ? 4 : 1, nb, x, y, ys, dy, c, g->ldc); break; \
            case 3: if ((MAXC) >= 3) RUN((MAXC) >= 3 ? 3 : 1, nb, x, y, ys, dy, c, g->ldc); break; \
            case 2: RUN(2, nb, x, y, ys, dy, c, g->ldc); break;                                \
            default: RUN(1, nb, x, y, ys, dy, c, g->ldc); break;                               \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
}
TG_PK_BLOCK(block_q4_packed_vnni, TG_QK8_0, pk_run_q4, 4)
TG_PK_BLOCK(block_q8_packed_vnni, TG_QK8_0, pk_run_q8, 4)
TG_PK_BLOCK(block_q4K_packed_vnni, TG_QK_K, pk_run_q4K, 4)
TG_PK_BLOCK(block_q5K_packed_vnni, TG_QK_K, pk_run_q5K, 4)
TG_PK_BLOCK(block_q6K_packed_vnni, TG_QK_K, pk_run_q6K, 4)
TG_PK_BLOCK(block_iq4nl_packed_vnni, TG_QK8_0, pk_run_iq4nl, 4)
TG_PK_BLOCK(block_q5_0_packed_vnni, TG_QK8_0, pk_run_q5_0, 4)
TG_PK_BLOCK(block_iq4xs_packed_vnni, TG_QK_K, pk_run_iq4xs, 4)
TG_PK_BLOCK(block_q2K_packed_vnni, TG_QK_K, pk_run_q2K, 4)
TG_PK_BLOCK(block_q3K_packed_vnni, TG_QK_K, pk_run_q3K, 4)
TG_PK_BLOCK(block_q4_1_packed_vnni, 32, pk_run_q4_1, 2)
TG_PK_BLOCK(block_q5_1_packed_vnni, 32, pk_run_q5_1, 2)

// ---- AVX2: Q4_0 ----------------------------------------------------------------
// The same layout read as two halves of 8 rows: half h's scales are
// d[8h .. 8h + 7] (the 16 bytes at 16 h), its part of chunk c the 32 bytes at
// 32 + 64 c + 32 h (row r's 4 bytes at 4 (r - 8h)). Per block and column the
// 8 maddubs of the low and high nibbles (0..15) against the activation bytes
// add up exactly in int16 (at most 8 x 2 x 15 x 128 = 30720) and one madd
// leaves each row's block sum in its own lane: no horizontal sums, one
// sequential stream, 40% fewer instructions a block than vec-quant.c's
// eight-row GEMV, and its arithmetic (sum - 8 sum(y), then fma with dx * dy
// block after block), so the same bits.
#define TG_PK2_TARGET "avx2,avx,fma,f16c"
#define TG_PK2_INLINE static inline __attribute__((always_inline, target(TG_PK2_TARGET)))
#define TG_PK2 __attribute__((target(TG_PK2_TARGET)))

// NC columns (1..4) x H halves (1..2) from half h0 on, over the nb blocks.
TG_PK2_INLINE void pk2_q4(const int NC, const int H, const int h0, int64_t nb, const char * x,
                          const tg_block_q8_0 * const * y, const int32_t * const * ys, const float * const * dy,
                          float * c, size_t ldc) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[2][4];
    TG_UNROLL for (int h = 0; h < H; h++)
        TG_UNROLL for (int j = 0; j < NC; j++) acc[h][j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, x += 16 * sizeof(tg_block_q4_0)) {
        if (h0 == 0)   // the block 1 KiB ahead (its 4.5 cache lines): see above
            TG_UNROLL for (int l = 0; l < 5; l++) _mm_prefetch(x + 1024 + 64 * l, _MM_HINT_T0);
        __m256i s[2][4];
        TG_UNROLL for (int h = 0; h < H; h++)
            TG_UNROLL for (int j = 0; j < NC; j++) s[h][j] = _mm256_setzero_si256();
        TG_UNROLL for (int ch = 0; ch < 4; ch++) {
            TG_UNROLL for (int h = 0; h < H; h++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *) (const void *) (x + 32 + 64 * ch + 32 * (h0 + h)));
                const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                TG_UNROLL for (int j = 0; j < NC; j++) {
                    int32_t ya, yb;
                    memcpy(&ya, y[j][b].qs + 4 * ch, 4);
                    memcpy(&yb, y[j][b].qs + 16 + 4 * ch, 4);
                    s[h][j] = _mm256_add_epi16(s[h][j], _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(ya)),
                                                                          _mm256_maddubs_epi16(hi, _mm256_set1_epi32(yb))));
                }
            }
        }
        TG_UNROLL for (int h = 0; h < H; h++) {
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (const void *) (x + 16 * (h0 + h))));
            TG_UNROLL for (int j = 0; j < NC; j++) {
                const __m256i si = _mm256_sub_epi32(_mm256_madd_epi16(s[h][j], ones), _mm256_set1_epi32(ys[j][b]));
                acc[h][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si), _mm256_mul_ps(dx, _mm256_set1_ps(dy[j][b])), acc[h][j]);
            }
        }
    }
    TG_UNROLL for (int h = 0; h < H; h++)
        TG_UNROLL for (int j = 0; j < NC; j++) _mm256_storeu_ps(c + j * ldc + 8 * (h0 + h), acc[h][j]);
}

// One column: both halves in one pass (the activation bytes loaded once);
// more: a pass a half (registers).
TG_PK2_INLINE void pk2_run_q4(const int NC, int64_t nb, const char * x, const char * const * y,
                              const int32_t * const * ys, const float * const * dy, float * c, size_t ldc) {
    const tg_block_q8_0 * yb[4];
    TG_UNROLL for (int j = 0; j < NC; j++) yb[j] = (const tg_block_q8_0 *) y[j];
    if (NC == 1) {
        pk2_q4(1, 2, 0, nb, x, yb, ys, dy, c, ldc);
    } else {
        pk2_q4(NC, 1, 0, nb, x, yb, ys, dy, c, ldc);
        pk2_q4(NC, 1, 1, nb, x, yb, ys, dy, c, ldc);
    }
}
TG_PK_BLOCK_AT(TG_PK2, block_q4_packed_avx2, TG_QK8_0, pk2_run_q4, 4)
#endif



tg_mm_block_fn tg_mm_packed_block(enum tg_type type, int level) {
#ifdef TG_X86
    if (level >= TG_SIMD_AVX512VNNI) {
        switch (type) {
        case TG_TYPE_Q4_0:   return block_q4_packed_vnni;
        case TG_TYPE_Q4_1:   return block_q4_1_packed_vnni;
        case TG_TYPE_Q5_0:   return block_q5_0_packed_vnni;
        case TG_TYPE_Q5_1:   return block_q5_1_packed_vnni;
        case TG_TYPE_Q8_0:   return block_q8_packed_vnni;
        case TG_TYPE_IQ4_NL: return block_iq4nl_packed_vnni;
        case TG_TYPE_Q2_K:   return block_q2K_packed_vnni;
        case TG_TYPE_Q3_K:   return block_q3K_packed_vnni;
        case TG_TYPE_Q4_K:   return block_q4K_packed_vnni;
        case TG_TYPE_Q5_K:   return block_q5K_packed_vnni;
        case TG_TYPE_Q6_K:   return block_q6K_packed_vnni;
        case TG_TYPE_IQ4_XS: return block_iq4xs_packed_vnni;
        default:             break;
        }
    }
    if (level >= TG_SIMD_AVX2 && type == TG_TYPE_Q4_0) return block_q4_packed_avx2;
#endif
    (void) type; (void) level;
    return NULL;
}
