// pool.c - persistent thread pool for the CPU backend.
//
// n_threads - 1 workers are created once; the calling thread is thread 0.
// Between graphs workers sleep on a condition variable. Inside a graph every
// thread walks the same node list (compute.c, tg_cpu_pool_run's job) and meets
// the others at barriers that spin briefly and then sleep on a futex, so an
// oversubscribed machine does not burn its cores.
#include "cpu/cpu-pool.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TG_PAUSE() _mm_pause()
#else
#define TG_PAUSE() ((void) 0)
#endif

// Pause iterations before a waiting thread sleeps (~50-200 us). Waits between
// nodes are short and frequent (a single-threaded node, an observer's hook);
// on virtual machines a futex sleep and wake-up costs more than that, and a
// shorter spin measured 10-15% slower 2-thread generation (bench_trace, none).
#define TG_SPIN_ITERS 4096
// With more threads than CPUs a waiting thread that spins keeps the CPU from
// the thread it waits for (until the kernel's time slice ends: milliseconds
// a node): it sleeps at once instead (tgdb bench, 100m Q4_0 on 2 CPUs with 4
// threads: tg32 50 -> 161 tok/s, pp64 575 -> 869; 2 threads: 301 and 972).
#define TG_SPIN_OVERSUB 0

// ---- barrier ----------------------------------------------------------------

