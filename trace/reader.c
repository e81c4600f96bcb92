// reader.c - opening a trace: header check, record listing from the index or
// by a linear scan with truncation/corruption recovery, per-kind lists.
// Accessors are in reader-get.c.
#include "core/grow.h"
#include "reader-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

const char * tg_trace_stop_str(enum tg_trace_stop why) {
    switch (why) {
    case TG_TRACE_STOP_NONE:         return "complete";
    case TG_TRACE_STOP_CUT:          return "cut mid-record";
    case TG_TRACE_STOP_BAD_SYNC:     return "bad sync word";
    case TG_TRACE_STOP_BAD_CHECKSUM: return "bad checksum";
    case TG_TRACE_STOP_BAD_LENGTH:   return "bad record length";
    case TG_TRACE_STOP_BAD_RECORD:   return "inconsistent record";
    }
    return "unknown";
}

// ---- record list ----------------------------------------------------------

static bool push_rec(struct tg_trace * tr, uint64_t off, uint32_t len, uint32_t type) {
    if (tr->n_recs == UINT32_MAX || !TG_GROW(tr->recs, tr->cap_recs, (size_t) tr->n_recs + 1)) return false;
    tr->recs[tr->n_recs++] = (struct trace_rec) { off, len, type };
    return true;
}

static bool list_push(struct trace_list * l, uint32_t ord) {
    if (l->n == INT32_MAX || !TG_GROW(l->v, l->cap, (size_t) l->n + 1)) return false;
    l->v[l->n++] = ord;
    return true;
}

static bool add_damage(struct tg_trace * tr, uint32_t record, uint64_t off, uint64_t bytes,
                       enum tg_trace_stop why, uint32_t type, bool to_end) {
    if (!TG_GROW(tr->damage, tr->cap_damage, (size_t) tr->st.n_damaged + 1)) return false;
    if (tr->st.n_damaged == 0) { tr->st.stop = why; tr->st.stop_offset = off; }
    tr->damage[tr->st.n_damaged++] = (struct tg_trace_damage) {
        .record = record, .offset = off, .bytes = bytes, .why = why, .type = type, .to_end = to_end };
    tr->st.damaged_bytes += bytes;
    return true;
}

// Checks the frame at off: returns NONE when a complete record with a good
// checksum is there (sets *type, *len), else why not.
static enum tg_trace_stop check_frame(const struct tg_trace * tr, uint64_t off, bool verify,
                                      uint32_t * type, uint32_t * len) {
    uint64_t left = tr->size - off;
    if (left < TRACE_FRAME_HEAD) return TG_TRACE_STOP_CUT;
    const uint8_t * p = tr->base + off;
    struct trace_frame_head f;
    trace_get_frame_head(p, &f);
    if (f.sync != TRACE_SYNC) return TG_TRACE_STOP_BAD_SYNC;
    *type = f.type;
    *len = f.length;
    if (*len > TRACE_MAX_PAYLOAD) return TG_TRACE_STOP_BAD_LENGTH;
    if ((uint64_t) *len + TRACE_FRAME_OVERHEAD > left) return TG_TRACE_STOP_CUT;
    const size_t after_sync = TRACE_AT(frame_head, type);   // the checksum covers type, flags, length, payload
    if (verify && rd_u32(p + TRACE_FRAME_HEAD + *len) !=
                  tg_trace_frame_checksum(p + after_sync, TRACE_FRAME_HEAD - after_sync + (size_t) *len))
        return TG_TRACE_STOP_BAD_CHECKSUM;
    return TG_TRACE_STOP_NONE;
}

// The writer reserves file space ahead of its records and stores a record's
// sync word last, so a writer that was stopped (killed, crashed) leaves, after
// its last whole record, at most one unfinished record without a sync word
// and then zeros. Returns the bytes of that unfinished record (0 if none) when
// [off, size) is exactly that; -1 when it is anything else (damage).
static int64_t unwritten_tail(const struct tg_trace * tr, uint64_t off) {
    const uint8_t * p = tr->base + off;
    uint64_t n = tr->size - off;
    if (n < TRACE_WIDTH(frame_head, sync) || rd_u32(p + TRACE_AT(frame_head, sync)) != 0) return -1;
    uint64_t unfinished = 0;
    if (n >= TRACE_FRAME_HEAD) {
        struct trace_frame_head f;
        trace_get_frame_head(p, &f);
        uint64_t len = f.length;
        if (len > TRACE_MAX_PAYLOAD) return -1;
        if (f.type != 0 || len != 0) {   // its header is written: skip the frame it announced
            if (len + TRACE_FRAME_OVERHEAD > n) return -1;
            unfinished = len + TRACE_FRAME_OVERHEAD;
        }
    }
    for (uint64_t i = unfinished; i < n; i++) if (p[i]) return -1;
    return (int64_t) unfinished;
}

