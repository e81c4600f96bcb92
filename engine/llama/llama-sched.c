// llama-sched.c - the llama runtime on the engine's backends: the mapped
// weights wrapped in a host buffer of usage WEIGHTS (so the scheduler places
// the ops reading them), the KV cache in a CPU buffer, compute memory planned
// by the scheduler's graph allocator (reserved for the worst case), inputs and
// results through the host tensor API, the eval callback and observer markers.
#include "llama-impl.h"

#include "tg/backend.h"
#include "tg/cpu.h"
#include "tg/observe.h"
#include "tg/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

enum tg_status tg_llama_model_place_weights(struct tg_llama_model * m) {
    const char * base = tg_gguf_data(m->gguf);
    if (!base) return tg_error(TG_ERR_FORMAT, "model: the data section is cut short");
    size_t size = 0;
    for (struct tg_tensor * t = tg_context_first_tensor(m->ctx_w); t; t = tg_context_next_tensor(m->ctx_w, t)) {
        size_t end = (size_t) ((const char *) t->data - base) + tg_nbytes(t);
        if (end > size) size = end;
    }
    struct tg_buffer * buf = tg_cpu_buffer_from_ptr((void *) base, size ? size : 1);
    if (!buf) return tg_last_status() ? tg_last_status() : tg_error(TG_ERR_NOMEM, "model: cannot wrap the weights");
    tg_buffer_set_usage(buf, TG_BUFFER_USAGE_WEIGHTS);
    for (struct tg_tensor * t = tg_context_first_tensor(m->ctx_w); t; t = tg_context_next_tensor(m->ctx_w, t)) {
        enum tg_status st = tg_buffer_alloc_tensor(buf, t, t->data);
        if (st) { tg_buffer_free(buf); return st; }
    }
    m->weights_buf = buf;
    return TG_OK;
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// The weights a step multiplies on the CPU: host matrices but the token
// embedding, which only GET_ROWS reads unless the output is tied to it.
static bool pack_wanted(const struct tg_llama_model * m, const struct tg_tensor * t) {
    if (t->buffer != m->weights_buf || tg_nrows(t) < 2) return false;
    return t != m->tok_embd || m->hparams.tied_output;
}

static enum tg_llama_repack repack_mode(const struct tg_llama_model_params * params) {
    if (params->repack != TG_LLAMA_REPACK_AUTO) return params->repack;
    const char * e = getenv("TG_REPACK");
    if (e && (!strcmp(e, "on") || !strcmp(e, "1"))) return TG_LLAMA_REPACK_ON;
    if (e && (!strcmp(e, "off") || !strcmp(e, "0"))) return TG_LLAMA_REPACK_OFF;
    return TG_LLAMA_REPACK_AUTO;
}

struct pack_job {
    struct tg_tensor ** w;
    size_t *            off;
    char *              mem;
    int                 n;
    atomic_int          next, failed;
};

static void * pack_worker(void * arg) {
    struct pack_job * j = arg;
    for (int i = atomic_fetch_add(&j->next, 1); i < j->n; i = atomic_fetch_add(&j->next, 1))
        if (tg_cpu_pack(j->w[i], j->mem + j->off[i], tg_cpu_pack_size(j->w[i])) != TG_OK) atomic_store(&j->failed, 1);
    return NULL;
}

enum tg_status tg_llama_model_pack_weights(struct tg_llama_model * m, const struct tg_llama_model_params * params) {
    const enum tg_llama_repack mode = repack_mode(params);
    if (mode == TG_LLAMA_REPACK_OFF) return TG_OK;
    size_t total = 0;
    for (struct tg_tensor * t = tg_context_first_tensor(m->ctx_w); t; t = tg_context_next_tensor(m->ctx_w, t))
        if (pack_wanted(m, t)) total += round_up(tg_cpu_pack_size(t), 64);
    if (!total) return TG_OK;   // nothing this CPU reads faster packed
    if (mode == TG_LLAMA_REPACK_AUTO) {
        const uint64_t avail = tg_cpu_memory_available(NULL);
        if (avail && total > avail / 2) return TG_OK;
    }
    void * mem = NULL;
    const size_t huge = (size_t) 2 << 20, size = round_up(total, huge);
    if (posix_memalign(&mem, huge, size) != 0)
        return mode == TG_LLAMA_REPACK_ON ? tg_error(TG_ERR_NOMEM, "cannot allocate %zu bytes for packed weights", size)
                                          : TG_OK;
#ifdef MADV_HUGEPAGE
    (void) madvise(mem, size, MADV_HUGEPAGE);   // streamed once a token, like the weights
#endif
    // the weights to pack and where, then packed on a few threads (a 4 GiB model
    // takes seconds on one), each taking the next weight as it comes free
    struct pack_job job = { .mem = mem };
    for (struct tg_tensor * t = tg_context_first_tensor(m->ctx_w); t; t = tg_context_next_tensor(m->ctx_w, t)) {
        const size_t need = pack_wanted(m, t) ? tg_cpu_pack_size(t) : 0;
        if (need) job.n++;
    }
    job.w = malloc(sizeof *job.w * (size_t) (job.n ? job.n : 1));
    job.off = malloc(sizeof *job.off * (size_t) (job.n ? job.n : 1));
    if (!job.w || !job.off) {
        free(job.w); free(job.off); free(mem);
        return mode == TG_LLAMA_REPACK_ON ? tg_error(TG_ERR_NOMEM, "out of memory packing weights") : TG_OK;
    }
    size_t off = 0;
    int n = 0;
    for (struct tg_tensor * t = tg_context_first_tensor(m->ctx_w); t; t = tg_context_next_tensor(m->ctx_w, t)) {
        const size_t need = pack_wanted(m, t) ? tg_cpu_pack_size(t) : 0;
        if (!need) continue;
        job.w[n] = t;
        job.off[n++] = off;
        off += round_up(need, 64);
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int) ncpu;
    if (nth > n) nth = n;
    pthread_t th[8];
    int started = 0;
    for (int i = 1; i < nth; i++) started += pthread_create(&th[started], NULL, pack_worker, &job) == 0;
    pack_worker(&job);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(job.w); free(job.off);
    m->packed = mem;
    if (atomic_load(&job.failed)) {   // cannot happen: every weight was sized above
        tg_llama_model_unpack_weights(m);
        return tg_error(TG_ERR_INTERNAL, "packing the weights failed");
    }
    m->packed_bytes = total;
    m->n_packed = n;
    return TG_OK;
}

void tg_llama_model_unpack_weights(struct tg_llama_model * m) {
    if (!m->packed) return;
    for (struct tg_tensor * t = tg_context_first_tensor(m->ctx_w); t; t = tg_context_next_tensor(m->ctx_w, t))
        tg_cpu_unpack(t);
    free(m->packed);
    m->packed = NULL;
    m->packed_bytes = 0;
    m->n_packed = 0;
}

void tg_llama_model_release_weights(struct tg_llama_model * m) {
    tg_llama_model_unpack_weights(m);
    tg_buffer_free(m->gpu_buf);
    m->gpu_buf = NULL;
    tg_buffer_free(m->weights_buf);
    m->weights_buf = NULL;
}

// One buffer of buft holding tensors ts[0..n) (aligned, in order); NULL + error.
static struct tg_buffer * alloc_group(struct tg_buffer_type * buft, struct tg_tensor ** ts, int n) {
    const size_t align = tg_buft_get_alignment(buft);
    size_t size = 0;
    for (int i = 0; i < n; i++) size = round_up(size, align) + tg_buft_get_alloc_size(buft, ts[i]);
    struct tg_buffer * buf = tg_buft_alloc_buffer(buft, size ? size : 1);
    if (!buf) return NULL;
    char * base = tg_buffer_get_base(buf);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        off = round_up(off, align);
        if (tg_buffer_alloc_tensor(buf, ts[i], base + off) != TG_OK) { tg_buffer_free(buf); return NULL; }
        off += tg_buft_get_alloc_size(buft, ts[i]);
    }
    return buf;
}

