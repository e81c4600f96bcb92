// reader-get.c - trace reader accessors: decode one record or one entry into
// a plain struct, with bounds checks against the record's length.
#include "reader-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

// ---- run, names, schedulers -------------------------------------------------

bool tg_trace_get_run(const struct tg_trace * tr, struct tg_trace_run * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_RUN, 0);
    if (ord == UINT32_MAX || !out) return false;
    const uint8_t * p = trace_payload(tr, ord);
    const uint8_t * end = p + tr->recs[ord].len;   // validated when listed
    memset(out, 0, sizeof(*out));
    p = trace_get_run(p, out);   // the RUN was checked whole when the trace was opened
    trace_get_tail_run(&p, end, out);
    out->record = ord;
    return true;
}

const char * tg_trace_op_name(const struct tg_trace * tr, int op) {
    if (tr && op >= 0 && op < tr->n_op_names && tr->op_names[op][0]) return tr->op_names[op];
    if (!tr) return "?";
    snprintf(((struct tg_trace *) tr)->name_buf, sizeof(tr->name_buf), "OP#%d", op);
    return tr->name_buf;
}

const char * tg_trace_type_name(const struct tg_trace * tr, int type) {
    if (tr && type >= 0 && type < tr->n_type_names && tr->type_names[type][0]) return tr->type_names[type];
    if (!tr) return "?";
    snprintf(((struct tg_trace *) tr)->name_buf, sizeof(tr->name_buf), "type#%d", type);
    return tr->name_buf;
}

const char * tg_trace_cause_name(const struct tg_trace * tr, uint32_t cause) {
    if (tr && cause < (uint32_t) tr->n_cause_names && tr->cause_names[cause][0]) return tr->cause_names[cause];
    if (!tr) return "?";
    snprintf(((struct tg_trace *) tr)->name_buf, sizeof(tr->name_buf), "cause#%u", cause);
    return tr->name_buf;
}

int tg_trace_op_from_name(const struct tg_trace * tr, const char * name) {
    if (!tr || !name) return -1;
    for (int i = 0; i < tr->n_op_names; i++)
        if (strcmp(tr->op_names[i], name) == 0) return i;
    return -1;
}

int tg_trace_n_scheds(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_SCHED].n : 0; }

bool tg_trace_get_sched(const struct tg_trace * tr, int i, struct tg_trace_sched * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_SCHED, i);
    if (ord == UINT32_MAX || !out) return false;
    const uint8_t * p = trace_payload(tr, ord);
    const uint8_t * end = p + tr->recs[ord].len;
    memset(out, 0, sizeof(*out));
    if (end - p < (ptrdiff_t) TRACE_SIZE(sched_head)) return false;
    struct trace_sched_head h;
    p = trace_get_sched_head(p, &h);
    out->sched_id = h.sched_id;
    if (h.n_backends > TG_TRACE_MAX_BACKENDS) return false;
    for (uint32_t b = 0; b < h.n_backends; b++) {
        out->backend[b] = trace_get_str(&p, end);
        out->buft[b] = out->backend[b] ? trace_get_str(&p, end) : NULL;
        if (!out->backend[b] || !out->buft[b]) return false;
    }
    out->n_backends = (int32_t) h.n_backends;
    out->record = ord;
    return true;
}

const char * tg_trace_backend_name(const struct tg_trace * tr, uint32_t sched_id, int backend) {
    struct tg_trace_sched s;
    int n = tg_trace_n_scheds(tr);
    for (int i = n - 1; i >= 0; i--) {
        if (!tg_trace_get_sched(tr, i, &s) || s.sched_id != sched_id) continue;
        if (backend >= 0 && backend < s.n_backends) return s.backend[backend];
        break;
    }
    return "?";
}

// ---- graphs and tensors -----------------------------------------------------

int tg_trace_n_graphs(const struct tg_trace * tr) { return tr ? tr->n_graphs : 0; }

