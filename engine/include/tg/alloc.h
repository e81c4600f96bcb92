// tg/alloc.h - the linear tensor allocator and the graph allocator (gallocr).
//
// The graph allocator plans where every intermediate of a graph lives: one
// buffer per buffer type, a free-block list with best fit and merging of
// adjacent free blocks, memory of a tensor handed to later tensors after its
// last consumer ran, and in-place reuse of a parent's memory when the op
// allows it (tg_op_can_inplace) and the parent has no other consumer and is
// not an input, output, leaf or view of a weight. Tensors flagged
// TG_FLAG_INPUT or TG_FLAG_OUTPUT are never reused; views keep their source
// alive until the last view consumer.
//
// Plans are per node index: reserve a worst-case graph once, then
// tg_gallocr_alloc_graph places later graphs of the same shape without
// re-planning when they fit, and re-plans (growing buffers) when not.
//
// Everything it decided is data (tg_alloc_tensor_info, tg_alloc_buffer_info):
// which buffer, which offset, how many bytes, in place of which parent, and
// the node steps between which the tensor's bytes are live. After the next
// graph is allocated, the previous graph's intermediates are no longer valid:
// their bytes belong to whatever tensor the new allocation data names.
#ifndef TG_ALLOC_H
#define TG_ALLOC_H

#include "tg/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- linear allocator (tallocr) --------------------------------------------
// Places tensors one after another in a buffer (aligned). No freeing.
struct tg_tallocr {
    struct tg_buffer * buffer;
    void *             base;
    size_t             alignment;
    size_t             offset;
};
struct tg_tallocr tg_tallocr_new(struct tg_buffer * buffer);
// Places t at the next aligned offset. TG_ERR_NOMEM (sizes named) if it does
// not fit; views are given their source's memory instead.
enum tg_status tg_tallocr_alloc(struct tg_tallocr * talloc, struct tg_tensor * t);

// ---- graph allocator --------------------------------------------------------

struct tg_gallocr;

// How a tensor got its memory.
enum tg_alloc_kind {
    TG_ALLOC_NONE = 0,      // not placed (not in the graph / failed)
    TG_ALLOC_PREALLOCATED,  // already had memory (weights, another buffer)
    TG_ALLOC_PLANNED,       // new range in a compute buffer
    TG_ALLOC_INPLACE,       // took over its parent's range (inplace_of)
    TG_ALLOC_VIEW,          // view: memory of view_src
    TG_ALLOC_KIND_COUNT
};
const char * tg_alloc_kind_name(enum tg_alloc_kind kind); // "prealloc", "planned", ...

struct tg_alloc_tensor_info {
    struct tg_tensor * tensor;       // the graph's tensor (node or leaf)
    bool               is_leaf;
    int                index;        // index in graph nodes (or leafs when is_leaf)
    enum tg_alloc_kind kind;
    int                buffer_id;    // index into the gallocr's buffers, -1 if not ours
    struct tg_buffer * buffer;       // buffer holding the bytes (views: the source's)
    size_t             offset;       // byte offset in buffer (views: source offset + view_offs)
    size_t             size;         // bytes reserved (alloc size, aligned)
    struct tg_tensor * inplace_of;   // parent whose range it took over (TG_ALLOC_INPLACE)
    int                first_step;   // first node step its bytes are live (allocated)
    int                last_step;    // last node step (freed after it); n_nodes-1 if kept
    bool               released;     // its range went back to the allocator after last_step
                                     // (false: kept to the end, or handed to an in-place child)
};

struct tg_alloc_buffer_info {
    struct tg_buffer *      buffer;     // NULL until allocated
    struct tg_buffer_type * buft;
    size_t                  size;       // bytes of the buffer
    size_t                  high_water; // bytes the current plan needs (<= size)
};

struct tg_gallocr_options {
    bool no_reuse;    // every tensor gets its own range (for comparisons)
    bool no_inplace;  // never take over a parent's range
};

