// llama-sched.c - the llama runtime on the engine's backends: the mapped
// weights wrapped in a host buffer of usage WEIGHTS (so the scheduler places
// the ops reading them), the KV cache in a CPU buffer, compute memory planned
// by the scheduler's graph allocator (reserved for the worst case), inputs and
// results through the host tensor API, the eval callback and observer markers.
#include "llama-impl.h"

#include "tg/backend.h"
#include "tg/observe.h"
#include "tg/sched.h"

#include <stdlib.h>
#include <string.h>

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

void tg_llama_model_release_weights(struct tg_llama_model * m) {
    tg_buffer_free(m->weights_buf);
    m->weights_buf = NULL;
}

enum tg_status tg_llama_kv_alloc(struct tg_llama_kv * kv) {
    struct tg_buffer * buf = tg_backend_alloc_ctx_tensors_from_buft(kv->ctx, tg_cpu_buffer_type());
    if (!buf) return tg_last_status() ? tg_last_status() : tg_error(TG_ERR_NOMEM, "KV cache: cannot allocate");
    tg_buffer_clear(buf, 0);
    kv->mem = buf;
    return TG_OK;
}

void tg_llama_kv_release(struct tg_llama_kv * kv) {
    tg_buffer_free(kv->mem);
    kv->mem = NULL;
}

void tg_llama_kv_clear_memory(struct tg_llama_kv * kv) {
    if (kv->mem) tg_buffer_clear(kv->mem, 0);
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

struct tg_llama_exec * tg_llama_exec_new(const struct tg_llama_model * m, int n_threads, const char * devices, int graph_size) {
    struct tg_llama_exec * e = calloc(1, sizeof *e);
    if (!e) { tg_error(TG_ERR_NOMEM, "out of memory (llama exec)"); return NULL; }
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
