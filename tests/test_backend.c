// test_backend.c - buffers, host API (set/get/memset/copy, the no-buffer
// error), tallocr / alloc_ctx_tensors, observers of host access, registry.
#include "check.h"
#include "tg/alloc.h"
#include "tg/backend.h"
#include "tg/observe.h"

#include <stdio.h>
#include <string.h>

static struct tg_context * new_ctx(bool no_alloc) {
    struct tg_context_params p = { 1 << 20, NULL, no_alloc };
    return tg_context_new(p);
}

static void test_no_buffer(void) {
    struct tg_context * ctx = new_ctx(true);
    struct tg_tensor * t = tg_set_name(tg_new_tensor_1d(ctx, TG_TYPE_F32, 8), "kq_scale");
    float v[8] = { 0 };
    enum tg_status st = tg_backend_tensor_set(t, v, 0, sizeof v);
    const char * msg = tg_last_error();
    CHECK(st == TG_ERR_NO_BUFFER, "set on a tensor with no buffer returns TG_ERR_NO_BUFFER (got %s)", tg_status_str(st));
    CHECK(strstr(msg, "kq_scale") != NULL, "message names the tensor: %s", msg);
    CHECK(strstr(msg, "has no buffer") != NULL, "message says it has no buffer");
    CHECK(strstr(msg, "no_alloc context") != NULL, "message says which (no_alloc) context: %s", msg);
    CHECK(strstr(msg, "tg_backend_alloc_ctx_tensors") && strstr(msg, "tg_sched_alloc_graph"),
          "message says what to do (alloc_ctx_tensors or tg_sched_alloc_graph)");
    st = tg_backend_tensor_get(t, v, 0, sizeof v);
    CHECK(st == TG_ERR_NO_BUFFER && strstr(tg_last_error(), "kq_scale"), "get fails the same way");
    st = tg_backend_tensor_memset(t, 0, 0, 4);
    CHECK(st == TG_ERR_NO_BUFFER, "memset fails the same way");
    struct tg_tensor * u = tg_new_tensor_1d(ctx, TG_TYPE_F32, 8);
    st = tg_backend_tensor_get(u, v, 0, 4);
    CHECK(st == TG_ERR_NO_BUFFER && strstr(tg_last_error(), "unnamed"), "an unnamed tensor is described by id/op: %s", tg_last_error());
    tg_context_free(ctx);
}

