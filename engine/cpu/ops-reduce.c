// ops-reduce.c - SUM, SUM_ROWS, MEAN, ARGMAX. Sums accumulate in double;
// SUM adds per-row partials in row order on thread 0, so the result does not
// depend on the number of threads.
#include "cpu/cpu-impl.h"

// dst [1] = sum of all elements of src0.
void tg_cpu_op_sum(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const int64_t nr = tg_nrows(a);
    float * tmp = tg_cpu_rows(p, dst);
    double * part = tg_cpu_partials(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, a); tg_cpu_row_next(&it);) {
        part[it.r] = tg_cpu_vsum(a->ne[0], tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp));
    }
    tg_cpu_barrier(p);
    if (p->ith == 0) {
        double total = 0.0;
        for (int64_t r = 0; r < nr; r++) total += part[r];
        *(float *) dst->data = (float) total;
    }
}

// dst [1,a,b,c] = sum (SUM_ROWS) or mean (MEAN) of each row of src0 [n,a,b,c].
void tg_cpu_op_sum_rows(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    const double div = dst->op == TG_OP_MEAN ? (double) a->ne[0] : 1.0;
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, a); tg_cpu_row_next(&it);) {
        double s = tg_cpu_vsum(a->ne[0], tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp));
        *(float *) tg_cpu_row_ptr(dst, it.i1, it.i2, it.i3) = (float) (s / div);
    }
}

// dst [r] I32 = index of the first maximum of each row of src0 [n,r].
void tg_cpu_op_argmax(const struct tg_cpu_params * p, struct tg_tensor * dst) {
    const struct tg_tensor * a = dst->src[0];
    float * tmp = tg_cpu_rows(p, dst);
    for (struct tg_cpu_row_it it = tg_cpu_rows_of(p, a); tg_cpu_row_next(&it);) {
        const float * x = tg_cpu_load_row(a, it.i1, it.i2, it.i3, tmp);
        int32_t best = 0;
        for (int64_t i = 1; i < a->ne[0]; i++) {
            if (x[i] > x[best]) best = (int32_t) i;
        }
        *(int32_t *) ((char *) dst->data + it.r * dst->nb[0]) = best;
    }
}
