// cpu-pool.h - private: the thread pool's state, shared by pool.c and compute.c.
#ifndef TG_CPU_POOL_H
#define TG_CPU_POOL_H

#include "cpu/cpu-impl.h"

#include <pthread.h>
#include <stdatomic.h>

// Sense-counting barrier: spins briefly, then sleeps on a futex.
struct tg_cpu_bar {
    atomic_int arrived;
    atomic_int phase;
    atomic_int sleepers;
    int        spin;       // pause iterations before sleeping (set with the pool)
};
void tg_cpu_barrier_wait(struct tg_cpu_bar * b, int n);

struct tg_cpu_pool;
typedef void (*tg_cpu_job_fn)(struct tg_cpu_pool * pool, void * job, int ith);

struct tg_cpu_pool {
    int        n_threads;
    int        run_threads;     // threads taking part in the current job (1 or n_threads)
    int        n_started;       // workers actually created (1..n_threads-1)
    pthread_t * threads;        // [n_threads], index 0 unused (caller)
    pthread_mutex_t mu;         // guards generation, stop, job
    pthread_cond_t  cv;
    unsigned   generation;
    bool       stop;
    tg_cpu_job_fn job_fn;
    void *     job;
    pthread_mutex_t busy;       // one graph at a time

    struct tg_cpu_bar graph_bar; // all threads, between nodes
    struct tg_cpu_bar node_bar;  // the node's nth threads (tg_cpu_barrier)

    void *     wdata;           // shared work buffer, 64-aligned
    size_t     wsize;

    atomic_int err_set;         // first kernel error of the graph
    enum tg_status err_st;
    char       err_msg[512];
    atomic_int stop_request;    // set by thread 0 (a hook said stop, or it saw an error)
    atomic_int stop_latched;    // stop_request || err_set as of the last tg_cpu_pool_sync
    _Atomic int64_t next_unit;  // tg_cpu_claim's counter, 0 after every graph sync

    // tg_cpu_pool_parallel: tasks thread 0 shares, from a hook, with the
    // threads waiting at the graph barrier. `claim` packs the round
    // (high 32 bits, odd while tasks are open) and the next task index.
    _Atomic uint64_t help_claim;
    void (*help_fn)(int i, void * arg);
    void *     help_arg;
    atomic_int help_n;
    atomic_int help_done;
};

// Barrier of all the pool's threads between nodes; returns true when a stop
// was requested before it (every thread gets the same answer).
bool tg_cpu_pool_sync(struct tg_cpu_pool * pool);
// The same sync for thread 0 when it has work to do while the others wait:
// it waits until every other thread has arrived, runs fn(arg) (which may set
// pool->stop_request), then releases them. One meeting instead of two.
bool tg_cpu_pool_sync_master(struct tg_cpu_pool * pool, void (*fn)(void *), void * arg);

bool tg_cpu_pool_reserve(struct tg_cpu_pool * pool, size_t size);
void tg_cpu_pool_run(struct tg_cpu_pool * pool, tg_cpu_job_fn fn, void * job, bool all_threads);

#endif
