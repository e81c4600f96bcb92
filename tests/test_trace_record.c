// test_trace_record.c - the recorder on a real scheduler: every node
// evaluated is recorded with the hash of its real contents, summaries match,
// contents selected by pattern decode to the real bytes, placement and
// allocation are recorded, host reads are recorded; a view and its
// contiguous copy hash the same in the trace.
//
// Also the "victim" program of tests/test_trace_kill.sh:
//   test_trace_record victim loop N        compute N graphs (N<=0: forever), "computed K" after each
//   test_trace_record victim kill-at K     SIGKILL itself from the eval callback at node K of graph 2
//   test_trace_record victim abort-at K    abort() from the eval callback at node K of graph 2
//   test_trace_record victim kill-before   SIGKILL itself right after creating the scheduler
// (run with TGDB_TRACE=path: the recorder comes from the environment hook).
#include "check.h"
#include "tg/backend.h"
#include "tg/sched.h"
#include "tg/trace-check.h"
#include "tg/trace-read.h"
#include "tg/trace.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct net {
    struct tg_context * wctx, * ctx;
    struct tg_buffer *  wbuf;
    struct tg_tensor *  w, * x, * mm, * tr, * ct, * out;
    struct tg_graph *   g;
};

// out = scale(cont(transpose(w x)), 0.5) + 1; w [64,32] weights, x [64,8] input.
static bool net_build(struct net * n, struct tg_backend * cpu, bool keep_all) {
    struct tg_context_params wp = { 1 << 16, NULL, true };
    n->wctx = tg_context_new(wp);
    n->w = tg_set_name(tg_new_tensor_2d(n->wctx, TG_TYPE_F32, 64, 32), "w.weight");
    n->wbuf = tg_backend_alloc_ctx_tensors(n->wctx, cpu);
    if (!n->wbuf) return false;
    tg_buffer_set_usage(n->wbuf, TG_BUFFER_USAGE_WEIGHTS);
    float wv[64 * 32];
    for (int i = 0; i < 64 * 32; i++) wv[i] = sinf((float) i * 0.37f) * 0.1f;
    tg_backend_tensor_set(n->w, wv, 0, sizeof(wv));
    struct tg_context_params cp = { 1 << 20, NULL, true };
    n->ctx = tg_context_new(cp);
    n->x = tg_set_name(tg_new_tensor_2d(n->ctx, TG_TYPE_F32, 64, 8), "x");
    tg_set_input(n->x);
    n->mm = tg_set_name(tg_mul_mat(n->ctx, n->w, n->x), "mm-0");
    n->tr = tg_set_name(tg_transpose(n->ctx, n->mm), "mm_t-0");
    n->ct = tg_set_name(tg_cont(n->ctx, n->tr), "mm_tc-0");
    struct tg_tensor * s = tg_set_name(tg_scale(n->ctx, n->ct, 0.5f), "half-0");
    n->out = tg_set_name(tg_add(n->ctx, s, tg_set_name(tg_scale(n->ctx, s, 0.0f), "zero-0")), "out");
    tg_set_output(n->out);
    n->g = tg_graph_new(n->ctx, 64);
    if (!n->g || tg_graph_build_forward(n->g, n->out) != TG_OK) return false;
    if (keep_all)   // no reuse: every result stays readable after the computation
        for (int i = 0; i < n->g->n_nodes; i++) tg_set_output(n->g->nodes[i]);
    return true;
}

static enum tg_status net_run(struct net * n, struct tg_sched * s, float seed) {
    float xv[64 * 8];
    for (int i = 0; i < 64 * 8; i++) xv[i] = cosf((float) i * seed);
    tg_sched_reset(s);
    enum tg_status st = tg_sched_alloc_graph(s, n->g);
    if (st == TG_OK) st = tg_backend_tensor_set(n->x, xv, 0, sizeof(xv));
    if (st == TG_OK) st = tg_sched_graph_compute(s, n->g);
    return st;
}

static void net_free(struct net * n) {
    tg_context_free(n->ctx);
    tg_buffer_free(n->wbuf);
    tg_context_free(n->wctx);
}

// ---- victim ------------------------------------------------------------------------

static int victim_node = -1, victim_graph = 0;
static bool victim_abort;

static bool victim_cb(struct tg_tensor * t, bool ask, void * user) {
    int * counter = user;
    if (ask) return true;
    if (victim_graph == 2 && (*counter)++ == victim_node) {
        fflush(stdout);
        if (victim_abort) abort();
        raise(SIGKILL);
    }
    return true;
}

