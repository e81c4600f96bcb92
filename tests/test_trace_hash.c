// test_trace_hash.c - content hashes are over logical element order: a view
// (transposed, permuted, strided rows) and its contiguous copy hash the same;
// summaries count NaN/Inf/zeros; gather gives the logical bytes.
#include "check.h"
#include "tg/core.h"
#include "tg/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int main(void) {
    struct tg_context * ctx = tg_context_new((struct tg_context_params) { 4 << 20, NULL, false });
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
    CHECK(tg_trace_hash_data(NULL, 0, a->ne, a->nb) == 0 && tg_trace_hash_data(a->data, 99, a->ne, a->nb) == 0,
          "bad input hashes to 0");
    tg_context_free(ctx);
    return tg_check_finish("test_trace_hash");
}
