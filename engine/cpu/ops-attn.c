// ops-attn.c - FLASH_ATTN_EXT: fused attention with an online softmax.
//
// Work items are (K/V head, tile of up to TG_FA_TT query rows), each computed
// by one thread; a row is a (token, query head) pair, the query heads that
// share the K/V head (grouped-query attention) side by side, so a block of K
// and V is read once for all of them (generation: one tile per K/V head).
// For each block of CB cells (fa_block: 128 in prompts, 512 in generation):
//   S = K_block . Q_tile         (the matrix kernels of vec-f32.c; Q rounded
//                                 to f16 when K is f16, like the unfused path)
//   s = S * scale + mask
//   per token: M' = max(M, max s), O and L rescaled by exp(M - M'),
//              P = exp(s - M') (rounded to f16 when V is f16), L += sum P
//   O += V_block . P             (V is kept transposed: a value dimension's
//                                 cells are contiguous rows for the kernel)
// and finally out = O / L. Blocks where every token of the tile is masked are
// skipped. Every output element follows one fixed sequence whatever the tile
// and the thread split (the kernels' reduction contract), so results are the
// same for any thread count. Generation (one token) computes the same in two
// passes (fa_gen): every head's scores first, the threads taking runs of
// cells, then the softmax and V head by head.
#include "vec-impl.h"

#include <math.h>
#include <string.h>

// Cells per block: 128 for prompts (a causal mask skips whole blocks), 512
// in generation (one query token: a block's K rows and each value dimension's
// run of V cells stay long enough to stream; the softmax steps per block are
// fewer). A fixed function of the shape, so any thread split gives the same bits.
enum { TG_FA_TT = 16, TG_FA_CB_PROMPT = 128, TG_FA_CB_GEN = 512, TG_FA_CB = TG_FA_CB_GEN };
static inline int64_t fa_block(int64_t tokens) { return tokens == 1 ? TG_FA_CB_GEN : TG_FA_CB_PROMPT; }

// Generation (one query token: every row of a K/V head in one tile) goes
// two-pass (fa_gen) when the scores of every head over every cell, shared by
// the threads, fit TG_FA_GEN_MAX bytes, from TG_FA_GEN_MIN cells on. Since
// pass 1 reads K rows whole (every head a tile of cells at a time), it beats
// the tiles (a thread per K/V head, reading that head's slice of each row)
// from 256 cells on: bench_mul_mat -g's fused graph from DRAM, 30 alternating
// graphs in one process, medians per layer: 256 cells 31.2 -> 26.6 us, 512
// 67.9 -> 58.2, 768 84.6 -> 70.8 (64 cells 9.2 -> 8.0, 32 6.9 -> 6.6); 100m
// Q4_0 at fa on, 300 alternating tokens: depth 512 4.45 -> 4.31 ms a token,
// 256 4.54 -> 4.52, 128 and 32 the same within 0.5%. (Before, with pass 1
// head by head, the tiles were faster below 1024 cells.)
#define TG_FA_GEN_MAX ((size_t) 64 << 20)
#define TG_FA_GEN_MIN 256
// Its shared area (after the threads' scratch): every row's scores S, then
// weights P in place (rows x cells), the rows' sums L and NaN flags, and O
// (rows x value dimensions); rows = the query heads (one token).
struct fa_gen_area { float * S, * L, * bad, * O; };
static size_t fa_gen_layout(int64_t rows, int64_t C, int64_t Dv, char * base, struct fa_gen_area * a) {
    const size_t s = tg_cpu_pad64(sizeof(float) * (size_t) (rows * C)), l = tg_cpu_pad64(sizeof(float) * (size_t) rows);
    const size_t o = tg_cpu_pad64(sizeof(float) * (size_t) (rows * Dv));
    if (a) {
        a->S = (float *) base;
        a->L = (float *) (base + s);
        a->bad = (float *) (base + s + l);
        a->O = (float *) (base + s + 2 * l);
    }
    return s + 2 * l + o;
}
static size_t fa_gen_scores(const struct tg_tensor * dst) {   // bytes, 0: not this way
    const struct tg_tensor * q = dst->src[0], * k = dst->src[1], * v = dst->src[2];
    const int64_t R = q->ne[1] * (q->ne[2] / k->ne[2]);
    if (q->ne[1] != 1 || R > TG_FA_TT || k->ne[1] < TG_FA_GEN_MIN) return 0;
    const size_t bytes = fa_gen_layout(k->ne[2] * R, k->ne[1], v->ne[1], NULL, NULL);
    return bytes <= TG_FA_GEN_MAX ? bytes : 0;
}

