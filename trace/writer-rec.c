// writer-rec.c - the trace writer's record encoding: each tg_trace_write_*
// lays out one record's payload (trace/FORMAT.md) between tg_trace_rec_begin
// and tg_trace_rec_commit (writer-file.c).
#include "tg/trace.h"
#include "trace-impl.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

const char * tg_trace_rec_name(uint32_t type) {
    switch (type) {
    case TG_TRACE_REC_RUN:       return "RUN";
    case TG_TRACE_REC_SCHED:     return "SCHED";
    case TG_TRACE_REC_GRAPH:     return "GRAPH";
    case TG_TRACE_REC_PLACEMENT: return "PLACEMENT";
    case TG_TRACE_REC_SPLITS:    return "SPLITS";
    case TG_TRACE_REC_ALLOC:     return "ALLOC";
    case TG_TRACE_REC_COMPUTE:   return "COMPUTE";
    case TG_TRACE_REC_EVAL:      return "EVAL";
    case TG_TRACE_REC_CONTENTS:  return "CONTENTS";
    case TG_TRACE_REC_HOST:      return "HOST";
    case TG_TRACE_REC_MARKER:    return "MARKER";
    case TG_TRACE_REC_EVENT:     return "EVENT";
    case TG_TRACE_REC_GRAPH_DELTA:     return "GRAPH_DELTA";
    case TG_TRACE_REC_PLACEMENT_DELTA: return "PLACEMENT_DELTA";
    case TG_TRACE_REC_ALLOC_DELTA:     return "ALLOC_DELTA";
    case TG_TRACE_REC_INDEX:     return "INDEX";
    case TG_TRACE_REC_FOOTER:    return "FOOTER";
    default:                     return "UNKNOWN";
    }
}

const char * tg_trace_event_kind_name(uint32_t kind) {
    static const char * const names[TG_TRACE_EV_COUNT] = {
        "log", "unallocated-use", "graph-allocated", "buffer-realloc", "range-handed", "poison", "error",
    };
    return kind < TG_TRACE_EV_COUNT ? names[kind] : "unknown";
}

// Length-prefixed string (u32 length including the NUL, then bytes).
static size_t str_size(const char * s) { return 4 + (s ? strlen(s) + 1 : 1); }
static uint8_t * put_str(uint8_t * p, const char * s) {
    size_t n = (s ? strlen(s) : 0) + 1;
    wr_u32(p, (uint32_t) n);
    if (n > 1) memcpy(p + 4, s, n - 1);
    p[4 + n - 1] = 0;
    return p + 4 + n;
}
// ---- records --------------------------------------------------------------

enum tg_status tg_trace_write_raw(struct tg_trace_writer * w, uint16_t type, const void * payload, uint32_t len) {
    uint8_t * p = tg_trace_rec_begin(w, type, len);
    if (!p) return tg_last_status();
    if (len) memcpy(p, payload, len);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_run(struct tg_trace_writer * w, const struct tg_trace_run * run,
                                  const char * const * op_names, int n_ops,
                                  const char * const * type_names, int n_types) {
    return tg_trace_write_run_causes(w, run, op_names, n_ops, type_names, n_types, NULL, 0);
}

enum tg_status tg_trace_write_run_causes(struct tg_trace_writer * w, const struct tg_trace_run * r,
                                  const char * const * op_names, int n_ops,
                                  const char * const * type_names, int n_types,
                                  const char * const * cause_names, int n_causes) {
    if (!r || n_ops < 0 || n_types < 0 || n_causes < 0) return tg_error(TG_ERR_INVALID_ARG, "trace: bad RUN arguments");
    size_t len = 24 + str_size(r->engine_version) + str_size(r->cmdline) + str_size(r->backends)
               + str_size(r->note) + 12;
    for (int i = 0; i < n_ops; i++) len += str_size(op_names ? op_names[i] : NULL);
    for (int i = 0; i < n_types; i++) len += str_size(type_names ? type_names[i] : NULL);
    for (int i = 0; i < n_causes; i++) len += str_size(cause_names ? cause_names[i] : NULL);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_RUN, len);
    if (!p) return tg_last_status();
    wr_u64(p, r->time_unix_ns);
    wr_u64(p + 8, r->mono_start_ns);
    wr_u32(p + 16, r->pid);
    wr_i32(p + 20, r->n_threads);
    uint8_t * q = p + 24;
    q = put_str(q, r->engine_version);
    q = put_str(q, r->cmdline);
    q = put_str(q, r->backends);
    q = put_str(q, r->note);
    wr_u32(q, (uint32_t) n_ops); q += 4;
    for (int i = 0; i < n_ops; i++) q = put_str(q, op_names ? op_names[i] : NULL);
    wr_u32(q, (uint32_t) n_types); q += 4;
    for (int i = 0; i < n_types; i++) q = put_str(q, type_names ? type_names[i] : NULL);
    wr_u32(q, (uint32_t) n_causes); q += 4;
    for (int i = 0; i < n_causes; i++) q = put_str(q, cause_names ? cause_names[i] : NULL);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_sched(struct tg_trace_writer * w, const struct tg_trace_sched * s) {
    if (!s || s->n_backends < 0 || s->n_backends > TG_TRACE_MAX_BACKENDS)
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad SCHED record");
    size_t len = 8;
    for (int i = 0; i < s->n_backends; i++) len += str_size(s->backend[i]) + str_size(s->buft[i]);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_SCHED, len);
    if (!p) return tg_last_status();
    wr_u32(p, s->sched_id);
    wr_u32(p + 4, (uint32_t) s->n_backends);
    uint8_t * q = p + 8;
    for (int i = 0; i < s->n_backends; i++) {
        q = put_str(q, s->backend[i]);
        q = put_str(q, s->buft[i]);
    }
    return tg_trace_rec_commit(w);
}

