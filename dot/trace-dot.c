// trace-dot.c - a trace's graph as DOT (see tg/dot-trace.h).
#include "tg/dot-trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DROP (-1)
#define FOLD (-2)

static const char * backend_fill[] = {"#dbe9ff", "#ffe6cc", "#e2f5d8", "#f3e0f7", "#fff7c2"};

struct tg_dot_trace_options tg_dot_trace_default_options(void) {
    return (struct tg_dot_trace_options){.graph = -1, .depth = 2, .layer = -1, .leafs = true};
}

struct build {
    struct tg_trace * tr;
    const struct tg_dot_trace_options * o;
    int gi, n_nodes, n;
    struct tg_trace_graph gr;
    struct tg_trace_tensor * t;
    int * map;          // tensor index -> itself, FOLD or DROP
    int * layer;        // layer of each node (compute_layers), -1 if none
    int * grad;         // per tensor: its gradient, -1 none (NULL: the graph has no gradient links)
    int * grad_of;      // per tensor: the tensor it is the gradient of, -1 none (NULL likewise)
    char * flags;       // highlight bits per tensor
    int fold_lo, fold_hi, fold_count;
    struct tg_dot * d;
};

enum { HL_DIFF = 1, HL_FIRST = 2, HL_NEAR = 4, HL_NAN = 8, HL_NAN_ORIGIN = 16, HL_STALE = 32 };

// Marks in keep[] the neighbourhood of `center` (radius depth, both edge
// directions). False on out of memory.
static bool mark_around(struct build * b, int center, char * keep) {
    int * dist = malloc(sizeof(int) * (size_t) b->n), * queue = malloc(sizeof(int) * (size_t) b->n);
    if (!dist || !queue) { free(dist); free(queue); return false; }
    for (int i = 0; i < b->n; i++) dist[i] = -1;
    int head = 0, tail = 0;
    dist[center] = 0;
    queue[tail++] = center;
    while (head < tail) {
        int v = queue[head++];
        // weights and inputs are shared by many nodes: never walk through them
        if (dist[v] >= b->o->depth || v >= b->n_nodes) continue;
        for (int u = 0; u < b->n; u++) {  // edges v->u and u->v
            bool adj = false;
            for (int k = 0; k < TG_TRACE_MAX_SRC && !adj; k++) adj = b->t[u].src[k] == v || (u == v ? false : b->t[v].src[k] == u);
            if (adj && dist[u] < 0) { dist[u] = dist[v] + 1; queue[tail++] = u; }
        }
    }
    for (int i = 0; i < b->n; i++) if (dist[i] >= 0) keep[i] = 1;
    free(dist);
    free(queue);
    return true;
}

// Keeps only the neighbourhood of `center`; with o->grad also the
// neighbourhood of its gradient and, for a gradient, of its forward tensor.
static void select_around(struct build * b, int center) {
    char * keep = calloc((size_t) b->n, 1);
    if (!keep || !mark_around(b, center, keep)) { free(keep); return; }
    if (b->o->grad && b->grad) {
        if (b->grad[center] >= 0) mark_around(b, b->grad[center], keep);
        if (b->grad_of[center] >= 0) mark_around(b, b->grad_of[center], keep);
    }
    for (int i = 0; i < b->n; i++)
        if (!keep[i] || (i >= b->n_nodes && !b->o->leafs)) b->map[i] = DROP;
        else if (b->map[i] != FOLD) b->map[i] = i;
    free(keep);
}

// Fills b->grad / b->grad_of from the graph's gradient links (one pass over
// its GRADS record); leaves them NULL when it has none. False on out of memory.
static bool load_grads(struct build * b) {
    int nl = tg_trace_n_grads(b->tr, b->gi);
    if (nl <= 0) return true;
    b->grad = malloc(sizeof(int) * (size_t) b->n);
    b->grad_of = malloc(sizeof(int) * (size_t) b->n);
    if (!b->grad || !b->grad_of) return false;
    for (int i = 0; i < b->n; i++) b->grad[i] = b->grad_of[i] = -1;
    for (int k = 0; k < nl; k++) {
        int g, of;
        if (!tg_trace_get_grad_link(b->tr, b->gi, k, &g, &of) || g < 0 || g >= b->n || of < 0 || of >= b->n) continue;
        b->grad[of] = g;
        b->grad_of[g] = of;
    }
    return true;
}