static int victim(int argc, char ** argv) {
    const char * mode = argv[2];
    struct tg_backend * cpu = tg_backend_cpu_init();
    if (!cpu) { fprintf(stderr, "victim: %s\n", tg_last_error()); return 1; }
    tg_backend_cpu_set_n_threads(cpu, 1);
    struct tg_sched * s = tg_sched_new(&cpu, 1, 64);
    if (!strcmp(mode, "kill-before")) raise(SIGKILL);
    struct net n;
    if (!net_build(&n, cpu, false)) { fprintf(stderr, "victim: %s\n", tg_last_error()); return 1; }
    int counter = 0, limit = -1;
    if (!strcmp(mode, "kill-at") || !strcmp(mode, "abort-at")) {
        victim_node = argc > 3 ? atoi(argv[3]) : 2;
        victim_abort = !strcmp(mode, "abort-at");
        tg_sched_set_eval_callback(s, victim_cb, &counter);
        limit = 3;
    } else if (!strcmp(mode, "loop")) {
        limit = argc > 3 ? atoi(argv[3]) : 0;
    } else {
        fprintf(stderr, "victim: unknown mode %s\n", mode);
        return 1;
    }
    for (int k = 1; limit <= 0 || k <= limit; k++) {
        victim_graph = k;
        if (net_run(&n, s, 0.01f * (float) k) != TG_OK) { fprintf(stderr, "victim: %s\n", tg_last_error()); return 1; }
        float o[8];
        tg_backend_tensor_get(n.out, o, 0, sizeof(o));
        printf("computed %d\n", k);
        fflush(stdout);
    }
    tg_sched_free(s);
    net_free(&n);
    tg_backend_free(cpu);
    return 0;
}

// ---- the same graph computed again -------------------------------------------------------
// A decode loop builds the same graph every token: the recorder keeps its
// tensor list and encodes again only the tensors whose struct changed. Every
// graph must still read back as the one computed: a changed parameter (the
// scale), a source rewired between tensors already listed, a changed name,
// a source outside the graph (a longer list), and a graph unchanged.
static float scale_of(const struct tg_trace_tensor * t) { float f; memcpy(&f, t->op_params, sizeof(f)); return f; }

