// gguf-impl.h - private layout of a parsed GGUF file and the format tables
// shared by the reader (gguf.c, gguf-access.c) and the writer (gguf-write.c).
#ifndef TG_GGUF_IMPL_H
#define TG_GGUF_IMPL_H

#include "tg/gguf.h"

#define TG_GGUF_MAGIC             "GGUF"
#define TG_GGUF_VERSION           3
#define TG_GGUF_DEFAULT_ALIGNMENT 32
#define TG_GGUF_MAX_ALIGNMENT     (1u << 20)   // 1 MiB: larger values are treated as corrupt
#define TG_GGUF_KEY_ALIGNMENT     "general.alignment"
#define TG_GGUF_HEADER_SIZE       24           // magic, version, tensor_count, kv_count

// One key/value. Scalars and numeric arrays point into the file image;
// strings are copied (NUL-terminated) so callers get C strings.
struct tg_gguf_kv {
    char *            key;        // NUL-terminated copy
    enum tg_gguf_type type;
    uint64_t          file_off;   // offset of the key's length field
    uint64_t          end_off;    // one past the value's last byte
    const uint8_t *   val;        // scalars: the value bytes (little-endian)
    char *            str;        // TG_GGUF_STRING: NUL-terminated copy
    size_t            str_len;
    enum tg_gguf_type arr_type;   // TG_GGUF_ARRAY: element type
    int64_t           arr_n;
    const uint8_t *   arr_data;   // numeric arrays: the elements in the image
    char *            arr_blob;   // string arrays: every item, each NUL-terminated
    size_t *          arr_offs;   // string arrays: arr_n + 1 offsets into arr_blob
};

struct tg_gguf {
    const uint8_t * base;         // file image (private copy of the file or caller's buffer)
    size_t          size;
    bool            mapped;       // base is tg_gguf_open's private copy (anonymous mapping)
    size_t          map_size;     // bytes of that mapping (>= size)
    uint32_t        version;
    size_t          alignment;
    size_t          data_offset;  // may exceed size when the file is cut short
    uint64_t        data_needed;  // bytes the tensors need after data_offset
    bool            data_complete;
    char *          data_error;   // why the data section is incomplete (NULL if complete)

    int64_t             n_kv;
    struct tg_gguf_kv * kv;
    int64_t *           kv_hash;  // open addressing, -1 = empty
    size_t              kv_hash_cap;

    int64_t                      n_tensors;
    struct tg_gguf_tensor_info * ti;
    uint64_t *                   ti_file_off;  // offset of each tensor info
    int64_t *                    ti_hash;
    size_t                       ti_hash_cap;
};

// Per-ggml-type layout (covers ids the engine does not support, so that their
// sizes can still be validated). blck_size 0 = id unknown or removed.
struct tg_gguf_type_layout {
    const char * name;
    int64_t      blck_size;
    size_t       type_size;
};
#define TG_GGUF_N_TENSOR_TYPES 40
// Layout of a tensor type id, or NULL if the id is unknown/removed.
const struct tg_gguf_type_layout * tg_gguf_layout(uint32_t type);
// Bytes of one scalar value type (0 for string/array/unknown).

// FNV-1a hash of a NUL-terminated string.
uint64_t tg_gguf_hash(const char * s);
// Builds an open-addressing index of names; returns the table (cap entries,
// -1 = empty) or NULL on OOM. On a duplicate, *dup gets the later index.
int64_t * tg_gguf_index(const char * const * names, size_t stride_bytes, int64_t n,
                        size_t * cap, int64_t * dup);
int64_t tg_gguf_index_find(const int64_t * table, size_t cap, const char * const * names,
                           size_t stride_bytes, const char * name);

#endif // TG_GGUF_IMPL_H
