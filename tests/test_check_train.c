// test_check_train.c - `tgdb check`'s training analyses on traced backward
// graphs run by the scheduler: a healthy graph has no findings; the forced
// gradient-of-gradient bug (tg_backward_options.debug_grad_of_grad) is named
// node by node; a parameter the loss does not depend on is named as getting no
// gradient; a NaN made by the backward pass (d sqrt(w)/dw at w = 0) is placed
// in the backward pass with the parameter it differentiates; a gradient norm
// that jumps (train_result markers) is reported at its step; the GRADS record
// links every gradient to its forward tensor.
#include "check.h"
#include "tg/backend.h"
#include "tg/observe.h"
#include "tg/sched.h"
#include "tg/trace-check.h"
#include "tg/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 8 };

enum variant { HEALTHY, GRAD_OF_GRAD, UNUSED_PARAM, NAN_BACKWARD, EXPLODING };

// Builds, traces and computes one variant; returns the open trace (NULL on failure).
static struct tg_trace * run(enum variant v, const char * path) {
    struct tg_backend * cpu = tg_backend_cpu_init();
    struct tg_context * cw = tg_context_new((struct tg_context_params) { 1 << 16, NULL, true });
    struct tg_context * cg = tg_context_new((struct tg_context_params) { 1 << 20, NULL, true });
    struct tg_tensor * w1 = tg_set_name(tg_new_tensor_1d(cw, TG_TYPE_F32, N), "w1");
    struct tg_tensor * w2 = tg_set_name(tg_new_tensor_1d(cw, TG_TYPE_F32, N), "w2");
    tg_set_param(w1);
    tg_set_param(w2);
    struct tg_buffer * buf = tg_backend_alloc_ctx_tensors(cw, cpu);
    float a[N], b[N];
    for (int i = 0; i < N; i++) a[i] = v == NAN_BACKWARD ? (float) i : 0.5f + 0.1f * (float) i, b[i] = 1.0f - 0.05f * (float) i;
    tg_backend_tensor_set(w1, a, 0, sizeof(a));
    tg_backend_tensor_set(w2, b, 0, sizeof(b));
    struct tg_tensor * x = tg_set_name(tg_new_tensor_1d(cg, TG_TYPE_F32, N), "x");
    tg_set_input(x);
    // loss = sum(sqrt(w1) * x) [+ sum(w2 * x) unless w2 is the unused parameter]
    struct tg_tensor * h = tg_set_name(tg_mul(cg, tg_set_name(tg_sqrt(cg, w1), "sqrt_w1"), x), "h");
    struct tg_tensor * side = tg_set_name(tg_mul(cg, w2, x), "side");
    struct tg_tensor * loss = v == UNUSED_PARAM ? tg_sum(cg, h) : tg_sum(cg, tg_add(cg, h, side));
    tg_set_name(loss, "loss");
    tg_set_output(loss);
    struct tg_graph * g = tg_graph_new(cg, 256);
    tg_graph_build_forward(g, loss);
    if (v == UNUSED_PARAM) { tg_set_output(side); tg_graph_build_forward(g, side); }   // in the graph, not in the loss
    const struct tg_backward_options bo = { .debug_grad_of_grad = v == GRAD_OF_GRAD };
    enum tg_status st = tg_graph_build_backward(cg, g, g, loss, &bo);
    CHECK(st == TG_OK, "variant %d: backward graph built (%s)", (int) v, st ? tg_last_error() : "");
    struct tg_sched * s = tg_sched_new(&cpu, 1, 512);
    struct tg_trace_recorder * rec = tg_trace_attach(s, path, NULL);
    float xv[N], one = 1.0f;
    for (int i = 0; i < N; i++) xv[i] = 1.0f + (float) i;
    const int steps = v == EXPLODING ? 6 : 1;
    for (int k = 0; k < steps; k++) {
        tg_observe_marker(s, "train", "step=%d", k + 1);
        tg_sched_alloc_graph(s, g);
        tg_backend_tensor_set(x, xv, 0, sizeof(xv));
        tg_backend_tensor_set(loss->grad, &one, 0, sizeof(one));
        tg_sched_graph_compute(s, g);
        const double norm = v == EXPLODING && k == 4 ? 250.0 : 2.0 + 0.1 * k;
        tg_observe_marker(s, "train_result", "step=%d loss=1.5 grad_norm=%.9g", k + 1, norm);
    }
    CHECK(tg_trace_detach(rec) == TG_OK, "variant %d: traced", (int) v);
    tg_sched_free(s);
    tg_buffer_free(buf);
    tg_context_free(cg);
    tg_context_free(cw);
    tg_backend_free(cpu);
    return tg_trace_open(path);
}

