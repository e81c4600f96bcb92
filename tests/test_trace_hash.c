// test_trace_hash.c - content hashes are over logical element order: a view
// (transposed, permuted, strided rows) and its contiguous copy hash the same;
// summaries count NaN/Inf/zeros; gather gives the logical bytes.
#include "check.h"
#include "tg/core.h"
#include "tg/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

// Contiguous copy of any f32/f16 host tensor (element by element).
static struct tg_tensor * contiguous_copy(struct tg_context * ctx, struct tg_tensor * v) {
    struct tg_tensor * c = tg_new_tensor_4d(ctx, v->type, v->ne[0], v->ne[1], v->ne[2], v->ne[3]);
    for (int64_t i3 = 0; i3 < v->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < v->ne[2]; i2++)
    for (int64_t i1 = 0; i1 < v->ne[1]; i1++)
    for (int64_t i0 = 0; i0 < v->ne[0]; i0++)
        tg_set_f32_nd(c, i0, i1, i2, i3, tg_get_f32_nd(v, i0, i1, i2, i3));
    return c;
}

// Summary of a big tensor (many vector blocks) against a double reference,
// for f32, f16 and bf16, contiguous and through a strided view (a KV-cache
// head slice): NaN and infinities in some blocks only, huge values whose
// float squares overflow, zeros.
static void check_big_summary(struct tg_context * ctx, enum tg_type type, bool special) {
    const int64_t d = 64, n_pos = 200, n_head = 6;   // view [d, n_pos, n_head] of a [d*n_head, n_pos] cache
    struct tg_tensor * cache = tg_new_tensor_2d(ctx, type, d * n_head, n_pos);
    int64_t n = d * n_head * n_pos;
    uint32_t r = 12345;
    for (int64_t i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        float v = ((float) (r >> 8) / 16777216.0f - 0.5f) * 8.0f;
        if (i % 97 == 0) v = 0.0f;
        if (special && i == 4321) v = NAN;
        if (special && i == 30000) v = INFINITY;
        if (special && i == 30001) v = -INFINITY;
        if (special && type == TG_TYPE_F32 && i == 50000) v = 3e20f;   // its float square overflows
        tg_set_f32_nd(cache, i % (d * n_head), i / (d * n_head), 0, 0, v);
    }
    struct tg_tensor * views[2] = {
        cache,
        tg_view_3d(ctx, cache, d, n_pos, n_head, cache->nb[1], (size_t) d * tg_type_size(type), 0),
    };
    for (int k = 0; k < 2; k++) {
        struct tg_tensor * v = views[k];
        double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
        uint64_t nn = 0, ni = 0, nz = 0, ne = 0;
        for (int64_t i2 = 0; i2 < v->ne[2]; i2++)
        for (int64_t i1 = 0; i1 < v->ne[1]; i1++)
        for (int64_t i0 = 0; i0 < v->ne[0]; i0++) {
            double x = tg_get_f32_nd(v, i0, i1, i2, 0);
            ne++;
            if (isnan(x)) { nn++; continue; }
            if (x < mn) mn = x;
            if (x > mx) mx = x;
            if (isinf(x)) { ni++; continue; }
            if (x == 0) nz++;
            sum += x; sq += x * x;
        }
        uint64_t fin = ne - nn - ni;
        double mean = sum / (double) fin, rms = sqrt(sq / (double) fin);
        struct tg_trace_summary s;
        bool ok = tg_trace_summarize_data(v->data, v->type, v->ne, v->nb, &s);
        CHECK(ok && s.n_elem == ne && s.n_nan == nn && s.n_inf == ni && s.n_zero == nz && s.min == mn && s.max == mx &&
              fabs(s.mean - mean) <= 1e-5 * fabs(mean) + 1e-6 && fabs(s.rms - rms) <= 1e-5 * rms,
              "%s %s%s: %llu elements, nan %llu inf %llu zero %llu, min %g max %g, mean %.9g (ref %.9g), rms %.9g (ref %.9g)",
              tg_type_name(type), k ? "strided view" : "contiguous", special ? " with NaN/Inf/huge" : "",
              (unsigned long long) s.n_elem, (unsigned long long) s.n_nan, (unsigned long long) s.n_inf,
              (unsigned long long) s.n_zero, s.min, s.max, s.mean, mean, s.rms, rms);
    }
}

