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
    TG_TRACE_REC_INDEX     = 0x7F00, // offsets of every earlier record (written at close)
    TG_TRACE_REC_FOOTER    = 0x7F01, // last record: where the index is
};

// Returns "RUN", "GRAPH", ... or "UNKNOWN".
const char * tg_trace_rec_name(uint32_t type);

// ---- RUN ------------------------------------------------------------------
struct tg_trace_run {
    uint64_t     time_unix_ns;    // wall clock when tracing started
    uint64_t     mono_start_ns;   // CLOCK_MONOTONIC at start (event times use this clock)
    uint32_t     pid;
    int32_t      n_threads;
    const char * engine_version;  // "0.1.0"
    const char * cmdline;         // argv joined by spaces
    const char * backends;        // "CPU,BLAS"
    const char * note;            // free text ("" if none)
    uint32_t     record;          // reader: record ordinal
};

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

// One node or leaf of a graph. Indices (src, view_src) are tensor indices in
// the same graph, TG_TRACE_NONE when absent.
struct tg_trace_tensor {
    char     name[TG_TRACE_NAME];
    uint64_t uid;
    int64_t  ne[TG_TRACE_MAX_DIMS];
    uint64_t nb[TG_TRACE_MAX_DIMS];
    int32_t  op_params[TG_TRACE_MAX_OP_PARAMS];
    int32_t  op;              // engine op id; name via tg_trace_op_name()
    int32_t  type;            // engine type id; name via tg_trace_type_name()
    int32_t  flags;           // engine tensor flags (input/output/param/loss)
    int32_t  src[TG_TRACE_MAX_SRC];
    int32_t  view_src;
    uint64_t view_offs;
};

// ---- PLACEMENT ------------------------------------------------------------
// One per tensor of the graph (entry i = tensor index i).
struct tg_trace_placement {
    int32_t      backend;     // index into the scheduler's backends, TG_TRACE_NONE if unassigned
    uint32_t     cause;       // engine cause code (tg/sched.h)
    const char * text;        // cause in words ("weight in CPU buffer"), "" if none
};

// ---- SPLITS ---------------------------------------------------------------
struct tg_trace_split {
    int32_t  backend;
    int32_t  node_begin;      // nodes [node_begin, node_end) of the graph
    int32_t  node_end;
    uint32_t first_input;     // inputs [first_input, first_input + n_inputs) of the record
    uint32_t n_inputs;
};

struct tg_trace_split_input {
    int32_t  tensor;          // tensor index of the source being copied
    int32_t  from_backend;
    uint64_t bytes;           // bytes copied per compute
    char     copy_name[TG_TRACE_NAME];
};

// ---- ALLOC ----------------------------------------------------------------
enum tg_trace_buffer_usage { TG_TRACE_USAGE_ANY = 0, TG_TRACE_USAGE_WEIGHTS = 1, TG_TRACE_USAGE_COMPUTE = 2 };

struct tg_trace_buffer {
    uint64_t uid;
    int32_t  backend;
    int32_t  usage;           // enum tg_trace_buffer_usage
    uint64_t size;
    char     buft[TG_TRACE_BUFT_NAME];
};

enum tg_trace_alloc_flag {
    TG_TRACE_ALLOC_ALLOCATED = 1 << 0,  // the graph allocator placed it (offset in a compute buffer)
    TG_TRACE_ALLOC_INPLACE   = 1 << 1,  // reuses inplace_parent's memory
    TG_TRACE_ALLOC_VIEW      = 1 << 2,  // a view: memory of its view_src
    TG_TRACE_ALLOC_EXTERNAL  = 1 << 3,  // had memory before the graph (weights, caches, inputs)
    TG_TRACE_ALLOC_REUSED    = 1 << 4,  // its range was used by an earlier tensor of the graph
    TG_TRACE_ALLOC_NONE      = 1 << 5,  // has no memory at all
};

// One per tensor of the graph (entry i = tensor index i).
struct tg_trace_alloc {
    int32_t  buffer;          // index into the record's buffers, TG_TRACE_NONE if none
    int32_t  inplace_parent;  // tensor index whose memory it reuses, or TG_TRACE_NONE
    uint64_t offset;          // byte offset of its data in the buffer
    uint64_t size;            // bytes
    int32_t  first_step;      // node index that first writes it (-1: before the graph)
    int32_t  last_step;       // node index that last reads it (-1: never / after the graph)
    uint32_t flags;           // enum tg_trace_alloc_flag
};

// ---- COMPUTE --------------------------------------------------------------
enum tg_trace_phase { TG_TRACE_BEGIN = 0, TG_TRACE_END = 1 };

