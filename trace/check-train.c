// check-train.c - the training checks of `tgdb check`, from the gradient
// links (GRADS records) and the trainer's markers:
//  - a gradient that has a gradient of its own (the engine never builds
//    second-order gradients, so every such pair is a builder bug);
//  - a trainable parameter (TG_FLAG_PARAM) of a backward graph that receives
//    no gradient (it will never be updated);
//  - an exploding gradient norm: a "train_result" marker whose grad_norm is
//    not finite or more than EXPLODE_FACTOR times the median of the steps
//    before it, with the parameters whose gradients are largest at that step;
//  - for the NaN finding (check.c): which forward tensor's gradient the first
//    non-finite node is, feeds, or is computed from.
// A training run computes the same graph every step: graphs are checked once
// per set of gradient links.
#include "check-impl.h"

#include "core/text.h"
#include "tg/core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPLODE_FACTOR  10.0   // grad_norm above this many times the median of the earlier steps
#define EXPLODE_MIN_HIST 3     // earlier steps needed before a jump is judged
#define LIST_MAX        12     // names listed per finding (then "and N more")

static bool has_links(const struct tg_trace * tr, int gi) { return tg_trace_n_grads(tr, gi) > 0; }

// Same gradient links (and tensor counts): the same training graph again.
static bool same_links(const struct tg_trace * tr, int a, int b) {
    struct tg_trace_graph x, y;
    const int n = tg_trace_n_grads(tr, a);
    if (n != tg_trace_n_grads(tr, b) || !tg_trace_get_graph(tr, a, &x) || !tg_trace_get_graph(tr, b, &y) ||
        x.n_nodes != y.n_nodes || x.n_leafs != y.n_leafs)
        return false;
    for (int k = 0; k < n; k++) {
        int g1, o1, g2, o2;
        if (!tg_trace_get_grad_link(tr, a, k, &g1, &o1) || !tg_trace_get_grad_link(tr, b, k, &g2, &o2) || g1 != g2 || o1 != o2)
            return false;
    }
    return true;
}

// Graphs with gradient links, one per distinct set of links, in file order.
static int graphs_to_check(const struct tg_trace * tr, int * out, int cap) {
    int n = 0;
    for (int gi = 0; gi < tg_trace_n_graphs(tr) && n < cap; gi++) {
        if (!has_links(tr, gi)) continue;
        bool seen = false;
        for (int k = 0; k < n && !seen; k++) seen = same_links(tr, out[k], gi);
        if (!seen) out[n++] = gi;
    }
    return n;
}

static const char * tname(const struct tg_trace * tr, int gi, int ti, char buf[TG_TRACE_NAME]) {
    const char * s = tg_trace_tensor_name(tr, gi, ti, buf);
    struct tg_trace_tensor t;
    if ((!s || !s[0]) && tg_trace_get_tensor(tr, gi, ti, &t)) {
        snprintf(buf, TG_TRACE_NAME, "(unnamed %s)", tg_trace_op_name(tr, t.op));
        return buf;
    }
    return tg_escape_str(s);
}

// ---- gradients of gradients ------------------------------------------------------