// Layer of a weight named "blk.N.*", -1 for the others.
static int layer_of(const char * name) {
    int il = -1, used = 0;
    if (sscanf(name, "blk.%d.%n", &il, &used) == 1 && used > 0) return il;
    return -1;
}

// Whether backend be can multiply a weight like w (2-D weights) or read it
// in element-wise ops (F32 vectors).
static bool gpu_can_use(struct tg_backend * be, struct tg_tensor * w) {
    if (w->ne[1] == 1 && w->ne[2] == 1 && w->type == TG_TYPE_F32) return true;
    struct tg_tensor x = { .type = TG_TYPE_F32, .ne = { w->ne[0], 1, 1, 1 } };
    x.nb[0] = sizeof(float); x.nb[1] = x.nb[2] = x.nb[3] = (size_t) w->ne[0] * sizeof(float);
    struct tg_tensor mm = { .type = TG_TYPE_F32, .ne = { w->ne[1], 1, 1, 1 }, .op = TG_OP_MUL_MAT };
    mm.nb[0] = sizeof(float); mm.nb[1] = mm.nb[2] = mm.nb[3] = (size_t) w->ne[1] * sizeof(float);
    mm.src[0] = w; mm.src[1] = &x;
    return tg_backend_supports_op(be, &mm);
}

