// tg/core.h - contexts, tensors, op constructors and compute graphs.
//
// The ggml model: a context is an arena holding tensor metadata (and tensor
// data unless created with no_alloc). Op constructors build a lazy graph: each
// result tensor records its op, op params and sources; nothing is computed
// until a graph of it is computed by a backend (tg/cpu.h, tg/backend.h).
//
// Shapes: ne[0] is the innermost (fastest varying) dimension, nb[i] the byte
// stride of dimension i. Comments give shapes as [ne0, ne1, ne2, ne3].
//
// Error contract: every constructor returns NULL on bad input (shapes, types,
// NULL arguments, context full) and sets tg_last_error() to a message naming
// the op and the shapes. It never aborts on user input.
#ifndef TG_CORE_H
#define TG_CORE_H

#include "tg/status.h"
#include "tg/types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_MAX_DIMS       4
#define TG_MAX_SRC        6
#define TG_MAX_OP_PARAMS  16   // int32 slots
#define TG_MAX_NAME       64
#define TG_MEM_ALIGN      64

// Ops. Append-only; the names (tg_op_name) follow ggml's spelling so traces
// line up with other engines' per-node dumps.
enum tg_op {
#define TG_OP_DEF(e, name) TG_OP_##e,
#include "tg/ops.def"
#undef TG_OP_DEF
    TG_OP_COUNT
};

// Tensor flags.
enum tg_tensor_flag {
    TG_FLAG_INPUT  = 1 << 0,  // set by the host before compute; never reused by the allocator
    TG_FLAG_OUTPUT = 1 << 1,  // read by the host after compute; never reused by the allocator
    TG_FLAG_PARAM  = 1 << 2,  // trainable parameter
    TG_FLAG_LOSS   = 1 << 3,  // loss value
};

// Variants of TG_OP_GLU (op_params[0]); op_params[1] = swapped (gate in 2nd half).
enum tg_glu_op { TG_GLU_SWIGLU = 0, TG_GLU_GEGLU, TG_GLU_REGLU, TG_GLU_COUNT };

// Rope modes (op_params[1] of TG_OP_ROPE).
enum tg_rope_mode { TG_ROPE_NORMAL = 0, TG_ROPE_NEOX = 2 };

struct tg_context;
struct tg_buffer;     // backend buffer (tg/backend.h)

struct tg_tensor {
    enum tg_type type;
    int64_t      ne[TG_MAX_DIMS];   // elements per dimension
    size_t       nb[TG_MAX_DIMS];   // byte strides: nb[0] = type size, nb[1] = row bytes ...
    enum tg_op   op;
    int32_t      op_params[TG_MAX_OP_PARAMS];  // layout per op: see the constructors
    int32_t      flags;             // enum tg_tensor_flag
    struct tg_tensor * src[TG_MAX_SRC];
    struct tg_tensor * view_src;    // tensor whose memory this one views (NULL if none)
    size_t       view_offs;         // byte offset into view_src
    void *       data;              // host address of element 0, or NULL (no memory / device)
    struct tg_buffer * buffer;      // backend buffer holding the data, or NULL
    char         name[TG_MAX_NAME];
    void *       extra;             // backend-specific (e.g. a device pointer)
    void *       user;              // free for the application
    struct tg_context * ctx;        // owning context
    int32_t      id;                // creation index within the context
    struct tg_tensor * grad;        // its gradient, once tg_graph_build_backward made one
    struct tg_tensor * grad_of;     // for a gradient: the tensor it is the gradient of
};

// ---- contexts -------------------------------------------------------------

struct tg_context_params {
    size_t mem_size;    // arena bytes for tensor structs (+ data unless no_alloc)
    void * mem_buffer;  // caller-owned arena, or NULL to allocate one
    bool   no_alloc;    // if true, tensors get no data (a backend allocates them)
};