static void check_reuse(struct tg_backend * cpu) {
    char path[256];
    snprintf(path, sizeof(path), "test_trace_record.%d.reuse.tgt", (int) getpid());
    struct tg_sched * s = tg_sched_new(&cpu, 1, 64);
    struct net n;
    bool built = net_build(&n, cpu, true);
    CHECK(built, "reuse: network built: %s", built ? "ok" : tg_last_error());
    struct tg_tensor * half = NULL, * zero = NULL;
    for (int i = 0; i < n.g->n_nodes; i++) {
        if (!strcmp(n.g->nodes[i]->name, "half-0")) half = n.g->nodes[i];
        if (!strcmp(n.g->nodes[i]->name, "zero-0")) zero = n.g->nodes[i];
    }
    struct tg_trace_recorder * rec = tg_trace_attach(s, path, NULL);
    CHECK(rec && half && zero, "reuse: recorder attached");
    bool ok = net_run(&n, s, 0.3f) == TG_OK;             // graph 1
    ok = ok && net_run(&n, s, 0.3f) == TG_OK;            // 2: the same
    float f = 0.25f;
    memcpy(half->op_params, &f, sizeof(f));
    ok = ok && net_run(&n, s, 0.3f) == TG_OK;            // 3: half-0 scales by 0.25
    n.out->src[1] = half;
    ok = ok && net_run(&n, s, 0.3f) == TG_OK;            // 4: out = half + half
    tg_set_name(zero, "zero-renamed");
    ok = ok && net_run(&n, s, 0.3f) == TG_OK;            // 5: a new name
    n.out->src[1] = zero;
    ok = ok && net_run(&n, s, 0.3f) == TG_OK;            // 6: wired back
    // 7: a source outside the graph (the same nodes and leafs, one more tensor listed)
    struct tg_context_params ep = { 1 << 12, NULL, true };
    struct tg_context * ectx = tg_context_new(ep);
    struct tg_tensor * extra = tg_set_name(tg_new_tensor_2d(ectx, TG_TYPE_F32, 8, 32), "extra");
    struct tg_buffer * ebuf = tg_backend_alloc_ctx_tensors(ectx, cpu);
    float ev[8 * 32] = {0};
    ok = ok && ebuf && tg_backend_tensor_set(extra, ev, 0, sizeof(ev)) == TG_OK;
    n.out->src[1] = extra;
    ok = ok && net_run(&n, s, 0.3f) == TG_OK;
    n.out->src[1] = zero;
    CHECK(ok, "reuse: seven computations: %s", ok ? "ok" : tg_last_error());
    CHECK(tg_trace_detach(rec) == TG_OK, "reuse: trace closed");
    struct tg_trace * tr = tg_trace_open(path);
    CHECK(tr && tg_trace_n_graphs(tr) == 7, "reuse: 7 graphs (%d)", tr ? tg_trace_n_graphs(tr) : -1);
    const float want_scale[7] = { 0.5f, 0.5f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f };
    const char * want_src1[7] = { "zero-0", "zero-0", "zero-0", "half-0", "half-0", "zero-renamed", "extra" };
    int right = 0;
    for (int gi = 0; tr && gi < 7; gi++) {
        struct tg_trace_tensor h, o, x;
        int hi = tg_trace_find_tensor(tr, gi, "half-0"), oi = tg_trace_find_tensor(tr, gi, "out");
        bool good = hi >= 0 && oi >= 0 && tg_trace_get_tensor(tr, gi, hi, &h) && tg_trace_get_tensor(tr, gi, oi, &o) &&
                    o.src[1] >= 0 && tg_trace_get_tensor(tr, gi, o.src[1], &x);
        good = good && scale_of(&h) == want_scale[gi] && !strcmp(x.name, want_src1[gi]) && o.src[0] == hi;
        good = good && (gi < 4 ? tg_trace_find_tensor(tr, gi, "zero-0") >= 0 && tg_trace_find_tensor(tr, gi, "zero-renamed") < 0
                               : tg_trace_find_tensor(tr, gi, "zero-renamed") >= 0 && tg_trace_find_tensor(tr, gi, "zero-0") < 0);
        if (good) right++;
        else fprintf(stderr, "  graph %d: half-0 %d scale %g, out %d src[1] '%s'\n", gi, hi, hi >= 0 ? scale_of(&h) : 0.0,
                     oi, good ? "" : x.name);
    }
    CHECK(right == 7, "reuse: every graph reads back as computed: scale, sources, names (%d/7)", right);
    if (tr) tg_trace_close(tr);
    tg_buffer_free(ebuf);
    tg_context_free(ectx);
    unlink(path);
    tg_sched_free(s);
    net_free(&n);
}

