// test_trace_hash_thread.c - the recorder's hashing thread gives the same
// trace as hashing in the callbacks: a traced generation on the tiny model
// (KV-cache views, nodes whose memory the allocator hands on within the
// graph) and a chain of large nodes reusing each other's memory, recorded
// with hash_thread 0 (in the callbacks), 1 (the thread) and 2 (the thread
// held back until the recorder needs an item, so every node about to be
// overwritten is set aside or waited for), with 1 and 2 engine threads.
// Every EVAL (flags, hash, summary: with the thread, written as an EVAL and
// a RESULT that the reader merges) and SKETCH must be bit for bit the same,
// in the same order. With 2 engine threads and the hashes in the callbacks,
// the node events may come late (tg_observer.node_events_deferrable_on):
// generation's products of the same activations are computed as one group,
// each with its events at its own place (the same trace bits, times the
// group's cut by weight bytes); with the thread reading nodes' memory they
// are not grouped. And
// the reader's merge of RESULT records on its own.
#include "check.h"
#include "cpu/cpu-impl.h"
#include "tg/backend.h"
#include "tg/llama.h"
#include "tg/sched.h"
#include "tg/trace-read.h"
#include "tg/trace.h"
#include "trace_evals.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct run { struct trace_ev * ev; int n; struct tg_trace_recorder_stats st; uint64_t grouped; uint64_t reads[64]; int n_reads; };

// Every EVAL of the trace at path (and its SKETCH), in file order.
static bool read_evals(const char * path, struct run * out) {
    out->ev = trace_read_evals(path, &out->n);
    return out->ev != NULL;
}

// Evals of b that differ from a's (times and buffer ids aside: each run has its own buffers),
// printing the first few.
static int compare(const struct run * a, const struct run * b, const char * what) {
    if (a->n != b->n) { fprintf(stderr, "%s: %d evals against %d\n", what, b->n, a->n); return a->n > b->n ? a->n : b->n; }
    int bad = 0;
    for (int i = 0; i < a->n; i++) {
        const struct tg_trace_eval * x = &a->ev[i].e, * y = &b->ev[i].e;
        bool same = x->graph_id == y->graph_id && x->compute_seq == y->compute_seq && x->node == y->node &&
                    x->flags == y->flags && x->hash == y->hash && !memcmp(&x->sum, &y->sum, sizeof(x->sum)) &&
                    x->offset == y->offset && x->nbytes == y->nbytes &&
                    a->ev[i].has_sketch == b->ev[i].has_sketch &&
                    (!a->ev[i].has_sketch || !memcmp(a->ev[i].sk.v, b->ev[i].sk.v, sizeof(a->ev[i].sk.v)));
        if (!same && bad++ < 3)
            fprintf(stderr, "%s: eval %d (graph %u node %d): hash %016llx flags %x / %016llx flags %x\n", what, i,
                    x->graph_id, x->node, (unsigned long long) x->hash, x->flags, (unsigned long long) y->hash, y->flags);
    }
    return bad;
}

// ---- a traced generation on the tiny model ------------------------------------------------------

static bool generate(struct tg_llama_model * model, int n_threads, int mode, const char * path, struct run * out) {
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = n_threads;
    struct tg_llama_context * ctx = tg_llama_context_new(model, &cp);
    struct tg_trace_options opt = tg_trace_default_options();
    opt.hash_thread = mode;
    struct tg_trace_recorder * rec = ctx ? tg_trace_attach(tg_llama_context_sched(ctx), path, &opt) : NULL;
    bool ok = rec != NULL;
    int32_t prompt[12] = { 1, 15043, 3186, 29991, 450, 4996, 17354, 1701, 29916, 432, 17204, 975 };
    ok = ok && tg_llama_decode(ctx, prompt, 12, 0) == TG_OK;
    for (int k = 0; ok && k < 8; k++) {
        int32_t tok = 100 + 37 * k;
        ok = tg_llama_decode(ctx, &tok, 1, 12 + k) == TG_OK;
    }
    tg_trace_recorder_get_stats(rec, &out->st);
    ok = tg_trace_detach(rec) == TG_OK && ok;
    tg_llama_context_free(ctx);
    struct tg_trace * tr = ok ? tg_trace_open(path) : NULL;   // the host reads' hashes (the logits)
    for (int i = 0; tr && i < tg_trace_n_hosts(tr) && out->n_reads < 64; i++) {
        struct tg_trace_host h;
        if (tg_trace_get_host(tr, i, &h) && h.kind == TG_TRACE_HOST_READ) out->reads[out->n_reads++] = h.hash;
    }
    if (tr) tg_trace_close(tr);
    return ok && read_evals(path, out);
}

