// recorder-graph.c - the recorder's graph side: SCHED, GRAPH, PLACEMENT,
// SPLITS and ALLOC records from scheduler events; engine pointers become
// trace indices through pointer maps (core/ptrmap.h).
#define XXH_INLINE_ALL   // the fingerprints below: short inputs, inlined
#include "recorder-impl.h"

#include "tg/cpu.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- schedulers -------------------------------------------------------------------

struct rec_sched * tg_trace_rec_sched_state(struct tg_trace_recorder * r, struct tg_sched * sched, uint64_t sched_id) {
    for (int i = 0; i < r->n_scheds; i++)
        if (r->scheds[i].sched_id == sched_id) return &r->scheds[i];
    if (r->n_scheds == REC_MAX_SCHEDS) return NULL;
    struct rec_sched * s = &r->scheds[r->n_scheds++];
    memset(s, 0, sizeof(*s));
    s->sched_id = sched_id;
    s->sched = sched;
    s->graph_id = UINT32_MAX;
    if (sched) {
        struct tg_trace_sched ts = { .sched_id = (uint32_t) sched_id, .n_backends = 0 };
        int n = tg_sched_n_backends(sched);
        for (int b = 0; b < n && b < TG_TRACE_MAX_BACKENDS; b++) {
            struct tg_backend * be = tg_sched_get_backend(sched, b);
            ts.backend[b] = be ? tg_backend_name(be) : "?";
            struct tg_buffer_type * bt = be ? tg_backend_get_default_buffer_type(be) : NULL;
            ts.buft[b] = bt ? tg_buft_name(bt) : "?";
            ts.n_backends = b + 1;
        }
        tg_trace_write_sched(r->w, &ts);
        s->written = true;
    }
    return s;
}

void tg_trace_rec_sched_free(struct rec_sched * s) {
    tg_ptrmap_free(&s->index);
    free(s->vd_pre);
    free(s->vd_cand);
    free(s->tensors);
    free(s->gbase);
    free(s->pbase);
    free(s->pbase_text);
    free(s->abase);
    free(s->changed);
    free(s->seen_sum);
    free(s->seen_links);
    free(s->cur);
    free(s->differs);
    free(s->seen_copies);
    free(s->pl);
    free(s->al);
    tg_ptrmap_free(&s->ainfo);
    free(s->ainfo_keys);
    free(s->steps);
    free(s->steps_nodes);
    free(s->pch);
    free(s->mv);
    free(s->mv_keys);
    free(s->ach);
}

// A delta is written when at most this fraction of the entries changed.
#define DELTA_MAX_CHANGED(n) ((n) / 4)

static int32_t * changed_scratch(struct rec_sched * s, int n) {
    return TG_GROW(s->changed, s->cap_changed, (size_t) n) ? s->changed : NULL;
}

// ---- graph structure -----------------------------------------------------------------

static bool add_tensor(struct rec_sched * s, struct tg_tensor * t) {
    if (tg_ptrmap_get(&s->index, tg_ptrmap_key(t), NULL)) return true;
    if (!TG_GROW(s->tensors, s->cap_tensors, (size_t) s->n_tensors + 1)) return false;
    s->tensors[s->n_tensors] = t;
    return tg_ptrmap_put(&s->index, tg_ptrmap_key(t), (uint64_t) s->n_tensors++) == TG_OK;
}

static int32_t index_of(const struct rec_sched * s, const struct tg_tensor * t) {
    uint64_t v;
    return t && tg_ptrmap_get(&s->index, tg_ptrmap_key(t), &v) ? (int32_t) v : TG_TRACE_NONE;
}

// Fingerprints of a tensor's sources and view source (adjacent in the
// struct), and of its whole struct.
_Static_assert(offsetof(struct tg_tensor, view_src) == offsetof(struct tg_tensor, src) + sizeof(((struct tg_tensor *) 0)->src),
               "src[] and view_src are adjacent");
static uint64_t links_sum(const struct tg_tensor * t) {
    return XXH3_64bits(t->src, sizeof(t->src) + sizeof(t->view_src));
}
// What fill_tensor reads: the fields up to the data pointer (under XXH3's
// 240 bytes: its quick mid-size path) and the name.
_Static_assert(offsetof(struct tg_tensor, data) <= 240, "the fields before data fit XXH3's mid-size path");
static XXH128_hash_t tensor_sum(const struct tg_tensor * t) {
    XXH128_hash_t h = XXH3_128bits(t, offsetof(struct tg_tensor, data));
    h.low64 ^= XXH3_64bits(t->name, sizeof(t->name));
    return h;
}