// Checks a delta's change list: increasing indices below n.
static bool changes_ok(const int32_t * changed, int n_changed, int n) {
    if (n_changed < 0 || (n_changed > 0 && !changed)) return false;
    for (int k = 0; k < n_changed; k++)
        if (changed[k] < 0 || changed[k] >= n || (k > 0 && changed[k] <= changed[k - 1])) return false;
    return true;
}

static void put_tensor(uint8_t * e, const struct tg_trace_tensor * t) {
    wr_name(e, t->name, TG_TRACE_NAME);
    wr_u64(e + 64, t->uid);
    for (int d = 0; d < 4; d++) {
        wr_i64(e + 72 + 8 * d, t->ne[d]);
        wr_u64(e + 104 + 8 * d, t->nb[d]);
    }
    for (int k = 0; k < TG_TRACE_MAX_OP_PARAMS; k++) wr_i32(e + 136 + 4 * k, t->op_params[k]);
    wr_i32(e + 200, t->op);
    wr_i32(e + 204, t->type);
    wr_i32(e + 208, t->flags);
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++) wr_i32(e + 212 + 4 * k, t->src[k]);
    wr_i32(e + 236, t->view_src);
    wr_u64(e + 240, t->view_offs);
}

enum tg_status tg_trace_write_graph(struct tg_trace_writer * w, const struct tg_trace_graph * g,
                                    const struct tg_trace_tensor * tensors) {
    if (!g || g->n_nodes < 0 || g->n_leafs < 0 || (g->n_nodes + g->n_leafs > 0 && !tensors))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad GRAPH record");
    size_t n = (size_t) g->n_nodes + (size_t) g->n_leafs;
    if (n > (TRACE_MAX_PAYLOAD - TRACE_GRAPH_HEAD) / TRACE_TENSOR_ENTRY)
        return tg_error(TG_ERR_INVALID_ARG, "trace: graph of %zu tensors is too large", n);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_GRAPH, TRACE_GRAPH_HEAD + n * TRACE_TENSOR_ENTRY);
    if (!p) return tg_last_status();
    for (size_t i = 0; i < n; i++) put_tensor(p + TRACE_GRAPH_HEAD + i * TRACE_TENSOR_ENTRY, &tensors[i]);
    uint64_t h = g->structure_hash;
    if (h == 0) {
        // the hash ignores uids, so the same topology built twice hashes the same
        XXH64_state_t * s = XXH64_createState();
        if (s) {
            XXH64_reset(s, 0);
            for (size_t i = 0; i < n; i++) {
                const uint8_t * e = p + TRACE_GRAPH_HEAD + i * TRACE_TENSOR_ENTRY;
                XXH64_update(s, e, 64);
                XXH64_update(s, e + 72, TRACE_TENSOR_ENTRY - 72);
            }
            h = XXH64_digest(s);
            XXH64_freeState(s);
        }
    }
    wr_u32(p, g->graph_id);
    wr_u32(p + 4, g->sched_id);
    wr_i32(p + 8, g->n_nodes);
    wr_i32(p + 12, g->n_leafs);
    wr_u32(p + 16, TRACE_TENSOR_ENTRY);
    wr_u32(p + 20, 0);
    wr_u64(p + 24, h);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_graph_delta(struct tg_trace_writer * w, const struct tg_trace_graph * g,
                                          uint32_t base_graph_id, const struct tg_trace_tensor * tensors,
                                          const int32_t * changed, int n_changed) {
    if (!g || g->n_nodes < 0 || g->n_leafs < 0 || base_graph_id == 0 || (n_changed > 0 && !tensors) ||
        !changes_ok(changed, n_changed, g->n_nodes + g->n_leafs))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad GRAPH_DELTA record");
    const size_t esz = 4 + TRACE_TENSOR_ENTRY;
    if ((size_t) n_changed > (TRACE_MAX_PAYLOAD - TRACE_GDELTA_HEAD) / esz)
        return tg_error(TG_ERR_INVALID_ARG, "trace: graph delta of %d tensors is too large", n_changed);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_GRAPH_DELTA, TRACE_GDELTA_HEAD + (size_t) n_changed * esz);
    if (!p) return tg_last_status();
    wr_u32(p, g->graph_id);
    wr_u32(p + 4, g->sched_id);
    wr_i32(p + 8, g->n_nodes);
    wr_i32(p + 12, g->n_leafs);
    wr_u32(p + 16, TRACE_TENSOR_ENTRY);
    wr_u32(p + 20, base_graph_id);
    wr_u64(p + 24, 0);   // structure hash: not computed for deltas
    wr_u32(p + 32, (uint32_t) n_changed);
    for (int k = 0; k < n_changed; k++) {
        uint8_t * e = p + TRACE_GDELTA_HEAD + (size_t) k * esz;
        wr_u32(e, (uint32_t) changed[k]);
        put_tensor(e + 4, &tensors[changed[k]]);
    }
    return tg_trace_rec_commit(w);
}

