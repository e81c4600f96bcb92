// records.h - private to libtgtrace: the byte layouts of the trace format,
// generated from their field lists (tg/trace-records.def: layouts that are a
// public struct; trace-wire.def: record headers, placement entries,
// framing). For every layout `tag`:
//
//   TRACE_SIZE(tag)          its size in bytes (the fixed part), checked at
//                            compile time against the size the list states
//   TRACE_AT(tag, field)     the byte offset of a field, TRACE_WIDTH(tag, field) its bytes
//   trace_put_<tag>(p, s)    encodes *s at p (little-endian, reserved bytes
//                            0); returns p + TRACE_SIZE(tag)
//   trace_get_<tag>(p, s)    decodes the fixed part at p into *s (STR and
//                            X_ members untouched); returns p + TRACE_SIZE(tag).
//                            The caller has checked that the bytes are there.
//   trace_tail_size_<tag>(s), trace_put_tail_<tag>(q, s),
//   trace_get_tail_<tag>(&q, end, s)
//                            the layout's STR fields, stored after the fixed
//                            part in list order (size; encode, returning the
//                            end; decode, false when a string is malformed:
//                            that field and the later ones are then NULL).
//
// Structs: struct tg_trace_<tag> (tg/trace-types.h) for trace-records.def,
// struct trace_<tag> (below) for trace-wire.def.
//
// TRACE_RECORDS_DEF names the public list to include (default
// "tg/trace-records.def"): tests compile a copy with two fields swapped to
// show that the list drives both the encoder and the decoder.
#ifndef TG_TRACE_RECORDS_H
#define TG_TRACE_RECORDS_H

#include "tg/trace-types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef TRACE_RECORDS_DEF
#define TRACE_RECORDS_DEF "tg/trace-records.def"
#endif

// ---- little-endian helpers (unaligned-safe) ----
static inline uint16_t rd_u16(const uint8_t * p) { return (uint16_t) (p[0] | (p[1] << 8)); }
static inline uint32_t rd_u32(const uint8_t * p) {
    return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}
static inline uint64_t rd_u64(const uint8_t * p) { return (uint64_t) rd_u32(p) | ((uint64_t) rd_u32(p + 4) << 32); }
static inline int32_t  rd_i32(const uint8_t * p) { return (int32_t) rd_u32(p); }
static inline int64_t  rd_i64(const uint8_t * p) { return (int64_t) rd_u64(p); }
static inline double   rd_f64(const uint8_t * p) { uint64_t u = rd_u64(p); double d; memcpy(&d, &u, 8); return d; }
static inline float    rd_f32(const uint8_t * p) { uint32_t u = rd_u32(p); float f; memcpy(&f, &u, 4); return f; }

static inline void wr_u16(uint8_t * p, uint16_t v) { p[0] = (uint8_t) v; p[1] = (uint8_t) (v >> 8); }
static inline void wr_u32(uint8_t * p, uint32_t v) {
    p[0] = (uint8_t) v; p[1] = (uint8_t) (v >> 8); p[2] = (uint8_t) (v >> 16); p[3] = (uint8_t) (v >> 24);
}
static inline void wr_u64(uint8_t * p, uint64_t v) { wr_u32(p, (uint32_t) v); wr_u32(p + 4, (uint32_t) (v >> 32)); }
static inline void wr_i32(uint8_t * p, int32_t v) { wr_u32(p, (uint32_t) v); }
static inline void wr_i64(uint8_t * p, int64_t v) { wr_u64(p, (uint64_t) v); }
static inline void wr_f64(uint8_t * p, double d) { uint64_t u; memcpy(&u, &d, 8); wr_u64(p, u); }
static inline void wr_f32(uint8_t * p, float f) { uint32_t u; memcpy(&u, &f, 4); wr_u32(p, u); }

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

// ---- `str`: u32 length including the NUL, then the bytes ----
// Bytes s takes as a `str` (NULL: as "").
static inline size_t trace_str_size(const char * s) { return 4 + (s ? strlen(s) + 1 : 1); }
// Writes s as a `str` at p; returns the end.
static inline uint8_t * trace_put_str(uint8_t * p, const char * s) {
    size_t n = (s ? strlen(s) : 0) + 1;
    wr_u32(p, (uint32_t) n);
    if (n > 1) memcpy(p + 4, s, n - 1);
    p[4 + n - 1] = 0;
    return p + 4 + n;
}
// Reads a `str` at *pp (end = payload end). Returns the string (inside the
// payload, NUL-terminated; "" for length 0) and advances *pp; NULL when it
// runs past end or lacks its NUL.
static inline const char * trace_get_str(const uint8_t ** pp, const uint8_t * end) {
    const uint8_t * p = *pp;
    if (end - p < 4) return NULL;
    uint32_t n = rd_u32(p);
    if (n == 0) { *pp = p + 4; return ""; }
    if ((uint64_t) n > (uint64_t) (end - p - 4) || p[4 + n - 1] != 0) return NULL;
    *pp = p + 4 + n;
    return (const char *) (p + 4);
}