// Whether g (with ev's split copies) lists the same tensors as the last
// graph: the same nodes and leafs in the same order, the same split copies,
// and every listed tensor with the same sources and view source (the list
// is their closure, so it comes out the same).
static bool same_list(const struct rec_sched * s, const struct tg_graph * g,
                      const struct tg_obs_split_event * ev) {
    if (!s->seen_ok || g->n_nodes != s->n_nodes || g->n_leafs != s->n_leafs ||
        s->n_tensors < g->n_nodes + g->n_leafs)
        return false;
    if ((g->n_nodes && memcmp(s->tensors, g->nodes, (size_t) g->n_nodes * sizeof(*g->nodes)) != 0) ||
        (g->n_leafs && memcmp(s->tensors + g->n_nodes, g->leafs, (size_t) g->n_leafs * sizeof(*g->leafs)) != 0))
        return false;
    int c = 0;
    for (int k = 0; ev && k < ev->n_splits; k++)
        for (int j = 0; ev->splits[k].copies && j < ev->splits[k].n_inputs; j++) {
            struct tg_tensor * x = ev->splits[k].copies[j];
            if (!x) continue;
            if (c == s->n_seen_copies || s->seen_copies[c] != x) return false;
            c++;
        }
    if (c != s->n_seen_copies) return false;
    for (int i = 0; i < s->n_tensors; i++)
        if (links_sum(s->tensors[i]) != s->seen_links[i]) return false;
    return true;
}

// Remembers ev's split copies for same_list. False on OOM.
static bool keep_copies(struct rec_sched * s, const struct tg_obs_split_event * ev) {
    s->n_seen_copies = 0;
    for (int k = 0; ev && k < ev->n_splits; k++)
        for (int j = 0; ev->splits[k].copies && j < ev->splits[k].n_inputs; j++) {
            struct tg_tensor * x = ev->splits[k].copies[j];
            if (!x) continue;
            if (!TG_GROW(s->seen_copies, s->cap_seen_copies, (size_t) s->n_seen_copies + 1)) return false;
            s->seen_copies[s->n_seen_copies++] = x;
        }
    return true;
}

// Lists nodes, leafs, split copies and any source outside the graph.
static bool collect_tensors(struct rec_sched * s, struct tg_graph * g, const struct tg_obs_split_event * ev) {
    s->seen_ok = false;
    s->mv_of = NULL;   // indices change
    if (!keep_copies(s, ev)) return false;
    tg_ptrmap_reset(&s->index, 0);
    s->n_tensors = 0;
    s->n_nodes = g->n_nodes;
    s->n_leafs = g->n_leafs;
    bool ok = true;
    for (int i = 0; i < g->n_nodes; i++) ok = ok && add_tensor(s, g->nodes[i]);
    for (int i = 0; i < g->n_leafs; i++) ok = ok && add_tensor(s, g->leafs[i]);
    for (int k = 0; ev && k < ev->n_splits; k++)
        for (int j = 0; j < ev->splits[k].n_inputs; j++)
            if (ev->splits[k].copies && ev->splits[k].copies[j]) ok = ok && add_tensor(s, ev->splits[k].copies[j]);
    for (int i = 0; i < s->n_tensors && ok; i++) {   // grows while outside sources are found
        struct tg_tensor * t = s->tensors[i];
        for (int k = 0; k < TG_MAX_SRC; k++) if (t->src[k]) ok = ok && add_tensor(s, t->src[k]);
        if (t->view_src) ok = ok && add_tensor(s, t->view_src);
    }
    return ok;
}

uint64_t tg_trace_rec_root_uid(const struct tg_tensor * t) {
    for (int depth = 0; t && t->view_src && depth < 64; depth++) t = t->view_src;
    return (uint64_t) (uintptr_t) t;
}

static void fill_tensor(struct tg_trace_tensor * o, const struct rec_sched * s, const struct tg_tensor * t) {
    memset(o, 0, sizeof(*o));
    memcpy(o->name, t->name, strnlen(t->name, sizeof(o->name) - 1));   // (zeroed: stays terminated)
    o->uid = (uint64_t) (uintptr_t) t;
    for (int d = 0; d < 4; d++) { o->ne[d] = t->ne[d]; o->nb[d] = t->nb[d]; }
    memcpy(o->op_params, t->op_params, sizeof(o->op_params));
    o->op = (int32_t) t->op;
    o->type = (int32_t) t->type;
    o->flags = t->flags;
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++) o->src[k] = k < TG_MAX_SRC ? index_of(s, t->src[k]) : TG_TRACE_NONE;
    o->view_src = index_of(s, t->view_src);
    o->view_offs = t->view_offs;
}

static bool same_text(const char * a, const char * b) {
    return !strcmp(a ? a : "", b ? b : "");
}

// PLACEMENT, or PLACEMENT_DELTA against the scheduler's last full one.
static void write_placement_record(struct tg_trace_recorder * r, struct rec_sched * s,
                                   const struct tg_trace_placement * p, int n) {
    int nc = 0;
    int32_t * ch = s->pbase_id && s->pbase_n == n ? changed_scratch(s, n) : NULL;
    for (int i = 0; ch && i < n; i++) {
        const struct tg_trace_placement * a = &p[i], * b = &s->pbase[i];
        if (a->backend != b->backend || a->cause != b->cause || !same_text(a->text, b->text)) ch[nc++] = i;
        if (nc > DELTA_MAX_CHANGED(n)) ch = NULL;
    }
    s->n_pch = -1;   // unknown until written
    if (ch) {
        if (tg_trace_write_placement_delta(r->w, s->graph_id, s->pbase_id, p, n, ch, nc) == TG_OK &&
            TG_GROW(s->pch, s->cap_pch, (size_t) (nc ? nc : 1))) {
            memcpy(s->pch, ch, (size_t) nc * sizeof(*ch));
            s->n_pch = nc;
        }
        return;
    }
    if (tg_trace_write_placement(r->w, s->graph_id, p, n) != TG_OK) return;
    // the new base keeps its own copies of the texts (the engine's may go)
    size_t text = 0;
    for (int i = 0; i < n; i++) text += p[i].text ? strlen(p[i].text) + 1 : 0;
    if (!TG_RESIZE(s->pbase, n ? (size_t) n : 1) || !TG_RESIZE(s->pbase_text, text ? text : 1)) { s->pbase_id = 0; return; }
    struct tg_trace_placement * b = s->pbase;
    char * t = s->pbase_text;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        b[i] = p[i];
        if (p[i].text) {
            size_t l = strlen(p[i].text) + 1;
            memcpy(t + at, p[i].text, l);
            b[i].text = t + at;
            at += l;
        }
    }
    s->pbase_n = n;
    s->pbase_id = s->graph_id;
    s->n_pch = 0;
}