static const struct tg_trace_finding * find(const struct tg_trace_report * rep, int kind) {
    for (int i = 0; i < rep->n_findings; i++) if (rep->findings[i].kind == kind) return &rep->findings[i];
    return NULL;
}

static int count(const struct tg_trace_report * rep, int kind) {
    int n = 0;
    for (int i = 0; i < rep->n_findings; i++) n += rep->findings[i].kind == kind;
    return n;
}

int main(void) {
    char path[128];
    snprintf(path, sizeof(path), "test_check_train.%d.tgt", (int) getpid());
    static const char * const names[] = { "healthy", "grad-of-grad", "unused parameter", "NaN in backward", "exploding" };
    for (int v = HEALTHY; v <= EXPLODING; v++) {
        struct tg_trace * tr = run((enum variant) v, path);
        struct tg_trace_report rep = { 0 };
        if (!CHECK(tr && tg_trace_check(tr, &rep) == TG_OK, "%s: trace opened and checked", names[v])) continue;
        const struct tg_trace_finding * f;
        switch (v) {
        case HEALTHY: {
            int gi = tg_trace_n_graphs(tr) - 1, w1 = -1, gw1 = -1;
            char nb[TG_TRACE_NAME];
            struct tg_trace_graph g;
            tg_trace_get_graph(tr, gi, &g);
            for (int ti = 0; ti < g.n_nodes + g.n_leafs; ti++)
                if (!strcmp(tg_trace_tensor_name(tr, gi, ti, nb), "w1")) w1 = ti;
            gw1 = w1 >= 0 ? tg_trace_grad(tr, gi, w1) : -1;
            CHECK(gw1 >= 0 && !strcmp(tg_trace_tensor_name(tr, gi, gw1, nb), "grad of w1") && tg_trace_grad_of(tr, gi, gw1) == w1,
                  "GRADS: 'w1' -> 'grad of w1' and back (%d links)", tg_trace_n_grads(tr, gi));
            CHECK(rep.n_problems == 0, "healthy: no problems (%d)", rep.n_problems);
            break;
        }
        case GRAD_OF_GRAD:
            f = find(&rep, TG_TRACE_FIND_GRAD_OF_GRAD);
            CHECK(f && f->problem && strstr(f->text, "'grad of grad of w1'") && strstr(f->text, "'grad of w1'") &&
                  strstr(f->text, "'grad of grad of h'"), "grad-of-grad: the offending nodes are named: %.200s", f ? f->text : "(none)");
            CHECK(count(&rep, TG_TRACE_FIND_GRAD_OF_GRAD) == 1, "grad-of-grad: one finding for the graph");
            break;
        case UNUSED_PARAM:
            f = find(&rep, TG_TRACE_FIND_NO_GRAD);
            CHECK(f && f->problem && strstr(f->text, "'w2'") && !strstr(f->text, "'w1'"),
                  "unused parameter: 'w2' receives no gradient: %.200s", f ? f->text : "(none)");
            break;
        case NAN_BACKWARD:
            f = find(&rep, TG_TRACE_FIND_NAN);
            CHECK(f && strstr(f->text, "in the backward pass") && strstr(f->text, "w1"),
                  "NaN in backward: placed in the backward pass with 'w1': %.300s", f ? f->text : "(none)");
            CHECK(!find(&rep, TG_TRACE_FIND_GRAD_OF_GRAD) && !find(&rep, TG_TRACE_FIND_NO_GRAD), "NaN: no other training finding");
            break;
        case EXPLODING:
            f = find(&rep, TG_TRACE_FIND_GRAD_EXPLODE);
            CHECK(f && f->problem && strstr(f->text, "step 5") && strstr(f->text, "250"),
                  "exploding: step 5's norm 250 against the median of the steps before: %.200s", f ? f->text : "(none)");
            break;
        }
        if (v != EXPLODING) CHECK(!find(&rep, TG_TRACE_FIND_GRAD_EXPLODE), "%s: no exploding-gradient finding", names[v]);
        tg_trace_report_free(&rep);
        tg_trace_close(tr);
    }
    unlink(path);
    return tg_check_finish("test_check_train");
}