static bool check_grad_of_grad(struct tg_trace * tr, int gi, struct tg_trace_report * rep) {
    struct tg_trace_graph g;
    tg_trace_get_graph(tr, gi, &g);
    const int n = tg_trace_n_grads(tr, gi);
    struct tg_trace_finding f = tg_trace_finding_init(TG_TRACE_FIND_GRAD_OF_GRAD, true);
    struct tg_trace_sbuf b = {0};
    int found = 0;
    for (int k = 0; k < n; k++) {
        int gg, of;
        if (!tg_trace_get_grad_link(tr, gi, k, &gg, &of)) continue;
        const int fwd = tg_trace_grad_of(tr, gi, of);   // `of` is itself a gradient?
        if (fwd < 0) continue;
        if (found == 0) {
            f.graph_t = (int32_t) g.graph_id; f.tensor_t = of; f.graph_u = (int32_t) g.graph_id; f.tensor_u = gg;
            f.record = g.record;
        }
        if (found < LIST_MAX) {
            char b1[TG_TRACE_NAME], b2[TG_TRACE_NAME], b3[TG_TRACE_NAME];
            tg_trace_sb_printf(&b, "  '%s' (#%d) is a gradient of the gradient '%s' (#%d) of '%s' (#%d)\n",
                               tname(tr, gi, gg, b1), gg, tname(tr, gi, of, b2), of, tname(tr, gi, fwd, b3), fwd);
        }
        found++;
    }
    if (!found) { free(b.s); return true; }
    if (found > LIST_MAX) tg_trace_sb_printf(&b, "  ... and %d more\n", found - LIST_MAX);
    struct tg_trace_sbuf t = {0};
    tg_trace_sb_printf(&t, "graph %u: %d gradient tensor%s ha%s a gradient of %s own; second-order gradients are never "
                       "asked for (the backward builder differentiated its own gradient nodes: wasted nodes and memory)\n%s",
                       g.graph_id, found, found == 1 ? "" : "s", found == 1 ? "s" : "ve", found == 1 ? "its" : "their", b.s ? b.s : "");
    free(b.s);
    return tg_trace_add_finding(rep, &f, &t);
}

// ---- parameters without gradients ------------------------------------------------

static bool check_no_grad(struct tg_trace * tr, int gi, struct tg_trace_report * rep) {
    struct tg_trace_graph g;
    tg_trace_get_graph(tr, gi, &g);
    struct tg_trace_finding f = tg_trace_finding_init(TG_TRACE_FIND_NO_GRAD, true);
    struct tg_trace_sbuf b = {0};
    int found = 0;
    for (int ti = 0; ti < g.n_nodes + g.n_leafs; ti++) {
        struct tg_trace_tensor t;
        if (!tg_trace_get_tensor(tr, gi, ti, &t) || !(t.flags & TG_FLAG_PARAM) || tg_trace_grad(tr, gi, ti) >= 0) continue;
        if (found == 0) { f.graph_t = (int32_t) g.graph_id; f.tensor_t = ti; f.record = g.record; }
        char nb[TG_TRACE_NAME];
        if (found < LIST_MAX) tg_trace_sb_printf(&b, "  '%s' (#%d)\n", tname(tr, gi, ti, nb), ti);
        found++;
    }
    if (!found) { free(b.s); return true; }
    if (found > LIST_MAX) tg_trace_sb_printf(&b, "  ... and %d more\n", found - LIST_MAX);
    struct tg_trace_sbuf t = {0};
    tg_trace_sb_printf(&t, "graph %u: %d trainable parameter%s receive%s no gradient (the loss does not depend on %s, "
                       "so the optimizer never updates %s)\n%s", g.graph_id, found, found == 1 ? "" : "s",
                       found == 1 ? "s" : "", found == 1 ? "it" : "them", found == 1 ? "it" : "them", b.s ? b.s : "");
    free(b.s);
    return tg_trace_add_finding(rep, &f, &t);
}

// ---- exploding gradient norms ------------------------------------------------------

struct step_norm { int step; double norm, loss; uint32_t record; };

static bool parse_result(const struct tg_trace_marker * m, struct step_norm * s) {
    const char * p = m->text ? strstr(m->text, "train_result ") : NULL;
    if (!p) return false;
    const char * a = strstr(p, "step="), * l = strstr(p, "loss="), * g = strstr(p, "grad_norm=");
    if (!a || !g) return false;
    s->step = atoi(a + 5);
    s->loss = l ? strtod(l + 5, NULL) : NAN;
    s->norm = strtod(g + 10, NULL);
    s->record = m->record;
    return true;
}