// The end of a run on a scheduler of its own: the recorder's stats, the
// trace closed and read back; everything freed.
static bool end_run(struct tg_trace_recorder * rec, struct tg_sched * s, struct tg_context * ctx, struct tg_backend * cpu,
                    bool ok, const char * path, struct run * out) {
    if (rec) tg_trace_recorder_get_stats(rec, &out->st);
    ok = tg_trace_detach(rec) == TG_OK && ok;
    tg_sched_free(s);
    tg_context_free(ctx);
    tg_backend_free(cpu);
    return ok && read_evals(path, out);
}

// ---- large nodes handing their memory on -----------------------------------------------------

// x [n] -> a = 2x -> b = a + x -> c = 3b -> d = c * a -> e = d + b -> out = 0.5e, each
// 4 MiB (more than the thread's copy arena takes at once: waited for, not
// copied), the allocator reusing dead nodes' memory; computed 3 times.
static bool chain(int mode, const char * path, struct run * out) {
    const int64_t n = 1 << 20;
    struct tg_backend * cpu = tg_backend_cpu_init();
    if (!cpu || tg_backend_cpu_set_n_threads(cpu, 1) != TG_OK) { tg_backend_free(cpu); return false; }
    struct tg_sched * s = tg_sched_new(&cpu, 1, 64);
    struct tg_context_params p = { 1 << 20, NULL, true };
    struct tg_context * ctx = tg_context_new(p);
    struct tg_tensor * x = tg_set_name(tg_new_tensor_1d(ctx, TG_TYPE_F32, n), "x");
    tg_set_input(x);
    struct tg_tensor * a = tg_set_name(tg_scale(ctx, x, 2.0f), "a");
    struct tg_tensor * b = tg_set_name(tg_add(ctx, a, x), "b");
    struct tg_tensor * c = tg_set_name(tg_scale(ctx, b, 3.0f), "c");
    struct tg_tensor * d = tg_set_name(tg_mul(ctx, c, a), "d");
    struct tg_tensor * e = tg_set_name(tg_add(ctx, d, b), "e");
    struct tg_tensor * o = tg_set_name(tg_scale(ctx, e, 0.5f), "out");
    tg_set_output(o);
    struct tg_graph * g = tg_graph_new(ctx, 64);
    struct tg_trace_options opt = tg_trace_default_options();
    opt.hash_thread = mode;
    struct tg_trace_recorder * rec = s && g && tg_graph_build_forward(g, o) == TG_OK ? tg_trace_attach(s, path, &opt) : NULL;
    bool ok = rec != NULL;
    float * xv = malloc((size_t) n * sizeof(float));
    ok = ok && xv;
    for (int k = 0; ok && k < 3; k++) {
        for (int64_t i = 0; i < n; i++) xv[i] = sinf((float) i * 0.001f + (float) k);
        tg_sched_reset(s);
        ok = tg_sched_alloc_graph(s, g) == TG_OK && tg_backend_tensor_set(x, xv, 0, (size_t) n * sizeof(float)) == TG_OK &&
             tg_sched_graph_compute(s, g) == TG_OK;
    }
    free(xv);
    return end_run(rec, s, ctx, cpu, ok, path, out);
}

// ---- products of the same activations, grouped -------------------------------------------------