// A placement entry; its text goes to blob + at. Returns the new `at`.
static size_t put_place(uint8_t * e, const struct tg_trace_placement * x, uint8_t * blob, size_t at) {
    wr_i32(e, x->backend);
    wr_u32(e + 4, x->cause);
    size_t l = x->text && x->text[0] ? strlen(x->text) + 1 : 0;
    wr_u32(e + 8, (uint32_t) at);
    wr_u32(e + 12, (uint32_t) l);
    if (l) { memcpy(blob + at, x->text, l); at += l; }
    return at;
}

enum tg_status tg_trace_write_placement(struct tg_trace_writer * w, uint32_t graph_id,
                                        const struct tg_trace_placement * pl, int n) {
    if (n < 0 || (n > 0 && !pl)) return tg_error(TG_ERR_INVALID_ARG, "trace: bad PLACEMENT record");
    size_t text = 0;
    for (int i = 0; i < n; i++) text += pl[i].text && pl[i].text[0] ? strlen(pl[i].text) + 1 : 0;
    size_t len = TRACE_PLACE_HEAD + (size_t) n * TRACE_PLACE_ENTRY + text;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_PLACEMENT, len);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, (uint32_t) n);
    wr_u32(p + 8, TRACE_PLACE_ENTRY);
    wr_u32(p + 12, (uint32_t) text);
    uint8_t * blob = p + TRACE_PLACE_HEAD + (size_t) n * TRACE_PLACE_ENTRY;
    size_t at = 0;
    for (int i = 0; i < n; i++) at = put_place(p + TRACE_PLACE_HEAD + (size_t) i * TRACE_PLACE_ENTRY, &pl[i], blob, at);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_placement_delta(struct tg_trace_writer * w, uint32_t graph_id, uint32_t base_graph_id,
                                              const struct tg_trace_placement * pl, int n,
                                              const int32_t * changed, int n_changed) {
    if (n < 0 || (n > 0 && !pl) || !changes_ok(changed, n_changed, n) || base_graph_id == 0)
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad PLACEMENT_DELTA record");
    size_t text = 0;
    for (int k = 0; k < n_changed; k++) {
        const struct tg_trace_placement * x = &pl[changed[k]];
        text += x->text && x->text[0] ? strlen(x->text) + 1 : 0;
    }
    const size_t esz = 4 + TRACE_PLACE_ENTRY;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_PLACEMENT_DELTA, TRACE_PDELTA_HEAD + (size_t) n_changed * esz + text);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, base_graph_id);
    wr_u32(p + 8, (uint32_t) n);
    wr_u32(p + 12, TRACE_PLACE_ENTRY);
    wr_u32(p + 16, (uint32_t) text);
    wr_u32(p + 20, (uint32_t) n_changed);
    uint8_t * blob = p + TRACE_PDELTA_HEAD + (size_t) n_changed * esz;
    size_t at = 0;
    for (int k = 0; k < n_changed; k++) {
        uint8_t * e = p + TRACE_PDELTA_HEAD + (size_t) k * esz;
        wr_u32(e, (uint32_t) changed[k]);
        at = put_place(e + 4, &pl[changed[k]], blob, at);
    }
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_splits(struct tg_trace_writer * w, uint32_t graph_id,
                                     const struct tg_trace_split * sp, int n_splits,
                                     const struct tg_trace_split_input * in, int n_inputs) {
    if (n_splits < 0 || n_inputs < 0 || (n_splits && !sp) || (n_inputs && !in))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad SPLITS record");
    size_t len = TRACE_SPLITS_HEAD + (size_t) n_splits * TRACE_SPLIT_ENTRY + (size_t) n_inputs * TRACE_INPUT_ENTRY;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_SPLITS, len);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, (uint32_t) n_splits);
    wr_u32(p + 8, (uint32_t) n_inputs);
    wr_u32(p + 12, TRACE_SPLIT_ENTRY);
    wr_u32(p + 16, TRACE_INPUT_ENTRY);
    for (int i = 0; i < n_splits; i++) {
        uint8_t * e = p + TRACE_SPLITS_HEAD + (size_t) i * TRACE_SPLIT_ENTRY;
        wr_i32(e, sp[i].backend);
        wr_i32(e + 4, sp[i].node_begin);
        wr_i32(e + 8, sp[i].node_end);
        wr_u32(e + 12, sp[i].first_input);
        wr_u32(e + 16, sp[i].n_inputs);
    }
    uint8_t * ib = p + TRACE_SPLITS_HEAD + (size_t) n_splits * TRACE_SPLIT_ENTRY;
    for (int i = 0; i < n_inputs; i++) {
        uint8_t * e = ib + (size_t) i * TRACE_INPUT_ENTRY;
        wr_i32(e, in[i].tensor);
        wr_i32(e + 4, in[i].from_backend);
        wr_u64(e + 8, in[i].bytes);
        wr_name(e + 16, in[i].copy_name, TG_TRACE_NAME);
    }
    return tg_trace_rec_commit(w);
}

