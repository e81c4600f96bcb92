// test_trace_llama.c - a traced generation on the tiny model: every graph the
// trace holds (the first ones whole, later ones stored as changes to an
// earlier graph) reads back as exactly the graph the engine computed, node by
// node (name, op, shape, strides, sources), and the deltas keep the file small.
// A generated token's graph is the last one with its cache stores moved
// (tg_sched_graph_moved, which names the moved views so the recorder makes
// only their entries again): its trace reads back as the trace of the same
// generation with every graph built and allocated anew.
#include "check.h"
#include "tg/backend.h"
#include "tg/llama.h"
#include "tg/trace-read.h"
#include "tg/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_GRAPHS 16
#define MAX_NODES  1024

struct seen_node { char name[64]; int op; int64_t ne[4]; size_t nb[4]; size_t view_offs; char src0[64];
                   uint64_t buffer_id, offset; };
struct capture {
    int graph;                                  // the decode call being computed
    int n[MAX_GRAPHS];
    struct seen_node nodes[MAX_GRAPHS][MAX_NODES];
};

// Asked about every node in order: note it, ask for nothing.
static bool capture_node(struct tg_tensor * t, bool ask, void * user) {
    struct capture * c = user;
    if (!ask || c->graph >= MAX_GRAPHS || c->n[c->graph] >= MAX_NODES) return false;
    struct seen_node * s = &c->nodes[c->graph][c->n[c->graph]++];
    snprintf(s->name, sizeof(s->name), "%s", t->name);
    s->op = (int) t->op;
    for (int d = 0; d < 4; d++) { s->ne[d] = t->ne[d]; s->nb[d] = t->nb[d]; }
    s->view_offs = t->view_offs;
    snprintf(s->src0, sizeof(s->src0), "%s", t->src[0] ? t->src[0]->name : "");
    struct tg_buffer * b = tg_tensor_buffer(t);
    s->buffer_id = b ? b->id : 0;
    s->offset = b && t->data ? (uint64_t) ((const char *) t->data - (const char *) tg_buffer_get_base(b)) : UINT64_MAX;
    return false;
}

// Records the prompt and nine generated tokens into path; reuse false: every
// token's graph is built anew (TG_GRAPH_REUSE=0). *n_reused: graphs moved.
static bool record_run(struct tg_llama_model * model, const char * path, bool reuse, int64_t * n_reused) {
    if (!reuse) setenv("TG_GRAPH_REUSE", "0", 1);
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    struct tg_llama_context * ctx = tg_llama_context_new(model, &cp);
    unsetenv("TG_GRAPH_REUSE");
    struct tg_trace_recorder * rec = ctx ? tg_trace_attach(tg_llama_context_sched(ctx), path, NULL) : NULL;
    int32_t prompt[4] = { 1, 15043, 3186, 29991 };
    bool ok = rec && tg_llama_decode(ctx, prompt, 4, 0) == TG_OK;
    for (int k = 0; ok && k < 9; k++) {
        int32_t tok = 100 + k;
        ok = tg_llama_decode(ctx, &tok, 1, 4 + k) == TG_OK;
    }
    *n_reused = ctx ? tg_llama_stats(ctx).n_reused : -1;
    if (rec) ok = tg_trace_detach(rec) == TG_OK && ok;
    tg_llama_context_free(ctx);
    return ok;
}

static bool same_tensor(const struct tg_trace_tensor * x, const struct tg_trace_tensor * y) {
    bool same = !strcmp(x->name, y->name) && x->op == y->op && x->type == y->type && x->flags == y->flags &&
                x->view_src == y->view_src && x->view_offs == y->view_offs &&
                !memcmp(x->op_params, y->op_params, sizeof(x->op_params)) && !memcmp(x->src, y->src, sizeof(x->src));
    for (int d = 0; d < TG_TRACE_MAX_DIMS; d++) same = same && x->ne[d] == y->ne[d] && x->nb[d] == y->nb[d];
    return same;
}

static bool same_alloc(const struct tg_trace_alloc * x, const struct tg_trace_alloc * y) {
    return x->buffer == y->buffer && x->inplace_parent == y->inplace_parent && x->offset == y->offset && x->size == y->size &&
           x->first_step == y->first_step && x->last_step == y->last_step && x->flags == y->flags;
}