static void test_roundtrip(void) {
    struct tg_backend * cpu = tg_backend_cpu_init();
    CHECK(cpu != NULL && tg_backend_is_cpu(cpu), "CPU backend created");
    struct tg_context * ctx = new_ctx(true);
    struct tg_tensor * a = tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F32, 5, 3), "a");
    struct tg_tensor * b = tg_set_name(tg_new_tensor_1d(ctx, TG_TYPE_F16, 7), "b");
    struct tg_tensor * c = tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F32, 5, 3), "c");
    struct tg_tensor * v = tg_set_name(tg_view_1d(ctx, a, 5, 5 * sizeof(float)), "a_row1");
    struct tg_buffer * buf = tg_backend_alloc_ctx_tensors(ctx, cpu);
    CHECK(buf != NULL, "alloc_ctx_tensors returns a buffer");
    CHECK(a->buffer == buf && b->buffer == buf && c->buffer == buf, "every tensor is in the buffer");
    CHECK(((uintptr_t) a->data % 64) == 0 && ((uintptr_t) b->data % 64) == 0, "tensors are 64-byte aligned");
    CHECK(v->data == (char *) a->data + 5 * sizeof(float), "view points into its source");
    CHECK(tg_buffer_is_host(buf) && strcmp(tg_buffer_name(buf), "CPU") == 0, "buffer is host, type CPU");
    CHECK(tg_buffer_get_size(buf) >= 3 * 64, "buffer holds three aligned tensors (%zu bytes)", tg_buffer_get_size(buf));
    float x[15], y[15];
    for (int i = 0; i < 15; i++) x[i] = (float) i * 0.5f - 3.0f;
    CHECK(tg_backend_tensor_set(a, x, 0, sizeof x) == TG_OK, "set a");
    memset(y, 0, sizeof y);
    CHECK(tg_backend_tensor_get(a, y, 0, sizeof y) == TG_OK && memcmp(x, y, sizeof x) == 0, "get a == set a");
    float row[5];
    CHECK(tg_backend_tensor_get(v, row, 0, sizeof row) == TG_OK && memcmp(row, x + 5, sizeof row) == 0, "get through a view reads row 1");
    CHECK(tg_backend_tensor_set(a, x, 8, 8) == TG_OK && tg_backend_tensor_get(a, y, 8, 8) == TG_OK
          && memcmp(y, x, 8) == 0, "partial set/get at an offset");
    CHECK(tg_backend_tensor_set(a, x, 56, 8) == TG_ERR_INVALID_ARG, "out-of-range set is rejected: %s", tg_last_error());
    CHECK(tg_backend_tensor_memset(c, 0, 0, tg_nbytes(c)) == TG_OK, "memset c");
    CHECK(tg_backend_tensor_copy(a, c) == TG_OK && tg_backend_tensor_get(c, y, 0, sizeof y) == TG_OK, "copy a -> c");
    CHECK(tg_backend_tensor_copy(a, b) == TG_ERR_SHAPE, "copy between different sizes is rejected");
    tg_fp16_t h[7] = { 1, 2, 3, 4, 5, 6, 7 }, h2[7];
    CHECK(tg_backend_tensor_set(b, h, 0, sizeof h) == TG_OK && tg_backend_tensor_get(b, h2, 0, sizeof h2) == TG_OK
          && memcmp(h, h2, sizeof h) == 0, "f16 round trip");
    tg_buffer_set_usage(buf, TG_BUFFER_USAGE_WEIGHTS);
    CHECK(tg_buffer_get_usage(buf) == TG_BUFFER_USAGE_WEIGHTS && strcmp(tg_buffer_usage_name(TG_BUFFER_USAGE_WEIGHTS), "weights") == 0,
          "usage weights");
    tg_buffer_free(buf);

    // an allocating context: data but no buffer is accessed directly
    struct tg_context * hctx = new_ctx(false);
    struct tg_tensor * h1 = tg_new_tensor_1d(hctx, TG_TYPE_F32, 4);
    float z[4] = { 1, 2, 3, 4 }, z2[4] = { 0 };
    CHECK(tg_backend_tensor_set(h1, z, 0, sizeof z) == TG_OK && tg_backend_tensor_get(h1, z2, 0, sizeof z2) == TG_OK
          && memcmp(z, z2, sizeof z) == 0, "tensor of an allocating context: direct set/get");
    CHECK(tg_backend_alloc_ctx_tensors(hctx, cpu) == NULL && tg_last_status() == TG_OK, "nothing to allocate: NULL, no error");
    tg_context_free(hctx);
    tg_context_free(ctx);
    tg_backend_free(cpu);
}

static void test_tallocr(void) {
    struct tg_buffer * buf = tg_buft_alloc_buffer(tg_cpu_buffer_type(), 256);
    struct tg_context * ctx = new_ctx(true);
    struct tg_tensor * a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 20);   // 80 -> 128
    struct tg_tensor * b = tg_new_tensor_1d(ctx, TG_TYPE_F32, 16);   // 64
    struct tg_tensor * c = tg_new_tensor_1d(ctx, TG_TYPE_F32, 30);   // 120: does not fit
    struct tg_tallocr ta = tg_tallocr_new(buf);
    CHECK(tg_tallocr_alloc(&ta, a) == TG_OK && a->data == tg_buffer_get_base(buf), "tallocr: first at offset 0");
    CHECK(tg_tallocr_alloc(&ta, b) == TG_OK && (char *) b->data - (char *) tg_buffer_get_base(buf) == 128, "tallocr: second aligned to 128");
    CHECK(tg_tallocr_alloc(&ta, c) == TG_ERR_NOMEM, "tallocr: overflow reported: %s", tg_last_error());
    tg_context_free(ctx);
    tg_buffer_free(buf);

    static char mem[1024];
    struct tg_buffer * wrap = tg_cpu_buffer_from_ptr(mem, sizeof mem);
    CHECK(wrap && tg_buffer_get_base(wrap) == mem && tg_buffer_get_size(wrap) == sizeof mem, "buffer from caller memory");
    tg_buffer_free(wrap);   // must not free mem
}

struct io_log { int n_set, n_get; size_t last_size; const struct tg_tensor * last; int n_marker; char marker[64]; };