static void write_placement(struct tg_trace_recorder * r, struct rec_sched * s, const struct tg_obs_split_event * ev) {
    s->n_pch = -1;   // nothing a move could repeat until written
    if (!TG_GROW(s->pl, s->cap_pl, (size_t) s->n_tensors)) return;
    struct tg_trace_placement * p = s->pl;   // every entry is set below
    int n_copy_texts = 0;
    for (int k = 0; k < ev->n_splits; k++) n_copy_texts += ev->splits[k].n_inputs;
    char (*texts)[TG_TRACE_NAME + 48] = n_copy_texts ? malloc((size_t) n_copy_texts * sizeof(*texts)) : NULL;
    if (n_copy_texts && !texts) return;
    int at = 0;
    for (int i = 0; i < s->n_tensors; i++) {
        const struct tg_sched_placement * sp = i < s->n_nodes ? &ev->nodes[i]
            : i < s->n_nodes + s->n_leafs ? &ev->leafs[i - s->n_nodes] : NULL;
        p[i] = sp ? (struct tg_trace_placement) { .backend = sp->backend, .cause = (uint32_t) sp->cause, .text = sp->detail }
                  : (struct tg_trace_placement) { .backend = TG_TRACE_NONE, .cause = 0, .text = NULL };
    }
    for (int k = 0; k < ev->n_splits; k++) {
        const struct tg_sched_split * sp = &ev->splits[k];
        for (int j = 0; j < sp->n_inputs; j++) {
            int32_t ci = sp->copies ? index_of(s, sp->copies[j]) : TG_TRACE_NONE;
            if (ci < s->n_nodes + s->n_leafs) continue;
            char * text = texts[at++];
            snprintf(text, sizeof(*texts), "copy of input '%s' for split %d", sp->inputs[j]->name, k);
            p[ci] = (struct tg_trace_placement) { .backend = sp->backend, .cause = 0, .text = text };
        }
    }
    write_placement_record(r, s, p, s->n_tensors);
    free(texts);
    if (at > 0) s->n_pch = -1;   // entries point at freed texts: a move writes the placement whole again
}

static int32_t backend_of(const struct rec_sched * s, const struct tg_obs_split_event * ev, int32_t ti) {
    if (ti < 0) return TG_TRACE_NONE;
    if (ti < s->n_nodes) return ev->nodes[ti].backend;
    if (ti < s->n_nodes + s->n_leafs) return ev->leafs[ti - s->n_nodes].backend;
    return TG_TRACE_NONE;
}

static void write_splits(struct tg_trace_recorder * r, struct rec_sched * s, const struct tg_obs_split_event * ev) {
    int n_in = 0;
    for (int k = 0; k < ev->n_splits; k++) n_in += ev->splits[k].n_inputs;
    struct tg_trace_split * sp = calloc((size_t) ev->n_splits + 1, sizeof(*sp));
    struct tg_trace_split_input * in = calloc((size_t) n_in + 1, sizeof(*in));
    if (!sp || !in) { free(sp); free(in); return; }
    int at = 0;
    for (int k = 0; k < ev->n_splits; k++) {
        const struct tg_sched_split * x = &ev->splits[k];
        sp[k] = (struct tg_trace_split) { .backend = x->backend, .node_begin = x->i_start, .node_end = x->i_end,
                                          .first_input = (uint32_t) at, .n_inputs = (uint32_t) x->n_inputs };
        for (int j = 0; j < x->n_inputs; j++, at++) {
            int32_t ti = index_of(s, x->inputs[j]);
            in[at].tensor = ti;
            in[at].from_backend = backend_of(s, ev, ti);
            in[at].bytes = tg_nbytes(x->inputs[j]);
            if (x->copies && x->copies[j]) snprintf(in[at].copy_name, sizeof(in[at].copy_name), "%s", x->copies[j]->name);
        }
    }
    tg_trace_write_splits(r->w, s->graph_id, sp, ev->n_splits, in, n_in);
    free(sp);
    free(in);
}

