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
// same for any thread count.
#include "vec-impl.h"

#include <math.h>
#include <string.h>

// Cells per block: 128 for prompts (a causal mask skips whole blocks), 512
// in generation (one query token: a block's K rows and each value dimension's
// run of V cells stay long enough to stream; the softmax steps per block are
// fewer). A fixed function of the shape, so any thread split gives the same bits.
enum { TG_FA_TT = 16, TG_FA_CB_PROMPT = 128, TG_FA_CB_GEN = 512, TG_FA_CB = TG_FA_CB_GEN };
static inline int64_t fa_block(int64_t tokens) { return tokens == 1 ? TG_FA_CB_GEN : TG_FA_CB_PROMPT; }

static size_t fa_scratch(const struct tg_tensor * dst) {
    const struct tg_tensor * q = dst->src[0], * v = dst->src[2];
    const size_t D = (size_t) q->ne[0], Dv = (size_t) v->ne[1];
    return sizeof(float) * (TG_FA_TT * D            // Q tile
                            + 2 * TG_FA_TT * TG_FA_CB  // S, P
                            + 2 * TG_FA_TT * Dv     // O, O block
                            + 2 * TG_FA_TT          // M, L
                            + TG_FA_CB              // mask row (f16 masks)
                            + (D > TG_FA_CB ? D : TG_FA_CB))   // f16 rounding (halves)
           + 8 * 64;
}

size_t tg_cpu_flash_attn_work_size(const struct tg_tensor * dst, int nth) {
    return tg_cpu_scratch_size(fa_scratch(dst), nth);
}

static inline float * take(char ** w, size_t n) {
    float * p = (float *) (((uintptr_t) *w + 63) & ~(uintptr_t) 63);
    *w = (char *) (p + n);
    return p;
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

void tg_cpu_op_flash_attn(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * q = dst->src[0], * k = dst->src[1], * v = dst->src[2], * mask = dst->src[3];
    const float scale = tg_get_op_param_f32(dst, 0);
    const int64_t D = q->ne[0], T = q->ne[1], H = q->ne[2], C = k->ne[1], Dv = v->ne[1], Hk = k->ne[2];
    const int64_t CB = fa_block(T), group = H / Hk, R = T * group, ntiles = (R + TG_FA_TT - 1) / TG_FA_TT;   // R rows per K/V head
    const bool kf16 = k->type == TG_TYPE_F16, vf16 = v->type == TG_TYPE_F16;
    const int level = tg_cpu_simd_level();
    const tg_mm_block_fn kq_fn = tg_mm_float_block_narrow(kf16 ? TG_MM_F16_F32 : TG_MM_F32_F32, level);
    const tg_mm_block_fn pv_fn = tg_mm_float_block_narrow(vf16 ? TG_MM_F16_F32 : TG_MM_F32_F32, level);

    char * w = (char *) tg_cpu_scratch(p, fa_scratch(dst));
    float * Q = take(&w, (size_t) TG_FA_TT * D);
    float * S = take(&w, (size_t) TG_FA_TT * TG_FA_CB);
    float * P = take(&w, (size_t) TG_FA_TT * TG_FA_CB);
    float * O = take(&w, (size_t) TG_FA_TT * Dv);
    float * Ob = take(&w, (size_t) TG_FA_TT * Dv);
    float * M = take(&w, TG_FA_TT);
    float * L = take(&w, TG_FA_TT);
    float * mtmp = take(&w, TG_FA_CB);
    tg_fp16_t * h16 = (tg_fp16_t *) take(&w, 0);

    int64_t u0, u1;
    tg_cpu_range(Hk * ntiles, p->ith, p->nth, &u0, &u1);
    int64_t tok[TG_FA_TT], head[TG_FA_TT];   // row j of the tile: token tok[j], query head head[j]
    for (int64_t u = u0; u < u1; u++) {
        const int64_t hk = u % Hk, r0 = (u / Hk) * TG_FA_TT;
        const int64_t nt = R - r0 < TG_FA_TT ? R - r0 : TG_FA_TT;
        for (int64_t j = 0; j < nt; j++) {
            tok[j] = (r0 + j) / group;
            head[j] = hk * group + (r0 + j) % group;
            const char * qrow = (const char *) q->data + tok[j] * q->nb[1] + head[j] * q->nb[2];
            float * qj = Q + j * D;
            for (int64_t d = 0; d < D; d++) qj[d] = *(const float *) (qrow + d * q->nb[0]);
            if (kf16) round_f16(qj, D, h16);
            M[j] = -INFINITY;
            L[j] = 0.0f;
        }
        memset(O, 0, (size_t) (nt * Dv) * sizeof(float));
        bool nan[TG_FA_TT] = { false };
        const char * kbase = (const char *) k->data + hk * k->nb[2];
        const char * vbase = (const char *) v->data + hk * v->nb[2];
        for (int64_t c0 = 0; c0 < C; c0 += CB) {
            const int64_t nb = C - c0 < CB ? C - c0 : CB;
            if (mask) {   // skip a block every token of the tile has masked
                bool any = false;
                for (int64_t j = 0; j < nt && !any; j++) {
                    if (j > 0 && tok[j] == tok[j - 1]) continue;   // the same token's mask row
                    const float * mr = mask_row(mask, tok[j], c0, nb, mtmp);
                    for (int64_t c = 0; c < nb && !any; c++) any = mr[c] != -INFINITY;
                }
                if (!any) continue;
            }
            struct tg_mm_args g = { .k = D, .a = kbase + c0 * k->nb[1], .lda = k->nb[1],
                                    .b = (const char *) Q, .ldb = (size_t) D * sizeof(float),
                                    .c = S, .ldc = (size_t) CB, .ni = nb, .nj = nt, .type = k->type };
            kq_fn(&g);   // S[j][c] = k_c . q_j
            bool any_p = false;
            for (int64_t j = 0; j < nt; j++) {
                float * sj = S + j * CB, * pj = P + j * CB;
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
            if (!any_p) continue;
            g = (struct tg_mm_args) { .k = nb, .a = vbase + (size_t) c0 * tg_type_size(v->type), .lda = v->nb[1],
                                      .b = (const char *) P, .ldb = (size_t) CB * sizeof(float),
                                      .c = Ob, .ldc = (size_t) Dv, .ni = Dv, .nj = nt, .type = v->type };
            pv_fn(&g);   // Ob[j][d] = v_d(block) . p_j
            tg_cpu_vadd(nt * Dv, O, O, Ob);
        }
        for (int64_t j = 0; j < nt; j++) {
            float * out = (float *) ((char *) dst->data + tok[j] * dst->nb[2] + head[j] * dst->nb[1]);
            if (nan[j]) for (int64_t d = 0; d < Dv; d++) out[d] = NAN;
            else if (L[j] == 0.0f) memset(out, 0, (size_t) Dv * sizeof(float));
            else tg_cpu_vscale(Dv, out, O + j * Dv, 1.0f / L[j]);
        }
    }
}
