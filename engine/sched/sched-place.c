// sched-place.c - placement passes (each decision with its cause), splits,
// split inputs and their copies, and the graph handed to the allocator.
#include "sched/sched-impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum tg_status oom(const char * what) { return tg_error(TG_ERR_NOMEM, "scheduler: out of memory (%s)", what); }

static const char * tname(const struct tg_tensor * t) {
    return t->name[0] ? t->name : tg_op_name(t->op);
}

static const char * bname(const struct tg_sched * s, int b) {
    return b >= 0 ? tg_backend_name(s->backends[b]) : "(none)";
}

// The note waiting for p's detail text, or NULL (p not one of s's).
static struct tg_sched_note * note_of(const struct tg_sched * s, const struct tg_sched_placement * p) {
    if (!s->graph) return NULL;
    if (s->node_note && p >= s->node_pl && p < s->node_pl + s->graph->n_nodes) return &s->node_note[p - s->node_pl];
    if (s->leaf_note && p >= s->leaf_pl && p < s->leaf_pl + s->graph->n_leafs) return &s->leaf_note[p - s->leaf_pl];
    return NULL;
}

// Records a decision. Its detail text (fmt: %s and %d) is formatted only
// when read: formatting it for every node of every graph cost ~0.7% of a
// generation profile. The arguments are names that live as long as the
// graph (tensor, backend and buffer names) and numbers.
static void set_pl(struct tg_sched * s, struct tg_sched_placement * p, int backend, enum tg_cause cause, int pass,
                   const char * fmt, ...) __attribute__((format(printf, 6, 7)));

static void set_pl(struct tg_sched * s, struct tg_sched_placement * p, int backend, enum tg_cause cause, int pass,
                   const char * fmt, ...) {
    p->backend = backend;
    p->cause = cause;
    p->pass = pass;
    struct tg_sched_note * nt = note_of(s, p);
    bool ok = nt != NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = 0;
    unsigned ints = 0;
    for (const char * f = fmt; ok && *f; f++) {
        if (*f != '%') continue;
        f++;
        if (*f == '%') continue;
        if (n == TG_SCHED_NOTE_ARGS || (*f != 's' && *f != 'd')) { ok = false; break; }
        if (*f == 's') nt->a[n++].s = va_arg(ap, const char *);
        else { ints |= 1u << n; nt->a[n++].d = va_arg(ap, int); }
    }
    va_end(ap);
    if (ok) {
        nt->fmt = fmt;
        nt->n = n;
        nt->ints = ints;
        p->detail[0] = '\0';
        return;
    }
    if (nt) nt->fmt = NULL;
    va_start(ap, fmt);
    vsnprintf(p->detail, sizeof p->detail, fmt, ap);
    va_end(ap);
}

struct tg_sched_placement * tg_sched_fill_detail(const struct tg_sched * s, const struct tg_sched_placement * cp) {
    // the detail is a cache of the note: writing it does not change what the
    // placement says (the accessors hand out const placements)
    struct tg_sched_placement * p = (struct tg_sched_placement *) cp;
    struct tg_sched_note * nt = p ? note_of(s, p) : NULL;
    if (!nt || !nt->fmt) return p;
    char * o = p->detail, * end = p->detail + sizeof p->detail - 1;
    int k = 0;
    for (const char * f = nt->fmt; *f && o < end; f++) {
        if (*f != '%') { *o++ = *f; continue; }
        f++;
        if (*f == '%') { *o++ = '%'; continue; }
        char num[16];
        const char * v = num;
        if (k < nt->n && (nt->ints >> k & 1u)) snprintf(num, sizeof num, "%d", nt->a[k].d);
        else v = k < nt->n && nt->a[k].s ? nt->a[k].s : "(null)";
        k++;
        while (*v && o < end) *o++ = *v++;
    }
    *o = '\0';
    nt->fmt = NULL;
    return p;
}