// Per-thread scratch (fa_gen: all the heads' queries; the tiles: one tile's).
static size_t fa_scratch(const struct tg_tensor * dst) {
    const struct tg_tensor * q = dst->src[0], * k = dst->src[1], * v = dst->src[2];
    const size_t D = (size_t) q->ne[0], Dv = (size_t) v->ne[1];
    const size_t nq = fa_gen_scores(dst) ? (size_t) (k->ne[2] * q->ne[1] * (q->ne[2] / k->ne[2])) : TG_FA_TT;
    return sizeof(float) * (nq * D                  // Q tile(s)
                            + 2 * TG_FA_TT * TG_FA_CB  // S, P
                            + 2 * TG_FA_TT * Dv     // O, O block
                            + 2 * TG_FA_TT          // M, L
                            + TG_FA_CB              // mask row (f16 masks)
                            + (D > TG_FA_CB ? D : TG_FA_CB))   // f16 rounding (halves)
           + 8 * 64;
}

size_t tg_cpu_flash_attn_work_size(const struct tg_tensor * dst, int nth) {
    return tg_cpu_scratch_size(fa_scratch(dst), nth) + fa_gen_scores(dst);
}

static inline float * take(char ** w, size_t n) {
    float * p = (float *) (((uintptr_t) *w + 63) & ~(uintptr_t) 63);
    *w = (char *) (p + n);
    return p;
}

// A thread's scratch, as fa_scratch sizes it: the queries (nq rows), a
// tile's scores S and weights P over a block, O and a block's part of it,
// M and L, a mask row, and room for f16 rounding.
struct fa_work { float * Q, * S, * P, * O, * Ob, * M, * L, * mtmp; tg_fp16_t * h16; };
static struct fa_work fa_take(char * w, size_t nq, int64_t D, int64_t Dv) {
    struct fa_work f;
    f.Q = take(&w, nq * (size_t) D);
    f.S = take(&w, (size_t) TG_FA_TT * TG_FA_CB);
    f.P = take(&w, (size_t) TG_FA_TT * TG_FA_CB);
    f.O = take(&w, (size_t) TG_FA_TT * (size_t) Dv);
    f.Ob = take(&w, (size_t) TG_FA_TT * (size_t) Dv);
    f.M = take(&w, TG_FA_TT);
    f.L = take(&w, TG_FA_TT);
    f.mtmp = take(&w, TG_FA_CB);
    f.h16 = (tg_fp16_t *) take(&w, 0);
    return f;
}

// The matrix kernels for K . q and V . p at this SIMD level (the narrow
// ones: a few columns against many rows).
static void fa_kernels(const struct tg_tensor * k, const struct tg_tensor * v, tg_mm_block_fn * kq, tg_mm_block_fn * pv) {
    const int level = tg_cpu_simd_level();
    *kq = tg_mm_float_block_narrow(k->type == TG_TYPE_F16 ? TG_MM_F16_F32 : TG_MM_F32_F32, level);
    *pv = tg_mm_float_block_narrow(v->type == TG_TYPE_F16 ? TG_MM_F16_F32 : TG_MM_F32_F32, level);
}

static inline const float * mask_row(const struct tg_tensor * mask, int64_t t, int64_t c0, int64_t n, float * tmp) {
    const char * row = (const char *) mask->data + t * mask->nb[1];
    if (mask->type == TG_TYPE_F16) {
        tg_fp16_to_fp32_row((const tg_fp16_t *) row + c0, tmp, n);
        return tmp;
    }
    return (const float *) row + c0;
}