// Resynchronisation after a damaged frame: the first offset >= from holding a
// whole record (sync word, a length that fits, a matching checksum), or 0 if
// none. A false match inside a payload would need its 32-bit checksum to
// agree by chance.
static uint64_t resync(const struct tg_trace * tr, uint64_t from) {
    uint8_t sync[4];
    wr_u32(sync, TRACE_SYNC);
    while (from + TRACE_FRAME_OVERHEAD <= tr->size) {
        const uint8_t * hit = memmem(tr->base + from, tr->size - from, sync, 4);
        if (!hit) return 0;
        uint64_t at = (uint64_t) (hit - tr->base);
        uint32_t type, len;
        if (check_frame(tr, at, true, &type, &len) == TG_TRACE_STOP_NONE) return at;
        from = at + 1;
    }
    return 0;
}

static void scan_message(struct tg_trace * tr) {
    struct tg_trace_status * st = &tr->st;
    if (st->n_damaged == 1 && tr->damage[0].to_end) {   // one bad stretch to the end: as before resync existed
        st->stop_offset = tr->damage[0].offset;
    } else if (st->n_damaged) {
        const struct tg_trace_damage * d = &tr->damage[0];
        snprintf(st->message, sizeof(st->message),
                 "trace damaged: %u damaged stretch%s skipped (first: record %u at offset %llu: %s, %llu bytes lost%s); "
                 "%u complete records read, not indexed",
                 st->n_damaged, st->n_damaged == 1 ? "" : "es", d->record, (unsigned long long) d->offset,
                 tg_trace_stop_str(d->why), (unsigned long long) d->bytes, d->to_end ? ", to the end of the file" : "",
                 st->n_records);
        return;
    }
    if (st->stop == TG_TRACE_STOP_NONE) {
        int len = snprintf(st->message, sizeof(st->message),
                           "trace not closed (no index): %u complete records end cleanly at offset %llu; "
                           "the writer stopped between records", st->n_records, (unsigned long long) st->valid_end);
        if (st->valid_end < st->file_size && len > 0 && (size_t) len < sizeof(st->message))
            snprintf(st->message + len, sizeof(st->message) - (size_t) len, " (then %llu bytes of unused reserved space)",
                     (unsigned long long) (st->file_size - st->valid_end));
        return;
    }
    const char * what = "";
    switch (st->stop) {
    case TG_TRACE_STOP_CUT:          what = "is cut mid-record"; break;
    case TG_TRACE_STOP_BAD_SYNC:     what = "does not start with a record sync word"; break;
    case TG_TRACE_STOP_BAD_CHECKSUM: what = "has a bad checksum"; break;
    case TG_TRACE_STOP_BAD_LENGTH:   what = "claims an impossible length"; break;
    default:                         what = "is damaged"; break;
    }
    snprintf(st->message, sizeof(st->message),
             "trace %s: %u complete records; record %u at offset %llu %s (file size %llu)",
             st->stop == TG_TRACE_STOP_CUT ? "truncated" : "damaged", st->n_records, st->n_records,
             (unsigned long long) st->stop_offset, what, (unsigned long long) st->file_size);
}

// Linear scan from the header: every complete, checksummed record. A bad
// frame is skipped by resynchronising on the next good one (a damage entry
// records what was lost); a stopped writer's reserved tail ends the scan
// cleanly.
static enum tg_status scan_records(struct tg_trace * tr) {
    uint64_t off = TRACE_HEADER_SIZE;
    tr->n_recs = 0;
    tr->st.stop = TG_TRACE_STOP_NONE;
    tr->st.n_damaged = 0;
    tr->st.damaged_bytes = 0;
    uint64_t end = off;
    bool cut_tail = false;
    while (off < tr->size) {
        uint32_t type = 0, len = 0;
        enum tg_trace_stop why = check_frame(tr, off, true, &type, &len);
        if (why != TG_TRACE_STOP_NONE) {
            int64_t unfinished = unwritten_tail(tr, off);   // a stopped writer's reserved space
            if (unfinished >= 0) { cut_tail = unfinished > 0; break; }
            uint64_t next = resync(tr, off + 1);
            bool to_end = next == 0;
            if (to_end) next = tr->size;
            if (!add_damage(tr, tr->n_recs + tr->st.n_damaged, off, next - off, why, 0, to_end))
                return tg_error(TG_ERR_NOMEM, "trace: no memory for the damage list");
            off = next;
            continue;
        }
        if (!push_rec(tr, off, len, type)) return tg_error(TG_ERR_NOMEM, "trace: no memory for the record list");
        off += (uint64_t) len + TRACE_FRAME_OVERHEAD;
        end = off;
    }
    if (tr->st.n_damaged == 0) {
        tr->st.stop = cut_tail ? TG_TRACE_STOP_CUT : TG_TRACE_STOP_NONE;
        tr->st.stop_offset = off;
        end = off;
    }
    tr->st.valid_end = end;
    tr->st.n_records = tr->n_recs;
    tr->st.indexed = false;
    // a clean scan ending with a footer means the index itself was bad
    tr->st.complete = false;
    tr->st.truncated = true;
    scan_message(tr);
    return TG_OK;
}

