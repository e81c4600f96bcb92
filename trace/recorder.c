// recorder.c - the trace recorder: an engine observer writing RUN, COMPUTE,
// EVAL (+ hashes, summaries, contents), HOST and MARKER records; attach and
// detach; the TGDB_TRACE environment hook.
#include "recorder-impl.h"
#include "trace-impl.h"
#include "viewdigest.h"
#include "tg/backend.h"
#include "tg/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#ifndef TG_VERSION
#define TG_VERSION "?"
#endif

static _Thread_local int in_recorder;   // our own tensor reads are not host accesses
static bool poison_attached;            // tg_trace_set_poison(true) is in effect

struct tg_trace_options tg_trace_default_options(void) {
    return (struct tg_trace_options) { .hashes = true, .summaries = true, .contents = NULL, .zstd_level = 3,
                                       .host_hashes = true, .note = NULL, .views = true, .sketches = true,
                                       .hash_thread = -1 };
}

bool tg_trace_set_hash_mode(struct tg_trace_options * o, const char * mode) {
    if (!o || !mode) return false;
    if (!strcmp(mode, "all") || !strcmp(mode, "1")) { o->hashes = o->summaries = o->views = true; return true; }
    if (!strcmp(mode, "computed")) { o->hashes = o->summaries = true; o->views = false; return true; }
    if (!strcmp(mode, "none") || !strcmp(mode, "0")) { o->hashes = o->summaries = false; return true; }
    return false;
}

uint8_t * tg_trace_rec_scratch(struct tg_trace_recorder * r, size_t n) {
    return TG_GROW(r->scratch, r->scratch_cap, n) ? r->scratch : NULL;
}

static uint64_t buffer_offset(const struct tg_buffer * b, const void * data) {
    void * base = b ? tg_buffer_get_base((struct tg_buffer *) b) : NULL;
    return base && data && (const char *) data >= (const char *) base ? (uint64_t) ((const char *) data - (const char *) base) : 0;
}

// ---- RUN ----------------------------------------------------------------------------

static void read_cmdline(char * buf, size_t cap) {
    buf[0] = '\0';
    FILE * f = fopen("/proc/self/cmdline", "rb");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++) if (buf[i] == '\0') buf[i] = ' ';
    while (n > 0 && buf[n - 1] == ' ') n--;
    buf[n] = '\0';
}

static void write_run(struct tg_trace_recorder * r) {
    const char * ops[TG_OP_COUNT];
    const char * types[TG_TYPE_COUNT];
    const char * causes[TG_CAUSE_COUNT];
    for (int i = 0; i < TG_OP_COUNT; i++) ops[i] = tg_op_name((enum tg_op) i);
    for (int i = 0; i < TG_TYPE_COUNT; i++) types[i] = tg_type_supported(i) ? tg_type_name((enum tg_type) i) : "";
    for (int i = 0; i < TG_CAUSE_COUNT; i++) causes[i] = tg_cause_name((enum tg_cause) i);
    char cmd[2048], backends[256] = "";
    read_cmdline(cmd, sizeof(cmd));
    int nb = r->sched ? tg_sched_n_backends(r->sched) : tg_device_count();
    for (int b = 0; b < nb; b++) {   // the scheduler's backends, or every device of the build
        size_t l = strlen(backends);
        const char * name = r->sched ? tg_backend_name(tg_sched_get_backend(r->sched, b)) : tg_device_name(tg_device_get(b));
        snprintf(backends + l, sizeof(backends) - l, "%s%s", b ? "," : "", name ? name : "?");
    }
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    struct tg_trace_run run = { .time_unix_ns = (uint64_t) rt.tv_sec * 1000000000ull + (uint64_t) rt.tv_nsec,
                                .mono_start_ns = tg_observe_now_ns(), .pid = (uint32_t) getpid(),
                                .n_threads = (int32_t) nproc, .engine_version = TG_VERSION, .cmdline = cmd,
                                .backends = backends, .note = r->note ? r->note : "" };
    tg_trace_write_run_causes(r->w, &run, ops, TG_OP_COUNT, types, TG_TYPE_COUNT, causes, TG_CAUSE_COUNT);
}

// ---- observer callbacks ---------------------------------------------------------------

#define LOCKED(r, body) do { pthread_mutex_lock(&(r)->mu); body; pthread_mutex_unlock(&(r)->mu); } while (0)

// A callback's cost, from t0 (the event's time stamp where it has one) to
// now; the caller holds r->mu.
static void hook_cost_to(struct tg_trace_recorder * r, uint64_t t0, uint64_t t1, bool node) {
    uint64_t d = t1 > t0 ? t1 - t0 : 0;
    r->stats.hook_ns += d;
    if (node) r->stats.node_ns += d;
    r->stats.n_hooks++;
}

static void hook_cost(struct tg_trace_recorder * r, uint64_t t0, bool node) {
    hook_cost_to(r, t0, tg_observe_now_ns(), node);
}

static void on_sched(const struct tg_obs_sched_event * ev, void * user) {
    struct tg_trace_recorder * r = user;
    if (ev->what == TG_OBS_SCHED_NEW) LOCKED(r, tg_trace_rec_sched_state(r, ev->sched, ev->sched_id));
}

static void on_graph_split(const struct tg_obs_split_event * ev, void * user) {
    struct tg_trace_recorder * r = user;
    uint64_t t0 = tg_observe_now_ns();
    LOCKED(r, { tg_trace_rec_graph_split(r, ev); hook_cost(r, t0, false); });
}

static void on_graph_alloc(const struct tg_obs_alloc_event * ev, void * user) {
    struct tg_trace_recorder * r = user;
    uint64_t t0 = tg_observe_now_ns();
    LOCKED(r, { tg_trace_rec_graph_alloc(r, ev); hook_cost(r, t0, false); });
}

static void record_leafs(struct tg_trace_recorder * r, struct rec_sched * s);

// Node events flow only while hashes, summaries or contents are wanted.
static bool node_events_on(const struct tg_trace_recorder * r) { return r->obs.on_node_end != NULL; }

