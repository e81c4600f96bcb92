// llama-impl.h - private contract between the llama runtime's files:
// model.c (loading), kv-cache.c, graph.c (graph builder), decode.c
// (contexts, micro-batches), llama-sched.c (backends, scheduler), sample.c,
// perplexity.c.
#ifndef TG_LLAMA_IMPL_H
#define TG_LLAMA_IMPL_H

// Most layers a model may declare (llama.block_count); llama.cpp allows 512.
#define TG_LLAMA_MAX_LAYERS 4096

#include "tg/llama.h"
#include "tg/cpu.h"
#include "tg/gguf.h"

#include <stddef.h>

#include <stdint.h>

// Whether an architecture's graph has a part (arch.c).
enum tg_llama_part { TG_PART_NONE, TG_PART_OPTIONAL, TG_PART_REQUIRED };

// One architecture (general.architecture): its key prefix is its name.
struct tg_llama_arch {
    const char *       name;        // "llama", "qwen2", "qwen3"
    int                rope_mode;   // TG_ROPE_NORMAL or TG_ROPE_NEOX
    enum tg_llama_part qkv_bias;    // blk.N.attn_{q,k,v}.bias added after the projections
    enum tg_llama_part qk_norm;     // blk.N.attn_{q,k}_norm.weight: RMS norm per head before rope
    enum tg_llama_part rope_freqs;  // rope_freqs.weight: per-pair frequency factors (Llama 3.1)
};

// The table entry of an architecture name, or NULL when not supported.
const struct tg_llama_arch * tg_llama_arch_find(const char * name);
// The supported names, for messages ("llama, qwen2, qwen3").
const char * tg_llama_arch_list(void);

struct tg_llama_layer {
    struct tg_tensor * attn_norm;  // [n_embd] F32
    struct tg_tensor * wq;         // [n_embd, n_head*head_dim]
    struct tg_tensor * wk;         // [n_embd, n_head_kv*head_dim]
    struct tg_tensor * wv;         // [n_embd, n_head_kv*head_dim]
    struct tg_tensor * bq;         // [n_head*head_dim] F32 or NULL
    struct tg_tensor * bk;         // [n_head_kv*head_dim] F32 or NULL
    struct tg_tensor * bv;         // [n_head_kv*head_dim] F32 or NULL
    struct tg_tensor * q_norm;     // [head_dim] F32 or NULL (qwen3)
    struct tg_tensor * k_norm;     // [head_dim] F32 or NULL (qwen3)
    struct tg_tensor * wo;         // [n_head*head_dim, n_embd]
    struct tg_tensor * ffn_norm;   // [n_embd] F32
    struct tg_tensor * ffn_gate;   // [n_embd, n_ff]
    struct tg_tensor * ffn_up;     // [n_embd, n_ff]
    struct tg_tensor * ffn_down;   // [n_ff, n_embd]
};

struct tg_llama_model {
    struct tg_llama_hparams hparams;
    const struct tg_llama_arch * arch;
    struct tg_gguf *        gguf;
    struct tg_context *     ctx_w;       // weight metadata (no_alloc); data points into the mapping
    struct tg_tensor *      tok_embd;    // [n_embd, n_vocab]
    struct tg_tensor *      output_norm; // [n_embd] F32
    struct tg_tensor *      output;      // [n_embd, n_vocab] (tok_embd when tied)
    struct tg_tensor *      rope_freqs;  // [n_rot/2] F32 frequency factors or NULL
    struct tg_llama_layer * layers;      // [n_layer]
    int32_t bos, eos;
    int64_t n_tensors;
    size_t  size;
    int64_t n_params;
    void *  weights_buf;                 // backend buffer wrapping the mapping (struct tg_buffer *)
    void *  gpu_buf;                     // offloaded weights (struct tg_buffer *, usage WEIGHTS) or NULL
    struct tg_device * gpu_dev;          // their device, NULL when nothing is offloaded
    int32_t n_gpu_layers;                // layers offloaded (0..n_layer+1)
    void *  packed;                      // packed copies of host weights (tg_cpu_pack), one allocation, or NULL
    size_t  packed_bytes;
    int32_t n_packed;                    // weights with a packed copy
    struct tg_vocab * vocab;             // NULL when absent/unsupported (vocab_error says why)
    char    vocab_error[256];
};