// --grad needs gradient links: an error naming why when this graph has none.
static bool check_grads(struct build * b) {
    if (b->grad) return true;
    for (int g = 0; g < tg_trace_n_graphs(b->tr); g++)
        if (tg_trace_n_grads(b->tr, g) > 0) {
            tg_error(TG_ERR_INVALID_ARG, "graph %u has no gradient links (a forward graph): choose a training step's graph with --graph",
                     b->gr.graph_id);
            return false;
        }
    tg_error(TG_ERR_INVALID_ARG, "the trace has no gradient links: record a training run (tgdb train --trace)");
    return false;
}

static bool is_view_op(const struct build * b, int i) {
    const char * n = tg_trace_op_name(b->tr, b->t[i].op);
    return !strcmp(n, "NONE") || !strcmp(n, "VIEW") || !strcmp(n, "RESHAPE") || !strcmp(n, "PERMUTE") || !strcmp(n, "TRANSPOSE");
}

// Layer of a name, "Qcur-0 (reshaped)" included (the suffix a view adds).
static int name_layer(const char * name) {
    int l = tg_trace_layer_of_name(name);
    const char * sp = strstr(name, " (");
    if (l < 0 && sp && sp > name) {
        char base[TG_TRACE_NAME];
        snprintf(base, sizeof(base), "%.*s", (int) (sp - name), name);
        l = tg_trace_layer_of_name(base);
    }
    return l;
}

// The layer each node belongs to: its name's, or for a view, reshape,
// permute or transpose without one (e.g. "cache_k_l0 (view)") the layer of
// the node reading it (or else of its source), so selecting or folding a
// layer keeps the data flow through its views whole.
static void compute_layers(struct build * b) {
    for (int i = 0; i < b->n_nodes; i++) b->layer[i] = name_layer(b->t[i].name);
    for (int i = b->n_nodes - 1; i >= 0; i--) {   // consumers come after producers
        if (b->layer[i] < 0) continue;
        for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
            int s = b->t[i].src[k];
            if (s >= 0 && s < b->n_nodes && b->layer[s] < 0 && is_view_op(b, s)) b->layer[s] = b->layer[i];
        }
    }
    for (int i = 0; i < b->n_nodes; i++) {
        int s = b->t[i].src[0];
        if (b->layer[i] < 0 && is_view_op(b, i) && s >= 0 && s < b->n_nodes) b->layer[i] = b->layer[s];
    }
}

static void select_nodes(struct build * b) {
    const struct tg_dot_trace_options * o = b->o;
    for (int i = 0; i < b->n; i++) b->map[i] = i < b->n_nodes ? i : DROP;
    if (o->layer >= 0)
        for (int i = 0; i < b->n_nodes; i++) if (b->layer[i] != o->layer) b->map[i] = DROP;
    if (o->collapse) {
        int lmax = -1;
        for (int i = 0; i < b->n_nodes; i++) if (b->layer[i] > lmax) lmax = b->layer[i];
        if (lmax >= 2) {
            b->fold_lo = 1;
            b->fold_hi = lmax - 1;
            for (int i = 0; i < b->n_nodes; i++) {
                int l = b->layer[i];
                if (l >= 1 && l <= lmax - 1 && b->map[i] != DROP) { b->map[i] = FOLD; b->fold_count++; }
            }
        }
    }
    // leafs: kept when a kept (not folded) node reads them
    if (o->leafs)
        for (int i = 0; i < b->n_nodes; i++) {
            if (b->map[i] < 0) continue;
            for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
                int s = b->t[i].src[k];
                if (s >= b->n_nodes && s < b->n) b->map[s] = s;
            }
        }
}

