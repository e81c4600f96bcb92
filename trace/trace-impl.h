// trace-impl.h - private to libtgtrace: the byte layout of the trace format
// (trace/FORMAT.md is the specification; the constants here must match it)
// and little-endian load/store helpers.
#ifndef TG_TRACE_IMPL_H
#define TG_TRACE_IMPL_H

#include "tg/trace-types.h"

#include <stdint.h>
#include <string.h>

#define TRACE_MAGIC          "TGTRACE"    // 8 bytes with the NUL
#define TRACE_VERSION_MAJOR  1
#define TRACE_VERSION_MINOR  1
#define TRACE_HEADER_SIZE    32
#define TRACE_SYNC           0xA5434552u  // bytes 'R' 'E' 'C' 0xA5
#define TRACE_FRAME_HEAD     12           // sync, type, fflags, length
#define TRACE_FRAME_TAIL     4            // xxh32
#define TRACE_FRAME_OVERHEAD (TRACE_FRAME_HEAD + TRACE_FRAME_TAIL)
#define TRACE_MAX_PAYLOAD    0x7FFFFFF0u
#define TRACE_LAZY_VERIFY    (64u << 10)  // indexed CONTENTS payloads above this are checked on read
#define TRACE_FOOTER_MAGIC   "TGTREND"
#define TRACE_FOOTER_PAYLOAD 24
#define TRACE_FOOTER_SIZE    (TRACE_FRAME_OVERHEAD + TRACE_FOOTER_PAYLOAD)

// fixed parts of payloads (bytes)
#define TRACE_GRAPH_HEAD     32
#define TRACE_GDELTA_HEAD    40
#define TRACE_PDELTA_HEAD    24
#define TRACE_ADELTA_HEAD    32
#define TRACE_TENSOR_ENTRY   248
#define TRACE_PLACE_HEAD     16
#define TRACE_PLACE_ENTRY    16
#define TRACE_SPLITS_HEAD    20
#define TRACE_SPLIT_ENTRY    20
#define TRACE_INPUT_ENTRY    80
#define TRACE_ALLOC_HEAD     24
#define TRACE_BUFFER_ENTRY   56
#define TRACE_ALLOC_ENTRY    40
#define TRACE_COMPUTE_SIZE   24
#define TRACE_EVAL_SIZE      152
#define TRACE_CONTENTS_HEAD  72
#define TRACE_HOST_SIZE      136
#define TRACE_MARKER_HEAD    32
#define TRACE_EVENT_HEAD     128
#define TRACE_INDEX_HEAD     8
#define TRACE_INDEX_ENTRY    16

// ---- little-endian helpers (unaligned-safe) ----
static inline uint16_t rd_u16(const uint8_t * p) { return (uint16_t) (p[0] | (p[1] << 8)); }
static inline uint32_t rd_u32(const uint8_t * p) {
    return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}
static inline uint64_t rd_u64(const uint8_t * p) { return (uint64_t) rd_u32(p) | ((uint64_t) rd_u32(p + 4) << 32); }
static inline int32_t  rd_i32(const uint8_t * p) { return (int32_t) rd_u32(p); }
static inline int64_t  rd_i64(const uint8_t * p) { return (int64_t) rd_u64(p); }
static inline double   rd_f64(const uint8_t * p) { uint64_t u = rd_u64(p); double d; memcpy(&d, &u, 8); return d; }

static inline void wr_u16(uint8_t * p, uint16_t v) { p[0] = (uint8_t) v; p[1] = (uint8_t) (v >> 8); }
static inline void wr_u32(uint8_t * p, uint32_t v) {
    p[0] = (uint8_t) v; p[1] = (uint8_t) (v >> 8); p[2] = (uint8_t) (v >> 16); p[3] = (uint8_t) (v >> 24);
}
static inline void wr_u64(uint8_t * p, uint64_t v) { wr_u32(p, (uint32_t) v); wr_u32(p + 4, (uint32_t) (v >> 32)); }
static inline void wr_i32(uint8_t * p, int32_t v) { wr_u32(p, (uint32_t) v); }
static inline void wr_i64(uint8_t * p, int64_t v) { wr_u64(p, (uint64_t) v); }
static inline void wr_f64(uint8_t * p, double d) { uint64_t u; memcpy(&u, &d, 8); wr_u64(p, u); }

// Copies a fixed name field of n bytes into dst[n], forcing NUL termination.
static inline void rd_name(char * dst, const uint8_t * p, size_t n) {
    memcpy(dst, p, n);
    dst[n - 1] = '\0';
}
// Writes a fixed name field of n bytes (zero padded, truncated, NUL-terminated).
static inline void wr_name(uint8_t * p, const char * s, size_t n) {
    memset(p, 0, n);
    if (s) {
        size_t l = strnlen(s, n - 1);
        memcpy(p, s, l);
    }
}

// Checksum of a frame: xxh32 (seed 0) over type, fflags, length and payload.
uint32_t tg_trace_frame_checksum(const uint8_t * frame_after_sync, size_t n);

// writer-file.c -> writer-rec.c: tg_trace_rec_begin locks the writer and
// returns a zeroed payload area of len bytes for a record of this type (NULL,
// unlocked, last error set on failure); tg_trace_rec_commit frames the
// record, appends it to the file and unlocks.
struct tg_trace_writer;
uint8_t *      tg_trace_rec_begin(struct tg_trace_writer * w, uint16_t type, size_t len);
enum tg_status tg_trace_rec_commit(struct tg_trace_writer * w);

#endif // TG_TRACE_IMPL_H
