// context.c - the arena context: tensor structs, their data and graphs all
// come from one block of memory; tensors are kept in creation order.
#include "core-impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OBJ_HDR TG_PAD(sizeof(struct tg_object), TG_MEM_ALIGN)

size_t tg__arena_cost(size_t size) { return OBJ_HDR + TG_PAD(size, TG_MEM_ALIGN); }

size_t tg_tensor_overhead(void) { return tg__arena_cost(sizeof(struct tg_tensor)); }

struct tg_context * tg_context_new(struct tg_context_params params) {
    struct tg_context * ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        tg_error(TG_ERR_NOMEM, "context_new: cannot allocate the context struct");
        return NULL;
    }
    ctx->no_alloc = params.no_alloc;
    if (params.mem_buffer) {
        uintptr_t base = (uintptr_t) params.mem_buffer;
        uintptr_t aligned = TG_PAD(base, (uintptr_t) TG_MEM_ALIGN);
        size_t skip = (size_t) (aligned - base);
        ctx->mem = (char *) params.mem_buffer + skip;
        ctx->mem_size = params.mem_size > skip ? params.mem_size - skip : 0;
    } else if (params.mem_size > 0) {
        size_t sz = TG_PAD(params.mem_size, TG_MEM_ALIGN);
        if (sz < params.mem_size) {
            free(ctx);
            tg_error(TG_ERR_INVALID_ARG, "context_new: mem_size %zu too large", params.mem_size);
            return NULL;
        }
        ctx->mem_alloc = aligned_alloc(TG_MEM_ALIGN, sz);
        if (!ctx->mem_alloc) {
            free(ctx);
            tg_error(TG_ERR_NOMEM, "context_new: cannot allocate an arena of %zu bytes", params.mem_size);
            return NULL;
        }
        ctx->mem = ctx->mem_alloc;
        ctx->mem_size = params.mem_size;
    }
    return ctx;
}

void tg_context_free(struct tg_context * ctx) {
    if (!ctx) return;
    free(ctx->mem_alloc);
    free(ctx);
}

bool tg__arena_fits(const struct tg_context * ctx, size_t size) {
    size_t cost = tg__arena_cost(size);
    return cost >= size && cost <= ctx->mem_size - ctx->used;
}

void * tg__arena_alloc(struct tg_context * ctx, size_t size, enum tg_object_kind kind, const char * what) {
    size_t cost = tg__arena_cost(size);
    size_t left = ctx->mem_size - ctx->used;
    if (cost < size || cost > left) {
        tg_error(TG_ERR_NOMEM, "context out of memory: %s needs %zu bytes, %zu bytes left (arena of %zu bytes)",
                 what, cost, left, ctx->mem_size);
        return NULL;
    }
    struct tg_object * obj = (struct tg_object *) (ctx->mem + ctx->used);
    ctx->used += cost;
    memset(obj, 0, cost);
    obj->size = size;
    obj->kind = kind;
    if (kind == TG_OBJ_TENSOR) {
        if (ctx->last_tensor) ctx->last_tensor->next = obj;
        else ctx->first_tensor = obj;
        ctx->last_tensor = obj;
    }
    return (char *) obj + OBJ_HDR;
}

size_t tg_context_used(const struct tg_context * ctx) { return ctx ? ctx->used : 0; }
bool   tg_context_no_alloc(const struct tg_context * ctx) { return ctx ? ctx->no_alloc : false; }

static struct tg_tensor * obj_tensor(struct tg_object * obj) {
    return obj ? (struct tg_tensor *) ((char *) obj + OBJ_HDR) : NULL;
}

struct tg_tensor * tg_context_first_tensor(const struct tg_context * ctx) {
    return ctx ? obj_tensor(ctx->first_tensor) : NULL;
}

struct tg_tensor * tg_context_next_tensor(const struct tg_context * ctx, const struct tg_tensor * t) {
    if (!ctx || !t) return NULL;
    const struct tg_object * obj = (const struct tg_object *) ((const char *) t - OBJ_HDR);
    return obj_tensor(obj->next);
}

struct tg_tensor * tg_context_get_tensor(const struct tg_context * ctx, const char * name) {
    if (!ctx || !name) return NULL;
    for (struct tg_tensor * t = tg_context_first_tensor(ctx); t; t = tg_context_next_tensor(ctx, t)) {
        if (strcmp(t->name, name) == 0) return t;
    }
    return NULL;
}
