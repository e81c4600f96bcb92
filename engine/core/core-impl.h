// core-impl.h - private helpers shared by the core sources (context, tensor, ops, graph).
#ifndef TG_CORE_IMPL_H
#define TG_CORE_IMPL_H

#include "tg/core.h"

// Arena object kinds.
enum tg_object_kind { TG_OBJ_TENSOR, TG_OBJ_GRAPH, TG_OBJ_RAW };

// Every arena allocation starts with this header; the payload follows at
// the next TG_MEM_ALIGN boundary.
struct tg_object {
    struct tg_object *  next;   // next object of the same list (tensors: creation order)
    size_t              size;   // payload bytes
    enum tg_object_kind kind;
};

struct tg_context {
    size_t mem_size;           // usable arena bytes (after aligning the base)
    char * mem;                // arena base (TG_MEM_ALIGN aligned)
    void * mem_alloc;          // what we malloc'd (NULL if caller-owned)
    bool   no_alloc;
    size_t used;               // bytes handed out
    int32_t n_tensors;
    struct tg_object * first_tensor;
    struct tg_object * last_tensor;
};

#define TG_PAD(x, a) (((x) + (a) - 1) / (a) * (a))

// Allocates `size` payload bytes of kind `kind` from the arena (zeroed).
// Returns the payload, or NULL with TG_ERR_NOMEM naming `what` and the sizes.
void * tg__arena_alloc(struct tg_context * ctx, size_t size, enum tg_object_kind kind, const char * what);
// Whether tg__arena_alloc(ctx, size, ...) would find room.
bool tg__arena_fits(const struct tg_context * ctx, size_t size);
// Bytes the arena takes for a payload of `size` bytes (header + padding).
size_t tg__arena_cost(size_t size);

// New tensor with contiguous strides; view_src (may be NULL) is followed to
// its memory owner, and no data is allocated for views. `what` names the
// caller (op) for error messages. NULL + last error on failure.
struct tg_tensor * tg__new_tensor(struct tg_context * ctx, enum tg_type type, int n_dims,
                                  const int64_t * ne, struct tg_tensor * view_src, size_t view_offs,
                                  const char * what);

// Validates type, n_dims and ne (op name `what` in messages); computes the
// byte size of a contiguous tensor into *nbytes. Returns TG_OK or a status.
enum tg_status tg__check_shape(enum tg_type type, int n_dims, const int64_t * ne, size_t * nbytes, const char * what);

// ---- op constructor helpers (ops.c) ---------------------------------------

// Error helpers: set the last error to "<op>: a <shape> [and b <shape>]: <detail>"
// and return NULL.
struct tg_tensor * tg__fail1(enum tg_status st, const char * op, const struct tg_tensor * a, const char * fmt, ...)
    __attribute__((format(printf, 4, 5)));
struct tg_tensor * tg__fail2(enum tg_status st, const char * op, const struct tg_tensor * a,
                             const struct tg_tensor * b, const char * fmt, ...)
    __attribute__((format(printf, 5, 6)));
// "<op>: <what> is NULL" (mentions the previous error, the usual cause). Returns NULL.
struct tg_tensor * tg__null_arg(const char * op, const char * what);
// New result tensor of an op (4-D ne), op and sources set. NULL on failure.
struct tg_tensor * tg__op_new(struct tg_context * ctx, enum tg_op op, enum tg_type type, const int64_t * ne,
                              struct tg_tensor * src0, struct tg_tensor * src1, const char * opname);
// A view of a with a's shape and strides (no op), named "<a> (view)". NULL on failure.
struct tg_tensor * tg__view_of(struct tg_context * ctx, struct tg_tensor * a, const char * opname);
void tg__set_param_f32(struct tg_tensor * t, int i, float v);

#endif