static void futex_wait(atomic_int * addr, int val) {
#ifdef __linux__
    syscall(SYS_futex, (int *) addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
#else
    (void) addr; (void) val;
    sched_yield();
#endif
}

static void futex_wake_all(atomic_int * addr) {
#ifdef __linux__
    syscall(SYS_futex, (int *) addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void) addr;
#endif
}

// ---- shared hook work (tg_cpu_pool_parallel) ----------------------------------

// Claims and runs open tasks of the current round. Returns whether it ran any.
static bool help_run(struct tg_cpu_pool * pool) {
    uint64_t v = atomic_load_explicit(&pool->help_claim, memory_order_acquire);
    bool ran = false;
    while ((v >> 32) & 1) {   // a round is open
        int n = atomic_load_explicit(&pool->help_n, memory_order_relaxed);   // a stale n: the CAS below fails
        if ((int) (uint32_t) v >= n) break;
        if (!atomic_compare_exchange_weak_explicit(&pool->help_claim, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;   // v reloaded: another claim, or the round changed
        pool->help_fn((int) (uint32_t) v, pool->help_arg);
        atomic_fetch_add_explicit(&pool->help_done, 1, memory_order_release);
        ran = true;
        v = atomic_load_explicit(&pool->help_claim, memory_order_acquire);
    }
    return ran;
}

void tg_cpu_pool_parallel(struct tg_cpu_pool * pool, int n, void (*fn)(int i, void * arg), void * arg) {
    if (n <= 0) return;
    if (!pool || pool->run_threads <= 1 || n == 1 || pthread_mutex_trylock(&pool->busy) == 0) {
        // no graph running (busy was free: give it back), one thread, or one task
        if (pool && pool->run_threads > 1 && n > 1) pthread_mutex_unlock(&pool->busy);
        for (int i = 0; i < n; i++) fn(i, arg);
        return;
    }
    pool->help_fn = fn;
    pool->help_arg = arg;
    atomic_store_explicit(&pool->help_n, n, memory_order_relaxed);
    atomic_store_explicit(&pool->help_done, 0, memory_order_relaxed);
    uint64_t round = (atomic_load(&pool->help_claim) >> 32) + 1;   // odd: open
    atomic_store_explicit(&pool->help_claim, round << 32, memory_order_release);
    if (atomic_load(&pool->graph_bar.sleepers) > 0) futex_wake_all(&pool->graph_bar.phase);   // recruit sleepers too
    help_run(pool);
    // claimed tasks finish before the round closes: the waiting threads
    // never run a task of a closed round
    while (atomic_load_explicit(&pool->help_done, memory_order_acquire) < n) TG_PAUSE();
    atomic_store_explicit(&pool->help_claim, (round + 1) << 32, memory_order_release);
}

// The last thread to arrive runs `latch` (if any) before releasing the others.
// Waiting threads of the graph barrier (pool given) run shared hook tasks.
static void barrier_wait(struct tg_cpu_bar * b, int n, void (*latch)(struct tg_cpu_pool *), struct tg_cpu_pool * pool) {
    if (n <= 1) {
        if (latch) latch(pool);
        return;
    }
    int phase = atomic_load_explicit(&b->phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == n - 1) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        if (latch) latch(pool);
        atomic_fetch_add(&b->phase, 1);               // seq_cst: ordered before the sleepers load
        if (atomic_load(&b->sleepers) > 0) futex_wake_all(&b->phase);
        return;
    }
    for (int i = 0; i < b->spin; i++) {
        if (atomic_load_explicit(&b->phase, memory_order_acquire) != phase) return;
        if (pool && help_run(pool)) i = 0;   // thread 0 is busy in a hook: keep waiting awake
        TG_PAUSE();
    }
    atomic_fetch_add(&b->sleepers, 1);
    while (atomic_load(&b->phase) == phase) {
        futex_wait(&b->phase, phase);
        if (pool) help_run(pool);   // woken to share hook work (tg_cpu_pool_parallel)
    }
    atomic_fetch_sub(&b->sleepers, 1);
}

void tg_cpu_barrier_wait(struct tg_cpu_bar * b, int n) {
    barrier_wait(b, n, NULL, NULL);
}

// Stop requests made before a sync (by thread 0 or a kernel error) become
// visible to every thread after it, all at the same sync; the next node's
// work units are numbered from 0 again.
static void latch_stop(struct tg_cpu_pool * pool) {
    int stop = atomic_load(&pool->stop_request) || atomic_load(&pool->err_set);
    atomic_store(&pool->stop_latched, stop);
    atomic_store_explicit(&pool->next_unit, 0, memory_order_relaxed);   // published by the release
}

bool tg_cpu_pool_sync(struct tg_cpu_pool * pool) {
    barrier_wait(&pool->graph_bar, pool->run_threads, latch_stop, pool);
    return atomic_load(&pool->stop_latched) != 0;
}

bool tg_cpu_pool_sync_master(struct tg_cpu_pool * pool, void (*fn)(void *), void * arg) {
    struct tg_cpu_bar * b = &pool->graph_bar;
    const int n = pool->run_threads;
    // wait for the n - 1 others (they arrive through barrier_wait and wait there)
    for (int i = 0; n > 1 && atomic_load_explicit(&b->arrived, memory_order_acquire) < n - 1; i++) {
        if (i < b->spin) TG_PAUSE(); else sched_yield();
    }
    fn(arg);
    // arrive last: latch and release
    barrier_wait(b, n, latch_stop, pool);
    return atomic_load(&pool->stop_latched) != 0;
}

void tg_cpu_barrier(const struct tg_cpu_params * p) {
    if (p->nth <= 1) return;
    tg_cpu_barrier_wait(&p->pool->node_bar, p->nth);
}

int64_t tg_cpu_claim(const struct tg_cpu_params * p, int64_t step) {
    return atomic_fetch_add_explicit(&p->pool->next_unit, step, memory_order_relaxed);
}

// ---- kernel errors ----------------------------------------------------------

void tg_cpu_fail(const struct tg_cpu_params * p, enum tg_status st, const char * fmt, ...) {
    struct tg_cpu_pool * pool = p->pool;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&pool->err_set, &expected, 1)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pool->err_msg, sizeof(pool->err_msg), fmt, ap);
    va_end(ap);
    pool->err_st = st;
}

// ---- workers ----------------------------------------------------------------

struct worker_arg { struct tg_cpu_pool * pool; int ith; };

static void * worker_main(void * arg) {
    struct worker_arg * wa = arg;
    struct tg_cpu_pool * pool = wa->pool;
    int ith = wa->ith;
    free(wa);
    unsigned seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool->mu);
        while (pool->generation == seen && !pool->stop) pthread_cond_wait(&pool->cv, &pool->mu);
        if (pool->stop) { pthread_mutex_unlock(&pool->mu); break; }
        seen = pool->generation;
        tg_cpu_job_fn fn = pool->job_fn;
        void * job = pool->job;
        pthread_mutex_unlock(&pool->mu);
        fn(pool, job, ith);
    }
    return NULL;
}