static int cmp_double(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

// The parameters with the largest gradient rms among the evaluations between
// records r0 and r1 (one step's computation).
static void largest_grads(struct tg_trace_sbuf * b, struct tg_trace * tr, uint32_t r0, uint32_t r1) {
    struct { double rms; int gi, ti; } top[3] = { { -1, -1, -1 }, { -1, -1, -1 }, { -1, -1, -1 } };
    for (int i = 0; i < tg_trace_n_evals(tr); i++) {
        struct tg_trace_eval e;
        if (!tg_trace_get_eval(tr, i, &e) || e.record <= r0 || e.record >= r1 || !(e.flags & TG_TRACE_EVAL_SUMMARY)) continue;
        const int gi = tg_trace_find_graph(tr, e.graph_id);
        const int of = gi >= 0 ? tg_trace_grad_of(tr, gi, e.node) : -1;
        struct tg_trace_tensor t;
        if (of < 0 || !tg_trace_get_tensor(tr, gi, of, &t) || !(t.flags & TG_FLAG_PARAM)) continue;
        const double rms = isfinite(e.sum.rms) && !e.sum.n_nan && !e.sum.n_inf ? e.sum.rms : INFINITY;
        for (int k = 0; k < 3; k++)
            if (rms > top[k].rms) {
                memmove(&top[k + 1], &top[k], sizeof(top[0]) * (size_t) (2 - k));
                top[k].rms = rms; top[k].gi = gi; top[k].ti = e.node;
                break;
            }
    }
    for (int k = 0; k < 3 && top[k].ti >= 0; k++) {
        char nb[TG_TRACE_NAME];
        tg_trace_sb_printf(b, "%s'%s' rms %.4g", k ? ", " : "  largest parameter gradients: ", tname(tr, top[k].gi, top[k].ti, nb),
                           top[k].rms);
    }
    if (top[0].ti >= 0) tg_trace_sb_printf(b, "\n");
}

static bool check_explode(struct tg_trace * tr, struct tg_trace_report * rep) {
    const int nm = tg_trace_n_markers(tr);
    struct step_norm * s = malloc(sizeof(*s) * (size_t) (nm ? nm : 1));
    double * hist = malloc(sizeof(double) * (size_t) (nm ? nm : 1));
    if (!s || !hist) { free(s); free(hist); return false; }
    int n = 0;
    for (int i = 0; i < nm; i++) {
        struct tg_trace_marker m;
        if (tg_trace_get_marker(tr, i, &m) && parse_result(&m, &s[n])) n++;
    }
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        double med = NAN;
        if (i >= EXPLODE_MIN_HIST) {
            for (int k = 0; k < i; k++) hist[k] = s[k].norm;
            qsort(hist, (size_t) i, sizeof(double), cmp_double);
            med = hist[i / 2];
        }
        const bool bad = !isfinite(s[i].norm) || (isfinite(med) && s[i].norm > EXPLODE_FACTOR * med);
        if (!bad) continue;
        struct tg_trace_finding f = tg_trace_finding_init(TG_TRACE_FIND_GRAD_EXPLODE, true);
        f.record = s[i].record;
        struct tg_trace_sbuf b = {0};
        if (isfinite(s[i].norm))
            tg_trace_sb_printf(&b, "training step %d: gradient norm %.6g is %.1fx the median %.6g of the %d steps before it "
                               "(loss %.6g)\n", s[i].step, s[i].norm, s[i].norm / med, med, i, s[i].loss);
        else
            tg_trace_sb_printf(&b, "training step %d: gradient norm is %g (loss %.6g)\n", s[i].step, s[i].norm, s[i].loss);
        largest_grads(&b, tr, i > 0 ? s[i - 1].record : 0, s[i].record);
        int later = 0;
        for (int k = i + 1; k < n; k++) later += !isfinite(s[k].norm) || (isfinite(med) && s[k].norm > EXPLODE_FACTOR * med);
        if (later) tg_trace_sb_printf(&b, "  %d later step%s too\n", later, later == 1 ? "" : "s");
        ok = tg_trace_add_finding(rep, &f, &b);
        break;   // the first one; later steps are counted in its text
    }
    free(s);
    free(hist);
    return ok;
}

