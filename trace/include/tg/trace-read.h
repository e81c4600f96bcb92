// tg/trace-read.h - reading trace files (trace/FORMAT.md).
//
// tg_trace_open() maps the file read-only and lists its records: from the
// index when the file was closed properly, otherwise by a linear scan that
// stops at the last complete record and says where and why (a cut record, a
// bad checksum, a bad sync word). Nothing is decoded until asked: accessors
// decode one record (or one entry of a record) into a plain struct.
// Opening costs one pass over the record headers plus a few arrays (no
// per-node allocation); a trace of 200k evaluated nodes opens in milliseconds.
//
// Conventions:
//  - `gi` is a graph's position in the file's graph list (0..n_graphs-1);
//    tg_trace_find_graph() maps a graph_id to it. `ti` is a tensor index in
//    that graph (nodes first, then leafs). `i` is the position of a record in
//    its kind's list (evals, hosts, markers ...), in file order.
//  - Accessors return false (or -1 / 0) for out-of-range arguments or a
//    corrupt entry, and never read outside the file: corrupt input gives
//    clean errors, never a crash.
//  - Strings (`const char *`) point into the mapped file and stay valid
//    until tg_trace_close(); they are always NUL-terminated.
//  - Nothing here is thread-safe against tg_trace_close(); concurrent
//    readers of one open trace are fine except for the first call of the
//    lazily indexed lookups (tg_trace_find_eval / tg_trace_find_contents),
//    which should be made once before sharing the handle.
#ifndef TG_TRACE_READ_H
#define TG_TRACE_READ_H

#include "tg/status.h"
#include "tg/trace-types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tg_trace;

// Why a linear scan stopped before the end of the file.
enum tg_trace_stop {
    TG_TRACE_STOP_NONE = 0,      // the scan reached the end of the file cleanly
    TG_TRACE_STOP_CUT,           // the file ends inside a record (header or payload)
    TG_TRACE_STOP_BAD_SYNC,      // bytes where a record should start are not a record
    TG_TRACE_STOP_BAD_CHECKSUM,  // a record's checksum does not match its bytes
    TG_TRACE_STOP_BAD_LENGTH,    // a record claims an impossible length
    TG_TRACE_STOP_BAD_RECORD,    // a known record type with an inconsistent payload
};
// "complete", "cut mid-record", "bad sync word", "bad checksum", ...
const char * tg_trace_stop_str(enum tg_trace_stop why);

struct tg_trace_status {
    uint16_t version_major, version_minor;
    bool     complete;        // index and footer present: the writer closed the file
    bool     indexed;         // records listed from the index (no scan needed)
    bool     truncated;       // not complete: the process died, or the file was damaged
    enum tg_trace_stop stop;  // why the scan stopped (NONE if it reached the end)
    uint64_t file_size;
    uint64_t valid_end;       // offset just past the last complete record
    uint64_t stop_offset;     // offset of the first bad/cut record (== valid_end)
    uint32_t n_records;       // complete records listed (after damage too: see n_damaged)
    uint32_t n_unknown;       // records of unknown types (skipped)
    uint32_t n_invalid;       // records with a good frame but an inconsistent payload (skipped)
    uint32_t n_damaged;       // damaged stretches skipped (tg_trace_get_damage); complete is false when > 0
    uint64_t damaged_bytes;   // bytes in them
    char     message[256];    // one line: "trace not closed: 1234 complete records, cut mid-record at offset 56789 (record 1234)"
};

// One damaged stretch of the file that the reader skipped. A record whose
// frame is bad (sync word, length, checksum, or it disagrees with the index)
// is skipped and reading goes on at the next record: from the index when the
// index is intact (it says where every record starts), else by
// resynchronising on the framing (the next sync word whose frame has a
// matching length and checksum). stop (above) and stop_offset name the first
// damage; valid_end is past the last record read.
struct tg_trace_damage {
    uint32_t record;          // ordinal the lost record had (index entry, or position in the scan)
    uint64_t offset;          // file offset where the damage starts
    uint64_t bytes;           // bytes skipped (to the next good record, or to the end of the file)
    enum tg_trace_stop why;   // what was wrong there
    uint32_t type;            // the lost record's type when the index says it, else 0
    bool     to_end;          // nothing readable after it (the file is cut or damaged to the end)
};
// Damaged stretches, in file order (0 <= i < status.n_damaged). False when i
// is out of range.
bool tg_trace_get_damage(const struct tg_trace * tr, int i, struct tg_trace_damage * out);
// One line for users (commands print it on stderr as "warning: LINE") when
// the trace is damaged, truncated or not closed: "trace 'FILE': <what>,
// naming the first damaged record, its offset and what was lost". Returns
// false (buf = "") for a complete, undamaged trace. buf is always
// NUL-terminated (n > 0).
bool tg_trace_warning(const struct tg_trace * tr, char * buf, size_t n);