// uid_graph entries for s's tensor list: a new generation (fresh), or its
// own again after another list was put (which may have taken over tensors
// both hold: a uid names the latest graph holding it). False on OOM.
static bool put_uids(struct tg_trace_recorder * r, struct rec_sched * s, bool fresh) {
    if (fresh && !TG_GROW(r->gen_graph, r->gen_cap, (size_t) r->n_gens + 1)) return false;
    uint32_t gen = fresh ? r->n_gens++ : s->list_gen;
    for (int i = 0; i < s->n_tensors; i++)
        tg_ptrmap_put(&r->uid_graph, tg_ptrmap_key(s->tensors[i]), ((uint64_t) gen << 32) | (uint32_t) i);
    s->list_gen = gen;
    r->last_put_gen = gen;
    return true;
}

static void emit_graph(struct tg_trace_recorder * r, struct rec_sched * s);

// Writes the GRAPH record for s's current tensor list. reuse: the list is
// the last graph's (same_list): only tensors whose struct changed since are
// encoded again.
static void write_graph(struct tg_trace_recorder * r, struct rec_sched * s, bool reuse) {
    const int n = s->n_tensors;
    if (!TG_GROW(s->seen_sum, s->cap_seen_sum, (size_t) n) || !TG_GROW(s->seen_links, s->cap_seen_links, (size_t) n) ||
        !TG_GROW(s->cur, s->cap_cur, (size_t) n) ||
        !TG_GROW(s->differs, s->cap_differs, (size_t) n) ||
        ((!reuse || s->list_gen != r->last_put_gen) && !put_uids(r, s, !reuse))) {
        s->seen_ok = false;
        return;
    }
    // a decode loop rebuilds nearly the same graph every token: against the
    // last full GRAPH, write only the tensors that changed (fill_tensor
    // zeroes every entry, so entries compare bytewise)
    const bool base_ok = s->gbase_id && s->gbase_n == n && s->gbase_nodes == s->n_nodes;
    for (int i = 0; i < n; i++) {
        const struct tg_tensor * t = s->tensors[i];
        const XXH128_hash_t sum = tensor_sum(t);
        if (!reuse || !XXH128_isEqual(sum, s->seen_sum[i])) {
            fill_tensor(&s->cur[i], s, t);
            s->seen_sum[i] = sum;
            if (!reuse) s->seen_links[i] = links_sum(t);
            s->differs[i] = !base_ok || memcmp(&s->cur[i], &s->gbase[i], sizeof(s->cur[i])) != 0;
        }
    }
    s->seen_ok = true;
    emit_graph(r, s);
}

// The GRAPH record of s's entries (cur, differs): a delta against the last
// full one when few entries differ from it, else a full one (the new base).
static void emit_graph(struct tg_trace_recorder * r, struct rec_sched * s) {
    const int n = s->n_tensors;
    r->gen_graph[s->list_gen] = s->graph_id;
    const bool base_ok = s->gbase_id && s->gbase_n == n && s->gbase_nodes == s->n_nodes;
    int nd = 0;   // entries that differ from the base
    for (int i = 0; i < n; i++) nd += s->differs[i];
    struct tg_trace_graph g = { .graph_id = s->graph_id, .sched_id = (uint32_t) s->sched_id, .n_nodes = s->n_nodes,
                                .n_leafs = s->n_tensors - s->n_nodes };
    int32_t * ch = base_ok && nd <= DELTA_MAX_CHANGED(n) ? changed_scratch(s, n) : NULL;
    if (ch) {
        int nc = 0;
        for (int i = 0; i < n; i++) if (s->differs[i]) ch[nc++] = i;
        tg_trace_write_graph_delta(r->w, &g, s->gbase_id, s->cur, ch, nc);
        return;
    }
    if (tg_trace_write_graph(r->w, &g, s->cur) != TG_OK) return;
    if (!TG_RESIZE(s->gbase, n ? (size_t) n : 1)) { s->gbase_id = 0; return; }
    memcpy(s->gbase, s->cur, (size_t) n * sizeof(*s->gbase));
    memset(s->differs, 0, (size_t) n);
    s->gbase_n = n;
    s->gbase_nodes = s->n_nodes;
    s->gbase_id = s->graph_id;
}

// GRADS: every tensor of the graph that is the gradient of another of its
// tensors (tg_graph_build_backward's links); nothing for a forward graph.
static void write_grads(struct tg_trace_recorder * r, struct rec_sched * s) {
    int n = 0;
    for (int i = 0; i < s->n_tensors; i++) n += index_of(s, s->tensors[i]->grad_of) != TG_TRACE_NONE;
    s->n_grads = n;
    if (n == 0) return;
    int32_t (*pairs)[2] = malloc(sizeof(*pairs) * (size_t) n);
    if (!pairs) return;
    int k = 0;
    for (int i = 0; i < s->n_tensors; i++) {
        int32_t of = index_of(s, s->tensors[i]->grad_of);
        if (of != TG_TRACE_NONE) pairs[k][0] = i, pairs[k++][1] = of;
    }
    tg_trace_write_grads(r->w, s->graph_id, (const int32_t (*)[2]) pairs, n);
    free(pairs);
}