static void highlights(struct build * b) {
    const struct tg_dot_trace_options * o = b->o;
    for (int i = 0; i < b->n_nodes; i++) {
        int ei = tg_trace_find_eval(b->tr, b->gr.graph_id, i, UINT32_MAX);
        struct tg_trace_eval e;
        if (ei >= 0 && tg_trace_get_eval(b->tr, ei, &e) && (e.flags & TG_TRACE_EVAL_SUMMARY) && (e.sum.n_nan || e.sum.n_inf))
            b->flags[i] |= HL_NAN;
    }
    if (o->diff) {
        for (int k = 0; k < o->diff->n_pairs; k++) {
            const struct tg_diff_pair * p = &o->diff->pairs[k];
            if (p->graph != b->gi || p->node_a < 0 || p->node_a >= b->n_nodes) continue;
            if (p->kind == TG_DIFF_DIFF) b->flags[p->node_a] |= HL_DIFF;
            if (p->kind == TG_DIFF_NEAR) b->flags[p->node_a] |= HL_NEAR;
            if (k == o->diff->first) b->flags[p->node_a] |= HL_FIRST;
        }
    }
    if (o->check) {
        for (int k = 0; k < o->check->n_findings; k++) {
            const struct tg_trace_finding * f = &o->check->findings[k];
            if (f->kind == TG_TRACE_FIND_NAN && f->graph_t == (int32_t) b->gr.graph_id && f->tensor_t >= 0 && f->tensor_t < b->n)
                b->flags[f->tensor_t] |= HL_NAN_ORIGIN;
            if (f->kind == TG_TRACE_FIND_STALE_READ) {
                if (f->graph_t == (int32_t) b->gr.graph_id && f->tensor_t >= 0 && f->tensor_t < b->n) b->flags[f->tensor_t] |= HL_STALE;
                if (f->graph_u == (int32_t) b->gr.graph_id && f->tensor_u >= 0 && f->tensor_u < b->n) b->flags[f->tensor_u] |= HL_STALE;
            }
        }
    }
}

static enum tg_status emit_tensor(struct build * b, int i) {
    const struct tg_trace_tensor * t = &b->t[i];
    char id[32], f1[96], f2[96], f3[64], f4[48], f5[48], shape[64];
    snprintf(id, sizeof(id), "t%d", i);
    tg_trace_shape_str(t->ne, shape, sizeof(shape));
    snprintf(f1, sizeof(f1), "%s", t->name[0] ? t->name : "(unnamed)");
    snprintf(f2, sizeof(f2), "%s %s %s", tg_trace_op_name(b->tr, t->op), tg_trace_type_name(b->tr, t->type), shape);
    struct tg_trace_alloc a;
    if (tg_trace_get_alloc(b->tr, b->gi, i, &a) && a.buffer != TG_TRACE_NONE)
        snprintf(f3, sizeof(f3), "buf %d @ 0x%llx%s", a.buffer, (unsigned long long) a.offset, a.inplace_parent != TG_TRACE_NONE ? " (in place)" : "");
    else
        snprintf(f3, sizeof(f3), "%s", t->view_src != TG_TRACE_NONE ? "view" : "no buffer");
    const char * fields[6] = {f1, f2, f3, NULL, NULL, NULL};
    int nf = 3;
    bool is_grad = b->grad_of && b->grad_of[i] >= 0;
    if (is_grad) fields[nf++] = "\xe2\x88\x87 gradient";   // U+2207 NABLA
    int ei = i < b->n_nodes ? tg_trace_find_eval(b->tr, b->gr.graph_id, i, UINT32_MAX) : -1;
    struct tg_trace_eval e;
    if (ei >= 0 && tg_trace_get_eval(b->tr, ei, &e) && (e.flags & TG_TRACE_EVAL_HASH)) {
        snprintf(f4, sizeof(f4), "hash %08llx", (unsigned long long) (e.hash >> 32));
        fields[nf++] = f4;
    }
    char fl = b->flags[i];
    if (fl) {
        snprintf(f5, sizeof(f5), "%s%s%s%s", fl & HL_FIRST ? "FIRST DIFF " : fl & HL_DIFF ? "DIFF " : fl & HL_NEAR ? "near " : "",
                 fl & HL_NAN_ORIGIN ? "NaN ORIGIN " : fl & HL_NAN ? "NaN/Inf " : "", fl & HL_STALE ? "STALE READ" : "", "");
        if (f5[0]) fields[nf++] = f5;
    }
    const char * fill = "white", * style = "filled", * extra = NULL;
    if (i >= b->n_nodes) { fill = "#eeeeee"; style = "filled,dashed"; }
    if (is_grad) { fill = "#ece0ff"; style = "filled,rounded"; }
    if (fl & (HL_DIFF | HL_NAN | HL_STALE)) extra = "color=red, penwidth=2";
    if (fl & (HL_FIRST | HL_NAN_ORIGIN)) extra = "color=red, penwidth=4";
    if ((fl & HL_NEAR) && !extra) extra = "color=orange";
    if (fl & (HL_FIRST | HL_NAN_ORIGIN)) fill = "#ffd6d6";
    return tg_dot_node(b->d, id, fields, nf, fill, style, extra);
}