bool tg_trace_get_graph(const struct tg_trace * tr, int gi, struct tg_trace_graph * out) {
    if (!tr || gi < 0 || gi >= tr->n_graphs || !out) return false;
    const struct trace_gmeta * g = &tr->graphs[gi];
    const uint8_t * p = trace_payload(tr, g->ord);
    out->graph_id = g->graph_id;
    out->sched_id = g->sched_id;
    out->n_nodes = g->n_nodes;
    out->n_leafs = g->n_leafs;
    if (g->base_id != 0) {   // a GRAPH_DELTA
        struct trace_gdelta_head h;
        trace_get_gdelta_head(p, &h);
        out->structure_hash = h.structure_hash;
    } else {
        struct trace_graph_head h;
        trace_get_graph_head(p, &h);
        out->structure_hash = h.structure_hash;
    }
    out->record = g->ord;
    out->offset = tr->recs[g->ord].off;
    out->base_graph_id = g->base_id;
    return true;
}

int tg_trace_find_graph(const struct tg_trace * tr, uint32_t graph_id) {
    if (!tr || tr->n_graphs == 0) return -1;
    // last entry with graph_id (entries sorted by (graph_id, gi))
    int lo = 0, hi = tr->n_graphs;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (tr->graphs[tr->graph_by_id[mid]].graph_id <= graph_id) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return -1;
    int gi = tr->graph_by_id[lo - 1];
    return tr->graphs[gi].graph_id == graph_id ? gi : -1;
}

// Entry of tensor index ti in a delta's change list (n entries of `stride`
// bytes, increasing u32 indices, validated at open), past its index; NULL if
// the delta does not change ti.
static const uint8_t * find_change(const uint8_t * list, uint32_t n, size_t stride, int ti) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        struct trace_change c;
        const uint8_t * e = trace_get_change(list + (size_t) mid * stride, &c);
        if (c.index == (uint32_t) ti) return e;
        if (c.index < (uint32_t) ti) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

static const uint8_t * tensor_entry(const struct tg_trace * tr, int gi, int ti) {
    if (!tr || gi < 0 || gi >= tr->n_graphs) return NULL;
    const struct trace_gmeta * g = &tr->graphs[gi];
    if (ti < 0 || ti >= g->n_nodes + g->n_leafs) return NULL;
    if (g->base_gi >= 0) {   // a delta: its own entry, or its (full) base graph's
        const uint8_t * e = find_change(trace_payload(tr, g->ord) + TRACE_SIZE(gdelta_head), g->n_changed,
                                        TRACE_SIZE(change) + (size_t) g->entry_size, ti);
        if (e) return e;
        g = &tr->graphs[g->base_gi];
    }
    return trace_payload(tr, g->ord) + TRACE_SIZE(graph_head) + (size_t) ti * g->entry_size;
}

bool tg_trace_get_tensor(const struct tg_trace * tr, int gi, int ti, struct tg_trace_tensor * out) {
    const uint8_t * e = tensor_entry(tr, gi, ti);
    if (!e || !out) return false;
    int32_t nt = tr->graphs[gi].n_nodes + tr->graphs[gi].n_leafs;
    trace_get_tensor(e, out);
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++)
        if (out->src[k] < 0 || out->src[k] >= nt) out->src[k] = TG_TRACE_NONE;
    if (out->view_src < 0 || out->view_src >= nt) out->view_src = TG_TRACE_NONE;
    return true;
}

const char * tg_trace_tensor_name(const struct tg_trace * tr, int gi, int ti, char buf[TG_TRACE_NAME]) {
    const uint8_t * e = tensor_entry(tr, gi, ti);
    if (!e) { buf[0] = '\0'; return buf; }
    rd_name(buf, e + TRACE_AT(tensor, name), TG_TRACE_NAME);
    return buf;
}

int tg_trace_find_tensor(const struct tg_trace * tr, int gi, const char * name) {
    if (!tr || gi < 0 || gi >= tr->n_graphs || !name) return -1;
    int nt = tr->graphs[gi].n_nodes + tr->graphs[gi].n_leafs;
    size_t l = strlen(name);
    if (l >= TG_TRACE_NAME) return -1;
    for (int ti = 0; ti < nt; ti++) {
        const uint8_t * e = tensor_entry(tr, gi, ti);
        const uint8_t * n = e + TRACE_AT(tensor, name);
        if (memcmp(n, name, l) == 0 && n[l] == 0) return ti;
    }
    return -1;
}

