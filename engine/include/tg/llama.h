// tg/llama.h - the llama runtime: model loading, contexts with a KV cache,
// decoding, sampling and perplexity.
//
// A model (tg_llama_model) is a GGUF file of a llama-family architecture
// ("llama" including Llama 3.x, "qwen2", "qwen3"; see engine/llama/arch.c)
// whose weights are used in place (mmapped, never copied). A context
// (tg_llama_context) owns the KV cache, the compute resources and the logits
// of the last decode. Decoding one batch: the tokens are split into
// micro-batches of n_ubatch tokens; for each one a llama graph is built with
// the node names llama.cpp uses (inp_embd, attn_norm-N, Qcur-N, kq-N,
// kqv_out-N, ffn_out-N, l_out-N, result_norm, result_output ...), its memory
// is planned and it is computed; K and V are written into the cache.
//
// Error contract: fallible functions return a status (or NULL) and set
// tg_last_error() with the details (which tensor, which key, which shape).
// Nothing here prints or exits; progress goes through callbacks.
#ifndef TG_LLAMA_H
#define TG_LLAMA_H

#include "tg/core.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tg_gguf;
struct tg_llama_model;
struct tg_llama_context;

// ---- model ----------------------------------------------------------------

// Hyper-parameters read from the GGUF keys ARCH.* (see tg_llama_model_load).
struct tg_llama_hparams {
    int32_t n_vocab;         // length of tokenizer.ggml.tokens (or of token_embd)
    int32_t n_ctx_train;     // llama.context_length
    int32_t n_embd;          // llama.embedding_length
    int32_t n_layer;         // llama.block_count
    int32_t n_ff;            // llama.feed_forward_length
    int32_t n_head;          // llama.attention.head_count
    int32_t n_head_kv;       // llama.attention.head_count_kv (default n_head)
    int32_t head_dim;        // llama.attention.key_length (default n_embd / n_head)
    int32_t n_rot;           // llama.rope.dimension_count (default head_dim)
    float   rms_eps;         // llama.attention.layer_norm_rms_epsilon
    float   rope_freq_base;  // llama.rope.freq_base (default 10000)
    float   rope_freq_scale; // 1 / llama.rope.scaling.factor when linear scaling (default 1)
    char    arch[16];        // general.architecture: "llama", "qwen2", "qwen3" (key prefix of the above)
    int32_t rope_mode;       // TG_ROPE_NORMAL (llama) or TG_ROPE_NEOX (qwen2, qwen3)
    bool    tied_output;     // no output.weight: the output projection uses token_embd
};

// Packed copies of the weights (tg_cpu_pack in tg/cpu.h): the matrices the
// CPU multiplies, interleaved 16 rows at a time for its packed kernels (every
// quantized type with AVX-512 VNNI, Q4_0 from AVX2 on), beside the file's
// bytes, which everything else still reads.
// They cost their size in memory again. AUTO (the default): when the CPU has
// the kernels and the copies take at most half of the memory available; the
// environment variable TG_REPACK=on|off|auto overrides AUTO.
enum tg_llama_repack { TG_LLAMA_REPACK_AUTO = 0, TG_LLAMA_REPACK_ON = 1, TG_LLAMA_REPACK_OFF = 2 };

struct tg_llama_model_params {
    bool check_tensors;      // verify every weight's data is finite while loading (slow); default false
    enum tg_llama_repack repack;
    // Layers whose weights live in a GPU's memory (llama.cpp's -ngl): the last
    // n_gpu_layers layers; above n_layer also the output norm and projection.
    // The token embeddings stay in host memory. 0 (default) = none.
    // Weights of a type the GPU backend cannot multiply stay in host memory.
    int32_t      n_gpu_layers;
    const char * gpu_device;  // registry name ("CUDA0"); NULL = the first GPU device
};

// Defaults: see the field comments.
struct tg_llama_model_params tg_llama_model_default_params(void);

