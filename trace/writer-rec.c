// writer-rec.c - the trace writer's record encoding: each tg_trace_write_*
// sizes one record's payload (trace/FORMAT.md) and fills it between
// tg_trace_rec_begin and tg_trace_rec_commit (writer-file.c) with the
// encoders records.h generates from the field lists.
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
    case TG_TRACE_REC_SKETCH:    return "SKETCH";
    case TG_TRACE_REC_RESULT:    return "RESULT";
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
    const char * const * tabs[3] = { op_names, type_names, cause_names };
    const int counts[3] = { n_ops, n_types, n_causes };
    size_t len = TRACE_SIZE(run) + trace_tail_size_run(r);
    for (int t = 0; t < 3; t++) {   // name tables: u32 n, then n `str`s
        len += 4;
        for (int i = 0; i < counts[t]; i++) len += trace_str_size(tabs[t] ? tabs[t][i] : NULL);
    }
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_RUN, len);
    if (!p) return tg_last_status();
    uint8_t * q = trace_put_tail_run(trace_put_run(p, r), r);
    for (int t = 0; t < 3; t++) {
        wr_u32(q, (uint32_t) counts[t]);
        q += 4;
        for (int i = 0; i < counts[t]; i++) q = trace_put_str(q, tabs[t] ? tabs[t][i] : NULL);
    }
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_sched(struct tg_trace_writer * w, const struct tg_trace_sched * s) {
    if (!s || s->n_backends < 0 || s->n_backends > TG_TRACE_MAX_BACKENDS)
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad SCHED record");
    size_t len = TRACE_SIZE(sched_head);
    for (int i = 0; i < s->n_backends; i++) len += trace_str_size(s->backend[i]) + trace_str_size(s->buft[i]);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_SCHED, len);
    if (!p) return tg_last_status();
    uint8_t * q = trace_put_sched_head(p, &(struct trace_sched_head) { .sched_id = s->sched_id,
                                                                     .n_backends = (uint32_t) s->n_backends });
    for (int i = 0; i < s->n_backends; i++) {
        q = trace_put_str(q, s->backend[i]);
        q = trace_put_str(q, s->buft[i]);
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

enum tg_status tg_trace_write_graph(struct tg_trace_writer * w, const struct tg_trace_graph * g,
                                    const struct tg_trace_tensor * tensors) {
    if (!g || g->n_nodes < 0 || g->n_leafs < 0 || (g->n_nodes + g->n_leafs > 0 && !tensors))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad GRAPH record");
    size_t n = (size_t) g->n_nodes + (size_t) g->n_leafs;
    if (n > (TRACE_MAX_PAYLOAD - TRACE_SIZE(graph_head)) / TRACE_SIZE(tensor))
        return tg_error(TG_ERR_INVALID_ARG, "trace: graph of %zu tensors is too large", n);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_GRAPH, TRACE_SIZE(graph_head) + n * TRACE_SIZE(tensor));
    if (!p) return tg_last_status();
    uint8_t * e = p + TRACE_SIZE(graph_head);
    for (size_t i = 0; i < n; i++) e = trace_put_tensor(e, &tensors[i]);
    uint64_t h = g->structure_hash;
    if (h == 0) {
        // the hash ignores uids, so the same topology built twice hashes the same
        XXH64_state_t * s = XXH64_createState();
        if (s) {
            XXH64_reset(s, 0);
            const size_t uid_at = TRACE_AT(tensor, uid), uid_end = uid_at + TRACE_WIDTH(tensor, uid);
            for (size_t i = 0; i < n; i++) {
                const uint8_t * t = p + TRACE_SIZE(graph_head) + i * TRACE_SIZE(tensor);
                XXH64_update(s, t, uid_at);
                XXH64_update(s, t + uid_end, TRACE_SIZE(tensor) - uid_end);
            }
            h = XXH64_digest(s);
            XXH64_freeState(s);
        }
    }
    trace_put_graph_head(p, &(struct trace_graph_head) {
        .graph_id = g->graph_id, .sched_id = g->sched_id, .n_nodes = g->n_nodes, .n_leafs = g->n_leafs,
        .entry_size = TRACE_SIZE(tensor), .structure_hash = h });
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_graph_delta(struct tg_trace_writer * w, const struct tg_trace_graph * g,
                                          uint32_t base_graph_id, const struct tg_trace_tensor * tensors,
                                          const int32_t * changed, int n_changed) {
    if (!g || g->n_nodes < 0 || g->n_leafs < 0 || base_graph_id == 0 || (n_changed > 0 && !tensors) ||
        !changes_ok(changed, n_changed, g->n_nodes + g->n_leafs))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad GRAPH_DELTA record");
    const size_t esz = TRACE_SIZE(change) + TRACE_SIZE(tensor);
    if ((size_t) n_changed > (TRACE_MAX_PAYLOAD - TRACE_SIZE(gdelta_head)) / esz)
        return tg_error(TG_ERR_INVALID_ARG, "trace: graph delta of %d tensors is too large", n_changed);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_GRAPH_DELTA, TRACE_SIZE(gdelta_head) + (size_t) n_changed * esz);
    if (!p) return tg_last_status();
    uint8_t * e = trace_put_gdelta_head(p, &(struct trace_gdelta_head) {
        .graph_id = g->graph_id, .sched_id = g->sched_id, .n_nodes = g->n_nodes, .n_leafs = g->n_leafs,
        .entry_size = TRACE_SIZE(tensor), .base_graph_id = base_graph_id,
        .structure_hash = 0,   // not computed for deltas
        .n_changed = (uint32_t) n_changed });
    for (int k = 0; k < n_changed; k++) {
        e = trace_put_change(e, &(struct trace_change) { .index = (uint32_t) changed[k] });
        e = trace_put_tensor(e, &tensors[changed[k]]);
    }
    return tg_trace_rec_commit(w);
}

