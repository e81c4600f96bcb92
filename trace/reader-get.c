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
    out->time_unix_ns = rd_u64(p);
    out->mono_start_ns = rd_u64(p + 8);
    out->pid = rd_u32(p + 16);
    out->n_threads = rd_i32(p + 20);
    p += 24;
    out->engine_version = trace_read_str(&p, end);
    out->cmdline = trace_read_str(&p, end);
    out->backends = trace_read_str(&p, end);
    out->note = trace_read_str(&p, end);
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
    if (end - p < 8) return false;
    out->sched_id = rd_u32(p);
    uint32_t n = rd_u32(p + 4);
    if (n > TG_TRACE_MAX_BACKENDS) return false;
    p += 8;
    for (uint32_t b = 0; b < n; b++) {
        out->backend[b] = trace_read_str(&p, end);
        out->buft[b] = out->backend[b] ? trace_read_str(&p, end) : NULL;
        if (!out->backend[b] || !out->buft[b]) return false;
    }
    out->n_backends = (int32_t) n;
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
    out->structure_hash = rd_u64(p + 24);
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
        uint32_t ix = rd_u32(list + (size_t) mid * stride);
        if (ix == (uint32_t) ti) return list + (size_t) mid * stride + 4;
        if (ix < (uint32_t) ti) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

static const uint8_t * tensor_entry(const struct tg_trace * tr, int gi, int ti) {
    if (!tr || gi < 0 || gi >= tr->n_graphs) return NULL;
    const struct trace_gmeta * g = &tr->graphs[gi];
    if (ti < 0 || ti >= g->n_nodes + g->n_leafs) return NULL;
    if (g->base_gi >= 0) {   // a delta: its own entry, or its (full) base graph's
        const uint8_t * e = find_change(trace_payload(tr, g->ord) + TRACE_GDELTA_HEAD, g->n_changed,
                                        (size_t) g->entry_size + 4, ti);
        if (e) return e;
        g = &tr->graphs[g->base_gi];
    }
    return trace_payload(tr, g->ord) + TRACE_GRAPH_HEAD + (size_t) ti * g->entry_size;
}

bool tg_trace_get_tensor(const struct tg_trace * tr, int gi, int ti, struct tg_trace_tensor * out) {
    const uint8_t * e = tensor_entry(tr, gi, ti);
    if (!e || !out) return false;
    int32_t nt = tr->graphs[gi].n_nodes + tr->graphs[gi].n_leafs;
    rd_name(out->name, e, TG_TRACE_NAME);
    out->uid = rd_u64(e + 64);
    for (int d = 0; d < 4; d++) {
        out->ne[d] = rd_i64(e + 72 + 8 * d);
        out->nb[d] = rd_u64(e + 104 + 8 * d);
    }
    for (int k = 0; k < TG_TRACE_MAX_OP_PARAMS; k++) out->op_params[k] = rd_i32(e + 136 + 4 * k);
    out->op = rd_i32(e + 200);
    out->type = rd_i32(e + 204);
    out->flags = rd_i32(e + 208);
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
        int32_t s = rd_i32(e + 212 + 4 * k);
        out->src[k] = s >= 0 && s < nt ? s : TG_TRACE_NONE;
    }
    int32_t v = rd_i32(e + 236);
    out->view_src = v >= 0 && v < nt ? v : TG_TRACE_NONE;
    out->view_offs = rd_u64(e + 240);
    return true;
}

const char * tg_trace_tensor_name(const struct tg_trace * tr, int gi, int ti, char buf[TG_TRACE_NAME]) {
    const uint8_t * e = tensor_entry(tr, gi, ti);
    if (!e) { buf[0] = '\0'; return buf; }
    rd_name(buf, e, TG_TRACE_NAME);
    return buf;
}

