// check.c - trace analyses: stale reads (buffer reuse), unallocated use,
// NaN/Inf origin, engine errors, split summaries.
#include "core/grow.h"
#include "core/text.h"
#include "check-impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char * tg_trace_finding_kind_name(int kind) {
    static const char * const names[TG_TRACE_FIND_KIND_COUNT] = {
        [TG_TRACE_FIND_STALE_READ] = "stale-read", [TG_TRACE_FIND_UNALLOCATED] = "unallocated-use",
        [TG_TRACE_FIND_NAN] = "nan", [TG_TRACE_FIND_ENGINE_ERROR] = "engine-error",
        [TG_TRACE_FIND_TRUNCATED] = "truncated", [TG_TRACE_FIND_GRAD_OF_GRAD] = "grad-of-grad",
        [TG_TRACE_FIND_NO_GRAD] = "param-without-grad", [TG_TRACE_FIND_GRAD_EXPLODE] = "exploding-grad",
    };
    return kind >= 0 && kind < TG_TRACE_FIND_KIND_COUNT ? names[kind] : "unknown";
}

// ---- small string builder ---------------------------------------------------

void tg_trace_sb_printf(struct tg_trace_sbuf * b, const char * fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = true; return; }
        if (b->s && b->n + (size_t) k < b->cap) { b->n += (size_t) k; return; }
        if (!TG_GROW(b->s, b->cap, b->n + (size_t) k + 1)) { b->oom = true; return; }
    }
}

// ---- report -------------------------------------------------------------------

bool tg_trace_add_finding(struct tg_trace_report * rep, const struct tg_trace_finding * f, struct tg_trace_sbuf * text) {
    if (text->oom) { free(text->s); return false; }
    if (!TG_RESIZE(rep->findings, (size_t) rep->n_findings + 1)) { free(text->s); return false; }
    struct tg_trace_finding * nf = rep->findings;
    nf[rep->n_findings] = *f;
    nf[rep->n_findings].text = text->s ? text->s : strdup("");
    rep->n_findings++;
    if (f->problem) rep->n_problems++;
    return true;
}

void tg_trace_report_free(struct tg_trace_report * rep) {
    if (!rep) return;
    for (int i = 0; i < rep->n_findings; i++) free(rep->findings[i].text);
    free(rep->findings);
    memset(rep, 0, sizeof(*rep));
}

struct tg_trace_finding tg_trace_finding_init(int kind, bool problem) {
    return (struct tg_trace_finding) {.kind = kind, .problem = problem, .graph_t = -1, .tensor_t = -1, .graph_u = -1,
                                       .tensor_u = -1, .graph_last = -1, .tensor_last = -1, .eval = -1, .host = -1};
}

// "'name' (graph 3 node 12, MUL_MAT)"
void tg_trace_describe_tensor(struct tg_trace_sbuf * b, struct tg_trace * tr, int32_t graph_id, int32_t ti) {
    int gi = graph_id >= 0 ? tg_trace_find_graph(tr, (uint32_t) graph_id) : -1;
    struct tg_trace_tensor t;
    struct tg_trace_graph g;
    if (gi < 0 || !tg_trace_get_tensor(tr, gi, ti, &t) || !tg_trace_get_graph(tr, gi, &g)) {
        tg_trace_sb_printf(b, "(unknown tensor: graph %d tensor %d)", graph_id, ti);
        return;
    }
    if (ti < g.n_nodes)
        tg_trace_sb_printf(b, "'%s' (graph %d node %d, %s)", tg_escape_str(t.name), graph_id, ti, tg_escape_str(tg_trace_op_name(tr, t.op)));
    else
        tg_trace_sb_printf(b, "'%s' (graph %d leaf %d)", tg_escape_str(t.name), graph_id, ti - g.n_nodes);
}

void tg_trace_describe_marker(struct tg_trace_sbuf * b, const struct tg_trace * tr, uint32_t record) {
    int mi = tg_trace_marker_before(tr, record);
    struct tg_trace_marker m;
    if (mi >= 0 && tg_trace_get_marker(tr, mi, &m) && m.kind == TG_TRACE_MARK_DECODE)
        tg_trace_sb_printf(b, " [after marker %d (decode): n_tokens=%d pos=%d]", mi, m.n_tokens, m.pos);
    else if (mi >= 0)
        tg_trace_sb_printf(b, " [after marker %d: %s]", mi, tg_escape_str(m.text ? m.text : ""));
}

// ---- stale reads ----------------------------------------------------------------