static void put_buffer(uint8_t * e, const struct tg_trace_buffer * b) {
    wr_u64(e, b->uid);
    wr_i32(e + 8, b->backend);
    wr_i32(e + 12, b->usage);
    wr_u64(e + 16, b->size);
    wr_name(e + 24, b->buft, TG_TRACE_BUFT_NAME);
}

static void put_alloc(uint8_t * e, const struct tg_trace_alloc * a) {
    wr_i32(e, a->buffer);
    wr_i32(e + 4, a->inplace_parent);
    wr_u64(e + 8, a->offset);
    wr_u64(e + 16, a->size);
    wr_i32(e + 24, a->first_step);
    wr_i32(e + 28, a->last_step);
    wr_u32(e + 32, a->flags);
}

enum tg_status tg_trace_write_alloc(struct tg_trace_writer * w, uint32_t graph_id, uint32_t sched_id,
                                    const struct tg_trace_buffer * bufs, int n_buffers,
                                    const struct tg_trace_alloc * al, int n) {
    if (n_buffers < 0 || n < 0 || (n_buffers && !bufs) || (n && !al))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad ALLOC record");
    size_t len = TRACE_ALLOC_HEAD + (size_t) n_buffers * TRACE_BUFFER_ENTRY + (size_t) n * TRACE_ALLOC_ENTRY;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_ALLOC, len);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, sched_id);
    wr_u32(p + 8, (uint32_t) n_buffers);
    wr_u32(p + 12, (uint32_t) n);
    wr_u32(p + 16, TRACE_BUFFER_ENTRY);
    wr_u32(p + 20, TRACE_ALLOC_ENTRY);
    for (int i = 0; i < n_buffers; i++) put_buffer(p + TRACE_ALLOC_HEAD + (size_t) i * TRACE_BUFFER_ENTRY, &bufs[i]);
    uint8_t * ab = p + TRACE_ALLOC_HEAD + (size_t) n_buffers * TRACE_BUFFER_ENTRY;
    for (int i = 0; i < n; i++) put_alloc(ab + (size_t) i * TRACE_ALLOC_ENTRY, &al[i]);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_alloc_delta(struct tg_trace_writer * w, uint32_t graph_id, uint32_t sched_id,
                                          uint32_t base_graph_id, const struct tg_trace_buffer * bufs, int n_buffers,
                                          const struct tg_trace_alloc * al, int n,
                                          const int32_t * changed, int n_changed) {
    if (n_buffers < 0 || n < 0 || (n_buffers && !bufs) || (n && !al) || base_graph_id == 0 ||
        !changes_ok(changed, n_changed, n))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad ALLOC_DELTA record");
    const size_t esz = 4 + TRACE_ALLOC_ENTRY;
    size_t len = TRACE_ADELTA_HEAD + (size_t) n_buffers * TRACE_BUFFER_ENTRY + (size_t) n_changed * esz;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_ALLOC_DELTA, len);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, sched_id);
    wr_u32(p + 8, base_graph_id);
    wr_u32(p + 12, (uint32_t) n_buffers);
    wr_u32(p + 16, (uint32_t) n);
    wr_u32(p + 20, TRACE_BUFFER_ENTRY);
    wr_u32(p + 24, TRACE_ALLOC_ENTRY);
    wr_u32(p + 28, (uint32_t) n_changed);
    for (int i = 0; i < n_buffers; i++) put_buffer(p + TRACE_ADELTA_HEAD + (size_t) i * TRACE_BUFFER_ENTRY, &bufs[i]);
    uint8_t * ab = p + TRACE_ADELTA_HEAD + (size_t) n_buffers * TRACE_BUFFER_ENTRY;
    for (int k = 0; k < n_changed; k++) {
        uint8_t * e = ab + (size_t) k * esz;
        wr_u32(e, (uint32_t) changed[k]);
        put_alloc(e + 4, &al[changed[k]]);
    }
    return tg_trace_rec_commit(w);
}