// Two schedulers taking turns with graphs that share a weight (a draft and
// a target model, two contexts): each keeps its tensor list between its
// graphs, and a host read names the latest graph holding the tensor read.
static void check_two_scheds(struct tg_backend * cpu) {
    char path[256];
    snprintf(path, sizeof(path), "test_trace_record.%d.two.tgt", (int) getpid());
    struct tg_context_params wp = { 1 << 14, NULL, true };
    struct tg_context * wctx = tg_context_new(wp);
    struct tg_tensor * w = tg_set_name(tg_new_tensor_2d(wctx, TG_TYPE_F32, 16, 8), "shared.weight");
    struct tg_buffer * wbuf = tg_backend_alloc_ctx_tensors(wctx, cpu);
    float wv[16 * 8];
    for (int i = 0; i < 16 * 8; i++) wv[i] = (float) i * 0.01f;
    bool ok = wbuf && tg_backend_tensor_set(w, wv, 0, sizeof(wv)) == TG_OK;
    struct tg_sched * sc[2] = { tg_sched_new(&cpu, 1, 16), tg_sched_new(&cpu, 1, 16) };
    struct tg_context * ctx[2];
    struct tg_tensor * x[2], * out[2];
    struct tg_graph * g[2];
    for (int k = 0; k < 2; k++) {
        struct tg_context_params cp = { 1 << 16, NULL, true };
        ctx[k] = tg_context_new(cp);
        x[k] = tg_set_name(tg_new_tensor_2d(ctx[k], TG_TYPE_F32, 16, 2 + k), k ? "xb" : "xa");
        tg_set_input(x[k]);
        out[k] = tg_set_name(tg_mul_mat(ctx[k], w, x[k]), k ? "outb" : "outa");
        tg_set_output(out[k]);
        g[k] = tg_graph_new(ctx[k], 16);
        ok = ok && g[k] && tg_graph_build_forward(g[k], out[k]) == TG_OK;
    }
    struct tg_trace_recorder * rec = ok ? tg_trace_attach(NULL, path, NULL) : NULL;   // global: both schedulers
    CHECK(rec != NULL, "two schedulers: global recorder attached");
    float xv[16 * 3], o[8 * 3];
    for (int i = 0; i < 16 * 3; i++) xv[i] = (float) (i % 7) - 3.0f;
    for (int round = 0; rec && ok && round < 6; round++) {   // A B A B A B; after each, host reads of w and out
        const int k = round % 2;
        tg_sched_reset(sc[k]);
        ok = tg_sched_alloc_graph(sc[k], g[k]) == TG_OK && tg_backend_tensor_set(x[k], xv, 0, tg_nbytes(x[k])) == TG_OK &&
             tg_sched_graph_compute(sc[k], g[k]) == TG_OK && tg_backend_tensor_get(w, wv, 0, sizeof(wv)) == TG_OK &&
             tg_backend_tensor_get(out[k], o, 0, tg_nbytes(out[k])) == TG_OK;
    }
    CHECK(ok, "two schedulers: six computations and host reads: %s", ok ? "ok" : tg_last_error());
    CHECK(rec && tg_trace_detach(rec) == TG_OK, "two schedulers: trace closed");
    struct tg_trace * tr = tg_trace_open(path);
    CHECK(tr && tg_trace_n_graphs(tr) == 6, "two schedulers: 6 graphs (%d)", tr ? tg_trace_n_graphs(tr) : -1);
    // host reads in order: w and out after graph 0, w and out after graph 1, ...
    int right = 0, reads = 0;
    for (int i = 0; tr && i < tg_trace_n_hosts(tr); i++) {
        struct tg_trace_host h;
        if (!tg_trace_get_host(tr, i, &h) || h.kind != TG_TRACE_HOST_READ) continue;
        const int gi = reads / 2;   // the graph computed just before
        struct tg_trace_graph gg;
        const char * want = reads % 2 == 0 ? "shared.weight" : gi % 2 ? "outb" : "outa";
        const bool good = tg_trace_get_graph(tr, gi, &gg) && h.graph_id == (int32_t) gg.graph_id &&
                          h.tensor == tg_trace_find_tensor(tr, gi, want) && !strcmp(h.name, want);
        if (!good) fprintf(stderr, "  read %d of '%s': graph %d tensor %d, expected graph %u '%s'\n", reads, h.name,
                           h.graph_id, h.tensor, gi < 6 && tg_trace_get_graph(tr, gi, &gg) ? gg.graph_id : 0u, want);
        right += good;
        reads++;
    }
    CHECK(reads == 12 && right == 12, "two schedulers: each host read names the latest graph holding the tensor (%d/%d)",
          right, reads);
    if (tr) tg_trace_close(tr);
    unlink(path);
    for (int k = 0; k < 2; k++) { tg_sched_free(sc[k]); tg_context_free(ctx[k]); }
    tg_buffer_free(wbuf);
    tg_context_free(wctx);
}

// ---- tests -----------------------------------------------------------------------------