struct write_ev {
    uint32_t record;
    uint64_t buffer, begin, end, root;
    int32_t  eval, host;
};

static bool is_view_op(const struct tg_trace * tr, int op) {
    const char * n = tg_trace_op_name(tr, op);
    return !strcmp(n, "NONE") || !strcmp(n, "VIEW") || !strcmp(n, "RESHAPE") || !strcmp(n, "PERMUTE") ||
           !strcmp(n, "TRANSPOSE");
}

static int cmp_write(const void * a, const void * b) {
    const struct write_ev * x = a, * y = b;
    return (x->record > y->record) - (x->record < y->record);
}

// Every byte-writing event (evaluated non-view nodes, host writes), in file order.
static struct write_ev * collect_writes(struct tg_trace * tr, int * n_out) {
    int ne = tg_trace_n_evals(tr), nh = tg_trace_n_hosts(tr), n = 0;
    struct write_ev * w = malloc((size_t) (ne + nh + 1) * sizeof(*w));
    if (!w) return NULL;
    int cached_gid = -1, gi = -1;
    for (int i = 0; i < ne; i++) {
        struct tg_trace_eval e;
        struct tg_trace_tensor t;
        if (!tg_trace_get_eval(tr, i, &e) || e.buffer_uid == 0 || e.nbytes == 0) continue;
        if ((int) e.graph_id != cached_gid) { cached_gid = (int) e.graph_id; gi = tg_trace_find_graph(tr, e.graph_id); }
        if (gi >= 0 && tg_trace_get_tensor(tr, gi, e.node, &t) && is_view_op(tr, t.op)) continue;
        w[n++] = (struct write_ev) { e.record, e.buffer_uid, e.offset, e.offset + e.nbytes, e.root_uid, i, -1 };
    }
    for (int i = 0; i < nh; i++) {
        struct tg_trace_host h;
        if (!tg_trace_get_host(tr, i, &h) || h.kind != TG_TRACE_HOST_WRITE || h.buffer_uid == 0 || h.size == 0) continue;
        w[n++] = (struct write_ev) { h.record, h.buffer_uid, h.offset, h.offset + h.size, h.root_uid, -1, i };
    }
    qsort(w, (size_t) n, sizeof(*w), cmp_write);
    *n_out = n;
    return w;
}

static void stale_text(struct tg_trace_sbuf * b, struct tg_trace * tr, const struct tg_trace_host * h,
                       const struct write_ev * own, const struct write_ev * bad, struct tg_trace_finding * f) {
    struct tg_trace_eval eu;
    bool have_u = bad->eval >= 0 && tg_trace_get_eval(tr, bad->eval, &eu);
    tg_trace_sb_printf(b, "stale read: host read of '%s'", tg_escape_str(h->name));
    if (h->graph_id >= 0) { tg_trace_sb_printf(b, " = "); tg_trace_describe_tensor(b, tr, h->graph_id, h->tensor); }
    tg_trace_sb_printf(b, " (record %u, after %u computations)\n", h->record, h->compute_seq);
    tg_trace_sb_printf(b, "  reads bytes [%llu, %llu) of buffer #%llu\n", (unsigned long long) h->offset,
              (unsigned long long) (h->offset + h->size), (unsigned long long) h->buffer_uid);
    if (own && own->eval >= 0) {
        struct tg_trace_eval eo;
        if (tg_trace_get_eval(tr, own->eval, &eo)) {
            tg_trace_sb_printf(b, "  last written by its node ");
            tg_trace_describe_tensor(b, tr, (int32_t) eo.graph_id, eo.node);
            tg_trace_sb_printf(b, " in computation #%u\n", eo.compute_seq);
        }
    } else if (own) {
        tg_trace_sb_printf(b, "  last written by a host write (record %u)\n", own->record);
    } else {
        tg_trace_sb_printf(b, "  (no earlier write of it is in this trace)\n");
    }
    tg_trace_sb_printf(b, "  but bytes [%llu, %llu) were handed to ", (unsigned long long) f->begin, (unsigned long long) f->end);
    if (have_u) {
        tg_trace_describe_tensor(b, tr, (int32_t) eu.graph_id, eu.node);
        tg_trace_sb_printf(b, "\n  and overwritten when that node ran in computation #%u", eu.compute_seq);
        tg_trace_describe_marker(b, tr, eu.record);
        int gi = tg_trace_find_graph(tr, eu.graph_id);
        struct tg_trace_alloc al;
        if (gi >= 0 && tg_trace_get_alloc(tr, gi, eu.node, &al) && al.buffer >= 0)
            tg_trace_sb_printf(b, "\n  (allocator: offset %llu, %llu bytes, live steps %d..%d%s)", (unsigned long long) al.offset,
                      (unsigned long long) al.size, al.first_step, al.last_step,
                      al.flags & TG_TRACE_ALLOC_INPLACE ? ", in place of its parent" : "");
        f->graph_u = (int32_t) eu.graph_id;
        f->tensor_u = eu.node;
    } else if (bad->host >= 0) {
        struct tg_trace_host hw;
        if (tg_trace_get_host(tr, bad->host, &hw)) tg_trace_sb_printf(b, "'%s' by a host write (record %u)", tg_escape_str(hw.name), hw.record);
    }
    tg_trace_sb_printf(b, "\n");
}

