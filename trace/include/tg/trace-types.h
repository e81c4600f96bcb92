// tg/trace-types.h - the plain structs shared by the trace writer (tg/trace.h)
// and the trace reader (tg/trace-read.h).
//
// A trace is a sequence of framed records (trace/FORMAT.md). Each record kind
// below has one plain struct. The writer takes these structs; the reader
// fills them. Strings the reader returns (`const char *`) point into the
// mapped file and stay valid until tg_trace_close(); fixed-size names
// (char name[TG_TRACE_NAME]) are copied and always NUL-terminated.
//
// Identities used across records:
//   graph_id     a graph as planned by a scheduler (one GRAPH record each);
//   tensor index position inside a graph: nodes 0..n_nodes-1 in execution
//                order, then leafs n_nodes..n_nodes+n_leafs-1;
//   uid          a process-wide identity of an engine object (the address of
//                the tensor or buffer while the traced process ran); it links
//                the same tensor across graphs and host accesses;
//   compute_seq  the n-th graph computation of the run (0, 1, ...);
//   record       the ordinal of a record in the file (0 = first record): it
//                orders every event of the run.
#ifndef TG_TRACE_TYPES_H
#define TG_TRACE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_TRACE_NAME          64   // bytes of a fixed name field, NUL included
#define TG_TRACE_BUFT_NAME     32
#define TG_TRACE_MAX_DIMS      4
#define TG_TRACE_MAX_SRC       6
#define TG_TRACE_MAX_OP_PARAMS 16
#define TG_TRACE_MAX_BACKENDS  16
#define TG_TRACE_SKETCH_N      64   // buckets of a value sketch (SKETCH record)
#define TG_TRACE_NONE          (-1) // "no tensor / no buffer / no backend" in index fields

// Record types (u16 in the frame). Append-only; readers skip unknown types.
enum tg_trace_rec {
    TG_TRACE_REC_RUN       = 1,   // run metadata + op/type name tables
    TG_TRACE_REC_SCHED     = 2,   // a scheduler and its backends
    TG_TRACE_REC_GRAPH     = 3,   // graph structure (nodes and leafs)
    TG_TRACE_REC_PLACEMENT = 4,   // per tensor: backend and cause of the placement
    TG_TRACE_REC_SPLITS    = 5,   // splits and their input copies
    TG_TRACE_REC_ALLOC     = 6,   // allocation map: buffers, per tensor buffer/offset/live range
    TG_TRACE_REC_COMPUTE   = 7,   // graph compute begin / end
    TG_TRACE_REC_EVAL      = 8,   // one evaluated node: time, hash, numeric summary
    TG_TRACE_REC_CONTENTS  = 9,   // full contents of one evaluated node (zstd)
    TG_TRACE_REC_HOST      = 10,  // host read / write of tensor data
    TG_TRACE_REC_MARKER    = 11,  // decode call / user marker (tokens, positions)
    TG_TRACE_REC_EVENT     = 12,  // diagnostics event (unallocated use, poison, errors)
    TG_TRACE_REC_GRAPH_DELTA     = 13,  // a graph as an earlier GRAPH with some tensors changed (1.1)
    TG_TRACE_REC_PLACEMENT_DELTA = 14,  // a PLACEMENT as an earlier one with some entries changed (1.1)
    TG_TRACE_REC_ALLOC_DELTA     = 15,  // an ALLOC as an earlier one with some entries changed (1.1)
    TG_TRACE_REC_SKETCH          = 16,  // a fixed-size sketch of one evaluated node's values (1.2)
    TG_TRACE_REC_GRADS           = 17,  // gradient links of a graph: gradient tensor -> the tensor it differentiates (1.3)
    TG_TRACE_REC_RESULT          = 18,  // an EVAL's hash and summary, computed after it was written (1.4)
    TG_TRACE_REC_INDEX     = 0x7F00, // offsets of every earlier record (written at close)
    TG_TRACE_REC_FOOTER    = 0x7F01, // last record: where the index is
};

// Returns "RUN", "GRAPH", ... or "UNKNOWN".
const char * tg_trace_rec_name(uint32_t type);