// An edge statement inside a cluster would pull both ends into it (a node in
// two clusters breaks the layout), so copy edges are kept for the top level.
struct copy_edge { char from[32], to[48]; };

static enum tg_status emit_splits(struct build * b) {
    int ns = tg_trace_n_splits(b->tr, b->gi), n_inputs = tg_trace_n_split_inputs(b->tr, b->gi), n_ce = 0;
    char * done = calloc((size_t) b->n, 1);
    struct copy_edge * ce = calloc((size_t) (n_inputs > 0 ? n_inputs : 1), sizeof(*ce));
    if (!done || !ce) { free(done); free(ce); return tg_error(TG_ERR_NOMEM, "dot: out of memory"); }
    for (int s = 0; s < ns; s++) {
        struct tg_trace_split sp;
        if (!tg_trace_get_split(b->tr, b->gi, s, &sp)) continue;
        bool any = false;
        for (int i = sp.node_begin; i < sp.node_end && i < b->n_nodes; i++) any |= b->map[i] == i;
        if (!any) continue;
        char label[160];
        snprintf(label, sizeof(label), "split %d: %s (nodes %d..%d)", s, tg_trace_backend_name(b->tr, b->gr.sched_id, sp.backend),
                 sp.node_begin, sp.node_end - 1);
        tg_dot_cluster_begin(b->d, label, backend_fill[(sp.backend < 0 ? 0 : sp.backend) % 5]);
        for (uint32_t k = 0; k < sp.n_inputs; k++) {  // the split's input copies
            struct tg_trace_split_input in;
            if (!tg_trace_get_split_input(b->tr, b->gi, (int) (sp.first_input + k), &in) || in.tensor < 0 || in.tensor >= b->n) continue;
            if (!in.copy_name[0]) continue;  // read in place (shared buffer type): no copy to draw
            if (b->map[in.tensor] == DROP) continue;
            char id[48], f1[96], f2[64], src[32];
            snprintf(id, sizeof(id), "c%d_%u", s, k);
            snprintf(f1, sizeof(f1), "copy of %s", b->t[in.tensor].name);
            snprintf(f2, sizeof(f2), "%llu bytes", (unsigned long long) in.bytes);
            const char * fields[] = {f1, f2};
            tg_dot_node(b->d, id, fields, 2, "#fff2b3", "filled,dashed", "fontsize=8");
            if (b->map[in.tensor] == FOLD) snprintf(src, sizeof(src), "fold"); else snprintf(src, sizeof(src), "t%d", in.tensor);
            if (n_ce < n_inputs) {
                snprintf(ce[n_ce].from, sizeof(ce[n_ce].from), "%s", src);
                snprintf(ce[n_ce].to, sizeof(ce[n_ce].to), "%s", id);
                n_ce++;
            }
        }
        for (int i = sp.node_begin; i < sp.node_end && i < b->n_nodes; i++)
            if (b->map[i] == i) { emit_tensor(b, i); done[i] = 1; }
        tg_dot_cluster_end(b->d);
    }
    for (int i = 0; i < b->n; i++)  // nodes outside splits, and leafs
        if (b->map[i] == i && !done[i]) emit_tensor(b, i);
    for (int k = 0; k < n_ce; k++) tg_dot_edge(b->d, ce[k].from, ce[k].to, NULL, "style=dashed, headlabel=\"copy\"");
    free(done);
    free(ce);
    return TG_OK;
}