static void on_set(const struct tg_obs_tensor_io * ev, void * user) {
    struct io_log * l = user;
    l->n_set++; l->last = ev->tensor; l->last_size = ev->size;
}
static void on_get(const struct tg_obs_tensor_io * ev, void * user) {
    struct io_log * l = user;
    l->n_get++; l->last = ev->tensor; l->last_size = ev->size;
}
static void on_marker(const struct tg_obs_marker * ev, void * user) {
    struct io_log * l = user;
    l->n_marker++;
    snprintf(l->marker, sizeof l->marker, "%s %s", ev->name, ev->text);
}

static void test_observer_io(void) {
    struct io_log log = { 0 };
    struct tg_observer obs = { .user = &log, .on_tensor_set = on_set, .on_tensor_get = on_get, .on_marker = on_marker };
    CHECK(tg_observe_attach_global(&obs) == TG_OK && tg_observe_n_global() == 1, "global observer attached");
    struct tg_backend * cpu = tg_backend_cpu_init();
    struct tg_context * ctx = new_ctx(true);
    struct tg_tensor * a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 4);
    struct tg_buffer * buf = tg_backend_alloc_ctx_tensors(ctx, cpu);
    float x[4] = { 1, 2, 3, 4 };
    tg_backend_tensor_set(a, x, 0, 16);
    tg_backend_tensor_get(a, x, 4, 8);
    CHECK(log.n_set == 1 && log.n_get == 1 && log.last == a && log.last_size == 8, "set and get reported (%d, %d)", log.n_set, log.n_get);
    tg_observe_marker(NULL, "decode", "n_tokens=%d pos=%d", 32, 0);
    CHECK(log.n_marker == 1 && strcmp(log.marker, "decode n_tokens=32 pos=0") == 0, "marker delivered: '%s'", log.marker);
    tg_observe_detach_global(&obs);
    tg_backend_tensor_set(a, x, 0, 16);
    CHECK(log.n_set == 1 && tg_observe_n_global() == 0, "detached observer gets nothing");
    tg_buffer_free(buf);
    tg_context_free(ctx);
    tg_backend_free(cpu);
}

static void test_registry(void) {
    int n = tg_device_count();
    CHECK(n >= 1, "registry lists %d device(s)", n);
    struct tg_device * cpu = tg_device_get(0);
    CHECK(cpu && strcmp(tg_device_name(cpu), "CPU") == 0 && tg_device_type(cpu) == TG_DEVICE_CPU, "device 0 is CPU");
    CHECK(tg_device_by_name("cpu") == cpu, "lookup by name is case-insensitive");
    CHECK(tg_device_buffer_type(cpu) == tg_cpu_buffer_type(), "CPU device's buffer type is the host type");
    CHECK(tg_device_get(n) == NULL && tg_device_by_name("nope") == NULL, "absent devices are NULL");
    struct tg_backend * b = tg_backend_init_by_name("CPU", "1");
    CHECK(b && tg_backend_cpu_get_n_threads(b) == 1 && strcmp(tg_backend_name(b), "CPU") == 0, "CPU backend from the registry, 1 thread");
    CHECK(tg_backend_cpu_set_n_threads(b, 2) == TG_OK && tg_backend_cpu_get_n_threads(b) == 2, "n_threads setter");
    CHECK(tg_backend_cpu_set_n_threads(b, 0) == TG_ERR_INVALID_ARG, "n_threads 0 rejected");
    tg_backend_free(b);
    CHECK(tg_backend_init_by_name("nope", NULL) == NULL && strstr(tg_last_error(), "nope"), "unknown device: %s", tg_last_error());
#ifdef TG_HAVE_BLAS
    struct tg_device * blas = tg_device_by_name("BLAS");
    CHECK(blas && tg_device_type(blas) == TG_DEVICE_ACCEL, "BLAS device registered");
    struct tg_backend * bb = tg_device_init_backend(blas, NULL);
    CHECK(bb && tg_backend_is_blas(bb) && tg_backend_get_default_buffer_type(bb) == tg_cpu_buffer_type(),
          "BLAS backend shares the host buffer type");
    tg_backend_free(bb);
#else
    printf("note: built without TG_HAVE_BLAS: BLAS registry checks skipped\n");
    CHECK(tg_device_by_name("BLAS") == NULL && tg_backend_blas_init() == NULL, "no BLAS device in this build");
#endif
}

int main(void) {
    test_no_buffer();
    test_roundtrip();
    test_tallocr();
    test_observer_io();
    test_registry();
    return tg_check_finish("test_backend");
}
