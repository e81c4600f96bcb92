// source-trace.c - the TUI's data source over a trace file (post-mortem).
#include "tg/trace-check.h"
#include "tg/trace-read.h"
#include "tg/tui-trace.h"
#include "tg/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trace_src {
    struct tg_trace * tr;
    char name[256];
    uint32_t sched_id;          // scheduler of the graph last looked at
    // one decoded contents cache (graph, node) -> floats
    int cache_gi, cache_node;
    float * cache;
    int64_t cache_first, cache_n;   // elements [cache_first, cache_first + cache_n)
    // tgdb check's findings (tg_trace_check), computed on first use
    bool checked;
    struct tg_trace_report rep;
    int32_t * find_g, * find_u;   // per finding: graph index of T and of U (-1 unknown)
    // gradient links of graph grads_gi (built once per graph from its GRADS
    // record): per tensor, its gradient and what it is the gradient of, -1 none
    int grads_gi;
    int32_t * grad, * grad_of;
};

// Graph index of the graph with this id, -1 if none.
static int graph_index_of_id(struct tg_trace * tr, int32_t id) {
    struct tg_trace_graph gr;
    if (id < 0) return -1;
    for (int g = 0; g < tg_trace_n_graphs(tr); g++)
        if (tg_trace_get_graph(tr, g, &gr) && (int32_t) gr.graph_id == id) return g;
    return -1;
}

// Runs the checks once. A failed check (out of memory) leaves no findings.
static void ensure_checked(struct trace_src * s) {
    if (s->checked) return;
    s->checked = true;
    if (tg_trace_check(s->tr, &s->rep) != TG_OK) { memset(&s->rep, 0, sizeof(s->rep)); return; }
    int n = s->rep.n_findings;
    s->find_g = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
    s->find_u = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
    if (!s->find_g || !s->find_u) { tg_trace_report_free(&s->rep); memset(&s->rep, 0, sizeof(s->rep)); return; }
    for (int k = 0; k < n; k++) {
        s->find_g[k] = graph_index_of_id(s->tr, s->rep.findings[k].graph_t);
        s->find_u[k] = graph_index_of_id(s->tr, s->rep.findings[k].graph_u);
    }
}

// True when a stale-read finding names node i of graph g (as the read tensor
// or as the one that overwrote it).
static bool node_is_stale(struct trace_src * s, int g, int i) {
    ensure_checked(s);
    for (int k = 0; k < s->rep.n_findings; k++) {
        const struct tg_trace_finding * f = &s->rep.findings[k];
        if (f->kind != TG_TRACE_FIND_STALE_READ) continue;
        if ((s->find_g[k] == g && f->tensor_t == i) || (s->find_u[k] == g && f->tensor_u == i)) return true;
    }
    return false;
}

static int src_n_problems(void * ctx) {
    struct trace_src * s = ctx;
    ensure_checked(s);
    return s->rep.n_findings;
}

static bool src_problem(void * ctx, int k, struct tg_tui_problem * out) {
    struct trace_src * s = ctx;
    ensure_checked(s);
    if (k < 0 || k >= s->rep.n_findings) return false;
    const struct tg_trace_finding * f = &s->rep.findings[k];
    memset(out, 0, sizeof(*out));
    snprintf(out->kind, sizeof(out->kind), "%s", tg_trace_finding_kind_name(f->kind));
    out->problem = f->problem;
    out->graph = s->find_g[k];
    out->node = out->graph >= 0 ? f->tensor_t : -1;
    out->graph_u = s->find_u[k];
    out->node_u = out->graph_u >= 0 ? f->tensor_u : -1;
    out->text = f->text ? f->text : "";
    return true;
}

static int src_graph_number(void * ctx, int g) {
    struct tg_trace_graph gr;
    return tg_trace_get_graph(((struct trace_src *) ctx)->tr, g, &gr) ? (int) gr.graph_id : g;
}

static const char * src_name(void * ctx) { return ((struct trace_src *) ctx)->name; }
static int src_n_graphs(void * ctx) { return tg_trace_n_graphs(((struct trace_src *) ctx)->tr); }