// Whether traces a and b describe the same graphs: every tensor (but its
// uid), placement, buffer (but its uid) and allocation; else why not.
static bool same_graphs(const char * pa, const char * pb, char * why, size_t cap) {
    struct tg_trace * a = tg_trace_open(pa), * b = tg_trace_open(pb);
    bool same = a && b && tg_trace_n_graphs(a) == tg_trace_n_graphs(b);
    snprintf(why, cap, "%s", !a || !b ? "a trace does not open" : same ? "" : "graph counts differ");
    for (int gi = 0; same && gi < tg_trace_n_graphs(a); gi++) {
        struct tg_trace_graph ga, gb;
        same = tg_trace_get_graph(a, gi, &ga) && tg_trace_get_graph(b, gi, &gb) && ga.n_nodes == gb.n_nodes &&
               ga.n_leafs == gb.n_leafs && tg_trace_n_buffers(a, gi) == tg_trace_n_buffers(b, gi);
        if (!same) { snprintf(why, cap, "graph %d: sizes or buffer counts differ", gi); break; }
        for (int bi = 0; same && bi < tg_trace_n_buffers(a, gi); bi++) {
            struct tg_trace_buffer x, y;
            same = tg_trace_get_buffer(a, gi, bi, &x) && tg_trace_get_buffer(b, gi, bi, &y) && x.backend == y.backend &&
                   x.usage == y.usage && x.size == y.size && !strcmp(x.buft, y.buft);
            if (!same) snprintf(why, cap, "graph %d buffer %d differs", gi, bi);
        }
        for (int ti = 0; same && ti < ga.n_nodes + ga.n_leafs; ti++) {
            struct tg_trace_tensor x, y;
            struct tg_trace_placement px, py;
            struct tg_trace_alloc ax, ay;
            same = tg_trace_get_tensor(a, gi, ti, &x) && tg_trace_get_tensor(b, gi, ti, &y) && same_tensor(&x, &y);
            if (!same) { snprintf(why, cap, "graph %d tensor %d ('%s', '%s') differs", gi, ti, x.name, y.name); break; }
            same = tg_trace_get_placement(a, gi, ti, &px) && tg_trace_get_placement(b, gi, ti, &py) &&
                   px.backend == py.backend && px.cause == py.cause && !strcmp(px.text ? px.text : "", py.text ? py.text : "");
            if (!same) { snprintf(why, cap, "graph %d tensor %d ('%s'): placement differs", gi, ti, x.name); break; }
            same = tg_trace_get_alloc(a, gi, ti, &ax) && tg_trace_get_alloc(b, gi, ti, &ay) && same_alloc(&ax, &ay);
            if (!same) snprintf(why, cap, "graph %d tensor %d ('%s'): allocation differs (offset %llu, %llu)", gi, ti, x.name,
                                (unsigned long long) ax.offset, (unsigned long long) ay.offset);
        }
    }
    tg_trace_close(a);
    tg_trace_close(b);
    return same;
}