static void emit_edges(struct build * b) {
    char * fold_in = calloc((size_t) b->n, 1), * fold_out = calloc((size_t) b->n, 1);
    if (!fold_in || !fold_out) { free(fold_in); free(fold_out); return; }
    for (int i = 0; i < b->n_nodes; i++) {
        if (b->map[i] == DROP) continue;
        for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
            int s = b->t[i].src[k];
            if (s < 0 || s >= b->n || b->map[s] == DROP) continue;
            // slot names as head labels: graphviz 2.43's dot layout corrupts
            // memory on some labelled edges between nodes of one rank
            char from[32], to[32], label[48];
            snprintf(label, sizeof(label), "headlabel=\"src%d\"", k);
            bool sf = b->map[s] == FOLD, df = b->map[i] == FOLD;
            if (sf && df) continue;                                  // inside the fold
            if (sf) { if (fold_out[i]) continue; fold_out[i] = 1; snprintf(from, sizeof(from), "fold"); }
            else snprintf(from, sizeof(from), "t%d", s);
            if (df) { if (fold_in[s]) continue; fold_in[s] = 1; snprintf(to, sizeof(to), "fold"); }
            else snprintf(to, sizeof(to), "t%d", i);
            tg_dot_edge(b->d, from, to, NULL, sf || df ? NULL : label);
        }
    }
    free(fold_in);
    free(fold_out);
}

// --layer N names a layer of the graph: else an error naming the range.
static bool check_layer(const struct build * b) {
    if (b->o->layer < 0) return true;
    int lo = -1, hi = -1;
    bool found = false;
    for (int i = 0; i < b->n_nodes; i++) {
        if (b->layer[i] < 0) continue;
        if (lo < 0 || b->layer[i] < lo) lo = b->layer[i];
        if (b->layer[i] > hi) hi = b->layer[i];
        found |= b->layer[i] == b->o->layer;
    }
    if (found) return true;
    if (lo < 0) tg_error(TG_ERR_INVALID_ARG, "no layer %d: graph %u has no layered nodes", b->o->layer, b->gr.graph_id);
    else tg_error(TG_ERR_INVALID_ARG, "no layer %d in graph %u (layers %d..%d)", b->o->layer, b->gr.graph_id, lo, hi);
    return false;
}

// --grad: a dashed "grad" edge from each drawn tensor to its drawn gradient.
static void emit_grad_edges(struct build * b) {
    if (!b->o->grad || !b->grad) return;
    for (int i = 0; i < b->n; i++) {
        int g = b->grad[i];
        if (g < 0 || b->map[i] != i || b->map[g] != g) continue;
        char from[32], to[32];
        snprintf(from, sizeof(from), "t%d", i);
        snprintf(to, sizeof(to), "t%d", g);
        // a head label, not a label: see emit_edges; no rank constraint (the
        // data flow places the gradient)
        tg_dot_edge(b->d, from, to, NULL, "style=dashed, color=\"#7b3fb5\", fontcolor=\"#7b3fb5\", headlabel=\"grad\", constraint=false");
    }
}