// Placement record of t in the current graph (node or leaf), or NULL.
static struct tg_sched_placement * pl_of(struct tg_sched * s, const struct tg_tensor * t) {
    int w = (int) tg_ptrmap_find(&s->where, t, -1);
    if (w >= 0) return &s->node_pl[w];
    if (w <= -2) return &s->leaf_pl[-w - 2];
    return NULL;
}

static int backend_of(struct tg_sched * s, const struct tg_tensor * t) {
    struct tg_sched_placement * p = pl_of(s, t);
    return p ? p->backend : -1;
}

// The buffer holding t's memory unless that memory comes from this
// scheduler's own compute buffers (an earlier allocation: placed again).
static struct tg_buffer * held_buffer(struct tg_sched * s, const struct tg_tensor * t) {
    struct tg_buffer * buf = tg_tensor_buffer(t);
    if (buf && tg_gallocr_owns_buffer(s->galloc, buf)) return NULL;
    return buf;
}

static bool supports(struct tg_sched * s, int b, const struct tg_tensor * op) {
    return tg_backend_supports_op(s->backends[b], op);
}

// The backend that should run op given that `mem` lives in buffer buf: the
// backend owning the buffer's device if it can use the buffer (and run op),
// else the first one that can. -1 if none.
static int backend_from_buffer(struct tg_sched * s, const struct tg_buffer * buf, const struct tg_tensor * op) {
    if (!buf) return -1;
    for (int b = 0; b < s->n_backends; b++) {
        struct tg_backend * be = s->backends[b];
        if (buf->buft->device && be->device == buf->buft->device && tg_backend_supports_buft(be, buf->buft)
            && (!op || supports(s, b, op)))
            return b;
    }
    for (int b = 0; b < s->n_backends; b++)
        if (tg_backend_supports_buft(s->backends[b], buf->buft) && (!op || supports(s, b, op))) return b;
    return -1;
}

// The buffer type t's memory has or will have (its buffer, else its backend's).
static struct tg_buffer_type * buft_of(struct tg_sched * s, const struct tg_tensor * t) {
    struct tg_buffer * buf = held_buffer(s, t);
    if (buf) return buf->buft;
    int b = backend_of(s, t);
    if (b < 0 && t->view_src) b = backend_of(s, t->view_src);
    return b >= 0 ? s->bufts[b] : NULL;
}

static bool buffer_supported(struct tg_sched * s, const struct tg_tensor * t, int b, bool unknown_ok) {
    struct tg_buffer_type * buft = buft_of(s, t);
    if (!buft) return unknown_ok;
    return tg_backend_supports_buft(s->backends[b], buft);
}

// ---- pass 1: pre-allocated tensors, weights, offload ---------------------------------

static void pass1_leaf(struct tg_sched * s, struct tg_sched_placement * p) {
    struct tg_tensor * t = p->tensor;
    struct tg_buffer * buf = held_buffer(s, t);
    if (!buf) return;
    int b = backend_from_buffer(s, buf, NULL);
    if (b < 0) return;
    set_pl(s, p, b, t->view_src ? TG_CAUSE_VIEW_SRC : TG_CAUSE_PREALLOCATED, 1, "%s is in buffer %s (usage %s)",
           tname(t), tg_buffer_name(buf), tg_buffer_usage_name(buf->usage));
}

