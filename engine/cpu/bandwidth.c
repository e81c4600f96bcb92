// bandwidth.c - this host's memory read bandwidth, measured: n threads each
// sum their share of a buffer (64-bit integer sums, 128 bytes per step in four
// independent vector sums), the figure a read-only stream such as a model's
// weights in generation can reach. Used by `tgdb bench` (CPU runs) and
// bench_mul_mat.
#include "tg/cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmp_double(const void * x, const void * y) {
    double a = *(const double *) x, b = *(const double *) y;
    return a < b ? -1 : a > b;
}

// The start gate: the workers wait until every thread exists (go) or one
// could not be created (stop); only then do they meet at the pass barrier,
// whose count needs all of them.
struct bw_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;               // 0 waiting, 1 go, -1 stop
};

struct bw_job {
    const uint64_t * p;      // [n] this thread's share
    size_t n;                // uint64 words, a multiple of 16
    int passes;              // including the warm-up pass
    struct bw_gate * gate;
    pthread_barrier_t * bar;
    uint64_t sum;
    double * t0, * t1;       // [passes] this thread's start and end of each pass
};

typedef uint64_t tg_bw_v4u __attribute__((vector_size(32)));

static void * bw_worker(void * arg) {
    struct bw_job * j = arg;
    pthread_mutex_lock(&j->gate->mu);
    while (j->gate->state == 0) pthread_cond_wait(&j->gate->cv, &j->gate->mu);
    const int state = j->gate->state;
    pthread_mutex_unlock(&j->gate->mu);
    if (state < 0) return NULL;
    tg_bw_v4u s0 = { 0 }, s1 = { 0 }, s2 = { 0 }, s3 = { 0 };
    for (int r = 0; r < j->passes; r++) {
        pthread_barrier_wait(j->bar);
        j->t0[r] = now_s();
        for (size_t i = 0; i + 16 <= j->n; i += 16) {   // 128 bytes per step, 4 independent sums
            tg_bw_v4u v0, v1, v2, v3;
            memcpy(&v0, j->p + i, 32);
            memcpy(&v1, j->p + i + 4, 32);
            memcpy(&v2, j->p + i + 8, 32);
            memcpy(&v3, j->p + i + 12, 32);
            s0 += v0; s1 += v1; s2 += v2; s3 += v3;
        }
        j->t1[r] = now_s();
        pthread_barrier_wait(j->bar);
    }
    tg_bw_v4u s = s0 + s1 + s2 + s3;
    j->sum = s[0] + s[1] + s[2] + s[3];
    return NULL;
}

