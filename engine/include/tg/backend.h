// tg/backend.h - buffer types, buffers, backends, devices and the host API
// for tensor data.
//
// The model (the same jobs as ggml-backend):
// - a buffer type says where memory comes from (name, alignment, max size,
//   bytes a tensor needs, whether the host can address it);
// - a buffer is one allocation of a buffer type; tensors point into it
//   (tensor->buffer, tensor->data); its usage (any / weights / compute) is a
//   hint the scheduler uses for placement (tg/sched.h);
// - a backend computes graphs on one device; it says which ops and which
//   buffer types it supports, and may ask to take ops away from the CPU
//   (offload_op);
// - devices are listed in a registry ("CPU", "BLAS", and any registered).
//
// Buffer types, buffers and backends are `iface` structs of function pointers
// plus a `context` pointer. Optional methods may be NULL (documented below);
// new backends fill these structs (engine/cpu/cpu-backend.c is the example).
//
// Host access (tg_backend_tensor_set/get/memset) is the one place where the
// host reads or writes tensor memory; it reports every call to the observers
// (tg/observe.h), which is how stale reads are detected.
#ifndef TG_BACKEND_H
#define TG_BACKEND_H

#include "tg/core.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tg_buffer_type;
struct tg_buffer;
struct tg_backend;
struct tg_device;

// ---- buffer types -----------------------------------------------------------

struct tg_buffer_type_iface {
    const char *       (*get_name)(struct tg_buffer_type * buft);
    // New buffer of `size` bytes (size may be 0), NULL + tg_error on failure.
    struct tg_buffer * (*alloc_buffer)(struct tg_buffer_type * buft, size_t size);
    size_t             (*get_alignment)(struct tg_buffer_type * buft);
    size_t             (*get_max_size)(struct tg_buffer_type * buft);   // optional: SIZE_MAX
    // Bytes tensor t needs in this buffer type. Optional: tg_nbytes(t).
    size_t             (*get_alloc_size)(struct tg_buffer_type * buft, const struct tg_tensor * t);
    bool               (*is_host)(struct tg_buffer_type * buft);       // optional: false
};

struct tg_buffer_type {
    struct tg_buffer_type_iface iface;
    struct tg_device *          device;   // device owning this memory (may be NULL)
    void *                      context;
};

const char * tg_buft_name(struct tg_buffer_type * buft);
// New buffer (usage ANY); NULL + tg_last_error() on failure. Free with tg_buffer_free.
struct tg_buffer * tg_buft_alloc_buffer(struct tg_buffer_type * buft, size_t size);
size_t tg_buft_get_alignment(struct tg_buffer_type * buft);
size_t tg_buft_get_max_size(struct tg_buffer_type * buft);
size_t tg_buft_get_alloc_size(struct tg_buffer_type * buft, const struct tg_tensor * t);
bool   tg_buft_is_host(struct tg_buffer_type * buft);

// ---- buffers ----------------------------------------------------------------

enum tg_buffer_usage {
    TG_BUFFER_USAGE_ANY = 0,   // nothing said
    TG_BUFFER_USAGE_WEIGHTS,   // model weights: ops reading them run on this buffer's backend
    TG_BUFFER_USAGE_COMPUTE,   // graph intermediates (the scheduler's compute buffers)
    TG_BUFFER_USAGE_COUNT
};
const char * tg_buffer_usage_name(enum tg_buffer_usage usage); // "any", "weights", "compute"

struct tg_buffer_iface {
    void   (*free_buffer)(struct tg_buffer * buf);                          // optional
    void * (*get_base)(struct tg_buffer * buf);
    // Called when a tensor is placed in the buffer (data already set). Optional.
    enum tg_status (*init_tensor)(struct tg_buffer * buf, struct tg_tensor * t);
    // Byte ranges [offset, offset+size) of t's data (bounds already checked).
    void   (*memset_tensor)(struct tg_buffer * buf, struct tg_tensor * t, uint8_t value, size_t offset, size_t size);
    void   (*set_tensor)(struct tg_buffer * buf, struct tg_tensor * t, const void * data, size_t offset, size_t size);
    void   (*get_tensor)(struct tg_buffer * buf, const struct tg_tensor * t, void * data, size_t offset, size_t size);
    // Copies src (in any buffer) to dst (in this buffer); false if it cannot
    // (the caller then goes through host memory). Optional.
    bool   (*cpy_tensor)(struct tg_buffer * buf, const struct tg_tensor * src, struct tg_tensor * dst);
    void   (*clear)(struct tg_buffer * buf, uint8_t value);
    // Optional, for memory the host cannot address: a host copy of t's bytes
    // the backend already holds (a GPU's snapshot of a node during its
    // deferred node events), valid until the backend computes again, or NULL.
    const void * (*host_view)(struct tg_buffer * buf, const struct tg_tensor * t);
};