// Creates a context. Returns NULL (TG_ERR_NOMEM / TG_ERR_INVALID_ARG) on failure.
struct tg_context * tg_context_new(struct tg_context_params params);
// Frees the context and, unless caller-owned, its arena. NULL is a no-op.
void   tg_context_free(struct tg_context * ctx);
// Bytes of arena one tensor's metadata takes (for sizing no_alloc contexts).
size_t tg_tensor_overhead(void);
// Bytes of arena a graph of `size` nodes takes.
size_t tg_graph_overhead(int size);
size_t tg_context_used(const struct tg_context * ctx);
bool   tg_context_no_alloc(const struct tg_context * ctx);
// Iterate the tensors of a context in creation order (NULL at the end).
struct tg_tensor * tg_context_first_tensor(const struct tg_context * ctx);
struct tg_tensor * tg_context_next_tensor(const struct tg_context * ctx, const struct tg_tensor * t);
// First tensor of the context with this name, or NULL.
struct tg_tensor * tg_context_get_tensor(const struct tg_context * ctx, const char * name);

// ---- tensors --------------------------------------------------------------

// New tensor with contiguous strides. n_dims in 1..4, every ne >= 1 (ne0 a
// multiple of the type's block size). NULL + last error on failure.
struct tg_tensor * tg_new_tensor(struct tg_context * ctx, enum tg_type type, int n_dims, const int64_t * ne);
struct tg_tensor * tg_new_tensor_1d(struct tg_context * ctx, enum tg_type type, int64_t ne0);
struct tg_tensor * tg_new_tensor_2d(struct tg_context * ctx, enum tg_type type, int64_t ne0, int64_t ne1);
struct tg_tensor * tg_new_tensor_3d(struct tg_context * ctx, enum tg_type type, int64_t ne0, int64_t ne1, int64_t ne2);
struct tg_tensor * tg_new_tensor_4d(struct tg_context * ctx, enum tg_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);
// Same type and shape as src, new memory (no op).
struct tg_tensor * tg_dup_tensor(struct tg_context * ctx, const struct tg_tensor * src);

// Name (truncated to TG_MAX_NAME-1). Returns t.
struct tg_tensor * tg_set_name(struct tg_tensor * t, const char * name);
struct tg_tensor * tg_format_name(struct tg_tensor * t, const char * fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char * tg_get_name(const struct tg_tensor * t);
void tg_set_input(struct tg_tensor * t);
void tg_set_output(struct tg_tensor * t);
void tg_set_param(struct tg_tensor * t);
void tg_set_loss(struct tg_tensor * t);

int64_t tg_nelements(const struct tg_tensor * t);
int64_t tg_nrows(const struct tg_tensor * t);          // ne1*ne2*ne3
size_t  tg_nbytes(const struct tg_tensor * t);         // bytes spanned, strides included
int     tg_n_dims(const struct tg_tensor * t);         // 1 + index of the last ne > 1
bool    tg_is_contiguous(const struct tg_tensor * t);  // dense row-major, no gaps
bool    tg_is_contiguous_rows(const struct tg_tensor * t); // nb0 == type size (rows dense)
bool    tg_is_transposed(const struct tg_tensor * t);  // nb0 > nb1
bool    tg_is_permuted(const struct tg_tensor * t);
bool    tg_is_view(const struct tg_tensor * t);
bool    tg_are_same_shape(const struct tg_tensor * a, const struct tg_tensor * b);
bool    tg_can_repeat(const struct tg_tensor * a, const struct tg_tensor * b); // b's shape multiple of a's
// Formats "[ne0,ne1,ne2,ne3] type" into buf (always NUL-terminated); returns buf.
char *  tg_shape_str(const struct tg_tensor * t, char * buf, size_t n);

const char * tg_op_name(enum tg_op op);       // "MUL_MAT"; "UNKNOWN" if out of range
// Ops whose result aliases their first source's memory (VIEW, RESHAPE, PERMUTE, TRANSPOSE).
bool    tg_op_is_view(enum tg_op op);
int32_t tg_get_op_param_i32(const struct tg_tensor * t, int i);
float   tg_get_op_param_f32(const struct tg_tensor * t, int i);

// Element access for host tensors with data (contiguous or not; any
// supported type, converted). For tests and tools, not for hot loops.
float tg_get_f32_nd(const struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3);
// tg_get_f32_nd returns NaN (and sets the last error) without data or out of
// range; quantized types are dequantized. tg_set_f32_nd cannot write quantized
// types: it leaves them unchanged and sets TG_ERR_UNSUPPORTED.
void  tg_set_f32_nd(struct tg_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float v);

// ---- ops (results are new tensors unless noted "view" / "in place") -------
// Unless stated otherwise elementwise ops take F32 (F16/BF16 where noted) and
// the result has a's type and shape.

struct tg_tensor * tg_dup(struct tg_context * ctx, struct tg_tensor * a);            // contiguous copy
struct tg_tensor * tg_cpy(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b); // a -> b (converting; same nelements); result views b; src[0] = a, src[1] = b
struct tg_tensor * tg_cont(struct tg_context * ctx, struct tg_tensor * a);           // contiguous copy, same shape
struct tg_tensor * tg_cont_4d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);