// ---- structs of the private layouts ----
#define TRACE_WIRE(tag, size)         struct trace_##tag {
#define TG_TRACE_FIELD(kind, name, n) TG_TRACE_MEMBER_##kind(name, n)
#define TRACE_WIRE_END(tag)           };
#include "trace-wire.def"
#undef TRACE_WIRE
#undef TG_TRACE_FIELD
#undef TRACE_WIRE_END

// ---- bytes per field kind ----
#define TRACE_W_U16(n)   2
#define TRACE_W_U32(n)   4
#define TRACE_W_I32(n)   4
#define TRACE_W_U64(n)   8
#define TRACE_W_I64(n)   8
#define TRACE_W_F64(n)   8
#define TRACE_W_AI32(n)  (4 * (n))
#define TRACE_W_AI64(n)  (8 * (n))
#define TRACE_W_AU64(n)  (8 * (n))
#define TRACE_W_AF32(n)  (4 * (n))
#define TRACE_W_AF64(n)  (8 * (n))
#define TRACE_W_NAME(n)  (n)
#define TRACE_W_RES(n)   (n)
#define TRACE_W_SUB(tag) TRACE_SIZE(tag)

// Each layout is generated in passes over the lists; a layout begins with
// TRACE_BEGIN(struct type, tag, stated size) and ends with TRACE_FINISH(tag).
#define TG_TRACE_REC(tag, size)       TRACE_BEGIN(struct tg_trace_##tag, tag, size)
#define TG_TRACE_REC_END(tag)         TRACE_FINISH(tag)
#define TRACE_WIRE(tag, size)         TRACE_BEGIN(struct trace_##tag, tag, size)
#define TRACE_WIRE_END(tag)           TRACE_FINISH(tag)
#define TG_TRACE_FIELD(kind, name, n) TRACE_FIELD_##kind(name, n)

// ---- pass 1: offsets and sizes. struct trace_layout_<tag> has one char
// array per stored field, so its offsetof/sizeof are the wire offsets/size.
#define TRACE_SIZE(tag)       sizeof(struct trace_layout_##tag)
#define TRACE_AT(tag, field)  offsetof(struct trace_layout_##tag, field)
#define TRACE_WIDTH(tag, field) sizeof(((struct trace_layout_##tag *) 0)->field)
#define TRACE_BEGIN(T, tag, size)  struct trace_layout_##tag {
#define TRACE_FINISH(tag)          };
#define TRACE_FIELD_U16(name, n)   char name[TRACE_W_U16(n)];
#define TRACE_FIELD_U32(name, n)   char name[TRACE_W_U32(n)];
#define TRACE_FIELD_I32(name, n)   char name[TRACE_W_I32(n)];
#define TRACE_FIELD_U64(name, n)   char name[TRACE_W_U64(n)];
#define TRACE_FIELD_I64(name, n)   char name[TRACE_W_I64(n)];
#define TRACE_FIELD_F64(name, n)   char name[TRACE_W_F64(n)];
#define TRACE_FIELD_AI32(name, n)  char name[TRACE_W_AI32(n)];
#define TRACE_FIELD_AI64(name, n)  char name[TRACE_W_AI64(n)];
#define TRACE_FIELD_AU64(name, n)  char name[TRACE_W_AU64(n)];
#define TRACE_FIELD_AF32(name, n)  char name[TRACE_W_AF32(n)];
#define TRACE_FIELD_AF64(name, n)  char name[TRACE_W_AF64(n)];
#define TRACE_FIELD_NAME(name, n)  char name[TRACE_W_NAME(n)];
#define TRACE_FIELD_RES(name, n)   char name[TRACE_W_RES(n)];
#define TRACE_FIELD_SUB(name, tag) char name[TRACE_W_SUB(tag)];
#define TRACE_FIELD_STR(name, n)
#define TRACE_FIELD_X_U32(name, n)
#define TRACE_FIELD_X_U64(name, n)
#include TRACE_RECORDS_DEF
#include "trace-wire.def"
#undef TRACE_BEGIN
#undef TRACE_FINISH