int main(void) {
    char model_path[1024], path[256];
    snprintf(model_path, sizeof(model_path), "%s/tiny-f32.gguf", TG_TEST_DATA);
    snprintf(path, sizeof(path), "test_trace_llama.%d.tgt", (int) getpid());
    struct tg_llama_model * model = tg_llama_model_load(model_path, NULL);
    CHECK(model != NULL, "model loaded: %s", model ? model_path : tg_last_error());
    if (!model) return tg_check_finish("test_trace_llama");
    static struct capture cap;
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.eval_cb = capture_node;
    cp.eval_cb_user = &cap;
    struct tg_llama_context * ctx = tg_llama_context_new(model, &cp);
    struct tg_trace_recorder * rec = ctx ? tg_trace_attach(tg_llama_context_sched(ctx), path, NULL) : NULL;
    CHECK(ctx && rec, "context and recorder: %s", rec ? "ok" : tg_last_error());
    if (!rec) { tg_llama_context_free(ctx); tg_llama_model_free(model); return tg_check_finish("test_trace_llama"); }
    int32_t prompt[4] = { 1, 15043, 3186, 29991 };
    bool ok = tg_llama_decode(ctx, prompt, 4, 0) == TG_OK;
    int n_graphs = 1;
    for (int k = 0; ok && k < 9; k++) {   // nine generated tokens, one graph each
        cap.graph = n_graphs++;
        int32_t tok = 100 + k;
        ok = tg_llama_decode(ctx, &tok, 1, 4 + k) == TG_OK;
    }
    CHECK(ok, "prompt and 9 tokens decoded");
    CHECK(tg_trace_detach(rec) == TG_OK, "trace closed");
    tg_llama_context_free(ctx);

    char moved_path[256], built_path[256], why[256];
    snprintf(moved_path, sizeof(moved_path), "test_trace_llama.%d.moved.tgt", (int) getpid());
    snprintf(built_path, sizeof(built_path), "test_trace_llama.%d.built.tgt", (int) getpid());
    int64_t n_moved = -1, n_built = -1;
    bool rok = record_run(model, moved_path, true, &n_moved) && record_run(model, built_path, false, &n_built);
    CHECK(rok && n_moved == 8 && n_built == 0, "the generation recorded with moved graphs (%lld of 9) and with every graph "
          "built (%lld moved): %s", (long long) n_moved, (long long) n_built, rok ? "ok" : tg_last_error());
    bool same_as_built = rok && same_graphs(moved_path, built_path, why, sizeof why);
    CHECK(same_as_built, "moved graphs read back as the same graphs built anew: tensors, placements, buffers, allocations (%s)",
          same_as_built ? "the same" : why);
    unlink(moved_path);
    unlink(built_path);
    tg_llama_model_free(model);

    struct tg_trace * tr = tg_trace_open(path);
    CHECK(tr != NULL, "trace opens: %s", tr ? path : tg_last_error());
    if (!tr) return tg_check_finish("test_trace_llama");
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    CHECK(st.complete && st.n_invalid == 0 && tg_trace_n_graphs(tr) == n_graphs, "%d graphs, complete, nothing invalid (%s)",
          tg_trace_n_graphs(tr), st.message);
    int n_delta = 0, graphs_equal = 0, bad_nodes = 0;
    for (int gi = 0; gi < tg_trace_n_graphs(tr) && gi < MAX_GRAPHS; gi++) {
        struct tg_trace_graph g;
        if (!tg_trace_get_graph(tr, gi, &g)) continue;
        n_delta += g.base_graph_id != 0;
        int bad = g.n_nodes == cap.n[gi] ? 0 : 1;
        for (int i = 0; !bad && i < g.n_nodes; i++) {
            struct tg_trace_tensor t;
            const struct seen_node * s = &cap.nodes[gi][i];
            char src0[TG_TRACE_NAME] = "";
            if (!tg_trace_get_tensor(tr, gi, i, &t)) { bad++; break; }
            if (t.src[0] >= 0) tg_trace_tensor_name(tr, gi, t.src[0], src0);
            bool same = !strcmp(t.name, s->name) && t.op == s->op && !strcmp(src0, s->src0) && t.view_offs == s->view_offs;
            for (int d = 0; d < 4; d++) same = same && t.ne[d] == s->ne[d] && t.nb[d] == s->nb[d];
            if (!same) {
                if (bad_nodes < 5) fprintf(stderr, "graph %d node %d: trace '%s' op %d ne0 %lld, engine '%s' op %d ne0 %lld\n",
                                           gi, i, t.name, t.op, (long long) t.ne[0], s->name, s->op, (long long) s->ne[0]);
                bad++;
            }
        }
        bad_nodes += bad;
        graphs_equal += bad == 0;
    }
    CHECK(graphs_equal == n_graphs, "every graph reads back as the engine's, node by node (%d/%d, %d mismatches)",
          graphs_equal, n_graphs, bad_nodes);
    CHECK(n_delta >= n_graphs - 3, "the generated tokens' graphs are stored as changes (%d of %d)", n_delta, n_graphs);
    // every node's recorded buffer and offset are where the engine computed it
    int alloc_ok = 0, alloc_n = 0;
    for (int gi = 0; gi < tg_trace_n_graphs(tr) && gi < MAX_GRAPHS; gi++) {
        for (int i = 0; i < cap.n[gi]; i++) {
            const struct seen_node * s = &cap.nodes[gi][i];
            struct tg_trace_alloc a;
            struct tg_trace_buffer b;
            alloc_n++;
            if (tg_trace_get_alloc(tr, gi, i, &a) && a.buffer >= 0 && tg_trace_get_buffer(tr, gi, a.buffer, &b) &&
                b.uid == s->buffer_id && a.offset == s->offset)
                alloc_ok++;
            else if (alloc_n - alloc_ok <= 3)
                fprintf(stderr, "graph %d node %d '%s': engine buffer #%llu offset %llu\n", gi, i, s->name,
                        (unsigned long long) s->buffer_id, (unsigned long long) s->offset);
        }
    }
    CHECK(alloc_n > 0 && alloc_ok == alloc_n, "every node's recorded buffer and offset are the engine's (%d/%d)", alloc_ok,
          alloc_n);
    // every eval's node has its tensor, with the shape the engine gave it
    int evals_ok = 0, n_evals = tg_trace_n_evals(tr);
    for (int i = 0; i < n_evals; i++) {
        struct tg_trace_eval e;
        struct tg_trace_tensor t;
        int gi = tg_trace_get_eval(tr, i, &e) ? tg_trace_find_graph(tr, e.graph_id) : -1;
        if (gi >= 0 && gi < MAX_GRAPHS && tg_trace_get_tensor(tr, gi, e.node, &t) && e.node < cap.n[gi] &&
            t.ne[1] == cap.nodes[gi][e.node].ne[1]) evals_ok++;
    }
    CHECK(n_evals > 0 && evals_ok == n_evals, "every eval names a tensor of its graph (%d/%d)", evals_ok, n_evals);
    tg_trace_close(tr);
    struct stat sb;
    stat(path, &sb);
    unlink(path);
    printf("trace: %lld bytes for %d graphs\n", (long long) sb.st_size, n_graphs);
    return tg_check_finish("test_trace_llama");
}