// New graph allocator for one buffer type (or n; repeated types share one
// buffer). Buffers are created by reserve/alloc, usage COMPUTE. NULL on OOM.
struct tg_gallocr * tg_gallocr_new(struct tg_buffer_type * buft);
struct tg_gallocr * tg_gallocr_new_n(struct tg_buffer_type ** bufts, int n_bufts);
void tg_gallocr_free(struct tg_gallocr * galloc);   // frees its buffers; NULL no-op
void tg_gallocr_set_options(struct tg_gallocr * galloc, struct tg_gallocr_options opts);

// Plans g as the worst case and (re)allocates the buffers to fit it. Tensors
// are not placed. node_buffer_ids/leaf_buffer_ids (NULL = all 0) give each
// node/leaf's buffer-type index. TG_ERR_NOMEM / TG_ERR_INVALID_ARG on failure.
enum tg_status tg_gallocr_reserve(struct tg_gallocr * galloc, struct tg_graph * g);
enum tg_status tg_gallocr_reserve_n(struct tg_gallocr * galloc, struct tg_graph * g,
                                    const int * node_buffer_ids, const int * leaf_buffer_ids);
// Places every node and leaf of g that has no memory (sets data, buffer).
// Reuses the reserved plan when g has the same shape and fits; re-plans
// (buffers may be reallocated: earlier placements become invalid) otherwise.
enum tg_status tg_gallocr_alloc_graph(struct tg_gallocr * galloc, struct tg_graph * g);
enum tg_status tg_gallocr_alloc_graph_n(struct tg_gallocr * galloc, struct tg_graph * g,
                                        const int * node_buffer_ids, const int * leaf_buffer_ids);

// ---- allocation data --------------------------------------------------------
int    tg_gallocr_n_buffers(const struct tg_gallocr * galloc);   // distinct buffers
const struct tg_alloc_buffer_info * tg_gallocr_buffer_info(const struct tg_gallocr * galloc, int i);
// Size of the buffer serving buffer-type index buffer_id (0 before any reserve).
size_t tg_gallocr_get_buffer_size(const struct tg_gallocr * galloc, int buffer_id);
// Distinct buffer index (for tg_gallocr_buffer_info) serving buffer-type index buft_index, -1 if out of range.
int    tg_gallocr_buffer_of_buft(const struct tg_gallocr * galloc, int buft_index);
// Per tensor data of the last allocated (or reserved) graph: leafs first, then nodes.
int    tg_gallocr_n_tensors(const struct tg_gallocr * galloc);
// After the caller moved views of memory the allocator does not plan (their
// data pointers changed, e.g. a KV cache's store views): their recorded
// offsets (and those of preallocated tensors) read again from the tensors.
void   tg_gallocr_refresh_offsets(struct tg_gallocr * galloc);
const struct tg_alloc_tensor_info * tg_gallocr_tensor_info(const struct tg_gallocr * galloc, int i);
// Info for t in the last graph, or NULL.
const struct tg_alloc_tensor_info * tg_gallocr_find(const struct tg_gallocr * galloc, const struct tg_tensor * t);
// Tensors of the last graph whose bytes overlap [offset, offset+size) of
// buffer; fills up to max entries, returns the total count.
int    tg_gallocr_find_overlapping(const struct tg_gallocr * galloc, const struct tg_buffer * buffer,
                                   size_t offset, size_t size,
                                   const struct tg_alloc_tensor_info ** out, int max);
// True when buf is (or was, before a reallocation) one of this allocator's buffers.
bool   tg_gallocr_owns_buffer(const struct tg_gallocr * galloc, const struct tg_buffer * buf);
// Number of graphs placed so far (1 after the first alloc_graph) and of plans made.
uint64_t tg_gallocr_graph_seq(const struct tg_gallocr * galloc);
int    tg_gallocr_n_plans(const struct tg_gallocr * galloc);
// Number of tensors placed in place of a parent in the last plan.
int    tg_gallocr_n_inplace(const struct tg_gallocr * galloc);

#ifdef __cplusplus
}
#endif
#endif // TG_ALLOC_H
