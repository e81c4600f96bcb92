// tallocr.c - the linear allocator and tg_backend_alloc_ctx_tensors.
#include "sched/backend-impl.h"
#include "tg/alloc.h"

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

struct tg_tallocr tg_tallocr_new(struct tg_buffer * buffer) {
    struct tg_tallocr t = { 0 };
    t.buffer = buffer;
    t.base = tg_buffer_get_base(buffer);
    t.alignment = buffer ? tg_buft_get_alignment(buffer->buft) : TG_MEM_ALIGN;
    t.offset = 0;
    return t;
}

enum tg_status tg_tallocr_alloc(struct tg_tallocr * ta, struct tg_tensor * t) {
    char lb[64];
    if (!ta || !ta->buffer || !t) return tg_error(TG_ERR_INVALID_ARG, "tg_tallocr_alloc: NULL allocator, buffer or tensor");
    if (t->view_src) return tg_buffer_init_view(t);
    size_t size = align_up(tg_buft_get_alloc_size(ta->buffer->buft, t), ta->alignment);
    if (ta->offset + size > ta->buffer->size)
        return tg_error(TG_ERR_NOMEM, "tensor %s needs %zu bytes at offset %zu of buffer %s (%zu bytes)",
                        tg_tensor_label(t, lb, sizeof lb), size, ta->offset, tg_buffer_name(ta->buffer), ta->buffer->size);
    enum tg_status st = tg_buffer_alloc_tensor(ta->buffer, t, (char *) ta->base + ta->offset);
    if (st == TG_OK) ta->offset += size;
    return st;
}

struct tg_buffer * tg_backend_alloc_ctx_tensors_from_buft(struct tg_context * ctx, struct tg_buffer_type * buft) {
    if (!ctx || !buft) { tg_error(TG_ERR_INVALID_ARG, "tg_backend_alloc_ctx_tensors: NULL context or buffer type"); return NULL; }
    size_t align = tg_buft_get_alignment(buft);
    size_t total = 0;
    int n = 0;
    for (struct tg_tensor * t = tg_context_first_tensor(ctx); t; t = tg_context_next_tensor(ctx, t)) {
        if (t->data || t->view_src) continue;
        total += align_up(tg_buft_get_alloc_size(buft, t), align);
        n++;
    }
    if (n == 0) { tg_clear_error(); return NULL; }
    struct tg_buffer * buf = tg_buft_alloc_buffer(buft, total);
    if (!buf) return NULL;
    struct tg_tallocr ta = tg_tallocr_new(buf);
    for (struct tg_tensor * t = tg_context_first_tensor(ctx); t; t = tg_context_next_tensor(ctx, t)) {
        enum tg_status st = TG_OK;
        if (t->data == NULL && t->view_src == NULL) st = tg_tallocr_alloc(&ta, t);
        else if (t->data == NULL && t->view_src) st = tg_buffer_init_view(t);
        if (st != TG_OK) { tg_buffer_free(buf); return NULL; }
    }
    return buf;
}

struct tg_buffer * tg_backend_alloc_ctx_tensors(struct tg_context * ctx, struct tg_backend * backend) {
    if (!backend) { tg_error(TG_ERR_INVALID_ARG, "tg_backend_alloc_ctx_tensors: backend is NULL"); return NULL; }
    return tg_backend_alloc_ctx_tensors_from_buft(ctx, tg_backend_get_default_buffer_type(backend));
}