struct tg_dot * tg_dot_from_trace(struct tg_trace * tr, const struct tg_dot_trace_options * opt) {
    struct tg_dot_trace_options def = tg_dot_trace_default_options();
    struct build b;
    memset(&b, 0, sizeof(b));
    b.tr = tr;
    b.o = opt ? opt : &def;
    int ng = tg_trace_n_graphs(tr);
    if (ng == 0) { tg_error(TG_ERR_INVALID_ARG, "the trace has no graphs"); return NULL; }
    b.gi = b.o->graph >= 0 ? tg_trace_find_graph(tr, (uint32_t) b.o->graph) : ng - 1;
    if (b.gi < 0 || !tg_trace_get_graph(tr, b.gi, &b.gr)) {
        struct tg_trace_graph g0, g1;
        if (tg_trace_get_graph(tr, 0, &g0) && tg_trace_get_graph(tr, ng - 1, &g1))
            tg_error(TG_ERR_INVALID_ARG, "no graph %d (the trace has %d graph%s, ids %u..%u; see 'tgdb trace info')", b.o->graph,
                     ng, ng == 1 ? "" : "s", g0.graph_id, g1.graph_id);
        else
            tg_error(TG_ERR_INVALID_ARG, "no graph %d in the trace", b.o->graph);
        return NULL;
    }
    b.n_nodes = b.gr.n_nodes;
    b.n = b.gr.n_nodes + b.gr.n_leafs;
    b.t = calloc((size_t) (b.n > 0 ? b.n : 1), sizeof(*b.t));
    b.map = calloc((size_t) (b.n > 0 ? b.n : 1), sizeof(int));
    b.flags = calloc((size_t) (b.n > 0 ? b.n : 1), 1);
    b.layer = calloc((size_t) (b.n > 0 ? b.n : 1), sizeof(int));
    b.d = tg_dot_new("tgdb");
    struct tg_dot * result = NULL;
    if (!b.t || !b.map || !b.flags || !b.layer || !b.d) { tg_error(TG_ERR_NOMEM, "dot: out of memory"); goto done; }
    for (int i = 0; i < b.n; i++)
        if (!tg_trace_get_tensor(tr, b.gi, i, &b.t[i])) {
            memset(&b.t[i], 0, sizeof(b.t[i]));
            for (int k = 0; k < TG_TRACE_MAX_SRC; k++) b.t[i].src[k] = TG_TRACE_NONE;
        }
    if (!load_grads(&b)) { tg_error(TG_ERR_NOMEM, "dot: out of memory"); goto done; }
    if (b.o->grad && !check_grads(&b)) goto done;
    compute_layers(&b);
    if (!check_layer(&b)) goto done;
    select_nodes(&b);
    if (b.o->around) {
        int c = tg_trace_find_tensor(tr, b.gi, b.o->around);
        if (c < 0) { tg_error(TG_ERR_INVALID_ARG, "no node named '%s' in graph %u", b.o->around, b.gr.graph_id); goto done; }
        if (b.o->grad && b.grad[c] < 0 && b.grad_of[c] < 0) {
            tg_error(TG_ERR_INVALID_ARG, "no gradient recorded for '%s' in graph %u (it neither has a gradient nor is one)", b.o->around,
                     b.gr.graph_id);
            goto done;
        }
        select_around(&b, c);
    }
    highlights(&b);
    char title[160];
    snprintf(title, sizeof(title), "graph %u: %d nodes, %d leafs", b.gr.graph_id, b.gr.n_nodes, b.gr.n_leafs);
    tg_dot_graph_attr(b.d, "label", title);
    tg_dot_graph_attr(b.d, "labelloc", "t");
    tg_dot_graph_attr(b.d, "rankdir", "TB");
    if (b.fold_count > 0) {
        char f1[96], f2[96];
        snprintf(f1, sizeof(f1), "layers %d..%d folded", b.fold_lo, b.fold_hi);
        snprintf(f2, sizeof(f2), "%d nodes (%d layers like layer 0)", b.fold_count, b.fold_hi - b.fold_lo + 1);
        const char * fields[] = {f1, f2};
        tg_dot_node(b.d, "fold", fields, 2, "#e8e8ff", "filled,bold", "penwidth=2");
    }
    if (emit_splits(&b) != TG_OK) goto done;
    emit_edges(&b);
    emit_grad_edges(&b);
    result = b.d;
    b.d = NULL;
done:
    tg_dot_free(b.d);
    free(b.t);
    free(b.map);
    free(b.flags);
    free(b.layer);
    free(b.grad);
    free(b.grad_of);
    return result;
}