// Uses the index when the footer and index are intact and consistent. Returns
// true when every record was listed from it.
static bool load_index(struct tg_trace * tr) {
    if (tr->size < TRACE_HEADER_SIZE + TRACE_FOOTER_SIZE) return false;
    uint64_t foff = tr->size - TRACE_FOOTER_SIZE;
    uint32_t type, len;
    if (check_frame(tr, foff, true, &type, &len) != TG_TRACE_STOP_NONE) return false;
    const uint8_t * fp = tr->base + foff + TRACE_FRAME_HEAD;
    if (type != TG_TRACE_REC_FOOTER || len != TRACE_SIZE(footer) ||
        memcmp(fp + TRACE_AT(footer, magic), TRACE_FOOTER_MAGIC, TRACE_WIDTH(footer, magic)) != 0)
        return false;
    struct trace_footer ft;
    trace_get_footer(fp, &ft);
    uint64_t ioff = ft.index_offset;
    uint64_t n = ft.n_records;
    if (ioff < TRACE_HEADER_SIZE || ioff >= foff) return false;
    if (check_frame(tr, ioff, true, &type, &len) != TG_TRACE_STOP_NONE || type != TG_TRACE_REC_INDEX) return false;
    if (ioff + len + TRACE_FRAME_OVERHEAD != foff || len < TRACE_SIZE(index_head)) return false;
    struct trace_index_head ih;
    const uint8_t * ip = trace_get_index_head(tr->base + ioff + TRACE_FRAME_HEAD, &ih);
    uint32_t esz = ih.entry_size;
    if (ih.n != n || esz < TRACE_SIZE(index_entry) || n > (len - TRACE_SIZE(index_head)) / esz) return false;
    uint64_t expect = TRACE_HEADER_SIZE;
    for (uint64_t i = 0; i < n; i++) {
        struct trace_index_entry ie;
        trace_get_index_entry(ip + i * esz, &ie);
        uint64_t off = ie.offset;
        uint32_t t2 = 0, l2 = 0, it = ie.type, il = ie.length;
        if (off != expect) return false;   // records are contiguous; the index must say so
        if ((uint64_t) il + TRACE_FRAME_OVERHEAD > ioff - off) return false;
        // large contents are verified when read (tg_trace_read_contents)
        bool verify = it != TG_TRACE_REC_CONTENTS || il <= TRACE_LAZY_VERIFY;
        enum tg_trace_stop why = check_frame(tr, off, verify, &t2, &l2);
        if (why == TG_TRACE_STOP_NONE && (t2 != it || l2 != il)) return false;   // a good frame: the index is wrong
        expect = off + il + TRACE_FRAME_OVERHEAD;
        if (why == TG_TRACE_STOP_CUT) why = TG_TRACE_STOP_BAD_LENGTH;   // inside the file: its length field is bad
        if (why != TG_TRACE_STOP_NONE) {   // damaged: the (checksummed) index says where the next one starts
            if (!add_damage(tr, (uint32_t) i, off, (uint64_t) il + TRACE_FRAME_OVERHEAD, why, it, false)) return false;
            continue;
        }
        if (!push_rec(tr, off, l2, t2)) return false;
    }
    if (expect != ioff) return false;
    // the index and the footer are records too
    if (!push_rec(tr, ioff, len, TG_TRACE_REC_INDEX) ||
        !push_rec(tr, foff, TRACE_SIZE(footer), TG_TRACE_REC_FOOTER)) return false;
    tr->st.indexed = true;
    tr->st.valid_end = tr->size;
    tr->st.n_records = tr->n_recs;
    if (tr->st.n_damaged) {   // closed, but records were lost
        const struct tg_trace_damage * d = &tr->damage[0];
        tr->st.complete = false;
        tr->st.truncated = true;
        snprintf(tr->st.message, sizeof(tr->st.message),
                 "trace damaged: %u damaged record%s skipped (first: record %u, %s, at offset %llu: %s); "
                 "the other %u records read from the index",
                 tr->st.n_damaged, tr->st.n_damaged == 1 ? "" : "s", d->record, tg_trace_rec_name(d->type),
                 (unsigned long long) d->offset, tg_trace_stop_str(d->why), tr->n_recs);
        return true;
    }
    tr->st.complete = true;
    tr->st.truncated = false;
    tr->st.stop = TG_TRACE_STOP_NONE;
    tr->st.stop_offset = tr->size;
    snprintf(tr->st.message, sizeof(tr->st.message), "complete: %u records, indexed", tr->n_recs);
    return true;
}

// ---- per-kind lists and graph metadata --------------------------------------