// ---- pass 2: the stated sizes (the lists, FORMAT.md) hold ----
#define TRACE_BEGIN(T, tag, size) \
    _Static_assert(TRACE_SIZE(tag) == (size), "trace layout " #tag ": its fields do not add up to " #size " bytes");
#define TRACE_FINISH(tag)
#include "trace-field-none.h"
#include TRACE_RECORDS_DEF
#include "trace-wire.def"
#undef TRACE_BEGIN
#undef TRACE_FINISH

// ---- pass 3: encoders ----
#define TRACE_BEGIN(T, tag, size) static inline uint8_t * trace_put_##tag(uint8_t * p, const T * s) {
#define TRACE_FINISH(tag)         return p; }
#include "trace-field-undef.h"
#define TRACE_FIELD_U16(name, n)   wr_u16(p, s->name); p += 2;
#define TRACE_FIELD_U32(name, n)   wr_u32(p, s->name); p += 4;
#define TRACE_FIELD_I32(name, n)   wr_i32(p, s->name); p += 4;
#define TRACE_FIELD_U64(name, n)   wr_u64(p, s->name); p += 8;
#define TRACE_FIELD_I64(name, n)   wr_i64(p, s->name); p += 8;
#define TRACE_FIELD_F64(name, n)   wr_f64(p, s->name); p += 8;
#define TRACE_FIELD_AI32(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 4) wr_i32(p, s->name[k_]);
#define TRACE_FIELD_AI64(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 8) wr_i64(p, s->name[k_]);
#define TRACE_FIELD_AU64(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 8) wr_u64(p, s->name[k_]);
#define TRACE_FIELD_AF32(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 4) wr_f32(p, s->name[k_]);
#define TRACE_FIELD_AF64(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 8) wr_f64(p, s->name[k_]);
#define TRACE_FIELD_NAME(name, n)  wr_name(p, s->name, (n)); p += (n);
#define TRACE_FIELD_RES(name, n)   memset(p, 0, (n)); p += (n);
#define TRACE_FIELD_SUB(name, tag) p = trace_put_##tag(p, &s->name);
#define TRACE_FIELD_STR(name, n)
#define TRACE_FIELD_X_U32(name, n)
#define TRACE_FIELD_X_U64(name, n)
#include TRACE_RECORDS_DEF
#include "trace-wire.def"
#undef TRACE_BEGIN
#undef TRACE_FINISH

// ---- pass 4: decoders ----
#define TRACE_BEGIN(T, tag, size) static inline const uint8_t * trace_get_##tag(const uint8_t * p, T * s) {
#define TRACE_FINISH(tag)         return p; }
#include "trace-field-undef.h"
#define TRACE_FIELD_U16(name, n)   s->name = rd_u16(p); p += 2;
#define TRACE_FIELD_U32(name, n)   s->name = rd_u32(p); p += 4;
#define TRACE_FIELD_I32(name, n)   s->name = rd_i32(p); p += 4;
#define TRACE_FIELD_U64(name, n)   s->name = rd_u64(p); p += 8;
#define TRACE_FIELD_I64(name, n)   s->name = rd_i64(p); p += 8;
#define TRACE_FIELD_F64(name, n)   s->name = rd_f64(p); p += 8;
#define TRACE_FIELD_AI32(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 4) s->name[k_] = rd_i32(p);
#define TRACE_FIELD_AI64(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 8) s->name[k_] = rd_i64(p);
#define TRACE_FIELD_AU64(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 8) s->name[k_] = rd_u64(p);
#define TRACE_FIELD_AF32(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 4) s->name[k_] = rd_f32(p);
#define TRACE_FIELD_AF64(name, n)  for (int k_ = 0; k_ < (n); k_++, p += 8) s->name[k_] = rd_f64(p);
#define TRACE_FIELD_NAME(name, n)  rd_name(s->name, p, (n)); p += (n);
#define TRACE_FIELD_RES(name, n)   p += (n);
#define TRACE_FIELD_SUB(name, tag) p = trace_get_##tag(p, &s->name);
#define TRACE_FIELD_STR(name, n)
#define TRACE_FIELD_X_U32(name, n)
#define TRACE_FIELD_X_U64(name, n)
#include TRACE_RECORDS_DEF
#include "trace-wire.def"
#undef TRACE_BEGIN
#undef TRACE_FINISH

// ---- pass 5: the strings after the fixed part (public layouts only) ----
#include "trace-field-none.h"
#undef TRACE_FIELD_STR
#define TRACE_BEGIN(T, tag, size) static inline size_t trace_tail_size_##tag(const T * s) { size_t n_ = 0; (void) s;
#define TRACE_FINISH(tag)         return n_; }
#define TRACE_FIELD_STR(name, n)  n_ += trace_str_size(s->name);
#include TRACE_RECORDS_DEF
#undef TRACE_BEGIN
#undef TRACE_FINISH
#undef TRACE_FIELD_STR
#define TRACE_BEGIN(T, tag, size) static inline uint8_t * trace_put_tail_##tag(uint8_t * q, const T * s) { (void) s;
#define TRACE_FINISH(tag)         return q; }
#define TRACE_FIELD_STR(name, n)  q = trace_put_str(q, s->name);
#include TRACE_RECORDS_DEF
#undef TRACE_BEGIN
#undef TRACE_FINISH
#undef TRACE_FIELD_STR
#define TRACE_BEGIN(T, tag, size) \
    static inline bool trace_get_tail_##tag(const uint8_t ** q, const uint8_t * end, T * s) { \
        (void) q; (void) end; (void) s; bool ok_ = true;
#define TRACE_FINISH(tag)         return ok_; }
#define TRACE_FIELD_STR(name, n)  s->name = ok_ ? trace_get_str(q, end) : NULL; ok_ = ok_ && s->name;
#include TRACE_RECORDS_DEF
#undef TRACE_BEGIN
#undef TRACE_FINISH
#include "trace-field-undef.h"

#undef TG_TRACE_REC
#undef TG_TRACE_REC_END
#undef TRACE_WIRE
#undef TRACE_WIRE_END
#undef TG_TRACE_FIELD

#endif // TG_TRACE_RECORDS_H
