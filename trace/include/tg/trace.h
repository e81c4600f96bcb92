// tg/trace.h - recording traces: the low-level record writer, content hashing
// and summaries, and the recorder (an engine observer writing everything a
// run does into a trace file).
//
// The file format is specified in trace/FORMAT.md; the reader is
// tg/trace-read.h; the analyses (stale reads, NaN origin) are tg/trace-check.h.
//
// ---- Tracing a program -----------------------------------------------------
//
// With no code change: link the program with tgtrace and run it with
//
//     TGDB_TRACE=run.tgt ./prog              record everything (hashes + summaries)
//     TGDB_TRACE_DUMP='attn_norm-3' ...      also store full contents of matching nodes
//     TGDB_TRACE_DUMP='op=MUL_MAT,*-3' ...   (comma-separated patterns, see below)
//     TGDB_TRACE_HASH=computed ...           hashes and summaries of computing nodes only (no views)
//     TGDB_TRACE_HASH=0 (or none) ...        times only (no hashes, no summaries)
//     TGDB_TRACE_HASH_THREAD=0|1|auto ...    hashing on the recorder's own thread (default auto:
//                                            when the engine's CPU threads leave a CPU free)
//
// The engine calls tg_observe_env_hook() when it creates its first scheduler;
// tgtrace defines it: it attaches a global recorder to every scheduler and
// closes the file at exit (atexit). A crash (SIGKILL, abort) leaves every
// complete record readable: records go into a shared mapping of the file as
// they are made (a node's EVAL as soon as the node ran; with the hashing
// thread, as soon as that thread sees the node), so they are in the kernel's
// page cache without a system call per record (trace/FORMAT.md).
//
// From code (e.g. `tgdb generate --trace FILE`):
//
//     struct tg_trace_options opt = tg_trace_default_options();
//     opt.contents = "op=MUL_MAT,result_output";   // NULL: no full contents
//     struct tg_trace_recorder * rec = tg_trace_attach(sched, "run.tgt", &opt);
//     if (!rec) fprintf(stderr, "%s\n", tg_last_error());
//     tg_trace_mark_decode(rec, n_tokens, pos, ids);     // optional markers
//     ... compute graphs with sched ...
//     tg_trace_detach(rec);                              // writes the index, closes
//
// Pass sched = NULL to record every scheduler of the process (global).
//
// Contents patterns: a comma-separated list; each item is either a node name
// glob (`*` any run of characters, `?` one character: "blk.3.*", "*-3",
// "attn_norm-?") or `op=NAME` (an op name, e.g. op=MUL_MAT, also globbed).
// A node's contents are stored when any item matches.
#ifndef TG_TRACE_H
#define TG_TRACE_H

#include "tg/core.h"
#include "tg/status.h"
#include "tg/trace-types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_TRACE_FORMAT_MAJOR 1
#define TG_TRACE_FORMAT_MINOR 5   // trace/FORMAT.md "Changes"

// ============================================================================
// Record writer: one call = one framed record, in the file when the call
// returns (in a shared map of it; with write(2) for pipes and devices).
// Thread-safe (an internal mutex orders records). Every tg_trace_write_*
// returns TG_OK or TG_ERR_IO / TG_ERR_NOMEM / TG_ERR_INVALID_ARG (last error
// set); after an I/O error the writer stays in error and writes nothing more.
// ============================================================================

struct tg_trace_writer;