struct tg_buffer {
    struct tg_buffer_iface  iface;
    struct tg_buffer_type * buft;
    void *                  context;
    size_t                  size;
    enum tg_buffer_usage    usage;
    uint64_t                id;      // process-unique, 1, 2, ... (for traces)
};

// Creates a buffer object (for backend implementations). Returns NULL on
// out of memory. The buffer takes `context`; iface.free_buffer releases it.
struct tg_buffer * tg_buffer_init(struct tg_buffer_type * buft, struct tg_buffer_iface iface,
                                  void * context, size_t size);
// Frees the buffer and its memory. Tensors pointing into it become dangling.
// NULL is a no-op.
void   tg_buffer_free(struct tg_buffer * buf);
void * tg_buffer_get_base(struct tg_buffer * buf);   // NULL for a 0-byte buffer
size_t tg_buffer_get_size(const struct tg_buffer * buf);
const char * tg_buffer_name(const struct tg_buffer * buf);  // its buffer type's name
bool   tg_buffer_is_host(const struct tg_buffer * buf);
void   tg_buffer_set_usage(struct tg_buffer * buf, enum tg_buffer_usage usage);
enum tg_buffer_usage tg_buffer_get_usage(const struct tg_buffer * buf);
void   tg_buffer_clear(struct tg_buffer * buf, uint8_t value);
// Places t at `addr` inside buf (addr within [base, base+size), t's bytes
// must fit): sets t->buffer, t->data and calls init_tensor. For views use
// tg_buffer_init_view. Returns TG_ERR_INVALID_ARG (range named) on misuse.
enum tg_status tg_buffer_alloc_tensor(struct tg_buffer * buf, struct tg_tensor * t, void * addr);
// Gives view t the memory of t->view_src (which must be placed) at view_offs.
enum tg_status tg_buffer_init_view(struct tg_tensor * t);

// ---- backends -----------------------------------------------------------------

// Hooks around each node of a graph_compute_hooks call (same contract as
// tg_cpu_hooks in tg/cpu.h: called on the calling thread; `before` returning
// false stops the graph with TG_ERR_ABORTED).
struct tg_node_hooks {
    bool (*before)(struct tg_tensor * node, int index, void * user);
    void (*after)(struct tg_tensor * node, int index, void * user);
    void * user;
    // The backend may run every node first and make the calls afterwards,
    // in order, with a host read of a node (or of a view node) during its
    // calls returning its bytes as they were when it finished; it then
    // stores the node's begin / end time (tg_observe_now_ns's clock) in
    // *t_ns before each call. before cannot stop the graph then.
    bool deferrable;
    uint64_t * t_ns;
};

struct tg_backend_iface {
    const char * (*get_name)(struct tg_backend * backend);
    void         (*free)(struct tg_backend * backend);
    struct tg_buffer_type * (*get_default_buffer_type)(struct tg_backend * backend);
    // Computes every node of g (nodes whose ops are views/NONE are no-ops).
    enum tg_status (*graph_compute)(struct tg_backend * backend, struct tg_graph * g);
    // Optional: the same with per-node hooks (used only when an observer asks
    // for node events; without it the scheduler computes node by node).
    enum tg_status (*graph_compute_hooks)(struct tg_backend * backend, struct tg_graph * g,
                                          const struct tg_node_hooks * hooks);
    // Optional, from a hook of graph_compute_hooks only: runs fn(i, arg) for
    // every i in [0, n) on the backend's threads that wait between nodes (and
    // the caller's), returning when all have run. NULL: the caller runs them.
    void (*parallel)(struct tg_backend * backend, int n, void (*fn)(int i, void * arg), void * arg);
    bool (*supports_op)(struct tg_backend * backend, const struct tg_tensor * op);
    bool (*supports_buft)(struct tg_backend * backend, struct tg_buffer_type * buft);
    // Optional: true when this backend wants op even though its weights live
    // on the CPU (fallback) backend (e.g. large batches). NULL = never.
    bool (*offload_op)(struct tg_backend * backend, const struct tg_tensor * op);
    void (*synchronize)(struct tg_backend * backend);                                    // optional
    void (*set_tensor_async)(struct tg_backend * backend, struct tg_tensor * t, const void * data, size_t offset, size_t size); // optional
    void (*get_tensor_async)(struct tg_backend * backend, const struct tg_tensor * t, void * data, size_t offset, size_t size); // optional
};

struct tg_backend {
    struct tg_backend_iface iface;
    struct tg_device *      device;
    void *                  context;
};