// Opens a trace file. Returns NULL and sets the last error (TG_ERR_IO: cannot
// open/map; TG_ERR_FORMAT: not a trace, bad header, unsupported major version).
// A truncated or damaged tail is NOT an error: the trace opens with what is
// readable and tg_trace_get_status() says what was lost. Close with tg_trace_close().
struct tg_trace * tg_trace_open(const char * path);
// Same over memory the caller keeps alive and unchanged until close (no copy).
struct tg_trace * tg_trace_open_mem(const void * data, size_t size);
void tg_trace_close(struct tg_trace * tr);
// Open status (always available).
void tg_trace_get_status(const struct tg_trace * tr, struct tg_trace_status * st);
const char * tg_trace_path(const struct tg_trace * tr);   // "" for memory traces

// ---- run, names, schedulers -----------------------------------------------
// First RUN record. False if the trace has none.
bool tg_trace_get_run(const struct tg_trace * tr, struct tg_trace_run * out);
// Names from the trace's own tables: "MUL_MAT", "f32"; "OP#n" / "type#n" when unknown.
// The returned pointer is valid until close (it may point to an internal buffer
// shared by calls with unknown ids: copy it before the next call in that case).
const char * tg_trace_op_name(const struct tg_trace * tr, int op);
const char * tg_trace_type_name(const struct tg_trace * tr, int type);
// Placement cause name ("weight_buffer"); "cause#n" when unknown (same buffer rule).
const char * tg_trace_cause_name(const struct tg_trace * tr, uint32_t cause);
// Op id of a name in the trace's table, -1 if absent.
int tg_trace_op_from_name(const struct tg_trace * tr, const char * name);
int  tg_trace_n_scheds(const struct tg_trace * tr);
bool tg_trace_get_sched(const struct tg_trace * tr, int i, struct tg_trace_sched * out);
// Name of backend b of the scheduler sched_id ("?" if unknown).
const char * tg_trace_backend_name(const struct tg_trace * tr, uint32_t sched_id, int backend);

// ---- graphs and tensors ---------------------------------------------------
int  tg_trace_n_graphs(const struct tg_trace * tr);
bool tg_trace_get_graph(const struct tg_trace * tr, int gi, struct tg_trace_graph * out);
// gi of the graph with this id (the last one if written twice), -1 if none.
int  tg_trace_find_graph(const struct tg_trace * tr, uint32_t graph_id);
// Tensor ti (nodes first) of graph gi. Out-of-range src/view_src indices in a
// damaged file read as TG_TRACE_NONE.
bool tg_trace_get_tensor(const struct tg_trace * tr, int gi, int ti, struct tg_trace_tensor * out);
// Name of tensor ti without decoding the rest ("" if out of range).
const char * tg_trace_tensor_name(const struct tg_trace * tr, int gi, int ti, char buf[TG_TRACE_NAME]);
// First tensor of graph gi with this name (nodes first), -1 if none.
int  tg_trace_find_tensor(const struct tg_trace * tr, int gi, const char * name);
// Latest graph (highest gi) holding a tensor with this uid; sets *ti. -1 if
// none. O(log n) after a one-time sort on first use.
int  tg_trace_find_uid(struct tg_trace * tr, uint64_t uid, int * ti);

// ---- placement, splits, allocation (latest record for the graph) ----------
bool tg_trace_get_placement(const struct tg_trace * tr, int gi, int ti, struct tg_trace_placement * out);
int  tg_trace_n_splits(const struct tg_trace * tr, int gi);            // 0 if none recorded
bool tg_trace_get_split(const struct tg_trace * tr, int gi, int si, struct tg_trace_split * out);
int  tg_trace_n_split_inputs(const struct tg_trace * tr, int gi);
bool tg_trace_get_split_input(const struct tg_trace * tr, int gi, int ii, struct tg_trace_split_input * out);
// Gradient links (GRADS records, format 1.3: graphs built by
// tg_graph_build_backward): the gradient tensor of ti and the tensor ti is the
// gradient of, as tensor indices of graph gi, -1 if none (or no links were
// recorded). tg_trace_get_grad_link reads pair k of n_grads.
int  tg_trace_n_grads(const struct tg_trace * tr, int gi);
bool tg_trace_get_grad_link(const struct tg_trace * tr, int gi, int k, int * grad, int * of);
int  tg_trace_grad(const struct tg_trace * tr, int gi, int ti);
int  tg_trace_grad_of(const struct tg_trace * tr, int gi, int ti);
// Split holding node ti of graph gi, -1 if none.
int  tg_trace_split_of_node(const struct tg_trace * tr, int gi, int ti);
bool tg_trace_has_alloc(const struct tg_trace * tr, int gi);
int  tg_trace_n_buffers(const struct tg_trace * tr, int gi);
bool tg_trace_get_buffer(const struct tg_trace * tr, int gi, int bi, struct tg_trace_buffer * out);
bool tg_trace_get_alloc(const struct tg_trace * tr, int gi, int ti, struct tg_trace_alloc * out);
// Every ALLOC record in file order (a graph allocated on a scheduler): its
// graph_id, sched_id and record ordinal. False if i is out of range.
int  tg_trace_n_alloc_records(const struct tg_trace * tr);
bool tg_trace_get_alloc_record(const struct tg_trace * tr, int i, uint32_t * graph_id, uint32_t * sched_id,
                               uint32_t * record);