// Opens a llama GGUF file and validates it: the hyper-parameters, then every
// tensor the graph needs (presence, shape, type among F32/F16/BF16/Q8_0/Q4_0
// for matrices and F32 for norms). The weights stay in the mapped file and
// are used in place. Returns NULL on failure with tg_last_error() naming the
// key or the tensor and what was wrong with it. The caller frees the model
// with tg_llama_model_free (after every context using it).
struct tg_llama_model * tg_llama_model_load(const char * path, const struct tg_llama_model_params * params);
// Frees the model and unmaps its file. NULL is a no-op.
void tg_llama_model_free(struct tg_llama_model * model);

// The model's hyper-parameters (owned by the model).
const struct tg_llama_hparams * tg_llama_model_hparams(const struct tg_llama_model * model);
// The open GGUF file (owned by the model): keys, vocabulary, tensor infos.
const struct tg_gguf * tg_llama_model_gguf(const struct tg_llama_model * model);
// A weight by its GGUF name ("blk.0.attn_q.weight"), or NULL. Owned by the model.
struct tg_tensor * tg_llama_model_tensor(const struct tg_llama_model * model, const char * name);
// Number of weights and their total bytes (in the file).
int64_t tg_llama_model_n_tensors(const struct tg_llama_model * model);
size_t  tg_llama_model_size(const struct tg_llama_model * model);
// Number of parameters (weight elements).
int64_t tg_llama_model_n_params(const struct tg_llama_model * model);
// The GPU device holding offloaded weights (NULL: none) and how many layers
// it holds (tg_llama_model_params.n_gpu_layers, capped at n_layer + 1).
struct tg_device;
struct tg_device * tg_llama_model_gpu_device(const struct tg_llama_model * model);
int32_t tg_llama_model_n_gpu_layers(const struct tg_llama_model * model);
// Weights with a packed copy for the CPU's kernels and the bytes of those
// copies (0 when none: see tg_llama_model_params.repack). 0 for NULL.
int32_t tg_llama_model_n_packed(const struct tg_llama_model * model, size_t * bytes);
// Bytes of weights in that GPU's memory (0 when none).
size_t tg_llama_model_gpu_bytes(const struct tg_llama_model * model);
// Bytes of weights a generation step (one token) reads in full: every weight
// but the token embedding (only its rows are read), which counts when the
// output projection is tied to it. 0 for NULL.
size_t tg_llama_model_bytes_per_token(const struct tg_llama_model * model);
// Type of most matrices ("ftype" summary: the type of blk.0.attn_q.weight).
enum tg_type tg_llama_model_weight_type(const struct tg_llama_model * model);
// The model's vocabulary and tokenizer (tg/vocab.h), loaded with the model
// from its tokenizer.* keys; owned by the model. NULL when the file has none
// or its tokenizer is not supported (tg_last_error() then says why; token
// ids still work with decode).
struct tg_vocab;
const struct tg_vocab * tg_llama_model_vocab(const struct tg_llama_model * model);
// Special tokens from the GGUF keys (-1 when absent).
int32_t tg_llama_model_bos(const struct tg_llama_model * model);
int32_t tg_llama_model_eos(const struct tg_llama_model * model);

// ---- quantization presets ---------------------------------------------------

// The type a preset ("q4_k_m", "q6_k", "iq4_xs", "q8_0", "f16" ...) gives the
// tensor `name` of shape [ne0, ne1] in a model of n_layer layers: vectors
// stay F32; output.weight and, for the _M presets, attn_v / ffn_down of some
// layers get more bits; row lengths a block does not divide fall back to a
// 32-element type. TG_TYPE_COUNT (+ last error naming the known ones) for an
// unknown preset.
enum tg_type tg_llama_quant_preset_type(const char * preset, const char * name, int n_layer, int64_t ne0, int64_t ne1);
bool         tg_llama_quant_preset_known(const char * preset);
// "f32, f16, q8_0, q4_0, q6_k, ..." for messages and help.
const char * tg_llama_quant_presets(void);
// The GGUF general.file_type number of a preset (0, F32, for an unknown one).
uint32_t     tg_llama_quant_preset_ftype(const char * preset);
// Called after each tensor: i of n done, its name and the type written.
typedef void (*tg_llama_quant_progress_fn)(int i, int n, const char * name, enum tg_type type, void * user);
// Writes `out`: the GGUF `in` with its F32/F16/BF16 matrices requantized to
// the preset's per-tensor types (vectors and already-quantized tensors copied
// as they are, every key copied, general.file_type set). TG_ERR_INVALID_ARG
// for an unknown preset, the reader's / writer's errors with the path
// otherwise (a partial output is removed by the writer).
enum tg_status tg_llama_quantize_file(const char * in, const char * out, const char * preset,
                                      tg_llama_quant_progress_fn progress, void * user);