enum tg_status tg_llama_model_offload(struct tg_llama_model * m, const struct tg_llama_model_params * params) {
    const int n_layer = m->hparams.n_layer;
    struct tg_device * dev = NULL;
    if (params->gpu_device && params->gpu_device[0]) {
        dev = tg_device_by_name(params->gpu_device);
        if (!dev) return tg_error(TG_ERR_INVALID_ARG, "-ngl: no device named '%s' (%s)", params->gpu_device, tg_cuda_probe());
        if (tg_device_type(dev) != TG_DEVICE_GPU)
            return tg_error(TG_ERR_INVALID_ARG, "-ngl: device %s is not a GPU (its weights would stay in host memory)",
                            tg_device_name(dev));
    } else {
        for (int i = 0; i < tg_device_count() && !dev; i++)
            if (tg_device_type(tg_device_get(i)) == TG_DEVICE_GPU) dev = tg_device_get(i);
        if (!dev) return tg_error(TG_ERR_UNSUPPORTED, "-ngl %d asks for GPU layers, but there is no GPU: %s",
                                  params->n_gpu_layers, tg_cuda_probe());
    }
    struct tg_backend * be = tg_device_init_backend(dev, NULL);
    if (!be) return tg_last_status() ? tg_last_status() : TG_ERR_INTERNAL;
    const int ngl = params->n_gpu_layers > n_layer + 1 ? n_layer + 1 : params->n_gpu_layers;
    const int first = n_layer - (ngl > n_layer ? n_layer : ngl);
    int n = 0, cap = (int) m->n_tensors + 4;
    struct tg_tensor ** ts = calloc((size_t) cap, sizeof *ts);
    const void ** host = calloc((size_t) cap, sizeof *host);
    if (!ts || !host) { free(ts); free(host); tg_backend_free(be); return tg_error(TG_ERR_NOMEM, "-ngl: out of memory"); }
    for (struct tg_tensor * t = tg_context_first_tensor(m->ctx_w); t && n < cap; t = tg_context_next_tensor(m->ctx_w, t)) {
        const int il = layer_of(t->name);
        bool take = il >= first ||
                    (t == m->rope_freqs && first < n_layer) ||
                    (ngl > n_layer && (t == m->output || t == m->output_norm));
        if (t == m->tok_embd && t != m->output) take = false;
        if (!take || !gpu_can_use(be, t)) continue;
        host[n] = t->data;
        ts[n++] = t;
    }
    tg_backend_free(be);
    enum tg_status st = TG_OK;
    struct tg_buffer * buf = n ? alloc_group(tg_device_buffer_type(dev), ts, n) : NULL;
    if (n && !buf) st = tg_last_status() ? tg_last_status() : TG_ERR_NOMEM;
    for (int i = 0; st == TG_OK && i < n; i++) {   // upload; a failed copy leaves the last error set
        tg_clear_error();
        buf->iface.set_tensor(buf, ts[i], host[i], 0, tg_nbytes(ts[i]));
        if (tg_last_status() != TG_OK) st = tg_last_status();
    }
    if (st != TG_OK) {   // the tensors go back to the mapped file
        for (int i = 0; i < n; i++)
            if (ts[i]->buffer == buf) tg_buffer_alloc_tensor(m->weights_buf, ts[i], (void *) host[i]);
        tg_buffer_free(buf);
    } else if (buf) {
        tg_buffer_set_usage(buf, TG_BUFFER_USAGE_WEIGHTS);
        m->gpu_buf = buf;
        m->gpu_dev = dev;
        m->n_gpu_layers = ngl;
    }
    free(ts);
    free(host);
    return st;
}