// Generation's shape of Q, K and V: three products of one activation column
// with a node on Q's result between Q and K (K joins Q's group across it), on
// 2 engine threads; mode 0 / 1 as above, `grouping` off: one at a time.
static bool products(int mode, bool grouping, const char * path, struct run * out) {
    const int64_t k = 512, rows[3] = { 256, 128, 192 };   // each more than a thread's share of work
    struct tg_backend * cpu = tg_backend_cpu_init();
    if (!cpu || tg_backend_cpu_set_n_threads(cpu, 2) != TG_OK) { tg_backend_free(cpu); return false; }
    struct tg_sched * s = tg_sched_new(&cpu, 1, 64);
    struct tg_context_params p = { 1 << 20, NULL, false };
    struct tg_context * ctx = tg_context_new(p);
    struct tg_tensor * w[3], * x = ctx ? tg_new_tensor_2d(ctx, TG_TYPE_F32, k, 1) : NULL;
    uint32_t seed = 7;
    float row[512];
    for (int i = 0; i < 3; i++) {   // Q8_0 weights
        w[i] = x ? tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, k, rows[i]) : NULL;
        for (int64_t r = 0; w[i] && r < rows[i]; r++) {
            for (int64_t j = 0; j < k; j++) {
                seed = seed * 1664525u + 1013904223u;
                row[j] = (float) (seed >> 8) / 16777216.0f - 0.5f;
            }
            tg_quantize_row_q8_0(row, (tg_block_q8_0 *) ((char *) w[i]->data + r * w[i]->nb[1]), k);
        }
    }
    for (int64_t j = 0; x && j < k; j++) ((float *) x->data)[j] = sinf((float) j);
    struct tg_tensor * q = w[2] ? tg_set_name(tg_mul_mat(ctx, w[0], x), "Qcur") : NULL;
    struct tg_tensor * qs = q ? tg_set_name(tg_scale(ctx, q, 0.5f), "Qscaled") : NULL;
    struct tg_tensor * kc = qs ? tg_set_name(tg_mul_mat(ctx, w[1], x), "Kcur") : NULL;
    struct tg_tensor * vc = kc ? tg_set_name(tg_mul_mat(ctx, w[2], x), "Vcur") : NULL;
    struct tg_graph * g = vc ? tg_graph_new(ctx, 64) : NULL;
    bool ok = g && tg_graph_build_forward(g, qs) == TG_OK && tg_graph_build_forward(g, kc) == TG_OK &&
              tg_graph_build_forward(g, vc) == TG_OK;
    struct tg_trace_options opt = tg_trace_default_options();
    opt.hash_thread = mode;
    struct tg_trace_recorder * rec = ok && s ? tg_trace_attach(s, path, &opt) : NULL;
    ok = rec != NULL;
    tg_cpu_set_mm_grouping(grouping);
    const uint64_t g0 = tg_cpu_mm_grouped_count();
    for (int r = 0; ok && r < 3; r++) {
        tg_sched_reset(s);
        ok = tg_sched_alloc_graph(s, g) == TG_OK && tg_sched_graph_compute(s, g) == TG_OK;
    }
    out->grouped = tg_cpu_mm_grouped_count() - g0;
    tg_cpu_set_mm_grouping(true);
    return end_run(rec, s, ctx, cpu, ok, path, out);
}