// ---- context --------------------------------------------------------------

// The scheduler's eval-callback protocol (ggml's): for each node the engine
// first calls cb(t, true, user) ("do you want to observe t?"); for nodes that
// answered true it calls cb(t, false, user) once t is computed, with its data
// readable. Returning false from the observe call stops the computation
// (decode returns TG_ERR_ABORTED).
typedef bool (*tg_llama_eval_cb)(struct tg_tensor * t, bool ask, void * user);

// Attention path (llama.cpp's -fa): AUTO = the fused FLASH_ATTN_EXT node
// unless something watches the nodes (an eval callback, or an observer such
// as a trace recorder is attached when a graph is built): then the unfused
// kq / kq_soft_max / kqv nodes stay, so they can be inspected. ON / OFF force
// one path. The path a decode took is in its "decode" marker (attn=...).
enum tg_llama_flash_attn { TG_FLASH_ATTN_AUTO = 0, TG_FLASH_ATTN_ON = 1, TG_FLASH_ATTN_OFF = 2 };

struct tg_llama_context_params {
    int32_t      n_ctx;      // KV cache cells (max positions); 0 = the model's n_ctx_train. Default 512.
    int32_t      n_batch;    // max tokens per tg_llama_decode call (logical batch); 0 = n_ctx. Default 512.
    int32_t      n_ubatch;   // max tokens per computed graph (micro-batch); default 512 (<= n_batch)
    int32_t      n_threads;  // CPU threads; default tg_cpu_default_threads() (the physical cores)
    enum tg_type type_k;     // KV cache types: TG_TYPE_F16 (default) or TG_TYPE_F32
    enum tg_type type_v;
    bool         logits_all; // tg_llama_decode keeps the logits of every token (perplexity); default false
    enum tg_llama_flash_attn flash_attn; // attention path; default AUTO (see above)
    const char * devices;    // backends in priority order, comma-separated device names (tg/backend.h
                             // registry, e.g. "BLAS,CPU"); the CPU is appended as the fallback when
                             // missing. NULL or "" = "CPU". Weights live in a host buffer of usage
                             // WEIGHTS: the scheduler places ops by its rules (offload, expansion...).
                             // A model with offloaded layers puts its GPU device first when the list
                             // lacks it, and those layers' KV cache in that GPU's memory.
    tg_llama_eval_cb eval_cb; // optional per-node callback (see above); NULL = none
    void *       eval_cb_user;
};

// Defaults: see the field comments.
struct tg_llama_context_params tg_llama_context_default_params(void);
// Whether a generated token's graph of c uses the fused attention node (the
// flash_attn setting resolved now; with auto and every layer on a GPU,
// prompt batches of more than 8 tokens take the unfused nodes). False for NULL.
bool tg_llama_context_flash_attn(const struct tg_llama_context * c);

// Creates a context on a loaded model: allocates and zeroes the KV cache
// (n_layer x n_ctx x n_embd_kv of type_k and type_v), the thread pool and
// the compute resources, and reserves compute memory for the largest graph
// (n_ubatch tokens over n_ctx cells). NULL + last error on failure. The
// model must outlive the context.
struct tg_llama_context * tg_llama_context_new(struct tg_llama_model * model, const struct tg_llama_context_params * params);
void tg_llama_context_free(struct tg_llama_context * ctx);