// Whether this computation of s hashes on the hashing thread (started the
// first time): hashing wanted, one scheduler (the ring's waits follow its
// nodes only), no poison mode (it writes freed ranges between nodes), and
// with hash_thread -1 a CPU the scheduler's CPU threads leave free.
static bool use_hasher(struct tg_trace_recorder * r, struct rec_sched * s) {
    if (r->opt.hash_thread == 0 || !(r->opt.hashes || r->opt.summaries) || !node_events_on(r)) return false;
    if (r->n_scheds != 1 || poison_attached || !s->sched || tg_sched_get_poison(s->sched)) return false;
    if (r->opt.hash_thread < 0) {
        int used = 1;
        for (int b = 0; b < tg_sched_n_backends(s->sched); b++) {
            struct tg_backend * be = tg_sched_get_backend(s->sched, b);
            if (tg_backend_is_cpu(be) && tg_backend_cpu_get_n_threads(be) > used) used = tg_backend_cpu_get_n_threads(be);
        }
        const uint64_t now = tg_observe_now_ns();   // (a system call: not every token)
        if (!r->n_cpus || now - r->n_cpus_ns > 1000000000ull) { r->n_cpus = tg_cpu_n_available(); r->n_cpus_ns = now; }
        if (used >= r->n_cpus) return false;   // affinity and CPU quota
    }
    if (!r->hasher) {
        struct rec_hasher * h = aligned_alloc(64, sizeof(*h));   // cache-line aligned members
        if (!h || !tg_trace_rec_hasher_start(h, r)) { free(h); r->opt.hash_thread = 0; return false; }
        r->hasher = h;
        struct tg_trace_event e = { .kind = TG_TRACE_EV_LOG, .severity = TG_TRACE_INFO, .time_ns = tg_observe_now_ns(),
                                    .graph_id = -1, .tensor = -1, .step = -1, .name = "",
                                    .message = "node hashes are computed on the recorder's own thread (a CPU was free): "
                                               "each node's EVAL is written when the thread sees it, its hash in a "
                                               "RESULT record after; if the process ends abruptly the last nodes may "
                                               "be missing or unhashed (TGDB_TRACE_HASH_THREAD=0 writes every node, "
                                               "hashed, before the next one runs)" };
        tg_trace_write_event(r->w, &e);
    }
    return true;
}

// Whether node t writes its sources' bytes too: the optimizer steps (their
// parameters and moments, in place) and SET_ROWS (its destination).
static bool writes_sources(const struct tg_tensor * t) {
    return t->op == TG_OP_OPT_STEP_ADAMW || t->op == TG_OP_OPT_STEP_SGD || t->op == TG_OP_SET_ROWS;
}

// Bytes node t may write when it runs: its own, and (writes_sources) its sources'.
static void before_write(struct tg_trace_recorder * r, const struct tg_tensor * t) {
    if (t->data) tg_trace_rec_hasher_before_write(r, (uintptr_t) t->data, (uintptr_t) t->data + tg_nbytes(t));
    if (writes_sources(t))
        for (int i = 0; i < TG_MAX_SRC; i++)
            if (t->src[i] && t->src[i]->data)
                tg_trace_rec_hasher_before_write(r, (uintptr_t) t->src[i]->data,
                                                 (uintptr_t) t->src[i]->data + tg_nbytes(t->src[i]));
}

// The memoized KV-cache view digests before node t writes: the elements it
// overwrites out (a deferred event's node has run already: its bytes are
// gone, those views start again).
static void vd_before_node(struct tg_trace_recorder * r, const struct tg_tensor * t, bool deferred, bool ahead) {
    if (ahead) tg_trace_vd_written(r->vd, t);   // taken out on the hashing thread: it runs now
    else if (t->data && !deferred) tg_trace_vd_before_write(r->vd, t->data, t->type, t->ne, t->nb, NULL);
    else if (t->data) tg_trace_vd_invalidate(r->vd, (uintptr_t) t->data, (uintptr_t) t->data + tg_nbytes(t));
    if (writes_sources(t))   // (rows chosen at run time, or in place: not followed element by element)
        for (int i = 0; i < TG_MAX_SRC; i++)
            if (t->src[i] && t->src[i]->data)
                tg_trace_vd_invalidate(r->vd, (uintptr_t) t->src[i]->data,
                                       (uintptr_t) t->src[i]->data + tg_nbytes(t->src[i]));
}

// Whether split k's nodes end before node `end` (the next split's input
// copies come next).
static bool split_ends(const struct rec_sched * s, int k, int end) {
    const struct tg_sched_split * sp = k >= 0 && s->sched ? tg_sched_get_split(s->sched, k) : NULL;
    return !sp || end >= sp->i_end;
}

// Node t writes host memory outside compute buffers (a KV cache), where the
// memoized views lie.
static bool writes_outside_compute(const struct tg_tensor * t) {
    if (!t->data || t->op == TG_OP_NONE || tg_op_is_view(t->op)) return false;
    struct tg_buffer * b = tg_tensor_buffer(t);
    return b && tg_buffer_is_host(b) && tg_buffer_get_usage(b) != TG_BUFFER_USAGE_COMPUTE &&
           tg_backend_tensor_host_view(t) == t->data;
}

// With the hashing thread: the computation's nodes that write into memoized
// KV-cache views (the stores of this token's K and V) queued for it first,
// so it takes their elements out of the views while the engine computes the
// nodes before them (their bytes stay until then); a node waits for its own
// (its bytes are an unfinished item's) and then only marks it run.
static void vd_ahead(struct tg_trace_recorder * r, struct rec_sched * s) {
    const int n = s->graph ? s->graph->n_nodes : 0;
    if (n > s->vd_pre_cap) {   // (compute_begin cleared the flags it had)
        uint8_t * p = realloc(s->vd_pre, (size_t) n);
        if (!p) return;
        memset(p + s->vd_pre_cap, 0, (size_t) (n - s->vd_pre_cap));
        s->vd_pre = p;
        s->vd_pre_cap = n;
    }
    // the candidates: those of the last graph when this one is it again, moved (the same nodes)
    const bool again = s->vd_graph && s->vd_graph == s->graph && s->vd_graph_nodes == n && s->split_fast &&
                       s->moved_seq == s->graph_seq;
    if (!again) {
        s->vd_graph = NULL;
        s->n_vd_cand = 0;
        if (!TG_GROW(s->vd_cand, s->cap_vd_cand, (size_t) (n ? n : 1))) return;
        for (int j = 0; j < n; j++)
            if (writes_outside_compute(s->graph->nodes[j])) s->vd_cand[s->n_vd_cand++] = j;
        s->vd_graph = s->graph;
        s->vd_graph_nodes = n;
    }
    for (int c = 0; c < s->n_vd_cand; c++) {
        const int j = s->vd_cand[c];
        struct tg_tensor * t = s->graph->nodes[j];
        if (!t->data || !tg_trace_vd_overlaps(r->vd, t->data, t->type, t->ne, t->nb)) continue;
        int max = 1, same = -1;
        struct rec_item * it = tg_trace_rec_hasher_slots(r, &max);
        memset(&it->e, 0, sizeof(it->e));
        it->t = t;
        it->e.nbytes = tg_nbytes(t);
        it->e.node = j;
        it->data = t->data;
        memcpy(it->nb, t->nb, sizeof(it->nb));
        it->contents = it->done = it->sketched = it->pending = it->lazy = it->vd = false;
        it->takeout = true;
        it->vdm = r->vd;
        it->same = -1;
        it->claim = 0;
        it->view_ns = 0;
        tg_trace_rec_hasher_put(r, &same, 1);
        s->vd_pre[j] = 1;
    }
}