static int cmp_key(const void * a, const void * b) {
    const struct trace_key * x = a, * y = b;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int tg_trace_find_uid(struct tg_trace * tr, uint64_t uid, int * ti) {
    if (!tr) return -1;
    if (!tr->uid_keys) {
        size_t n = 0;
        for (int gi = 0; gi < tr->n_graphs; gi++) n += (size_t) tr->graphs[gi].n_nodes + tr->graphs[gi].n_leafs;
        tr->uid_keys = malloc((n ? n : 1) * sizeof(*tr->uid_keys));
        if (!tr->uid_keys) return -1;
        size_t k = 0;
        for (int gi = 0; gi < tr->n_graphs; gi++) {
            int nt = tr->graphs[gi].n_nodes + tr->graphs[gi].n_leafs;
            for (int t = 0; t < nt; t++)
                tr->uid_keys[k++] = (struct trace_key) { rd_u64(tensor_entry(tr, gi, t) + TRACE_AT(tensor, uid)),
                                                         ((uint64_t) gi << 32) | (uint32_t) t, 0 };
        }
        qsort(tr->uid_keys, n, sizeof(*tr->uid_keys), cmp_key);
        tr->n_uid_keys = (int) n;
    }
    // last key with a == uid: highest gi (then highest ti; prefer the lowest ti of that gi)
    int lo = 0, hi = tr->n_uid_keys;
    while (lo < hi) { int mid = (lo + hi) / 2; if (tr->uid_keys[mid].a <= uid) lo = mid + 1; else hi = mid; }
    if (lo == 0 || tr->uid_keys[lo - 1].a != uid) return -1;
    int j = lo - 1;
    int gi = (int) (tr->uid_keys[j].b >> 32);
    while (j > 0 && tr->uid_keys[j - 1].a == uid && (int) (tr->uid_keys[j - 1].b >> 32) == gi) j--;
    if (ti) *ti = (int) (uint32_t) tr->uid_keys[j].b;
    return gi;
}

// ---- placement, splits, allocation ------------------------------------------

bool tg_trace_get_placement(const struct tg_trace * tr, int gi, int ti, struct tg_trace_placement * out) {
    if (!tensor_entry(tr, gi, ti) || !out || tr->graphs[gi].place_ord < 0) return false;
    const struct trace_gmeta * g = &tr->graphs[gi];
    const uint8_t * p = trace_payload(tr, (uint32_t) g->place_ord);
    const uint8_t * e = NULL, * blob = NULL;
    uint32_t text = 0;
    if (g->place_base_ord >= 0) {   // PLACEMENT_DELTA: its entry, else the base's full PLACEMENT
        struct trace_pdelta_head h;
        const uint8_t * list = trace_get_pdelta_head(p, &h);
        size_t esz = TRACE_SIZE(change) + (size_t) h.entry_size;
        e = find_change(list, h.n_changed, esz, ti);
        if (e) {
            text = h.text_size;
            blob = list + (size_t) h.n_changed * esz;
        } else {
            p = trace_payload(tr, (uint32_t) g->place_base_ord);
        }
    }
    if (!e) {
        struct trace_place_head h;
        const uint8_t * list = trace_get_place_head(p, &h);
        text = h.text_size;
        e = list + (size_t) ti * h.entry_size;
        blob = list + (size_t) h.n * h.entry_size;
    }
    struct trace_place_entry pe;
    trace_get_place_entry(e, &pe);
    out->backend = pe.backend;
    out->cause = pe.cause;
    out->text = "";
    if (pe.text_len > 0 && (uint64_t) pe.text_off + pe.text_len <= text && blob[pe.text_off + pe.text_len - 1] == 0)
        out->text = (const char *) blob + pe.text_off;
    return true;
}

// The graph's SPLITS header into *h; the split entries start at the returned
// pointer (NULL: no SPLITS record for the graph).
static const uint8_t * splits_payload(const struct tg_trace * tr, int gi, struct trace_splits_head * h) {
    if (!tr || gi < 0 || gi >= tr->n_graphs || tr->graphs[gi].splits_ord < 0) return NULL;
    return trace_get_splits_head(trace_payload(tr, (uint32_t) tr->graphs[gi].splits_ord), h);
}

int tg_trace_n_splits(const struct tg_trace * tr, int gi) {
    struct trace_splits_head h;
    return splits_payload(tr, gi, &h) ? (int) h.n_splits : 0;
}

int tg_trace_n_split_inputs(const struct tg_trace * tr, int gi) {
    struct trace_splits_head h;
    return splits_payload(tr, gi, &h) ? (int) h.n_inputs : 0;
}

bool tg_trace_get_split(const struct tg_trace * tr, int gi, int si, struct tg_trace_split * out) {
    struct trace_splits_head h;
    const uint8_t * e = splits_payload(tr, gi, &h);
    if (!e || !out || si < 0 || (uint32_t) si >= h.n_splits) return false;
    trace_get_split(e + (size_t) si * h.split_entry_size, out);
    uint32_t ni = h.n_inputs;
    if (out->first_input > ni || out->n_inputs > ni - out->first_input) { out->first_input = 0; out->n_inputs = 0; }
    return true;
}

bool tg_trace_get_split_input(const struct tg_trace * tr, int gi, int ii, struct tg_trace_split_input * out) {
    struct trace_splits_head h;
    const uint8_t * e = splits_payload(tr, gi, &h);
    if (!e || !out || ii < 0 || (uint32_t) ii >= h.n_inputs) return false;
    trace_get_split_input(e + (size_t) h.n_splits * h.split_entry_size + (size_t) ii * h.input_entry_size, out);
    return true;
}

// ---- gradient links (GRADS, 1.3) ------------------------------------------------

static const uint8_t * grads_payload(const struct tg_trace * tr, int gi, struct trace_grads_head * h) {
    if (!tr || gi < 0 || gi >= tr->n_graphs || tr->graphs[gi].grads_ord < 0) return NULL;
    return trace_get_grads_head(trace_payload(tr, (uint32_t) tr->graphs[gi].grads_ord), h);
}

int tg_trace_n_grads(const struct tg_trace * tr, int gi) {
    struct trace_grads_head h;
    return grads_payload(tr, gi, &h) ? (int) h.n : 0;
}

bool tg_trace_get_grad_link(const struct tg_trace * tr, int gi, int k, int * grad, int * of) {
    struct trace_grads_head h;
    const uint8_t * e = grads_payload(tr, gi, &h);
    if (!e || k < 0 || (uint32_t) k >= h.n) return false;
    struct trace_grad_entry x;
    trace_get_grad_entry(e + (size_t) k * h.entry_size, &x);
    if (grad) *grad = x.grad;
    if (of) *of = x.of;
    return true;
}

// The pair whose `want` side (0: grad, 1: of) is ti; returns the other side.
static int grad_lookup(const struct tg_trace * tr, int gi, int ti, int want) {
    int n = tg_trace_n_grads(tr, gi), g, o;
    for (int k = 0; k < n; k++)
        if (tg_trace_get_grad_link(tr, gi, k, &g, &o) && (want ? o : g) == ti) return want ? g : o;
    return -1;
}

int tg_trace_grad_of(const struct tg_trace * tr, int gi, int ti) { return grad_lookup(tr, gi, ti, 0); }
int tg_trace_grad(const struct tg_trace * tr, int gi, int ti) { return grad_lookup(tr, gi, ti, 1); }

int tg_trace_split_of_node(const struct tg_trace * tr, int gi, int ti) {
    int n = tg_trace_n_splits(tr, gi);
    struct tg_trace_split s;
    for (int si = 0; si < n; si++)
        if (tg_trace_get_split(tr, gi, si, &s) && ti >= s.node_begin && ti < s.node_end) return si;
    return -1;
}

static const uint8_t * alloc_payload(const struct tg_trace * tr, int gi) {
    if (!tr || gi < 0 || gi >= tr->n_graphs || tr->graphs[gi].alloc_ord < 0) return NULL;
    return trace_payload(tr, (uint32_t) tr->graphs[gi].alloc_ord);
}

bool tg_trace_has_alloc(const struct tg_trace * tr, int gi) { return alloc_payload(tr, gi) != NULL; }

// An ALLOC or ALLOC_DELTA payload: its buffer list and its allocation
// entries (all of them, or a delta's change list).
struct alloc_view {
    const uint8_t * bufs;     // n_buffers entries of buffer_size bytes
    const uint8_t * allocs;   // ALLOC: entry i = tensor i; ALLOC_DELTA: n_changed (change, entry) pairs
    uint32_t n_buffers, buffer_size, alloc_size, n_changed;
};

static void alloc_view_at(const uint8_t * p, bool delta, struct alloc_view * v) {
    if (delta) {
        struct trace_adelta_head h;
        v->bufs = trace_get_adelta_head(p, &h);
        *v = (struct alloc_view) { v->bufs, v->bufs + (size_t) h.n_buffers * h.buffer_entry_size, h.n_buffers,
                                   h.buffer_entry_size, h.alloc_entry_size, h.n_changed };
    } else {
        struct trace_alloc_head h;
        v->bufs = trace_get_alloc_head(p, &h);
        *v = (struct alloc_view) { v->bufs, v->bufs + (size_t) h.n_buffers * h.buffer_entry_size, h.n_buffers,
                                   h.buffer_entry_size, h.alloc_entry_size, 0 };
    }
}

static bool alloc_view(const struct tg_trace * tr, int gi, struct alloc_view * v) {
    const uint8_t * p = alloc_payload(tr, gi);
    if (!p) return false;
    alloc_view_at(p, tr->graphs[gi].alloc_base_ord >= 0, v);
    return true;
}

int tg_trace_n_buffers(const struct tg_trace * tr, int gi) {
    struct alloc_view v;
    return alloc_view(tr, gi, &v) ? (int) v.n_buffers : 0;
}

bool tg_trace_get_buffer(const struct tg_trace * tr, int gi, int bi, struct tg_trace_buffer * out) {
    struct alloc_view v;
    if (!alloc_view(tr, gi, &v) || !out || bi < 0 || (uint32_t) bi >= v.n_buffers) return false;
    trace_get_buffer(v.bufs + (size_t) bi * v.buffer_size, out);
    return true;
}

bool tg_trace_get_alloc(const struct tg_trace * tr, int gi, int ti, struct tg_trace_alloc * out) {
    struct alloc_view v;
    if (!alloc_view(tr, gi, &v) || !out || !tensor_entry(tr, gi, ti)) return false;
    const struct trace_gmeta * g = &tr->graphs[gi];
    const uint8_t * e = NULL;
    if (g->alloc_base_ord >= 0) {   // ALLOC_DELTA: its entry, else the base's (same buffer list)
        e = find_change(v.allocs, v.n_changed, TRACE_SIZE(change) + (size_t) v.alloc_size, ti);
        if (!e) alloc_view_at(trace_payload(tr, (uint32_t) g->alloc_base_ord), false, &v);
    }
    if (!e) e = v.allocs + (size_t) ti * v.alloc_size;   // a full ALLOC (the graph's own or the base's)
    int32_t nt = tr->graphs[gi].n_nodes + tr->graphs[gi].n_leafs;
    trace_get_alloc(e, out);
    if (out->buffer < 0 || (uint32_t) out->buffer >= v.n_buffers) out->buffer = TG_TRACE_NONE;
    if (out->inplace_parent < 0 || out->inplace_parent >= nt) out->inplace_parent = TG_TRACE_NONE;
    return true;
}

int tg_trace_n_alloc_records(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_ALLOC].n : 0; }