static int src_n_nodes(void * ctx, int g) {
    struct tg_trace_graph gr;
    return tg_trace_get_graph(((struct trace_src *) ctx)->tr, g, &gr) ? gr.n_nodes : 0;
}

static void src_graph_label(void * ctx, int g, char * buf, size_t n) {
    struct trace_src * s = ctx;
    struct tg_trace_graph gr;
    if (!tg_trace_get_graph(s->tr, g, &gr)) { snprintf(buf, n, "graph #%d (unreadable)", g); return; }
    int mi = tg_trace_marker_before(s->tr, gr.record);
    struct tg_trace_marker m;
    if (mi >= 0 && tg_trace_get_marker(s->tr, mi, &m) && m.kind == TG_TRACE_MARK_DECODE)
        snprintf(buf, n, "graph %u: %d nodes, %d leafs; %s %d token%s at pos %d", gr.graph_id, gr.n_nodes,
                 gr.n_leafs, m.text && m.text[0] ? m.text : "decode", m.n_tokens, m.n_tokens == 1 ? "" : "s", m.pos);
    else
        snprintf(buf, n, "graph %u: %d nodes, %d leafs", gr.graph_id, gr.n_nodes, gr.n_leafs);
}

// Makes s->grad / s->grad_of the gradient links of graph g (one pass over the
// GRADS record instead of a scan per lookup). False when g has none or on
// out of memory.
static bool load_grads(struct trace_src * s, int g) {
    if (s->grad && s->grads_gi == g) return true;
    struct tg_trace_graph gr;
    int nl = tg_trace_n_grads(s->tr, g);
    if (nl <= 0 || !tg_trace_get_graph(s->tr, g, &gr)) return false;
    int n = gr.n_nodes + gr.n_leafs;
    free(s->grad);
    free(s->grad_of);
    s->grad = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
    s->grad_of = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
    if (!s->grad || !s->grad_of) { free(s->grad); free(s->grad_of); s->grad = s->grad_of = NULL; return false; }
    for (int i = 0; i < n; i++) s->grad[i] = s->grad_of[i] = -1;
    for (int k = 0; k < nl; k++) {
        int gt, of;
        if (!tg_trace_get_grad_link(s->tr, g, k, &gt, &of) || gt < 0 || gt >= n || of < 0 || of >= n) continue;
        s->grad[of] = gt;
        s->grad_of[gt] = of;
    }
    s->grads_gi = g;
    return true;
}

static bool src_has_grads(void * ctx, int g) { return tg_trace_n_grads(((struct trace_src *) ctx)->tr, g) > 0; }

static void fill_eval(struct trace_src * s, const struct tg_trace_graph * gr, int i, struct tg_tui_node * out) {
    int ei = tg_trace_find_eval(s->tr, gr->graph_id, i, UINT32_MAX);
    struct tg_trace_eval e;
    if (ei < 0 || !tg_trace_get_eval(s->tr, ei, &e)) return;
    out->evaluated = true;
    if (e.flags & TG_TRACE_EVAL_TIME) out->time_ns = (int64_t) (e.t_end_ns - e.t_begin_ns);
    if (e.flags & TG_TRACE_EVAL_HASH) { out->hash = e.hash; out->has_hash = true; }
    if (e.flags & TG_TRACE_EVAL_SUMMARY) {
        out->has_summary = true;
        out->min = e.sum.min; out->max = e.sum.max; out->mean = e.sum.mean; out->rms = e.sum.rms;
        out->n_nan = (int64_t) e.sum.n_nan; out->n_inf = (int64_t) e.sum.n_inf; out->n_zero = (int64_t) e.sum.n_zero;
        if (e.sum.n_nan) out->flags |= TG_TUI_NAN;
        if (e.sum.n_inf) out->flags |= TG_TUI_INF;
    }
    out->has_contents = tg_trace_find_contents(s->tr, gr->graph_id, i, UINT32_MAX) >= 0;
    int mi = tg_trace_marker_before(s->tr, e.record);
    struct tg_trace_marker m;
    if (mi >= 0 && tg_trace_get_marker(s->tr, mi, &m)) out->token = m.pos + m.n_tokens - 1;
}