// With the hashing thread, a node's end callback does the next node's begin
// work (the ring's items it overwrites, the KV-cache views it writes), after
// its own items are in the ring: the next begin callback, on the same engine
// thread, then only takes its time stamp, without the lock. (The scheduler
// state's address is fixed: the recorder's array.)
static _Thread_local struct {
    const struct tg_trace_recorder * r;
    uint64_t                         sched_id;
    int                              index;
    struct rec_sched *               s;
} tl_ahead;

static void compute_begin(struct tg_trace_recorder * r, const struct tg_obs_compute_event * ev) {
    struct rec_sched * s = tg_trace_rec_sched_state(r, ev->sched, ev->sched_id);
    if (!s) return;
    s->compute_seq = r->n_computes++;
    s->next_node = 0;
    r->out_ok = false;
    tl_ahead.r = NULL;
    if (r->n_active++ == 0) r->async = use_hasher(r, s);   // decided while no computation is under way
    if (r->async) tg_trace_rec_hasher_active(r, true);
    if (s->vd_pre_cap) memset(s->vd_pre, 0, (size_t) s->vd_pre_cap);
    if (r->async && r->vd && node_events_on(r)) vd_ahead(r, s);
    struct tg_trace_compute c = { .graph_id = s->graph_id, .compute_seq = s->compute_seq, .phase = TG_TRACE_BEGIN,
                                  .status = 0, .time_ns = ev->t_ns };
    tg_trace_write_compute(r->w, &c);
    if (r->contents) record_leafs(r, s);
}

static void on_compute_begin(const struct tg_obs_compute_event * ev, void * user) {
    struct tg_trace_recorder * r = user;
    LOCKED(r, { compute_begin(r, ev); hook_cost(r, ev->t_ns, false); });
}

static void record_skipped(struct tg_trace_recorder * r, struct rec_sched * s, int end,
                           const struct tg_obs_node_event * ev);


static void compute_end(struct tg_trace_recorder * r, const struct tg_obs_compute_event * ev) {
    struct rec_sched * s = tg_trace_rec_sched_state(r, ev->sched, ev->sched_id);
    if (!s) return;
    r->n_computes_done++;
    if (ev->status == TG_OK && node_events_on(r)) record_skipped(r, s, s->graph ? s->graph->n_nodes : 0, NULL);
    if (r->async) tg_trace_rec_hasher_drain(r);   // every EVAL before the END
    tl_ahead.r = NULL;
    if (r->n_active > 0) r->n_active--;
    if (r->n_active == 0 && r->async) {
        tg_trace_rec_hasher_active(r, false);
        r->async = false;
    }
    struct tg_trace_compute c = { .graph_id = s->graph_id, .compute_seq = s->compute_seq, .phase = TG_TRACE_END,
                                  .status = (int32_t) ev->status, .time_ns = ev->t_ns };
    tg_trace_write_compute(r->w, &c);
    if (ev->status != TG_OK) {   // the engine's explanation, while it is still the last error
        char msg[1200];
        snprintf(msg, sizeof(msg), "computation #%u of graph %u: %s", s->compute_seq, s->graph_id, tg_last_error());
        struct tg_trace_event e = {
            .kind = ev->status == TG_ERR_NO_BUFFER ? TG_TRACE_EV_UNALLOCATED_USE : TG_TRACE_EV_ERROR,
            .severity = ev->status == TG_ERR_ABORTED ? TG_TRACE_WARN : TG_TRACE_ERROR, .time_ns = ev->t_ns,
            .graph_id = (int32_t) s->graph_id, .tensor = -1, .step = -1, .name = "", .message = msg };
        tg_trace_write_event(r->w, &e);
    }
}

static void on_compute_end(const struct tg_obs_compute_event * ev, void * user) {
    struct tg_trace_recorder * r = user;
    LOCKED(r, { compute_end(r, ev); hook_cost(r, ev->t_ns, false); });
}

// A node event's own time stamp (ev->t_ns, taken just before the call) is
// where its cost starts; a deferred event's is the device's, earlier: it
// takes one of its own (a clock read costs tens of nanoseconds, and there
// are two events a node).
static void on_node_begin(const struct tg_obs_node_event * ev, void * user) {
    struct tg_trace_recorder * r = user;
    if (tl_ahead.r == r && tl_ahead.sched_id == ev->sched_id && tl_ahead.index == ev->index && ev->node &&
        !ev->deferred) {   // its work done at the last node's end: its begin time only (this thread's state)
        tl_ahead.s->t_node_begin = ev->t_ns;
        tl_ahead.r = NULL;
        return;
    }
    const uint64_t t_entry = ev->deferred ? tg_observe_now_ns() : 0;
    LOCKED(r, {
        struct rec_sched * s = tg_trace_rec_sched_state(r, ev->sched, ev->sched_id);
        if (s) {
            record_skipped(r, s, ev->index, ev);   // views before it: their bytes are still intact
            if (r->async && ev->node) before_write(r, ev->node);   // (first: view digests it waits for)
            if (r->vd && ev->node)
                vd_before_node(r, ev->node, ev->deferred, ev->index >= 0 && ev->index < s->vd_pre_cap && s->vd_pre[ev->index]);
            const uint64_t now = tg_observe_now_ns();
            s->t_node_begin = ev->deferred ? ev->t_ns : now;   // deferred: the device's begin time
            hook_cost_to(r, ev->deferred ? t_entry : ev->t_ns, now, true);
        }
    });
}

// Host address of t's element 0 with readable bytes: t->data for host
// memory, else a copy in the scratch. NULL if unreadable.
static const void * host_view(struct tg_trace_recorder * r, struct tg_tensor * t) {
    if (!t->data) return NULL;
    const void * v = tg_backend_tensor_host_view(t);   // host memory, or a GPU's snapshot (deferred node events)
    if (v) return v;
    size_t n = tg_nbytes(t);
    uint8_t * dst = tg_trace_rec_scratch(r, n);
    if (!dst) return NULL;
    in_recorder++;
    enum tg_status st = tg_backend_tensor_get(t, dst, 0, n);
    in_recorder--;
    return st == TG_OK ? dst : NULL;
}

static void write_contents(struct tg_trace_recorder * r, const struct tg_trace_eval * e, struct tg_tensor * t,
                           const void * data) {
    size_t need = tg_trace_gather_data(data, t->type, t->ne, t->nb, NULL, 0);
    uint8_t * buf = need ? malloc(need) : NULL;
    if (!buf) return;
    tg_trace_gather_data(data, t->type, t->ne, t->nb, buf, need);
    struct tg_trace_contents c = { .graph_id = e->graph_id, .compute_seq = e->compute_seq, .node = e->node,
                                   .type = (int32_t) t->type, .ne = { t->ne[0], t->ne[1], t->ne[2], t->ne[3] },
                                   .raw_size = need, .hash = e->hash };
    tg_trace_write_contents(r->w, &c, buf, r->opt.zstd_level);
    free(buf);
}

