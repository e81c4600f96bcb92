// source-live.c - the TUI's data source over a live run (tg/live.h): the
// graph being computed, its real tensors, step / continue / break.
#include "tg/live.h"
#include "tg/trace-types.h"
#include "tg/tui-live.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct live_src { struct tg_live * lv; char name[300]; int n_seen; };

static const char * lsrc_name(void * ctx) { return ((struct live_src *) ctx)->name; }
static int lsrc_n_graphs(void * ctx) { return tg_live_graph(((struct live_src *) ctx)->lv) ? 1 : 0; }

static int lsrc_n_nodes(void * ctx, int g) {
    struct tg_graph * gr = tg_live_graph(((struct live_src *) ctx)->lv);
    return gr && g == 0 ? gr->n_nodes : 0;
}

static void lsrc_graph_label(void * ctx, int g, char * buf, size_t n) {
    struct live_src * s = ctx;
    struct tg_live_where w;
    (void) g;
    const char * text = tg_live_text(s->lv);
    size_t tl = strlen(text);
    const char * tail = tl > 48 ? text + tl - 48 : text;   // the latest text
    char esc[160];
    size_t k = 0;
    for (const char * c = tail; *c && k + 5 < sizeof(esc); c++) {  // one line: escape newlines
        if (*c == '\n') { esc[k++] = '\\'; esc[k++] = 'n'; }
        else esc[k++] = *c;
    }
    esc[k] = '\0';
    if (tg_live_where(s->lv, &w))
        snprintf(buf, n, "live: %s %d token%s at pos %d, paused after node %d | generated %d: \"%s%s\"",
                 w.pos0 == 0 ? "prompt," : "decode of", w.n_tokens, w.n_tokens == 1 ? "" : "s", w.pos0, w.index,
                 w.n_generated, tl > 48 ? "..." : "", esc);
    else
        snprintf(buf, n, "live: %s | generated: \"%s%s\"", tg_live_message(s->lv), tl > 48 ? "..." : "", esc);
}

static int index_of(const struct tg_graph * g, const struct tg_tensor * t) {
    for (int i = 0; i < g->n_nodes; i++) if (g->nodes[i] == t) return i;
    return -1;
}

static void summarize(struct live_src * s, struct tg_tensor * t, struct tg_tui_node * out) {
    int64_t n = tg_nelements(t), chunk = 4096;
    float buf[4096];
    double sum = 0, sq = 0;
    int64_t finite = 0;
    out->min = INFINITY;
    out->max = -INFINITY;
    for (int64_t k = 0; k < n; k += chunk) {
        int64_t got = tg_live_read(s->lv, t, k, n - k < chunk ? n - k : chunk, buf);
        if (got <= 0) return;
        for (int64_t j = 0; j < got; j++) {
            float v = buf[j];
            if (isnan(v)) { out->n_nan++; continue; }
            if (isinf(v)) out->n_inf++;
            else { sum += v; sq += (double) v * v; finite++; }
            if (v == 0) out->n_zero++;
            if (v < out->min) out->min = v;
            if (v > out->max) out->max = v;
        }
    }
    out->has_summary = true;
    out->mean = finite ? sum / (double) finite : 0;
    out->rms = finite ? sqrt(sq / (double) finite) : 0;
    if (out->n_nan) out->flags |= TG_TUI_NAN;
    if (out->n_inf) out->flags |= TG_TUI_INF;
}