const char * tg_backend_name(struct tg_backend * backend);
// Frees the backend (NULL is a no-op). Buffers it allocated stay valid.
void tg_backend_free(struct tg_backend * backend);
struct tg_buffer_type * tg_backend_get_default_buffer_type(struct tg_backend * backend);
// New buffer of the default type; NULL + last error on failure.
struct tg_buffer * tg_backend_alloc_buffer(struct tg_backend * backend, size_t size);
size_t tg_backend_get_alignment(struct tg_backend * backend);
// Computes g on this backend (synchronously for the built-in backends).
// Returns the backend's status (TG_ERR_UNSUPPORTED naming the node, ...).
enum tg_status tg_backend_graph_compute(struct tg_backend * backend, struct tg_graph * g);
bool tg_backend_supports_op(struct tg_backend * backend, const struct tg_tensor * op);
bool tg_backend_supports_buft(struct tg_backend * backend, struct tg_buffer_type * buft);
bool tg_backend_offload_op(struct tg_backend * backend, const struct tg_tensor * op);
void tg_backend_synchronize(struct tg_backend * backend);

// ---- host access to tensor data ---------------------------------------------
// Bytes [offset, offset+size) of t's data (t must be contiguous for a
// meaningful layout; the range is checked against tg_nbytes(t)).
// A tensor with no buffer and no data returns TG_ERR_NO_BUFFER with a message
// naming the tensor and what to do; a tensor of an allocating context (data,
// no buffer) is accessed directly. Views use their source's buffer. Every
// call is reported to the observers (on_tensor_set / on_tensor_get).

enum tg_status tg_backend_tensor_set(struct tg_tensor * t, const void * data, size_t offset, size_t size);
enum tg_status tg_backend_tensor_get(const struct tg_tensor * t, void * data, size_t offset, size_t size);
enum tg_status tg_backend_tensor_memset(struct tg_tensor * t, uint8_t value, size_t offset, size_t size);
// Copies src's bytes to dst (same nbytes; any buffers). TG_ERR_NO_BUFFER /
// TG_ERR_SHAPE on misuse.
enum tg_status tg_backend_tensor_copy(const struct tg_tensor * src, struct tg_tensor * dst);
// t's bytes readable by the host without a copy: t->data for host memory,
// else what the buffer's host_view offers (a snapshot; valid until its
// backend computes again), else NULL (read with tg_backend_tensor_get). Not
// reported to observers: no read of the tensor's memory happens.
const void * tg_backend_tensor_host_view(const struct tg_tensor * t);
// The buffer that holds t's memory (t->buffer or its view source's), or NULL.
struct tg_buffer * tg_tensor_buffer(const struct tg_tensor * t);

// Allocates every tensor of a no_alloc context that has no memory yet into
// one new buffer of the backend's default type (or buft), aligned, in
// creation order (views get their source's memory). Returns the buffer (the
// caller frees it; usage ANY), or NULL with the last error set (a context
// with nothing to allocate returns NULL with TG_OK status and no error).
struct tg_buffer * tg_backend_alloc_ctx_tensors(struct tg_context * ctx, struct tg_backend * backend);
struct tg_buffer * tg_backend_alloc_ctx_tensors_from_buft(struct tg_context * ctx, struct tg_buffer_type * buft);

// ---- CPU backend (engine/cpu/cpu-backend.c) ------------------------------------

// New CPU backend with a persistent thread pool (n_threads: default = number
// of online CPUs). NULL + last error on failure.
struct tg_backend * tg_backend_cpu_init(void);
bool tg_backend_is_cpu(const struct tg_backend * backend);
// Resizes the pool (n_threads >= 1). TG_ERR_INVALID_ARG if not a CPU backend.
enum tg_status tg_backend_cpu_set_n_threads(struct tg_backend * backend, int n_threads);
int  tg_backend_cpu_get_n_threads(const struct tg_backend * backend);
// The host buffer type ("CPU", 64-byte alignment, is_host). Static; never freed.
struct tg_buffer_type * tg_cpu_buffer_type(void);
// Wraps caller memory (e.g. an mmap'd model file) as a host buffer; the memory
// is not freed with the buffer. NULL on failure.
struct tg_buffer * tg_cpu_buffer_from_ptr(void * ptr, size_t size);

// ---- BLAS backend (engine/blas/, only with TG_HAVE_BLAS) ------------------------
// Computes MUL_MAT and OUT_PROD with cblas_sgemm on host memory (weights of
// other types converted to F32, cached per weight). Shares the CPU buffer
// type. supports_op: F32 (or convertible) src0, F32 src1, rows contiguous,
// and at least `min_batch` (default 8) columns; offload_op: at least
// `offload_batch` (default 32) columns.
struct tg_backend * tg_backend_blas_init(void);   // NULL (TG_ERR_UNSUPPORTED) without TG_HAVE_BLAS
bool tg_backend_is_blas(const struct tg_backend * backend);
enum tg_status tg_backend_blas_set_n_threads(struct tg_backend * backend, int n_threads);
enum tg_status tg_backend_blas_set_batch_limits(struct tg_backend * backend, int min_batch, int offload_batch);
// Drops the converted-weight cache (call after changing weight contents).
void tg_backend_blas_clear_cache(struct tg_backend * backend);
// The BLAS library's own account of itself (OpenBLAS: version, architecture,
// threading), or NULL without TG_HAVE_BLAS.
const char * tg_blas_library(void);
#define TG_BLAS_MIN_BATCH      8
#define TG_BLAS_OFFLOAD_BATCH 32