enum tg_status tg_trace_write_compute(struct tg_trace_writer * w, const struct tg_trace_compute * c) {
    if (!c) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL COMPUTE");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_COMPUTE, TRACE_COMPUTE_SIZE);
    if (!p) return tg_last_status();
    wr_u32(p, c->graph_id);
    wr_u32(p + 4, c->compute_seq);
    wr_u32(p + 8, c->phase);
    wr_i32(p + 12, c->status);
    wr_u64(p + 16, c->time_ns);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_eval(struct tg_trace_writer * w, const struct tg_trace_eval * e) {
    if (!e) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL EVAL");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_EVAL, TRACE_EVAL_SIZE);
    if (!p) return tg_last_status();
    wr_u32(p, e->graph_id);
    wr_u32(p + 4, e->compute_seq);
    wr_i32(p + 8, e->node);
    wr_u32(p + 12, e->flags);
    wr_u64(p + 16, e->t_begin_ns);
    wr_u64(p + 24, e->t_end_ns);
    wr_u64(p + 32, e->hash);
    wr_u64(p + 40, e->uid);
    wr_u64(p + 48, e->root_uid);
    wr_u64(p + 56, e->buffer_uid);
    wr_u64(p + 64, e->offset);
    wr_u64(p + 72, e->nbytes);
    wr_i32(p + 80, e->backend);
    wr_i32(p + 84, e->split);
    wr_f64(p + 88, e->sum.min);
    wr_f64(p + 96, e->sum.max);
    wr_f64(p + 104, e->sum.mean);
    wr_f64(p + 112, e->sum.rms);
    wr_u64(p + 120, e->sum.n_nan);
    wr_u64(p + 128, e->sum.n_inf);
    wr_u64(p + 136, e->sum.n_zero);
    wr_u64(p + 144, e->sum.n_elem);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_contents(struct tg_trace_writer * w, const struct tg_trace_contents * c,
                                       const void * data, int zstd_level) {
    if (!c || (c->raw_size && !data)) return tg_error(TG_ERR_INVALID_ARG, "trace: bad CONTENTS record");
    if (c->raw_size > TRACE_MAX_PAYLOAD - TRACE_CONTENTS_HEAD)
        return tg_error(TG_ERR_INVALID_ARG, "trace: contents of %llu bytes are too large",
                        (unsigned long long) c->raw_size);
    void * z = NULL;
    size_t zn = 0;
    uint32_t codec = TG_TRACE_CODEC_RAW;
    if (zstd_level > 0 && c->raw_size > 0) {
        size_t bound = ZSTD_compressBound((size_t) c->raw_size);
        z = malloc(bound);
        if (!z) return tg_error(TG_ERR_NOMEM, "trace: no memory to compress %llu bytes",
                                (unsigned long long) c->raw_size);
        zn = ZSTD_compress(z, bound, data, (size_t) c->raw_size, zstd_level);
        if (ZSTD_isError(zn) || zn >= c->raw_size) { free(z); z = NULL; }  // store raw instead
        else codec = TG_TRACE_CODEC_ZSTD;
    }
    size_t stored = z ? zn : (size_t) c->raw_size;
    uint64_t hash = c->hash ? c->hash : XXH3_64bits(data, (size_t) c->raw_size);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_CONTENTS, TRACE_CONTENTS_HEAD + stored);
    if (!p) { free(z); return tg_last_status(); }
    wr_u32(p, c->graph_id);
    wr_u32(p + 4, c->compute_seq);
    wr_i32(p + 8, c->node);
    wr_i32(p + 12, c->type);
    wr_u32(p + 16, codec);
    for (int d = 0; d < 4; d++) wr_i64(p + 24 + 8 * d, c->ne[d]);
    wr_u64(p + 56, c->raw_size);
    wr_u64(p + 64, hash);
    if (stored) memcpy(p + TRACE_CONTENTS_HEAD, z ? z : data, stored);
    free(z);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_host(struct tg_trace_writer * w, const struct tg_trace_host * h) {
    if (!h) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL HOST");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_HOST, TRACE_HOST_SIZE);
    if (!p) return tg_last_status();
    wr_u32(p, h->kind);
    wr_u32(p + 4, h->compute_seq);
    wr_u64(p + 8, h->time_ns);
    wr_u64(p + 16, h->uid);
    wr_u64(p + 24, h->root_uid);
    wr_u64(p + 32, h->buffer_uid);
    wr_u64(p + 40, h->offset);
    wr_u64(p + 48, h->size);
    wr_u64(p + 56, h->hash);
    wr_i32(p + 64, h->graph_id);
    wr_i32(p + 68, h->tensor);
    wr_name(p + 72, h->name, TG_TRACE_NAME);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_marker(struct tg_trace_writer * w, const struct tg_trace_marker * m,
                                     const int32_t * ids) {
    if (!m || (m->n_ids && !ids) || m->n_ids > (1u << 24))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad MARKER record");
    size_t len = TRACE_MARKER_HEAD + str_size(m->text) + (size_t) m->n_ids * 4;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_MARKER, len);
    if (!p) return tg_last_status();
    wr_u32(p, m->kind);
    wr_u32(p + 4, m->compute_seq);
    wr_u64(p + 8, m->time_ns);
    wr_i32(p + 16, m->n_tokens);
    wr_i32(p + 20, m->pos);
    wr_i32(p + 24, m->seq_id);
    wr_u32(p + 28, m->n_ids);
    uint8_t * q = put_str(p + TRACE_MARKER_HEAD, m->text);
    for (uint32_t i = 0; i < m->n_ids; i++) wr_i32(q + 4 * i, ids[i]);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_event(struct tg_trace_writer * w, const struct tg_trace_event * e) {
    if (!e) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL EVENT");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_EVENT, TRACE_EVENT_HEAD + str_size(e->message));
    if (!p) return tg_last_status();
    wr_u32(p, e->kind);
    wr_u32(p + 4, e->severity);
    wr_u64(p + 8, e->time_ns);
    wr_i32(p + 16, e->graph_id);
    wr_i32(p + 20, e->tensor);
    wr_u64(p + 24, e->uid);
    wr_u64(p + 32, e->buffer_uid);
    wr_u64(p + 40, e->offset);
    wr_u64(p + 48, e->size);
    wr_i32(p + 56, e->step);
    wr_name(p + 64, e->name, TG_TRACE_NAME);
    put_str(p + TRACE_EVENT_HEAD, e->message);
    return tg_trace_rec_commit(w);
}