int tg_trace_find_tensor(const struct tg_trace * tr, int gi, const char * name) {
    if (!tr || gi < 0 || gi >= tr->n_graphs || !name) return -1;
    int nt = tr->graphs[gi].n_nodes + tr->graphs[gi].n_leafs;
    size_t l = strlen(name);
    if (l >= TG_TRACE_NAME) return -1;
    for (int ti = 0; ti < nt; ti++) {
        const uint8_t * e = tensor_entry(tr, gi, ti);
        if (memcmp(e, name, l) == 0 && e[l] == 0) return ti;
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
                tr->uid_keys[k++] = (struct trace_key) { rd_u64(tensor_entry(tr, gi, t) + 64),
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
        uint32_t esz = rd_u32(p + 12), nc = rd_u32(p + 20);
        e = find_change(p + TRACE_PDELTA_HEAD, nc, (size_t) esz + 4, ti);
        if (e) {
            text = rd_u32(p + 16);
            blob = p + TRACE_PDELTA_HEAD + (size_t) nc * (esz + 4);
        } else {
            p = trace_payload(tr, (uint32_t) g->place_base_ord);
        }
    }
    if (!e) {
        uint32_t n = rd_u32(p + 4), esz = rd_u32(p + 8);
        text = rd_u32(p + 12);
        e = p + TRACE_PLACE_HEAD + (size_t) ti * esz;
        blob = p + TRACE_PLACE_HEAD + (size_t) n * esz;
    }
    out->backend = rd_i32(e);
    out->cause = rd_u32(e + 4);
    uint32_t at = rd_u32(e + 8), l = rd_u32(e + 12);
    out->text = "";
    if (l > 0 && (uint64_t) at + l <= text && blob[at + l - 1] == 0) out->text = (const char *) blob + at;
    return true;
}

static const uint8_t * splits_payload(const struct tg_trace * tr, int gi) {
    if (!tr || gi < 0 || gi >= tr->n_graphs || tr->graphs[gi].splits_ord < 0) return NULL;
    return trace_payload(tr, (uint32_t) tr->graphs[gi].splits_ord);
}

int tg_trace_n_splits(const struct tg_trace * tr, int gi) {
    const uint8_t * p = splits_payload(tr, gi);
    return p ? (int) rd_u32(p + 4) : 0;
}

int tg_trace_n_split_inputs(const struct tg_trace * tr, int gi) {
    const uint8_t * p = splits_payload(tr, gi);
    return p ? (int) rd_u32(p + 8) : 0;
}

bool tg_trace_get_split(const struct tg_trace * tr, int gi, int si, struct tg_trace_split * out) {
    const uint8_t * p = splits_payload(tr, gi);
    if (!p || !out || si < 0 || (uint32_t) si >= rd_u32(p + 4)) return false;
    const uint8_t * e = p + TRACE_SPLITS_HEAD + (size_t) si * rd_u32(p + 12);
    out->backend = rd_i32(e);
    out->node_begin = rd_i32(e + 4);
    out->node_end = rd_i32(e + 8);
    out->first_input = rd_u32(e + 12);
    out->n_inputs = rd_u32(e + 16);
    uint32_t ni = rd_u32(p + 8);
    if (out->first_input > ni || out->n_inputs > ni - out->first_input) { out->first_input = 0; out->n_inputs = 0; }
    return true;
}

bool tg_trace_get_split_input(const struct tg_trace * tr, int gi, int ii, struct tg_trace_split_input * out) {
    const uint8_t * p = splits_payload(tr, gi);
    if (!p || !out || ii < 0 || (uint32_t) ii >= rd_u32(p + 8)) return false;
    const uint8_t * e = p + TRACE_SPLITS_HEAD + (size_t) rd_u32(p + 4) * rd_u32(p + 12) + (size_t) ii * rd_u32(p + 16);
    out->tensor = rd_i32(e);
    out->from_backend = rd_i32(e + 4);
    out->bytes = rd_u64(e + 8);
    rd_name(out->copy_name, e + 16, TG_TRACE_NAME);
    return true;
}

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

// Where an ALLOC or ALLOC_DELTA keeps its buffer list.
struct alloc_view { const uint8_t * bufs; uint32_t nb, eb; };

static bool alloc_view(const struct tg_trace * tr, int gi, struct alloc_view * v) {
    const uint8_t * p = alloc_payload(tr, gi);
    if (!p) return false;
    if (tr->graphs[gi].alloc_base_ord >= 0) *v = (struct alloc_view) { p + TRACE_ADELTA_HEAD, rd_u32(p + 12), rd_u32(p + 20) };
    else                                    *v = (struct alloc_view) { p + TRACE_ALLOC_HEAD, rd_u32(p + 8), rd_u32(p + 16) };
    return true;
}

int tg_trace_n_buffers(const struct tg_trace * tr, int gi) {
    struct alloc_view v;
    return alloc_view(tr, gi, &v) ? (int) v.nb : 0;
}

bool tg_trace_get_buffer(const struct tg_trace * tr, int gi, int bi, struct tg_trace_buffer * out) {
    struct alloc_view v;
    if (!alloc_view(tr, gi, &v) || !out || bi < 0 || (uint32_t) bi >= v.nb) return false;
    const uint8_t * e = v.bufs + (size_t) bi * v.eb;
    out->uid = rd_u64(e);
    out->backend = rd_i32(e + 8);
    out->usage = rd_i32(e + 12);
    out->size = rd_u64(e + 16);
    rd_name(out->buft, e + 24, TG_TRACE_BUFT_NAME);
    return true;
}

bool tg_trace_get_alloc(const struct tg_trace * tr, int gi, int ti, struct tg_trace_alloc * out) {
    const uint8_t * p = alloc_payload(tr, gi);
    if (!p || !out || !tensor_entry(tr, gi, ti)) return false;
    const struct trace_gmeta * g = &tr->graphs[gi];
    const uint8_t * e = NULL;
    uint32_t nb;
    if (g->alloc_base_ord >= 0) {   // ALLOC_DELTA: its entry, else the base's (same buffer list)
        nb = rd_u32(p + 12);
        uint32_t ea = rd_u32(p + 24), nc = rd_u32(p + 28);
        e = find_change(p + TRACE_ADELTA_HEAD + (size_t) nb * rd_u32(p + 20), nc, (size_t) ea + 4, ti);
        if (!e) p = trace_payload(tr, (uint32_t) g->alloc_base_ord);
    }
    if (!e) {   // a full ALLOC (the graph's own or the base's)
        nb = rd_u32(p + 8);
        e = p + TRACE_ALLOC_HEAD + (size_t) nb * rd_u32(p + 16) + (size_t) ti * rd_u32(p + 20);
    }
    int32_t nt = tr->graphs[gi].n_nodes + tr->graphs[gi].n_leafs;
    out->buffer = rd_i32(e);
    if (out->buffer < 0 || (uint32_t) out->buffer >= nb) out->buffer = TG_TRACE_NONE;
    out->inplace_parent = rd_i32(e + 4);
    if (out->inplace_parent < 0 || out->inplace_parent >= nt) out->inplace_parent = TG_TRACE_NONE;
    out->offset = rd_u64(e + 8);
    out->size = rd_u64(e + 16);
    out->first_step = rd_i32(e + 24);
    out->last_step = rd_i32(e + 28);
    out->flags = rd_u32(e + 32);
    return true;
}

int tg_trace_n_alloc_records(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_ALLOC].n : 0; }