// What a context with `params` on `model` would allocate, computed without
// allocating anything, so a tool can refuse a request that cannot fit before
// trying (n_ctx 0 = the model's n_ctx_train, n_batch / n_ubatch resolved as
// tg_llama_context_new does). kv_bytes is exact (the KV cache of n_ctx
// cells of type_k / type_v); compute_bytes estimates the largest graph's
// live tensors (attention scores of n_ubatch tokens over n_ctx cells, the
// layer activations, the logits) plus the context's host scratch buffers.
struct tg_llama_memory_estimate {
    int32_t n_ctx, n_batch, n_ubatch;   // the resolved sizes
    uint64_t kv_bytes;
    uint64_t compute_bytes;
};
// TG_OK, or TG_ERR_INVALID_ARG (+ last error) for parameters that
// tg_llama_context_new would refuse (n_ctx out of range, ...).
enum tg_status tg_llama_context_estimate(const struct tg_llama_model * model, const struct tg_llama_context_params * params,
                                         struct tg_llama_memory_estimate * out);
const struct tg_llama_context_params * tg_llama_context_params(const struct tg_llama_context * ctx);
const struct tg_llama_model * tg_llama_context_model(const struct tg_llama_context * ctx);
int32_t tg_llama_n_ctx(const struct tg_llama_context * ctx);

// Empties the KV cache (and zeroes it). The next decode must start at pos 0.
void tg_llama_kv_clear(struct tg_llama_context * ctx);
// Number of cache cells holding a position (= the next position to decode).
int32_t tg_llama_kv_used(const struct tg_llama_context * ctx);

// One batch of tokens at consecutive positions pos0, pos0+1, ... of the
// single sequence. `logits` (optional, n_tokens flags) says which tokens'
// logits to keep; NULL means every token with ctx->logits_all, otherwise the
// last one only.
struct tg_llama_batch {
    const int32_t * tokens;   // [n_tokens] token ids < n_vocab
    int32_t         n_tokens;
    int32_t         pos0;     // position of tokens[0]; 0 <= pos0 <= tg_llama_kv_used()
    const int8_t *  logits;   // [n_tokens] or NULL
};

// Runs the model over a batch: micro-batches of n_ubatch tokens, each one a
// graph computed on the context's backends; K/V of the batch are stored in
// the cache at cells pos0.. (cells after the batch are dropped). Returns
// TG_OK; TG_ERR_INVALID_ARG (bad token id, position, n_tokens > n_batch or
// past n_ctx), TG_ERR_ABORTED (the eval callback stopped it) or a compute
// error. On failure the cache holds positions < pos0 only.
// Before each micro-batch's graph the observer marker "decode" is emitted
// (tg/observe.h) with the text "n_tokens=T pos=P seq=0 ubatch=U
// batch_tokens=N batch_pos=P0", so traces can map graphs to tokens.
enum tg_status tg_llama_decode_batch(struct tg_llama_context * ctx, const struct tg_llama_batch * batch);
// Shorthand for a batch with logits = NULL.
enum tg_status tg_llama_decode(struct tg_llama_context * ctx, const int32_t * tokens, int32_t n_tokens, int32_t pos0);

// Logits (n_vocab floats, owned by the context, valid until the next decode)
// of token i of the last decoded batch (i < 0 counts from the end: -1 is the
// last token), or NULL (last error set) when that token's logits were not kept.
const float * tg_llama_get_logits(const struct tg_llama_context * ctx, int32_t i);

// The context's backend scheduler (owned by the context), e.g. to attach
// observers or a trace recorder to this context only.
struct tg_sched;
struct tg_sched * tg_llama_context_sched(const struct tg_llama_context * ctx);

// The last computed graph (of the last micro-batch), for summaries and tools;
// owned by the context, valid until the next decode. NULL before any decode.
struct tg_graph * tg_llama_last_graph(const struct tg_llama_context * ctx);

// Per-op timing of the computations so far (summed over graphs), filled only
// while profiling is on (it observes every node, which costs a little).
struct tg_llama_op_time {
    int64_t n_calls;   // nodes of this op computed
    double  ms;        // wall time spent in them
};
void tg_llama_set_profile(struct tg_llama_context * ctx, bool on);
// Time per op (TG_OP_COUNT entries, owned by the context).
const struct tg_llama_op_time * tg_llama_profile(const struct tg_llama_context * ctx);
void tg_llama_profile_reset(struct tg_llama_context * ctx);