// Parses the name tables of a RUN record; the trace takes them only when the
// whole record is well formed.
static bool parse_run_tables(struct tg_trace * tr, uint32_t ord) {
    const uint8_t * p = trace_payload(tr, ord);
    const uint8_t * end = p + tr->recs[ord].len;
    if (end - p < (ptrdiff_t) TRACE_SIZE(run)) return false;
    struct tg_trace_run run;
    p = trace_get_run(p, &run);
    if (!trace_get_tail_run(&p, end, &run)) return false;
    const char ** tabs[3] = { NULL, NULL, NULL };
    int counts[3] = { 0, 0, 0 };
    bool ok = true;
    for (int tab = 0; tab < 3 && ok; tab++) {
        if (tab == 2 && p == end) break;   // cause table: optional
        if (end - p < 4) { ok = false; break; }
        uint32_t n = rd_u32(p); p += 4;
        if (n > (uint32_t) (end - p) / 4) { ok = false; break; }
        tabs[tab] = calloc(n ? n : 1, sizeof(char *));
        if (!tabs[tab]) { ok = false; break; }
        counts[tab] = (int) n;
        for (uint32_t i = 0; i < n && ok; i++) ok = (tabs[tab][i] = trace_get_str(&p, end)) != NULL;
    }
    if (!ok) {
        for (int tab = 0; tab < 3; tab++) free(tabs[tab]);
        return false;
    }
    tr->op_names = tabs[0]; tr->n_op_names = counts[0];
    tr->type_names = tabs[1]; tr->n_type_names = counts[1];
    tr->cause_names = tabs[2]; tr->n_cause_names = counts[2];
    return true;
}

// Change lists of deltas: n entries of stride bytes, each a u32 tensor index
// then the entry; the indices must increase and stay below n_tensors.
static bool changes_valid(const uint8_t * list, uint64_t n, uint64_t stride, uint64_t n_tensors) {
    uint32_t prev = 0;
    for (uint64_t k = 0; k < n; k++) {
        struct trace_change c;
        trace_get_change(list + k * stride, &c);
        if (c.index >= n_tensors || (k > 0 && c.index <= prev)) return false;
        prev = c.index;
    }
    return true;
}

static bool add_graph(struct tg_trace * tr, uint32_t ord) {
    const uint8_t * p = trace_payload(tr, ord);
    uint32_t len = tr->recs[ord].len;
    bool delta = tr->recs[ord].type == TG_TRACE_REC_GRAPH_DELTA;
    struct trace_gdelta_head h = { 0 };   // a full GRAPH's head has the same fields but base and changes
    if (delta) {
        if (len < TRACE_SIZE(gdelta_head)) return false;
        trace_get_gdelta_head(p, &h);
    } else {
        if (len < TRACE_SIZE(graph_head)) return false;
        struct trace_graph_head f;
        trace_get_graph_head(p, &f);
        h = (struct trace_gdelta_head) { .graph_id = f.graph_id, .sched_id = f.sched_id, .n_nodes = f.n_nodes,
                                         .n_leafs = f.n_leafs, .entry_size = f.entry_size };
    }
    uint32_t esz = h.entry_size;
    if (h.n_nodes < 0 || h.n_leafs < 0 || esz < TRACE_SIZE(tensor)) return false;
    uint64_t nt = (uint64_t) h.n_nodes + (uint64_t) h.n_leafs;
    if (nt > INT32_MAX) return false;   // tensor indices are int32 (a delta's count is not bounded by its length)
    if (delta) {
        uint64_t stride = TRACE_SIZE(change) + (uint64_t) esz;
        if (h.base_graph_id == 0 || h.n_changed > (uint64_t) (len - TRACE_SIZE(gdelta_head)) / stride) return false;
        if (!changes_valid(p + TRACE_SIZE(gdelta_head), h.n_changed, stride, nt)) return false;
    } else if (nt > (uint64_t) (len - TRACE_SIZE(graph_head)) / esz) {
        return false;
    }
    struct trace_gmeta * g = &tr->graphs[tr->n_graphs++];
    *g = (struct trace_gmeta) { .ord = ord, .graph_id = h.graph_id, .sched_id = h.sched_id, .n_nodes = h.n_nodes,
                                .n_leafs = h.n_leafs, .entry_size = esz, .place_ord = -1, .splits_ord = -1,
                                .alloc_ord = -1, .grads_ord = -1, .base_id = h.base_graph_id, .base_gi = -1, .place_base_ord = -1,
                                .alloc_base_ord = -1, .n_changed = h.n_changed };
    return true;
}

// A graph delta stands on the full GRAPH of its base id written before it,
// with the same tensor count; deltas that do not are dropped (invalid).
// Returns how many were dropped; graph_by_id must be sorted.
static int resolve_graph_bases(struct tg_trace * tr) {
    int dropped = 0;
    for (int gi = 0; gi < tr->n_graphs; gi++) {
        struct trace_gmeta * g = &tr->graphs[gi];
        if (g->base_id == 0) continue;
        int lo = 0, hi = tr->n_graphs;   // first position in graph_by_id with graph_id >= base_id
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (tr->graphs[tr->graph_by_id[mid]].graph_id < g->base_id) lo = mid + 1; else hi = mid;
        }
        int bi = -1;   // the latest full GRAPH with that id before this one
        for (int k = lo; k < tr->n_graphs && tr->graphs[tr->graph_by_id[k]].graph_id == g->base_id; k++) {
            int c = tr->graph_by_id[k];
            if (c < gi && tr->graphs[c].base_id == 0) bi = c;
        }
        const struct trace_gmeta * b = bi >= 0 ? &tr->graphs[bi] : NULL;
        if (b && b->n_nodes + b->n_leafs == g->n_nodes + g->n_leafs) { g->base_gi = bi; continue; }
        g->base_gi = -2;   // dropped below
        dropped++;
    }
    if (!dropped) return 0;
    int keep = 0;   // base indices only point backwards, to full graphs (never dropped): remap them
    int32_t * map = malloc((size_t) tr->n_graphs * sizeof(int32_t));
    if (!map) return dropped;
    for (int gi = 0; gi < tr->n_graphs; gi++) {
        map[gi] = keep;
        if (tr->graphs[gi].base_gi != -2) tr->graphs[keep++] = tr->graphs[gi];
    }
    for (int gi = 0; gi < keep; gi++) if (tr->graphs[gi].base_gi >= 0) tr->graphs[gi].base_gi = map[tr->graphs[gi].base_gi];
    free(map);
    tr->n_graphs = keep;
    return dropped;
}