static bool lsrc_node(void * ctx, int g, int i, struct tg_tui_node * out) {
    struct live_src * s = ctx;
    struct tg_graph * gr = tg_live_graph(s->lv);
    if (!gr || g != 0 || i < 0 || i >= gr->n_nodes) return false;
    struct tg_tensor * t = gr->nodes[i];
    memset(out, 0, sizeof(*out));
    out->index = i;
    snprintf(out->name, sizeof(out->name), "%s", t->name);
    snprintf(out->op, sizeof(out->op), "%s", tg_op_name(t->op));
    snprintf(out->type, sizeof(out->type), "%s", tg_type_name(t->type));
    for (int d = 0; d < 4; d++) { out->ne[d] = t->ne[d]; out->nb[d] = t->nb[d]; }
    memcpy(out->op_params, t->op_params, sizeof(out->op_params));
    out->flags_tensor = t->flags;
    out->backend = out->split = out->buffer = out->inplace_of = -1;
    out->first_step = out->last_step = -1;
    out->offset = out->size = -1;
    out->time_ns = -1;
    out->token = -1;
    out->layer = -1;
    out->grad = t->grad ? index_of(gr, t->grad) : -1;   // a leaf (a weight) is not addressable live: -1
    out->grad_of = t->grad_of ? index_of(gr, t->grad_of) : -1;
    for (int k = 0; k < TG_MAX_SRC; k++) {
        if (!t->src[k]) continue;
        int n = out->n_src++;
        snprintf(out->src[n], sizeof(out->src[n]), "%s", t->src[k]->name);
        out->src_index[n] = index_of(gr, t->src[k]);
    }
    if (t->view_src) snprintf(out->view_src, sizeof(out->view_src), "%s", t->view_src->name);
    struct tg_live_where w;
    bool stopped = tg_live_where(s->lv, &w);
    if (stopped) {
        out->token = w.pos0 + w.n_tokens - 1;
        out->layer = w.layer;
        if (i == w.index) out->flags |= TG_TUI_CURRENT;
    }
    char pat[128];
    enum tg_live_break_kind kind;
    for (int k = 1; tg_live_break_get(s->lv, k, &kind, pat, sizeof(pat)); k++)
        if ((kind == TG_LIVE_BREAK_NAME && tg_trace_glob(pat, t->name)) || (kind == TG_LIVE_BREAK_OP && tg_trace_glob(pat, tg_op_name(t->op))))
            out->flags |= TG_TUI_BREAK;
    out->evaluated = tg_live_node_done(s->lv, i);
    out->has_contents = out->evaluated && t->data != NULL;
    if (out->has_contents) summarize(s, t, out);
    return true;
}

// A graph built by tg_graph_build_backward links gradients with grad/grad_of.
static bool lsrc_has_grads(void * ctx, int g) {
    struct tg_graph * gr = tg_live_graph(((struct live_src *) ctx)->lv);
    if (!gr || g != 0) return false;
    for (int i = 0; i < gr->n_nodes; i++)
        if (gr->nodes[i]->grad || gr->nodes[i]->grad_of) return true;
    return false;
}

static int64_t lsrc_read(void * ctx, int g, int i, int64_t first, int64_t n, float * out) {
    struct live_src * s = ctx;
    struct tg_graph * gr = tg_live_graph(s->lv);
    if (!gr || g != 0 || i < 0 || i >= gr->n_nodes || !tg_live_node_done(s->lv, i)) return 0;
    int64_t got = tg_live_read(s->lv, gr->nodes[i], first, n, out);
    return got < 0 ? 0 : got;
}

static bool lsrc_step(void * ctx, char * msg, size_t n) {
    struct live_src * s = ctx;
    bool ok = tg_live_step(s->lv, 1) == TG_OK;
    snprintf(msg, n, "%s", ok ? tg_live_message(s->lv) : tg_last_error());
    return ok;
}

static bool lsrc_cont(void * ctx, char * msg, size_t n) {
    struct live_src * s = ctx;
    bool ok = tg_live_continue(s->lv) == TG_OK;
    snprintf(msg, n, "%s", ok ? tg_live_message(s->lv) : tg_last_error());
    return ok;
}

static bool lsrc_break(void * ctx, const char * pattern, char * msg, size_t n) {
    struct live_src * s = ctx;
    enum tg_live_break_kind kind = TG_LIVE_BREAK_NAME;
    if (!strcmp(pattern, "nan")) kind = TG_LIVE_BREAK_NAN;
    else if (!strncmp(pattern, "op ", 3)) { kind = TG_LIVE_BREAK_OP; pattern += 3; }
    int k = tg_live_break_add(s->lv, kind, pattern);
    if (k < 0) { snprintf(msg, n, "%s", tg_last_error()); return false; }
    snprintf(msg, n, "breakpoint %d: %s%s (c continues to it)", k, kind == TG_LIVE_BREAK_OP ? "op " : "", pattern);
    return true;
}

