// test_trace_layouts.c - the trace record field lists (tg/trace-records.def,
// trace/trace-wire.def) drive the layouts:
//  - every layout round-trips: distinct random field values -> encode ->
//    decode give the same values back, each field lands at its offset in
//    little-endian order, reserved bytes are 0, strings after the fixed part
//    come back;
//  - a copy of the public list with two same-width EVAL fields swapped
//    (made by CMake, compiled in trace_layouts_swapped.c) encodes and decodes
//    differently: bytes written by one list and read by the other come back
//    with exactly those two fields exchanged, so the list (and nothing else)
//    is what both the encoder and the decoder follow;
//  - trace/FORMAT.md's "Layout sizes" table states every layout's size as
//    the code has it, and names no layout the code lacks.
#include "check.h"
#include "trace/records.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// trace_layouts_swapped.c: the EVAL codec of the swapped list
uint8_t *       swapped_put_eval(uint8_t * p, const struct tg_trace_eval * e);
const uint8_t * swapped_get_eval(const uint8_t * p, struct tg_trace_eval * e);

static uint64_t rng(uint64_t * s) {   // splitmix64
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static const char * const str_pool[] = { "", "a", "decode", "tgdb 0.1.0 -m model.gguf", "CPU,BLAS", "x y z" };

// ---- passes over both lists: fill, compare, check the bytes -----------------
#define TG_TRACE_REC(tag, size)       TRACE_BEGIN(struct tg_trace_##tag, tag, size)
#define TG_TRACE_REC_END(tag)         TRACE_FINISH(tag)
#define TRACE_WIRE(tag, size)         TRACE_BEGIN(struct trace_##tag, tag, size)
#define TRACE_WIRE_END(tag)           TRACE_FINISH(tag)

// fill: every field a random value (names: random letters, NUL-terminated)
#define TRACE_BEGIN(T, tag, size) static void fill_##tag(T * s, uint64_t * r) { (void) s; (void) r;
#define TRACE_FINISH(tag) }
#define TG_TRACE_FIELD(kind, name, n) FILL_##kind(name, n)
#define FILL_U16(name, n)   s->name = (uint16_t) rng(r);
#define FILL_U32(name, n)   s->name = (uint32_t) rng(r);
#define FILL_I32(name, n)   s->name = (int32_t) rng(r);
#define FILL_U64(name, n)   s->name = rng(r);
#define FILL_I64(name, n)   s->name = (int64_t) rng(r);
#define FILL_F64(name, n)   s->name = (double) (int64_t) rng(r) / 7.0;
#define FILL_AI32(name, n)  for (int k = 0; k < (n); k++) s->name[k] = (int32_t) rng(r);
#define FILL_AI64(name, n)  for (int k = 0; k < (n); k++) s->name[k] = (int64_t) rng(r);
#define FILL_AU64(name, n)  for (int k = 0; k < (n); k++) s->name[k] = rng(r);
#define FILL_AF32(name, n)  for (int k = 0; k < (n); k++) s->name[k] = (float) ((int32_t) rng(r) / 3.0);
#define FILL_AF64(name, n)  for (int k = 0; k < (n); k++) s->name[k] = (double) (int64_t) rng(r) / 3.0;
#define FILL_NAME(name, n)  for (int k = 0; k < (n); k++) s->name[k] = k < (n) - 1 ? (char) ('a' + rng(r) % 26) : 0;
#define FILL_SUB(name, tag) fill_##tag(&s->name, r);
#define FILL_RES(name, n)
#define FILL_STR(name, n)   s->name = str_pool[rng(r) % (sizeof(str_pool) / sizeof(str_pool[0]))];
#define FILL_X_U32(name, n)
#define FILL_X_U64(name, n)
#include "tg/trace-records.def"
#include "trace/trace-wire.def"
#undef TRACE_BEGIN
#undef TRACE_FINISH
#undef TG_TRACE_FIELD

// diff: the names of the fields that differ, appended to why (count returned)
static void note(char * why, size_t cap, const char * name) {
    size_t l = strlen(why);
    snprintf(why + l, cap - l, "%s%s", l ? "," : "", name);
}
#define TRACE_BEGIN(T, tag, size) \
    static int diff_##tag(const T * a, const T * b, char * why, size_t cap) { int n = 0; (void) a; (void) b;
#define TRACE_FINISH(tag) return n; }
#define TG_TRACE_FIELD(kind, name, n) DIFF_##kind(name)
#define DIFF_SCALAR(name)   if (a->name != b->name) { n++; note(why, cap, #name); }
#define DIFF_BYTES(name)    if (memcmp(&a->name, &b->name, sizeof(a->name)) != 0) { n++; note(why, cap, #name); }
#define DIFF_U16(name)      DIFF_SCALAR(name)
#define DIFF_U32(name)      DIFF_SCALAR(name)
#define DIFF_I32(name)      DIFF_SCALAR(name)
#define DIFF_U64(name)      DIFF_SCALAR(name)
#define DIFF_I64(name)      DIFF_SCALAR(name)
#define DIFF_F64(name)      DIFF_BYTES(name)
#define DIFF_AI32(name)     DIFF_BYTES(name)
#define DIFF_AI64(name)     DIFF_BYTES(name)
#define DIFF_AU64(name)     DIFF_BYTES(name)
#define DIFF_AF32(name)     DIFF_BYTES(name)
#define DIFF_AF64(name)     DIFF_BYTES(name)
#define DIFF_NAME(name)     if (strcmp(a->name, b->name) != 0) { n++; note(why, cap, #name); }
#define DIFF_SUB(name)      n += diff_sub(&a->name, &b->name, why, cap);
#define DIFF_RES(name)
#define DIFF_STR(name)      if (!a->name || !b->name || strcmp(a->name, b->name) != 0) { n++; note(why, cap, #name); }
#define DIFF_X_U32(name)
#define DIFF_X_U64(name)
// (SUB fields are summaries; a second SUB type would add its case here)
#define diff_sub(x, y, w, c) diff_summary(x, y, w, c)
#include "tg/trace-records.def"
#include "trace/trace-wire.def"
#undef TRACE_BEGIN
#undef TRACE_FINISH
#undef TG_TRACE_FIELD

// bytes: walking the list, each stored field is at TRACE_AT(tag, field) and
// holds its value little-endian; reserved bytes are 0; the walk ends at
// TRACE_SIZE(tag). Counts the fields that fail in *bad (named on stdout).
static uint64_t le(const uint8_t * p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}
static void bytes_fail(int * bad, const char * tag, const char * field, size_t at) {
    (*bad)++;
    printf("  %s.%s: wrong bytes or offset at %zu\n", tag, field, at);
}
#define TRACE_BEGIN(T, tag, size) \
    static void bytes_##tag(const uint8_t * e, const T * s, int * bad) { \
        typedef struct trace_layout_##tag L_; const char * tag_ = #tag; size_t at = 0; (void) s;
#define TRACE_FINISH(tag) if (at != TRACE_SIZE(tag)) bytes_fail(bad, tag_, "(end)", at); }
#define TG_TRACE_FIELD(kind, name, n) BYTES_##kind(name, n)
#define BYTES_AT(name)        if (offsetof(L_, name) != at) bytes_fail(bad, tag_, #name, at);
#define BYTES_INT(name, w)    BYTES_AT(name) if (le(e + at, w) != (uint64_t) s->name && \
                                             le(e + at, w) != ((uint64_t) s->name & ((~0ull) >> (64 - 8 * (w))))) \
                                  bytes_fail(bad, tag_, #name, at); \
                              at += (w);
#define BYTES_ARR(name, n, w) BYTES_AT(name) for (int k = 0; k < (n); k++, at += (w)) \
                                  if (le(e + at, w) != ((uint64_t) s->name[k] & ((~0ull) >> (64 - 8 * (w))))) \
                                      bytes_fail(bad, tag_, #name, at);
#define BYTES_U16(name, n)    BYTES_INT(name, 2)
#define BYTES_U32(name, n)    BYTES_INT(name, 4)
#define BYTES_I32(name, n)    BYTES_INT(name, 4)
#define BYTES_U64(name, n)    BYTES_INT(name, 8)
#define BYTES_I64(name, n)    BYTES_INT(name, 8)
#define BYTES_F64(name, n)    BYTES_AT(name) { uint64_t u; memcpy(&u, &s->name, 8); \
                                  if (le(e + at, 8) != u) bytes_fail(bad, tag_, #name, at); } at += 8;
#define BYTES_AI32(name, n)   BYTES_ARR(name, n, 4)
#define BYTES_AI64(name, n)   BYTES_ARR(name, n, 8)
#define BYTES_AU64(name, n)   BYTES_ARR(name, n, 8)
#define BYTES_AF32(name, n)   BYTES_AT(name) for (int k = 0; k < (n); k++, at += 4) { uint32_t u; \
                                  memcpy(&u, &s->name[k], 4); if (le(e + at, 4) != u) bytes_fail(bad, tag_, #name, at); }
#define BYTES_AF64(name, n)   BYTES_AT(name) for (int k = 0; k < (n); k++, at += 8) { uint64_t u; \
                                  memcpy(&u, &s->name[k], 8); if (le(e + at, 8) != u) bytes_fail(bad, tag_, #name, at); }
#define BYTES_NAME(name, n)   BYTES_AT(name) if (memcmp(e + at, s->name, (n)) != 0) bytes_fail(bad, tag_, #name, at); \
                              at += (n);
#define BYTES_SUB(name, tag)  BYTES_AT(name) bytes_##tag(e + at, &s->name, bad); at += TRACE_SIZE(tag);
#define BYTES_RES(name, n)    BYTES_AT(name) for (int k = 0; k < (n); k++) \
                                  if (e[at + (size_t) k]) bytes_fail(bad, tag_, #name, at); \
                              at += (n);
#define BYTES_STR(name, n)
#define BYTES_X_U32(name, n)
#define BYTES_X_U64(name, n)
#include "tg/trace-records.def"
#include "trace/trace-wire.def"
#undef TRACE_BEGIN
#undef TRACE_FINISH
#undef TG_TRACE_FIELD

// round trip of one layout (a few random structs): encode into a buffer
// filled with 0xEE (reserved bytes must become 0), check the bytes, decode
// into a struct filled with other bytes, then (public layouts) the strings
// after the fixed part; compare everything.
#define ROUNDS 20
#define TAIL_PUB(tag) \
    size_t ts = trace_tail_size_##tag(&in); \
    uint8_t * tend = trace_put_tail_##tag(end, &in); \
    const uint8_t * q = dend; \
    tail_ok = (size_t) (tend - end) == ts && trace_get_tail_##tag(&q, tend, &out) && q == tend;
#define TAIL_WIRE(tag)
#define ROUND_TRIP(T, tag, mode) \
    static int round_trip_##tag(uint64_t * r) { \
        int fails = 0; \
        for (int round = 0; round < ROUNDS; round++) { \
            T in, out; \
            memset(&in, 0, sizeof(in)); \
            memset(&out, 0x5A, sizeof(out)); \
            fill_##tag(&in, r); \
            uint8_t buf[TRACE_SIZE(tag) + 512]; \
            memset(buf, 0xEE, sizeof(buf)); \
            uint8_t * end = trace_put_##tag(buf, &in); \
            int bad = 0; \
            bytes_##tag(buf, &in, &bad); \
            const uint8_t * dend = trace_get_##tag(buf, &out); \
            bool tail_ok = true; \
            TAIL_##mode(tag) \
            char why[512] = ""; \
            int nd = tail_ok ? diff_##tag(&in, &out, why, sizeof(why)) : -1; \
            if (end != buf + TRACE_SIZE(tag) || dend != buf + TRACE_SIZE(tag) || bad || nd) { \
                if (fails++ == 0) \
                    printf("  %s: round %d: %d fields differ (%s), %d bad bytes, tail %s\n", #tag, round, nd, why, \
                           bad, tail_ok ? "ok" : "wrong"); \
            } \
        } \
        return fails; \
    }
#undef TG_TRACE_REC
#undef TRACE_WIRE
#define TG_TRACE_REC(tag, size)       ROUND_TRIP(struct tg_trace_##tag, tag, PUB)
#define TRACE_WIRE(tag, size)         ROUND_TRIP(struct trace_##tag, tag, WIRE)
#define TRACE_FINISH(tag)
#define TG_TRACE_FIELD(kind, name, n)
#include "tg/trace-records.def"
#include "trace/trace-wire.def"

// ---- the list of layouts -----------------------------------------------------
struct layout { const char * tag; size_t size, stated; int (*round_trip)(uint64_t *); };
#undef TG_TRACE_REC
#undef TRACE_WIRE
#define TG_TRACE_REC(tag, size) { #tag, TRACE_SIZE(tag), size, round_trip_##tag },
#define TRACE_WIRE(tag, size)   { #tag, TRACE_SIZE(tag), size, round_trip_##tag },
static const struct layout layouts[] = {
#include "tg/trace-records.def"
#include "trace/trace-wire.def"
};
#define N_LAYOUTS ((int) (sizeof(layouts) / sizeof(layouts[0])))
#undef TG_TRACE_REC
#undef TG_TRACE_REC_END
#undef TRACE_WIRE
#undef TRACE_WIRE_END
#undef TRACE_FINISH
#undef TG_TRACE_FIELD

static void test_round_trips(void) {
    uint64_t r = 42;
    for (int i = 0; i < N_LAYOUTS; i++) {
        int fails = layouts[i].round_trip(&r);
        CHECK(fails == 0, "%s (%zu bytes, list states %zu): %d random values encode and decode to themselves, "
              "each field at its offset, little-endian (%d failed)", layouts[i].tag, layouts[i].size,
              layouts[i].stated, ROUNDS, fails);
    }
}

// ---- the swapped list ---------------------------------------------------------
static void test_swapped(void) {
    uint64_t r = 7;
    struct tg_trace_eval in, out;
    memset(&in, 0, sizeof(in));
    fill_eval(&in, &r);
    in.t_end_ns = in.t_begin_ns + 12345;   // distinct
    uint8_t a[TRACE_SIZE(eval)], b[TRACE_SIZE(eval)];
    trace_put_eval(a, &in);
    swapped_put_eval(b, &in);
    CHECK(memcmp(a, b, sizeof(a)) != 0, "the list with t_begin_ns and t_end_ns swapped encodes other bytes");

    char why[256] = "";
    memset(&out, 0, sizeof(out));
    swapped_get_eval(a, &out);   // written by the list, read by the swapped copy
    int nd = diff_eval(&in, &out, why, sizeof(why));
    CHECK(nd == 2 && strcmp(why, "t_begin_ns,t_end_ns") == 0 && out.t_begin_ns == in.t_end_ns &&
          out.t_end_ns == in.t_begin_ns,
          "read back with the swapped list: the round trip is detected as wrong in exactly the swapped fields "
          "(%d differ: %s)", nd, why);
    why[0] = '\0';
    memset(&out, 0, sizeof(out));
    trace_get_eval(b, &out);     // written by the swapped copy, read by the list
    nd = diff_eval(&in, &out, why, sizeof(why));
    CHECK(nd == 2 && strcmp(why, "t_begin_ns,t_end_ns") == 0,
          "written with the swapped list, read with the list: wrong in the swapped fields (%d differ: %s)", nd, why);
    why[0] = '\0';
    memset(&out, 0, sizeof(out));
    swapped_get_eval(b, &out);   // one list on both sides: fine again
    nd = diff_eval(&in, &out, why, sizeof(why));
    CHECK(nd == 0, "the swapped list round-trips with itself (%d differ: %s)", nd, why);
}

// ---- FORMAT.md ------------------------------------------------------------------
static void test_format_doc(void) {
    const char * path = TG_SOURCE_DIR "/trace/FORMAT.md";
    FILE * f = fopen(path, "r");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    char line[512];
    bool in_table = false;
    int rows = 0, matched[64] = { 0 };
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "## ", 3) == 0) { in_table = strncmp(line, "## Layout sizes", 15) == 0; continue; }
        if (!in_table || line[0] != '|') continue;
        char name[64];
        long bytes;
        if (sscanf(line, "| %63[a-z_0-9] | %ld |", name, &bytes) != 2) continue;   // header, rule
        rows++;
        int i = 0;
        while (i < N_LAYOUTS && strcmp(layouts[i].tag, name) != 0) i++;
        CHECK(i < N_LAYOUTS, "FORMAT.md layout '%s' is a layout of the code", name);
        if (i == N_LAYOUTS) continue;
        matched[i]++;
        CHECK((size_t) bytes == layouts[i].size, "FORMAT.md states %s = %ld bytes; the code has %zu", name, bytes,
              layouts[i].size);
    }
    fclose(f);
    CHECK(rows > 0, "FORMAT.md has a \"Layout sizes\" table (%d rows)", rows);
    for (int i = 0; i < N_LAYOUTS; i++)
        CHECK(matched[i] == 1, "layout %s is stated once in FORMAT.md's table (%d times)", layouts[i].tag, matched[i]);
}

int main(void) {
    _Static_assert(sizeof(layouts) / sizeof(layouts[0]) <= 64, "matched[] in test_format_doc");
    test_round_trips();
    test_swapped();
    test_format_doc();
    return tg_check_finish("test_trace_layouts");
}