struct tg_trace_compute {
    uint32_t graph_id;
    uint32_t compute_seq;
    uint32_t phase;           // enum tg_trace_phase
    int32_t  status;          // enum tg_status at END (0 = ok)
    uint64_t time_ns;         // CLOCK_MONOTONIC
    uint32_t record;
};

// ---- EVAL -----------------------------------------------------------------
enum tg_trace_eval_flag {
    TG_TRACE_EVAL_TIME     = 1 << 0,  // t_begin/t_end valid
    TG_TRACE_EVAL_HASH     = 1 << 1,  // hash valid
    TG_TRACE_EVAL_SUMMARY  = 1 << 2,  // min..n_zero valid
    TG_TRACE_EVAL_CONTENTS = 1 << 3,  // a CONTENTS record follows
    TG_TRACE_EVAL_NODATA   = 1 << 4,  // the data was not readable from the host
};

struct tg_trace_summary {
    double   min, max;        // over non-NaN values (infinities included)
    double   mean, rms;       // over finite values
    uint64_t n_nan, n_inf, n_zero;
    uint64_t n_elem;
};

struct tg_trace_eval {
    uint32_t graph_id;
    uint32_t compute_seq;
    int32_t  node;            // node index in the graph
    uint32_t flags;           // enum tg_trace_eval_flag
    uint64_t t_begin_ns, t_end_ns;  // CLOCK_MONOTONIC
    uint64_t hash;            // tg_trace_hash_tensor() of the result
    uint64_t uid;             // tensor uid
    uint64_t root_uid;        // uid of the tensor owning the memory (itself unless a view)
    uint64_t buffer_uid;      // buffer holding the data (0 if none)
    uint64_t offset;          // byte offset of the data in that buffer
    uint64_t nbytes;          // bytes spanned by the tensor
    int32_t  backend;
    int32_t  split;
    struct tg_trace_summary sum;
    uint32_t record;
};

// ---- CONTENTS -------------------------------------------------------------
enum tg_trace_codec { TG_TRACE_CODEC_RAW = 0, TG_TRACE_CODEC_ZSTD = 1 };

struct tg_trace_contents {
    uint32_t graph_id;
    uint32_t compute_seq;
    int32_t  node;
    int32_t  type;
    uint32_t codec;           // enum tg_trace_codec
    int64_t  ne[TG_TRACE_MAX_DIMS];
    uint64_t raw_size;        // bytes once decoded (elements in logical order, own type)
    uint64_t stored_size;     // bytes in the file
    uint64_t hash;            // xxh64 of the decoded bytes (== the eval hash)
    uint32_t record;
};

// ---- HOST -----------------------------------------------------------------
enum tg_trace_host_kind { TG_TRACE_HOST_READ = 0, TG_TRACE_HOST_WRITE = 1 };

struct tg_trace_host {
    uint32_t kind;            // enum tg_trace_host_kind
    uint32_t compute_seq;     // computations finished before the access
    uint64_t time_ns;
    uint64_t uid, root_uid;
    uint64_t buffer_uid;
    uint64_t offset;          // byte offset in the buffer of the first byte accessed
    uint64_t size;            // bytes accessed
    uint64_t hash;            // xxh64 of the bytes accessed (0 if not taken)
    int32_t  graph_id;        // latest graph holding the tensor, -1 if unknown
    int32_t  tensor;          // its index there, -1 if unknown
    char     name[TG_TRACE_NAME];
    uint32_t record;
};

// ---- MARKER ---------------------------------------------------------------
enum tg_trace_marker_kind { TG_TRACE_MARK_DECODE = 0, TG_TRACE_MARK_USER = 1, TG_TRACE_MARK_PHASE = 2 };

struct tg_trace_marker {
    uint32_t     kind;        // enum tg_trace_marker_kind
    uint32_t     compute_seq; // computations finished before the marker
    uint64_t     time_ns;
    int32_t      n_tokens;
    int32_t      pos;         // position of the first token
    int32_t      seq_id;
    uint32_t     n_ids;       // token ids (tg_trace_marker_tokens())
    const char * text;        // "decode", "prompt", user text
    uint32_t     record;
};

// ---- EVENT ----------------------------------------------------------------
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

struct tg_trace_event {
    uint32_t     kind;        // enum tg_trace_event_kind
    uint32_t     severity;    // enum tg_trace_severity
    uint64_t     time_ns;
    int32_t      graph_id;    // -1 if none
    int32_t      tensor;      // tensor index, -1 if none
    uint64_t     uid;         // tensor uid (0 if none)
    uint64_t     buffer_uid;
    uint64_t     offset, size;
    int32_t      step;        // node step (-1 if none)
    char         name[TG_TRACE_NAME];
    const char * message;
    uint32_t     record;
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
