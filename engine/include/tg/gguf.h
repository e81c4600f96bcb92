// tg/gguf.h - GGUF reader and writer (versions 2 and 3).
//
// The reader validates everything before use: a malformed file yields NULL
// and a last-error message naming the field and the file offset, e.g.
//   "gguf: tensor 'blk.0.attn_q.weight' (info at offset 1234): dimension 1 at offset 1250 is 0".
// Messages never include the path: callers prefix it. It never crashes,
// aborts, reads out of bounds or allocates more than the file could justify.
// Tensor data is not copied again: it is addressed in the handle's private
// copy of the file (or the caller's buffer). Only little-endian files (v2, v3) on little-endian hosts.
//
// What the reader accepts (and why):
// - Tensor types: every type id GGUF defines opens (Q4_1, Q6_K, IQ* ...), with
//   its block layout validated and tg_gguf_tensor_info.type holding the raw id;
//   only users of the tensor data (the llama loader) reject types the engine
//   cannot compute (check tg_type_supported). Unknown/removed ids are errors.
// - Tensor layout: data offsets must be multiples of the alignment; two
//   tensors whose bytes overlap are an error (no writer produces that and it
//   would alias weights); gaps and any order are accepted.
// - Cut-short data: when the file ends inside the data section and the
//   tensors are laid out the way writers pack them (ascending offsets, gaps
//   below the alignment), the file still opens: metadata is readable,
//   tg_gguf_data_complete() is false, tg_gguf_data_error() says what is
//   missing and tg_gguf_tensor_data() is NULL for incomplete tensors. A tensor
//   past the end of the file in any other layout is an error.
// - Limits: n_dims 1..4, every dimension >= 1, element count and byte size
//   without overflow, ne[0] a multiple of the block size, tensor names 1..63
//   bytes, keys non-empty, no NUL bytes in keys or names, no duplicate keys or
//   tensor names, no nested arrays, general.alignment a uint32 power of two
//   <= 1 MiB.
#ifndef TG_GGUF_H
#define TG_GGUF_H

#include "tg/core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum tg_gguf_type {
    TG_GGUF_UINT8 = 0, TG_GGUF_INT8 = 1, TG_GGUF_UINT16 = 2, TG_GGUF_INT16 = 3,
    TG_GGUF_UINT32 = 4, TG_GGUF_INT32 = 5, TG_GGUF_FLOAT32 = 6, TG_GGUF_BOOL = 7,
    TG_GGUF_STRING = 8, TG_GGUF_ARRAY = 9, TG_GGUF_UINT64 = 10, TG_GGUF_INT64 = 11,
    TG_GGUF_FLOAT64 = 12, TG_GGUF_TYPE_COUNT
};

struct tg_gguf;  // opaque

// Opens and validates a file, read once into private memory: the handle keeps
// that version, and the file may be changed, replaced or truncated while it is
// open without harm. Returns a handle the caller closes, or NULL + last error:
// TG_ERR_IO (missing, directory, not a regular file, read failed),
// TG_ERR_NOMEM (no memory for the copy) or
// TG_ERR_FORMAT (malformed: "gguf: <item> (at offset N): <field> ...").
struct tg_gguf * tg_gguf_open(const char * path);
// Parses a caller-owned memory image (kept, not copied: must outlive the
// handle). Same validation and errors as tg_gguf_open. Tensor data pointers
// are as aligned as the buffer is.
struct tg_gguf * tg_gguf_open_memory(const void * data, size_t size);
// Unmaps and frees everything the handle owns. NULL is a no-op.
void tg_gguf_close(struct tg_gguf * g);

uint32_t tg_gguf_version(const struct tg_gguf * g);
size_t   tg_gguf_alignment(const struct tg_gguf * g);
size_t   tg_gguf_data_offset(const struct tg_gguf * g);   // file offset of the data section
const void * tg_gguf_data(const struct tg_gguf * g);      // base of the data section (NULL if cut short)
bool     tg_gguf_data_complete(const struct tg_gguf * g); // false when the data section is cut short