// Creates a trace at `path` and writes the file header. A regular file is
// never truncated in place: a new file is created beside it, given the header
// and renamed over `path` at once (atomic replace: other runs and readers
// holding the old file keep it intact; a killed run leaves its trace at the
// name). FIFOs and devices are written in place. NULL + last error (TG_ERR_IO
// naming the path) on failure, with no file left behind. The caller owns the writer.
struct tg_trace_writer * tg_trace_writer_open(const char * path);
// Writes the INDEX and FOOTER records, closes the file and frees w. Returns
// the first error the writer met (the file is closed in any case). NULL: TG_OK.
enum tg_status tg_trace_writer_close(struct tg_trace_writer * w);
// Closes the file WITHOUT index and footer (as if the process had died) and
// frees w. For tests of the recovery path.
void tg_trace_writer_abandon(struct tg_trace_writer * w);
// Groups the records written until the matching batch_end into one write(2)
// when the file is written with write(2) (nestable; records over 1 MiB are
// written at once); no effect on a mapped file, where every record is in the
// file as soon as it is made. Use it for records made at the same moment (a
// graph's structure, placement and splits). batch_end returns the write's status.
void tg_trace_writer_batch_begin(struct tg_trace_writer * w);
enum tg_status tg_trace_writer_batch_end(struct tg_trace_writer * w);
// Records written so far (the next record's ordinal).
uint32_t tg_trace_writer_n_records(const struct tg_trace_writer * w);
// Bytes written so far.
uint64_t tg_trace_writer_size(const struct tg_trace_writer * w);
// Time spent so far growing a mapped file and faulting its new pages in
// (reserving space, writing zeros, populating the map), by whichever thread
// wrote the record that needed it; 0 for a file written with write(2).
uint64_t tg_trace_writer_grow_ns(const struct tg_trace_writer * w);

// RUN: metadata plus the engine's name tables: op_names[i] names op id i,
// type_names[i] type id i (NULL or "" for unused ids); no cause table.
enum tg_status tg_trace_write_run(struct tg_trace_writer * w, const struct tg_trace_run * run,
                                  const char * const * op_names, int n_ops,
                                  const char * const * type_names, int n_types);
// Same plus the placement cause names (cause_names[i] names cause i of tg/sched.h).
enum tg_status tg_trace_write_run_causes(struct tg_trace_writer * w, const struct tg_trace_run * run,
                                         const char * const * op_names, int n_ops,
                                         const char * const * type_names, int n_types,
                                         const char * const * cause_names, int n_causes);
enum tg_status tg_trace_write_sched(struct tg_trace_writer * w, const struct tg_trace_sched * s);
// GRAPH: tensors[n_nodes + n_leafs] (nodes first). g->structure_hash is
// computed by the writer when 0.
enum tg_status tg_trace_write_graph(struct tg_trace_writer * w, const struct tg_trace_graph * g,
                                    const struct tg_trace_tensor * tensors);
// PLACEMENT: p[n_tensors], entry i for tensor index i (text may be NULL).
enum tg_status tg_trace_write_placement(struct tg_trace_writer * w, uint32_t graph_id,
                                        const struct tg_trace_placement * p, int n_tensors);
// GRADS (1.3): n pairs {gradient tensor index, the tensor index it differentiates}.
enum tg_status tg_trace_write_grads(struct tg_trace_writer * w, uint32_t graph_id, const int32_t (*pairs)[2], int n);
enum tg_status tg_trace_write_splits(struct tg_trace_writer * w, uint32_t graph_id,
                                     const struct tg_trace_split * splits, int n_splits,
                                     const struct tg_trace_split_input * inputs, int n_inputs);
// ALLOC: buffers[n_buffers]; allocs[n_tensors], entry i for tensor index i.
enum tg_status tg_trace_write_alloc(struct tg_trace_writer * w, uint32_t graph_id, uint32_t sched_id,
                                    const struct tg_trace_buffer * buffers, int n_buffers,
                                    const struct tg_trace_alloc * allocs, int n_tensors);
// Deltas (format 1.1): the record of graph_id as the same record of
// base_graph_id (a full GRAPH / PLACEMENT / ALLOC record written earlier, for
// the same tensor count) with the entries at changed[0..n_changed) replaced
// by tensors[i] / p[i] / allocs[i] (changed: increasing tensor indices). The
// arrays are the new graph's complete ones; only the changed entries are
// written. Successive graphs of a decode loop differ in a few tensors (the
// KV views' lengths), so a delta is a small fraction of a full record.
enum tg_status tg_trace_write_graph_delta(struct tg_trace_writer * w, const struct tg_trace_graph * g,
                                          uint32_t base_graph_id, const struct tg_trace_tensor * tensors,
                                          const int32_t * changed, int n_changed);