// ---- enums used in the records ---------------------------------------------
enum tg_trace_buffer_usage { TG_TRACE_USAGE_ANY = 0, TG_TRACE_USAGE_WEIGHTS = 1, TG_TRACE_USAGE_COMPUTE = 2 };
enum tg_trace_alloc_flag {
    TG_TRACE_ALLOC_ALLOCATED = 1 << 0,  // the graph allocator placed it (offset in a compute buffer)
    TG_TRACE_ALLOC_INPLACE   = 1 << 1,  // reuses inplace_parent's memory
    TG_TRACE_ALLOC_VIEW      = 1 << 2,  // a view: memory of its view_src
    TG_TRACE_ALLOC_EXTERNAL  = 1 << 3,  // had memory before the graph (weights, caches, inputs)
    TG_TRACE_ALLOC_REUSED    = 1 << 4,  // its range was used by an earlier tensor of the graph
    TG_TRACE_ALLOC_NONE      = 1 << 5,  // has no memory at all
    TG_TRACE_ALLOC_PACKED    = 1 << 6,  // a weight the CPU's kernels read from a packed copy (tg_cpu_pack);
                                        // its bytes (what hashes and dumps see) are the weight's own
};
enum tg_trace_phase { TG_TRACE_BEGIN = 0, TG_TRACE_END = 1 };
enum tg_trace_eval_flag {
    TG_TRACE_EVAL_TIME     = 1 << 0,  // t_begin/t_end valid
    TG_TRACE_EVAL_HASH     = 1 << 1,  // hash valid
    TG_TRACE_EVAL_SUMMARY  = 1 << 2,  // min..n_zero valid
    TG_TRACE_EVAL_CONTENTS = 1 << 3,  // a CONTENTS record follows
    TG_TRACE_EVAL_NODATA   = 1 << 4,  // the data was not readable from the host
    TG_TRACE_EVAL_SKETCH   = 1 << 5,  // a SKETCH record follows (1.2)
    TG_TRACE_EVAL_PENDING  = 1 << 6,  // its hash and summary follow in a RESULT record (1.4); readers
                                      // merge it and clear the flag: still set, the process ended first
    TG_TRACE_EVAL_SETDIGEST = 1 << 7, // hash, summary and sketch are the element-set digest (1.5: an F16
                                      // view of 1024+ elements outside compute buffers, a KV cache; FORMAT.md)
};
enum tg_trace_codec { TG_TRACE_CODEC_RAW = 0, TG_TRACE_CODEC_ZSTD = 1 };
enum tg_trace_host_kind { TG_TRACE_HOST_READ = 0, TG_TRACE_HOST_WRITE = 1 };
enum tg_trace_marker_kind { TG_TRACE_MARK_DECODE = 0, TG_TRACE_MARK_USER = 1, TG_TRACE_MARK_PHASE = 2 };
enum tg_trace_event_kind {
    TG_TRACE_EV_LOG = 0,            // free text
    TG_TRACE_EV_UNALLOCATED_USE,    // set/get/compute on a tensor with no buffer
    TG_TRACE_EV_GRAPH_ALLOCATED,    // graph allocated on a scheduler
    TG_TRACE_EV_BUFFER_REALLOC,     // a compute buffer was (re)allocated
    TG_TRACE_EV_RANGE_HANDED,       // a buffer range handed to a tensor
    TG_TRACE_EV_POISON,             // poison mode filled a freed range
    TG_TRACE_EV_ERROR,              // an engine error during the run
    TG_TRACE_EV_COUNT
};
enum tg_trace_severity { TG_TRACE_INFO = 0, TG_TRACE_WARN = 1, TG_TRACE_ERROR = 2 };