// x rounded to f16 and back, in place (tmp: n halves).
static inline void round_f16(float * x, int64_t n, tg_fp16_t * tmp) {
    tg_fp32_to_fp16_row(x, tmp, n);
    tg_fp16_to_fp32_row(tmp, x, n);
}

// Whether every row of a tile (tokens tok[0..nt)) has cells [c0, c0 + nb) masked.
static bool fa_block_masked(const struct tg_tensor * mask, const int64_t * tok, int64_t nt, int64_t c0, int64_t nb,
                            float * mtmp) {
    for (int64_t j = 0; j < nt; j++) {
        if (j > 0 && tok[j] == tok[j - 1]) continue;   // the same token's mask row
        const float * mr = mask_row(mask, tok[j], c0, nb, mtmp);
        for (int64_t c = 0; c < nb; c++) if (mr[c] != -INFINITY) return false;
    }
    return true;
}

// The online softmax over one block of nb cells for the nt rows of a tile:
// S (row j at S + j * lds) scaled and masked in place, P (row j at P + j *
// ldp) = exp(S - M'), L and O rescaled, M updated (P rounded to f16 when V is
// f16). Whether any row takes anything from the block.
static bool fa_softmax_block(int64_t nt, int64_t nb, float * S, int64_t lds, float * P, int64_t ldp, int64_t Dv,
                             float scale, const struct tg_tensor * mask, const int64_t * tok, int64_t c0, float * M,
                             float * L, float * O, bool * nan, bool vf16, float * mtmp, tg_fp16_t * h16) {
    bool any_p = false;
    for (int64_t j = 0; j < nt; j++) {
        float * sj = S + j * lds, * pj = P + j * ldp;
        tg_cpu_vscale(nb, sj, sj, scale);
        if (mask) tg_cpu_vadd(nb, sj, sj, mask_row(mask, tok[j], c0, nb, mtmp));
        int bad = 0;
        for (int64_t c = 0; c < nb; c++) bad |= sj[c] != sj[c];
        if (bad) nan[j] = true;
        const float mb = bad ? -INFINITY : tg_cpu_vmax(nb, sj);
        if (nan[j] || mb == -INFINITY) {   // nothing from this block for token j
            memset(pj, 0, (size_t) nb * sizeof(float));
            continue;
        }
        const float Mn = M[j] > mb ? M[j] : mb;
        const float alpha = M[j] == -INFINITY ? 0.0f : expf(M[j] - Mn);
        const float sum = (float) tg_cpu_vexp_sum(nb, pj, sj, Mn);
        L[j] = L[j] * alpha + sum;
        if (alpha != 1.0f) tg_cpu_vscale(Dv, O + j * Dv, O + j * Dv, alpha);
        if (vf16) round_f16(pj, nb, h16);
        M[j] = Mn;
        any_p = true;
    }
    return any_p;
}

// Row r of K/V head hk's rows: its token and query head, and its query
// (rounded to f16 when K is f16) into qj.
static void fa_row_init(const struct tg_tensor * q, int64_t hk, int64_t group, int64_t r, int64_t * tok, int64_t * head,
                        float * qj, bool kf16, tg_fp16_t * h16) {
    *tok = r / group;
    *head = hk * group + r % group;
    const char * qrow = (const char *) q->data + *tok * q->nb[1] + *head * q->nb[2];
    for (int64_t d = 0; d < q->ne[0]; d++) qj[d] = *(const float *) (qrow + d * q->nb[0]);
    if (kf16) round_f16(qj, q->ne[0], h16);
}

// out = O / L for the nt rows of a tile (NaN where a NaN score came through).
static void fa_finish(struct tg_tensor * dst, int64_t nt, int64_t Dv, const int64_t * tok, const int64_t * head,
                      const float * O, const float * L, const bool * nan) {
    for (int64_t j = 0; j < nt; j++) {
        float * out = (float *) ((char *) dst->data + tok[j] * dst->nb[2] + head[j] * dst->nb[1]);
        if (nan[j]) for (int64_t d = 0; d < Dv; d++) out[d] = NAN;
        else if (L[j] == 0.0f) memset(out, 0, (size_t) Dv * sizeof(float));
        else tg_cpu_vscale(Dv, out, O + j * Dv, 1.0f / L[j]);
    }
}