enum tg_status tg_trace_write_placement_delta(struct tg_trace_writer * w, uint32_t graph_id, uint32_t base_graph_id,
                                              const struct tg_trace_placement * p, int n_tensors,
                                              const int32_t * changed, int n_changed);
// The buffers are written whole; they must be the base's, in the same order.
enum tg_status tg_trace_write_alloc_delta(struct tg_trace_writer * w, uint32_t graph_id, uint32_t sched_id,
                                          uint32_t base_graph_id, const struct tg_trace_buffer * buffers, int n_buffers,
                                          const struct tg_trace_alloc * allocs, int n_tensors,
                                          const int32_t * changed, int n_changed);
enum tg_status tg_trace_write_compute(struct tg_trace_writer * w, const struct tg_trace_compute * c);
enum tg_status tg_trace_write_eval(struct tg_trace_writer * w, const struct tg_trace_eval * e);
// CONTENTS: data = c->raw_size bytes, the elements in logical order in the
// tensor's own type. zstd_level > 0 compresses (codec ZSTD), 0 stores raw.
// c->hash is computed when 0.
enum tg_status tg_trace_write_contents(struct tg_trace_writer * w, const struct tg_trace_contents * c,
                                       const void * data, int zstd_level);
enum tg_status tg_trace_write_host(struct tg_trace_writer * w, const struct tg_trace_host * h);
// SKETCH (format 1.2): s->n must be TG_TRACE_SKETCH_N.
enum tg_status tg_trace_write_sketch(struct tg_trace_writer * w, const struct tg_trace_sketch * s);
// RESULT (format 1.4): the hash and summary of an EVAL written with
// TG_TRACE_EVAL_PENDING (same graph_id, compute_seq, node).
enum tg_status tg_trace_write_result(struct tg_trace_writer * w, const struct tg_trace_result * r);
// MARKER: ids[m->n_ids] token ids (may be NULL when n_ids == 0).
enum tg_status tg_trace_write_marker(struct tg_trace_writer * w, const struct tg_trace_marker * m,
                                     const int32_t * ids);
enum tg_status tg_trace_write_event(struct tg_trace_writer * w, const struct tg_trace_event * e);
// A record of any type with an opaque payload (extensions, tests).
enum tg_status tg_trace_write_raw(struct tg_trace_writer * w, uint16_t type,
                                  const void * payload, uint32_t len);

// ============================================================================
// Content hashes and numeric summaries
// ============================================================================

// xxh64 (seed 0) over the tensor's element bytes in LOGICAL order (ne0
// fastest, then ne1, ne2, ne3), in the tensor's own type (quantized types:
// whole blocks). A view and its contiguous copy hash the same. `data` is the
// host address of element 0; nb are byte strides. Returns 0 for bad input.
uint64_t tg_trace_hash_data(const void * data, int type, const int64_t ne[4], const size_t nb[4]);
// Same for a tensor with host data (t->data != NULL). 0 if it has none.
uint64_t tg_trace_hash_tensor(const struct tg_tensor * t);
// Numeric summary (see struct tg_trace_summary) of host data in logical order.
// Returns false (s zeroed) for unsupported types or bad input.
bool tg_trace_summarize_data(const void * data, int type, const int64_t ne[4], const size_t nb[4],
                             struct tg_trace_summary * s);
// Both at once in a single pass over the data (what the recorder uses): *hash
// (when hash != NULL) as tg_trace_hash_data, *s (when s != NULL) as
// tg_trace_summarize_data. False for bad input or a type without a summary.
bool tg_trace_hash_summarize(const void * data, int type, const int64_t ne[4], const size_t nb[4],
                             uint64_t * hash, struct tg_trace_summary * s);
// The same pass, also filling sketch[TG_TRACE_SKETCH_N] (when not NULL) with
// the count sketch of the finite values (trace/FORMAT.md "SKETCH"): the
// element of logical index i (row-major over ne[0..3], so a view and its
// contiguous copy agree) adds +-x to one bucket, both chosen by a fixed hash
// of i, the same in every run. Needs s (the sketch comes with the summary).
bool tg_trace_hash_summarize_sketch(const void * data, int type, const int64_t ne[4], const size_t nb[4],
                                    uint64_t * hash, struct tg_trace_summary * s, double * sketch);
