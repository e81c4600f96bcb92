// bench_decode_ab.c - two settings of the engine compared token by token in
// one process: a model decoded under setting A and under setting B in turn,
// each token (or prompt) timed, the order of the pair swapped every time.
// On a shared host, runs in separate processes (tgdb bench, llama-bench) move
// by 10-20% between minutes with the other tenants' memory traffic; here
// both settings see the same moments, so differences of 1-5% show.
//
//   repack    the model loaded twice: packed weight copies off (A) and on
//             (B) (tg_llama_model_params.repack), a context each. The two
//             read different memory, placed anew by each process, and the
//             ratio moves between processes by several percent (the 100m
//             Q4_0 model: 0.89 .. 1.06): run it a few times
//   grouping  one model and context: generation's products of the same
//             activations one by one (A) and as one list (B)
//             (tg_cpu_set_mm_grouping)
//   fa        one model, two contexts at the same depth: attention unfused
//             (kq, kq_soft_max, kqv nodes; A) and fused (FLASH_ATTN_EXT; B);
//             -fa is ignored
//   trace     one model, two contexts at the same depth: untraced (A) and
//             traced (B: a recorder on its scheduler with the default
//             options, hashes, summaries and sketches of every node, into
//             a file in /tmp removed at the end): the tracing overhead a
//             token, both contexts seeing the same moments of the host;
//             TGDB_TRACE_HASH (all, computed, none) and
//             TGDB_TRACE_HASH_THREAD choose as for any traced program
//   hooks     as trace, B with an observer whose node callbacks do nothing
//             (the engine's cost of calling out between nodes; -late: its
//             node events may come late, as a trace recorder's may when it
//             hashes in its callbacks, letting the CPU group products)
//
// Prints each setting's median, quartiles and mean time per token (or per
// prompt, with -p), tokens/s at the median, and in how many pairs B was
// faster.
//
// usage: bench_decode_ab MODEL repack|grouping|fa|trace|hooks [-d DEPTH (64)] [-n PAIRS (300)] [-late]
//                        [-t THREADS (2)] [-fa on|off (on)] [-p PROMPT_TOKENS (0: generation;
//                        N: prompts of N tokens from an empty cache)]
#include "cpu/cpu-impl.h"
#include "tg/core.h"
#include "tg/llama.h"
#include "tg/observe.h"
#include "tg/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmp_double(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void null_node(const struct tg_obs_node_event * ev, void * user) { (void) ev; (void) user; }

static int usage(void) {
    fprintf(stderr, "usage: bench_decode_ab MODEL repack|grouping|fa|trace|hooks [-d DEPTH (64)] [-n PAIRS (300)] [-t THREADS (2)] "
                    "[-fa on|off (on)] [-p PROMPT_TOKENS (0: generation)] [-late]\n");
    return 2;
}

// A context on model m with the cache filled to `depth` tokens (untimed).
static struct tg_llama_context * open_ctx(struct tg_llama_model * m, int n_ctx, int nth, bool fa, int depth) {
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = nth;
    cp.flash_attn = fa ? TG_FLASH_ATTN_ON : TG_FLASH_ATTN_OFF;
    struct tg_llama_context * c = tg_llama_context_new(m, &cp);
    if (!c) return NULL;
    const int32_t n_vocab = tg_llama_model_hparams(m)->n_vocab;
    int32_t batch[256];
    for (int p0 = 0; p0 < depth; p0 += 256) {
        const int n = depth - p0 < 256 ? depth - p0 : 256;
        for (int i = 0; i < n; i++) batch[i] = (int32_t) ((100 + 7 * (p0 + i)) % n_vocab);
        if (tg_llama_decode(c, batch, n, p0) != TG_OK) { tg_llama_context_free(c); return NULL; }
    }
    return c;
}