static int cmp_graph_id(const void * a, const void * b, void * arg) {
    const struct tg_trace * tr = arg;
    int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
    uint32_t ix = tr->graphs[x].graph_id, iy = tr->graphs[y].graph_id;
    if (ix != iy) return ix < iy ? -1 : 1;
    return x < y ? -1 : x > y;
}

// True when head + n1*s1 + n2*s2 bytes fit in len (no overflow: s1, s2 > 0).
static bool fits(uint32_t len, uint64_t head, uint64_t n1, uint64_t s1, uint64_t n2, uint64_t s2) {
    if (head > len) return false;
    uint64_t left = len - head;
    if (n1 > left / s1) return false;
    left -= n1 * s1;
    return n2 <= left / s2;
}

// Graph-attached records must agree with their graph's tensor count.
static bool attach_to_graph(struct tg_trace * tr, uint32_t ord, uint32_t type) {
    const uint8_t * p = trace_payload(tr, ord);
    uint32_t len = tr->recs[ord].len;
    uint32_t rtype = tr->recs[ord].type;
    // the heads of the five kinds: each needs its own size before it is read
    struct trace_pdelta_head pd = { 0 };
    struct trace_adelta_head ad = { 0 };
    struct trace_place_head ph = { 0 };
    struct trace_splits_head sh = { 0 };
    struct trace_alloc_head ah = { 0 };
    struct trace_grads_head gh = { 0 };
    uint32_t graph_id;
    switch (rtype) {
    case TG_TRACE_REC_GRADS:
        if (len < TRACE_SIZE(grads_head)) return false;
        trace_get_grads_head(p, &gh);
        graph_id = gh.graph_id;
        break;
    case TG_TRACE_REC_PLACEMENT_DELTA:
        if (len < TRACE_SIZE(pdelta_head)) return false;
        trace_get_pdelta_head(p, &pd);
        graph_id = pd.graph_id;
        break;
    case TG_TRACE_REC_ALLOC_DELTA:
        if (len < TRACE_SIZE(adelta_head)) return false;
        trace_get_adelta_head(p, &ad);
        graph_id = ad.graph_id;
        break;
    case TG_TRACE_REC_PLACEMENT:
        if (len < TRACE_SIZE(place_head)) return false;
        trace_get_place_head(p, &ph);
        graph_id = ph.graph_id;
        break;
    case TG_TRACE_REC_SPLITS:
        if (len < TRACE_SIZE(splits_head)) return false;
        trace_get_splits_head(p, &sh);
        graph_id = sh.graph_id;
        break;
    default:
        if (len < TRACE_SIZE(alloc_head)) return false;
        trace_get_alloc_head(p, &ah);
        graph_id = ah.graph_id;
        break;
    }
    int gi = tg_trace_find_graph(tr, graph_id);
    if (gi < 0) return false;
    struct trace_gmeta * g = &tr->graphs[gi];
    uint64_t nt = (uint64_t) g->n_nodes + (uint64_t) g->n_leafs;
    if (rtype == TG_TRACE_REC_PLACEMENT_DELTA || rtype == TG_TRACE_REC_ALLOC_DELTA) {
        // a delta needs its base graph's full record of the same kind, already seen
        bool place = rtype == TG_TRACE_REC_PLACEMENT_DELTA;
        int bi = tg_trace_find_graph(tr, place ? pd.base_graph_id : ad.base_graph_id);
        if (bi < 0) return false;
        const struct trace_gmeta * b = &tr->graphs[bi];
        int32_t bord = place ? b->place_ord : b->alloc_ord;
        if (bord < 0 || (uint32_t) bord >= ord || tr->recs[bord].type != (place ? TG_TRACE_REC_PLACEMENT : TG_TRACE_REC_ALLOC))
            return false;
        const uint8_t * bp = trace_payload(tr, (uint32_t) bord);
        if (place) {
            struct trace_place_head base;
            trace_get_place_head(bp, &base);
            uint64_t stride = TRACE_SIZE(change) + (uint64_t) pd.entry_size;
            if (pd.n != nt || base.n != nt || pd.entry_size < TRACE_SIZE(place_entry)) return false;
            if (!fits(len, TRACE_SIZE(pdelta_head), pd.n_changed, stride, pd.text_size, 1)) return false;
            if (!changes_valid(p + TRACE_SIZE(pdelta_head), pd.n_changed, stride, nt)) return false;
            g->place_ord = (int32_t) ord;
            g->place_base_ord = bord;   // that record stays full even if a later one replaces the base's
        } else {
            struct trace_alloc_head base;
            const uint8_t * bbufs = trace_get_alloc_head(bp, &base);
            uint32_t nb = ad.n_buffers, eb = ad.buffer_entry_size;
            uint64_t stride = TRACE_SIZE(change) + (uint64_t) ad.alloc_entry_size;
            if (ad.n_tensors != nt || base.n_tensors != nt || eb < TRACE_SIZE(buffer) ||
                ad.alloc_entry_size < TRACE_SIZE(alloc))
                return false;
            if (!fits(len, TRACE_SIZE(adelta_head), nb, eb, ad.n_changed, stride)) return false;
            const uint8_t * bufs = p + TRACE_SIZE(adelta_head);
            if (!changes_valid(bufs + (uint64_t) nb * eb, ad.n_changed, stride, nt)) return false;
            // the unchanged entries name the base's buffers: the lists must agree
            if (base.n_buffers != nb) return false;
            for (uint32_t i = 0; i < nb; i++) {
                struct tg_trace_buffer x, y;
                trace_get_buffer(bufs + (uint64_t) i * eb, &x);
                trace_get_buffer(bbufs + (uint64_t) i * base.buffer_entry_size, &y);
                if (x.uid != y.uid) return false;
            }
            g->alloc_ord = (int32_t) ord;
            g->alloc_base_ord = bord;
        }
        return true;
    }
    if (type == TG_TRACE_REC_GRADS) {
        if (gh.entry_size < TRACE_SIZE(grad_entry) || !fits(len, TRACE_SIZE(grads_head), gh.n, gh.entry_size, 0, 1))
            return false;
        for (uint32_t i = 0; i < gh.n; i++) {   // every pair names tensors of the graph
            struct trace_grad_entry e;
            trace_get_grad_entry(p + TRACE_SIZE(grads_head) + (uint64_t) i * gh.entry_size, &e);
            if (e.grad < 0 || e.of < 0 || (uint64_t) e.grad >= nt || (uint64_t) e.of >= nt) return false;
        }
        g->grads_ord = (int32_t) ord;
    } else if (type == TG_TRACE_REC_PLACEMENT) {
        if (ph.n != nt || ph.entry_size < TRACE_SIZE(place_entry)) return false;
        if (!fits(len, TRACE_SIZE(place_head), ph.n, ph.entry_size, ph.text_size, 1)) return false;
        g->place_ord = (int32_t) ord;
        g->place_base_ord = -1;
    } else if (type == TG_TRACE_REC_SPLITS) {
        if (sh.split_entry_size < TRACE_SIZE(split) || sh.input_entry_size < TRACE_SIZE(split_input)) return false;
        if (!fits(len, TRACE_SIZE(splits_head), sh.n_splits, sh.split_entry_size, sh.n_inputs, sh.input_entry_size))
            return false;
        g->splits_ord = (int32_t) ord;
    } else {
        if (ah.n_tensors != nt || ah.buffer_entry_size < TRACE_SIZE(buffer) || ah.alloc_entry_size < TRACE_SIZE(alloc))
            return false;
        if (!fits(len, TRACE_SIZE(alloc_head), ah.n_buffers, ah.buffer_entry_size, ah.n_tensors, ah.alloc_entry_size))
            return false;
        g->alloc_ord = (int32_t) ord;
        g->alloc_base_ord = -1;
    }
    return true;
}