bool tg_trace_get_alloc_record(const struct tg_trace * tr, int i, uint32_t * graph_id, uint32_t * sched_id,
                               uint32_t * record) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_ALLOC, i);
    if (ord == UINT32_MAX) return false;
    struct trace_alloc_head h;   // validated when listed (>= ALLOC head)
    trace_get_alloc_head(trace_payload(tr, ord), &h);
    if (graph_id) *graph_id = h.graph_id;
    if (sched_id) *sched_id = h.sched_id;
    if (record) *record = ord;
    return true;
}

// ---- computations and evals -------------------------------------------------

int tg_trace_n_computes(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_COMPUTE].n : 0; }

bool tg_trace_get_compute(const struct tg_trace * tr, int i, struct tg_trace_compute * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_COMPUTE, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_SIZE(compute)) return false;
    trace_get_compute(trace_payload(tr, ord), out);
    out->record = ord;
    return true;
}

int tg_trace_n_evals(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_EVAL].n : 0; }

static int find_key(const struct trace_key * k, int n, uint32_t graph_id, int node, uint32_t seq);

bool tg_trace_get_eval(const struct tg_trace * tr, int i, struct tg_trace_eval * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_EVAL, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_SIZE(eval)) return false;
    trace_get_eval(trace_payload(tr, ord), out);
    out->record = ord;
    if ((out->flags & TG_TRACE_EVAL_PENDING) && tr->result_keys) {   // its RESULT, written after it (1.4)
        int k = find_key(tr->result_keys, tr->kind[TG_TRACE_REC_RESULT].n, out->graph_id, out->node, out->compute_seq);
        if (k >= 0) {
            struct tg_trace_result r;
            trace_get_result(trace_payload(tr, tr->kind[TG_TRACE_REC_RESULT].v[k]), &r);
            const uint32_t adds = TG_TRACE_EVAL_HASH | TG_TRACE_EVAL_SUMMARY | TG_TRACE_EVAL_SKETCH | TG_TRACE_EVAL_NODATA |
                                  TG_TRACE_EVAL_SETDIGEST;
            out->flags = (out->flags & ~(uint32_t) TG_TRACE_EVAL_PENDING) | (r.flags & adds);
            out->hash = r.hash;
            out->sum = r.sum;
        }
    }
    return true;
}

