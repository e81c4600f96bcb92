// trace-impl.h - private to libtgtrace: the trace format's constants
// (trace/FORMAT.md is the specification; the record layouts, their sizes and
// the little-endian helpers are in records.h, generated from field lists).
#ifndef TG_TRACE_IMPL_H
#define TG_TRACE_IMPL_H

#include "records.h"
#include "tg/trace.h"

#include <stdint.h>
#include <string.h>

#define TRACE_MAGIC          "TGTRACE"    // 8 bytes with the NUL
#define TRACE_VERSION_MAJOR  TG_TRACE_FORMAT_MAJOR   // tg/trace.h: the version this library writes
#define TRACE_VERSION_MINOR  TG_TRACE_FORMAT_MINOR
#define TRACE_HEADER_SIZE    TRACE_SIZE(file_header)
#define TRACE_SYNC           0xA5434552u  // bytes 'R' 'E' 'C' 0xA5
#define TRACE_FRAME_HEAD     TRACE_SIZE(frame_head)   // sync, type, fflags, length
#define TRACE_FRAME_TAIL     4            // xxh32
#define TRACE_FRAME_OVERHEAD (TRACE_FRAME_HEAD + TRACE_FRAME_TAIL)
#define TRACE_MAX_PAYLOAD    0x7FFFFFF0u
#define TRACE_LAZY_VERIFY    (64u << 10)  // indexed CONTENTS payloads above this are checked on read
#define TRACE_FOOTER_MAGIC   "TGTREND"
#define TRACE_FOOTER_SIZE    (TRACE_FRAME_OVERHEAD + TRACE_SIZE(footer))

// Checksum of a frame: xxh32 (seed 0) over type, fflags, length and payload.
uint32_t tg_trace_frame_checksum(const uint8_t * frame_after_sync, size_t n);

// writer-file.c -> writer-rec.c: tg_trace_rec_begin locks the writer and
// returns a zeroed payload area of len bytes for a record of this type (NULL,
// unlocked, last error set on failure); tg_trace_rec_commit frames the
// record, appends it to the file and unlocks.
struct tg_trace_writer;
uint8_t *      tg_trace_rec_begin(struct tg_trace_writer * w, uint16_t type, size_t len);
enum tg_status tg_trace_rec_commit(struct tg_trace_writer * w);

// Frames made away from the writer (the recorder's hashing thread): a whole
// frame of a RESULT / SKETCH record at dst (TRACE_FRAME_RESULT /
// TRACE_FRAME_SKETCH bytes), checksummed, its sync word still 0.
#define TRACE_FRAME_RESULT (TRACE_FRAME_OVERHEAD + TRACE_SIZE(result))
#define TRACE_FRAME_SKETCH (TRACE_FRAME_OVERHEAD + TRACE_SIZE(sketch))
void tg_trace_frame_result(uint8_t * dst, const struct tg_trace_result * r);
void tg_trace_frame_sketch(uint8_t * dst, const struct tg_trace_sketch * s);
// Appends n such frames (frames[i], len[i] bytes each) as records, in order,
// under one lock; each frame's sync word is stored last, as for any record.
// Mapped mode: up to `step` more bytes of the `ahead` bytes past the last
// record, within the space the file has reserved, faulted in, so that the
// threads writing records seldom meet that work: for a thread with time to
// spare (the recorder's hashing thread, idle), in steps short enough not to
// hold the writer long. Never fails: what it leaves is done as records need it.
void tg_trace_writer_populate_ahead(struct tg_trace_writer * w, uint64_t ahead, uint64_t step);
// tg_trace_writer_size, under the writer's lock (while another thread may write).
uint64_t tg_trace_writer_size_now(struct tg_trace_writer * w);
enum tg_status tg_trace_writer_append_frames(struct tg_trace_writer * w, const uint8_t * const * frames,
                                             const size_t * len, int n);

#endif // TG_TRACE_IMPL_H