enum tg_status tg_llama_kv_alloc(struct tg_llama_kv * kv, const struct tg_llama_model * m) {
    const int n_layer = m->hparams.n_layer;
    const int on_gpu = m->gpu_dev ? (m->n_gpu_layers > n_layer ? n_layer : m->n_gpu_layers) : 0;
    kv->first_gpu = n_layer - on_gpu;
    struct tg_tensor ** ts = calloc((size_t) (2 * n_layer + 1), sizeof *ts);
    if (!ts) return tg_error(TG_ERR_NOMEM, "KV cache: out of memory");
    int n = 0;
    for (int il = 0; il < kv->first_gpu; il++) { ts[n++] = kv->k[il]; ts[n++] = kv->v[il]; }
    struct tg_buffer * cpu = n ? alloc_group(tg_cpu_buffer_type(), ts, n) : NULL;
    if (n && !cpu) { free(ts); return tg_last_status() ? tg_last_status() : tg_error(TG_ERR_NOMEM, "KV cache: cannot allocate"); }
    n = 0;
    for (int il = kv->first_gpu; il < n_layer; il++) { ts[n++] = kv->k[il]; ts[n++] = kv->v[il]; }
    struct tg_buffer * gpu = n ? alloc_group(tg_device_buffer_type(m->gpu_dev), ts, n) : NULL;
    free(ts);
    if (n && !gpu) {
        tg_buffer_free(cpu);
        return tg_error(tg_last_status() ? tg_last_status() : TG_ERR_NOMEM, "KV cache of %d GPU layers: %s", on_gpu, tg_last_error());
    }
    kv->mem = cpu;
    kv->mem_gpu = gpu;
    tg_llama_kv_clear_memory(kv);
    return TG_OK;
}

void tg_llama_kv_release(struct tg_llama_kv * kv) {
    tg_buffer_free(kv->mem);
    tg_buffer_free(kv->mem_gpu);
    kv->mem = kv->mem_gpu = NULL;
}

void tg_llama_kv_clear_memory(struct tg_llama_kv * kv) {
    if (kv->mem) tg_buffer_clear(kv->mem, 0);
    if (kv->mem_gpu) tg_buffer_clear(kv->mem_gpu, 0);
}

struct tg_llama_exec {
    struct tg_backend * backends[TG_SCHED_MAX_BACKENDS];  // priority order, CPU last
    int n_backends;
    struct tg_sched *   sched;
    struct tg_llama_op_time * prof;  // while computing with profiling
    uint64_t t_begin;
};