static void fix_hint(struct tg_trace_sbuf * b, const char * name) {
    tg_trace_sb_printf(b, "  fix: mark '%s' as an output (tg_set_output) and read it before the scheduler allocates "
              "another graph, or copy it out\n", name);
}

// One more writer of the read's bytes: "  then also overwritten by 'x' (graph
// 2 node 0, SCALE) in computation #1" (or a host write).
static void later_writer_text(struct tg_trace_sbuf * b, struct tg_trace * tr, const struct write_ev * w, bool last) {
    tg_trace_sb_printf(b, "  then %soverwritten by ", last ? "last " : "also ");
    struct tg_trace_eval el;
    struct tg_trace_host hw;
    if (w->eval >= 0 && tg_trace_get_eval(tr, w->eval, &el)) {
        tg_trace_describe_tensor(b, tr, (int32_t) el.graph_id, el.node);
        tg_trace_sb_printf(b, " in computation #%u\n", el.compute_seq);
    } else if (w->host >= 0 && tg_trace_get_host(tr, w->host, &hw)) {
        tg_trace_sb_printf(b, "a host write of '%s' (record %u)\n", tg_escape_str(hw.name), hw.record);
    } else {
        tg_trace_sb_printf(b, "a write at record %u\n", w->record);
    }
}

#define MAX_LISTED_WRITERS 16

// Reports host read h (index hi) whose bytes were overwritten by `bad` (the
// first foreign write after the last own write w[k_own]) and lists every
// later foreign write among w[k_own+1 .. lo) up to the read, the last one
// always included.
static bool report_overwrite(struct tg_trace * tr, struct tg_trace_report * rep, const struct tg_trace_host * h, int hi,
                             const struct write_ev * w, int k_own, int lo, const struct write_ev * bad) {
    uint64_t hb = h->offset, he = h->offset + h->size;
    int n_later = 0, k_last = -1;
    for (int k = k_own + 1; k < lo; k++) {
        if (&w[k] == bad || w[k].record < bad->record || w[k].buffer != h->buffer_uid || w[k].end <= hb ||
            w[k].begin >= he || w[k].root == h->root_uid) continue;
        n_later++;
        k_last = k;
    }
    struct tg_trace_finding f = tg_trace_finding_init(TG_TRACE_FIND_STALE_READ, true);
    f.graph_t = h->graph_id; f.tensor_t = h->tensor;
    f.buffer_uid = h->buffer_uid;
    f.begin = bad->begin > hb ? bad->begin : hb;
    f.end = bad->end < he ? bad->end : he;
    f.eval = bad->eval; f.host = hi; f.record = h->record;
    f.n_writers = 1 + n_later;
    const struct write_ev * last = k_last >= 0 ? &w[k_last] : bad;
    struct tg_trace_eval elast;
    if (last->eval >= 0 && tg_trace_get_eval(tr, last->eval, &elast)) { f.graph_last = (int32_t) elast.graph_id; f.tensor_last = elast.node; }
    struct tg_trace_sbuf b = {0};
    stale_text(&b, tr, h, k_own >= 0 ? &w[k_own] : NULL, bad, &f);
    int shown = 0;
    for (int k = k_own + 1; k < lo; k++) {
        if (&w[k] == bad || w[k].record < bad->record || w[k].buffer != h->buffer_uid || w[k].end <= hb ||
            w[k].begin >= he || w[k].root == h->root_uid) continue;
        shown++;
        if (k == k_last) later_writer_text(&b, tr, &w[k], n_later > 1);
        else if (shown < MAX_LISTED_WRITERS) later_writer_text(&b, tr, &w[k], false);
        else if (shown == MAX_LISTED_WRITERS)
            tg_trace_sb_printf(&b, "  ... %d more writers ...\n", n_later - MAX_LISTED_WRITERS);
    }
    tg_trace_sb_printf(&b, "  %d write%s to these bytes between the tensor's own write and the read\n", f.n_writers,
              f.n_writers == 1 ? "" : "s");
    fix_hint(&b, h->name);
    return tg_trace_add_finding(rep, &f, &b);
}

