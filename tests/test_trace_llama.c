// test_trace_llama.c - a traced generation on the tiny model: every graph the
// trace holds (the first ones whole, later ones stored as changes to an
// earlier graph) reads back as exactly the graph the engine computed, node by
// node (name, op, shape, strides, sources), and the deltas keep the file small.
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