static bool src_node(void * ctx, int g, int i, struct tg_tui_node * out) {
    struct trace_src * s = ctx;
    struct tg_trace_graph gr;
    struct tg_trace_tensor t;
    if (!tg_trace_get_graph(s->tr, g, &gr) || i < 0 || i >= gr.n_nodes + gr.n_leafs) return false;
    if (!tg_trace_get_tensor(s->tr, g, i, &t)) return false;
    s->sched_id = gr.sched_id;
    memset(out, 0, sizeof(*out));
    out->index = i < gr.n_nodes ? i : -1;
    snprintf(out->name, sizeof(out->name), "%s", t.name);
    snprintf(out->op, sizeof(out->op), "%s", tg_trace_op_name(s->tr, t.op));
    snprintf(out->type, sizeof(out->type), "%s", tg_trace_type_name(s->tr, t.type));
    memcpy(out->ne, t.ne, sizeof(out->ne));
    memcpy(out->nb, t.nb, sizeof(out->nb));
    memcpy(out->op_params, t.op_params, sizeof(out->op_params));
    out->flags_tensor = t.flags;
    out->backend = out->split = out->buffer = out->inplace_of = -1;
    out->first_step = out->last_step = -1;
    out->offset = out->size = -1;
    out->time_ns = -1;
    out->token = -1;
    out->layer = tg_trace_layer_of_name(t.name);
    out->grad = out->grad_of = -1;
    if (load_grads(s, g)) { out->grad = s->grad[i]; out->grad_of = s->grad_of[i]; }
    char nb[TG_TRACE_NAME];
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
        if (t.src[k] == TG_TRACE_NONE) continue;
        int n = out->n_src++;
        snprintf(out->src[n], sizeof(out->src[n]), "%s", tg_trace_tensor_name(s->tr, g, t.src[k], nb));
        out->src_index[n] = t.src[k] < gr.n_nodes ? t.src[k] : -1;
    }
    if (t.view_src != TG_TRACE_NONE) snprintf(out->view_src, sizeof(out->view_src), "%s", tg_trace_tensor_name(s->tr, g, t.view_src, nb));
    struct tg_trace_placement pl;
    if (tg_trace_get_placement(s->tr, g, i, &pl)) {
        out->backend = pl.backend;
        snprintf(out->cause, sizeof(out->cause), "%s", pl.text ? pl.text : "");
    }
    out->split = tg_trace_split_of_node(s->tr, g, i);
    struct tg_trace_split sp;
    if (out->split >= 0 && tg_trace_get_split(s->tr, g, out->split, &sp)) out->split_begin = sp.node_begin == i;
    struct tg_trace_alloc a;
    if (tg_trace_get_alloc(s->tr, g, i, &a) && a.buffer != TG_TRACE_NONE) {
        out->buffer = a.buffer;
        struct tg_trace_buffer b;
        if (tg_trace_get_buffer(s->tr, g, a.buffer, &b)) out->buffer_uid = b.uid;
        out->offset = (int64_t) a.offset;
        out->size = (int64_t) a.size;
        out->inplace_of = a.inplace_parent;
        out->first_step = a.first_step;
        out->last_step = a.last_step;
    }
    if (i < gr.n_nodes) fill_eval(s, &gr, i, out);
    if (node_is_stale(s, g, i)) out->flags |= TG_TUI_STALE;
    return true;
}

static int src_n_backends(void * ctx) {
    struct trace_src * s = ctx;
    struct tg_trace_sched sc;
    for (int i = 0; i < tg_trace_n_scheds(s->tr); i++)
        if (tg_trace_get_sched(s->tr, i, &sc) && sc.sched_id == s->sched_id) return sc.n_backends;
    return 0;
}

static const char * src_backend_name(void * ctx, int b) {
    struct trace_src * s = ctx;
    return tg_trace_backend_name(s->tr, s->sched_id, b);
}

static int src_n_splits(void * ctx, int g) { return tg_trace_n_splits(((struct trace_src *) ctx)->tr, g); }