static void pass1_node(struct tg_sched * s, struct tg_sched_placement * p) {
    struct tg_tensor * t = p->tensor;
    struct tg_buffer * buf = held_buffer(s, t);
    if (buf) {
        int b = backend_from_buffer(s, buf, t);
        if (b >= 0) {
            set_pl(s, p, b, t->view_src ? TG_CAUSE_VIEW_SRC : TG_CAUSE_PREALLOCATED, 1,
                   "%s %s is in buffer %s (usage %s)", t->view_src ? "result views" : "result",
                   t->view_src ? tname(t->view_src) : tname(t), tg_buffer_name(buf), tg_buffer_usage_name(buf->usage));
        }
        return;
    }
    for (int j = 0; j < TG_MAX_SRC; j++) {
        struct tg_tensor * src = t->src[j];
        struct tg_buffer * sb = src ? held_buffer(s, src) : NULL;
        if (!sb || sb->usage != TG_BUFFER_USAGE_WEIGHTS) continue;
        int b = backend_from_buffer(s, sb, t);
        if (b < 0) continue;
        if (b == s->n_backends - 1 && tg_buffer_is_host(sb)) {
            for (int o = 0; o < b; o++) {
                if (supports(s, o, t) && tg_backend_offload_op(s->backends[o], t)) {
                    set_pl(s, p, o, TG_CAUSE_OFFLOAD, 1, "reads weight %s in buffer %s, but %s asked for %s (offload_op)",
                           tname(src), tg_buffer_name(sb), bname(s, o), tg_op_name(t->op));
                    return;
                }
            }
        }
        set_pl(s, p, b, TG_CAUSE_WEIGHT_BUFFER, 1, "weight %s is in buffer %s (usage weights)", tname(src), tg_buffer_name(sb));
        return;
    }
}

// ---- pass 2: expansion --------------------------------------------------------------------

static bool is_expanded(const struct tg_sched_placement * p) {
    return p->cause == TG_CAUSE_EXPAND_DOWN || p->cause == TG_CAUSE_EXPAND_UP;
}

static void expand(struct tg_sched * s, struct tg_graph * g, bool down, bool include_fallback) {
    int cur = -1;
    const struct tg_tensor * from = NULL;
    for (int k = 0; k < g->n_nodes; k++) {
        int i = down ? k : g->n_nodes - 1 - k;
        struct tg_tensor * n = g->nodes[i];
        if (tg_op_is_view(n->op)) continue;
        struct tg_sched_placement * p = &s->node_pl[i];
        if (p->backend >= 0) {
            cur = (!include_fallback && p->backend == s->n_backends - 1) ? -1 : p->backend;
            from = n;
        } else if (cur >= 0 && supports(s, cur, n)) {
            set_pl(s, p, cur, down ? TG_CAUSE_EXPAND_DOWN : TG_CAUSE_EXPAND_UP, 2, "%s %s on %s",
                   down ? "after" : "before", tname(from), bname(s, cur));
        }
    }
}

// ---- pass 3: upgrade, nodes nobody claimed ---------------------------------------------

static bool srcs_supported(struct tg_sched * s, const struct tg_tensor * n, int b) {
    for (int j = 0; j < TG_MAX_SRC; j++)
        if (n->src[j] && !buffer_supported(s, n->src[j], b, true)) return false;
    return true;
}

static enum tg_status pass3_node(struct tg_sched * s, struct tg_sched_placement * p) {
    struct tg_tensor * n = p->tensor;
    if (p->backend >= 0) {
        if (!is_expanded(p)) return TG_OK;
        for (int b = 0; b < p->backend; b++) {
            if (s->bufts[b] != s->bufts[p->backend] || !supports(s, b, n) || !srcs_supported(s, n, b)) continue;
            set_pl(s, p, b, TG_CAUSE_UPGRADE, 3, "%s supports %s and shares buffer type %s with %s",
                   bname(s, b), tg_op_name(n->op), tg_buft_name(s->bufts[b]), bname(s, p->backend));
            break;
        }
        return TG_OK;
    }
    int best = -1, best_n = -1, n_src = 0, first_unsup = -1;
    for (int j = 0; j < TG_MAX_SRC; j++) n_src += n->src[j] != NULL;
    for (int b = 0; b < s->n_backends; b++) {
        if (!supports(s, b, n)) { if (first_unsup < 0 && best < 0) first_unsup = b; continue; }
        int cnt = 0;
        for (int j = 0; j < TG_MAX_SRC; j++)
            if (n->src[j] && buffer_supported(s, n->src[j], b, false)) cnt++;
        if (cnt > best_n) { best = b; best_n = cnt; }
    }
    if (best < 0) {
        char shape[96];
        return tg_error(TG_ERR_UNSUPPORTED, "node '%s' (%s %s) is supported by no backend of this scheduler",
                        tname(n), tg_op_name(n->op), tg_shape_str(n, shape, sizeof shape));
    }
    if (first_unsup >= 0 && first_unsup < best)
        set_pl(s, p, best, TG_CAUSE_UNSUPPORTED, 3, "%s not supported by %s; %s supports it (%d/%d inputs usable)",
               tg_op_name(n->op), bname(s, first_unsup), bname(s, best), best_n, n_src);
    else
        set_pl(s, p, best, TG_CAUSE_SRC, 3, "%s supports %s and %d/%d of its inputs' buffers",
               bname(s, best), tg_op_name(n->op), best_n, n_src);
    return TG_OK;
}