// Binary ops: b is broadcast to a (a->ne[i] % b->ne[i] == 0).
struct tg_tensor * tg_add(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
struct tg_tensor * tg_sub(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
struct tg_tensor * tg_mul(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
struct tg_tensor * tg_div(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
struct tg_tensor * tg_add_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
struct tg_tensor * tg_sub_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
struct tg_tensor * tg_mul_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
struct tg_tensor * tg_div_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);

// op_params[0] = s (f32 bits).
struct tg_tensor * tg_scale(struct tg_context * ctx, struct tg_tensor * a, float s);
struct tg_tensor * tg_scale_inplace(struct tg_context * ctx, struct tg_tensor * a, float s);

// Unary elementwise ops (F32).
struct tg_tensor * tg_sqr (struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_sqrt(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_log (struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_neg (struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_abs (struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_silu(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_gelu(struct tg_context * ctx, struct tg_tensor * a);  // tanh approximation
struct tg_tensor * tg_relu(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_sqr_inplace (struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_sqrt_inplace(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_log_inplace (struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_neg_inplace (struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_abs_inplace (struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_silu_inplace(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_gelu_inplace(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_relu_inplace(struct tg_context * ctx, struct tg_tensor * a);

// Reductions (F32 in, F32 out).
struct tg_tensor * tg_sum(struct tg_context * ctx, struct tg_tensor * a);        // [*] -> [1]
struct tg_tensor * tg_sum_rows(struct tg_context * ctx, struct tg_tensor * a);   // [n,a,b,c] -> [1,a,b,c]
struct tg_tensor * tg_mean(struct tg_context * ctx, struct tg_tensor * a);       // [n,a,b,c] -> [1,a,b,c]
struct tg_tensor * tg_argmax(struct tg_context * ctx, struct tg_tensor * a);     // [n,r] -> [r] I32 (a 2-D)

// Tiles a to b's shape (b->ne[i] % a->ne[i] == 0); b supplies only the shape.
struct tg_tensor * tg_repeat(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
// Concatenates along dim (op_params[0]); other dims equal. Same types.
struct tg_tensor * tg_concat(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, int dim);

// Rows of a picked by I32 ids: a [n,r,x,y] (any supported type), b [m,x,y] I32 -> F32 [n,m,x,y].
struct tg_tensor * tg_get_rows(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
// Writes rows of b (F32 [n,m,x,y]) into a ([n,r,x,y], any type, converted) at
// rows c (I32 or I64 [m,x,y]); result views a (in place).
// Sources: src[0] = a (also the result's view_src), src[1] = b (the rows),
// src[2] = c (the ids).
struct tg_tensor * tg_set_rows(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, struct tg_tensor * c);

// Matrix product, the ggml convention: a [k,m,p,q] (weights; any supported
// type), b [k,n,r,s] (F32, F16 or BF16), r % p == 0, s % q == 0 ->
// F32 [m,n,r,s] with result[i,j] = dot(a row i, b row j).
struct tg_tensor * tg_mul_mat(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
// Outer-product sum: a [m,k,p,q], b [n,k,r,s] (F32) -> F32 [m,n,r,s] with
// result[i,j] = sum_l a[i,l] * b[j,l].
struct tg_tensor * tg_out_prod(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);

// Row normalisation over ne0 (F32): op_params[0] = eps (f32 bits).
struct tg_tensor * tg_rms_norm(struct tg_context * ctx, struct tg_tensor * a, float eps);
struct tg_tensor * tg_norm(struct tg_context * ctx, struct tg_tensor * a, float eps);
struct tg_tensor * tg_rms_norm_inplace(struct tg_context * ctx, struct tg_tensor * a, float eps);
struct tg_tensor * tg_norm_inplace(struct tg_context * ctx, struct tg_tensor * a, float eps);

// softmax(a*scale + mask) over ne0. a F32 [n,m,x,y]; mask NULL or F32/F16
// [n,m',x',y'] with m' >= m, broadcast over dims 2,3 (x % x' == 0, y % y' == 0).
// op_params[0] = scale, [1] = max_bias (ALiBi; 0 = off), f32 bits.
struct tg_tensor * tg_soft_max(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_soft_max_inplace(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_soft_max_ext(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * mask, float scale, float max_bias);

// Fused attention: out[:, h, t] = sum_c softmax_c(scale * k[:, c, h'] . q[:, t, h]
// + mask[c, t]) * v[c, :, h'], h' = h / (H / Hk) (grouped-query heads), computed
// with an online softmax over blocks of cells (the scores are never stored).
// q F32 [D, T, H] (any strides, e.g. a permuted view); k F16/F32 [D, C, Hk]
// with contiguous rows; v F16/F32 [C, Dv, Hk] given transposed (cells along
// ne0, contiguous), as the llama KV cache keeps it; mask NULL or F32/F16
// [C, T'] (T' >= T, contiguous rows), shared by the heads. Result F32
// [Dv, H, T] (contiguous), i.e. the heads of a token side by side.
// op_params[0] = scale (f32 bits). A row whose scores are all -inf gives
// zeros; a NaN score makes the row NaN.
struct tg_tensor * tg_flash_attn_ext(struct tg_context * ctx, struct tg_tensor * q, struct tg_tensor * k,
                                     struct tg_tensor * v, struct tg_tensor * mask, float scale);

// Rotary embedding. a F32 [d,h,n,1] (head dim, heads, tokens), pos I32 [n].
// Rotates the first n_dims (even, <= d) of each row; mode TG_ROPE_NORMAL
// pairs (2i, 2i+1), TG_ROPE_NEOX pairs (i, i + n_dims/2).
// theta = pos * freq_scale * freq_base^(-2i/n_dims).
// op_params: [0] n_dims, [1] mode, [2] n_ctx_orig, [3] freq_base (f32 bits),
// [4] freq_scale (f32 bits).
struct tg_tensor * tg_rope(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * pos,
                           int n_dims, int mode, float freq_base, float freq_scale);
struct tg_tensor * tg_rope_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * pos,
                           int n_dims, int mode, float freq_base, float freq_scale);
// tg_rope with per-pair frequency factors (Llama 3.1's rope_freqs.weight):
// freq_factors F32 [>= n_dims/2] (src[2]; NULL: all 1) divides the angle of
// pair i: theta_i = pos * freq_scale * freq_base^(-2i/n_dims) / ff[i].
struct tg_tensor * tg_rope_ext(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * pos,
                               struct tg_tensor * freq_factors, int n_dims, int mode, float freq_base, float freq_scale);

// Gated linear units (F32). With b == NULL, a [2n,...] is split in halves
// (x = first half, gate = second half, or swapped); with b, x = a and gate = b
// (same shape). Result [n,...]: act(x) * gate. op_params[0] = enum tg_glu_op,
// [1] = swapped.
struct tg_tensor * tg_glu(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, enum tg_glu_op op, bool swapped);
struct tg_tensor * tg_swiglu(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_swiglu_split(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);
struct tg_tensor * tg_geglu(struct tg_context * ctx, struct tg_tensor * a);
struct tg_tensor * tg_reglu(struct tg_context * ctx, struct tg_tensor * a);

// Sets a[i,j] = -INF for i > n_past + j (causal mask), F32. op_params[0] = n_past.
struct tg_tensor * tg_diag_mask_inf(struct tg_context * ctx, struct tg_tensor * a, int n_past);
struct tg_tensor * tg_diag_mask_inf_inplace(struct tg_context * ctx, struct tg_tensor * a, int n_past);

// Views (no copy; result->view_src is a's memory owner, view_offs the byte offset).
// op VIEW, src[0] = a; op_params[0..1] hold the size_t offset relative to a.
// nb0 of a view is the type size; the view must lie inside the owner's memory.
// In-place variants of other ops are views too (view_src set, op the op's).
struct tg_tensor * tg_view_1d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, size_t offset);
struct tg_tensor * tg_view_2d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset);
struct tg_tensor * tg_view_3d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset);
struct tg_tensor * tg_view_4d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t offset);
struct tg_tensor * tg_view_tensor(struct tg_context * ctx, struct tg_tensor * a); // same shape/strides
// Reshape a contiguous tensor (same nelements).
struct tg_tensor * tg_reshape(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b); // to b's shape
struct tg_tensor * tg_reshape_1d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0);
struct tg_tensor * tg_reshape_2d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1);
struct tg_tensor * tg_reshape_3d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2);
struct tg_tensor * tg_reshape_4d(struct tg_context * ctx, struct tg_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);
// Axis i of a becomes axis axis_i of the result (ggml semantics). op_params[0..3] = axes.
struct tg_tensor * tg_permute(struct tg_context * ctx, struct tg_tensor * a, int axis0, int axis1, int axis2, int axis3);
struct tg_tensor * tg_transpose(struct tg_context * ctx, struct tg_tensor * a); // swap dims 0 and 1

// Mean over rows of -sum(b * log_softmax(a)) -> F32 [1]. a, b F32 [n,m] same shape.
struct tg_tensor * tg_cross_entropy_loss(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b);

// Result is a copy of a (a view of a if in place) in which the view of it with
// strides nb1, nb2, nb3 at byte offset `offset` and b's shape is set to b (SET)
// or has b added (ACC). F32. op_params: [0] nb1, [1] nb2, [2] nb3, [3] offset, [4] inplace.
struct tg_tensor * tg_set(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, size_t nb1, size_t nb2, size_t nb3, size_t offset);
struct tg_tensor * tg_set_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, size_t nb1, size_t nb2, size_t nb3, size_t offset);
struct tg_tensor * tg_acc(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, size_t nb1, size_t nb2, size_t nb3, size_t offset);
struct tg_tensor * tg_acc_inplace(struct tg_context * ctx, struct tg_tensor * a, struct tg_tensor * b, size_t nb1, size_t nb2, size_t nb3, size_t offset);

// True when op t may overwrite its src[0]'s memory in place (the graph
// allocator uses this): elementwise ops and norms with identical layouts.
bool tg_op_can_inplace(const struct tg_tensor * t);

// ---- graphs ---------------------------------------------------------------

struct tg_graph {
    int size;                    // capacity of nodes and leafs
    int n_nodes;                 // tensors with an op, in execution order
    int n_leafs;                 // tensors without op (weights, inputs, constants)
    struct tg_tensor ** nodes;
    struct tg_tensor ** leafs;
    // visited set (open addressing over tensor pointers); private
    size_t hash_size;
    struct tg_tensor ** hash_keys;
};

#define TG_DEFAULT_GRAPH_SIZE 2048

// New empty graph of capacity `size` in ctx's arena. NULL on failure.
struct tg_graph * tg_graph_new(struct tg_context * ctx, int size);
// Appends t and, first, all its not yet visited sources (and view sources),
// depth first: nodes in execution order, leafs separately. Returns
// TG_ERR_NOMEM (graph full, message says the capacity) on failure; the graph
// is then incomplete (tg_graph_reset_visited and rebuild in a larger one).
enum tg_status tg_graph_build_forward(struct tg_graph * g, struct tg_tensor * t);

// Backward ops (what tg_graph_build_backward uses; usable directly):
// silu_back: g * silu'(x), x and g F32 of one shape.
struct tg_tensor * tg_silu_back(struct tg_context * ctx, struct tg_tensor * x, struct tg_tensor * g);
// rms_norm_back: the gradient w.r.t. x of rms_norm(x, eps) (rows over ne0)
// given the gradient g of its result; x, g F32 of one shape. op_params[0] = eps.
struct tg_tensor * tg_rms_norm_back(struct tg_context * ctx, struct tg_tensor * x, struct tg_tensor * g, float eps);
// get_rows_back: rows of g (F32 [n,m]) added into a zero [n, like.ne1] at
// rows ids (I32 [m]): the gradient of get_rows(like, ids). F32 [n, like.ne1].
struct tg_tensor * tg_get_rows_back(struct tg_context * ctx, struct tg_tensor * g, struct tg_tensor * ids,
                                    struct tg_tensor * like);
// unary_back: g * f'(x) for f = RELU or GELU (tanh form), or, for
// DIAG_MASK, g with the elements diag_mask_inf(., n_past) masks set to 0
// (x is then ignored). x, g F32 of one shape. op_params[0] = kind, [1] = n_past.
enum tg_unary_back { TG_UNARY_BACK_RELU = 0, TG_UNARY_BACK_GELU = 1, TG_UNARY_BACK_DIAG_MASK = 2 };
struct tg_tensor * tg_unary_back(struct tg_context * ctx, struct tg_tensor * x, struct tg_tensor * g,
                                 enum tg_unary_back kind, int n_past);
// norm_back: the gradient w.r.t. x of norm(x, eps) given g. op_params[0] = eps.
struct tg_tensor * tg_norm_back(struct tg_context * ctx, struct tg_tensor * x, struct tg_tensor * g, float eps);

// Optimizer steps as graph ops: each updates the parameter p (F32,
// contiguous) in place from its gradient g (same shape) and returns a view of
// p; the hyper-parameters are a small F32 tensor set before each step, so one
// graph serves every step.
// SGD: hp = [lr, wd]:  p -= lr * (g + wd * p).
struct tg_tensor * tg_opt_step_sgd(struct tg_context * ctx, struct tg_tensor * p, struct tg_tensor * g, struct tg_tensor * hp);
// AdamW: hp = [lr, beta1, beta2, eps, wd, 1 / (1 - beta1^t), 1 / (1 - beta2^t)] for step t (1, 2, ...);
// m, v (F32, p's shape, zero before the first step) are updated in place:
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   p -= lr * (m / (1 - beta1^t) / (sqrt(v / (1 - beta2^t)) + eps) + wd * p)
struct tg_tensor * tg_opt_step_adamw(struct tg_context * ctx, struct tg_tensor * p, struct tg_tensor * g,
                                     struct tg_tensor * m, struct tg_tensor * v, struct tg_tensor * hp);

// ---- backward (automatic differentiation) ------------------------------------
struct tg_backward_options {
    bool second_order;   // also differentiate the gradient nodes (not supported yet: TG_ERR_UNSUPPORTED)
    // Deliberately builds the classic backward-builder bug, for testing the
    // tools that must find it: every gradient node G also gets a gradient
    // "grad of G" (zeros, G scaled by 0, linked with grad/grad_of) that no one
    // asked for. Never set it to train.
    bool debug_grad_of_grad;
};
// Builds into gb (empty, or holding gf's nodes) gf's nodes followed by the
// backward pass for the scalar loss (a node of gf, F32, one element): every
// tensor flagged TG_FLAG_PARAM that the loss depends on, and every node
// between, gets t->grad, a node named "grad of NAME" with grad->grad_of = t;
// uses add up. The seed is a leaf "grad of LOSS" flagged input, set to 1 when
// the context allocates data (else the caller sets it). Gradient nodes never
// get gradients themselves. An op without a gradient gives
// TG_ERR_UNSUPPORTED naming the op and the tensor that needed it.
// Differentiable ops: ADD, SUB, MUL, DIV (b broadcast along whole
// dimensions), SCALE, SQR, SQRT, LOG, NEG, SUM, SUM_ROWS, MEAN, REPEAT (whole
// dimensions), MUL_MAT (F32, batched, no broadcast), RESHAPE, PERMUTE,
// TRANSPOSE, CONT, CPY, SOFT_MAX (scale, constant mask), CROSS_ENTROPY_LOSS
// (w.r.t. the logits), SILU, RMS_NORM, GET_ROWS (2-D F32 table), ROPE,
// GLU (SWIGLU, split or halves), CONCAT, OUT_PROD (no broadcast), VIEW (of a
// contiguous tensor), RELU, GELU, NORM, DIAG_MASK_INF.
enum tg_status tg_graph_build_backward(struct tg_context * ctx, struct tg_graph * gf, struct tg_graph * gb,
                                       struct tg_tensor * loss, const struct tg_backward_options * opt);
// A graph over nodes [i0, i1) of g sharing its arrays (no leafs, no hash).
struct tg_graph tg_graph_view(struct tg_graph * g, int i0, int i1);
// Empties g (no nodes, no leafs, visited set cleared; capacity kept) for a rebuild.
void tg_graph_reset_visited(struct tg_graph * g);
// Node with that name, or NULL.
struct tg_tensor * tg_graph_get_tensor(const struct tg_graph * g, const char * name);
// Writes a printable summary (one line per node: index, op, name, shape,
// sources) into buf; returns the length it needed (like snprintf).
size_t tg_graph_summary(const struct tg_graph * g, char * buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif // TG_CORE_H