// Packs the host weights the CPU's matrix kernels read faster packed, as
// params->repack says (tg_llama_model_pack_weights in llama-sched.c); frees
// them again (release_weights does too).
enum tg_status tg_llama_model_pack_weights(struct tg_llama_model * m, const struct tg_llama_model_params * params);
void tg_llama_model_unpack_weights(struct tg_llama_model * m);

// The KV cache: one K and one V tensor per layer, zeroed at creation.
// K: [n_embd_kv, n_ctx] (cell c's K row at c*nb1). V is stored transposed,
// [n_ctx, n_embd_kv] (element (cell c, dim d) at d*nb1 + c*elsize), so the
// attention reads V^T rows contiguously.
struct tg_llama_kv {
    int32_t n_ctx;
    int32_t used;                   // cells 0..used-1 hold positions 0..used-1
    struct tg_context * ctx;        // owns the tensors (and their memory)
    struct tg_tensor ** k;          // [n_layer]
    struct tg_tensor ** v;          // [n_layer]
    size_t bytes;
    void * mem;                     // the CPU buffer holding them (struct tg_buffer *)
    void * mem_gpu;                 // layers >= first_gpu in the model's GPU memory, or NULL
    int32_t first_gpu;              // first layer whose cache is on the GPU (n_layer: none)
};

// Bytes of a KV cache of n_ctx cells (K and V of every layer); the one
// definition used by tg_llama_kv_init and tg_llama_context_estimate.
uint64_t tg_llama_kv_bytes(const struct tg_llama_hparams * h, int32_t n_ctx, enum tg_type type_k, enum tg_type type_v);
// Resolves and checks context parameters in place (n_ctx 0 = n_ctx_train,
// n_batch <= n_ctx, n_ubatch <= n_batch, ranges); TG_ERR_INVALID_ARG + last error.
enum tg_status tg_llama_params_resolve(const struct tg_llama_model * m, struct tg_llama_context_params * p);
enum tg_status tg_llama_kv_init(struct tg_llama_kv * kv, const struct tg_llama_model * m,
                                int32_t n_ctx, enum tg_type type_k, enum tg_type type_v);
void tg_llama_kv_free(struct tg_llama_kv * kv);
void tg_llama_kv_zero(struct tg_llama_kv * kv);
// Cells the attention looks at for a micro-batch ending at position `end`
// (exclusive): end rounded up to 32 (llama.cpp's padding), at most n_ctx.
int32_t tg_llama_kv_n_cells(const struct tg_llama_kv * kv, int32_t end);

// One micro-batch's graph and its inputs.
struct tg_llama_ubatch_graph {
    struct tg_graph *  graph;
    struct tg_tensor * inp_tokens;  // I32 [n_tokens]
    struct tg_tensor * inp_pos;     // I32 [n_tokens]
    struct tg_tensor * kq_mask;     // F32 [n_kv, n_tokens]
    struct tg_tensor * out_ids;     // I32 [n_outputs] or NULL when every token is an output
    struct tg_tensor * logits;      // F32 [n_vocab, n_outputs] (result_output)
    int32_t n_tokens, n_outputs, n_kv, pos0;
    // The tensors whose addresses depend on pos0 (the K/V store views and
    // their copies' views): pos_views[i] sits pos_steps[i] bytes further per
    // position. Filled when the caller provides pos_views / pos_steps (room
    // for 4 per layer; build keeps the pointers), so that the same graph can
    // be moved to the next position instead of built again.
    struct tg_tensor ** pos_views;
    size_t * pos_steps;
    int n_pos_views;
};

// Builds the llama graph of n_tokens tokens at positions pos0.. over n_kv
// cache cells, with n_outputs output rows (n_outputs == n_tokens: every
// token; otherwise out_ids selects them before the last layer's FFN).
// Tensors go into ctx (no_alloc). flash_attn: one FLASH_ATTN_EXT node per
// layer (__fattn__-N) instead of kq / kq_soft_max / kqv. Returns TG_OK or the
// constructor's error.
enum tg_status tg_llama_build_graph(struct tg_context * ctx, const struct tg_llama_model * m,
                                    const struct tg_llama_kv * kv, int32_t n_tokens, int32_t pos0,
                                    int32_t n_kv, int32_t n_outputs, bool flash_attn,
                                    struct tg_llama_ubatch_graph * out);