// ---- pass 4: views, leafs, leftovers ---------------------------------------------------

static void pass4(struct tg_sched * s, struct tg_graph * g) {
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < g->n_nodes; i++) {
            struct tg_sched_placement * p = &s->node_pl[i];
            struct tg_tensor * n = g->nodes[i];
            if (p->backend >= 0 || !n->view_src) continue;
            int b = backend_of(s, n->view_src);
            if (b < 0) b = backend_from_buffer(s, held_buffer(s, n->view_src), NULL);
            if (b >= 0) set_pl(s, p, b, TG_CAUSE_VIEW_SRC, 4, "view of %s on %s", tname(n->view_src), bname(s, b));
        }
        if (round == 1) break;
        // leafs without memory: the backend of their first consumer
        for (int l = 0; l < g->n_leafs; l++) {
            struct tg_sched_placement * p = &s->leaf_pl[l];
            if (p->backend >= 0) continue;
            for (int i = 0; i < g->n_nodes && p->backend < 0; i++) {
                struct tg_tensor * n = g->nodes[i];
                int b = s->node_pl[i].backend;
                if (b < 0) continue;
                for (int j = 0; j < TG_MAX_SRC; j++) {
                    if (n->src[j] != p->tensor && !(n->src[j] && n->src[j]->view_src == p->tensor)) continue;
                    set_pl(s, p, b, TG_CAUSE_DST, 4, "read first by %s on %s", tname(n), bname(s, b));
                    break;
                }
            }
        }
    }
    int fb = s->n_backends - 1;
    for (int i = 0; i < g->n_nodes; i++)
        if (s->node_pl[i].backend < 0) set_pl(s, &s->node_pl[i], fb, TG_CAUSE_FALLBACK, 4, "nothing decided: last backend %s", bname(s, fb));
    for (int l = 0; l < g->n_leafs; l++)
        if (s->leaf_pl[l].backend < 0) set_pl(s, &s->leaf_pl[l], fb, TG_CAUSE_FALLBACK, 4, "unused leaf: last backend %s", bname(s, fb));
}

// ---- placement ---------------------------------------------------------------------------

static enum tg_status prepare(struct tg_sched * s, struct tg_graph * g) {
    if ((size_t) g->n_nodes > s->cap_nodes) {   // node_pl and node_split share cap_nodes
        size_t cap = (size_t) g->n_nodes + (size_t) g->n_nodes / 2 + 16;
        if (!TG_RESIZE(s->node_pl, cap) || !TG_RESIZE(s->node_split, cap) || !TG_RESIZE(s->node_note, cap))
            return oom("placements");
        s->cap_nodes = cap;
    }
    if (!TG_GROW(s->leaf_pl, s->cap_leafs, (size_t) g->n_leafs)) return oom("placements");
    if (!TG_GROW(s->leaf_note, s->cap_leaf_notes, (size_t) g->n_leafs)) return oom("placements");
    enum tg_status st = tg_ptrmap_reset(&s->where, (size_t) (g->n_nodes + g->n_leafs));
    if (st != TG_OK) return st;
    for (int i = 0; i < g->n_nodes; i++) {
        memset(&s->node_pl[i], 0, sizeof(s->node_pl[i]));
        s->node_note[i].fmt = NULL;
        s->node_pl[i].tensor = g->nodes[i];
        s->node_pl[i].backend = -1;
        if ((st = tg_ptrmap_put(&s->where, tg_ptrmap_key(g->nodes[i]), i)) != TG_OK) return st;
    }
    for (int l = 0; l < g->n_leafs; l++) {
        memset(&s->leaf_pl[l], 0, sizeof(s->leaf_pl[l]));
        s->leaf_note[l].fmt = NULL;
        s->leaf_pl[l].tensor = g->leafs[l];
        s->leaf_pl[l].backend = -1;
        if ((st = tg_ptrmap_put(&s->where, tg_ptrmap_key(g->leafs[l]), -(l + 2))) != TG_OK) return st;
    }
    return TG_OK;
}