// The moved tensors' trace indices into s->mv (kept while the list and the
// tensor list stay); false if one is not listed (or on OOM): then the graph
// is recorded as any other.
static bool map_moved(struct rec_sched * s, struct tg_tensor * const * moved, int n_moved) {
    if (s->mv_of == moved && s->n_mv == n_moved && (n_moved == 0 || !memcmp(s->mv_keys, moved, (size_t) n_moved * sizeof(*moved))))
        return true;
    s->mv_of = NULL;
    if (!TG_GROW(s->mv, s->cap_mv, (size_t) (n_moved ? n_moved : 1)) ||
        !TG_GROW(s->mv_keys, s->cap_mv_keys, (size_t) (n_moved ? n_moved : 1)))
        return false;
    for (int k = 0; k < n_moved; k++)
        if ((s->mv[k] = index_of(s, moved[k])) == TG_TRACE_NONE) return false;
    int32_t * mv = s->mv;   // ascending (ALLOC's changes are merged with them)
    for (int a = 1; a < n_moved; a++)
        for (int b = a; b > 0 && mv[b] < mv[b - 1]; b--) { int32_t t = mv[b]; mv[b] = mv[b - 1]; mv[b - 1] = t; }
    if (n_moved) memcpy(s->mv_keys, moved, (size_t) n_moved * sizeof(*moved));
    s->n_mv = n_moved;
    s->mv_of = moved;
    return true;
}

// A moved graph's records: the moved tensors' GRAPH entries made again, the
// placement (the last one's changes against its base), splits and gradient
// links as for the last graph. False (nothing written) when the last
// graph's records are not known well enough to repeat.
static bool split_moved(struct tg_trace_recorder * r, struct rec_sched * s, const struct tg_obs_split_event * ev) {
    if (!s->seen_ok || s->n_pch < 0 || !s->pbase_id || s->pbase_n != s->n_tensors || !map_moved(s, ev->moved, ev->n_moved) ||
        (s->list_gen != r->last_put_gen && !put_uids(r, s, false)))
        return false;
    const int n = s->n_tensors;
    const bool base_ok = s->gbase_id && s->gbase_n == n && s->gbase_nodes == s->n_nodes;
    for (int k = 0; k < ev->n_moved; k++) {   // cold after a token's computation: fetched together
        const int i = s->mv[k];
        __builtin_prefetch(s->tensors[i]);
        __builtin_prefetch((const char *) s->tensors[i] + 64);
        __builtin_prefetch((const char *) s->tensors[i] + 128);
        if (base_ok) __builtin_prefetch(&s->gbase[i]);
    }
    for (int k = 0; k < ev->n_moved; k++) {   // only the data, view_offs and a VIEW's offset moved (tg_sched_graph_moved):
        const int i = s->mv[k];                 // the entry patched (its source indices are the costly part)
        const struct tg_tensor * t = s->tensors[i];
        memcpy(s->cur[i].op_params, t->op_params, sizeof(s->cur[i].op_params));
        s->cur[i].view_offs = t->view_offs;
        s->seen_sum[i] = (XXH128_hash_t) { 0, 0 };   // not a struct's fingerprint: a later same_list pass encodes it again
        s->differs[i] = !base_ok || memcmp(&s->cur[i], &s->gbase[i], sizeof(s->cur[i])) != 0;
    }
    tg_trace_writer_batch_begin(r->w);
    emit_graph(r, s);
    tg_trace_write_placement_delta(r->w, s->graph_id, s->pbase_id, s->pl, n, s->pch, s->n_pch);
    write_splits(r, s, ev);
    if (s->n_grads) write_grads(r, s);
    tg_trace_writer_batch_end(r->w);
    return true;
}

void tg_trace_rec_graph_split(struct tg_trace_recorder * r, const struct tg_obs_split_event * ev) {
    struct rec_sched * s = tg_trace_rec_sched_state(r, ev->sched, ev->sched_id);
    if (!s || !ev->graph) return;
    const bool moved = ev->moved && s->split_fast && s->graph == ev->graph && s->graph_seq + 1 == ev->graph_seq;
    s->split_fast = false;
    s->graph_id = r->next_graph_id++;
    s->graph_seq = ev->graph_seq;
    s->graph = ev->graph;
    if (moved && split_moved(r, s, ev)) {
        s->split_fast = true;
        s->moved_seq = ev->graph_seq;
        return;
    }
    s->alloc_fast = false;   // the list may change: the next ALLOC is made whole
    const bool reuse = same_list(s, ev->graph, ev);
    if (!reuse && !collect_tensors(s, ev->graph, ev)) return;
    tg_trace_writer_batch_begin(r->w);   // one write(2) for the three records
    write_graph(r, s, reuse);
    write_placement(r, s, ev);
    write_splits(r, s, ev);
    write_grads(r, s);
    tg_trace_writer_batch_end(r->w);
    s->split_fast = s->seen_ok;
}

// ---- allocation -------------------------------------------------------------------------

struct buf_list { const struct tg_buffer * b[64]; int backend[64]; int n; };

static int32_t buf_index(struct buf_list * l, const struct tg_buffer * b, int backend) {
    if (!b) return TG_TRACE_NONE;
    for (int i = 0; i < l->n; i++) if (l->b[i] == b) return i;
    if (l->n == 64) return TG_TRACE_NONE;
    l->b[l->n] = b;
    l->backend[l->n] = backend;
    return l->n++;
}