// The kind list a record type goes to: deltas share their full kind's list.
static uint32_t list_kind(uint32_t t) {
    switch (t) {
    case TG_TRACE_REC_GRAPH_DELTA:     return TG_TRACE_REC_GRAPH;
    case TG_TRACE_REC_PLACEMENT_DELTA: return TG_TRACE_REC_PLACEMENT;
    case TG_TRACE_REC_ALLOC_DELTA:     return TG_TRACE_REC_ALLOC;
    default:                           return t;
    }
}

static enum tg_status build_lists(struct tg_trace * tr) {
    uint32_t n_graph_recs = 0;
    for (uint32_t o = 0; o < tr->n_recs; o++) n_graph_recs += list_kind(tr->recs[o].type) == TG_TRACE_REC_GRAPH;
    tr->graphs = calloc(n_graph_recs ? n_graph_recs : 1, sizeof(*tr->graphs));
    tr->graph_by_id = calloc(n_graph_recs ? n_graph_recs : 1, sizeof(*tr->graph_by_id));
    if (!tr->graphs || !tr->graph_by_id) return tg_error(TG_ERR_NOMEM, "trace: no memory");
    for (uint32_t o = 0; o < tr->n_recs; o++) {
        uint32_t t = list_kind(tr->recs[o].type);
        if (t == TG_TRACE_REC_INDEX || t == TG_TRACE_REC_FOOTER) continue;
        if (t == 0 || t >= TRACE_N_KINDS) { tr->st.n_unknown++; continue; }
        bool ok = true;
        if (t == TG_TRACE_REC_GRAPH) ok = add_graph(tr, o);
        else if (t == TG_TRACE_REC_RUN && tr->kind[t].n == 0) ok = parse_run_tables(tr, o);
        if (!ok) { tr->st.n_invalid++; continue; }
        if (!list_push(&tr->kind[t], o)) return tg_error(TG_ERR_NOMEM, "trace: no memory");
    }
    for (int i = 0; i < tr->n_graphs; i++) tr->graph_by_id[i] = i;
    qsort_r(tr->graph_by_id, (size_t) tr->n_graphs, sizeof(int32_t), cmp_graph_id, tr);
    int dropped = resolve_graph_bases(tr);
    if (dropped) {
        tr->st.n_invalid += (uint32_t) dropped;
        for (int i = 0; i < tr->n_graphs; i++) tr->graph_by_id[i] = i;
        qsort_r(tr->graph_by_id, (size_t) tr->n_graphs, sizeof(int32_t), cmp_graph_id, tr);
    }
    static const uint32_t attached[] = { TG_TRACE_REC_PLACEMENT, TG_TRACE_REC_SPLITS, TG_TRACE_REC_ALLOC,
                                         TG_TRACE_REC_GRADS };
    for (int a = 0; a < 4; a++) {
        struct trace_list * l = &tr->kind[attached[a]];
        int keep = 0;
        for (int i = 0; i < l->n; i++) {
            if (attach_to_graph(tr, l->v[i], attached[a])) l->v[keep++] = l->v[i];
            else tr->st.n_invalid++;
        }
        l->n = keep;
    }
    return TG_OK;
}