// True when tensor ti of graph gi lives in memory the graph allocator placed
// (itself or, for views, the tensor it views).
static bool allocator_owned(const struct tg_trace * tr, int gi, int ti) {
    for (int depth = 0; depth < 16; depth++) {
        struct tg_trace_alloc a;
        struct tg_trace_tensor t;
        if (!tg_trace_get_alloc(tr, gi, ti, &a)) return false;
        if (a.flags & TG_TRACE_ALLOC_ALLOCATED) return true;
        if (!(a.flags & TG_TRACE_ALLOC_VIEW) || !tg_trace_get_tensor(tr, gi, ti, &t) || t.view_src < 0) return false;
        ti = t.view_src;
    }
    return false;
}

// A host read of an allocator-placed tensor after the scheduler allocated
// another graph: its memory belongs to that graph now (the scheduler's
// contract), whether or not the bytes were overwritten yet.
static bool check_superseded(struct tg_trace * tr, struct tg_trace_report * rep, const struct tg_trace_host * h, int hi) {
    int gi = h->graph_id >= 0 ? tg_trace_find_graph(tr, (uint32_t) h->graph_id) : -1;
    struct tg_trace_graph g;
    if (gi < 0 || !tg_trace_get_graph(tr, gi, &g) || g.sched_id == UINT32_MAX) return true;
    if (!allocator_owned(tr, gi, h->tensor)) return true;
    int na = tg_trace_n_alloc_records(tr);
    uint32_t own_rec = UINT32_MAX, gid, sid, rec;
    for (int i = 0; i < na; i++)
        if (tg_trace_get_alloc_record(tr, i, &gid, &sid, &rec) && rec < h->record && gid == g.graph_id) own_rec = rec;
    if (own_rec == UINT32_MAX) return true;
    for (int i = 0; i < na; i++) {
        if (!tg_trace_get_alloc_record(tr, i, &gid, &sid, &rec) || rec <= own_rec || rec >= h->record) continue;
        if (sid != g.sched_id || gid == g.graph_id) continue;
        struct tg_trace_finding f = tg_trace_finding_init(TG_TRACE_FIND_STALE_READ, true);
        f.graph_t = h->graph_id; f.tensor_t = h->tensor; f.graph_u = (int32_t) gid;
        f.buffer_uid = h->buffer_uid; f.begin = h->offset; f.end = h->offset + h->size;
        f.host = hi; f.record = h->record;
        struct tg_trace_sbuf b = {0};
        tg_trace_sb_printf(&b, "stale read: host read of '%s' = ", tg_escape_str(h->name));
        tg_trace_describe_tensor(&b, tr, h->graph_id, h->tensor);
        tg_trace_sb_printf(&b, " (record %u)\n  after graph %u was allocated on the same scheduler %u (record %u):\n"
                  "  graph %u's compute memory, bytes [%llu, %llu) of buffer #%llu included, now belongs to graph %u\n",
                  h->record, gid, sid, rec, g.graph_id, (unsigned long long) h->offset,
                  (unsigned long long) (h->offset + h->size), (unsigned long long) h->buffer_uid, gid);
        fix_hint(&b, h->name);
        return tg_trace_add_finding(rep, &f, &b);
    }
    return true;
}

static bool check_stale(struct tg_trace * tr, struct tg_trace_report * rep) {
    int nw = 0;
    struct write_ev * w = collect_writes(tr, &nw);
    if (!w) return false;
    int nh = tg_trace_n_hosts(tr);
    bool ok = true;
    for (int i = 0; i < nh && ok; i++) {
        struct tg_trace_host h;
        if (!tg_trace_get_host(tr, i, &h) || h.kind != TG_TRACE_HOST_READ || h.buffer_uid == 0 || h.size == 0) continue;
        rep->n_host_reads_checked++;
        uint64_t hb = h.offset, he = h.offset + h.size;
        int lo = 0, hi = nw;   // writes before the read: w[0 .. lo)
        while (lo < hi) { int mid = (lo + hi) / 2; if (w[mid].record < h.record) lo = mid + 1; else hi = mid; }
        const struct write_ev * bad = NULL;
        int k_own = -1;
        for (int k = lo - 1; k >= 0; k--) {
            if (w[k].buffer != h.buffer_uid || w[k].end <= hb || w[k].begin >= he) continue;
            if (w[k].root == h.root_uid) { k_own = k; break; }
            bad = &w[k];   // keeps the earliest foreign write after the last own write
        }
        ok = bad ? report_overwrite(tr, rep, &h, i, w, k_own, lo, bad) : check_superseded(tr, rep, &h, i);
    }
    free(w);
    return ok;
}