static uint32_t kind_flags(enum tg_alloc_kind k) {
    switch (k) {
    case TG_ALLOC_PLANNED:       return TG_TRACE_ALLOC_ALLOCATED;
    case TG_ALLOC_INPLACE:       return TG_TRACE_ALLOC_ALLOCATED | TG_TRACE_ALLOC_INPLACE;
    case TG_ALLOC_VIEW:          return TG_TRACE_ALLOC_VIEW;
    case TG_ALLOC_PREALLOCATED:  return TG_TRACE_ALLOC_EXTERNAL;
    default:                     return TG_TRACE_ALLOC_NONE;
    }
}

// step_map[k]: user node index of alloc_graph step k (split copies map to the
// next user node). Kept for the next graph: the same when the tensor list
// and the allocation graph's nodes are. NULL on OOM.
static const int * map_steps(struct rec_sched * s, const struct tg_graph * ag) {
    int n = ag ? ag->n_nodes : 0;
    if (s->steps_ok && s->steps_gen == s->list_gen && s->steps_n == n &&
        (n == 0 || memcmp(s->steps_nodes, ag->nodes, (size_t) n * sizeof(*ag->nodes)) == 0))
        return s->steps;
    s->steps_ok = false;
    if (!TG_GROW(s->steps, s->cap_steps, (size_t) (n ? n : 1)) ||
        !TG_GROW(s->steps_nodes, s->cap_steps_nodes, (size_t) (n ? n : 1)))
        return NULL;
    int next = s->n_nodes - 1;
    for (int k = n - 1; k >= 0; k--) {
        int32_t ti = index_of(s, ag->nodes[k]);
        if (ti >= 0 && ti < s->n_nodes) next = ti;
        s->steps[k] = next;
    }
    if (n) memcpy(s->steps_nodes, ag->nodes, (size_t) n * sizeof(*ag->nodes));
    s->steps_n = n;
    s->steps_gen = s->list_gen;
    s->steps_ok = true;
    return s->steps;
}

// s->ainfo: tensor -> its index in ev->tensors; rebuilt only when the
// event lists other tensors (or in another order) than last time. False on OOM.
static bool map_infos(struct rec_sched * s, const struct tg_obs_alloc_event * ev) {
    const int n = ev->n_tensors;
    bool same = s->ainfo_ok && s->ainfo_n == n;
    for (int i = 0; same && i < n; i++) same = ev->tensors[i].tensor == s->ainfo_keys[i];
    if (same) return true;
    s->ainfo_ok = false;
    if (!TG_GROW(s->ainfo_keys, s->cap_ainfo_keys, (size_t) (n ? n : 1)) ||
        tg_ptrmap_reset(&s->ainfo, (size_t) n) != TG_OK)
        return false;
    for (int i = 0; i < n; i++) {
        s->ainfo_keys[i] = ev->tensors[i].tensor;
        if (ev->tensors[i].tensor && tg_ptrmap_put(&s->ainfo, tg_ptrmap_key(ev->tensors[i].tensor), (uint64_t) i) != TG_OK)
            return false;
    }
    s->ainfo_n = n;
    s->ainfo_ok = true;
    return true;
}

static void fill_alloc(struct tg_trace_alloc * a, const struct tg_alloc_tensor_info * in, const struct rec_sched * s,
                       struct buf_list * bl, const int * steps, int n_steps) {
    a->buffer = buf_index(bl, in->buffer, -1);
    a->inplace_parent = index_of(s, in->inplace_of);
    a->offset = in->offset;
    a->size = in->size;
    a->first_step = in->first_step >= 0 && in->first_step < n_steps && steps ? steps[in->first_step] : -1;
    a->last_step = in->last_step >= 0 && in->last_step < n_steps && steps ? steps[in->last_step] : -1;
    a->flags = kind_flags(in->kind) | (in->is_leaf && tg_cpu_is_packed(in->tensor) ? TG_TRACE_ALLOC_PACKED : 0);
}

static void graph_alloc(struct tg_trace_recorder * r, const struct tg_obs_alloc_event * ev);

// The ALLOC entry of a tensor the allocator did not place (weights, a cache).
static void fill_external(struct tg_trace_alloc * a, const struct tg_tensor * t, struct buf_list * bl) {
    struct tg_buffer * b = tg_tensor_buffer(t);
    void * base = b ? tg_buffer_get_base(b) : NULL;
    *a = (struct tg_trace_alloc) { .buffer = buf_index(bl, b, -1), .inplace_parent = TG_TRACE_NONE,
        .offset = b && base && t->data ? (uint64_t) ((const char *) t->data - (const char *) base) : 0,
        .size = tg_nbytes(t), .first_step = -1, .last_step = -1,
        .flags = (b ? TG_TRACE_ALLOC_EXTERNAL : TG_TRACE_ALLOC_NONE) | (tg_cpu_is_packed(t) ? TG_TRACE_ALLOC_PACKED : 0) };
}

static void fill_buffers(struct tg_trace_buffer * tb, const struct buf_list * bl) {
    for (int i = 0; i < bl->n; i++) {
        tb[i] = (struct tg_trace_buffer) { .uid = bl->b[i]->id, .backend = bl->backend[i],
                                           .usage = (int32_t) tg_buffer_get_usage(bl->b[i]),
                                           .size = tg_buffer_get_size(bl->b[i]), .buft = "" };
        snprintf(tb[i].buft, sizeof(tb[i].buft), "%s", tg_buffer_name(bl->b[i]));
    }
}