// ---- open / close -----------------------------------------------------------

static enum tg_status check_header(struct tg_trace * tr) {
    if (tr->size < TRACE_HEADER_SIZE ||
        memcmp(tr->base + TRACE_AT(file_header, magic), TRACE_MAGIC, TRACE_WIDTH(file_header, magic)) != 0)
        return tg_error(TG_ERR_FORMAT, "not a tgdb trace (bad magic)");
    struct trace_file_header h;
    trace_get_file_header(tr->base, &h);
    if (h.checksum != XXH32(tr->base, TRACE_AT(file_header, checksum), 0))
        return tg_error(TG_ERR_FORMAT, "trace header checksum mismatch (damaged header)");
    tr->st.version_major = h.version_major;
    tr->st.version_minor = h.version_minor;
    if (tr->st.version_major != TRACE_VERSION_MAJOR)
        return tg_error(TG_ERR_FORMAT, "trace format version %u.%u is not supported (this reader reads %u.x)",
                        tr->st.version_major, tr->st.version_minor, TRACE_VERSION_MAJOR);
    if (h.header_size != TRACE_HEADER_SIZE)
        return tg_error(TG_ERR_FORMAT, "trace header size %u unexpected", h.header_size);
    return TG_OK;
}

static struct tg_trace * open_common(struct tg_trace * tr) {
    tr->st.file_size = tr->size;
    if (check_header(tr) != TG_OK) { tg_trace_close(tr); return NULL; }
    if (!load_index(tr)) {
        tr->n_recs = 0;   // drop what a partly valid index listed (and the damage it found)
        tr->st.n_damaged = 0;
        tr->st.damaged_bytes = 0;
        if (scan_records(tr) != TG_OK) { tg_trace_close(tr); return NULL; }
        // a scan that ends exactly after an intact footer: the index was damaged
        if (tr->n_recs > 0 && tr->recs[tr->n_recs - 1].type == TG_TRACE_REC_FOOTER &&
            (tr->st.stop == TG_TRACE_STOP_NONE ||
             (tr->st.n_damaged == 1 && tr->n_recs >= 1 && tr->damage[0].offset + tr->damage[0].bytes == tr->recs[tr->n_recs - 1].off)))
            snprintf(tr->st.message, sizeof(tr->st.message),
                     "index unusable (damaged or inconsistent); %u records recovered by a linear scan",
                     tr->n_recs);
    }
    if (build_lists(tr) != TG_OK) { tg_trace_close(tr); return NULL; }
    if (!tg_trace_build_result_keys(tr)) { tg_error(TG_ERR_NOMEM, "trace: no memory"); tg_trace_close(tr); return NULL; }
    return tr;
}