// ---- records and entries whose struct is their byte layout ------------------
// Generated from tg/trace-records.def (which documents every field): struct
// tg_trace_summary, _run, _tensor, _split, _split_input, _buffer, _alloc,
// _compute, _eval, _contents, _host, _marker, _event and _sketch, members in
// wire order.
#define TG_TRACE_MEMBER_U16(name, n)   uint16_t name;
#define TG_TRACE_MEMBER_U32(name, n)   uint32_t name;
#define TG_TRACE_MEMBER_I32(name, n)   int32_t name;
#define TG_TRACE_MEMBER_U64(name, n)   uint64_t name;
#define TG_TRACE_MEMBER_I64(name, n)   int64_t name;
#define TG_TRACE_MEMBER_F64(name, n)   double name;
#define TG_TRACE_MEMBER_AI32(name, n)  int32_t name[n];
#define TG_TRACE_MEMBER_AI64(name, n)  int64_t name[n];
#define TG_TRACE_MEMBER_AU64(name, n)  uint64_t name[n];
#define TG_TRACE_MEMBER_AF32(name, n)  float name[n];
#define TG_TRACE_MEMBER_AF64(name, n)  double name[n];
#define TG_TRACE_MEMBER_NAME(name, n)  char name[n];
#define TG_TRACE_MEMBER_SUB(name, tag) struct tg_trace_##tag name;
#define TG_TRACE_MEMBER_RES(name, n)
#define TG_TRACE_MEMBER_STR(name, n)   const char * name;
#define TG_TRACE_MEMBER_X_U32(name, n) uint32_t name;
#define TG_TRACE_MEMBER_X_U64(name, n) uint64_t name;

#define TG_TRACE_REC(tag, size)        struct tg_trace_##tag {
#define TG_TRACE_FIELD(kind, name, n)  TG_TRACE_MEMBER_##kind(name, n)
#define TG_TRACE_REC_END(tag)          };
#include "tg/trace-records.def"
#undef TG_TRACE_REC
#undef TG_TRACE_FIELD
#undef TG_TRACE_REC_END

// ---- SCHED ----------------------------------------------------------------
struct tg_trace_sched {
    uint32_t     sched_id;
    int32_t      n_backends;                        // <= TG_TRACE_MAX_BACKENDS
    const char * backend[TG_TRACE_MAX_BACKENDS];    // "CPU"
    const char * buft[TG_TRACE_MAX_BACKENDS];       // default buffer type name
    uint32_t     record;
};

// ---- GRAPH ----------------------------------------------------------------
struct tg_trace_graph {
    uint32_t graph_id;
    uint32_t sched_id;        // UINT32_MAX when computed without a scheduler
    int32_t  n_nodes;
    int32_t  n_leafs;
    uint64_t structure_hash;  // xxh64 of the tensor entries (same topology -> same hash)
    uint32_t record;
    uint64_t offset;          // reader: file offset of the record
    uint32_t base_graph_id;   // reader: stored as a delta of this graph (0: a full GRAPH record)
};

// ---- PLACEMENT ------------------------------------------------------------
// One per tensor of the graph (entry i = tensor index i).
struct tg_trace_placement {
    int32_t      backend;     // index into the scheduler's backends, TG_TRACE_NONE if unassigned
    uint32_t     cause;       // engine cause code (tg/sched.h)
    const char * text;        // cause in words ("weight in CPU buffer"), "" if none
};

// Returns "log", "unallocated-use", ... or "unknown".
const char * tg_trace_event_kind_name(uint32_t kind);

// Node selection patterns (contents recording, `tgdb trace nodes --filter`):
// a comma-separated list; each item is a node-name glob (`*` any run of
// characters, `?` one character: "blk.3.*", "*-3") or `op=NAME` (an op name
// glob: "op=MUL_MAT"). True when `name` or `op_name` matches an item; a NULL
// or empty list matches nothing.
bool tg_trace_pattern_match(const char * patterns, const char * name, const char * op_name);
// Glob match of one pattern (`*`, `?`) against s.
bool tg_trace_glob(const char * pattern, const char * s);

// THE node filter of `tgdb trace nodes --filter`, the shell and the TUI:
// comma-separated alternatives (a node matches when ANY matches), each a
// node-name glob, `op=GLOB` (op name) or `type=GLOB` (type name: "f32",
// "q4_0"); `name=GLOB` spells a name glob explicitly. Op and type names
// compare case-insensitively, names exactly. NULL or empty matches everything
// (no filter). type_name may be NULL (then type= items never match).
bool tg_trace_filter_match(const char * filter, const char * name, const char * op_name, const char * type_name);
// Checks a filter's syntax: false with a one-line reason in why[cap] for an
// empty item or an unknown KEY= (e.g. "shape=").
bool tg_trace_filter_check(const char * filter, char * why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif // TG_TRACE_TYPES_H
