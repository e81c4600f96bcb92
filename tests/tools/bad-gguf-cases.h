// bad-gguf-cases.h - malformed GGUF files, built byte by byte (independent of
// the library's writer). Included by tests/tools/make-bad-gguf.c (which
// writes tests/data/gguf-bad/) and by tests/test_gguf.c (which checks the
// committed files are current and that each one fails as expected).
//
// Each case: a file name, what opening it must do ("error": NULL; "cut-short":
// opens with tg_gguf_data_complete() false) and a substring the message must
// contain (the field at fault).
#ifndef TG_BAD_GGUF_CASES_H
#define TG_BAD_GGUF_CASES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct gb { uint8_t * p; size_t n, cap; };

static void gb_raw(struct gb * b, const void * src, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t * p = realloc(b->p, cap);
        if (!p) abort();   // test tool: out of memory is fatal
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void gb_u32(struct gb * b, uint32_t v) {
    uint8_t x[4] = {(uint8_t) v, (uint8_t) (v >> 8), (uint8_t) (v >> 16), (uint8_t) (v >> 24)};
    gb_raw(b, x, 4);
}
static void gb_u64(struct gb * b, uint64_t v) { gb_u32(b, (uint32_t) v); gb_u32(b, (uint32_t) (v >> 32)); }
static void gb_str(struct gb * b, const char * s) { gb_u64(b, strlen(s)); gb_raw(b, s, strlen(s)); }
static void gb_hdr(struct gb * b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    gb_raw(b, "GGUF", 4); gb_u32(b, version); gb_u64(b, n_tensors); gb_u64(b, n_kv);
}
static void gb_kv_u32(struct gb * b, const char * key, uint32_t v) { gb_str(b, key); gb_u32(b, 4); gb_u32(b, v); }
static void gb_kv_str(struct gb * b, const char * key, const char * v) { gb_str(b, key); gb_u32(b, 8); gb_str(b, v); }
// Tensor info with up to 4 dims.
static void gb_tensor(struct gb * b, const char * name, uint32_t n_dims, const uint64_t * ne, uint32_t type, uint64_t off) {
    gb_str(b, name); gb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) gb_u64(b, ne[d]);
    gb_u32(b, type); gb_u64(b, off);
}
static void gb_pad(struct gb * b, size_t a) { static const uint8_t z[64]; while (b->n % a) gb_raw(b, z, 1); }
static void gb_fill(struct gb * b, size_t n, uint8_t v) { for (size_t i = 0; i < n; i++) gb_raw(b, &v, 1); }

// A valid prefix: header + one kv.
static void gb_start(struct gb * b, uint64_t n_tensors, uint64_t n_kv) {
    gb_hdr(b, 3, n_tensors, n_kv);
    gb_kv_str(b, "general.architecture", "llama");
}
// One f32 tensor [8] at offset 0 with its 32 data bytes, after n_kv - 1 more kvs were added.
static void gb_one_tensor(struct gb * b, const uint64_t * ne, uint32_t n_dims, uint32_t type, uint64_t off) {
    gb_tensor(b, "blk.0.attn_q.weight", n_dims, ne, type, off);
    gb_pad(b, 32);
    gb_fill(b, 32, 0x3f);
}

struct bad_case {
    const char * file;
    const char * expect;   // "error" or "cut-short"
    const char * needle;   // substring of the message
    void (*build)(struct gb * b);
};

#define DIMS(...) ((const uint64_t[]) {__VA_ARGS__})