// ---- events, errors -------------------------------------------------------------

static bool check_events(struct tg_trace * tr, struct tg_trace_report * rep) {
    int n = tg_trace_n_events(tr);
    for (int i = 0; i < n; i++) {
        struct tg_trace_event ev;
        if (!tg_trace_get_event(tr, i, &ev)) continue;
        int kind = ev.kind == TG_TRACE_EV_UNALLOCATED_USE ? TG_TRACE_FIND_UNALLOCATED
                 : ev.kind == TG_TRACE_EV_ERROR ? TG_TRACE_FIND_ENGINE_ERROR : -1;
        if (kind < 0) continue;
        struct tg_trace_finding f = tg_trace_finding_init(kind, ev.severity >= TG_TRACE_ERROR);
        f.graph_t = ev.graph_id; f.tensor_t = ev.tensor; f.record = ev.record;
        struct tg_trace_sbuf b = {0};
        tg_trace_sb_printf(&b, "%s: '%s': %s\n", kind == TG_TRACE_FIND_UNALLOCATED ? "unallocated use" : "engine error",
                  tg_escape_str(ev.name), tg_escape_str(ev.message));
        if (!tg_trace_add_finding(rep, &f, &b)) return false;
    }
    int nc = tg_trace_n_computes(tr);
    for (int i = 0; i < nc; i++) {
        struct tg_trace_compute c;
        if (!tg_trace_get_compute(tr, i, &c) || c.phase != TG_TRACE_END || c.status == 0) continue;
        uint32_t next_type = 0;
        if (tg_trace_get_record(tr, c.record + 1, &next_type, NULL, NULL, NULL) && next_type == TG_TRACE_REC_EVENT)
            continue;   // the recorder wrote the engine's explanation as an EVENT (reported above)
        struct tg_trace_finding f = tg_trace_finding_init(TG_TRACE_FIND_ENGINE_ERROR, c.status != TG_ERR_ABORTED);
        f.record = c.record;
        struct tg_trace_sbuf b = {0};
        tg_trace_sb_printf(&b, "computation #%u of graph %u ended with status %d (%s)\n", c.compute_seq, c.graph_id, c.status,
                  tg_status_str((enum tg_status) c.status));
        if (!tg_trace_add_finding(rep, &f, &b)) return false;
    }
    return true;
}

// ---- NaN / Inf origin -----------------------------------------------------------

int tg_trace_first_nonfinite(const struct tg_trace * tr) {
    int n = tg_trace_n_evals(tr);
    for (int i = 0; i < n; i++) {
        struct tg_trace_eval e;
        if (tg_trace_get_eval(tr, i, &e) && (e.flags & TG_TRACE_EVAL_SUMMARY) && (e.sum.n_nan || e.sum.n_inf)) return i;
    }
    return -1;
}

static void nan_path(struct tg_trace_sbuf * b, struct tg_trace * tr, const struct tg_trace_eval * e0) {
    int gi = tg_trace_find_graph(tr, e0->graph_id);
    int node = e0->node;
    for (int depth = 0; depth < 12 && gi >= 0; depth++) {
        struct tg_trace_tensor t;
        if (!tg_trace_get_tensor(tr, gi, node, &t)) return;
        int next = -1;
        double best = -1;
        for (int k = 0; k < TG_TRACE_MAX_SRC; k++) {
            if (t.src[k] < 0) continue;
            struct tg_trace_tensor s;
            tg_trace_get_tensor(tr, gi, t.src[k], &s);
            int ei = tg_trace_find_eval(tr, e0->graph_id, t.src[k], e0->compute_seq);
            struct tg_trace_eval es;
            tg_trace_sb_printf(b, "  %*s<- src[%d] ", 2 * depth, "", k);
            tg_trace_describe_tensor(b, tr, (int32_t) e0->graph_id, t.src[k]);
            if (ei >= 0 && tg_trace_get_eval(tr, ei, &es) && (es.flags & TG_TRACE_EVAL_SUMMARY)) {
                double mag = es.sum.max > -es.sum.min ? es.sum.max : -es.sum.min;
                tg_trace_sb_printf(b, " min %.6g max %.6g rms %.6g nan %llu inf %llu\n", es.sum.min, es.sum.max, es.sum.rms,
                          (unsigned long long) es.sum.n_nan, (unsigned long long) es.sum.n_inf);
                if (mag > best) { best = mag; next = t.src[k]; }
            } else {
                tg_trace_sb_printf(b, " (leaf or not evaluated)\n");
            }
        }
        if (next < 0) return;
        tg_trace_sb_printf(b, "  %*sfollowing the largest magnitude: '%s'\n", 2 * depth, "",
                  tg_escape_str(tg_trace_tensor_name(tr, gi, next, t.name)));
        node = next;
    }
}