// Counters of the context's work since creation.
struct tg_llama_stats {
    int64_t n_decode;      // tg_llama_decode calls
    int64_t n_graphs;      // graphs computed (micro-batches)
    int64_t n_reused;      // of them, the previous graph moved to the next position instead of
                           // built and allocated again (generation; TG_GRAPH_REUSE=0: never)
    int64_t n_tokens;      // tokens decoded
    double  ms_build;      // building graphs
    double  ms_alloc;      // planning / allocating compute memory
    double  ms_compute;    // computing
    size_t  compute_bytes; // compute memory currently held
    size_t  kv_bytes;      // KV cache bytes
    int32_t n_splits;      // splits of the last graph (runs of nodes on one backend)
    int32_t n_copies;      // split inputs copied between backends in the last graph
};
struct tg_llama_stats tg_llama_stats(const struct tg_llama_context * ctx);

// ---- sampling -------------------------------------------------------------

// Sampling chain (llama.cpp's order): top-k, top-p, min-p, temperature,
// then a draw from the softmax. temp <= 0 means greedy (argmax; ties go to
// the lowest id). The random numbers come from xoshiro256** seeded through
// splitmix64 with `seed`, so a seed gives the same tokens on every machine.
struct tg_llama_sampler_params {
    float    temp;    // default 0.8; <= 0: greedy
    int32_t  top_k;   // default 40; <= 0: off
    float    top_p;   // default 0.95; >= 1: off
    float    min_p;   // default 0.05; <= 0: off
    uint64_t seed;    // default 0x5eed
    float    repeat_penalty; // default 1 (off; <= 0 is off too): the logits of the tokens among the
                             // last repeat_last_n accepted ones (tg_llama_sampler_accept) are divided
                             // by it when positive, multiplied when negative (llama.cpp's rule)
    int32_t  repeat_last_n;  // default 64: how many accepted tokens the penalty looks at (0..65536)
};
struct tg_llama_sampler_params tg_llama_sampler_default_params(void);

struct tg_llama_sampler;
// NULL (TG_ERR_NOMEM / TG_ERR_INVALID_ARG for NaN parameters or repeat_last_n
// out of range) on failure.
struct tg_llama_sampler * tg_llama_sampler_new(const struct tg_llama_sampler_params * params);
// Tells the sampler a token was emitted or fed (the prompt's tokens, then
// each sampled one): the repeat penalty looks at the last repeat_last_n of them.
void tg_llama_sampler_accept(struct tg_llama_sampler * s, int32_t token);
void tg_llama_sampler_free(struct tg_llama_sampler * s);
// Picks a token from n_vocab logits. Deterministic for a seed and a sequence
// of calls. Returns the token id, or -1 (last error) when every logit is NaN
// or n_vocab < 1.
int32_t tg_llama_sample(struct tg_llama_sampler * s, const float * logits, int32_t n_vocab);
// Argmax of n logits (lowest index on ties; NaNs ignored); -1 if none.
int32_t tg_llama_argmax(const float * logits, int32_t n);

// ---- perplexity -----------------------------------------------------------

// Progress after each chunk: chunk index (0-based), number of chunks, the
// running perplexity estimate and the seconds spent so far.
typedef void (*tg_llama_ppl_progress)(int chunk, int n_chunks, double ppl, double seconds, void * user);

struct tg_llama_ppl_result {
    double  ppl;        // exp(mean negative log-likelihood)
    double  nll;        // mean negative log-likelihood (nats)
    double  nll_stderr; // standard error of the mean NLL
    int32_t n_chunks;
    int32_t n_scored;   // predictions scored
    int32_t n_tokens;   // tokens of the text
};

// Perplexity the llama.cpp way over tokens (tokenized WITH BOS): split into
// floor(n_tokens / n_ctx) chunks of n_ctx tokens, the first token of each
// chunk replaced by BOS, the cache cleared per chunk; positions
// n_ctx/2 .. n_ctx-2 of each chunk are scored predicting the next token.
// n_ctx is the context's n_ctx; each chunk is decoded in batches of the
// context's n_batch with every logit kept. Returns TG_OK, or
// TG_ERR_INVALID_ARG (fewer than n_ctx tokens, n_ctx < 4, no BOS token), or
// a decode error.
enum tg_status tg_llama_perplexity(struct tg_llama_context * ctx, const int32_t * tokens, int32_t n_tokens,
                                   tg_llama_ppl_progress progress, void * user,
                                   struct tg_llama_ppl_result * out);

