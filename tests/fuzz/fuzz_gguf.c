// fuzz_gguf.c - libFuzzer harness for the GGUF reader: parses the input with
// tg_gguf_open_memory and walks every key/value and tensor accessor, touching
// the first and last byte of every tensor's data and string.
#include "tg/gguf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile uint8_t sink;

static void touch(const void * p, size_t n) {
    if (!p || n == 0) return;
    sink ^= ((const uint8_t *) p)[0] ^ ((const uint8_t *) p)[n - 1];
}

static void walk_kv(const struct tg_gguf * g, int64_t i) {
    char buf[256];
    const char * key = tg_gguf_key(g, i);
    touch(key, strlen(key) + 1);
    if (tg_gguf_find_key(g, key) != i) __builtin_trap();   // keys are unique
    enum tg_gguf_type t = tg_gguf_kv_type(g, i);
    tg_gguf_value_str(g, i, 8, buf, sizeof(buf));
    tg_gguf_value_str(g, i, 1000, buf, 17);
    touch(tg_gguf_kv_data(g, i), tg_gguf_type_size(t));
    size_t len = 0;
    const char * s = tg_gguf_kv_str(g, i, &len);
    touch(s, len + 1);
    int64_t n = tg_gguf_arr_n(g, i);
    if (t == TG_GGUF_ARRAY && tg_gguf_arr_type(g, i) == TG_GGUF_STRING) {
        for (int64_t j = 0; j < n; j++) { s = tg_gguf_arr_str(g, i, j, &len); touch(s, len + 1); }
    } else if (t == TG_GGUF_ARRAY) {
        touch(tg_gguf_arr_data(g, i), (size_t) n * tg_gguf_type_size(tg_gguf_arr_type(g, i)));
    }
    uint32_t u32; int32_t i32; uint64_t u64; int64_t i64; float f; bool b;
    tg_gguf_get_u32(g, key, &u32); tg_gguf_get_i32(g, key, &i32); tg_gguf_get_u64(g, key, &u64);
    tg_gguf_get_i64(g, key, &i64); tg_gguf_get_f32(g, key, &f); tg_gguf_get_bool(g, key, &b);
    touch(tg_gguf_get_str(g, key), 1);
}

// Property: whatever parses can be copied by the writer (every key/value,
// every tensor with its data when present) and the copy parses the same.
static void round_trip(const struct tg_gguf * g) {
    struct tg_gguf_writer * w = tg_gguf_writer_new();
    if (!w) return;
    if (tg_gguf_set_kv_from(w, g) != TG_OK) __builtin_trap();
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, i);
        if (t->size > (1u << 20)) { tg_gguf_writer_free(w); return; }   // keep the fuzzer fast
        if (tg_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, tg_gguf_tensor_data(g, i)) != TG_OK) __builtin_trap();
    }
    void * p; size_t n;
    if (tg_gguf_write_memory(w, &p, &n) != TG_OK) __builtin_trap();
    struct tg_gguf * c = tg_gguf_open_memory(p, n);
    if (!c || tg_gguf_n_kv(c) != tg_gguf_n_kv(g) || tg_gguf_n_tensors(c) != tg_gguf_n_tensors(g) ||
        tg_gguf_alignment(c) != tg_gguf_alignment(g) || !tg_gguf_data_complete(c)) __builtin_trap();
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        const void * a = tg_gguf_tensor_data(g, i), * b = tg_gguf_tensor_data(c, i);
        if (tg_gguf_tensor(c, i)->size != tg_gguf_tensor(g, i)->size) __builtin_trap();
        if (a && memcmp(a, b, tg_gguf_tensor(g, i)->size) != 0) __builtin_trap();
    }
    tg_gguf_close(c);
    free(p);
    tg_gguf_writer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    struct tg_gguf * g = tg_gguf_open_memory(data, size);
    if (!g) return 0;
    for (int64_t i = 0; i < tg_gguf_n_kv(g); i++) walk_kv(g, i);
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, i);
        touch(t->name, strlen(t->name) + 1);
        if (tg_gguf_find_tensor(g, t->name) != i) __builtin_trap();
        if (t->size != tg_gguf_tensor_nbytes(t->type, t->n_dims, t->ne)) __builtin_trap();
        tg_gguf_tensor_type_name(t->type);
        touch(tg_gguf_tensor_data(g, i), t->size);
    }
    if (tg_gguf_data(g) && tg_gguf_data_offset(g) < tg_gguf_file_size(g)) touch(tg_gguf_data(g), 1);
    tg_gguf_data_error(g);
    round_trip(g);
    tg_gguf_close(g);
    return 0;
}