// Leafs matching the contents pattern (inputs, constants: not weights, which
// the model file holds) are stored at the start of each computation, as
// CONTENTS records whose node is the leaf's tensor index (>= n_nodes): a node
// can then be recomputed from its recorded inputs (`tgdb replay`, `tgdb repro`).
static void record_leafs(struct tg_trace_recorder * r, struct rec_sched * s) {
    if (!s->graph || !s->tensors) return;
    for (int k = 0; k < s->n_leafs; k++) {
        int ti = s->n_nodes + k;
        if (ti >= s->n_tensors) break;
        struct tg_tensor * t = s->tensors[ti];
        if (!t || !t->data || !tg_trace_pattern_match(r->contents, t->name, tg_op_name(t->op))) continue;
        struct tg_buffer * b = tg_tensor_buffer(t);
        if (b && tg_buffer_get_usage(b) == TG_BUFFER_USAGE_WEIGHTS) continue;
        const void * data = host_view(r, t);
        if (!data) continue;
        struct tg_trace_eval e = { .graph_id = s->graph_id, .compute_seq = s->compute_seq, .node = ti,
                                   .hash = tg_trace_hash_data(data, t->type, t->ne, t->nb) };
        write_contents(r, &e, t, data);
    }
}

// Items: the nodes recorded together (a node and the views after it).
// Hashes and summaries are computed on the recorder's hashing thread where
// it runs (recorder-hasher.c), else in parallel when the backend lends its
// waiting threads; records are written in order afterwards.
#define REC_BATCH 64

// A view of binary16 host memory outside compute buffers (a KV cache): its
// element-set digest (from the memo: the elements written since it was last
// seen; viewdigest.h), in the callback or on the hashing thread.
static void item_set_digest(const struct tg_trace_options * opt, struct rec_item * it) {
    const struct tg_tensor * t = it->t;
    const uint64_t t0 = tg_observe_now_ns();
    const bool want_sketch = opt->summaries && opt->sketches;
    double sk[TG_TRACE_SKETCH_N];
    struct tg_trace_summary sum;
    uint64_t hash;
    struct tg_trace_eval * e = &it->e;
    if (tg_trace_vd_digest(it->vdm, it->vd_buf, it->data, t->type, t->ne, it->nb, &hash, &sum, want_sketch ? sk : NULL)) {
        e->flags |= TG_TRACE_EVAL_SETDIGEST;
        if (opt->hashes) { e->hash = hash; e->flags |= TG_TRACE_EVAL_HASH; }
        if (opt->summaries) { e->sum = sum; e->flags |= TG_TRACE_EVAL_SUMMARY; }
        if (want_sketch) {
            for (int k = 0; k < TG_TRACE_SKETCH_N; k++) it->sketch[k] = (float) sk[k];
            it->sketched = true;
            it->sketch_scheme = 2;
            e->flags |= TG_TRACE_EVAL_SKETCH;
        }
    }
    it->done = true;
    it->view_ns = tg_observe_now_ns() - t0;
}

static void item_prepare(struct tg_trace_recorder * r, struct rec_sched * s, struct rec_item * it, struct tg_tensor * t,
                         int index, int split, int backend, uint64_t t_begin, uint64_t t_end) {
    struct tg_buffer * b = tg_tensor_buffer(t);
    it->t = t;
    it->e = (struct tg_trace_eval) { .graph_id = s->graph_id, .compute_seq = s->compute_seq, .node = index,
                                     .flags = t_end ? TG_TRACE_EVAL_TIME : 0, .t_begin_ns = t_begin, .t_end_ns = t_end,
                                     .uid = (uint64_t) (uintptr_t) t, .root_uid = tg_trace_rec_root_uid(t),
                                     .buffer_uid = b ? b->id : 0, .offset = buffer_offset(b, t->data),
                                     .nbytes = tg_nbytes(t), .backend = backend, .split = split };
    it->contents = r->contents && tg_trace_pattern_match(r->contents, t->name, tg_op_name(t->op));
    it->data = NULL;
    memcpy(it->nb, t->nb, sizeof(it->nb));
    it->sketched = false;
    it->sketch_scheme = 1;
    it->same = -1;
    it->pending = false;
    it->lazy = false;
    it->claim = 0;
    it->view_ns = 0;
    it->vd = it->takeout = false;
    bool view = t->op == TG_OP_NONE || tg_op_is_view(t->op);
    it->done = !(((r->opt.hashes || r->opt.summaries) && (r->opt.views || !view)) || it->contents);
    if (it->done) return;
    it->data = host_view(r, t);
    if (!it->data) it->e.flags |= TG_TRACE_EVAL_NODATA;
    else if (view && !it->contents && r->opt.view_digest != 2 && it->data == t->data && b &&
             tg_buffer_get_usage(b) != TG_BUFFER_USAGE_COMPUTE && tg_buffer_is_host(b) &&
             tg_trace_vd_covers(t->type, t->ne, t->nb)) {
        it->vd = true;   // the element-set digest: now, or on the hashing thread (drained before the next token's stores)
        it->vdm = r->vd;
        it->vd_buf = b->id;
        if (!r->async) item_set_digest(&r->opt, it);
    }
}

void tg_trace_rec_item_hash(const struct tg_trace_options * opt, struct rec_item * it) {
    if (it->done || !it->data) return;
    if (it->vd) { item_set_digest(opt, it); return; }
    struct tg_tensor * t = it->t;
    const bool view = t->op == TG_OP_NONE || tg_op_is_view(t->op);
    const uint64_t t0 = view ? tg_observe_now_ns() : 0;
    struct tg_trace_eval * e = &it->e;
    bool want_hash = opt->hashes || it->contents;
    bool want_sketch = opt->summaries && opt->sketches;
    double sk[TG_TRACE_SKETCH_N];
    bool ok = tg_trace_hash_summarize_sketch(it->data, t->type, t->ne, it->nb, want_hash ? &e->hash : NULL,
                                             opt->summaries ? &e->sum : NULL, want_sketch ? sk : NULL);
    it->sketched = ok && want_sketch;
    if (it->sketched) for (int k = 0; k < TG_TRACE_SKETCH_N; k++) it->sketch[k] = (float) sk[k];   // stored as binary32
    if (it->sketched) e->flags |= TG_TRACE_EVAL_SKETCH;
    if (!ok && want_hash && opt->summaries) {   // a type without a summary: hash only
        e->hash = tg_trace_hash_data(it->data, t->type, t->ne, it->nb);
        e->flags |= TG_TRACE_EVAL_HASH;
    } else if (ok) {
        e->flags |= (want_hash ? TG_TRACE_EVAL_HASH : 0) | (opt->summaries ? TG_TRACE_EVAL_SUMMARY : 0);
    }
    if (it->contents) e->flags |= TG_TRACE_EVAL_CONTENTS;
    it->done = true;
    if (view) it->view_ns = tg_observe_now_ns() - t0;
}