static bool same_buffer(const struct tg_trace_buffer * a, const struct tg_trace_buffer * b) {
    return a->uid == b->uid && a->backend == b->backend && a->usage == b->usage && a->size == b->size &&
           !strcmp(a->buft, b->buft);
}

static bool same_alloc(const struct tg_trace_alloc * a, const struct tg_trace_alloc * b) {
    return a->buffer == b->buffer && a->inplace_parent == b->inplace_parent && a->offset == b->offset &&
           a->size == b->size && a->first_step == b->first_step && a->last_step == b->last_step && a->flags == b->flags;
}

// ALLOC_DELTA against abase with changes ch[0..nc), kept for a move to
// repeat (s->ach; -1 when not written or not kept).
static void write_alloc_delta(struct tg_trace_recorder * r, struct rec_sched * s, const struct tg_trace_buffer * tb, int nb,
                              const struct tg_trace_alloc * al, int n, const int32_t * ch, int nc) {
    s->n_ach = -1;
    if (tg_trace_write_alloc_delta(r->w, s->graph_id, (uint32_t) s->sched_id, s->abase_id, tb, nb, al, n, ch, nc) == TG_OK &&
        TG_GROW(s->ach, s->cap_ach, (size_t) (nc ? nc : 1))) {
        memcpy(s->ach, ch, (size_t) nc * sizeof(*ch));
        s->n_ach = nc;
    }
}

// ALLOC, or ALLOC_DELTA against the scheduler's last full one (same buffers).
static void write_alloc_record(struct tg_trace_recorder * r, struct rec_sched * s, const struct tg_trace_buffer * tb,
                               int nb, const struct tg_trace_alloc * al, int n) {
    int nc = 0;
    bool same = s->abase_id && s->abase_n == n && s->abase_nb == nb;
    for (int i = 0; same && i < nb; i++) same = same_buffer(&tb[i], &s->abase_bufs[i]);
    int32_t * ch = same ? changed_scratch(s, n) : NULL;
    for (int i = 0; ch && i < n; i++) {
        if (!same_alloc(&al[i], &s->abase[i])) ch[nc++] = i;
        if (nc > DELTA_MAX_CHANGED(n)) ch = NULL;
    }
    s->n_ach = -1;
    if (ch) {
        write_alloc_delta(r, s, tb, nb, al, n, ch, nc);
        return;
    }
    if (tg_trace_write_alloc(r->w, s->graph_id, (uint32_t) s->sched_id, tb, nb, al, n) != TG_OK) return;
    if (!TG_RESIZE(s->abase, n ? (size_t) n : 1) || nb > 64) { s->abase_id = 0; return; }
    memcpy(s->abase, al, (size_t) n * sizeof(*s->abase));
    memcpy(s->abase_bufs, tb, (size_t) nb * sizeof(*tb));
    s->abase_n = n;
    s->abase_nb = nb;
    s->abase_id = s->graph_id;
    s->n_ach = 0;
}

void tg_trace_rec_graph_alloc(struct tg_trace_recorder * r, const struct tg_obs_alloc_event * ev) {
    tg_trace_writer_batch_begin(r->w);   // (GRAPH,) ALLOC and EVENT: one write(2)
    graph_alloc(r, ev);
    tg_trace_writer_batch_end(r->w);
}

// The ALLOC record of a moved graph whose split event was recorded as a
// move (the tensor list is the last ALLOC's): the moved tensors' entries made
// again from the event, the others as last written. False (nothing written)
// when the event's buffers or allocation infos are not the last ones'.
static bool alloc_moved(struct tg_trace_recorder * r, struct rec_sched * s, const struct tg_obs_alloc_event * ev) {
    if (!s->ainfo_ok || s->ainfo_n != ev->n_tensors || ev->n_buffers > s->al_nb || !map_moved(s, ev->moved, ev->n_moved))
        return false;
    struct buf_list bl = { .n = s->al_nb };
    memcpy(bl.b, s->al_bufs, sizeof(bl.b));
    memcpy(bl.backend, s->al_backend, sizeof(bl.backend));
    for (int i = 0; i < ev->n_buffers; i++)   // the event's buffers come first, in its order
        if (bl.b[i] != ev->buffers[i].buffer || bl.backend[i] != (ev->buffer_backend ? ev->buffer_backend[i] : -1)) return false;
    const int * steps = map_steps(s, ev->alloc_graph);
    const int n_steps = ev->alloc_graph ? ev->alloc_graph->n_nodes : 0;
    for (int k = 0; k < ev->n_moved; k++) {
        const int i = s->mv[k];
        const struct tg_tensor * t = s->tensors[i];
        uint64_t x;
        if (tg_ptrmap_get(&s->ainfo, tg_ptrmap_key(t), &x)) {
            if (ev->tensors[x].tensor != t) return false;
            fill_alloc(&s->al[i], &ev->tensors[x], s, &bl, steps, n_steps);
        } else {
            fill_external(&s->al[i], t, &bl);
        }
    }
    if (bl.n != s->al_nb) return false;   // a buffer the last record did not list
    struct tg_trace_buffer tb[64];
    fill_buffers(tb, &bl);
    const int n = s->n_tensors;
    int nc = 0;
    int32_t * ch = s->n_ach >= 0 && s->abase_id && s->abase_n == n && s->abase_nb == bl.n ? changed_scratch(s, n) : NULL;
    for (int i = 0; ch && i < bl.n; i++) if (!same_buffer(&tb[i], &s->abase_bufs[i])) ch = NULL;
    if (!ch) {   // compared whole
        write_alloc_record(r, s, tb, bl.n, s->al, n);
        return true;
    }
    // the changes against the base: the last record's, but for the moved
    // entries, compared again (both lists ascending)
    const int32_t * mv = s->mv;
    const int nm = ev->n_moved;
    int a = 0, b = 0;
    while (a < s->n_ach || b < nm) {
        if (b < nm && b > 0 && mv[b] == mv[b - 1]) { b++; continue; }   // listed twice
        const int32_t x = a < s->n_ach ? s->ach[a] : INT32_MAX, y = b < nm ? mv[b] : INT32_MAX;
        if (x < y) { ch[nc++] = x; a++; continue; }
        if (!same_alloc(&s->al[y], &s->abase[y])) ch[nc++] = y;
        b++;
        a += x == y;
    }
    if (nc > DELTA_MAX_CHANGED(n)) {
        write_alloc_record(r, s, tb, bl.n, s->al, n);
        return true;
    }
    write_alloc_delta(r, s, tb, bl.n, s->al, n, ch, nc);
    return true;
}