// Sorted keys (graph_id<<32 | node, seq) over the EVAL, CONTENTS, SKETCH or RESULT records.
static struct trace_key * build_keys(const struct tg_trace * tr, uint32_t type) {
    int n = tr->kind[type].n;
    struct trace_key * k = malloc((size_t) (n ? n : 1) * sizeof(*k));
    if (!k) return NULL;
    for (int i = 0; i < n; i++) {
        const uint8_t * p = trace_payload(tr, tr->kind[type].v[i]);
        uint32_t len = tr->recs[tr->kind[type].v[i]].len;
        uint32_t graph_id, seq;
        int32_t node;
        if (type == TG_TRACE_REC_EVAL && len >= TRACE_SIZE(eval)) {
            struct tg_trace_eval e;
            trace_get_eval(p, &e);
            graph_id = e.graph_id, seq = e.compute_seq, node = e.node;
        } else if (type == TG_TRACE_REC_CONTENTS && len >= TRACE_SIZE(contents)) {
            struct tg_trace_contents c;
            trace_get_contents(p, &c);
            graph_id = c.graph_id, seq = c.compute_seq, node = c.node;
        } else if (type == TG_TRACE_REC_SKETCH && len >= TRACE_SIZE(sketch)) {
            struct tg_trace_sketch s;
            trace_get_sketch(p, &s);
            graph_id = s.graph_id, seq = s.compute_seq, node = s.node;
        } else if (type == TG_TRACE_REC_RESULT && len >= TRACE_SIZE(result)) {
            struct tg_trace_result r;
            trace_get_result(p, &r);
            graph_id = r.graph_id, seq = r.compute_seq, node = r.node;
        } else {
            k[i] = (struct trace_key) { UINT64_MAX, UINT64_MAX, i };
            continue;
        }
        k[i] = (struct trace_key) { ((uint64_t) graph_id << 32) | (uint32_t) node, seq, i };
    }
    qsort(k, (size_t) n, sizeof(*k), cmp_key);
    return k;
}