static bool src_split(void * ctx, int g, int i, struct tg_tui_split * out) {
    struct trace_src * s = ctx;
    struct tg_trace_split sp;
    if (!tg_trace_get_split(s->tr, g, i, &sp)) return false;
    memset(out, 0, sizeof(*out));
    out->backend = sp.backend;
    out->node_begin = sp.node_begin;
    out->node_end = sp.node_end;
    out->n_inputs = (int32_t) sp.n_inputs;
    size_t len = 0;
    for (uint32_t k = 0; k < sp.n_inputs; k++) {
        struct tg_trace_split_input in;
        if (!tg_trace_get_split_input(s->tr, g, (int) (sp.first_input + k), &in)) continue;
        out->copy_bytes += (int64_t) in.bytes;
        char nb[TG_TRACE_NAME];
        if (len + 8 < sizeof(out->inputs))
            len += (size_t) snprintf(out->inputs + len, sizeof(out->inputs) - len, "%s%s", k ? ", " : "",
                                     tg_trace_tensor_name(s->tr, g, in.tensor, nb));
    }
    return true;
}

static int src_n_buffers(void * ctx, int g) { return tg_trace_n_buffers(((struct trace_src *) ctx)->tr, g); }

static bool src_buffer(void * ctx, int g, int i, struct tg_tui_buffer * out) {
    struct trace_src * s = ctx;
    struct tg_trace_buffer b;
    if (!tg_trace_get_buffer(s->tr, g, i, &b)) return false;
    static const char * usage[] = {"any", "weights", "compute"};
    const char * u = b.usage >= 0 && b.usage < 3 ? usage[b.usage] : "?";
    snprintf(out->name, sizeof(out->name), "buffer #%llu: %s %s, type %s", (unsigned long long) b.uid,
             tg_trace_backend_name(s->tr, s->sched_id, b.backend), u, b.buft);
    out->uid = b.uid;
    out->backend = b.backend;
    out->size = (int64_t) b.size;
    snprintf(out->usage, sizeof(out->usage), "%s", u);
    return true;
}

#define WHOLE_MAX ((uint64_t) 64 << 20)   // contents up to this size are decoded whole
#define WINDOW    ((int64_t) 1 << 20)     // elements per window for bigger ones

// Makes element `first` of node i's recorded contents available in the float
// cache: small tensors are decoded whole; big ones (gigabytes) a window at a
// time, read by byte range with bounded memory.
static bool load_contents(struct trace_src * s, int g, int i, int64_t first) {
    if (s->cache && s->cache_gi == g && s->cache_node == i && first >= s->cache_first && first < s->cache_first + s->cache_n) return true;
    struct tg_trace_graph gr;
    struct tg_trace_contents c;
    if (!tg_trace_get_graph(s->tr, g, &gr)) return false;
    int ci = tg_trace_find_contents(s->tr, gr.graph_id, i, UINT32_MAX);
    if (ci < 0 || !tg_trace_get_contents(s->tr, ci, &c)) return false;
    int64_t total = c.ne[0] * c.ne[1] * c.ne[2] * c.ne[3], n = 0, w0 = 0;
    float * f = NULL;
    if (c.raw_size <= WHOLE_MAX) {
        f = tg_trace_contents_f32(s->tr, ci, &n);
    } else {
        const struct tg_type_traits * tt = tg_type_traits((enum tg_type) c.type);
        if (!tt || !tt->to_float || first < 0 || first >= total) return false;
        w0 = first / WINDOW * WINDOW;                         // windows are block aligned
        n = total - w0 < WINDOW ? total - w0 : WINDOW;
        size_t bytes = (size_t) (n / tt->blck_size) * tt->type_size;
        void * raw = malloc(bytes);
        f = malloc(sizeof(float) * (size_t) n);
        uint64_t off = (uint64_t) (w0 / tt->blck_size) * tt->type_size;
        if (!raw || !f || tg_trace_read_contents_range(s->tr, ci, off, raw, bytes) != TG_OK) { free(raw); free(f); return false; }
        tt->to_float(raw, f, n);
        free(raw);
    }
    if (!f) return false;
    free(s->cache);
    s->cache = f;
    s->cache_first = w0;
    s->cache_n = n;
    s->cache_gi = g;
    s->cache_node = i;
    return true;
}