int main(int argc, char ** argv) {
    if (argc < 3) return usage();
    const char * path = argv[1], * what = argv[2];
    int depth = -1, pairs = 300, nth = 2, prompt = 0;   // depth: 64 for generation unless -d
    bool fa = true, late = false;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "-d") && i + 1 < argc) depth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) nth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) prompt = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-fa") && i + 1 < argc) {
            const char * v = argv[++i];
            if (strcmp(v, "on") && strcmp(v, "off")) return usage();
            fa = !strcmp(v, "on");
        } else if (!strcmp(argv[i], "-late")) late = true;
        else return usage();
    }
    const bool repack = !strcmp(what, "repack"), fa_ab = !strcmp(what, "fa"), trace = !strcmp(what, "trace");
    const bool hooks = !strcmp(what, "hooks");
    const bool two_ctx = repack || fa_ab || trace || hooks;   // a context per setting (else one, the setting switched)
    if (!repack && !fa_ab && !trace && !hooks && strcmp(what, "grouping")) return usage();
    if (prompt && depth > 0) { fprintf(stderr, "bench_decode_ab: -p decodes prompts from an empty cache: no -d with it\n"); return 2; }
    if (depth == -1) depth = prompt ? 0 : 64;
    if (depth < 0 || depth > 65536 || pairs < 4 || pairs > 100000 || nth < 1 || nth > 512 || prompt < 0 || prompt > 512) {
        fprintf(stderr, "bench_decode_ab: -d 0..65536, -n 4..100000, -t 1..512, -p 0..512\n");
        return 2;
    }
    const int n_ctx = prompt ? (prompt + 15) / 16 * 16 : depth + 2 * (pairs + 4) + 16;
    struct tg_llama_model * m[2] = { NULL, NULL };
    struct tg_llama_context * c[2] = { NULL, NULL };
    int packed[2] = { 0, 0 };
    for (int v = 0; v < (two_ctx ? 2 : 1); v++) {
        struct tg_llama_model_params mp = tg_llama_model_default_params();
        mp.repack = repack ? (v ? TG_LLAMA_REPACK_ON : TG_LLAMA_REPACK_OFF) : TG_LLAMA_REPACK_AUTO;
        m[v] = (fa_ab || trace || hooks) && v ? m[0] : tg_llama_model_load(path, &mp);
        c[v] = m[v] ? open_ctx(m[v], n_ctx, nth, fa_ab ? v == 1 : fa, depth) : NULL;
        if (!c[v]) { fprintf(stderr, "bench_decode_ab: %s: %s\n", path, tg_last_error()); return 1; }
        packed[v] = tg_llama_model_n_packed(m[v], NULL);
    }
    if (!two_ctx) { m[1] = m[0]; c[1] = c[0]; }
    char tpath[64] = "";
    struct tg_trace_recorder * rec = NULL;
    if (hooks) {   // after the cache is filled, as the recorder
        const struct tg_observer nob = { .on_node_begin = null_node, .on_node_end = null_node, .node_events_deferrable = late };
        if (tg_sched_add_observer(tg_llama_context_sched(c[1]), &nob) != TG_OK) {
            fprintf(stderr, "bench_decode_ab: observer: %s\n", tg_last_error());
            return 1;
        }
    }
    if (trace) {   // attached after the cache is filled: the measured tokens only
        snprintf(tpath, sizeof tpath, "/tmp/bench_decode_ab-%d.tgt", (int) getpid());
        struct tg_trace_options o = tg_trace_default_options();   // TGDB_TRACE_HASH as for a traced program
        const char * hm = getenv("TGDB_TRACE_HASH");
        if (hm && *hm && !tg_trace_set_hash_mode(&o, hm)) {
            fprintf(stderr, "bench_decode_ab: TGDB_TRACE_HASH=%s: expected all, computed or none\n", hm);
            return 2;
        }
        rec = tg_trace_attach(tg_llama_context_sched(c[1]), tpath, &o);
        if (!rec) { fprintf(stderr, "bench_decode_ab: trace %s: %s\n", tpath, tg_last_error()); return 1; }
    }
    const int32_t n_vocab = tg_llama_model_hparams(m[0])->n_vocab;
    double * t[2] = { malloc(sizeof(double) * (size_t) pairs), malloc(sizeof(double) * (size_t) pairs) };
    int32_t * toks = malloc(sizeof(int32_t) * (size_t) (prompt ? prompt : 1));
    if (!t[0] || !t[1] || !toks) { fprintf(stderr, "bench_decode_ab: out of memory\n"); return 1; }
    int b_faster = 0, pos = depth;
    fprintf(stderr, "bench_decode_ab: %d pairs...\n", pairs);
    for (int i = -4; i < pairs; i++) {   // 4 pairs of warm-up
        double dt[2];
        for (int o = 0; o < 2; o++) {
            const int v = (i & 1) ? 1 - o : o;   // A first on even pairs, B first on odd ones
            if (!two_ctx) tg_cpu_set_mm_grouping(v == 1);
            double t0;
            enum tg_status st;
            if (prompt) {
                for (int k = 0; k < prompt; k++) toks[k] = (int32_t) ((50 + 7 * k + i) % n_vocab);
                tg_llama_kv_clear(c[v]);
                t0 = now_s();
                st = tg_llama_decode(c[v], toks, prompt, 0);
            } else {
                toks[0] = (int32_t) ((300 + 13 * (i + 4)) % n_vocab);
                // grouping: one context, its two tokens of a pair at consecutive positions
                const int p = two_ctx ? pos : pos + o;
                t0 = now_s();
                st = tg_llama_decode(c[v], toks, 1, p);
            }
            dt[v] = now_s() - t0;
            if (st != TG_OK) { fprintf(stderr, "bench_decode_ab: decode: %s\n", tg_last_error()); return 1; }
        }
        pos += two_ctx || prompt ? 1 : 2;
        if (i < 0) continue;
        t[0][i] = dt[0];
        t[1][i] = dt[1];
        b_faster += dt[1] < dt[0];
    }
    tg_cpu_set_mm_grouping(true);
    static const char * names[5][2] = { { "repack off", "repack on" }, { "grouping off", "grouping on" },
                                        { "fa off", "fa on" }, { "untraced", "traced" }, { "no observer", "node hooks" } };
    const int w = repack ? 0 : fa_ab ? 2 : trace ? 3 : hooks ? 4 : 1;
    struct tg_trace_recorder_stats rs = { 0 };
    if (rec) {
        tg_trace_recorder_get_stats(rec, &rs);
        tg_trace_detach(rec);
        unlink(tpath);
    }
    printf("%s, %s, %d thread(s), -fa %s, %s at depth %d, %d pairs alternating in one process",
           path, tg_cpu_simd_name(), nth, fa_ab ? "off (A) / on (B)" : fa ? "on" : "off",
           prompt ? "prompts" : "generation", depth, pairs);
    if (repack) printf(" (packed matrices: %d / %d)", packed[0], packed[1]);
    if (hooks) printf(" (node events %s)", late ? "may come late" : "on time");
    printf("\n%-14s %10s %10s %10s %10s %10s\n", "setting", "median ms", "q1", "q3", "mean", "tok/s");
    for (int v = 0; v < 2; v++) {
        qsort(t[v], (size_t) pairs, sizeof(double), cmp_double);
        double sum = 0;
        for (int i = 0; i < pairs; i++) sum += t[v][i];
        const double med = t[v][pairs / 2];
        printf("%-14s %10.3f %10.3f %10.3f %10.3f %10.1f\n", names[w][v], med * 1e3, t[v][pairs / 4] * 1e3,
               t[v][3 * pairs / 4] * 1e3, sum / pairs * 1e3, (prompt ? prompt : 1) / med);
    }
    printf("B (%s) faster in %d of %d pairs; median ratio B/A %.3f\n", names[w][1], b_faster, pairs,
           t[1][pairs / 2] / t[0][pairs / 2]);
    if (trace)   // warm-up tokens included: the recorder's totals are since it was attached
        printf("tracing overhead (median B/A - 1): %.1f%%; a traced token: %.3f ms in the recorder's callbacks (%.3f ms of "
               "them waiting for its hashing thread, %.1f nodes copied aside), %.3f ms hashing view nodes (either thread), "
               "%.3f ms on the recorder's hashing thread\n", 100.0 * (t[1][pairs / 2] / t[0][pairs / 2] - 1.0),
               (double) rs.hook_ns / 1e6 / (pairs + 4), (double) rs.wait_ns / 1e6 / (pairs + 4),
               (double) rs.n_set_aside / (pairs + 4), (double) rs.view_ns / 1e6 / (pairs + 4),
               (double) rs.thread_ns / 1e6 / (pairs + 4));
    if (trace)
        printf("trace file: %.1f KiB a token; %.3f ms a token growing it and faulting its pages in (in the callbacks, "
               "or on the hashing thread)\n", (double) rs.bytes / 1024.0 / (pairs + 4), (double) rs.grow_ns / 1e6 / (pairs + 4));
    if (trace && (rs.n_views_memo || rs.n_views_scratch))
        printf("KV-cache view digests: %llu brought up to date from the elements stored, %llu from every element\n",
               (unsigned long long) rs.n_views_memo, (unsigned long long) rs.n_views_scratch);
    // weights and copies not on transparent huge pages (the host short of
    // them) read slower, which can favour either side: say how many were
    FILE * f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long anon = -1, huge = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Anonymous:", 10)) anon = atol(line + 10);
        else if (!strncmp(line, "AnonHugePages:", 14)) huge = atol(line + 14);
    }
    if (f) fclose(f);
    if (anon > 0 && huge >= 0)
        printf("anonymous memory on huge pages: %.1f of %.1f MiB\n", (double) huge / 1024, (double) anon / 1024);
    free(t[0]); free(t[1]); free(toks);
    for (int v = 0; v < (two_ctx ? 2 : 1); v++) tg_llama_context_free(c[v]);
    tg_llama_model_free(m[0]);
    if (repack) tg_llama_model_free(m[1]);
    return 0;
}