// Reads the file into private anonymous memory instead of mapping it.
//
// Why not mmap: a MAP_PRIVATE file mapping still shares the file's pages until
// they are written, so when anything truncates the file (a writer re-creating
// it in place, `truncate`, a copy over it) every later access past the new end
// raises SIGBUS and kills the reader - a debugger must not die because the file
// it shows changed. A library cannot reasonably catch SIGBUS, and pread on every
// access would mean copying each record out. So the reader takes a snapshot:
// one sequential read (page cache to memory, several GB/s: a few ms for the
// 200k-node benchmark trace) into an anonymous mapping that nothing else can
// change. The cost is the trace's size in private memory (the page cache copy
// can be dropped by the kernel). The reader keeps the version it opened; a file
// that shrinks while it is read is treated as cut at the bytes that were read.
// Returns the bytes read in *got (0 allowed: then *out is NULL).
static enum tg_status read_private(int fd, size_t size, const char * path, uint8_t ** out, size_t * got) {
    *out = NULL;
    *got = 0;
    if (size == 0) return TG_OK;
    void * m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return tg_error(TG_ERR_NOMEM, "cannot allocate %zu bytes to read '%s': %s", size, path, strerror(errno));
    (void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    uint8_t * p = m;
    size_t n = 0;
    while (n < size) {
        size_t want = size - n < ((size_t) 1 << 30) ? size - n : ((size_t) 1 << 30);
        ssize_t r = pread(fd, p + n, want, (off_t) n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int err = errno;
            munmap(m, size);
            return tg_error(TG_ERR_IO, "cannot read '%s': %s", path, strerror(err));
        }
        if (r == 0) break;   // the file shrank since fstat: keep what was there
        n += (size_t) r;
    }
    mprotect(m, size, PROT_READ);
    *out = m;
    *got = n;
    return TG_OK;
}

struct tg_trace * tg_trace_open(const char * path) {
    if (!path) { tg_error(TG_ERR_INVALID_ARG, "trace: NULL path"); return NULL; }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { tg_error(TG_ERR_IO, "cannot open '%s': %s", path, strerror(errno)); return NULL; }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        tg_error(TG_ERR_IO, "'%s' is not a regular file", path);
        return NULL;
    }
    struct tg_trace * tr = calloc(1, sizeof(*tr));
    if (!tr) { close(fd); tg_error(TG_ERR_NOMEM, "trace: no memory"); return NULL; }
    tr->path = strdup(path);
    uint8_t * data = NULL;
    size_t got = 0;
    if (read_private(fd, (size_t) sb.st_size, path, &data, &got) != TG_OK) {
        close(fd);
        free(tr->path); free(tr);
        return NULL;
    }
    close(fd);
    tr->base = data;
    tr->size = got;
    tr->map_size = (size_t) sb.st_size;
    tr->mapped = data != NULL;
    if (tr->size < TRACE_HEADER_SIZE) {
        tg_trace_close(tr);
        tg_error(TG_ERR_FORMAT, "'%s' is not a tgdb trace (%zu bytes, shorter than a trace header)", path, got);
        return NULL;
    }
    struct tg_trace * r = open_common(tr);
    if (!r) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", tg_last_error());
        tg_error(tg_last_status(), "'%s': %s", path, msg);
    }
    return r;
}

struct tg_trace * tg_trace_open_mem(const void * data, size_t size) {
    if (!data && size) { tg_error(TG_ERR_INVALID_ARG, "trace: NULL data"); return NULL; }
    struct tg_trace * tr = calloc(1, sizeof(*tr));
    if (!tr) { tg_error(TG_ERR_NOMEM, "trace: no memory"); return NULL; }
    tr->base = data;
    tr->size = size;
    return open_common(tr);
}

void tg_trace_close(struct tg_trace * tr) {
    if (!tr) return;
    if (tr->mapped) munmap((void *) tr->base, tr->map_size);
    free(tr->path);
    free(tr->recs);
    free(tr->damage);
    for (int k = 0; k < TRACE_N_KINDS; k++) free(tr->kind[k].v);
    free(tr->op_names);
    free(tr->type_names);
    free(tr->cause_names);
    free(tr->graphs);
    free(tr->graph_by_id);
    free(tr->eval_keys);
    free(tr->contents_keys);
    free(tr->sketch_keys);
    free(tr->result_keys);
    free(tr->uid_keys);
    free(tr);
}

void tg_trace_get_status(const struct tg_trace * tr, struct tg_trace_status * st) {
    if (tr && st) *st = tr->st;
}

const char * tg_trace_path(const struct tg_trace * tr) { return tr && tr->path ? tr->path : ""; }

bool tg_trace_get_record(const struct tg_trace * tr, uint32_t ord, uint32_t * type,
                         const uint8_t ** payload, uint32_t * len, uint64_t * offset) {
    if (!tr || ord >= tr->n_recs) return false;
    if (type) *type = tr->recs[ord].type;
    if (payload) *payload = trace_payload(tr, ord);
    if (len) *len = tr->recs[ord].len;
    if (offset) *offset = tr->recs[ord].off;
    return true;
}

bool tg_trace_get_damage(const struct tg_trace * tr, int i, struct tg_trace_damage * out) {
    if (!tr || i < 0 || (uint32_t) i >= tr->st.n_damaged) return false;
    if (out) *out = tr->damage[i];
    return true;
}

bool tg_trace_warning(const struct tg_trace * tr, char * buf, size_t n) {
    if (!buf || n == 0) return false;
    buf[0] = 0;
    if (!tr || (tr->st.complete && tr->st.n_damaged == 0)) return false;
    snprintf(buf, n, "trace '%s': %s", tr->path ? tr->path : "(memory)", tr->st.message);
    return true;
}