static enum tg_status place(struct tg_sched * s, struct tg_graph * g) {
    enum tg_status st = prepare(s, g);
    if (st != TG_OK) return st;
    // user pins
    for (int i = 0; i < g->n_nodes + g->n_leafs; i++) {
        struct tg_sched_placement * p = i < g->n_nodes ? &s->node_pl[i] : &s->leaf_pl[i - g->n_nodes];
        int b = (int) tg_ptrmap_find(&s->pins, p->tensor, -1);
        if (b < 0) continue;
        if (i < g->n_nodes && !supports(s, b, p->tensor))
            return tg_error(TG_ERR_UNSUPPORTED, "node '%s' (%s) was put on %s with tg_sched_set_tensor_backend, "
                            "but %s does not support it", tname(p->tensor), tg_op_name(p->tensor->op), bname(s, b), bname(s, b));
        set_pl(s, p, b, TG_CAUSE_USER, 0, "set by tg_sched_set_tensor_backend to %s", bname(s, b));
    }
    for (int l = 0; l < g->n_leafs; l++)
        if (s->leaf_pl[l].backend < 0) pass1_leaf(s, &s->leaf_pl[l]);
    for (int i = 0; i < g->n_nodes; i++)
        if (s->node_pl[i].backend < 0) pass1_node(s, &s->node_pl[i]);
    expand(s, g, true, false);
    expand(s, g, false, false);
    expand(s, g, true, true);
    expand(s, g, false, true);
    for (int i = 0; i < g->n_nodes; i++) {
        if (tg_op_is_view(g->nodes[i]->op) && s->node_pl[i].backend < 0) continue;
        if ((st = pass3_node(s, &s->node_pl[i])) != TG_OK) return st;
    }
    pass4(s, g);
    return TG_OK;
}

// ---- splits, inputs, copies ----------------------------------------------------------------

// Index of the node that produces t's memory, or -1 (leaf / pre-allocated).
static int producer(struct tg_sched * s, const struct tg_tensor * t) {
    const struct tg_tensor * m = t->view_src ? t->view_src : t;
    int w = (int) tg_ptrmap_find(&s->where, m, -1);
    return w >= 0 ? w : -1;
}

static enum tg_status make_splits(struct tg_sched * s, struct tg_graph * g) {
    s->n_splits = 0;
    int cur = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        int b = s->node_pl[i].backend;
        if (tg_op_is_view(g->nodes[i]->op) && cur >= 0) b = cur;   // views join the running split
        if (s->n_splits == 0 || b != cur) {
            if (!TG_GROW(s->splits, s->cap_splits, (size_t) s->n_splits + 1)) return oom("splits");
            struct tg_sched_split * sp = &s->splits[s->n_splits++];
            memset(sp, 0, sizeof(*sp));
            sp->backend = b;
            sp->i_start = i;
            cur = b;
        }
        s->splits[s->n_splits - 1].i_end = i + 1;
        s->node_split[i] = s->n_splits - 1;
    }
    return TG_OK;
}