static void gate_open(struct bw_gate * g, int state) {
    pthread_mutex_lock(&g->mu);
    g->state = state;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static volatile uint64_t g_bw_sink;   // the sums land here, so they are computed

// Runs the passes on nth threads over buf; fills secs[passes - 1] (the warm-up
// pass left out). TG_OK, or TG_ERR_INTERNAL when a thread cannot be created.
static enum tg_status run_passes(const uint64_t * buf, size_t per, int nth, int passes, double * times, double * secs) {
    pthread_t * th = malloc(sizeof *th * (size_t) nth);
    struct bw_job * jobs = malloc(sizeof *jobs * (size_t) nth);
    if (!th || !jobs) { free(th); free(jobs); return tg_error(TG_ERR_NOMEM, "tg_cpu_read_bandwidth: out of memory"); }
    struct bw_gate gate = { .state = 0 };
    pthread_barrier_t bar;
    pthread_mutex_init(&gate.mu, NULL);
    pthread_cond_init(&gate.cv, NULL);
    pthread_barrier_init(&bar, NULL, (unsigned) nth + 1);
    int created = 0;
    for (; created < nth; created++) {
        double * tt = times + 2 * (size_t) passes * (size_t) created;
        jobs[created] = (struct bw_job) { buf + per * (size_t) created, per, passes, &gate, &bar, 0, tt, tt + passes };
        if (pthread_create(&th[created], NULL, bw_worker, &jobs[created]) != 0) break;
    }
    const bool ok = created == nth;
    gate_open(&gate, ok ? 1 : -1);
    if (ok)
        for (int r = 0; r < passes; r++) {   // the first pass warms up
            pthread_barrier_wait(&bar);
            pthread_barrier_wait(&bar);
        }
    uint64_t sink = 0;
    for (int t = 0; t < created; t++) { pthread_join(th[t], NULL); sink += jobs[t].sum; }
    g_bw_sink = sink;
    // a pass lasts from the first thread's start to the last thread's end
    for (int r = 1; ok && r < passes; r++) {
        double a = jobs[0].t0[r], b = jobs[0].t1[r];
        for (int t = 1; t < nth; t++) {
            if (jobs[t].t0[r] < a) a = jobs[t].t0[r];
            if (jobs[t].t1[r] > b) b = jobs[t].t1[r];
        }
        secs[r - 1] = b - a;
    }
    pthread_barrier_destroy(&bar);
    pthread_cond_destroy(&gate.cv);
    pthread_mutex_destroy(&gate.mu);
    free(th);
    free(jobs);
    if (!ok) return tg_error(TG_ERR_INTERNAL, "tg_cpu_read_bandwidth: cannot create thread %d of %d", created + 1, nth);
    return TG_OK;
}

double tg_cpu_read_bandwidth(int n_threads, size_t bytes, int passes) {
    if (n_threads < 1 || passes < 1) {
        tg_error(TG_ERR_INVALID_ARG, "tg_cpu_read_bandwidth: %d threads, %d passes (each must be >= 1)", n_threads, passes);
        return 0;
    }
    const size_t words = bytes / 8;
    const size_t per = (words / (size_t) n_threads) & ~(size_t) 15;   // each thread's share, whole 128-byte steps
    if (per == 0) {
        tg_error(TG_ERR_INVALID_ARG, "tg_cpu_read_bandwidth: %zu bytes is under 128 bytes per thread (%d threads)", bytes,
                 n_threads);
        return 0;
    }
    // on 2 MiB pages where the system grants them, as the model's weights
    // and the engine's large buffers are (gguf.c, cpu-backend.c): with 4 KiB
    // pages the figure came out ~11% lower (32 against 36 GB/s, 2 threads)
    // and generation's weight traffic measured above it
    uint64_t * buf = NULL;
    const size_t alloc = (words * 8 + 63) / 64 * 64;
    if (bytes > SIZE_MAX / 2 || posix_memalign((void **) &buf, (size_t) 2 << 20, alloc) != 0) buf = NULL;
#ifdef MADV_HUGEPAGE
    else (void) madvise(buf, alloc, MADV_HUGEPAGE);
#endif
    double * times = malloc(sizeof(double) * 2 * (size_t) (passes + 1) * (size_t) n_threads);   // [nth][2][passes + 1]
    double * secs = malloc(sizeof(double) * (size_t) passes);
    double gbs = 0;
    if (!buf || !times || !secs) {
        tg_error(TG_ERR_NOMEM, "tg_cpu_read_bandwidth: cannot allocate %zu bytes", bytes);
    } else {
        for (size_t i = 0; i < words; i++) buf[i] = i;   // touched: the pages exist before the passes
        if (run_passes(buf, per, n_threads, passes + 1, times, secs) == TG_OK) {
            qsort(secs, (size_t) passes, sizeof(double), cmp_double);
            const double med = secs[passes / 2];
            gbs = med > 0 ? (double) (per * (size_t) n_threads * 8) / med * 1e-9 : 0;
            if (gbs <= 0) tg_error(TG_ERR_INTERNAL, "tg_cpu_read_bandwidth: a pass took no time");
        }
    }
    free(secs);
    free(times);
    free(buf);
    return gbs;
}