// Generation, in three passes. First the scores of every K/V head's rows
// over every cell, the threads taking runs of TG_FA_RUN cells (all of them
// at work whatever the number of K/V heads), a run in one call of the narrow
// kernel over every head (nmat): a tile of cells of each head in turn, so K
// rows are read whole, front to back, the kernel's tiles prefetching the rows
// ahead of them. Head by head within a run (a head's slice of each row, 512
// bytes apart), with every line of the rows two runs on prefetched into L2,
// the pass waited on memory: bench_mul_mat -g fused per layer from DRAM, 30
// alternating graphs in one process, medians: at 1024 cells 106.7 -> 91.9 us,
// at 4096 391 -> 343; 100m Q4_0 at depth 4096, fa on, 100 alternating tokens:
// 7.58 -> 7.22 ms a token (and before that, head by head without the L2
// prefetches: 190 -> 110 us for pass 1 over 4096 cells).
// Then, after a barrier, the softmax of each row (query head) over every
// cell, the threads taking rows, and after another, V . P, the threads taking
// runs of value dimensions of every head: a head's V rows read whole, in the
// narrow kernel's tiles with its prefetches, as the unfused kqv reads them.
// (Before, each thread took whole heads in pass 2, an online softmax over
// blocks of TG_FA_CB_GEN cells before each block's V product: the fused node
// was the slower path at depth, 100m Q4_0 against -fa off with 150 tokens
// alternating in one process, bench_decode_ab fa: 1.037x the unfused time a
// token at depth 1024, 1.043x at 3000.) A score does not depend on the rows
// computed with it, nor an output element on the rows or columns of its tile
// (the kernels' contract), so every result has the same bits for any thread
// count; over one block of cells (up to TG_FA_CB_GEN) the bits of the tiles.
enum { TG_FA_RUN = 32 };