bool tg_trace_get_alloc_record(const struct tg_trace * tr, int i, uint32_t * graph_id, uint32_t * sched_id,
                               uint32_t * record) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_ALLOC, i);
    if (ord == UINT32_MAX) return false;
    const uint8_t * p = trace_payload(tr, ord);   // validated when listed (>= ALLOC head)
    if (graph_id) *graph_id = rd_u32(p);
    if (sched_id) *sched_id = rd_u32(p + 4);
    if (record) *record = ord;
    return true;
}

// ---- computations and evals -------------------------------------------------

int tg_trace_n_computes(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_COMPUTE].n : 0; }

bool tg_trace_get_compute(const struct tg_trace * tr, int i, struct tg_trace_compute * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_COMPUTE, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_COMPUTE_SIZE) return false;
    const uint8_t * p = trace_payload(tr, ord);
    out->graph_id = rd_u32(p);
    out->compute_seq = rd_u32(p + 4);
    out->phase = rd_u32(p + 8);
    out->status = rd_i32(p + 12);
    out->time_ns = rd_u64(p + 16);
    out->record = ord;
    return true;
}

int tg_trace_n_evals(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_EVAL].n : 0; }

bool tg_trace_get_eval(const struct tg_trace * tr, int i, struct tg_trace_eval * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_EVAL, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_EVAL_SIZE) return false;
    const uint8_t * p = trace_payload(tr, ord);
    out->graph_id = rd_u32(p);
    out->compute_seq = rd_u32(p + 4);
    out->node = rd_i32(p + 8);
    out->flags = rd_u32(p + 12);
    out->t_begin_ns = rd_u64(p + 16);
    out->t_end_ns = rd_u64(p + 24);
    out->hash = rd_u64(p + 32);
    out->uid = rd_u64(p + 40);
    out->root_uid = rd_u64(p + 48);
    out->buffer_uid = rd_u64(p + 56);
    out->offset = rd_u64(p + 64);
    out->nbytes = rd_u64(p + 72);
    out->backend = rd_i32(p + 80);
    out->split = rd_i32(p + 84);
    out->sum.min = rd_f64(p + 88);
    out->sum.max = rd_f64(p + 96);
    out->sum.mean = rd_f64(p + 104);
    out->sum.rms = rd_f64(p + 112);
    out->sum.n_nan = rd_u64(p + 120);
    out->sum.n_inf = rd_u64(p + 128);
    out->sum.n_zero = rd_u64(p + 136);
    out->sum.n_elem = rd_u64(p + 144);
    out->record = ord;
    return true;
}