// ---- training ------------------------------------------------------------------
// F32 copies of the model's weights are trained with next-token cross-entropy
// over batches of n_batch sequences of n_ctx tokens and AdamW (one step per
// call). The model's own weights are not changed. One graph per step holds
// the forward pass, the backward pass (tg_graph_build_backward: gradient
// nodes "grad of NAME" linked to their forward tensors), the gradient norm
// ("grad_norm") and the optimizer steps; it runs on the scheduler (devices
// as for a context), so a trace recorder sees every node, the gradient
// links and a "train" marker per step. Parameters and AdamW moments live in a
// persistent buffer (usage weights); the graph allocator keeps each gradient
// until its optimizer step and reuses the memory of everything else.
enum tg_llama_lr_schedule { TG_LR_CONSTANT = 0, TG_LR_COSINE = 1 };
struct tg_llama_train_params {
    int32_t n_ctx;          // tokens per sequence (a sequence reads n_ctx + 1: the last is only a target); default 64
    int32_t n_batch;        // sequences per step (one graph: a block-diagonal causal mask keeps them apart); default 1
    float   lr, beta1, beta2, eps, weight_decay;   // AdamW; defaults 1e-3, 0.9, 0.999, 1e-8, 0
    enum tg_llama_lr_schedule schedule;            // default constant
    float   lr_min;         // cosine: the rate reached at n_steps; default 0
    int32_t n_warmup;       // steps of linear warm-up from 0 to lr; default 0
    int32_t n_steps;        // cosine: the steps the schedule spans (later steps stay at lr_min); default 0
    int32_t n_threads;      // default tg_cpu_default_threads() (the physical cores)
    const char * devices;   // "BLAS,CPU" etc. (see tg_llama_context_params.devices); NULL = CPU
    bool    debug_grad_of_grad;   // build the graph with the classic gradient-of-gradient bug (tests of the debugger)
};
struct tg_llama_train_params tg_llama_train_default_params(void);
struct tg_llama_trainer;
// NULL with tg_last_error() on failure (bad parameters, a weight type with no
// f32 conversion, an op without a gradient, an unknown device, out of memory).
struct tg_llama_trainer * tg_llama_trainer_new(struct tg_llama_model * m, const struct tg_llama_train_params * p);
void tg_llama_trainer_free(struct tg_llama_trainer * t);
// One step on n_batch sequences tokens[b * (n_ctx + 1) ..][0..n_ctx] (inputs
// 0..n_ctx-1, targets 1..n_ctx of each): the mean loss before the update and
// the gradient's L2 norm over every parameter (either may be NULL).
// TG_ERR_INVALID_ARG for a token outside the vocabulary (naming it).
enum tg_status tg_llama_train_step(struct tg_llama_trainer * t, const int32_t * tokens, float * loss, float * grad_norm);
int tg_llama_trainer_n_params(const struct tg_llama_trainer * t);
// The learning rate step `step` (1, 2, ...) uses under the schedule.
float tg_llama_train_lr(const struct tg_llama_train_params * p, int32_t step);
// Writes the model as GGUF: the source file's key/values (general.file_type
// set to all-F32) and tensors, the trained ones as F32. TG_ERR_IO naming the
// path on failure.
enum tg_status tg_llama_trainer_save(const struct tg_llama_trainer * t, const char * path);
// The step's graph: forward nodes, then gradients, grad_norm, optimizer steps.
const struct tg_graph * tg_llama_trainer_backward_graph(const struct tg_llama_trainer * t);
// The parameter copying the model tensor named name, NULL if none.
const struct tg_tensor * tg_llama_trainer_param(const struct tg_llama_trainer * t, const char * name);

#ifdef __cplusplus
}
#endif
#endif // TG_LLAMA_H