void tg_trace_rec_item_copy(struct rec_item * x, const struct rec_item * y) {
    const uint32_t keep = TG_TRACE_EVAL_TIME;
    x->e.flags = (x->e.flags & keep) | (y->e.flags & ~keep);
    x->e.hash = y->e.hash;
    x->e.sum = y->e.sum;
    x->sketched = y->sketched;
    x->sketch_scheme = y->sketch_scheme;
    memcpy(x->sketch, y->sketch, sizeof(x->sketch));
}


void tg_trace_rec_item_write(struct tg_trace_recorder * r, struct rec_item * it) {
    tg_trace_write_eval(r->w, &it->e);
    if (it->sketched) {
        struct tg_trace_sketch s = { .graph_id = it->e.graph_id, .compute_seq = it->e.compute_seq,
                                     .node = it->e.node, .n = TG_TRACE_SKETCH_N, .scheme = it->sketch_scheme };
        memcpy(s.v, it->sketch, sizeof(s.v));
        tg_trace_write_sketch(r->w, &s);
    }
    if (it->contents && it->data) write_contents(r, &it->e, it->t, it->data);
}

struct hash_job { const struct tg_trace_options * opt; struct rec_item * items; };

static void hash_task(int i, void * arg) {
    struct hash_job * j = arg;
    tg_trace_rec_item_hash(j->opt, &j->items[i]);
}

// Prepares up to REC_BATCH items of nodes [j0, end) into items[] (`first`,
// if not NULL, is node `from`, computed, with its times; the others are
// views the backend skipped). Stops after a device copy (its bytes are in
// the scratch, which the next copy reuses). A view with the same bytes in the
// same order as an earlier item (a reshape of a contiguous node) gets
// same_as[i] = that item: the same hash, summary and sketch, copied instead
// of computed again. Returns the number of items; *bytes: what to hash.
static int prepare_batch(struct tg_trace_recorder * r, struct rec_sched * s, int from, int j0, int end,
                         const struct tg_obs_node_event * first, struct rec_item * items, int max, int * same_as,
                         size_t * bytes, bool * sync) {
    int n = 0;
    *bytes = 0;
    *sync = false;
    for (int j = j0; j < end && n < max; ) {
        struct rec_item * it = &items[n];
        if (first && j == from) {
            item_prepare(r, s, it, first->node, first->index, first->split, first->backend, s->t_node_begin, first->t_ns);
        } else {
            int k = tg_sched_node_split(s->sched, j);
            const struct tg_sched_split * sp = k >= 0 ? tg_sched_get_split(s->sched, k) : NULL;
            item_prepare(r, s, it, s->graph->nodes[j], j, k, sp ? sp->backend : -1, 0, 0);
        }
        if (!it->done) *bytes += it->e.nbytes;
        if (it->contents) *sync = true;
        j++;
        n++;
        if (it->data && it->data == r->scratch) { *sync = true; break; }   // written before the scratch is reused
    }
    for (int i = 0; i < n; i++) {
        same_as[i] = -1;
        const struct rec_item * x = &items[i];
        if (x->done || !x->data || x->contents || !tg_is_contiguous(x->t)) continue;
        for (int k = 0; k < i && same_as[i] < 0; k++) {
            const struct rec_item * y = &items[k];
            if (same_as[k] < 0 && !y->done && !y->contents && y->data == x->data && y->t->type == x->t->type &&
                y->e.nbytes == x->e.nbytes && tg_is_contiguous(y->t))
                same_as[i] = k;
        }
        if (same_as[i] >= 0) { items[i].done = true; *bytes -= x->e.nbytes; }
    }
    return n;
}

// Whether node t, when it runs, writes into [lo, hi).
static bool writes_into(const struct tg_tensor * t, uintptr_t lo, uintptr_t hi) {
    if (t->data && (uintptr_t) t->data < hi && lo < (uintptr_t) t->data + tg_nbytes(t)) return true;
    if (writes_sources(t))
        for (int i = 0; i < TG_MAX_SRC; i++)
            if (t->src[i] && t->src[i]->data && (uintptr_t) t->src[i]->data < hi &&
                lo < (uintptr_t) t->src[i]->data + tg_nbytes(t->src[i]))
                return true;
    return false;
}

// With the hashing thread: the items whose bytes the next node overwrites
// (computed in place: norm -> attn_norm, kq -> soft_max, ffn_out -> l_out)
// hashed here, from this CPU's cache, while they are still there: the thread
// cannot reach them first (the next node follows within a microsecond). A
// copy aside for it cost about as much in the callbacks (measured with the
// arena's lines fetched ahead) and waits when the thread falls behind.
// Their EVALs go in done. `all`: every item (the split's last node, hashed
// here while the thread drains the ring).
static void hash_doomed(struct tg_trace_recorder * r, const struct tg_tensor * next, bool all, struct rec_item * items,
                        int * same_as, int n) {
    if (!all && (!next || next->op == TG_OP_NONE || tg_op_is_view(next->op))) return;
    for (int i = 0; i < n; i++) {
        struct rec_item * it = &items[i];
        if (it->done || !it->data || it->vd || it->data != it->t->data ||
            (!all && !writes_into(next, (uintptr_t) it->data, (uintptr_t) it->data + it->e.nbytes)))
            continue;
        tg_trace_rec_item_hash(&r->opt, it);
        r->stats.view_ns += it->view_ns;
        if (all && (it->e.flags & TG_TRACE_EVAL_HASH) && tg_is_contiguous(it->t)) {   // (XXH3 of its bytes)
            r->out_t = it->t;
            r->out_data = it->t->data;
            r->out_size = it->e.nbytes;
            r->out_hash = it->e.hash;
            r->out_ok = true;
        }
        for (int k = i + 1; k < n; k++)
            if (same_as[k] == i) { tg_trace_rec_item_copy(&items[k], it); same_as[k] = -1; }
    }
}