// Size in bytes of the file (or buffer).
size_t   tg_gguf_file_size(const struct tg_gguf * g);
// Why the data section is incomplete (a message starting "gguf: data section
// cut short"), or NULL when it is complete. Owned by the handle.
const char * tg_gguf_data_error(const struct tg_gguf * g);

// Key/values. Index-based; -1 when not found.
int64_t      tg_gguf_n_kv(const struct tg_gguf * g);
int64_t      tg_gguf_find_key(const struct tg_gguf * g, const char * key);
const char * tg_gguf_key(const struct tg_gguf * g, int64_t i);
enum tg_gguf_type tg_gguf_kv_type(const struct tg_gguf * g, int64_t i);
enum tg_gguf_type tg_gguf_arr_type(const struct tg_gguf * g, int64_t i);   // element type of an array
int64_t      tg_gguf_arr_n(const struct tg_gguf * g, int64_t i);
const void * tg_gguf_arr_data(const struct tg_gguf * g, int64_t i);        // numeric arrays (file byte order = LE)
// Item j of a string array: a NUL-terminated copy owned by the handle (items
// may contain NUL bytes: *len, if len is not NULL, gets the real length).
// NULL (+ last error) if i is not a string array or j is out of range.
const char * tg_gguf_arr_str(const struct tg_gguf * g, int64_t i, int64_t j, size_t * len); // string arrays
// String value of kv i (NUL-terminated copy owned by the handle; *len gets
// the length if len is not NULL), or NULL if kv i is not a string.
const char * tg_gguf_kv_str(const struct tg_gguf * g, int64_t i, size_t * len);
// Bytes of a scalar value (little-endian, tg_gguf_type_size bytes), NULL for
// strings, arrays and bad indexes.
const void * tg_gguf_kv_data(const struct tg_gguf * g, int64_t i);
// File offset of kv i's key / tensor i's info record (0 for a bad index).
uint64_t     tg_gguf_kv_offset(const struct tg_gguf * g, int64_t i);
uint64_t     tg_gguf_tensor_info_offset(const struct tg_gguf * g, int64_t i);
// Bytes of one value of a scalar type (0 for string, array, unknown).
size_t       tg_gguf_type_size(enum tg_gguf_type t);
// Scalar getters; the value is converted if the stored type differs but is
// numeric. Return false (with last error) on missing key / wrong type.
bool tg_gguf_get_u32(const struct tg_gguf * g, const char * key, uint32_t * out);
bool tg_gguf_get_i32(const struct tg_gguf * g, const char * key, int32_t * out);
bool tg_gguf_get_u64(const struct tg_gguf * g, const char * key, uint64_t * out);
bool tg_gguf_get_i64(const struct tg_gguf * g, const char * key, int64_t * out);
bool tg_gguf_get_f32(const struct tg_gguf * g, const char * key, float * out);
bool tg_gguf_get_bool(const struct tg_gguf * g, const char * key, bool * out);
// String value (not NUL-terminated in the file: a NUL-terminated copy is
// kept by the handle). NULL if missing or not a string.
const char * tg_gguf_get_str(const struct tg_gguf * g, const char * key);
// Formats any value (arrays elided after max_elems) into buf; returns buf.
// Strings are quoted with C escapes; arrays look like
// [1, 2, 3, ... (32000 items)]. Always NUL-terminates (truncates to n).
char * tg_gguf_value_str(const struct tg_gguf * g, int64_t i, size_t max_elems, char * buf, size_t n);
const char * tg_gguf_type_name(enum tg_gguf_type t);

// GGUF tensor type ids: name in GGUF/ggml spelling ("q6_K") for every id the
// format defines, including types the engine does not support; "unknown"
// otherwise. _known: whether the id is defined. _nbytes: bytes of a tensor of
// that type and shape (0 if the id is unknown, the shape invalid or the size
// overflows).
const char * tg_gguf_tensor_type_name(int type);
bool         tg_gguf_tensor_type_known(int type);
size_t       tg_gguf_tensor_nbytes(int type, int n_dims, const int64_t * ne);