static bool lsrc_next_decode(void * ctx, char * msg, size_t n) {
    struct live_src * s = ctx;
    bool ok = tg_live_next_decode(s->lv) == TG_OK;
    struct tg_live_where w;
    if (ok && tg_live_where(s->lv, &w) && w.index == 0)
        snprintf(msg, n, "next token: decode at pos %d, generated so far: %d", w.pos0, w.n_generated);
    else
        snprintf(msg, n, "%s", ok ? tg_live_message(s->lv) : tg_last_error());
    return ok;
}

static int lsrc_n_breaks(void * ctx) { return tg_live_break_count(((struct live_src *) ctx)->lv); }

static bool lsrc_break_info(void * ctx, int k, char * buf, size_t n) {
    enum tg_live_break_kind kind;
    char pat[128];
    if (!tg_live_break_get(((struct live_src *) ctx)->lv, k + 1, &kind, pat, sizeof(pat))) return false;
    static const char * kinds[] = {"name", "op", "nan"};
    snprintf(buf, n, "%-5s %s", kinds[kind], kind == TG_LIVE_BREAK_NAN ? "(any NaN/Inf result)" : pat);
    return true;
}

static bool lsrc_del_break(void * ctx, int k, char * msg, size_t n) {
    struct live_src * s = ctx;
    char what[160] = "";
    lsrc_break_info(ctx, k, what, sizeof(what));
    if (tg_live_break_delete(s->lv, k + 1) != TG_OK) { snprintf(msg, n, "%s", tg_last_error()); return false; }
    snprintf(msg, n, "deleted breakpoint %d: %s", k + 1, what);
    return true;
}

static int lsrc_graph_number(void * ctx, int g) {
    struct tg_live_where w;
    (void) g;
    return tg_live_where(((struct live_src *) ctx)->lv, &w) ? w.graph_seq : 0;
}

static void lsrc_where(void * ctx, char * buf, size_t n) {
    struct live_src * s = ctx;
    struct tg_live_where w;
    if (tg_live_where(s->lv, &w)) snprintf(buf, n, "stopped: node %d %s, token %d", w.index, w.node->name, w.pos0 + w.n_tokens - 1);
    else snprintf(buf, n, "%s", tg_live_get_state(s->lv) == TG_LIVE_DONE ? "run finished" : "not running");
}

static void lsrc_close(void * ctx) {
    struct live_src * s = ctx;
    tg_live_close(s->lv);
    free(s);
}

static const struct tg_tui_source_ops live_ops = {
    .name = lsrc_name, .n_graphs = lsrc_n_graphs, .graph_label = lsrc_graph_label, .n_nodes = lsrc_n_nodes,
    .node = lsrc_node, .read = lsrc_read, .step = lsrc_step, .cont = lsrc_cont, .set_break = lsrc_break,
    .where = lsrc_where, .next_decode = lsrc_next_decode, .n_breaks = lsrc_n_breaks, .break_info = lsrc_break_info,
    .del_break = lsrc_del_break, .graph_number = lsrc_graph_number, .has_grads = lsrc_has_grads, .close = lsrc_close,
};

bool tg_tui_source_live(const char * model, const char * prompt, int n_predict, int n_threads, struct tg_tui_source * out) {
    struct tg_live * lv = tg_live_open(model, n_threads, 512);
    if (!lv) return false;
    struct live_src * s = calloc(1, sizeof(*s));
    if (!s) { tg_live_close(lv); tg_error(TG_ERR_NOMEM, "out of memory"); return false; }
    s->lv = lv;
    const char * base = strrchr(model, '/');
    snprintf(s->name, sizeof(s->name), "live %s", base ? base + 1 : model);
    // start stopped at the first node: a catch-all breakpoint for the start only
    tg_live_break_add(lv, TG_LIVE_BREAK_NAME, "*");
    enum tg_status st = tg_live_run(lv, prompt, n_predict);
    tg_live_break_clear(lv);
    if (st != TG_OK) { lsrc_close(s); return false; }
    out->ops = &live_ops;
    out->ctx = s;
    return true;
}