// Records nodes [from, end) of s's current graph: `first` (if not NULL) is
// node `from`, computed, with its times; the others are views the backend
// skipped. With the hashing thread on, batches are prepared in its ring and
// put there (it hashes and writes them); a batch with contents or a device
// copy is hashed and written here, after everything queued (its bytes are
// read again when written). Else ev (may be NULL) lends the backend's threads.
static void record_range(struct tg_trace_recorder * r, struct rec_sched * s, int from, int end,
                         const struct tg_obs_node_event * first, const struct tg_obs_node_event * ev) {
    struct rec_item batch[REC_BATCH];
    int same_as[REC_BATCH];
    for (int j0 = from; j0 < end; ) {
        size_t bytes;
        bool sync;
        int max = REC_BATCH;
        // with the thread, prepared in place in its ring (past its head: unseen until put)
        struct rec_item * items = r->async ? tg_trace_rec_hasher_slots(r, &max) : batch;
        int n = prepare_batch(r, s, from, j0, end, first, items, max, same_as, &bytes, &sync);
        j0 += n;
        if (r->async && !sync) {
            if (first && s->graph) {
                const bool last = split_ends(s, first->split, end);   // the thread drained next: this node here meanwhile
                hash_doomed(r, end < s->graph->n_nodes ? s->graph->nodes[end] : NULL, last, items, same_as, n);
            }
            tg_trace_rec_hasher_put(r, same_as, n);
            continue;
        }
        if (r->async) tg_trace_rec_hasher_drain(r);   // in order: what is queued first
        struct hash_job job = { &r->opt, items };
        if (ev && ev->parallel && n > 1 && bytes >= (64u << 10)) ev->parallel(ev, n, hash_task, &job);
        else for (int i = 0; i < n; i++) tg_trace_rec_item_hash(&r->opt, &items[i]);
        for (int i = 0; i < n; i++) if (same_as[i] >= 0) tg_trace_rec_item_copy(&items[i], &items[same_as[i]]);
        for (int i = 0; i < n; i++) {
            tg_trace_rec_item_write(r, &items[i]);
            r->stats.view_ns += items[i].view_ns;
        }
    }
}

// Records the nodes [s->next_node, end) that ran without node events.
static void record_skipped(struct tg_trace_recorder * r, struct rec_sched * s, int end,
                           const struct tg_obs_node_event * ev) {
    if (!s->graph || s->sched == NULL) return;
    if (end > s->graph->n_nodes) end = s->graph->n_nodes;
    if (end <= s->next_node) return;
    tg_trace_writer_batch_begin(r->w);   // the views before a node: one write(2) where writes are used
    record_range(r, s, s->next_node, end, NULL, ev);
    tg_trace_writer_batch_end(r->w);
    s->next_node = end;
}

// View nodes (no computation: the backends skip them) right after node i.
static int views_after(const struct rec_sched * s, int i) {
    int j = i + 1;
    while (s->graph && j < s->graph->n_nodes && (s->graph->nodes[j]->op == TG_OP_NONE || tg_op_is_view(s->graph->nodes[j]->op)))
        j++;
    return j;
}

static void node_end(struct tg_trace_recorder * r, const struct tg_obs_node_event * ev) {
    struct rec_sched * s = tg_trace_rec_sched_state(r, ev->sched, ev->sched_id);
    if (!s || !ev->node) return;
    record_skipped(r, s, ev->index, ev);   // normally done at its begin already
    if (ev->index < s->next_node) return;   // a view recorded with the node before it
    // the node and the views that follow it (their sources are final now)
    int end = s->graph ? views_after(s, ev->index) : ev->index + 1;
    tg_trace_writer_batch_begin(r->w);
    record_range(r, s, ev->index, end, ev, ev);
    const bool split_end = split_ends(s, ev->split, end);
    if (r->async && split_end) tg_trace_rec_hasher_drain(r);   // before the next split's input copies
    tg_trace_writer_batch_end(r->w);
    s->next_node = end;
    tl_ahead.r = NULL;
    if (r->async && !split_end && !ev->deferred && s->graph && end < s->graph->n_nodes) {
        struct tg_tensor * next = s->graph->nodes[end];   // (end: the next node that computes)
        before_write(r, next);
        if (r->vd) vd_before_node(r, next, false, end < s->vd_pre_cap && s->vd_pre[end]);
        tl_ahead.r = r;
        tl_ahead.sched_id = ev->sched_id;
        tl_ahead.index = end;
        tl_ahead.s = s;
    }
}

static void on_node_end(const struct tg_obs_node_event * ev, void * user) {
    struct tg_trace_recorder * r = user;
    const uint64_t t_entry = ev->deferred ? tg_observe_now_ns() : 0;   // see on_node_begin
    LOCKED(r, { node_end(r, ev); hook_cost(r, ev->deferred ? t_entry : ev->t_ns, true); });
}

static void access_error(struct tg_trace_recorder * r, const struct tg_obs_tensor_io * ev) {
    const struct tg_tensor * t = ev->tensor;
    uint64_t gv;
    int32_t gid = -1, ti = -1;
    if (tg_ptrmap_get(&r->uid_graph, tg_ptrmap_key(t), &gv)) tg_trace_rec_uid_where(r, gv, &gid, &ti);
    struct tg_trace_event e = { .kind = TG_TRACE_EV_UNALLOCATED_USE, .severity = TG_TRACE_ERROR, .time_ns = ev->t_ns,
                                .graph_id = gid, .tensor = ti, .uid = (uint64_t) (uintptr_t) t,
                                .buffer_uid = 0, .offset = ev->offset, .size = ev->size, .step = -1, .name = "" };
    char msg[1200];
    const char * what = ev->what == TG_OBS_IO_GET ? "read" : ev->what == TG_OBS_IO_MEMSET ? "memset" :
                        ev->what == TG_OBS_IO_COPY ? "copy into" : "write";
    snprintf(msg, sizeof(msg), "host %s of '%s' refused: %s", what, t->name, tg_last_error());
    snprintf(e.name, sizeof(e.name), "%s", t->name);
    e.message = msg;
    tg_trace_write_event(r->w, &e);
}

static void on_access_error(const struct tg_obs_tensor_io * ev, void * user) {
    struct tg_trace_recorder * r = user;
    if (in_recorder || !ev->tensor) return;
    LOCKED(r, access_error(r, ev));
}

static void host_access(struct tg_trace_recorder * r, const struct tg_obs_tensor_io * ev, uint32_t kind) {
    const struct tg_tensor * t = ev->tensor;
    if (!t) return;
    uint64_t gv;
    bool known = tg_ptrmap_get(&r->uid_graph, tg_ptrmap_key(t), &gv);
    if (r->sched && !known) return;   // a per-scheduler recorder keeps to its graphs' tensors
    struct tg_trace_host h = { .kind = kind, .compute_seq = r->n_computes_done, .time_ns = ev->t_ns,
                               .uid = (uint64_t) (uintptr_t) t, .root_uid = tg_trace_rec_root_uid(t),
                               .buffer_uid = ev->buffer ? ev->buffer->id : 0,
                               .offset = buffer_offset(ev->buffer, t->data) + ev->offset, .size = ev->size,
                               .hash = 0, .graph_id = -1, .tensor = -1 };
    snprintf(h.name, sizeof(h.name), "%s", t->name);
    if (r->opt.host_hashes && kind == TG_TRACE_HOST_READ && r->out_ok && t == r->out_t && t->data == r->out_data &&
        ev->offset == 0 && ev->size == r->out_size)
        h.hash = r->out_hash;   // the same bytes, hashed at the end of the computation
    else if (r->opt.host_hashes && ev->data && ev->size)
        h.hash = XXH3_64bits(ev->data, ev->size);
    if (known) tg_trace_rec_uid_where(r, gv, &h.graph_id, &h.tensor);
    tg_trace_write_host(r->w, &h);
}