// ---- devices and the registry -------------------------------------------------

enum tg_device_type {
    TG_DEVICE_CPU = 0,     // the host CPU (the fallback backend)
    TG_DEVICE_ACCEL,       // host-memory accelerator library (BLAS)
    TG_DEVICE_GPU,         // device with its own memory
    TG_DEVICE_TYPE_COUNT
};

struct tg_device_iface {
    const char * (*get_name)(struct tg_device * dev);
    const char * (*get_description)(struct tg_device * dev);
    enum tg_device_type (*get_type)(struct tg_device * dev);
    // New backend on this device; `params` is backend-specific (may be NULL).
    struct tg_backend * (*init_backend)(struct tg_device * dev, const char * params);
    struct tg_buffer_type * (*get_buffer_type)(struct tg_device * dev);
    // Optional (devices with their own memory): free and total bytes now.
    bool (*get_memory)(struct tg_device * dev, size_t * free_bytes, size_t * total_bytes);
};

struct tg_device {
    struct tg_device_iface iface;
    void *                 context;
};

// Devices available in this build: "CPU" first, then "BLAS" (with
// TG_HAVE_BLAS), then registered ones.
int                tg_device_count(void);
struct tg_device * tg_device_get(int i);                  // NULL if out of range
struct tg_device * tg_device_by_name(const char * name);  // case-insensitive; NULL if absent
const char *       tg_device_name(struct tg_device * dev);
const char *       tg_device_description(struct tg_device * dev);
enum tg_device_type tg_device_type(struct tg_device * dev);
const char *       tg_device_type_name(enum tg_device_type type);  // "cpu", "accel", "gpu"
struct tg_buffer_type * tg_device_buffer_type(struct tg_device * dev);
struct tg_backend * tg_device_init_backend(struct tg_device * dev, const char * params);
// Adds a device (e.g. an optional CUDA build). The struct must outlive the
// process. TG_ERR_NOMEM when the registry is full (16 devices).
enum tg_status tg_device_register(struct tg_device * dev);
// tg_device_init_backend(tg_device_by_name(name), params); NULL + last error
// naming the missing device.
struct tg_backend * tg_backend_init_by_name(const char * name, const char * params);
// Free and total bytes of a device's own memory; false for host devices and
// when the device cannot say.
bool tg_device_memory(struct tg_device * dev, size_t * free_bytes, size_t * total_bytes);
// The memory bandwidth of a device's buffer type, measured: the best of a
// few copies of `bytes` between two of its buffers, in GB/s counting the
// bytes read and the bytes written (what a memory system moves; a read-only
// stream such as weights in generation can reach about this much). 0 with
// the last error set when the buffers cannot be allocated.
double tg_device_copy_bandwidth(struct tg_device * dev, size_t bytes);

// ---- CUDA backend (engine/cuda/, only with TG_HAVE_CUDA) -------------------------
// One registry device per GPU: "CUDA0", "CUDA1", ... (type GPU), each with a
// device-memory buffer type of the same name (not host: tensors in it are
// read and written through tg_backend_tensor_get/set). The backend computes
// the element-wise ops, norms, softmax, rope, GLU, copies, get_rows, fused
// attention and MUL_MAT (cuBLAS SGEMM, or matrix-vector kernels on the stored
// weight type for up to 8 columns) on F32/F16/BF16 data and every quantized
// weight type (the activation-only Q8_1 / Q8_K aside); supports_op says no to the rest (the scheduler then
// uses the CPU). offload_op asks for MUL_MAT / OUT_PROD of at least
// TG_CUDA_OFFLOAD_BATCH columns whose weights are in host memory.
#define TG_CUDA_OFFLOAD_BATCH 32
bool tg_backend_is_cuda(const struct tg_backend * backend);
bool tg_buffer_type_is_cuda(const struct tg_buffer_type * buft);
// What the registry found: "2 CUDA devices", "no CUDA device (reason)", or
// "this build has no CUDA backend" (tests print it when they skip).
const char * tg_cuda_probe(void);
// The CUDA runtime this build links and the newest the installed driver
// supports, as CUDA encodes them (1000 * major + 10 * minor; 0: unknown or
// none); false without TG_HAVE_CUDA.
bool tg_cuda_versions(int * runtime, int * driver);

#ifdef __cplusplus
}
#endif
#endif // TG_BACKEND_H