// Creates the backend named name[0..len) with n_threads; NULL + error.
static struct tg_backend * open_backend(const char * name, size_t len, int n_threads) {
    char buf[64];
    if (len == 0 || len >= sizeof buf) { tg_error(TG_ERR_INVALID_ARG, "llama: bad device name in the device list"); return NULL; }
    memcpy(buf, name, len);
    buf[len] = 0;
    struct tg_backend * b = tg_backend_init_by_name(buf, NULL);
    if (!b) return NULL;
    enum tg_status st = TG_OK;
    if (tg_backend_is_cpu(b)) st = tg_backend_cpu_set_n_threads(b, n_threads);
    else if (tg_backend_is_blas(b)) st = tg_backend_blas_set_n_threads(b, n_threads);
    if (st) { tg_backend_free(b); return NULL; }
    return b;
}

// Backends from a "BLAS,CPU" list (CPU appended when missing).
static enum tg_status open_backends(struct tg_llama_exec * e, const char * devices, int n_threads) {
    const char * p = devices && devices[0] ? devices : "CPU";
    bool have_cpu = false;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (e->n_backends == TG_SCHED_MAX_BACKENDS - 1)
            return tg_error(TG_ERR_INVALID_ARG, "llama: too many devices in '%s'", devices);
        struct tg_backend * b = open_backend(p, len, n_threads);
        if (!b) return tg_last_status();
        if (tg_backend_is_cpu(b)) {
            if (have_cpu) tg_backend_free(b);
            else have_cpu = true, e->backends[e->n_backends++] = b;
        } else {
            e->backends[e->n_backends++] = b;
        }
        p += len;
        if (*p == ',') p++;
    }
    if (!have_cpu) {
        struct tg_backend * b = open_backend("CPU", 3, n_threads);
        if (!b) return tg_last_status();
        e->backends[e->n_backends++] = b;
    }
    for (int i = 0; i < e->n_backends - 1; i++)  // the CPU is the fallback: last
        if (tg_backend_is_cpu(e->backends[i])) {
            struct tg_backend * cpu = e->backends[i];
            memmove(&e->backends[i], &e->backends[i + 1], sizeof(e->backends[0]) * (size_t) (e->n_backends - 1 - i));
            e->backends[e->n_backends - 1] = cpu;
            break;
        }
    return TG_OK;
}

// Whether the comma-separated list names dev (case-insensitive).
static bool lists_device(const char * list, const char * dev) {
    size_t n = strlen(dev);
    for (const char * p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncasecmp(p, dev, n) == 0) return true;
        p += len;
        if (*p == ',') p++;
    }
    return false;
}

struct tg_llama_exec * tg_llama_exec_new(const struct tg_llama_model * m, int n_threads, const char * devices, int graph_size) {
    struct tg_llama_exec * e = calloc(1, sizeof *e);
    if (!e) { tg_error(TG_ERR_NOMEM, "out of memory (llama exec)"); return NULL; }
    char list[256];
    if (m->gpu_dev && !lists_device(devices, tg_device_name(m->gpu_dev))) {   // offloaded layers: their GPU first
        snprintf(list, sizeof list, "%s,%s", tg_device_name(m->gpu_dev), devices && devices[0] ? devices : "CPU");
        devices = list;
    }
    if (open_backends(e, devices, n_threads) != TG_OK) goto fail;
    e->sched = tg_sched_new(e->backends, e->n_backends, graph_size > 0 ? graph_size : tg_llama_graph_size(m));
    if (!e->sched) goto fail;
    return e;
fail:
    tg_llama_exec_free(e);
    return NULL;
}

void tg_llama_exec_free(struct tg_llama_exec * e) {
    if (!e) return;
    tg_sched_free(e->sched);
    for (int i = 0; i < e->n_backends; i++) tg_backend_free(e->backends[i]);
    free(e);
}

size_t tg_llama_exec_bytes(const struct tg_llama_exec * e) {
    size_t n = 0;
    for (int i = 0; e && i < tg_sched_n_backends(e->sched); i++) n += tg_sched_get_buffer_size(e->sched, i);
    return n;
}