// ---- computations and evaluated nodes -------------------------------------
int  tg_trace_n_computes(const struct tg_trace * tr);
bool tg_trace_get_compute(const struct tg_trace * tr, int i, struct tg_trace_compute * out);
int  tg_trace_n_evals(const struct tg_trace * tr);
bool tg_trace_get_eval(const struct tg_trace * tr, int i, struct tg_trace_eval * out);
// Eval of node `node` of graph_id in computation compute_seq (UINT32_MAX: the
// last one), -1 if none. O(log n) after a one-time sort on first use.
int  tg_trace_find_eval(struct tg_trace * tr, uint32_t graph_id, int node, uint32_t compute_seq);

// ---- contents -------------------------------------------------------------
int  tg_trace_n_contents(const struct tg_trace * tr);
bool tg_trace_get_contents(const struct tg_trace * tr, int i, struct tg_trace_contents * out);
// Contents of (graph_id, node, compute_seq) (UINT32_MAX: the last), -1 if none.
int  tg_trace_find_contents(struct tg_trace * tr, uint32_t graph_id, int node, uint32_t compute_seq);

// ---- sketches (format 1.2) -------------------------------------------------
int  tg_trace_n_sketches(const struct tg_trace * tr);
bool tg_trace_get_sketch(const struct tg_trace * tr, int i, struct tg_trace_sketch * out);
// Sketch of (graph_id, node, compute_seq) (UINT32_MAX: the last), -1 if none.
int  tg_trace_find_sketch(struct tg_trace * tr, uint32_t graph_id, int node, uint32_t compute_seq);
// Decodes contents i into dst (cap >= raw_size bytes), verifying the record
// checksum and the content hash. TG_OK, TG_ERR_INVALID_ARG (cap too small,
// bad i) or TG_ERR_FORMAT (corrupt data), last error set.
enum tg_status tg_trace_read_contents(const struct tg_trace * tr, int i, void * dst, size_t cap);
// Contents i decoded and converted to float, elements in logical order
// (*n_out of them): a malloc'd array the caller frees, or NULL + last error
// (corrupt data, a type with no float conversion, out of memory).
float * tg_trace_contents_f32(const struct tg_trace * tr, int i, int64_t * n_out);
// Bytes [off, off + n) of contents i decoded (elements in logical order, own
// type) into dst, with bounded memory whatever the tensor's size (zstd frames
// are streamed; raw ones copied). TG_OK, or TG_ERR_INVALID_ARG / TG_ERR_FORMAT.
enum tg_status tg_trace_read_contents_range(const struct tg_trace * tr, int i, uint64_t off, void * dst, size_t n);

// ---- host accesses, markers, events ---------------------------------------
int  tg_trace_n_hosts(const struct tg_trace * tr);
bool tg_trace_get_host(const struct tg_trace * tr, int i, struct tg_trace_host * out);
int  tg_trace_n_markers(const struct tg_trace * tr);
bool tg_trace_get_marker(const struct tg_trace * tr, int i, struct tg_trace_marker * out);
// Copies up to cap token ids of marker i into ids; returns how many it has.
int  tg_trace_marker_tokens(const struct tg_trace * tr, int i, int32_t * ids, int cap);
// Last DECODE/USER marker written before record ordinal `record`, -1 if none
// (e.g. to say "token 7" for an eval: pass the eval's record).
int  tg_trace_marker_before(const struct tg_trace * tr, uint32_t record);
int  tg_trace_n_events(const struct tg_trace * tr);
bool tg_trace_get_event(const struct tg_trace * tr, int i, struct tg_trace_event * out);

// ---- raw records (tools: `tgdb trace dump --records`, fuzzing) ------------
// Record `ordinal` of the file: type, payload pointer and length. False if
// out of range.
bool tg_trace_get_record(const struct tg_trace * tr, uint32_t ordinal, uint32_t * type,
                         const uint8_t ** payload, uint32_t * len, uint64_t * offset);

// ---- helpers for views ----------------------------------------------------
// Layer number parsed from a node name ("attn_norm-3" -> 3, "blk.3.x" -> 3), -1 if none.
int  tg_trace_layer_of_name(const char * name);
// Formats "[4096,32,1,1]" into buf; returns buf.
char * tg_trace_shape_str(const int64_t ne[4], char * buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif // TG_TRACE_READ_H