static void c_bad_magic(struct gb * b) { gb_raw(b, "GGML", 4); gb_u32(b, 3); gb_u64(b, 0); gb_u64(b, 0); }
static void c_version0(struct gb * b) { gb_hdr(b, 0, 0, 0); }
static void c_version1(struct gb * b) { gb_raw(b, "GGUF", 4); gb_u32(b, 1); gb_u32(b, 0); gb_u32(b, 0); gb_u64(b, 0); }
static void c_version4(struct gb * b) { gb_hdr(b, 4, 0, 0); }
static void c_byteswapped(struct gb * b) { gb_raw(b, "GGUF", 4); gb_u32(b, 0x03000000u); gb_u64(b, 0); gb_u64(b, 1ull << 56); }
static void c_magic_fugg(struct gb * b) { gb_raw(b, "FUGG", 4); gb_u32(b, 0x03000000u); gb_u64(b, 0); gb_u64(b, 0); }
static void c_short_header(struct gb * b) { gb_raw(b, "GGUF", 4); gb_u32(b, 3); gb_u32(b, 0); }
static void c_empty(struct gb * b) { (void) b; }
static void c_kv_count_huge(struct gb * b) { gb_hdr(b, 3, 0, 1000000000000ull); gb_kv_u32(b, "a", 1); }
static void c_tensor_count_huge(struct gb * b) { gb_hdr(b, 3, 1ull << 60, 0); gb_fill(b, 64, 0); }
static void c_key_len_past_end(struct gb * b) { gb_hdr(b, 3, 0, 1); gb_u64(b, 1000); gb_raw(b, "general.name", 12); }
static void c_key_len_overflow(struct gb * b) { gb_hdr(b, 3, 0, 1); gb_u64(b, UINT64_MAX); gb_fill(b, 16, 'a'); }
static void c_str_past_end(struct gb * b) { gb_hdr(b, 3, 0, 1); gb_str(b, "general.name"); gb_u32(b, 8); gb_u64(b, 1ull << 40); gb_raw(b, "x", 1); }
static void c_str_len_overflow(struct gb * b) { gb_hdr(b, 3, 0, 1); gb_str(b, "general.name"); gb_u32(b, 8); gb_u64(b, UINT64_MAX - 3); gb_raw(b, "xyz", 3); }
static void c_arr_len_huge(struct gb * b) { gb_hdr(b, 3, 0, 1); gb_str(b, "tokenizer.ggml.scores"); gb_u32(b, 9); gb_u32(b, 6); gb_u64(b, 1ull << 62); gb_fill(b, 16, 0); }
static void c_arr_len_mul_overflow(struct gb * b) { gb_hdr(b, 3, 0, 1); gb_str(b, "a.b"); gb_u32(b, 9); gb_u32(b, 10); gb_u64(b, (1ull << 61) + 1); gb_fill(b, 16, 0); }
static void c_arr_str_item_past_end(struct gb * b) {
    gb_hdr(b, 3, 0, 1); gb_str(b, "tokenizer.ggml.tokens"); gb_u32(b, 9); gb_u32(b, 8); gb_u64(b, 3);
    gb_str(b, "<unk>"); gb_str(b, "<s>"); gb_u64(b, 500); gb_raw(b, "</s>", 4);
}
static void c_arr_str_count_huge(struct gb * b) {
    gb_hdr(b, 3, 0, 1); gb_str(b, "tokenizer.ggml.tokens"); gb_u32(b, 9); gb_u32(b, 8); gb_u64(b, 1ull << 40); gb_str(b, "<unk>");
}
static void c_empty_key(struct gb * b) { gb_hdr(b, 3, 0, 1); gb_kv_u32(b, "", 1); }
static void c_dup_key(struct gb * b) { gb_start(b, 0, 3); gb_kv_u32(b, "llama.block_count", 2); gb_kv_u32(b, "general.architecture", 2); }
static void c_key_nul(struct gb * b) { gb_hdr(b, 3, 0, 1); gb_u64(b, 5); gb_raw(b, "ab\0cd", 5); gb_u32(b, 4); gb_u32(b, 1); }
static void c_value_type_unknown(struct gb * b) { gb_start(b, 0, 2); gb_str(b, "x.y"); gb_u32(b, 13); gb_u64(b, 0); }
static void c_value_type_negative(struct gb * b) { gb_start(b, 0, 2); gb_str(b, "x.y"); gb_u32(b, 0xffffffffu); gb_u64(b, 0); }
static void c_arr_elem_type_unknown(struct gb * b) { gb_start(b, 0, 2); gb_str(b, "x.y"); gb_u32(b, 9); gb_u32(b, 77); gb_u64(b, 1); gb_u32(b, 0); }
static void c_nested_array(struct gb * b) { gb_start(b, 0, 2); gb_str(b, "x.nested"); gb_u32(b, 9); gb_u32(b, 9); gb_u64(b, 1); gb_u32(b, 4); gb_u64(b, 1); gb_u32(b, 7); }
static void c_align_type(struct gb * b) { gb_start(b, 0, 2); gb_kv_str(b, "general.alignment", "32"); }
static void c_align_u64(struct gb * b) { gb_start(b, 0, 2); gb_str(b, "general.alignment"); gb_u32(b, 10); gb_u64(b, 32); }
static void c_align_zero(struct gb * b) { gb_start(b, 0, 2); gb_kv_u32(b, "general.alignment", 0); }
static void c_align_npot(struct gb * b) { gb_start(b, 0, 2); gb_kv_u32(b, "general.alignment", 48); }
static void c_align_absurd(struct gb * b) { gb_start(b, 0, 2); gb_kv_u32(b, "general.alignment", 1u << 24); }
static void c_ndims0(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(8), 0, 0, 0); }
static void c_ndims5(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(8, 1, 1, 1, 1), 5, 0, 0); }
static void c_dim_zero(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(8, 0), 2, 0, 0); }
static void c_dim_negative(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(8, (uint64_t) -4), 2, 0, 0); }
static void c_nelem_overflow(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(1ull << 32, 1ull << 32), 2, 0, 0); }
static void c_bytes_overflow(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(1ull << 31, 1ull << 31), 2, 0, 0); }
static void c_type_unknown(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(8), 1, 99, 0); }
static void c_type_negative(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(8), 1, 0xffffffffu, 0); }
static void c_type_removed(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(32), 1, 4, 0); }
static void c_not_block_multiple(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(33, 2), 2, 2, 0); }
static void c_offset_misaligned(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(4), 1, 0, 4); }
static void c_offset_overflow(struct gb * b) { gb_start(b, 1, 1); gb_one_tensor(b, DIMS(8), 1, 0, UINT64_MAX - 31); }
static void c_past_end(struct gb * b) {
    gb_start(b, 2, 1);
    gb_tensor(b, "a", 1, DIMS(8), 0, 0);
    gb_tensor(b, "b", 1, DIMS(8), 0, 1ull << 20);
    gb_pad(b, 32); gb_fill(b, 64, 1);
}
static void c_overlap(struct gb * b) {
    gb_start(b, 2, 1);
    gb_tensor(b, "a", 1, DIMS(16), 0, 0);
    gb_tensor(b, "b", 1, DIMS(8), 0, 32);
    gb_pad(b, 32); gb_fill(b, 64, 1);
}
static void c_dup_tensor(struct gb * b) {
    gb_start(b, 2, 1);
    gb_tensor(b, "output.weight", 1, DIMS(8), 0, 0);
    gb_tensor(b, "output.weight", 1, DIMS(8), 0, 32);
    gb_pad(b, 32); gb_fill(b, 64, 1);
}
static void c_tensor_name_empty(struct gb * b) { gb_start(b, 1, 1); gb_tensor(b, "", 1, DIMS(8), 0, 0); gb_pad(b, 32); gb_fill(b, 32, 0); }
static void c_tensor_name_long(struct gb * b) {
    gb_start(b, 1, 1);
    gb_tensor(b, "blk.0.a_tensor_name_that_is_far_too_long_for_the_engine_name_field", 1, DIMS(8), 0, 0);
    gb_pad(b, 32); gb_fill(b, 32, 0);
}
static void c_truncated_kv(struct gb * b) { gb_start(b, 0, 2); gb_str(b, "llama.block_count"); gb_u32(b, 4); gb_raw(b, "\x02\x00", 2); }
static void c_truncated_tensor_info(struct gb * b) { gb_start(b, 1, 1); gb_str(b, "token_embd.weight"); gb_u32(b, 2); gb_u64(b, 64); }
static void c_cut_short(struct gb * b) {
    gb_start(b, 2, 1);
    gb_tensor(b, "token_embd.weight", 2, DIMS(8, 4), 0, 0);
    gb_tensor(b, "output.weight", 2, DIMS(8, 4), 0, 128);
    gb_pad(b, 32); gb_fill(b, 128, 0x11); gb_fill(b, 40, 0x22);   // second tensor: 40 of 128 bytes
}