static int64_t src_read(void * ctx, int g, int i, int64_t first, int64_t n, float * out) {
    struct trace_src * s = ctx;
    if (!load_contents(s, g, i, first) || first < s->cache_first || first >= s->cache_first + s->cache_n) return 0;
    int64_t avail = s->cache_first + s->cache_n - first;
    if (n > avail) n = avail;   // the caller asks again for the rest
    memcpy(out, s->cache + (first - s->cache_first), sizeof(float) * (size_t) n);
    return n;
}

static void src_sharing(void * ctx, int g, int i, char * buf, size_t n) {
    struct trace_src * s = ctx;
    struct tg_trace_graph gr;
    struct tg_trace_alloc me, o;
    size_t len = 0;
    buf[0] = '\0';
    if (!tg_trace_get_graph(s->tr, g, &gr) || !tg_trace_get_alloc(s->tr, g, i, &me) || me.buffer == TG_TRACE_NONE) return;
    int shown = 0;
    for (int k = 0; k < gr.n_nodes && shown < 12; k++) {
        if (k == i || !tg_trace_get_alloc(s->tr, g, k, &o) || o.buffer != me.buffer) continue;
        if (o.offset >= me.offset + me.size || me.offset >= o.offset + o.size) continue;
        const char * when = o.last_step < me.first_step ? "before" : o.first_step > me.last_step ? "after" : "during";
        char nb[TG_TRACE_NAME];
        len += (size_t) snprintf(buf + len, n > len ? n - len : 0, "shares bytes %s: #%d %s [0x%llx..0x%llx) steps %d..%d\n",
                                 when, k, tg_trace_tensor_name(s->tr, g, k, nb), (unsigned long long) o.offset,
                                 (unsigned long long) (o.offset + o.size), o.first_step, o.last_step);
        shown++;
        if (len >= n) break;
    }
    if (!shown && n > 0) snprintf(buf, n, "no other tensor of this graph used these bytes");
}

static void src_close(void * ctx) {
    struct trace_src * s = ctx;
    tg_trace_close(s->tr);
    free(s->cache);
    tg_trace_report_free(&s->rep);
    free(s->find_g);
    free(s->find_u);
    free(s->grad);
    free(s->grad_of);
    free(s);
}

static const struct tg_tui_source_ops trace_ops = {
    .name = src_name, .n_graphs = src_n_graphs, .graph_label = src_graph_label, .n_nodes = src_n_nodes,
    .node = src_node, .n_backends = src_n_backends, .backend_name = src_backend_name,
    .n_splits = src_n_splits, .split = src_split, .n_buffers = src_n_buffers, .buffer = src_buffer,
    .read = src_read, .sharing = src_sharing, .graph_number = src_graph_number,
    .n_problems = src_n_problems, .problem = src_problem, .has_grads = src_has_grads, .close = src_close,
};

bool tg_tui_source_trace(const char * path, struct tg_tui_source * out) {
    struct tg_trace * tr = tg_trace_open(path);
    if (!tr) return false;
    struct trace_src * s = calloc(1, sizeof(*s));
    if (!s) { tg_trace_close(tr); tg_error(TG_ERR_NOMEM, "out of memory"); return false; }
    s->tr = tr;
    s->cache_gi = s->cache_node = s->grads_gi = -1;
    const char * base = strrchr(path, '/');
    snprintf(s->name, sizeof(s->name), "%s", base ? base + 1 : path);
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    if (st.truncated)
        snprintf(s->name + strlen(s->name), sizeof(s->name) - strlen(s->name), st.n_damaged ? " (damaged)" : " (truncated)");
    out->ops = &trace_ops;
    out->ctx = s;
    return true;
}

struct tg_trace * tg_tui_source_trace_handle(struct tg_tui_source * src) {
    return src && src->ops == &trace_ops ? ((struct trace_src *) src->ctx)->tr : NULL;
}