void tg_llama_exec_splits(const struct tg_llama_exec * e, int32_t * n_splits, int32_t * n_copies) {
    *n_splits = tg_sched_get_n_splits(e->sched);
    *n_copies = tg_sched_get_n_copies(e->sched);
}

struct tg_sched * tg_llama_exec_sched(const struct tg_llama_exec * e) {
    return e->sched;
}

enum tg_status tg_llama_exec_reserve(struct tg_llama_exec * e, struct tg_graph * g) {
    return tg_sched_reserve(e->sched, g);
}

void tg_llama_exec_reset(struct tg_llama_exec * e) { tg_sched_reset(e->sched); }

enum tg_status tg_llama_exec_moved(struct tg_llama_exec * e, struct tg_graph * g, struct tg_tensor * const * moved,
                                   int n_moved) {
    return tg_sched_graph_moved(e->sched, g, moved, n_moved);
}

enum tg_status tg_llama_exec_alloc(struct tg_llama_exec * e, struct tg_graph * g) {
    return tg_sched_alloc_graph(e->sched, g);
}

enum tg_status tg_llama_exec_set(struct tg_llama_exec * e, struct tg_tensor * t, const void * data, size_t size) {
    (void) e;
    return tg_backend_tensor_set(t, data, 0, size);
}

enum tg_status tg_llama_exec_get(struct tg_llama_exec * e, const struct tg_tensor * t, void * data, size_t offset, size_t size) {
    (void) e;
    return tg_backend_tensor_get(t, data, offset, size);
}

static void on_node_begin(const struct tg_obs_node_event * ev, void * user) {
    struct tg_llama_exec * e = user;
    e->t_begin = ev->t_ns;
}

static void on_node_end(const struct tg_obs_node_event * ev, void * user) {
    struct tg_llama_exec * e = user;
    enum tg_op op = ev->node->op;
    if (!e->prof || op < 0 || op >= TG_OP_COUNT) return;
    e->prof[op].n_calls++;
    e->prof[op].ms += (double) (ev->t_ns - e->t_begin) * 1e-6;
}

enum tg_status tg_llama_exec_compute(struct tg_llama_exec * e, struct tg_graph * g, const struct tg_llama_exec_hooks * hooks) {
    tg_sched_set_eval_callback(e->sched, hooks ? hooks->eval_cb : NULL, hooks ? hooks->eval_cb_user : NULL);
    struct tg_observer obs = { .user = e, .on_node_begin = on_node_begin, .on_node_end = on_node_end };
    bool prof = hooks && hooks->prof;
    if (prof) {
        e->prof = hooks->prof;
        if (tg_sched_add_observer(e->sched, &obs) != TG_OK) prof = false;
    }
    enum tg_status st = tg_sched_graph_compute(e->sched, g);
    if (prof) tg_sched_remove_observer(e->sched, &obs);
    e->prof = NULL;
    return st;
}

void tg_llama_exec_marker(struct tg_llama_exec * e, int32_t n_tokens, int32_t pos, int32_t ubatch,
                          int32_t batch_tokens, int32_t batch_pos, bool flash_attn) {
    tg_observe_marker(e->sched, "decode", "n_tokens=%d pos=%d seq=0 ubatch=%d batch_tokens=%d batch_pos=%d attn=%s",
                      n_tokens, pos, ubatch, batch_tokens, batch_pos, flash_attn ? "fused" : "unfused");
}

bool tg_llama_exec_observed(const struct tg_llama_exec * e) {
    return e && e->sched && tg_sched_n_observers(e->sched) > 0;
}

bool tg_llama_exec_moves_ok(const struct tg_llama_exec * e) {
    if (!e || !e->sched) return false;
    for (int i = 0; i < e->n_backends; i++)   // the backends this project has
        if (!tg_backend_is_cpu(e->backends[i]) && !tg_backend_is_blas(e->backends[i]) && !tg_backend_is_cuda(e->backends[i]))
            return false;
    return true;
}