// The element-set digest (trace/FORMAT.md 1.5, EVAL flag
// TG_TRACE_EVAL_SETDIGEST, SKETCH scheme 2) of a binary16 tensor: hash,
// summary and sketch as sums over the elements of a function of each
// element's coordinates and bits, in exact integer arithmetic (the recorder
// keeps them up to date for KV-cache views by the elements written since the
// last token instead of reading the whole view again). Any of hash, s, sketch
// may be NULL. False for another type or overlapping strides.
bool tg_trace_set_digest(const void * data, int type, const int64_t ne[4], const size_t nb[4], uint64_t * hash,
                         struct tg_trace_summary * s, double * sketch);
// Copies the elements in logical order into dst (capacity cap bytes).
// Returns the bytes needed (a larger value than cap means nothing copied).
size_t tg_trace_gather_data(const void * data, int type, const int64_t ne[4], const size_t nb[4],
                            void * dst, size_t cap);


// ============================================================================
// Recorder (engine observer)
// ============================================================================

struct tg_sched;
struct tg_trace_recorder;

struct tg_trace_options {
    bool         hashes;      // content hash of every evaluated node (default true)
    bool         summaries;   // numeric summary of every evaluated node (default true)
    const char * contents;    // pattern list of nodes whose full contents are stored (NULL: none)
    int          zstd_level;  // compression of contents (default 3; 0 = raw)
    bool         host_hashes; // hash the bytes of host reads/writes (default true)
    const char * note;        // free text stored in the RUN record (NULL: none)
    bool         views;       // hash and summarize view nodes too (default true); false: computed
                              // nodes only (a view's bytes are its source's; at long contexts the
                              // KV-cache views are most of the hashing)
    bool         sketches;    // with each summary, a SKETCH record (64 f32: estimates the distance
                              // between two runs' values without contents; default true)
    int          view_digest; // views of binary16 memory outside compute buffers (KV-cache views):
                              // 0 (default) the element-set digest, kept up to date from the elements
                              // written since (its cost is what a token writes, not the context);
                              // 1 the same digest recomputed from every element each time (a check of
                              // the first); 2 hashed and summarized like other nodes (XXH3 of the
                              // bytes in logical order: costs the whole view every token).
                              // TGDB_TRACE_VIEWS=set|recompute|bytes
    int          hash_thread; // hash (and write the node records) on a thread of the recorder's own
                              // while the engine computes the next nodes (an output the next node
                              // overwrites in place is hashed in the callback, and so is the last
                              // node); a node about to overwrite other bytes not yet hashed copies
                              // them aside first (or waits): -1 auto
                              // (default: when the scheduler's CPU threads leave a CPU of the process
                              // free), 0 never, 1 always; 2 as 1 but the thread works only when the
                              // recorder waits for it (every overwritten node is set aside: a test of
                              // that path, slow). The same hashes, summaries and sketches in every
                              // mode (with the thread, each node's EVAL is written when the thread
                              // sees the node and its hash follows in a RESULT record, which readers
                              // merge: a crash may lose the last nodes' records, where mode 0 writes
                              // every node before the next one runs), but for bytes a program
                              // changes itself between a node and the nodes after it (an eval
                              // callback writing a node's memory): the thread may hash them after
                              // the change. TGDB_TRACE_HASH_THREAD=auto|0|1|2 decides where this
                              // is -1.
};

// Sets hashes/summaries/views from a mode name: "all" (every node, the
// default), "computed" (nodes that compute; views skipped) or "none" (times
// only). False (options unchanged) for another name.
bool tg_trace_set_hash_mode(struct tg_trace_options * o, const char * mode);

// Defaults: hashes, summaries, sketches and host hashes on, no contents, zstd level 3.
struct tg_trace_options tg_trace_default_options(void);