// A placement entry at e; its text goes to blob + *at (*at advances).
// Returns the end of the entry.
static uint8_t * put_place(uint8_t * e, const struct tg_trace_placement * x, uint8_t * blob, size_t * at) {
    size_t l = x->text && x->text[0] ? strlen(x->text) + 1 : 0;
    e = trace_put_place_entry(e, &(struct trace_place_entry) {
        .backend = x->backend, .cause = x->cause, .text_off = (uint32_t) *at, .text_len = (uint32_t) l });
    if (l) { memcpy(blob + *at, x->text, l); *at += l; }
    return e;
}

enum tg_status tg_trace_write_placement(struct tg_trace_writer * w, uint32_t graph_id,
                                        const struct tg_trace_placement * pl, int n) {
    if (n < 0 || (n > 0 && !pl)) return tg_error(TG_ERR_INVALID_ARG, "trace: bad PLACEMENT record");
    size_t text = 0;
    for (int i = 0; i < n; i++) text += pl[i].text && pl[i].text[0] ? strlen(pl[i].text) + 1 : 0;
    size_t len = TRACE_SIZE(place_head) + (size_t) n * TRACE_SIZE(place_entry) + text;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_PLACEMENT, len);
    if (!p) return tg_last_status();
    uint8_t * e = trace_put_place_head(p, &(struct trace_place_head) {
        .graph_id = graph_id, .n = (uint32_t) n, .entry_size = TRACE_SIZE(place_entry), .text_size = (uint32_t) text });
    uint8_t * blob = e + (size_t) n * TRACE_SIZE(place_entry);
    size_t at = 0;
    for (int i = 0; i < n; i++) e = put_place(e, &pl[i], blob, &at);
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
    const size_t esz = TRACE_SIZE(change) + TRACE_SIZE(place_entry);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_PLACEMENT_DELTA,
                                     TRACE_SIZE(pdelta_head) + (size_t) n_changed * esz + text);
    if (!p) return tg_last_status();
    uint8_t * e = trace_put_pdelta_head(p, &(struct trace_pdelta_head) {
        .graph_id = graph_id, .base_graph_id = base_graph_id, .n = (uint32_t) n,
        .entry_size = TRACE_SIZE(place_entry), .text_size = (uint32_t) text, .n_changed = (uint32_t) n_changed });
    uint8_t * blob = e + (size_t) n_changed * esz;
    size_t at = 0;
    for (int k = 0; k < n_changed; k++) {
        e = trace_put_change(e, &(struct trace_change) { .index = (uint32_t) changed[k] });
        e = put_place(e, &pl[changed[k]], blob, &at);
    }
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_splits(struct tg_trace_writer * w, uint32_t graph_id,
                                     const struct tg_trace_split * sp, int n_splits,
                                     const struct tg_trace_split_input * in, int n_inputs) {
    if (n_splits < 0 || n_inputs < 0 || (n_splits && !sp) || (n_inputs && !in))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad SPLITS record");
    size_t len = TRACE_SIZE(splits_head) + (size_t) n_splits * TRACE_SIZE(split)
               + (size_t) n_inputs * TRACE_SIZE(split_input);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_SPLITS, len);
    if (!p) return tg_last_status();
    uint8_t * e = trace_put_splits_head(p, &(struct trace_splits_head) {
        .graph_id = graph_id, .n_splits = (uint32_t) n_splits, .n_inputs = (uint32_t) n_inputs,
        .split_entry_size = TRACE_SIZE(split), .input_entry_size = TRACE_SIZE(split_input) });
    for (int i = 0; i < n_splits; i++) e = trace_put_split(e, &sp[i]);
    for (int i = 0; i < n_inputs; i++) e = trace_put_split_input(e, &in[i]);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_grads(struct tg_trace_writer * w, uint32_t graph_id, const int32_t (*pairs)[2], int n) {
    if (n < 0 || (n && !pairs)) return tg_error(TG_ERR_INVALID_ARG, "trace: bad GRADS record");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_GRADS, TRACE_SIZE(grads_head) + (size_t) n * TRACE_SIZE(grad_entry));
    if (!p) return tg_last_status();
    uint8_t * e = trace_put_grads_head(p, &(struct trace_grads_head) {
        .graph_id = graph_id, .n = (uint32_t) n, .entry_size = TRACE_SIZE(grad_entry) });
    for (int i = 0; i < n; i++) e = trace_put_grad_entry(e, &(struct trace_grad_entry) { .grad = pairs[i][0], .of = pairs[i][1] });
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_alloc(struct tg_trace_writer * w, uint32_t graph_id, uint32_t sched_id,
                                    const struct tg_trace_buffer * bufs, int n_buffers,
                                    const struct tg_trace_alloc * al, int n) {
    if (n_buffers < 0 || n < 0 || (n_buffers && !bufs) || (n && !al))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad ALLOC record");
    size_t len = TRACE_SIZE(alloc_head) + (size_t) n_buffers * TRACE_SIZE(buffer) + (size_t) n * TRACE_SIZE(alloc);
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_ALLOC, len);
    if (!p) return tg_last_status();
    uint8_t * e = trace_put_alloc_head(p, &(struct trace_alloc_head) {
        .graph_id = graph_id, .sched_id = sched_id, .n_buffers = (uint32_t) n_buffers, .n_tensors = (uint32_t) n,
        .buffer_entry_size = TRACE_SIZE(buffer), .alloc_entry_size = TRACE_SIZE(alloc) });
    for (int i = 0; i < n_buffers; i++) e = trace_put_buffer(e, &bufs[i]);
    for (int i = 0; i < n; i++) e = trace_put_alloc(e, &al[i]);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_alloc_delta(struct tg_trace_writer * w, uint32_t graph_id, uint32_t sched_id,
                                          uint32_t base_graph_id, const struct tg_trace_buffer * bufs, int n_buffers,
                                          const struct tg_trace_alloc * al, int n,
                                          const int32_t * changed, int n_changed) {
    if (n_buffers < 0 || n < 0 || (n_buffers && !bufs) || (n && !al) || base_graph_id == 0 ||
        !changes_ok(changed, n_changed, n))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad ALLOC_DELTA record");
    const size_t esz = TRACE_SIZE(change) + TRACE_SIZE(alloc);
    size_t len = TRACE_SIZE(adelta_head) + (size_t) n_buffers * TRACE_SIZE(buffer) + (size_t) n_changed * esz;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_ALLOC_DELTA, len);
    if (!p) return tg_last_status();
    uint8_t * e = trace_put_adelta_head(p, &(struct trace_adelta_head) {
        .graph_id = graph_id, .sched_id = sched_id, .base_graph_id = base_graph_id,
        .n_buffers = (uint32_t) n_buffers, .n_tensors = (uint32_t) n, .buffer_entry_size = TRACE_SIZE(buffer),
        .alloc_entry_size = TRACE_SIZE(alloc), .n_changed = (uint32_t) n_changed });
    for (int i = 0; i < n_buffers; i++) e = trace_put_buffer(e, &bufs[i]);
    for (int k = 0; k < n_changed; k++) {
        e = trace_put_change(e, &(struct trace_change) { .index = (uint32_t) changed[k] });
        e = trace_put_alloc(e, &al[changed[k]]);
    }
    return tg_trace_rec_commit(w);
}