// Bytes written through the host API (a buffer clear: tensor NULL): the view
// digests cannot follow them, those views start again.
static void vd_host_write(struct tg_trace_recorder * r, const struct tg_obs_tensor_io * ev) {
    if (!r->vd) return;
    uintptr_t lo = 0;
    if (ev->tensor && ev->tensor->data) lo = (uintptr_t) ev->tensor->data + ev->offset;
    else if (!ev->tensor && ev->buffer) lo = (uintptr_t) tg_buffer_get_base((struct tg_buffer *) ev->buffer) + ev->offset;
    if (lo) tg_trace_vd_invalidate(r->vd, lo, lo + ev->size);
}

static void on_tensor_set(const struct tg_obs_tensor_io * ev, void * user) {
    struct tg_trace_recorder * r = user;
    if (in_recorder) return;
    LOCKED(r, { r->out_ok = false; vd_host_write(r, ev); host_access(r, ev, TG_TRACE_HOST_WRITE); });
}

static void on_tensor_get(const struct tg_obs_tensor_io * ev, void * user) {
    struct tg_trace_recorder * r = user;
    if (in_recorder) return;
    LOCKED(r, host_access(r, ev, TG_TRACE_HOST_READ));
}

// Integer value of "key=" in text, or def.
static int kv_int(const char * text, const char * key, int def) {
    const char * p = text ? strstr(text, key) : NULL;
    return p ? atoi(p + strlen(key)) : def;
}

static void on_marker(const struct tg_obs_marker * ev, void * user) {
    struct tg_trace_recorder * r = user;
    bool decode = ev->name && !strcmp(ev->name, "decode");
    struct tg_trace_marker m = { .kind = decode ? TG_TRACE_MARK_DECODE : TG_TRACE_MARK_USER, .time_ns = ev->t_ns,
                                 .n_tokens = kv_int(ev->text, "n_tokens=", 0), .pos = kv_int(ev->text, "pos=", 0),
                                 .seq_id = kv_int(ev->text, "seq=", 0) };
    char text[256];
    snprintf(text, sizeof(text), "%s%s%s", ev->name ? ev->name : "marker", ev->text && ev->text[0] ? " " : "",
             ev->text ? ev->text : "");
    m.text = text;
    LOCKED(r, { m.compute_seq = r->n_computes_done; tg_trace_write_marker(r->w, &m, NULL); });
}

// Node events may come late (a GPU's snapshots; a CPU product computed ahead
// in a group) except on the CPU while the hashing thread reads nodes' memory:
// its ring's items would be overwritten before the writer's before-write
// call had them copied aside. (r->async changes at compute_begin, on the
// engine's thread, the one asking.)
static bool defer_on(const struct tg_backend * be, void * user) {
    const struct tg_trace_recorder * r = user;
    return !(r->async && tg_backend_is_cpu((struct tg_backend *) be));
}

// ---- attach / detach ----------------------------------------------------------------------

struct tg_trace_recorder * tg_trace_attach(struct tg_sched * sched, const char * path,
                                           const struct tg_trace_options * opt) {
    struct tg_trace_recorder * r = calloc(1, sizeof(*r));
    if (!r) { tg_error(TG_ERR_NOMEM, "trace: no memory for a recorder"); return NULL; }
    r->opt = opt ? *opt : tg_trace_default_options();
    r->contents = r->opt.contents && r->opt.contents[0] ? strdup(r->opt.contents) : NULL;
    r->note = r->opt.note ? strdup(r->opt.note) : NULL;
    r->opt.contents = r->contents;
    r->opt.note = r->note;
    const char * ht = getenv("TGDB_TRACE_HASH_THREAD");   // decides where the options leave it to auto
    if (ht && *ht && r->opt.hash_thread < 0) r->opt.hash_thread = !strcmp(ht, "auto") ? -1 : atoi(ht) < 0 ? -1 : atoi(ht) > 2 ? 1 : atoi(ht);
    r->sched = sched;
    const char * vm = getenv("TGDB_TRACE_VIEWS");   // as hash_thread: where the options leave the default
    if (vm && *vm && r->opt.view_digest == 0)
        r->opt.view_digest = !strcmp(vm, "recompute") ? 1 : !strcmp(vm, "bytes") ? 2 : 0;
    // the memo follows the writes of the nodes it sees (a per-scheduler recorder: its scheduler's) and of
    // the host API (every one)
    if (r->opt.view_digest == 0 && !(r->vd = tg_trace_vd_new())) {
        free(r->contents); free(r->note); free(r);
        tg_error(TG_ERR_NOMEM, "trace: no memory for a recorder");
        return NULL;
    }
    r->next_graph_id = 1;   // graph ids count from 1, like the schedulers' graph_seq
    pthread_mutex_init(&r->mu, NULL);
    r->w = tg_trace_writer_open(path);
    if (!r->w) { tg_trace_vd_free(r->vd); free(r->contents); free(r->note); pthread_mutex_destroy(&r->mu); free(r); return NULL; }
    write_run(r);
    if (poison_attached) {   // says why freed ranges read as NaN in this run
        struct tg_trace_event e = { .kind = TG_TRACE_EV_POISON, .severity = TG_TRACE_INFO, .time_ns = tg_observe_now_ns(),
                                    .graph_id = -1, .tensor = -1, .step = -1, .name = "",
                                    .message = "poison mode on (TGDB_POISON / --poison): compute ranges the allocator "
                                               "frees or hands to another tensor are filled with NaN" };
        tg_trace_write_event(r->w, &e);
    }
    if (sched) tg_trace_rec_sched_state(r, sched, tg_sched_id(sched));
    r->obs = (struct tg_observer) { r, on_sched, on_graph_split, on_graph_alloc, on_compute_begin, on_compute_end,
                                    on_node_begin, on_node_end, on_tensor_set, on_tensor_get, on_marker, on_access_error,
                                    .node_events_deferrable = true,   // it reads each node's bytes in its event
                                    .node_events_deferrable_on = defer_on };
    enum tg_status st = sched ? tg_sched_add_observer(sched, &r->obs) : tg_observe_attach_global(&r->obs);
    if (st == TG_OK && sched) {
        r->host_obs = (struct tg_observer) { .user = r, .on_tensor_set = on_tensor_set, .on_tensor_get = on_tensor_get,
                                             .on_access_error = on_access_error };
        st = tg_observe_attach_global(&r->host_obs);
        if (st != TG_OK) tg_sched_remove_observer(sched, &r->obs);
    }
    if (st != TG_OK) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", tg_last_error());
        tg_trace_writer_close(r->w);
        tg_trace_vd_free(r->vd);
        free(r->contents); free(r->note); pthread_mutex_destroy(&r->mu); free(r);
        tg_error(st, "trace: cannot attach the recorder: %s", msg);
        return NULL;
    }
    return r;
}