// Collects the inputs of every split into s->io (indices kept in the split
// structs as offsets until all are known: pointers are fixed at the end).
static enum tg_status collect_inputs(struct tg_sched * s, struct tg_graph * g, int * off) {
    s->n_io = 0;
    for (int k = 0; k < s->n_splits; k++) {
        struct tg_sched_split * sp = &s->splits[k];
        off[k] = s->n_io;
        for (int i = sp->i_start; i < sp->i_end; i++) {
            struct tg_tensor * n = g->nodes[i];
            if (tg_op_is_view(n->op)) continue;
            for (int j = 0; j < TG_MAX_SRC; j++) {
                struct tg_tensor * src = n->src[j];
                if (!src) continue;
                int prod = producer(s, src);
                if (prod >= sp->i_start && prod < sp->i_end) continue;     // made inside the split
                if (prod < 0) {
                    const struct tg_tensor * m = src->view_src ? src->view_src : src;
                    int mb = backend_of(s, m);
                    if (mb < 0 || mb == sp->backend) continue;               // leaf on this backend
                }
                bool dup = false;
                for (int q = off[k]; q < s->n_io && !dup; q++) dup = s->io[q] == src;
                if (dup) continue;
                if (!TG_GROW(s->io, s->cap_io, (size_t) s->n_io + 1)) return oom("split inputs");
                s->io[s->n_io++] = src;
            }
        }
        sp->n_inputs = s->n_io - off[k];
    }
    return TG_OK;
}

static struct tg_tensor * make_copy(struct tg_sched * s, struct tg_tensor * src, int b) {
    struct tg_tensor * c = tg_new_tensor(s->copy_ctx, src->type, TG_MAX_DIMS, src->ne);
    if (!c) return NULL;
    for (int d = 0; d < TG_MAX_DIMS; d++) c->nb[d] = src->nb[d];   // same layout: bytes copy 1:1
    tg_format_name(c, "%s#%s", bname(s, b), tname(src));
    c->flags |= TG_FLAG_INPUT;
    c->src[0] = src;   // op NONE: never computed; tells the allocator the copy reads src at this step
    return c;
}

static enum tg_status replace_src(struct tg_sched * s, struct tg_tensor * n, int j, struct tg_tensor * c) {
    if (!TG_GROW(s->repl, s->cap_repl, (size_t) s->n_repl + 1)) return oom("source replacement");
    s->repl[s->n_repl++] = (struct tg_src_repl) { n, j, n->src[j] };
    n->src[j] = c;
    return TG_OK;
}

// Decides which inputs need a copy, creates the copies, points the split's
// nodes at them. io layout: [inputs of all splits][copies of all splits].
static enum tg_status make_copies(struct tg_sched * s, struct tg_graph * g, const int * off) {
    int n_in = s->n_io;
    if (!TG_GROW(s->io, s->cap_io, 2 * (size_t) n_in)) return oom("split copies");
    s->n_io = 2 * n_in;
    tg_context_free(s->copy_ctx);
    s->copy_ctx = NULL;
    s->n_copies = 0;
    for (int k = 0; k < s->n_splits; k++) {
        struct tg_sched_split * sp = &s->splits[k];
        sp->n_copies = 0;
        sp->copy_bytes = 0;
        sp->copy_ns = 0;
        for (int q = off[k]; q < off[k] + sp->n_inputs; q++) {
            struct tg_tensor * src = s->io[q];
            s->io[n_in + q] = NULL;
            if (buffer_supported(s, src, sp->backend, true)) continue;
            if (!s->copy_ctx) {
                struct tg_context_params cp = { (size_t) (n_in + 8) * tg_tensor_overhead(), NULL, true };
                s->copy_ctx = tg_context_new(cp);
                if (!s->copy_ctx) return tg_last_status();
            }
            struct tg_tensor * c = make_copy(s, src, sp->backend);
            if (!c) return tg_last_status();
            s->io[n_in + q] = c;
            sp->n_copies++;
            sp->copy_bytes += tg_nbytes(src);
            s->n_copies++;
            for (int i = sp->i_start; i < sp->i_end; i++)
                for (int j = 0; j < TG_MAX_SRC; j++)
                    if (g->nodes[i]->src[j] == src) {
                        enum tg_status st = replace_src(s, g->nodes[i], j, c);
                        if (st != TG_OK) return st;
                    }
        }
    }
    for (int k = 0; k < s->n_splits; k++) {
        s->splits[k].inputs = s->n_splits && s->splits[k].n_inputs ? &s->io[off[k]] : NULL;
        s->splits[k].copies = s->n_splits && s->splits[k].n_inputs ? &s->io[n_in + off[k]] : NULL;
    }
    return TG_OK;
}