enum tg_status tg_trace_write_compute(struct tg_trace_writer * w, const struct tg_trace_compute * c) {
    if (!c) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL COMPUTE");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_COMPUTE, TRACE_SIZE(compute));
    if (!p) return tg_last_status();
    trace_put_compute(p, c);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_eval(struct tg_trace_writer * w, const struct tg_trace_eval * e) {
    if (!e) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL EVAL");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_EVAL, TRACE_SIZE(eval));
    if (!p) return tg_last_status();
    trace_put_eval(p, e);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_contents(struct tg_trace_writer * w, const struct tg_trace_contents * c,
                                       const void * data, int zstd_level) {
    if (!c || (c->raw_size && !data)) return tg_error(TG_ERR_INVALID_ARG, "trace: bad CONTENTS record");
    if (c->raw_size > TRACE_MAX_PAYLOAD - TRACE_SIZE(contents))
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
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_CONTENTS, TRACE_SIZE(contents) + stored);
    if (!p) { free(z); return tg_last_status(); }
    struct tg_trace_contents h = *c;
    h.codec = codec;
    h.hash = hash;
    p = trace_put_contents(p, &h);
    if (stored) memcpy(p, z ? z : data, stored);
    free(z);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_host(struct tg_trace_writer * w, const struct tg_trace_host * h) {
    if (!h) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL HOST");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_HOST, TRACE_SIZE(host));
    if (!p) return tg_last_status();
    trace_put_host(p, h);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_sketch(struct tg_trace_writer * w, const struct tg_trace_sketch * s) {
    if (!s || s->n != TG_TRACE_SKETCH_N) return tg_error(TG_ERR_INVALID_ARG, "trace: bad SKETCH record");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_SKETCH, TRACE_SIZE(sketch));
    if (!p) return tg_last_status();
    trace_put_sketch(p, s);
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_result(struct tg_trace_writer * w, const struct tg_trace_result * r) {
    if (!r) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL RESULT");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_RESULT, TRACE_SIZE(result));
    if (!p) return tg_last_status();
    trace_put_result(p, r);
    return tg_trace_rec_commit(w);
}

// A frame of `len` payload bytes at dst: head (sync 0), payload already
// encoded at dst + TRACE_FRAME_HEAD, checksum.
static void frame_finish(uint8_t * dst, uint16_t type, size_t len) {
    trace_put_frame_head(dst, &(struct trace_frame_head) { .type = type, .length = (uint32_t) len });
    const size_t after_sync = TRACE_AT(frame_head, type);
    wr_u32(dst + TRACE_FRAME_HEAD + len, tg_trace_frame_checksum(dst + after_sync, TRACE_FRAME_HEAD - after_sync + len));
}

void tg_trace_frame_result(uint8_t * dst, const struct tg_trace_result * r) {
    memset(dst, 0, TRACE_FRAME_RESULT);
    trace_put_result(dst + TRACE_FRAME_HEAD, r);
    frame_finish(dst, TG_TRACE_REC_RESULT, TRACE_SIZE(result));
}

void tg_trace_frame_sketch(uint8_t * dst, const struct tg_trace_sketch * s) {
    memset(dst, 0, TRACE_FRAME_SKETCH);
    trace_put_sketch(dst + TRACE_FRAME_HEAD, s);
    frame_finish(dst, TG_TRACE_REC_SKETCH, TRACE_SIZE(sketch));
}

enum tg_status tg_trace_write_marker(struct tg_trace_writer * w, const struct tg_trace_marker * m,
                                     const int32_t * ids) {
    if (!m || (m->n_ids && !ids) || m->n_ids > (1u << 24))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad MARKER record");
    size_t len = TRACE_SIZE(marker) + trace_tail_size_marker(m) + (size_t) m->n_ids * 4;
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_MARKER, len);
    if (!p) return tg_last_status();
    uint8_t * q = trace_put_tail_marker(trace_put_marker(p, m), m);
    for (uint32_t i = 0; i < m->n_ids; i++) wr_i32(q + 4 * i, ids[i]);   // then the token ids
    return tg_trace_rec_commit(w);
}

enum tg_status tg_trace_write_event(struct tg_trace_writer * w, const struct tg_trace_event * e) {
    if (!e) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL EVENT");
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_EVENT, TRACE_SIZE(event) + trace_tail_size_event(e));
    if (!p) return tg_last_status();
    trace_put_tail_event(trace_put_event(p, e), e);
    return tg_trace_rec_commit(w);
}