static bool check_nan(struct tg_trace * tr, struct tg_trace_report * rep) {
    int i = tg_trace_first_nonfinite(tr);
    struct tg_trace_eval e;
    if (i < 0 || !tg_trace_get_eval(tr, i, &e)) return true;
    struct tg_trace_finding f = tg_trace_finding_init(TG_TRACE_FIND_NAN, true);
    f.graph_t = (int32_t) e.graph_id; f.tensor_t = e.node; f.eval = i; f.record = e.record;
    struct tg_trace_sbuf b = {0};
    tg_trace_sb_printf(&b, "first non-finite result: ");
    tg_trace_describe_tensor(&b, tr, (int32_t) e.graph_id, e.node);
    tg_trace_sb_printf(&b, " in computation #%u: %llu NaN, %llu Inf of %llu values", e.compute_seq,
              (unsigned long long) e.sum.n_nan, (unsigned long long) e.sum.n_inf, (unsigned long long) e.sum.n_elem);
    tg_trace_describe_marker(&b, tr, e.record);
    tg_trace_sb_printf(&b, "\n");
    tg_trace_describe_grad_side(&b, tr, (int32_t) e.graph_id, e.node);
    tg_trace_sb_printf(&b, "  path feeding it:\n");
    nan_path(&b, tr, &e);
    return tg_trace_add_finding(rep, &f, &b);
}

// ---- entry points ---------------------------------------------------------------

enum tg_status tg_trace_check(struct tg_trace * tr, struct tg_trace_report * rep) {
    if (!rep) return tg_error(TG_ERR_INVALID_ARG, "trace check: NULL report");
    memset(rep, 0, sizeof(*rep));
    if (!tr) return tg_error(TG_ERR_INVALID_ARG, "trace check: NULL trace");
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    bool ok = true;
    if (st.truncated) {
        struct tg_trace_finding f = tg_trace_finding_init(TG_TRACE_FIND_TRUNCATED, false);
        f.record = st.n_records;
        struct tg_trace_sbuf b = {0};
        tg_trace_sb_printf(&b, "%s\n", st.message);
        ok = tg_trace_add_finding(rep, &f, &b);
    }
    ok = ok && check_stale(tr, rep) && check_events(tr, rep) && check_nan(tr, rep) && tg_trace_check_train(tr, rep);
    if (!ok) {
        tg_trace_report_free(rep);
        return tg_error(TG_ERR_NOMEM, "trace check: out of memory");
    }
    return TG_OK;
}

bool tg_trace_split_summary(const struct tg_trace * tr, int gi, struct tg_trace_split_summary * out) {
    if (!out) return false;
    memset(out, 0, sizeof(*out));
    struct tg_trace_graph g;
    if (!tg_trace_get_graph(tr, gi, &g)) return false;
    out->n_splits = tg_trace_n_splits(tr, gi);
    out->n_inputs = tg_trace_n_split_inputs(tr, gi);
    for (int i = 0; i < out->n_inputs; i++) {
        struct tg_trace_split_input in;
        if (tg_trace_get_split_input(tr, gi, i, &in) && in.copy_name[0]) {
            out->n_copies++;
            out->copy_bytes += in.bytes;
        }
    }
    for (int s = 0; s < out->n_splits; s++) {
        struct tg_trace_split sp;
        if (!tg_trace_get_split(tr, gi, s, &sp) || sp.backend < 0 || sp.backend >= TG_TRACE_MAX_BACKENDS) continue;
        int64_t n = (int64_t) sp.node_end - sp.node_begin;
        if (n > 0) out->nodes_per_backend[sp.backend] += (int) n;
    }
    return true;
}