static int find_key(const struct trace_key * k, int n, uint32_t graph_id, int node, uint32_t seq) {
    uint64_t a = ((uint64_t) graph_id << 32) | (uint32_t) node;
    int lo = 0, hi = n;
    if (seq == UINT32_MAX) {   // last with a
        while (lo < hi) { int mid = (lo + hi) / 2; if (k[mid].a <= a) lo = mid + 1; else hi = mid; }
        return lo > 0 && k[lo - 1].a == a ? k[lo - 1].i : -1;
    }
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (k[mid].a < a || (k[mid].a == a && k[mid].b < seq)) lo = mid + 1; else hi = mid;
    }
    return lo < n && k[lo].a == a && k[lo].b == seq ? k[lo].i : -1;
}

bool tg_trace_build_result_keys(struct tg_trace * tr) {
    return tr->kind[TG_TRACE_REC_RESULT].n == 0 || (tr->result_keys = build_keys(tr, TG_TRACE_REC_RESULT)) != NULL;
}

int tg_trace_find_eval(struct tg_trace * tr, uint32_t graph_id, int node, uint32_t compute_seq) {
    if (!tr) return -1;
    if (!tr->eval_keys && !(tr->eval_keys = build_keys(tr, TG_TRACE_REC_EVAL))) return -1;
    return find_key(tr->eval_keys, tr->kind[TG_TRACE_REC_EVAL].n, graph_id, node, compute_seq);
}

