// tg/cpu.h - the CPU compute engine: kernels for every op, a persistent thread
// pool, SIMD paths chosen by CPU feature detection.
//
// Determinism contract: a node's result is bitwise identical for any thread
// count and across runs. Work is split by rows (or blocks of output) and each
// output element is computed by exactly one thread with a fixed reduction order.
#ifndef TG_CPU_H
#define TG_CPU_H

#include "tg/core.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tg_cpu_features {
    bool sse3, avx, avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq, avx512vnni;
};
// Features of this CPU (cpuid + OS support), detected once.
struct tg_cpu_features tg_cpu_features(void);
// SIMD level in use: "avx512vnni", "avx512", "avx2", "avx", "scalar".
const char * tg_cpu_simd_name(void);
// Forces the scalar paths (true) or restores detection (false); for tests
// comparing the two. Also set by the environment variable TG_NO_SIMD=1.
void tg_cpu_force_scalar(bool on);

// CPUs this process may run on (its affinity mask; the online CPUs where
// that is unknown), at most its cgroup's CPU quota (cgroup v2 cpu.max, v1
// cpu.cfs_quota_us, rounded up: a container limited to 2 CPUs), at least 1.
int tg_cpu_n_available(void);
// The thread count the CPU backend and a llama context take unless told:
// one per physical core among those CPUs (SMT siblings counted once, from
// the kernel's CPU topology), at least 1, at most 512. More threads than
// CPUs makes every node wait for the scheduler to run its last thread.
int tg_cpu_default_threads(void);

// Per-node hooks, called on the calling thread (never from workers) right
// before and after each node is computed. Either may be NULL. `before`
// returning false skips the rest of the graph (TG_ERR_ABORTED).
struct tg_cpu_hooks {
    bool (*before)(struct tg_tensor * node, int index, void * user);
    void (*after)(struct tg_tensor * node, int index, void * user);
    void * user;
    // The hooks accept a node computed ahead of its place (tg_node_hooks'
    // deferrable contract): generation products of the same activations then
    // run as one group, as without hooks; the calls still come in node
    // order, a product computed ahead getting them at its own place, its
    // bytes untouched since (nothing between reads or writes them). The
    // group's time is cut into shares by the bytes of the products' weights,
    // in their order: *t_ns is set before a call that takes such a time (the
    // first product's end, the others' begin and end; 0 otherwise: now).
    // `before` cannot stop the graph at a product computed ahead. Without
    // t_ns, deferrable is ignored.
    bool deferrable;
    uint64_t * t_ns;
};

struct tg_cpu_pool;
// Creates a pool of n_threads (>= 1; the caller's thread is one of them).
// NULL on failure. Workers sleep between graphs.
struct tg_cpu_pool * tg_cpu_pool_new(int n_threads);
void tg_cpu_pool_free(struct tg_cpu_pool * pool);
int  tg_cpu_pool_n_threads(const struct tg_cpu_pool * pool);
// From a hook of tg_cpu_graph_compute (thread 0): runs fn(i, arg) for every
// i in [0, n), on thread 0 and on the pool threads waiting between nodes,
// and returns when all have run. Elsewhere (no graph running, one thread) it
// runs them in order on the caller. fn must be thread-safe.
void tg_cpu_pool_parallel(struct tg_cpu_pool * pool, int n, void (*fn)(int i, void * arg), void * arg);

// Computes the nodes of g in order on host memory (every node and source
// must have data). No-op nodes (NONE, VIEW, RESHAPE, PERMUTE, TRANSPOSE) are
// skipped, hooks included; `index` in the hooks is the node's index in g. Returns TG_OK, TG_ERR_NO_BUFFER (names the tensor with no
// data), TG_ERR_UNSUPPORTED (op/type combination the CPU lacks, named),
// TG_ERR_ABORTED (a hook stopped it) or TG_ERR_NOMEM.
enum tg_status tg_cpu_graph_compute(struct tg_cpu_pool * pool, struct tg_graph * g,
                                    const struct tg_cpu_hooks * hooks);
// Convenience: temporary pool of n_threads.
enum tg_status tg_cpu_compute(struct tg_graph * g, int n_threads);

// True when the CPU kernels implement this node (op and type combination).
bool tg_cpu_supports_op(const struct tg_tensor * node);

// This host's memory read bandwidth in GB/s (1e9 bytes/s), measured: n_threads
// new threads each sum their share of a buffer of `bytes` (filled first), one
// warm-up pass then `passes` timed ones; a pass lasts from the first thread's
// start to the last thread's end, and the result is the median pass. A
// buffer well above the last-level cache (256 MiB) gives the DRAM figure, a
// small one the caches'. Takes about bytes * (passes + 2) / bandwidth. Returns
// 0 with the last error set on bad arguments (n_threads or passes < 1, under
// 128 bytes per thread), when the buffer cannot be allocated (TG_ERR_NOMEM) or
// a thread cannot be created (TG_ERR_INTERNAL); never exits.
double tg_cpu_read_bandwidth(int n_threads, size_t bytes, int passes);

// ---- packed weights ("repacking") -------------------------------------------
// An interleaved copy of a weight matrix that this CPU's matrix kernels read
// faster than the GGUF layout: 16 rows side by side, block by block (Q4_0,
// Q8_0, Q4_K, Q5_K and Q6_K matrices, 2-D, dense, rows a multiple of 16, on a CPU with AVX-512
// VNNI). The weight's own bytes do not change: other ops, traces, dumps and
// other backends read them as before, and a MUL_MAT gives the same bits with
// the copy or without it (it is read only at the level it was made for).
// The copy lives in memory the caller owns and is found through w->extra.
// Writes through the CPU buffer (tg_backend_tensor_set / memset / copy)
// make it again; after writing w->data directly, call tg_cpu_pack again.

// Bytes tg_cpu_pack needs for w; 0 when w cannot be packed here (type,
// shape, no host data, no AVX-512 VNNI at the SIMD level in use).
size_t tg_cpu_pack_size(const struct tg_tensor * w);
// Writes w's packed copy into mem (64-byte aligned, tg_cpu_pack_size(w)
// bytes, kept by the caller until tg_cpu_unpack or w is gone) and attaches it.
// TG_ERR_UNSUPPORTED (w cannot be packed, named) or TG_ERR_INVALID_ARG.
enum tg_status tg_cpu_pack(struct tg_tensor * w, void * mem, size_t size);
// Detaches w's packed copy (the memory stays the caller's). No-op otherwise.
void tg_cpu_unpack(struct tg_tensor * w);
// Whether w has a packed copy that matches its data.
bool tg_cpu_is_packed(const struct tg_tensor * w);

// Bytes of host memory available for new allocations (MemAvailable of
// /proc/meminfo; 0 when unknown) and the total in *total when not NULL.
uint64_t tg_cpu_memory_available(uint64_t * total);

#ifdef __cplusplus
}
#endif
#endif // TG_CPU_H