enum tg_status tg_trace_detach(struct tg_trace_recorder * r) {
    if (!r) return TG_OK;
    if (r->sched) {
        tg_sched_remove_observer(r->sched, &r->obs);
        tg_observe_detach_global(&r->host_obs);
    }
    else tg_observe_detach_global(&r->obs);
    if (r->hasher) { tg_trace_rec_hasher_stop(r->hasher); free(r->hasher); r->hasher = NULL; }   // writes what it holds
    pthread_mutex_lock(&r->mu);
    enum tg_status st = tg_trace_writer_close(r->w);
    r->w = NULL;
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < r->n_scheds; i++) tg_trace_rec_sched_free(&r->scheds[i]);
    tg_ptrmap_free(&r->uid_graph);
    free(r->scratch);
    tg_trace_vd_free(r->vd);
    free(r->gen_graph);
    free(r->contents);
    free(r->note);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return st;
}

struct tg_trace_writer * tg_trace_recorder_writer(struct tg_trace_recorder * r) { return r ? r->w : NULL; }

void tg_trace_recorder_get_stats(struct tg_trace_recorder * r, struct tg_trace_recorder_stats * out) {
    if (!out) return;
    memset(out, 0, sizeof(*out));
    if (r) LOCKED(r, {
        *out = r->stats;
        struct vd_stats vs;
        tg_trace_vd_stats(r->vd, &vs);
        out->n_views_memo = vs.n_memo;
        out->n_views_scratch = vs.n_scratch;
        out->grow_ns = tg_trace_writer_grow_ns(r->w);
        out->bytes = tg_trace_writer_size_now(r->w);
        if (r->hasher) {
            out->thread_ns = __atomic_load_n(&r->hasher->busy_ns, __ATOMIC_RELAXED);
            out->view_ns += __atomic_load_n(&r->hasher->view_ns, __ATOMIC_RELAXED);
        }
    });
}

enum tg_status tg_trace_mark_decode(struct tg_trace_recorder * r, int n_tokens, int pos, int seq_id, const int32_t * ids) {
    if (!r) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL recorder");
    struct tg_trace_marker m = { .kind = TG_TRACE_MARK_DECODE, .time_ns = tg_observe_now_ns(), .n_tokens = n_tokens,
                                 .pos = pos, .seq_id = seq_id, .n_ids = ids && n_tokens > 0 ? (uint32_t) n_tokens : 0,
                                 .text = "decode" };
    enum tg_status st;
    LOCKED(r, { m.compute_seq = r->n_computes_done; st = tg_trace_write_marker(r->w, &m, ids); });
    return st;
}

enum tg_status tg_trace_mark(struct tg_trace_recorder * r, const char * text) {
    if (!r) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL recorder");
    struct tg_trace_marker m = { .kind = TG_TRACE_MARK_USER, .time_ns = tg_observe_now_ns(), .text = text ? text : "" };
    enum tg_status st;
    LOCKED(r, { m.compute_seq = r->n_computes_done; st = tg_trace_write_marker(r->w, &m, NULL); });
    return st;
}

// ---- poison mode ------------------------------------------------------------------------------

static void poison_on_sched(const struct tg_obs_sched_event * ev, void * user) {
    if (ev->what == TG_OBS_SCHED_NEW) tg_sched_set_poison(ev->sched, true);
}

static void poison_on_alloc(const struct tg_obs_alloc_event * ev, void * user) {
    for (int i = 0; i < ev->n_buffers; i++)   // the previous graph's tensors lose their bytes now
        if (ev->buffers[i].buffer) tg_buffer_clear(ev->buffers[i].buffer, 0xFF);
}

static const struct tg_observer poison_obs = { .on_sched = poison_on_sched, .on_graph_alloc = poison_on_alloc };

enum tg_status tg_trace_set_poison(bool on) {
    if (on == poison_attached) return TG_OK;
    if (!on) {
        tg_observe_detach_global(&poison_obs);
        poison_attached = false;
        return TG_OK;
    }
    enum tg_status st = tg_observe_attach_global(&poison_obs);
    poison_attached = st == TG_OK;
    return st;
}

// ---- TGDB_TRACE ---------------------------------------------------------------------------

static struct tg_trace_recorder * env_rec;

struct tg_trace_recorder * tg_trace_env_recorder(void) { return env_rec; }

static void env_close(void) {
    struct tg_trace_recorder * r = env_rec;
    env_rec = NULL;
    struct tg_trace_recorder_stats rs;
    tg_trace_recorder_get_stats(r, &rs);
    enum tg_status st = tg_trace_detach(r);
    if (st != TG_OK) tg_log_printf(TG_LOG_ERROR, "TGDB_TRACE: %s", tg_last_error());
    else if (!rs.thread_ns && rs.view_ns > rs.hook_ns / 4 && rs.view_ns > 100000000ull)   // the one thing worth saying unasked
        tg_log_printf(TG_LOG_INFO, "TGDB_TRACE: recording took %.1f ms, %.1f ms of it hashing views (the KV-cache "
                      "views grow with the context; TGDB_TRACE_HASH=computed skips views)",
                      (double) rs.hook_ns / 1e6, (double) rs.view_ns / 1e6);
}

// Called by the engine at the first tg_sched_new() (tg/observe.h).
void tg_observe_env_hook(void) {
    const char * pz = getenv("TGDB_POISON");
    if (pz && *pz && strcmp(pz, "0") != 0 && tg_trace_set_poison(true) != TG_OK)
        tg_log_printf(TG_LOG_ERROR, "TGDB_POISON: %s", tg_last_error());
    const char * path = getenv("TGDB_TRACE");
    if (!path || !*path || env_rec) return;
    struct tg_trace_options opt = tg_trace_default_options();
    opt.contents = getenv("TGDB_TRACE_DUMP");
    const char * h = getenv("TGDB_TRACE_HASH");
    if (h && *h && !tg_trace_set_hash_mode(&opt, h))
        tg_log_printf(TG_LOG_ERROR, "TGDB_TRACE_HASH=%s: unknown mode (all, computed or none); hashing every node", h);
    opt.note = "TGDB_TRACE";
    env_rec = tg_trace_attach(NULL, path, &opt);
    if (!env_rec) {
        tg_log_printf(TG_LOG_ERROR, "TGDB_TRACE=%s: %s", path, tg_last_error());
        return;
    }
    atexit(env_close);
}