// Tensor infos. `type` holds the raw GGUF type id, which may be a type the
// engine does not support (tg_type_supported() tells).
struct tg_gguf_tensor_info {
    const char *  name;       // NUL-terminated, owned by the handle
    enum tg_type  type;
    int           n_dims;
    int64_t       ne[TG_MAX_DIMS];  // unused dims are 1
    uint64_t      offset;     // relative to the data section
    size_t        size;       // bytes
};
int64_t tg_gguf_n_tensors(const struct tg_gguf * g);
int64_t tg_gguf_find_tensor(const struct tg_gguf * g, const char * name);
const struct tg_gguf_tensor_info * tg_gguf_tensor(const struct tg_gguf * g, int64_t i);
// Address of tensor i's data in the mapping, or NULL (+ last error) if the
// data section is cut short before the tensor's end or i is out of range.
const void * tg_gguf_tensor_data(const struct tg_gguf * g, int64_t i);

// Writer: builds a file in memory-light streaming fashion. Key/values are
// copied; setting a key again replaces its value (in place). Setting
// "general.alignment" (uint32, power of two <= 1 MiB) also sets the data
// alignment. Tensors are laid out in the order they are added.
// Every setter returns TG_OK, TG_ERR_INVALID_ARG (NULL writer, empty key, bad
// value for general.alignment, bad array) or TG_ERR_NOMEM, with last error.
struct tg_gguf_writer;
// New empty writer (alignment 32), owned by the caller; NULL on OOM.
struct tg_gguf_writer * tg_gguf_writer_new(void);
// Frees the writer and its copies (not tensor data). NULL is a no-op.
void tg_gguf_writer_free(struct tg_gguf_writer * w);
enum tg_status tg_gguf_set_u32 (struct tg_gguf_writer * w, const char * key, uint32_t v);
enum tg_status tg_gguf_set_i32 (struct tg_gguf_writer * w, const char * key, int32_t v);
enum tg_status tg_gguf_set_u64 (struct tg_gguf_writer * w, const char * key, uint64_t v);
enum tg_status tg_gguf_set_f32 (struct tg_gguf_writer * w, const char * key, float v);
enum tg_status tg_gguf_set_bool(struct tg_gguf_writer * w, const char * key, bool v);
enum tg_status tg_gguf_set_str (struct tg_gguf_writer * w, const char * key, const char * v);
// Numeric array of n elements of type t (copied).
enum tg_status tg_gguf_set_arr (struct tg_gguf_writer * w, const char * key, enum tg_gguf_type t, const void * data, int64_t n);
// Array of n NUL-terminated strings (copied).
enum tg_status tg_gguf_set_arr_str(struct tg_gguf_writer * w, const char * key, const char * const * strs, int64_t n);
// Copies every key/value of an open file (e.g. a vocabulary) into the writer,
// byte for byte (src may be closed afterwards).
enum tg_status tg_gguf_set_kv_from(struct tg_gguf_writer * w, const struct tg_gguf * src);
// Adds a tensor; `data` (tg_row_size * rows bytes) is referenced, not copied,
// until tg_gguf_write returns. NULL data writes zeros. Any GGUF type id is
// accepted (tg_gguf_tensor_type_known); duplicate names, bad shapes and names
// longer than 63 bytes are TG_ERR_INVALID_ARG.
enum tg_status tg_gguf_add_tensor(struct tg_gguf_writer * w, const char * name, enum tg_type type,
                                  int n_dims, const int64_t * ne, const void * data);
// Same as tg_gguf_set_u32(w, "general.alignment", alignment): a power of two <= 1 MiB.
enum tg_status tg_gguf_set_alignment(struct tg_gguf_writer * w, uint32_t alignment);
// Writes a GGUF v3 file (header, key/values, tensor infos, padding, each
// tensor's data padded to the alignment). The writer stays usable. TG_ERR_IO
// with the path and errno text on failure (a partial file is removed).
enum tg_status tg_gguf_write(struct tg_gguf_writer * w, const char * path);
// Same, into a malloc'd buffer the caller frees (*data, *size).
enum tg_status tg_gguf_write_memory(struct tg_gguf_writer * w, void ** data, size_t * size);

#ifdef __cplusplus
}
#endif
#endif // TG_GGUF_H
