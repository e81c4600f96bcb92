// nan-origin.c - a graph that produces a NaN on purpose, for the NaN
// diagnostics (tgdb check, break nan in the shell, the TUI's jump to NaN).
// y = log(x - shift) goes NaN where x < shift; the NaN then flows through a
// scale, a matmul and a softmax into the loss-like sum at the end. Run it
// traced:   TGDB_TRACE=nan.tgt nan-origin   then   tgdb check nan.tgt
// Usage: nan-origin [--clean]   (--clean: shift 0 -> no NaN, for comparison)
#include "tg/sched.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { N = 64, M = 8 };

int main(int argc, char ** argv) {
    bool clean = argc > 1 && strcmp(argv[1], "--clean") == 0;
    if (argc > 2 || (argc == 2 && !clean)) { fprintf(stderr, "usage: nan-origin [--clean]\n"); return 1; }
    struct tg_backend * cpu = tg_backend_cpu_init();
    if (!cpu) { fprintf(stderr, "nan-origin: %s\n", tg_last_error()); return 1; }
    struct tg_sched * s = tg_sched_new(&cpu, 1, 64);
    struct tg_context_params cp = { 1 << 20, NULL, true };
    struct tg_context * ctx = tg_context_new(cp);
    if (!s || !ctx) { fprintf(stderr, "nan-origin: %s\n", tg_last_error()); return 1; }
    // x [N, M] input, w [N, N] weights
    struct tg_tensor * x = tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F32, N, M), "x");
    struct tg_tensor * w = tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F32, N, N), "w");
    struct tg_tensor * sh = tg_set_name(tg_new_tensor_1d(ctx, TG_TYPE_F32, 1), "shift");
    tg_set_input(x);
    tg_set_input(w);
    tg_set_input(sh);
    struct tg_tensor * xs = tg_set_name(tg_sub(ctx, x, sh), "x_minus_shift");     // [N, M]
    struct tg_tensor * lg = tg_set_name(tg_log(ctx, xs), "log_x");                // NaN where x < shift
    struct tg_tensor * sc = tg_set_name(tg_scale(ctx, lg, 0.5f), "scaled");
    struct tg_tensor * mm = tg_set_name(tg_mul_mat(ctx, w, sc), "proj");          // [N, M]
    struct tg_tensor * sm = tg_set_name(tg_soft_max(ctx, mm), "probs");
    struct tg_tensor * out = tg_set_name(tg_sum(ctx, sm), "total");
    tg_set_output(out);
    if (!out) { fprintf(stderr, "nan-origin: %s\n", tg_last_error()); return 1; }
    struct tg_graph * g = tg_graph_new(ctx, 64);
    tg_graph_build_forward(g, out);
    if (tg_sched_alloc_graph(s, g) != TG_OK) { fprintf(stderr, "nan-origin: %s\n", tg_last_error()); return 1; }
    float xv[N * M], wv[N * N], shift = clean ? -1.0f : 0.25f, total = 0;
    for (int i = 0; i < N * M; i++) xv[i] = (float) ((i * 37) % 101) / 100.0f;   // 0 .. 1: some below 0.25
    for (int i = 0; i < N * N; i++) wv[i] = (float) ((i * 13) % 17) / 17.0f - 0.5f;
    if (tg_backend_tensor_set(x, xv, 0, sizeof xv) || tg_backend_tensor_set(w, wv, 0, sizeof wv) ||
        tg_backend_tensor_set(sh, &shift, 0, sizeof shift) || tg_sched_graph_compute(s, g) ||
        tg_backend_tensor_get(out, &total, 0, sizeof total)) {
        fprintf(stderr, "nan-origin: %s\n", tg_last_error());
        return 1;
    }
    printf("nan-origin: total = %g%s\n", total, isnan(total) ? "  (NaN: 'tgdb check' on a trace of this run finds where it started)" : "");
    tg_sched_free(s);
    tg_context_free(ctx);
    tg_backend_free(cpu);
    return 0;
}