// RESULT records (format 1.4) by hand: merged into the EVAL they name, which
// then reads as if written whole; an EVAL without one keeps PENDING; a
// RESULT naming no EVAL changes nothing.
static void check_result_merge(const char * path) {
    struct tg_trace_writer * w = tg_trace_writer_open(path);
    CHECK(w != NULL, "writer opens: %s", w ? path : tg_last_error());
    if (!w) return;
    struct tg_trace_eval e0 = { .graph_id = 1, .compute_seq = 0, .node = 0, .flags = TG_TRACE_EVAL_TIME | TG_TRACE_EVAL_PENDING,
                                .t_begin_ns = 10, .t_end_ns = 20, .nbytes = 16 };
    struct tg_trace_eval e1 = e0;
    e1.node = 1;
    struct tg_trace_result r0 = { .graph_id = 1, .compute_seq = 0, .node = 0,
                                  .flags = TG_TRACE_EVAL_HASH | TG_TRACE_EVAL_SUMMARY, .hash = 0x1234abcdull,
                                  .sum = { .min = -1, .max = 2, .mean = 0.5, .rms = 1.25, .n_elem = 4 } };
    struct tg_trace_result r7 = r0;
    r7.node = 7;
    r7.hash = 99;
    bool ok = tg_trace_write_eval(w, &e0) == TG_OK && tg_trace_write_eval(w, &e1) == TG_OK &&
              tg_trace_write_result(w, &r7) == TG_OK && tg_trace_write_result(w, &r0) == TG_OK;
    ok = tg_trace_writer_close(w) == TG_OK && ok;
    CHECK(ok, "two EVALs and two RESULTs written");
    struct tg_trace * tr = tg_trace_open(path);
    struct tg_trace_eval a, b;
    bool got = tr && tg_trace_n_evals(tr) == 2 && tg_trace_get_eval(tr, 0, &a) && tg_trace_get_eval(tr, 1, &b);
    CHECK(got, "the trace reads back with 2 evals");
    if (got) {
        CHECK(a.flags == (TG_TRACE_EVAL_TIME | TG_TRACE_EVAL_HASH | TG_TRACE_EVAL_SUMMARY) && a.hash == 0x1234abcdull &&
              a.sum.rms == 1.25 && a.sum.n_elem == 4 && a.t_end_ns == 20,
              "node 0: its RESULT merged (flags %#x, hash %llx)", a.flags, (unsigned long long) a.hash);
        CHECK(b.flags == (TG_TRACE_EVAL_TIME | TG_TRACE_EVAL_PENDING) && b.hash == 0,
              "node 1: no RESULT, still pending, no hash (flags %#x)", b.flags);
        CHECK(tg_trace_find_eval(tr, 1, 7, 0) < 0, "the RESULT of node 7 makes no eval");
    }
    tg_trace_close(tr);
    unlink(path);
}

