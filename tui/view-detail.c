// view-detail.c - everything the source knows about one node: op params,
// gradient links (training graphs), sources and users (Enter jumps),
// strides, placement cause, allocation, memory sharing, timing, hash,
// numeric summary. Also the gradient jump the node list shares.
#include "core/grow.h"
#include "tui-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dline { char text[256]; enum tui_color color; int jump; };  // jump: node index or -1

struct detail_priv {
    int graph, node;
    struct dline * lines;
    int n;
    size_t cap;
};

static void addl(struct detail_priv * p, enum tui_color c, int jump, const char * fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void addl(struct detail_priv * p, enum tui_color c, int jump, const char * fmt, ...) {
    if (!TG_GROW(p->lines, p->cap, (size_t) p->n + 1)) return;
    struct dline * d = &p->lines[p->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->text, sizeof(d->text), fmt, ap);
    va_end(ap);
    d->color = c;
    d->jump = jump;
}

static void add_users(struct tui * t, struct detail_priv * p, const char * name) {
    const struct tg_tui_source_ops * o = t->src->ops;
    int n = o->n_nodes(t->src->ctx, p->graph), found = 0;
    struct tg_tui_node u;
    for (int i = 0; i < n && found < 64; i++) {
        if (!o->node(t->src->ctx, p->graph, i, &u)) continue;
        for (int s = 0; s < u.n_src; s++) {
            if (u.src_index[s] == p->node || (u.src_index[s] < 0 && name[0] && strcmp(u.src[s], name) == 0 && u.index != p->node)) {
                addl(p, TUI_C_DEFAULT, i, "  user   #%-5d %-24s %s (as src%d)", i, u.name, u.op, s);
                found++;
                break;
            }
        }
    }
    if (!found) addl(p, TUI_C_DIM, -1, "  (no users in this graph%s)", "");
}

// The check findings (tgdb check) that name this node, shown first.
static void add_findings(struct tui * t, struct detail_priv * p) {
    const struct tg_tui_source_ops * o = t->src->ops;
    struct tg_tui_problem pr;
    int np = o->n_problems ? o->n_problems(t->src->ctx) : 0;
    for (int k = 0; k < np; k++) {
        if (!o->problem(t->src->ctx, k, &pr)) continue;
        bool is_t = pr.graph == p->graph && pr.node == p->node;
        bool is_u = pr.graph_u == p->graph && pr.node_u == p->node;
        if (!is_t && !is_u) continue;
        bool stale = strcmp(pr.kind, "stale-read") == 0;
        addl(p, pr.problem ? TUI_C_BAD : TUI_C_WARN, -1, "%s [%s]%s", pr.problem ? "PROBLEM" : "warning", pr.kind,
             stale ? (is_t ? " this tensor is read after its bytes were reused" : " this node overwrote a tensor read later") : "");
        const char * line = pr.text;
        while (*line) {
            const char * nl = strchr(line, '\n');
            int len = nl ? (int) (nl - line) : (int) strlen(line);
            addl(p, TUI_C_DEFAULT, -1, "  %.*s", len, line);
            line += len + (nl ? 1 : 0);
        }
    }
}

// "NAME (#N)" for tensor i of graph g, "NAME (leaf)" for a leaf.
static char * tensor_label(struct tui * t, int g, int i, char * buf, size_t n) {
    struct tg_tui_node nd;
    char esc[192];
    if (!t->src->ops->node(t->src->ctx, g, i, &nd)) snprintf(buf, n, "tensor %d (unreadable)", i);
    else if (nd.index < 0) snprintf(buf, n, "%s (leaf)", tg_tui_escape(nd.name, esc, sizeof(esc)));
    else snprintf(buf, n, "%s (#%d)", tg_tui_escape(nd.name, esc, sizeof(esc)), nd.index);
    return buf;
}

static bool graph_has_grads(struct tui * t, int g) {
    return t->src->ops->has_grads && t->src->ops->has_grads(t->src->ctx, g);
}

int tg_tui_grad_partner(struct tui * t, int graph, int node) {
    struct tg_tui_node nd;
    char lbl[256], esc[192];
    if (!t->src->ops->has_grads) { tg_tui_message(t, true, "no gradient information in this source"); return -1; }
    if (!graph_has_grads(t, graph)) {
        tg_tui_message(t, true, "no gradients in graph %d: a forward-only graph, or a trace older than format 1.3 "
                       "(tgdb train --trace records them)", tg_tui_graph_number(t, graph));
        return -1;
    }
    if (!t->src->ops->node(t->src->ctx, graph, node, &nd)) { tg_tui_message(t, true, "node %d is not readable", node); return -1; }
    tg_tui_escape(nd.name, esc, sizeof(esc));
    if (nd.grad_of >= 0) {
        tg_tui_message(t, false, "%s is the gradient of %s", esc, tensor_label(t, graph, nd.grad_of, lbl, sizeof(lbl)));
        return nd.grad_of;
    }
    if (nd.grad >= 0) {
        tg_tui_message(t, false, "gradient of %s: %s", esc, tensor_label(t, graph, nd.grad, lbl, sizeof(lbl)));
        return nd.grad;
    }
    tg_tui_message(t, true, "no gradient recorded for %s", esc);
    return -1;
}

// The gradient links of the node (Enter jumps): its gradient, what it is the
// gradient of; in a training graph, "none" when it has neither.
static void add_grads(struct tui * t, struct detail_priv * p, const struct tg_tui_node * nd) {
    char lbl[256];
    if (!graph_has_grads(t, p->graph)) return;
    if (nd->grad >= 0)
        addl(p, TUI_C_DEFAULT, nd->grad, "  gradient: %s", tensor_label(t, p->graph, nd->grad, lbl, sizeof(lbl)));
    if (nd->grad_of >= 0)
        addl(p, TUI_C_DEFAULT, nd->grad_of, "  gradient of: %s", tensor_label(t, p->graph, nd->grad_of, lbl, sizeof(lbl)));
    if (nd->grad < 0 && nd->grad_of < 0) addl(p, TUI_C_DIM, -1, "  gradient: none recorded");
}

static void build(struct tui * t, struct detail_priv * p) {
    const struct tg_tui_source_ops * o = t->src->ops;
    struct tg_tui_node nd;
    if (!o->node(t->src->ctx, p->graph, p->node, &nd)) { addl(p, TUI_C_BAD, -1, "node %d is not readable", p->node); return; }
    char shape[64], esc[192];
    tg_tui_format_shape(nd.ne, shape, sizeof(shape));
    if (nd.index >= 0) addl(p, TUI_C_HEADER, -1, "node #%d %s", nd.index, tg_tui_escape(nd.name, esc, sizeof(esc)));
    else addl(p, TUI_C_HEADER, -1, "leaf %s (tensor %d of the graph)", tg_tui_escape(nd.name, esc, sizeof(esc)), p->node);
    add_findings(t, p);
    addl(p, TUI_C_DEFAULT, -1, "  op      %s", nd.op);
    addl(p, TUI_C_DEFAULT, -1, "  type    %s   shape %s", nd.type, shape);
    addl(p, TUI_C_DEFAULT, -1, "  strides nb = [%llu, %llu, %llu, %llu]", (unsigned long long) nd.nb[0],
         (unsigned long long) nd.nb[1], (unsigned long long) nd.nb[2], (unsigned long long) nd.nb[3]);
    char params[160] = "";
    size_t len = 0;
    int last = 15;
    while (last >= 0 && nd.op_params[last] == 0) last--;
    for (int i = 0; i <= last && len < sizeof(params); i++)
        len += (size_t) snprintf(params + len, sizeof(params) - len, "%s%d", i ? ", " : "", nd.op_params[i]);
    addl(p, TUI_C_DEFAULT, -1, "  params  [%s]", params);
    if (nd.flags_tensor) addl(p, TUI_C_DEFAULT, -1, "  flags   %s%s%s", nd.flags_tensor & 1 ? "input " : "", nd.flags_tensor & 2 ? "output " : "", nd.flags_tensor & 4 ? "param " : "");
    if (nd.token >= 0 || nd.layer >= 0) addl(p, TUI_C_DEFAULT, -1, "  context token %d, layer %d", nd.token, nd.layer);
    add_grads(t, p, &nd);
    addl(p, TUI_C_HEADER, -1, "sources (Enter jumps)");
    for (int s = 0; s < nd.n_src; s++)
        addl(p, nd.src_index[s] >= 0 ? TUI_C_DEFAULT : TUI_C_DIM, nd.src_index[s], "  src%d   %s%s", s,
             tg_tui_escape(nd.src[s], esc, sizeof(esc)), nd.src_index[s] >= 0 ? "" : "  (leaf)");
    if (nd.view_src[0]) addl(p, TUI_C_DEFAULT, -1, "  view of %s", tg_tui_escape(nd.view_src, esc, sizeof(esc)));
    addl(p, TUI_C_HEADER, -1, "users (Enter jumps)");
    add_users(t, p, nd.name);
    addl(p, TUI_C_HEADER, -1, "placement");
    addl(p, tg_tui_backend_color(nd.backend), -1, "  backend %s, split %d", tg_tui_backend_name(t, nd.backend), nd.split);
    addl(p, TUI_C_DEFAULT, -1, "  cause   %s", nd.cause[0] ? nd.cause : "(not recorded)");
    addl(p, TUI_C_HEADER, -1, "allocation");
    if (nd.buffer >= 0) {
        addl(p, TUI_C_DEFAULT, -1, "  buffer #%llu  offset %lld  size %lld bytes", (unsigned long long) nd.buffer_uid,
             (long long) nd.offset, (long long) nd.size);
        addl(p, TUI_C_DEFAULT, nd.inplace_of, "  in place of %s", nd.inplace_of >= 0 ? "" : "- (own memory)");
        if (nd.inplace_of >= 0) snprintf(p->lines[p->n - 1].text, sizeof(p->lines[0].text), "  in place of node #%d (Enter jumps)", nd.inplace_of);
        addl(p, TUI_C_DEFAULT, -1, "  live    steps %d .. %d", nd.first_step, nd.last_step);
    } else {
        addl(p, TUI_C_DIM, -1, "  %s", nd.view_src[0] ? "a view: memory of its view source" : "no buffer recorded");
    }
    if (o->sharing) {
        char buf[2048] = "";
        o->sharing(t->src->ctx, p->graph, p->node, buf, sizeof(buf));
        for (char * line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) addl(p, TUI_C_DEFAULT, -1, "  %s", line);
    }
    addl(p, TUI_C_HEADER, -1, "evaluation");
    char tm[32];
    tg_tui_format_time(nd.time_ns, tm, sizeof(tm));
    addl(p, TUI_C_DEFAULT, -1, "  evaluated %s  time %s", nd.evaluated ? "yes" : "no", tm);
    if (nd.has_hash) addl(p, TUI_C_DEFAULT, -1, "  hash    %016llx", (unsigned long long) nd.hash);
    if (nd.has_summary) {
        addl(p, TUI_C_DEFAULT, -1, "  min %.6g  max %.6g  mean %.6g  rms %.6g", nd.min, nd.max, nd.mean, nd.rms);
        addl(p, nd.n_nan || nd.n_inf ? TUI_C_BAD : TUI_C_DEFAULT, -1, "  nan %lld  inf %lld  zeros %lld",
             (long long) nd.n_nan, (long long) nd.n_inf, (long long) nd.n_zero);
    }
    addl(p, TUI_C_DIM, -1, "  contents %s", nd.has_contents ? "recorded (t opens the pager)" : "not recorded");
}

static int detail_rows(struct tui_view * v) { return ((struct detail_priv *) v->priv)->n; }

static void detail_row(struct tui_view * v, int row, struct tui_line * l) {
    struct detail_priv * p = v->priv;
    tg_tui_line_add(l, p->lines[row].color, p->lines[row].text);
}

static void detail_title(struct tui_view * v, char * buf, size_t n) {
    struct detail_priv * p = v->priv;
    snprintf(buf, n, "node detail: graph %d, node %d", tg_tui_graph_number(v->tui, p->graph), p->node);
}

static bool detail_match(struct tui_view * v, int row, const char * pat) {
    return tg_tui_match_pattern(pat, ((struct detail_priv *) v->priv)->lines[row].text);
}

static bool detail_request(struct tui_view * v, enum tui_request r) {
    struct detail_priv * p = v->priv;
    if (r == TUI_REQ_ENTER) {
        int j = p->n ? p->lines[v->cur].jump : -1;
        if (j < 0) { tg_tui_message(v->tui, true, "nothing to jump to on this line"); return true; }
        tg_tui_push(v->tui, tg_tui_view_detail(v->tui, p->graph, j));
        return true;
    }
    if (r == TUI_REQ_GRAD) {  // in place: the view now shows the partner (v again comes back)
        int j = tg_tui_grad_partner(v->tui, p->graph, p->node);
        if (j < 0) return true;
        p->node = j;
        p->n = 0;
        build(v->tui, p);
        v->top = v->cur = v->hscroll = 0;
        return true;
    }
    if (r == TUI_REQ_VIEW_TENSOR) { tg_tui_push(v->tui, tg_tui_view_tensor(v->tui, p->graph, p->node)); return true; }
    return false;
}

static void detail_close(struct tui_view * v) {
    struct detail_priv * p = v->priv;
    free(p->lines);
    free(p);
}

static const struct tui_view_ops detail_ops = {
    .name = "detail", .n_rows = detail_rows, .row = detail_row, .title = detail_title,
    .request = detail_request, .match = detail_match, .close = detail_close,
};

struct tui_view * tg_tui_view_detail(struct tui * t, int graph, int node) {
    struct detail_priv * p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->graph = graph;
    p->node = node;
    build(t, p);
    struct tui_view * v = tg_tui_view_new(t, &detail_ops, p);
    if (!v) { free(p->lines); free(p); }
    return v;
}