// Creates `path` and attaches a recorder to `sched`, or to every scheduler
// and all host tensor access when sched is NULL (global). opt NULL: defaults
// (the strings are copied). Returns NULL + last error (TG_ERR_IO: cannot
// create the file; TG_ERR_NOMEM: too many observers). The caller owns the
// recorder: tg_trace_detach() it before freeing the scheduler.
struct tg_trace_recorder * tg_trace_attach(struct tg_sched * sched, const char * path,
                                           const struct tg_trace_options * opt);
// Detaches, writes the index and footer, closes the file and frees rec.
// Returns the first write error met while recording (TG_OK if none). NULL: TG_OK.
enum tg_status tg_trace_detach(struct tg_trace_recorder * rec);
// The recorder attached by TGDB_TRACE (tg_observe_env_hook), or NULL.
struct tg_trace_recorder * tg_trace_env_recorder(void);
// Writes a DECODE marker (before computing a batch): n_tokens tokens from
// position pos of sequence seq_id; ids may be NULL. Engine markers
// (tg_observe_marker(sched, "decode", "n_tokens=%d pos=%d", ...)) are
// recorded too; this call adds the token ids.
enum tg_status tg_trace_mark_decode(struct tg_trace_recorder * rec, int n_tokens, int pos, int seq_id,
                                    const int32_t * ids);
// Writes a USER marker with free text.
enum tg_status tg_trace_mark(struct tg_trace_recorder * rec, const char * text);
// The recorder's writer (to add custom records), or NULL.
struct tg_trace_writer * tg_trace_recorder_writer(struct tg_trace_recorder * rec);

// What recording has cost so far: time spent in the recorder's callbacks on
// the engine's threads (from the event's time stamp to the callback's
// return: hashing, summaries, sketches, record writing, graph records), the
// part of it in node events, and how many callbacks ran. The wall time a
// trace adds to a computation is about hook_ns (the engine waits for its
// observers), a steadier figure than timing the run twice on a busy machine.
struct tg_trace_recorder_stats {
    uint64_t hook_ns;    // all callbacks
    uint64_t node_ns;    // node begin/end callbacks (the per-node hashing and EVAL records)
    uint64_t n_hooks;
    uint64_t view_ns;    // hashing and summarizing view nodes, in callbacks or on the hashing
                         // thread (the KV-cache views grow with the context;
                         // TGDB_TRACE_HASH=computed skips views)
    uint64_t thread_ns;  // hashing done on the recorder's hashing thread (beside the computation,
                         // not in hook_ns; 0 without one)
    uint64_t wait_ns;    // of hook_ns: callbacks waiting for that thread (a node about to
                         // overwrite bytes it is hashing, a full queue, the end of a computation)
    uint64_t n_set_aside;   // nodes copied aside before a node overwrote them (the thread had
                            // not reached them)
    uint64_t n_views_memo;      // KV-cache view digests brought up to date from the elements written
    uint64_t n_views_scratch;   // and those computed from every element (first seen, or after a
                                // write the memo could not follow: a host write, a buffer clear)
    uint64_t grow_ns;    // growing the trace file and faulting its pages in (in hook_ns, or on the
                         // hashing thread: tg_trace_writer_grow_ns)
    uint64_t bytes;      // the trace file's size so far
};
void tg_trace_recorder_get_stats(struct tg_trace_recorder * rec, struct tg_trace_recorder_stats * out);

// Debug poison mode for the whole process (also TGDB_POISON=1 in the
// environment of any program linked with tgtrace): every scheduler created
// afterwards gets tg_sched_set_poison(on) (ranges the allocator frees are
// filled with 0xFF bytes, a NaN in every float type, right after the node
// that last used them), and whenever a scheduler allocates a graph its
// compute buffers are filled with 0xFF before the new tensors are used, so a
// read of an earlier graph's tensor returns NaN instead of plausible numbers.
// Schedulers that exist already: call tg_sched_set_poison() on them.
// Returns TG_ERR_NOMEM when no observer slot is free.
enum tg_status tg_trace_set_poison(bool on);

#ifdef __cplusplus
}
#endif
#endif // TG_TRACE_H