static void check_trace(const char * path, struct net * n) {
    struct tg_trace * tr = tg_trace_open(path);
    CHECK(tr != NULL, "trace opens: %s", tr ? "ok" : tg_last_error());
    if (!tr) return;
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    CHECK(st.complete, "trace complete: %s", st.message);
    CHECK(tg_trace_n_scheds(tr) == 1 && tg_trace_n_graphs(tr) == 2, "1 scheduler, 2 graphs (%d, %d)",
          tg_trace_n_scheds(tr), tg_trace_n_graphs(tr));
    struct tg_trace_graph g;
    tg_trace_get_graph(tr, 1, &g);
    CHECK(g.n_nodes == n->g->n_nodes, "graph has %d nodes", g.n_nodes);
    CHECK(tg_trace_n_evals(tr) == 2 * n->g->n_nodes, "every node evaluated twice is recorded (%d evals)", tg_trace_n_evals(tr));
    int bad_hash = 0, bad_sum = 0;
    for (int i = 0; i < n->g->n_nodes; i++) {
        int ei = tg_trace_find_eval(tr, g.graph_id, i, UINT32_MAX);
        struct tg_trace_eval e;
        struct tg_trace_summary s;
        struct tg_tensor * t = n->g->nodes[i];
        if (ei < 0 || !tg_trace_get_eval(tr, ei, &e)) { bad_hash++; continue; }
        if (!(e.flags & TG_TRACE_EVAL_HASH) || e.hash != tg_trace_hash_tensor(t)) bad_hash++;
        tg_trace_summarize_data(t->data, t->type, t->ne, t->nb, &s);
        if (!(e.flags & TG_TRACE_EVAL_SUMMARY) || e.sum.min != s.min || e.sum.max != s.max || e.sum.n_elem != s.n_elem)
            bad_sum++;
    }
    CHECK(bad_hash == 0, "recorded hashes equal the hashes of the real results (%d wrong)", bad_hash);
    CHECK(bad_sum == 0, "recorded summaries equal the real ones (%d wrong)", bad_sum);
    int ti_t = tg_trace_find_tensor(tr, 1, "mm_t-0"), ti_c = tg_trace_find_tensor(tr, 1, "mm_tc-0");
    struct tg_trace_eval et, ec;
    CHECK(ti_t >= 0 && ti_c >= 0 && tg_trace_get_eval(tr, tg_trace_find_eval(tr, g.graph_id, ti_t, UINT32_MAX), &et) &&
          tg_trace_get_eval(tr, tg_trace_find_eval(tr, g.graph_id, ti_c, UINT32_MAX), &ec) && et.hash == ec.hash,
          "in the trace, the transposed view and its contiguous copy hash the same");
    int ti_mm = tg_trace_find_tensor(tr, 1, "mm-0");
    int ci = tg_trace_find_contents(tr, g.graph_id, ti_mm, UINT32_MAX);
    float got[32 * 8];
    CHECK(ci >= 0 && tg_trace_read_contents(tr, ci, got, sizeof(got)) == TG_OK &&
          memcmp(got, n->mm->data, sizeof(got)) == 0, "contents of mm-0 (pattern mm-*) decode to the real bytes");
    CHECK(tg_trace_find_contents(tr, g.graph_id, tg_trace_find_tensor(tr, 1, "out"), UINT32_MAX) < 0,
          "no contents for nodes outside the pattern");
    // (getters run before CHECK: its arguments are evaluated in no set order)
    struct tg_trace_placement p = { .backend = -1, .cause = 0, .text = "" };
    bool have_p = tg_trace_get_placement(tr, 1, ti_mm, &p);
    CHECK(have_p && p.backend == 0 && strlen(tg_trace_cause_name(tr, p.cause)) > 0,
          "placement recorded (cause %s: %s)", tg_trace_cause_name(tr, p.cause), p.text);
    struct tg_trace_alloc a = { .buffer = -1, .inplace_parent = -1, .first_step = -1, .last_step = -1 };
    struct tg_trace_buffer b;
    bool have_a = tg_trace_get_alloc(tr, 1, ti_mm, &a);
    CHECK(have_a && a.buffer >= 0 && tg_trace_get_buffer(tr, 1, a.buffer, &b) &&
          b.usage == TG_TRACE_USAGE_COMPUTE && a.first_step == ti_mm, "allocation of mm-0 in the compute buffer, step %d",
          a.first_step);
    int wi = tg_trace_find_tensor(tr, 1, "w.weight");
    CHECK(tg_trace_get_alloc(tr, 1, wi, &a) && (a.flags & TG_TRACE_ALLOC_EXTERNAL) && a.buffer >= 0 &&
          tg_trace_get_buffer(tr, 1, a.buffer, &b) && b.usage == TG_TRACE_USAGE_WEIGHTS, "weights: external, weights buffer");
    int reads = 0, writes = 0;
    for (int i = 0; i < tg_trace_n_hosts(tr); i++) {
        struct tg_trace_host h;
        if (!tg_trace_get_host(tr, i, &h)) continue;
        if (h.kind == TG_TRACE_HOST_READ && !strcmp(h.name, "out") && h.graph_id == (int32_t) g.graph_id) reads++;
        if (h.kind == TG_TRACE_HOST_WRITE && !strcmp(h.name, "x")) writes++;
    }
    CHECK(reads == 1 && writes == 2, "host reads of out (%d) and writes of x (%d) recorded", reads, writes);
    struct tg_trace_marker m;
    int32_t ids[4];
    struct tg_trace_event ev = { .message = "none" }, e2;
    int n_unalloc = 0, n_alloc_ev = 0;
    for (int i = 0; i < tg_trace_n_events(tr); i++) {
        if (!tg_trace_get_event(tr, i, &e2)) continue;
        if (e2.kind == TG_TRACE_EV_UNALLOCATED_USE) { n_unalloc++; ev = e2; }
        n_alloc_ev += e2.kind == TG_TRACE_EV_GRAPH_ALLOCATED;
    }
    CHECK(n_unalloc == 1 && !strcmp(ev.name, "never_allocated") && strstr(ev.message, "no buffer"),
          "unallocated use recorded: %s", ev.message);
    CHECK(n_alloc_ev >= 1, "new allocation plans recorded as events (%d)", n_alloc_ev);
    struct tg_trace_report rep;
    CHECK(tg_trace_check(tr, &rep) == TG_OK && rep.n_problems == 1 && rep.findings[0].kind == TG_TRACE_FIND_UNALLOCATED,
          "check reports the unallocated use as the only problem (%d)", rep.n_problems);
    tg_trace_report_free(&rep);
    CHECK(tg_trace_n_markers(tr) == 1 && tg_trace_get_marker(tr, 0, &m) && m.n_tokens == 4 &&
          tg_trace_marker_tokens(tr, 0, ids, 4) == 4 && ids[3] == 13, "decode marker with token ids");
    tg_trace_close(tr);
}