// Sorted keys (graph_id<<32 | node, seq) over the records of a kind whose
// payload starts with u32 graph_id, u32 seq, i32 node.
static struct trace_key * build_keys(const struct tg_trace * tr, uint32_t type) {
    int n = tr->kind[type].n;
    struct trace_key * k = malloc((size_t) (n ? n : 1) * sizeof(*k));
    if (!k) return NULL;
    for (int i = 0; i < n; i++) {
        const uint8_t * p = trace_payload(tr, tr->kind[type].v[i]);
        bool ok = tr->recs[tr->kind[type].v[i]].len >= 12;
        k[i] = ok ? (struct trace_key) { ((uint64_t) rd_u32(p) << 32) | rd_u32(p + 8), rd_u32(p + 4), i }
                  : (struct trace_key) { UINT64_MAX, UINT64_MAX, i };
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

int tg_trace_find_eval(struct tg_trace * tr, uint32_t graph_id, int node, uint32_t compute_seq) {
    if (!tr) return -1;
    if (!tr->eval_keys && !(tr->eval_keys = build_keys(tr, TG_TRACE_REC_EVAL))) return -1;
    return find_key(tr->eval_keys, tr->kind[TG_TRACE_REC_EVAL].n, graph_id, node, compute_seq);
}

// ---- contents ---------------------------------------------------------------

int tg_trace_n_contents(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_CONTENTS].n : 0; }

bool tg_trace_get_contents(const struct tg_trace * tr, int i, struct tg_trace_contents * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_CONTENTS, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_CONTENTS_HEAD) return false;
    const uint8_t * p = trace_payload(tr, ord);
    out->graph_id = rd_u32(p);
    out->compute_seq = rd_u32(p + 4);
    out->node = rd_i32(p + 8);
    out->type = rd_i32(p + 12);
    out->codec = rd_u32(p + 16);
    for (int d = 0; d < 4; d++) out->ne[d] = rd_i64(p + 24 + 8 * d);
    out->raw_size = rd_u64(p + 56);
    out->hash = rd_u64(p + 64);
    out->stored_size = tr->recs[ord].len - TRACE_CONTENTS_HEAD;
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
    if (rd_u32(frame + TRACE_FRAME_HEAD + len) != tg_trace_frame_checksum(frame + 4, 8 + (size_t) len))
        return tg_error(TG_ERR_FORMAT, "trace: contents record %u at offset %llu has a bad checksum", c.record,
                        (unsigned long long) tr->recs[c.record].off);
    const uint8_t * data = frame + TRACE_FRAME_HEAD + TRACE_CONTENTS_HEAD;
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

// ---- host accesses, markers, events ---------------------------------------------

int tg_trace_n_hosts(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_HOST].n : 0; }