// ---- contents ---------------------------------------------------------------

int tg_trace_n_contents(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_CONTENTS].n : 0; }

bool tg_trace_get_contents(const struct tg_trace * tr, int i, struct tg_trace_contents * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_CONTENTS, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_SIZE(contents)) return false;
    trace_get_contents(trace_payload(tr, ord), out);
    out->stored_size = tr->recs[ord].len - TRACE_SIZE(contents);
    out->record = ord;
    return true;
}

int tg_trace_find_contents(struct tg_trace * tr, uint32_t graph_id, int node, uint32_t compute_seq) {
    if (!tr) return -1;
    if (!tr->contents_keys && !(tr->contents_keys = build_keys(tr, TG_TRACE_REC_CONTENTS))) return -1;
    return find_key(tr->contents_keys, tr->kind[TG_TRACE_REC_CONTENTS].n, graph_id, node, compute_seq);
}

enum tg_status tg_trace_read_contents(const struct tg_trace * tr, int i, void * dst, size_t cap) {
    struct tg_trace_contents c;
    if (!tg_trace_get_contents(tr, i, &c)) return tg_error(TG_ERR_INVALID_ARG, "trace: no contents #%d", i);
    if (c.raw_size > cap || (c.raw_size && !dst))
        return tg_error(TG_ERR_INVALID_ARG, "trace: contents #%d need %llu bytes, buffer has %zu", i,
                        (unsigned long long) c.raw_size, cap);
    const uint8_t * frame = tr->base + tr->recs[c.record].off;
    uint32_t len = tr->recs[c.record].len;
    const size_t after_sync = TRACE_AT(frame_head, type);
    if (rd_u32(frame + TRACE_FRAME_HEAD + len) !=
        tg_trace_frame_checksum(frame + after_sync, TRACE_FRAME_HEAD - after_sync + (size_t) len))
        return tg_error(TG_ERR_FORMAT, "trace: contents record %u at offset %llu has a bad checksum", c.record,
                        (unsigned long long) tr->recs[c.record].off);
    const uint8_t * data = frame + TRACE_FRAME_HEAD + TRACE_SIZE(contents);
    if (c.codec == TG_TRACE_CODEC_RAW) {
        if (c.stored_size != c.raw_size) return tg_error(TG_ERR_FORMAT, "trace: raw contents size mismatch");
        if (c.raw_size) memcpy(dst, data, (size_t) c.raw_size);
    } else if (c.codec == TG_TRACE_CODEC_ZSTD) {
        size_t r = ZSTD_decompress(dst, (size_t) c.raw_size, data, (size_t) c.stored_size);
        if (ZSTD_isError(r) || r != c.raw_size)
            return tg_error(TG_ERR_FORMAT, "trace: contents record %u do not decompress: %s", c.record,
                            ZSTD_isError(r) ? ZSTD_getErrorName(r) : "size mismatch");
    } else {
        return tg_error(TG_ERR_FORMAT, "trace: contents record %u has unknown codec %u", c.record, c.codec);
    }
    // content hashes are XXH3-64 from format 1.1 on, XXH64 before
    uint64_t h = tr->st.version_minor >= 1 ? XXH3_64bits(dst, (size_t) c.raw_size) : XXH64(dst, (size_t) c.raw_size, 0);
    if (h != c.hash)
        return tg_error(TG_ERR_FORMAT, "trace: contents record %u do not match their hash", c.record);
    return TG_OK;
}

// ---- sketches -----------------------------------------------------------------------

int tg_trace_n_sketches(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_SKETCH].n : 0; }

bool tg_trace_get_sketch(const struct tg_trace * tr, int i, struct tg_trace_sketch * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_SKETCH, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_SIZE(sketch)) return false;
    trace_get_sketch(trace_payload(tr, ord), out);
    out->record = ord;
    return out->n == TG_TRACE_SKETCH_N;
}