static void graph_alloc(struct tg_trace_recorder * r, const struct tg_obs_alloc_event * ev) {
    struct rec_sched * s = tg_trace_rec_sched_state(r, ev->sched, ev->sched_id);
    if (!s || !ev->graph) return;
    const bool moved = ev->moved && s->alloc_fast && s->split_fast && s->graph == ev->graph &&
                       s->graph_seq == ev->graph_seq && s->moved_seq == ev->graph_seq && !ev->replanned;
    s->alloc_fast = false;
    if (moved && alloc_moved(r, s, ev)) {
        s->alloc_fast = true;
        return;
    }
    if (s->graph != ev->graph || s->graph_seq != ev->graph_seq || s->graph_id == UINT32_MAX) {
        // no split event for this graph: record its structure now
        s->graph_id = r->next_graph_id++;
        s->graph_seq = ev->graph_seq;
        s->graph = ev->graph;
        const bool reuse = same_list(s, ev->graph, NULL);
        if (!reuse && !collect_tensors(s, ev->graph, NULL)) return;
        write_graph(r, s, reuse);
    }
    if (!map_infos(s, ev)) return;
    const struct tg_ptrmap * info = &s->ainfo;
    struct tg_trace_alloc * al = TG_GROW(s->al, s->cap_al, (size_t) s->n_tensors + 1) ? s->al : NULL;   // every entry is set
    const int * steps = map_steps(s, ev->alloc_graph);
    struct buf_list bl = { .n = 0 };
    for (int i = 0; i < ev->n_buffers; i++) buf_index(&bl, ev->buffers[i].buffer, ev->buffer_backend ? ev->buffer_backend[i] : -1);
    for (int i = 0; al && i < s->n_tensors; i++) {
        const struct tg_tensor * t = s->tensors[i];
        uint64_t k;
        if (tg_ptrmap_get(info, tg_ptrmap_key(t), &k)) {
            fill_alloc(&al[i], &ev->tensors[k], s, &bl, steps, ev->alloc_graph ? ev->alloc_graph->n_nodes : 0);
            continue;
        }
        fill_external(&al[i], t, &bl);
    }
    struct tg_trace_buffer tb[64];
    fill_buffers(tb, &bl);
    if (al) write_alloc_record(r, s, tb, bl.n, al, s->n_tensors);
    if (al) {   // what a move repeats
        memcpy(s->al_bufs, bl.b, sizeof(bl.b));
        memcpy(s->al_backend, bl.backend, sizeof(bl.backend));
        s->al_nb = bl.n;
        s->alloc_fast = true;
    }
    if (ev->replanned) {   // a new plan: compute buffers may have been reallocated (old tensors dangle)
        char msg[256];
        int at = snprintf(msg, sizeof(msg), "graph %u allocated on scheduler %llu with a new plan; compute buffers:",
                          s->graph_id, (unsigned long long) s->sched_id);
        for (int i = 0; i < ev->n_buffers && at > 0 && at < (int) sizeof(msg); i++)
            at += snprintf(msg + at, sizeof(msg) - (size_t) at, " #%llu (%zu bytes)",
                           (unsigned long long) (ev->buffers[i].buffer ? ev->buffers[i].buffer->id : 0), ev->buffers[i].size);
        struct tg_trace_event e = { .kind = TG_TRACE_EV_GRAPH_ALLOCATED, .severity = TG_TRACE_INFO,
                                    .time_ns = tg_observe_now_ns(), .graph_id = (int32_t) s->graph_id, .tensor = -1,
                                    .step = -1, .name = "", .message = msg };
        tg_trace_write_event(r->w, &e);
    }
}