int main(void) {
    unsetenv("TGDB_TRACE_HASH_THREAD");   // it would override the modes compared here
    char model_path[1024], path[256];
    snprintf(model_path, sizeof(model_path), "%s/tiny-f32.gguf", TG_TEST_DATA);
    snprintf(path, sizeof(path), "test_trace_hash_thread.%d.tgt", (int) getpid());
    struct tg_llama_model * model = tg_llama_model_load(model_path, NULL);
    CHECK(model != NULL, "model loaded: %s", model ? model_path : tg_last_error());
    if (!model) return tg_check_finish("test_trace_hash_thread");
    check_result_merge(path);
    for (int threads = 1; threads <= 2; threads++) {
        struct run r[3] = { 0 };
        bool ok = true;
        for (int mode = 0; mode < 3; mode++) ok = generate(model, threads, mode, path, &r[mode]) && ok;
        CHECK(ok, "%d thread(s): traced generation with hash_thread 0, 1 and 2", threads);
        CHECK(r[0].n > 200 && r[0].st.thread_ns == 0 && r[1].st.thread_ns > 0 && r[2].st.thread_ns > 0,
              "%d thread(s): %d evals; the thread hashed in modes 1 and 2 only (%llu, %llu, %llu ns)", threads, r[0].n,
              (unsigned long long) r[0].st.thread_ns, (unsigned long long) r[1].st.thread_ns,
              (unsigned long long) r[2].st.thread_ns);
        int bad1 = compare(&r[0], &r[1], "thread"), bad2 = compare(&r[0], &r[2], "held thread");
        CHECK(bad1 == 0 && bad2 == 0, "%d thread(s): every eval and sketch the same bits as hashed in the callbacks "
              "(differing: %d with the thread, %d held back)", threads, bad1, bad2);
        bool reads_same = r[0].n_reads >= 9;   // a read of the logits a token: from the bytes in mode 0, the
        for (int mode = 1; mode < 3; mode++)    // last node's hash with the thread
            reads_same = reads_same && r[mode].n_reads == r[0].n_reads &&
                         !memcmp(r[mode].reads, r[0].reads, sizeof(uint64_t) * (size_t) r[0].n_reads);
        CHECK(reads_same, "%d thread(s): the host reads' hashes the same in every mode (%d, %d, %d reads)", threads,
              r[0].n_reads, r[1].n_reads, r[2].n_reads);
        CHECK(r[2].st.n_set_aside > 20, "%d thread(s): held back, %llu nodes were set aside before being overwritten",
              threads, (unsigned long long) r[2].st.n_set_aside);
        for (int mode = 0; mode < 3; mode++) free(r[mode].ev);
    }
    tg_llama_model_free(model);

    // grouped under the recorder's node events (hashes in the callbacks): the
    // same trace bits as one product at a time and as with the thread (which
    // keeps them ungrouped); each product's events at its place, K and V with
    // Q's group's begin and end
    struct run pr[3] = { 0 };
    bool pok = products(0, true, path, &pr[0]) && products(0, false, path, &pr[1]) && products(1, true, path, &pr[2]);
    int same_time = 0;   // per computation, evals Qcur, Qscaled, Kcur, Vcur
    for (int c = 0; pok && pr[0].n == 3 * 4 && c < 3; c++) {
        struct tg_trace_eval e[4];
        for (int i = 0; i < 4; i++) e[i] = pr[0].ev[4 * c + i].e;
        bool all_timed = true;
        for (int i = 0; i < 4; i++) all_timed &= (e[i].flags & TG_TRACE_EVAL_TIME) != 0;
        // shares of the group's time by weight bytes (Q 256 rows, K 128, V 192 of the same width), one after another
        const double dk = (double) (e[2].t_end_ns - e[2].t_begin_ns), dv = (double) (e[3].t_end_ns - e[3].t_begin_ns);
        same_time += all_timed && e[2].t_begin_ns == e[0].t_end_ns && e[3].t_begin_ns == e[2].t_end_ns &&
                     e[0].t_begin_ns <= e[0].t_end_ns && e[3].t_end_ns <= e[1].t_begin_ns && dk > 0 && dv > 0 &&
                     fabs(dv / dk - 1.5) < 0.01 && e[0].t_end_ns > e[0].t_begin_ns;
    }
    CHECK(pok && pr[0].n == 3 * 4 && pr[0].grouped == 3 * 3 && pr[1].grouped == 0 && pr[2].grouped == 0,
          "Q, K, V on 2 threads: grouped with the recorder's node events when it hashes in its callbacks (%llu products), "
          "not with grouping off (%llu) nor beside its thread (%llu); %d evals", (unsigned long long) pr[0].grouped,
          (unsigned long long) pr[1].grouped, (unsigned long long) pr[2].grouped, pr[0].n);
    int pbad1 = compare(&pr[1], &pr[0], "grouped"), pbad2 = compare(&pr[2], &pr[0], "grouped, thread");
    CHECK(pok && pbad1 == 0 && pbad2 == 0 && same_time == 3,
          "Q, K, V grouped: every eval and sketch the bits of one product at a time (differing: %d, and %d against the "
          "thread's); Q, K and V one after another in shares of their group's time by weight bytes, before Qscaled (%d of 3)",
          pbad1, pbad2, same_time);
    for (int i = 0; i < 3; i++) free(pr[i].ev);

    struct run c[3] = { 0 };
    bool ok = true;
    for (int mode = 0; mode < 3; mode++) ok = chain(mode, path, &c[mode]) && ok;
    CHECK(ok && c[0].n == 3 * 6, "4 MiB chain: computed 3 times in each mode (%d evals)", c[0].n);
    int bad1 = compare(&c[0], &c[1], "chain, thread"), bad2 = compare(&c[0], &c[2], "chain, held thread");
    CHECK(bad1 == 0 && bad2 == 0, "4 MiB chain: the same evals and sketches in every mode (differing: %d, %d)", bad1, bad2);
    CHECK(c[2].st.wait_ns > 0 && c[2].st.n_set_aside == 0,
          "4 MiB chain, held back: nodes too large to set aside were waited for (%.3f ms waiting, %llu set aside)",
          (double) c[2].st.wait_ns / 1e6, (unsigned long long) c[2].st.n_set_aside);
    for (int mode = 0; mode < 3; mode++) free(c[mode].ev);
    unlink(path);
    return tg_check_finish("test_trace_hash_thread");
}