int tg_trace_find_sketch(struct tg_trace * tr, uint32_t graph_id, int node, uint32_t compute_seq) {
    if (!tr) return -1;
    if (!tr->sketch_keys && !(tr->sketch_keys = build_keys(tr, TG_TRACE_REC_SKETCH))) return -1;
    return find_key(tr->sketch_keys, tr->kind[TG_TRACE_REC_SKETCH].n, graph_id, node, compute_seq);
}

// ---- host accesses, markers, events ---------------------------------------------

int tg_trace_n_hosts(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_HOST].n : 0; }

bool tg_trace_get_host(const struct tg_trace * tr, int i, struct tg_trace_host * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_HOST, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_SIZE(host)) return false;
    trace_get_host(trace_payload(tr, ord), out);
    out->record = ord;
    return true;
}

int tg_trace_n_markers(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_MARKER].n : 0; }

// Marker fields; *ids = start of the token ids (validated to fit).
static bool marker_at(const struct tg_trace * tr, int i, struct tg_trace_marker * out, const uint8_t ** ids) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_MARKER, i);
    if (ord == UINT32_MAX || tr->recs[ord].len < TRACE_SIZE(marker)) return false;
    const uint8_t * p = trace_payload(tr, ord);
    const uint8_t * end = p + tr->recs[ord].len;
    const uint8_t * q = trace_get_marker(p, out);
    if (!trace_get_tail_marker(&q, end, out)) return false;
    if (out->n_ids > (uint64_t) (end - q) / 4) return false;
    out->record = ord;
    if (ids) *ids = q;
    return true;
}

bool tg_trace_get_marker(const struct tg_trace * tr, int i, struct tg_trace_marker * out) {
    return out && marker_at(tr, i, out, NULL);
}

int tg_trace_marker_tokens(const struct tg_trace * tr, int i, int32_t * ids, int cap) {
    struct tg_trace_marker m;
    const uint8_t * q;
    if (!marker_at(tr, i, &m, &q)) return 0;
    for (uint32_t k = 0; k < m.n_ids && (int) k < cap && ids; k++) ids[k] = rd_i32(q + 4 * k);
    return (int) m.n_ids;
}

int tg_trace_marker_before(const struct tg_trace * tr, uint32_t record) {
    if (!tr) return -1;
    const struct trace_list * l = &tr->kind[TG_TRACE_REC_MARKER];
    int lo = 0, hi = l->n;   // first marker with ordinal >= record
    while (lo < hi) { int mid = (lo + hi) / 2; if (l->v[mid] < record) lo = mid + 1; else hi = mid; }
    for (int i = lo - 1; i >= 0; i--) {
        struct tg_trace_marker m;
        if (tr->recs[l->v[i]].len >= TRACE_SIZE(marker) && trace_get_marker(trace_payload(tr, l->v[i]), &m) &&
            m.kind != TG_TRACE_MARK_PHASE)
            return i;
    }
    return -1;
}

int tg_trace_n_events(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_EVENT].n : 0; }

bool tg_trace_get_event(const struct tg_trace * tr, int i, struct tg_trace_event * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_EVENT, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_SIZE(event)) return false;
    const uint8_t * p = trace_payload(tr, ord);
    const uint8_t * end = p + tr->recs[ord].len;
    const uint8_t * q = trace_get_event(p, out);
    if (!trace_get_tail_event(&q, end, out)) out->message = "";
    out->record = ord;
    return true;
}

// ---- helpers ----------------------------------------------------------------

int tg_trace_layer_of_name(const char * name) {
    if (!name) return -1;
    const char * b = strstr(name, "blk.");
    if (b && b[4] >= '0' && b[4] <= '9') return atoi(b + 4);
    const char * d = strrchr(name, '-');
    if (d && d[1] >= '0' && d[1] <= '9') {
        for (const char * c = d + 1; *c; c++) if (*c < '0' || *c > '9') return -1;
        return atoi(d + 1);
    }
    return -1;
}

char * tg_trace_shape_str(const int64_t ne[4], char * buf, size_t n) {
    snprintf(buf, n, "[%lld,%lld,%lld,%lld]", (long long) ne[0], (long long) ne[1], (long long) ne[2],
             (long long) ne[3]);
    return buf;
}