// Nodes (upper bound) the graph of a model takes.
int tg_llama_graph_size(const struct tg_llama_model * m);

// Weights on backends (llama-sched.c): wraps the mapped file in a host
// buffer of usage WEIGHTS, each weight placed at its address in the file.
enum tg_status tg_llama_model_place_weights(struct tg_llama_model * m);
void tg_llama_model_release_weights(struct tg_llama_model * m);
// Memory for the KV cache tensors (in kv->ctx, no_alloc), zeroed; release; zero.
enum tg_status tg_llama_kv_alloc(struct tg_llama_kv * kv, const struct tg_llama_model * m);
// Moves the weights of the last params->n_gpu_layers layers (and the output
// above n_layer) into a buffer of the GPU device's memory (model load).
enum tg_status tg_llama_model_offload(struct tg_llama_model * m, const struct tg_llama_model_params * params);
void tg_llama_kv_release(struct tg_llama_kv * kv);
void tg_llama_kv_clear_memory(struct tg_llama_kv * kv);

// The compute side (llama-sched.c): memory for a graph's tensors, inputs
// set, the graph computed (eval callback, profile), results read back.
struct tg_llama_exec;
struct tg_llama_exec_hooks {
    tg_llama_eval_cb eval_cb;        // may be NULL
    void * eval_cb_user;
    struct tg_llama_op_time * prof;  // [TG_OP_COUNT] or NULL (no profiling)
};
// Nodes of the training step graph (train.c).
int tg_llama_train_graph_size(const struct tg_llama_model * m);
// devices: see tg_llama_context_params.devices. graph_size: the largest
// graph (nodes) the scheduler will see; 0 = the model's decode graph.
struct tg_llama_exec * tg_llama_exec_new(const struct tg_llama_model * m, int n_threads, const char * devices, int graph_size);
void tg_llama_exec_free(struct tg_llama_exec * e);
// Plans and assigns memory for every tensor of g (nodes and inputs).
enum tg_status tg_llama_exec_alloc(struct tg_llama_exec * e, struct tg_graph * g);
// The allocated graph had its position views moved (tg_sched_graph_moved).
enum tg_status tg_llama_exec_moved(struct tg_llama_exec * e, struct tg_graph * g, struct tg_tensor * const * moved,
                                   int n_moved);
enum tg_status tg_llama_exec_set(struct tg_llama_exec * e, struct tg_tensor * t, const void * data, size_t size);
enum tg_status tg_llama_exec_get(struct tg_llama_exec * e, const struct tg_tensor * t, void * data, size_t offset, size_t size);
enum tg_status tg_llama_exec_compute(struct tg_llama_exec * e, struct tg_graph * g, const struct tg_llama_exec_hooks * hooks);
size_t tg_llama_exec_bytes(const struct tg_llama_exec * e);
struct tg_sched * tg_llama_exec_sched(const struct tg_llama_exec * e);
// Splits and copies of the last graph.
void tg_llama_exec_splits(const struct tg_llama_exec * e, int32_t * n_splits, int32_t * n_copies);
// Reserves compute memory for the worst case (the given graph).
enum tg_status tg_llama_exec_reserve(struct tg_llama_exec * e, struct tg_graph * g);
// Forgets the last graph (before its metadata is freed).
void tg_llama_exec_reset(struct tg_llama_exec * e);
// Emits the observer marker "decode" before each micro-batch's graph:
// "n_tokens=T pos=P seq=0 ubatch=U batch_tokens=N batch_pos=P0" (T tokens at
// positions P.., micro-batch U of a decode call of N tokens from P0).
void tg_llama_exec_marker(struct tg_llama_exec * e, int32_t n_tokens, int32_t pos, int32_t ubatch,
                          int32_t batch_tokens, int32_t batch_pos, bool flash_attn);
// True when the executor's scheduler has observers of its own.
bool tg_llama_exec_observed(const struct tg_llama_exec * e);
// Whether every backend reads each tensor's address when it computes a
// graph (CPU, BLAS; CUDA, whose captured graphs are keyed by every kernel
// argument's address), so that a graph may be computed again with moved
// position views instead of being built anew.
bool tg_llama_exec_moves_ok(const struct tg_llama_exec * e);

// Small helpers.
double tg_llama_time_ms(void);

#endif