bool tg_trace_get_host(const struct tg_trace * tr, int i, struct tg_trace_host * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_HOST, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_HOST_SIZE) return false;
    const uint8_t * p = trace_payload(tr, ord);
    out->kind = rd_u32(p);
    out->compute_seq = rd_u32(p + 4);
    out->time_ns = rd_u64(p + 8);
    out->uid = rd_u64(p + 16);
    out->root_uid = rd_u64(p + 24);
    out->buffer_uid = rd_u64(p + 32);
    out->offset = rd_u64(p + 40);
    out->size = rd_u64(p + 48);
    out->hash = rd_u64(p + 56);
    out->graph_id = rd_i32(p + 64);
    out->tensor = rd_i32(p + 68);
    rd_name(out->name, p + 72, TG_TRACE_NAME);
    out->record = ord;
    return true;
}

int tg_trace_n_markers(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_MARKER].n : 0; }

// Marker fields; *ids = start of the token ids (validated to fit).
static bool marker_at(const struct tg_trace * tr, int i, struct tg_trace_marker * out, const uint8_t ** ids) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_MARKER, i);
    if (ord == UINT32_MAX || tr->recs[ord].len < TRACE_MARKER_HEAD) return false;
    const uint8_t * p = trace_payload(tr, ord);
    const uint8_t * end = p + tr->recs[ord].len;
    out->kind = rd_u32(p);
    out->compute_seq = rd_u32(p + 4);
    out->time_ns = rd_u64(p + 8);
    out->n_tokens = rd_i32(p + 16);
    out->pos = rd_i32(p + 20);
    out->seq_id = rd_i32(p + 24);
    out->n_ids = rd_u32(p + 28);
    const uint8_t * q = p + TRACE_MARKER_HEAD;
    out->text = trace_read_str(&q, end);
    if (!out->text) return false;
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
        const uint8_t * p = trace_payload(tr, l->v[i]);
        if (tr->recs[l->v[i]].len >= 4 && rd_u32(p) != TG_TRACE_MARK_PHASE) return i;
    }
    return -1;
}

int tg_trace_n_events(const struct tg_trace * tr) { return tr ? tr->kind[TG_TRACE_REC_EVENT].n : 0; }

bool tg_trace_get_event(const struct tg_trace * tr, int i, struct tg_trace_event * out) {
    uint32_t ord = trace_kind_ord(tr, TG_TRACE_REC_EVENT, i);
    if (ord == UINT32_MAX || !out || tr->recs[ord].len < TRACE_EVENT_HEAD) return false;
    const uint8_t * p = trace_payload(tr, ord);
    const uint8_t * end = p + tr->recs[ord].len;
    out->kind = rd_u32(p);
    out->severity = rd_u32(p + 4);
    out->time_ns = rd_u64(p + 8);
    out->graph_id = rd_i32(p + 16);
    out->tensor = rd_i32(p + 20);
    out->uid = rd_u64(p + 24);
    out->buffer_uid = rd_u64(p + 32);
    out->offset = rd_u64(p + 40);
    out->size = rd_u64(p + 48);
    out->step = rd_i32(p + 56);
    rd_name(out->name, p + 64, TG_TRACE_NAME);
    const uint8_t * q = p + TRACE_EVENT_HEAD;
    out->message = trace_read_str(&q, end);
    if (!out->message) out->message = "";
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