// ---- entry points ---------------------------------------------------------------------

bool tg_trace_check_train(struct tg_trace * tr, struct tg_trace_report * rep) {
    int gis[64];
    const int n = graphs_to_check(tr, gis, 64);
    bool ok = true;
    for (int k = 0; k < n && ok; k++) ok = check_grad_of_grad(tr, gis[k], rep) && check_no_grad(tr, gis[k], rep);
    return ok && check_explode(tr, rep);
}

// The nearest tensor with a gradient link among ti's sources (BFS), -1.
static int upstream_grad(const struct tg_trace * tr, int gi, int ti) {
    int queue[64], head = 0, tail = 0;
    queue[tail++] = ti;
    while (head < tail) {
        struct tg_trace_tensor t;
        if (!tg_trace_get_tensor(tr, gi, queue[head++], &t)) continue;
        for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
            if (t.src[k] < 0) continue;
            if (tg_trace_grad_of(tr, gi, t.src[k]) >= 0) return t.src[k];
            if (tail < 64) queue[tail++] = t.src[k];
        }
    }
    return -1;
}

// The first gradient node after ti (in graph order) that ti feeds, -1.
static int downstream_grad(const struct tg_trace * tr, int gi, int ti, int n_nodes) {
    char * reach = calloc((size_t) n_nodes, 1);
    if (!reach) return -1;
    reach[ti] = 1;
    int found = -1;
    for (int j = ti + 1; j < n_nodes && found < 0; j++) {
        struct tg_trace_tensor t;
        if (!tg_trace_get_tensor(tr, gi, j, &t)) continue;
        for (int k = 0; k < TG_TRACE_MAX_SRC && !reach[j]; k++) reach[j] = t.src[k] >= 0 && t.src[k] < n_nodes && reach[t.src[k]];
        if (reach[j] && tg_trace_grad_of(tr, gi, j) >= 0) found = j;
    }
    free(reach);
    return found;
}

void tg_trace_describe_grad_side(struct tg_trace_sbuf * b, struct tg_trace * tr, int32_t graph_id, int32_t ti) {
    const int gi = graph_id >= 0 ? tg_trace_find_graph(tr, (uint32_t) graph_id) : -1;
    struct tg_trace_graph g;
    if (gi < 0 || !has_links(tr, gi) || !tg_trace_get_graph(tr, gi, &g) || ti < 0 || ti >= g.n_nodes) return;
    char b1[TG_TRACE_NAME], b2[TG_TRACE_NAME];
    const int of = tg_trace_grad_of(tr, gi, ti);
    if (of >= 0) {
        tg_trace_sb_printf(b, "  in the backward pass: it is the gradient of '%s' (#%d)\n", tname(tr, gi, of, b1), of);
        return;
    }
    const int up = upstream_grad(tr, gi, ti);
    if (up < 0) {
        tg_trace_sb_printf(b, "  in the forward pass (no gradient feeds it)\n");
        return;
    }
    const int down = downstream_grad(tr, gi, ti, g.n_nodes);
    tg_trace_sb_printf(b, "  in the backward pass: computed from '%s' (#%d), the gradient of '%s'", tname(tr, gi, up, b1), up,
                       tname(tr, gi, tg_trace_grad_of(tr, gi, up), b2));
    if (down >= 0) {
        char b3[TG_TRACE_NAME];
        tg_trace_sb_printf(b, "; part of '%s' (#%d), the gradient of '%s'", tname(tr, gi, down, b3), down,
                           tname(tr, gi, tg_trace_grad_of(tr, gi, down), b1));
    }
    tg_trace_sb_printf(b, "\n");
}