int main(int argc, char ** argv) {
    if (argc >= 3 && !strcmp(argv[1], "victim")) return victim(argc, argv);
    char path[256];
    snprintf(path, sizeof(path), "test_trace_record.%d.tgt", (int) getpid());
    struct tg_backend * cpu = tg_backend_cpu_init();
    CHECK(cpu != NULL, "cpu backend");
    tg_backend_cpu_set_n_threads(cpu, 2);
    struct tg_sched * s = tg_sched_new(&cpu, 1, 64);
    struct net n;
    CHECK(net_build(&n, cpu, true), "network built: %s", tg_last_error());
    struct tg_trace_options opt = tg_trace_default_options();
    opt.contents = "mm-*,op=CONT";
    struct tg_trace_recorder * rec = tg_trace_attach(s, path, &opt);
    CHECK(rec != NULL, "recorder attached: %s", rec ? "ok" : tg_last_error());
    CHECK(net_run(&n, s, 0.3f) == TG_OK, "first computation");
    int32_t ids[4] = { 1, 5, 9, 13 };
    tg_trace_mark_decode(rec, 4, 0, 0, ids);
    CHECK(net_run(&n, s, 0.7f) == TG_OK, "second computation");
    float o[32 * 8];
    CHECK(tg_backend_tensor_get(n.out, o, 0, sizeof(o)) == TG_OK, "host read of out");
    struct tg_context_params np = { 1 << 12, NULL, true };
    struct tg_context * nctx = tg_context_new(np);
    struct tg_tensor * lost = tg_set_name(tg_new_tensor_1d(nctx, TG_TYPE_F32, 4), "never_allocated");
    CHECK(tg_backend_tensor_get(lost, o, 0, 16) == TG_ERR_NO_BUFFER, "read of a tensor with no memory refused");
    tg_context_free(nctx);
    struct tg_trace_recorder_stats st;
    tg_trace_recorder_get_stats(rec, &st);
    // two computations: each a begin and an end, and a begin and an end of a node at least
    CHECK(st.n_hooks >= 2 * (2 + 2) && st.hook_ns > 0 && st.node_ns > 0 && st.node_ns <= st.hook_ns,
          "recorder stats: %llu callbacks, %llu ns in all, %llu ns in node events", (unsigned long long) st.n_hooks,
          (unsigned long long) st.hook_ns, (unsigned long long) st.node_ns);
    // the net's one view that is not a plain copy of a node's bytes (mm_t-0, a transpose) is hashed
    CHECK(st.view_ns > 0 && st.view_ns <= st.node_ns, "recorder stats: %llu ns of the node time hashing views",
          (unsigned long long) st.view_ns);
    tg_trace_recorder_get_stats(NULL, &st);
    CHECK(st.n_hooks == 0 && st.hook_ns == 0 && st.view_ns == 0, "recorder stats of no recorder: zeros");
    CHECK(tg_trace_detach(rec) == TG_OK, "recorder detached, file closed");
    check_trace(path, &n);
    check_reuse(cpu);
    check_two_scheds(cpu);
    CHECK(tg_trace_attach(s, "/nonexistent-dir/x.tgt", NULL) == NULL && tg_last_status() == TG_ERR_IO,
          "attach to an uncreatable path fails cleanly: %s", tg_last_error());
    unlink(path);
    tg_sched_free(s);
    net_free(&n);
    tg_backend_free(cpu);
    return tg_check_finish("test_trace_record");
}