// Value dimensions [d0, d0 + nd) of K/V head hk, cells [0, n): into L2.
static void fa_prefetch_v(const struct tg_tensor * v, int64_t hk, int64_t d0, int64_t nd, int64_t n) {
    const size_t es = tg_type_size(v->type);
    const char * base = (const char *) v->data + hk * v->nb[2];
    for (int64_t d = d0; d < d0 + nd; d++)
        for (int64_t o = 0; o < n * (int64_t) es; o += 64) __builtin_prefetch(base + d * v->nb[1] + o, 0, 2);
}
static void fa_gen(const struct tg_cpu_params * p, struct tg_tensor * dst, char * w, float * Sall) {
    const struct tg_tensor * q = dst->src[0], * k = dst->src[1], * v = dst->src[2], * mask = dst->src[3];
    const float scale = tg_get_op_param_f32(dst, 0);
    const int64_t D = q->ne[0], H = q->ne[2], C = k->ne[1], Dv = v->ne[1], Hk = k->ne[2];
    const int64_t CB = TG_FA_CB_GEN, group = H / Hk, nt = group;   // one token: a head's rows are its query heads
    const bool kf16 = k->type == TG_TYPE_F16, vf16 = v->type == TG_TYPE_F16;
    tg_mm_block_fn kq_fn, pv_fn;
    fa_kernels(k, v, &kq_fn, &pv_fn);
    const struct fa_work f = fa_take(w, (size_t) (Hk * nt), D, Dv);   // its S unused: the scores are Sall
    float * Q = f.Q, * mtmp = f.mtmp;
    tg_fp16_t * h16 = f.h16;
    int64_t tok[TG_FA_TT], head[TG_FA_TT];
    for (int64_t h = 0; h < Hk; h++)   // every head's queries (each thread its own copy)
        for (int64_t j = 0; j < nt; j++) fa_row_init(q, h, group, j, &tok[j], &head[j], Q + (h * nt + j) * D, kf16, h16);
    // pass 1: S[h][j][c] = k_c(head h) . q_j, a run of cells at a time, every head
    int64_t r0, r1;
    tg_cpu_range((C + TG_FA_RUN - 1) / TG_FA_RUN, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t c = r * TG_FA_RUN, n = C - c < TG_FA_RUN ? C - c : TG_FA_RUN;
        struct tg_mm_args g = { .k = D, .a = (const char *) k->data + c * k->nb[1], .lda = k->nb[1],
                                .b = (const char *) Q, .ldb = (size_t) D * sizeof(float),
                                .c = Sall + c, .ldc = (size_t) C, .ni = n, .nj = nt, .type = k->type,
                                .nmat = Hk, .mat_a = k->nb[2], .mat_b = (size_t) (nt * D) * sizeof(float),
                                .mat_c = (size_t) (nt * C) };
        kq_fn(&g);   // every head's scores, a tile of cells at a time
    }
    // pass 2: each row's softmax over every cell (the threads taking rows),
    // the weights P in place of the scores (rounded to f16 when V is f16)
    const int64_t R = Hk * nt;
    struct fa_gen_area A;
    fa_gen_layout(R, C, Dv, (char *) Sall, &A);
    tg_cpu_barrier(p);
    int64_t q0, q1;
    tg_cpu_range(R, p->ith, p->nth, &q0, &q1);
    for (int64_t r = q0; r < q1; r++) {
        float * s = A.S + r * C;
        tg_cpu_vscale(C, s, s, scale);
        for (int64_t c0 = 0; mask && c0 < C; c0 += CB) {
            const int64_t nb = C - c0 < CB ? C - c0 : CB;
            tg_cpu_vadd(nb, s + c0, s + c0, mask_row(mask, 0, c0, nb, mtmp));
        }
        int bad = 0;
        for (int64_t c = 0; c < C; c++) bad |= s[c] != s[c];
        const float mx = bad ? -INFINITY : tg_cpu_vmax(C, s);
        A.bad[r] = bad ? 1.0f : 0.0f;
        if (mx == -INFINITY) {   // every cell masked, or a NaN: nothing is weighted
            memset(s, 0, (size_t) C * sizeof(float));
            A.L[r] = 0.0f;
            continue;
        }
        A.L[r] = (float) tg_cpu_vexp_sum(C, s, s, mx);
        for (int64_t c0 = 0; vf16 && c0 < C; c0 += CB) round_f16(s + c0, C - c0 < CB ? C - c0 : CB, h16);
    }
    // pass 3 begins with the first V rows of this thread's value dimensions:
    // into L2 while the other threads end pass 2
    int64_t d0, d1;
    tg_cpu_range(Dv, p->ith, p->nth, &d0, &d1);
    if (d0 < d1) fa_prefetch_v(v, 0, d0, d1 - d0 < 8 ? d1 - d0 : 8, C < CB ? C : CB);
    tg_cpu_barrier(p);
    // pass 3: O = V . P, the threads taking runs of value dimensions of every
    // head (a head's rows of V read whole, as the unfused kqv reads them)
    if (d0 >= d1) return;
    struct tg_mm_args g = { .k = C, .a = (const char *) v->data + d0 * v->nb[1], .lda = v->nb[1],
                            .b = (const char *) A.S, .ldb = (size_t) C * sizeof(float),
                            .c = A.O + d0, .ldc = (size_t) Dv, .ni = d1 - d0, .nj = nt, .type = v->type,
                            .nmat = Hk, .mat_a = v->nb[2], .mat_b = (size_t) (nt * C) * sizeof(float),
                            .mat_c = (size_t) (nt * Dv) };
    pv_fn(&g);
    for (int64_t r = 0; r < R; r++) {   // out = O / L, this thread's dimensions of each row
        float * out = (float *) ((char *) dst->data + r * dst->nb[1]) + d0;
        if (A.bad[r] != 0.0f) for (int64_t d = d0; d < d1; d++) out[d - d0] = NAN;
        else if (A.L[r] == 0.0f) memset(out, 0, (size_t) (d1 - d0) * sizeof(float));
        else tg_cpu_vscale(d1 - d0, out, A.O + r * Dv + d0, 1.0f / A.L[r]);
    }
}