static const struct bad_case bad_cases[] = {
    {"bad-magic.gguf",            "error", "bad magic", c_bad_magic},
    {"version-0.gguf",            "error", "version 0", c_version0},
    {"version-1.gguf",            "error", "GGUF v1", c_version1},
    {"version-4.gguf",            "error", "version 4", c_version4},
    {"byte-swapped.gguf",         "error", "big-endian/byte-swapped", c_byteswapped},
    {"magic-fugg.gguf",           "error", "big-endian/byte-swapped", c_magic_fugg},
    {"short-header.gguf",         "error", "tensor_count at offset 8", c_short_header},
    {"empty.gguf",                "error", "empty", c_empty},
    {"kv-count-huge.gguf",        "error", "kv_count", c_kv_count_huge},
    {"tensor-count-huge.gguf",    "error", "tensor_count", c_tensor_count_huge},
    {"key-len-past-end.gguf",     "error", "key length 1000", c_key_len_past_end},
    {"key-len-overflow.gguf",     "error", "key length 18446744073709551615", c_key_len_overflow},
    {"string-past-end.gguf",      "error", "string value length", c_str_past_end},
    {"string-len-overflow.gguf",  "error", "string value length", c_str_len_overflow},
    {"array-len-huge.gguf",       "error", "array length", c_arr_len_huge},
    {"array-len-mul-overflow.gguf", "error", "array length", c_arr_len_mul_overflow},
    {"array-str-item-past-end.gguf", "error", "string item 2", c_arr_str_item_past_end},
    {"array-str-count-huge.gguf", "error", "array length", c_arr_str_count_huge},
    {"empty-key.gguf",            "error", "key at offset 24 is empty", c_empty_key},
    {"duplicate-key.gguf",        "error", "duplicate key", c_dup_key},
    {"key-nul-byte.gguf",         "error", "NUL byte", c_key_nul},
    {"value-type-unknown.gguf",   "error", "unknown value type", c_value_type_unknown},
    {"value-type-negative.gguf",  "error", "is -1 (negative)", c_value_type_negative},
    {"array-elem-type-unknown.gguf", "error", "array element type", c_arr_elem_type_unknown},
    {"nested-array.gguf",         "error", "nested arrays", c_nested_array},
    {"alignment-string.gguf",     "error", "'general.alignment' (kv 1 at offset 69): must be uint32", c_align_type},
    {"alignment-u64.gguf",        "error", "must be uint32, got uint64", c_align_u64},
    {"alignment-zero.gguf",       "error", "not a valid alignment", c_align_zero},
    {"alignment-npot.gguf",       "error", "not a power of two", c_align_npot},
    {"alignment-absurd.gguf",     "error", "absurd", c_align_absurd},
    {"ndims-0.gguf",              "error", "n_dims 0", c_ndims0},
    {"ndims-5.gguf",              "error", "n_dims 5", c_ndims5},
    {"dim-zero.gguf",             "error", "dimension 1 at offset", c_dim_zero},
    {"dim-negative.gguf",         "error", "negative (-4 as int64)", c_dim_negative},
    {"nelements-overflow.gguf",   "error", "element count overflows", c_nelem_overflow},
    {"bytes-overflow.gguf",       "error", "byte size overflows", c_bytes_overflow},
    {"tensor-type-unknown.gguf",  "error", "type id 99", c_type_unknown},
    {"tensor-type-negative.gguf", "error", "type id -1", c_type_negative},
    {"tensor-type-removed.gguf",  "error", "type id 4", c_type_removed},
    {"not-block-multiple.gguf",   "error", "block size 32", c_not_block_multiple},
    {"offset-misaligned.gguf",    "error", "not a multiple of the alignment", c_offset_misaligned},
    {"offset-overflow.gguf",      "error", "overflows", c_offset_overflow},
    {"tensor-past-end.gguf",      "error", "runs past the end of the file", c_past_end},
    {"tensor-overlap.gguf",       "error", "overlaps tensor 'a'", c_overlap},
    {"duplicate-tensor.gguf",     "error", "duplicate tensor name", c_dup_tensor},
    {"tensor-name-empty.gguf",    "error", "name at offset", c_tensor_name_empty},
    {"tensor-name-long.gguf",     "error", "(max 63)", c_tensor_name_long},
    {"truncated-kv.gguf",         "error", "file ends", c_truncated_kv},
    {"truncated-tensor-info.gguf", "error", "file ends", c_truncated_tensor_info},
    {"data-cut-short.gguf",       "cut-short", "data section cut short", c_cut_short},
};
#define N_BAD_CASES ((int) (sizeof(bad_cases) / sizeof(bad_cases[0])))

#endif
