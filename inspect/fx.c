// fx.c - helpers of the debugging-feature commands (fx.h).
#include "fx.h"

#include "cli.h"
#include "tg/core.h"
#include "tg/status.h"
#include "tg/trace-read.h"
#include "tg/types.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct tg_trace * tg_fx_open(const char * path) {
    struct tg_trace * tr = tg_trace_open(path);
    if (!tr) tg_cli_err("%s", tg_last_error());
    tg_cli_trace_warning(tr);
    return tr;
}

void tg_fx_json_str(FILE * f, const char * s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else if (c >= 0x80) {
            int n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
            int k = 1;
            while (n && k < n && ((unsigned char) s[k] & 0xc0) == 0x80) k++;
            if (n && k == n) { fwrite(s, 1, (size_t) n, f); s += n - 1; }
            else fputs("\\ufffd", f);
        } else fputc(c, f);
    }
    fputc('"', f);
}

const char * tg_fx_bytes(uint64_t n, char * buf, size_t cap) {
    if (n >= (1ull << 30)) snprintf(buf, cap, "%.2f GiB", (double) n / (1ull << 30));
    else if (n >= (1ull << 20)) snprintf(buf, cap, "%.2f MiB", (double) n / (1ull << 20));
    else if (n >= (1ull << 10)) snprintf(buf, cap, "%.1f KiB", (double) n / (1ull << 10));
    else snprintf(buf, cap, "%" PRIu64 " B", n);
    return buf;
}

int tg_fx_alloc_owner(const struct tg_trace * tr, int gi, int ti) {
    for (int depth = 0; depth < 4096; depth++) {
        struct tg_trace_alloc a;
        if (!tg_trace_get_alloc(tr, gi, ti, &a)) return -1;
        if (a.flags & TG_TRACE_ALLOC_INPLACE) {
            ti = a.inplace_parent;
        } else if (a.flags & TG_TRACE_ALLOC_VIEW) {
            struct tg_trace_tensor t;
            if (!tg_trace_get_tensor(tr, gi, ti, &t)) return -1;
            ti = t.view_src;
        } else {
            return ti;
        }
        if (ti < 0) return -1;
    }
    return -1;
}

// ---- a recorded graph rebuilt as engine tensors (no data) ---------------------------------

static int engine_op(const struct tg_trace * tr, int op) {
    const char * n = tg_trace_op_name(tr, op);
    for (int i = 0; i < TG_OP_COUNT; i++)
        if (!strcmp(tg_op_name((enum tg_op) i), n)) return i;
    return -1;
}

static int engine_type(const struct tg_trace * tr, int type) {
    const char * n = tg_trace_type_name(tr, type);
    for (int i = 0; i < TG_TYPE_COUNT; i++) {
        const char * e = tg_type_name((enum tg_type) i);
        if (e && !strcmp(e, n)) return i;
    }
    return -1;
}

void tg_fx_graph_free(struct tg_fx_graph * fg) {
    if (!fg) return;
    free(fg->ts);
    free(fg->bufid);
    tg_context_free(fg->ctx);
    free(fg);
}

struct tg_fx_graph * tg_fx_rebuild(const struct tg_trace * tr, int gi, int64_t from, int64_t to, char * why, size_t cap) {
    struct tg_trace_graph g;
    if (!tg_trace_get_graph(tr, gi, &g)) { snprintf(why, cap, "graph unreadable"); return NULL; }
    const int nt = g.n_nodes + g.n_leafs;
    struct tg_fx_graph * fg = calloc(1, sizeof(*fg));
    if (!fg) { snprintf(why, cap, "out of memory"); return NULL; }
    struct tg_context_params cp = { .mem_size = (size_t) (nt + 16) * tg_tensor_overhead() + tg_graph_overhead(nt + 16) + 4096,
                                    .no_alloc = true };
    fg->ctx = tg_context_new(cp);
    fg->ts = calloc((size_t) (nt ? nt : 1), sizeof(*fg->ts));
    fg->bufid = calloc((size_t) (nt ? nt : 1), sizeof(int));
    fg->n = nt;
    if (!fg->ctx || !fg->ts || !fg->bufid) { snprintf(why, cap, "out of memory"); goto fail; }
    // tensors: leafs first (sources), then nodes in order; views after their source
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < nt; k++) {
            const int ti = pass == 0 ? g.n_nodes + k : k;
            if (pass == 0 && k >= g.n_leafs) break;
            if (pass == 1 && k >= g.n_nodes) break;
            struct tg_trace_tensor t;
            struct tg_trace_alloc a;
            if (!tg_trace_get_tensor(tr, gi, ti, &t) || !tg_trace_get_alloc(tr, gi, ti, &a)) {
                snprintf(why, cap, "tensor %d of graph %u unreadable", ti, g.graph_id);
                goto fail;
            }
            const int type = engine_type(tr, t.type), op = engine_op(tr, t.op);
            if (type < 0 || op < 0) {
                snprintf(why, cap, "'%s': type %s or op %s unknown to this engine", t.name, tg_trace_type_name(tr, t.type),
                         tg_trace_op_name(tr, t.op));
                goto fail;
            }
            int64_t ne[4];
            for (int d = 0; d < 4; d++) ne[d] = from > 0 && t.ne[d] == from ? to : t.ne[d];
            struct tg_tensor * x = tg_new_tensor(fg->ctx, (enum tg_type) type, 4, ne);
            if (!x) { snprintf(why, cap, "'%s': %s", t.name, tg_last_error()); goto fail; }
            snprintf(x->name, sizeof(x->name), "%s", t.name);
            x->op = (enum tg_op) op;
            memcpy(x->op_params, t.op_params, sizeof(x->op_params));
            x->flags = t.flags;
            for (int s = 0; s < TG_TRACE_MAX_SRC && s < TG_MAX_SRC; s++)
                x->src[s] = t.src[s] >= 0 && t.src[s] < nt ? fg->ts[t.src[s]] : NULL;
            if (t.view_src >= 0 && t.view_src < nt && fg->ts[t.view_src]) {
                x->view_src = fg->ts[t.view_src];
                x->view_offs = (size_t) t.view_offs;
            }
            // memory the graph did not plan (weights, KV cache, inputs set before): somewhere else
            if (!x->view_src && (a.flags & (TG_TRACE_ALLOC_EXTERNAL | TG_TRACE_ALLOC_NONE))) x->data = (void *) (uintptr_t) 64;
            fg->bufid[ti] = a.buffer;
            fg->ts[ti] = x;
        }
    }
    for (int k = 0; k < nt; k++)
        if (!fg->ts[k]) { snprintf(why, cap, "tensor %d of graph %u has a source after it", k, g.graph_id); goto fail; }
    fg->graph = tg_graph_new(fg->ctx, nt + 16);
    if (!fg->graph) { snprintf(why, cap, "%s", tg_last_error()); goto fail; }
    for (int k = 0; k < g.n_nodes; k++) fg->graph->nodes[fg->graph->n_nodes++] = fg->ts[k];
    for (int k = 0; k < g.n_leafs; k++) fg->graph->leafs[fg->graph->n_leafs++] = fg->ts[g.n_nodes + k];
    return fg;
fail:
    tg_fx_graph_free(fg);
    return NULL;
}