// The allocator's graph: per split, its copies then its nodes; the user's leafs.
static enum tg_status build_gcopy(struct tg_sched * s, struct tg_graph * g) {
    size_t nn = (size_t) g->n_nodes + (size_t) s->n_copies;
    if (nn > s->cap_gc_nodes) {   // parallel arrays of one capacity
        size_t cap = nn + nn / 2 + 16;
        if (!TG_RESIZE(s->gcopy.nodes, cap) || !TG_RESIZE(s->gc_node_ids, cap) || !TG_RESIZE(s->gc_user_index, cap))
            return oom("allocator graph");
        s->cap_gc_nodes = cap;
    }
    if ((size_t) g->n_leafs > s->cap_gc_leafs) {
        size_t cap = (size_t) g->n_leafs + (size_t) g->n_leafs / 2 + 16;
        if (!TG_RESIZE(s->gcopy.leafs, cap) || !TG_RESIZE(s->gc_leaf_ids, cap)) return oom("allocator graph");
        s->cap_gc_leafs = cap;
    }
    int k = 0;
    for (int sp = 0; sp < s->n_splits; sp++) {
        struct tg_sched_split * x = &s->splits[sp];
        for (int q = 0; q < x->n_inputs; q++) {
            if (!x->copies[q]) continue;
            s->gcopy.nodes[k] = x->copies[q];
            s->gc_node_ids[k] = x->backend;
            s->gc_user_index[k] = -1;
            k++;
        }
        for (int i = x->i_start; i < x->i_end; i++) {
            s->gcopy.nodes[k] = g->nodes[i];
            s->gc_node_ids[k] = s->node_pl[i].backend;
            s->gc_user_index[k] = i;
            k++;
        }
    }
    for (int l = 0; l < g->n_leafs; l++) {
        s->gcopy.leafs[l] = g->leafs[l];
        s->gc_leaf_ids[l] = s->leaf_pl[l].backend;
    }
    s->gcopy.size = (int) s->cap_gc_nodes;
    s->gcopy.n_nodes = k;
    s->gcopy.n_leafs = g->n_leafs;
    s->gcopy.hash_size = 0;
    s->gcopy.hash_keys = NULL;
    return TG_OK;
}

enum tg_status tg_sched_split_graph(struct tg_sched * s, struct tg_graph * g) {
    if (g->n_nodes > s->graph_size)
        return tg_error(TG_ERR_INVALID_ARG, "scheduler: graph has %d nodes, the scheduler was made for %d (graph_size)",
                        g->n_nodes, s->graph_size);
    tg_sched_restore_srcs(s);
    s->graph = g;
    s->n_splits = 0;
    s->n_copies = 0;
    enum tg_status st = place(s, g);
    if (st == TG_OK) st = make_splits(s, g);
    int * off = NULL;
    if (st == TG_OK) {
        off = malloc((size_t) (s->n_splits + 1) * sizeof(int));
        if (!off) st = tg_error(TG_ERR_NOMEM, "scheduler: out of memory");
    }
    if (st == TG_OK) st = collect_inputs(s, g, off);
    if (st == TG_OK) st = make_copies(s, g, off);
    free(off);
    if (st == TG_OK) st = build_gcopy(s, g);
    if (st != TG_OK) { s->graph = NULL; tg_sched_restore_srcs(s); }
    return st;
}