void tg_cpu_op_flash_attn(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * q = dst->src[0], * k = dst->src[1], * v = dst->src[2], * mask = dst->src[3];
    const float scale = tg_get_op_param_f32(dst, 0);
    const int64_t D = q->ne[0], T = q->ne[1], H = q->ne[2], C = k->ne[1], Dv = v->ne[1], Hk = k->ne[2];
    const int64_t CB = fa_block(T), group = H / Hk, R = T * group, ntiles = (R + TG_FA_TT - 1) / TG_FA_TT;   // R rows per K/V head
    const size_t per = tg_cpu_pad64(fa_scratch(dst));
    char * w = (char *) tg_cpu_scratch(p, per);
    if (fa_gen_scores(dst)) {   // the shared scores after every thread's scratch
        fa_gen(p, dst, w, (float *) ((char *) p->wdata + per * (size_t) p->nth));
        return;
    }
    const bool kf16 = k->type == TG_TYPE_F16, vf16 = v->type == TG_TYPE_F16;
    tg_mm_block_fn kq_fn, pv_fn;
    fa_kernels(k, v, &kq_fn, &pv_fn);
    const struct fa_work f = fa_take(w, TG_FA_TT, D, Dv);
    float * Q = f.Q, * S = f.S, * P = f.P, * O = f.O, * Ob = f.Ob, * M = f.M, * L = f.L, * mtmp = f.mtmp;
    tg_fp16_t * h16 = f.h16;

    int64_t u0, u1;
    tg_cpu_range(Hk * ntiles, p->ith, p->nth, &u0, &u1);
    int64_t tok[TG_FA_TT], head[TG_FA_TT];   // row j of the tile: token tok[j], query head head[j]
    for (int64_t u = u0; u < u1; u++) {
        const int64_t hk = u % Hk, r0 = (u / Hk) * TG_FA_TT;
        const int64_t nt = R - r0 < TG_FA_TT ? R - r0 : TG_FA_TT;
        for (int64_t j = 0; j < nt; j++) {
            fa_row_init(q, hk, group, r0 + j, &tok[j], &head[j], Q + j * D, kf16, h16);
            M[j] = -INFINITY;
            L[j] = 0.0f;
        }
        memset(O, 0, (size_t) (nt * Dv) * sizeof(float));
        bool nan[TG_FA_TT] = { false };
        const char * kbase = (const char *) k->data + hk * k->nb[2];
        const char * vbase = (const char *) v->data + hk * v->nb[2];
        for (int64_t c0 = 0; c0 < C; c0 += CB) {
            const int64_t nb = C - c0 < CB ? C - c0 : CB;
            if (mask && fa_block_masked(mask, tok, nt, c0, nb, mtmp)) continue;   // skip a block every row has masked
            struct tg_mm_args g = { .k = D, .a = kbase + c0 * k->nb[1], .lda = k->nb[1],
                                    .b = (const char *) Q, .ldb = (size_t) D * sizeof(float),
                                    .c = S, .ldc = (size_t) CB, .ni = nb, .nj = nt, .type = k->type };
            kq_fn(&g);   // S[j][c] = k_c . q_j
            if (!fa_softmax_block(nt, nb, S, CB, P, CB, Dv, scale, mask, tok, c0, M, L, O, nan, vf16, mtmp, h16)) continue;
            g = (struct tg_mm_args) { .k = nb, .a = vbase + (size_t) c0 * tg_type_size(v->type), .lda = v->nb[1],
                                      .b = (const char *) P, .ldb = (size_t) CB * sizeof(float),
                                      .c = Ob, .ldc = (size_t) Dv, .ni = Dv, .nj = nt, .type = v->type };
            pv_fn(&g);   // Ob[j][d] = v_d(block) . p_j
            tg_cpu_vadd(nt * Dv, O, O, Ob);
        }
        fa_finish(dst, nt, Dv, tok, head, O, L, nan);
    }
}