int main(void) {
    struct tg_context * ctx = tg_context_new((struct tg_context_params) { 8 << 20, NULL, false });
    CHECK(ctx != NULL, "context");
    struct tg_tensor * a = tg_new_tensor_4d(ctx, TG_TYPE_F32, 6, 5, 4, 3);
    float * ad = a->data;
    for (int i = 0; i < 6 * 5 * 4 * 3; i++) ad[i] = (float) ((i * 37) % 101) - 50.0f;

    struct tg_tensor * tr = tg_transpose(ctx, a);
    struct tg_tensor * trc = contiguous_copy(ctx, tr);
    CHECK(!tg_is_contiguous(tr) && tg_is_contiguous(trc), "transpose is a strided view, its copy contiguous");
    uint64_t h1 = tg_trace_hash_tensor(tr), h2 = tg_trace_hash_tensor(trc);
    CHECK(h1 != 0 && h1 == h2, "transposed view and contiguous copy hash the same (%016llx)", (unsigned long long) h1);
    CHECK(h1 != tg_trace_hash_tensor(a), "the transpose differs from the original");

    struct tg_tensor * pm = tg_permute(ctx, a, 2, 0, 3, 1);
    CHECK(tg_trace_hash_tensor(pm) == tg_trace_hash_tensor(contiguous_copy(ctx, pm)), "permuted view == its copy");

    // rows with a gap: view of the first 4 of 6 columns of every row
    struct tg_tensor * a2 = tg_reshape_2d(ctx, a, 6, 60);
    struct tg_tensor * v = tg_view_2d(ctx, a2, 4, 60, a2->nb[1], 2 * sizeof(float));
    CHECK(!tg_is_contiguous(v), "strided-row view");
    CHECK(tg_trace_hash_tensor(v) == tg_trace_hash_tensor(contiguous_copy(ctx, v)), "strided rows view == its copy");
    // contiguous view (a slice of whole rows) of the same bytes
    struct tg_tensor * rows = tg_view_2d(ctx, a2, 6, 3, a2->nb[1], 6 * a2->nb[1]);
    struct tg_tensor * rowsc = contiguous_copy(ctx, rows);
    CHECK(tg_trace_hash_tensor(rows) == tg_trace_hash_tensor(rowsc), "row-slice view == its copy");

    // f16 transposed
    struct tg_tensor * b = tg_new_tensor_2d(ctx, TG_TYPE_F16, 8, 3);
    for (int i = 0; i < 24; i++) ((tg_fp16_t *) b->data)[i] = tg_fp32_to_fp16((float) i * 0.25f);
    struct tg_tensor * bt = tg_transpose(ctx, b);
    CHECK(tg_trace_hash_tensor(bt) == tg_trace_hash_tensor(contiguous_copy(ctx, bt)), "f16 transposed view == its copy");

    // q8_0: a view of whole rows hashes like the same blocks copied
    struct tg_tensor * q = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, 64, 4);
    float src[256];
    for (int i = 0; i < 256; i++) src[i] = sinf((float) i);
    tg_quantize_row_q8_0(src, q->data, 256);
    struct tg_tensor * qv = tg_view_2d(ctx, q, 64, 2, q->nb[1], 2 * q->nb[1]);
    struct tg_tensor * qc = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, 64, 2);
    memcpy(qc->data, (char *) q->data + 2 * q->nb[1], 2 * q->nb[1]);
    CHECK(tg_trace_hash_tensor(qv) == tg_trace_hash_tensor(qc), "q8_0 row view == its copy");

    // gather gives the copy's bytes
    size_t need = tg_trace_gather_data(tr->data, tr->type, tr->ne, tr->nb, NULL, 0);
    void * g = malloc(need);
    CHECK(need == tg_nbytes(trc) && tg_trace_gather_data(tr->data, tr->type, tr->ne, tr->nb, g, need) == need &&
          memcmp(g, trc->data, need) == 0, "gather of the view equals the contiguous copy (%zu bytes)", need);
    free(g);

    // summaries
    struct tg_tensor * s = tg_new_tensor_1d(ctx, TG_TYPE_F32, 10);
    float sv[10] = { 1, -2, 0, 0, NAN, INFINITY, -INFINITY, 3, 4, 0 };
    memcpy(s->data, sv, sizeof(sv));
    struct tg_trace_summary sum;
    CHECK(tg_trace_summarize_data(s->data, s->type, s->ne, s->nb, &sum), "summary computed");
    CHECK(sum.n_elem == 10 && sum.n_nan == 1 && sum.n_inf == 2 && sum.n_zero == 3, "counts nan 1 inf 2 zero 3");
    CHECK(isinf(sum.min) && sum.min < 0 && isinf(sum.max) && sum.max > 0, "min/max include infinities");
    CHECK(fabs(sum.mean - 6.0 / 7.0) < 1e-9 && fabs(sum.rms - sqrt(30.0 / 7.0)) < 1e-6,
          "mean/rms over the 7 finite values (%g, %g)", sum.mean, sum.rms);
    CHECK(tg_trace_summarize_data(tr->data, tr->type, tr->ne, tr->nb, &sum) && sum.n_elem == 360 &&
          sum.min == -50 && sum.max == 50, "summary of a strided view (min %g max %g)", sum.min, sum.max);
    struct tg_trace_summary qs = {0};
    CHECK(tg_trace_summarize_data(q->data, q->type, q->ne, q->nb, &qs) && qs.n_elem == 256 && qs.max <= 1.01 &&
          qs.min >= -1.01, "q8_0 summary dequantizes (min %g max %g)", qs.min, qs.max);
    struct tg_tensor * iv = tg_new_tensor_1d(ctx, TG_TYPE_I32, 4);
    int32_t ivv[4] = { 5, -7, 0, 2 };
    memcpy(iv->data, ivv, sizeof(ivv));
    CHECK(tg_trace_summarize_data(iv->data, iv->type, iv->ne, iv->nb, &sum) && sum.min == -7 && sum.max == 5 &&
          sum.n_zero == 1, "i32 summary");
    for (int special = 0; special < 2; special++) {
        check_big_summary(ctx, TG_TYPE_F32, special);
        check_big_summary(ctx, TG_TYPE_F16, special);
        check_big_summary(ctx, TG_TYPE_BF16, special);
    }
    // the content hash is XXH3-64 of the logical bytes (trace/FORMAT.md), for
    // small and large, dense and strided tensors alike
    {
        struct tg_tensor * big = tg_new_tensor_2d(ctx, TG_TYPE_F16, 384, 200);
        for (int64_t i = 0; i < 384 * 200; i++) tg_set_f32_nd(big, i % 384, i / 384, 0, 0, (float) (i % 251) * 0.25f);
        struct tg_tensor * hv = tg_view_3d(ctx, big, 64, 200, 6, big->nb[1], 128, 0);
        size_t nbytes = tg_trace_gather_data(hv->data, hv->type, hv->ne, hv->nb, NULL, 0);
        void * bytes = malloc(nbytes);
        tg_trace_gather_data(hv->data, hv->type, hv->ne, hv->nb, bytes, nbytes);
        uint64_t h = 0;
        struct tg_trace_summary hs;
        tg_trace_hash_summarize(hv->data, hv->type, hv->ne, hv->nb, &h, &hs);
        CHECK(h == XXH3_64bits(bytes, nbytes) && tg_trace_hash_data(hv->data, hv->type, hv->ne, hv->nb) == h,
              "strided f16 view: hash is XXH3-64 of its %zu logical bytes", nbytes);
        CHECK(tg_trace_hash_data(big->data, big->type, big->ne, big->nb) == XXH3_64bits(big->data, tg_nbytes(big)) &&
              tg_trace_hash_data(a->data, a->type, a->ne, a->nb) == XXH3_64bits(a->data, tg_nbytes(a)),
              "contiguous tensors (large and small): XXH3-64 of their bytes");
        free(bytes);
    }
    CHECK(tg_trace_hash_data(NULL, 0, a->ne, a->nb) == 0 && tg_trace_hash_data(a->data, 99, a->ne, a->nb) == 0,
          "bad input hashes to 0");
    tg_context_free(ctx);
    return tg_check_finish("test_trace_hash");
}