// Creates a pool of n_threads (>= 1; the caller's thread is one of them).
// NULL on failure (TG_ERR_INVALID_ARG, TG_ERR_NOMEM).
struct tg_cpu_pool * tg_cpu_pool_new(int n_threads) {
    if (n_threads < 1 || n_threads > 1024) {
        tg_error(TG_ERR_INVALID_ARG, "tg_cpu_pool_new: n_threads = %d (expected 1..1024)", n_threads);
        return NULL;
    }
    struct tg_cpu_pool * pool = calloc(1, sizeof(*pool));
    if (!pool) { tg_error(TG_ERR_NOMEM, "tg_cpu_pool_new: out of memory"); return NULL; }
    pool->n_threads = n_threads;
    pool->graph_bar.spin = pool->node_bar.spin = n_threads > tg_cpu_n_available() ? TG_SPIN_OVERSUB : TG_SPIN_ITERS;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_mutex_init(&pool->busy, NULL);
    pthread_cond_init(&pool->cv, NULL);
    pool->threads = calloc((size_t) n_threads, sizeof(pthread_t));
    if (!pool->threads) { tg_cpu_pool_free(pool); tg_error(TG_ERR_NOMEM, "tg_cpu_pool_new: out of memory"); return NULL; }
    for (int i = 1; i < n_threads; i++) {
        struct worker_arg * wa = malloc(sizeof(*wa));
        if (!wa) { tg_cpu_pool_free(pool); tg_error(TG_ERR_NOMEM, "tg_cpu_pool_new: out of memory"); return NULL; }
        wa->pool = pool;
        wa->ith = i;
        int rc = pthread_create(&pool->threads[i], NULL, worker_main, wa);
        if (rc != 0) {
            free(wa);
            tg_cpu_pool_free(pool);
            tg_error(TG_ERR_NOMEM, "tg_cpu_pool_new: cannot start thread %d of %d: %s", i, n_threads, strerror(rc));
            return NULL;
        }
        pool->n_started++;
    }
    return pool;
}

// Stops and joins the workers, frees the work buffer. NULL is a no-op.
void tg_cpu_pool_free(struct tg_cpu_pool * pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 1; i <= pool->n_started; i++) pthread_join(pool->threads[i], NULL);
    free(pool->threads);
    free(pool->wdata);
    pthread_cond_destroy(&pool->cv);
    pthread_mutex_destroy(&pool->mu);
    pthread_mutex_destroy(&pool->busy);
    free(pool);
}

int tg_cpu_pool_n_threads(const struct tg_cpu_pool * pool) {
    return pool ? pool->n_threads : 0;
}

// Grows the shared work buffer to at least `size` bytes (64-aligned).
// Returns false (buffer unchanged) when out of memory.
bool tg_cpu_pool_reserve(struct tg_cpu_pool * pool, size_t size) {
    if (size <= pool->wsize) return true;
    size = tg_cpu_pad64(size);
    void * p = aligned_alloc(64, size);
    if (!p) return false;
    free(pool->wdata);
    pool->wdata = p;
    pool->wsize = size;
    return true;
}

// Runs fn(pool, job, ith) on every thread of the pool (thread 0 is the
// caller), or on the caller alone when all_threads is false (the workers
// sleep on), and returns when all have returned.
void tg_cpu_pool_run(struct tg_cpu_pool * pool, tg_cpu_job_fn fn, void * job, bool all_threads) {
    atomic_store(&pool->err_set, 0);
    atomic_store(&pool->stop_request, 0);
    atomic_store(&pool->stop_latched, 0);
    atomic_store(&pool->next_unit, 0);
    pool->err_st = TG_OK;
    pool->err_msg[0] = '\0';
    pool->run_threads = all_threads ? pool->n_threads : 1;
    if (pool->run_threads > 1) {
        pthread_mutex_lock(&pool->mu);
        pool->job_fn = fn;
        pool->job = job;
        pool->generation++;
        pthread_cond_broadcast(&pool->cv);
        pthread_mutex_unlock(&pool->mu);
    }
    fn(pool, job, 0);
    // fn ends with a barrier of all threads, so no worker still reads `job`.
}
