// fx-export.c - `tgdb trace export FILE --format perfetto -o OUT`: the trace
// as Chrome trace-event JSON (the format Perfetto UI and chrome://tracing
// open: {"traceEvents": [...]}; ts/dur in microseconds).
//
// Tracks: one process per scheduler ("sched N"), in it one thread per backend
// (tid = backend index + 1) holding a complete ("X") slice per evaluated node,
// named by the node, category = op, coloured by op, with shape, type, split,
// buffer@offset and hash in args; the copies of a split's inputs as "copy"
// slices on the destination backend's track in the gap before the split's
// first node (the trace records their bytes, not their times: the gap is
// shared out by bytes); tid 0 "computations" holds one slice per graph
// computation and the decode/user markers as instant ("i") events; one
// counter ("C") per compute buffer with the bytes of the graph's tensors live
// at each node step. Nodes recorded without times (views the backend skips)
// are zero-length slices at the end of the previous slice of their track.
#include "cli.h"
#include "fx.h"
#include "tg/trace-read.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct export_opts {
    int          format;   // index in "perfetto|chrome" (both: trace-event JSON)
    const char * out;
    bool         json;
};

static const struct tg_cli_opt export_opts_table[] = {
    { "--format", "-f", "FMT", "output format: perfetto (Chrome trace-event JSON; chrome is a synonym)", TG_CLI_CHOICE,
      offsetof(struct export_opts, format), 0, 0, false, "perfetto|chrome", NULL },
    { "--output", "-o", "OUT", "file to write (default: standard output)", TG_CLI_STR,
      offsetof(struct export_opts, out), 0, 0, false, NULL, NULL },
    { "--json", NULL, NULL, "print the summary (events written per kind) as JSON", TG_CLI_FLAG,
      offsetof(struct export_opts, json), 0, 0, false, NULL, NULL },
    { 0 },
};

// Chrome's reserved colour names (cname): ops map onto them by a hash.
static const char * const palette[] = {
    "thread_state_running", "thread_state_runnable", "thread_state_iowait", "rail_response", "rail_animation",
    "rail_idle", "rail_load", "good", "bad", "terrible", "generic_work", "yellow", "olive", "cq_build_running",
    "cq_build_passed", "cq_build_attempt_running", "background_memory_dump", "light_memory_dump",
};

static const char * op_colour(const char * op) {
    uint32_t h = 2166136261u;
    for (; *op; op++) h = (h ^ (unsigned char) *op) * 16777619u;
    return palette[h % (sizeof(palette) / sizeof(palette[0]))];
}

// Live bytes per node step of one graph, per buffer (counters).
struct graph_mem {
    bool      done;
    int       n_buffers;
    int       n_steps;
    uint64_t * live;   // [bi * n_steps + step]
};

struct exporter {
    struct tg_trace * tr;
    FILE *            f;
    uint64_t          t0;           // ns subtracted from every time
    int               n_scheds;
    uint64_t *        track_end;    // per (pid, tid): end of the last slice (ns)
    struct graph_mem * mem;         // per gi
    long              n_events, n_slices, n_copies, n_counters, n_markers, n_computes, n_untimed;
};

enum { N_TIDS = TG_TRACE_MAX_BACKENDS + 2 };   // 0 computations, 1..16 backends, 17 no backend

static int pid_of_sched(const struct exporter * x, uint32_t sched_id) {
    for (int i = 0; i < x->n_scheds; i++) {
        struct tg_trace_sched s;
        if (tg_trace_get_sched(x->tr, i, &s) && s.sched_id == sched_id) return i + 1;
    }
    return x->n_scheds + 1;   // graphs computed without a (known) scheduler
}

static int tid_of_backend(int b) { return b >= 0 && b < TG_TRACE_MAX_BACKENDS ? b + 1 : N_TIDS - 1; }

static uint64_t * track(struct exporter * x, int pid, int tid) { return &x->track_end[(size_t) pid * N_TIDS + tid]; }

static void ts_us(FILE * f, uint64_t ns) { fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned) (ns % 1000)); }

static void begin_event(struct exporter * x, const char * ph, int pid, int tid, uint64_t t_ns) {
    fprintf(x->f, "%s\n{\"ph\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": ", x->n_events++ ? "," : "", ph, pid, tid);
    ts_us(x->f, t_ns >= x->t0 ? t_ns - x->t0 : 0);
}

static void meta(struct exporter * x, const char * what, int pid, int tid, const char * name, int sort) {
    begin_event(x, "M", pid, tid, x->t0);
    fprintf(x->f, ", \"name\": \"%s\", \"args\": {\"name\": ", what);
    tg_fx_json_str(x->f, name);
    fprintf(x->f, "}}");
    begin_event(x, "M", pid, tid, x->t0);
    fprintf(x->f, ", \"name\": \"%s_sort_index\", \"args\": {\"sort_index\": %d}}", what, sort);
}

// A slice on (pid, tid) from begin to end, clipped so that slices of a track
// never overlap. Leaves the event open (the caller adds fields and "}").
static void slice(struct exporter * x, int pid, int tid, uint64_t begin, uint64_t end) {
    uint64_t * te = track(x, pid, tid);
    if (begin < *te) begin = *te;
    if (end < begin) end = begin;
    *te = end;
    begin_event(x, "X", pid, tid, begin);
    fprintf(x->f, ", \"dur\": ");
    ts_us(x->f, end - begin);
}

static const struct graph_mem * graph_mem(struct exporter * x, int gi) {
    struct graph_mem * m = &x->mem[gi];
    if (m->done) return m;
    m->done = true;
    struct tg_trace_graph g;
    if (!tg_trace_has_alloc(x->tr, gi) || !tg_trace_get_graph(x->tr, gi, &g) || g.n_nodes <= 0) return m;
    int nb = tg_trace_n_buffers(x->tr, gi), ns = g.n_nodes, nt = g.n_nodes + g.n_leafs;
    int64_t * delta = calloc((size_t) nb * (size_t) (ns + 1), sizeof(int64_t));
    m->live = calloc((size_t) nb * (size_t) ns, sizeof(uint64_t));
    int32_t * last = malloc((size_t) nt * sizeof(int32_t));
    if (!delta || !m->live || !last) { free(delta); free(m->live); free(last); m->live = NULL; return m; }
    // a tensor placed in place of its parent extends the range of the tensor owning the bytes
    for (int ti = 0; ti < nt; ti++) {
        struct tg_trace_alloc a;
        last[ti] = tg_trace_get_alloc(x->tr, gi, ti, &a) ? (a.last_step < 0 ? ns - 1 : a.last_step) : -1;
    }
    for (int ti = 0; ti < nt; ti++) {
        struct tg_trace_alloc a;
        if (!tg_trace_get_alloc(x->tr, gi, ti, &a) || !(a.flags & TG_TRACE_ALLOC_INPLACE)) continue;
        int o = tg_fx_alloc_owner(x->tr, gi, ti);
        if (o >= 0 && last[o] < last[ti]) last[o] = last[ti];
    }
    for (int ti = 0; ti < nt; ti++) {
        struct tg_trace_alloc a;
        if (!tg_trace_get_alloc(x->tr, gi, ti, &a) || a.buffer < 0 || a.buffer >= nb) continue;
        if (!(a.flags & TG_TRACE_ALLOC_ALLOCATED) || (a.flags & (TG_TRACE_ALLOC_INPLACE | TG_TRACE_ALLOC_VIEW))) continue;
        int b0 = a.first_step < 0 ? 0 : a.first_step, b1 = last[ti];
        if (b0 >= ns || b1 < b0) continue;
        if (b1 >= ns) b1 = ns - 1;
        delta[(size_t) a.buffer * (size_t) (ns + 1) + (size_t) b0] += (int64_t) a.size;
        delta[(size_t) a.buffer * (size_t) (ns + 1) + (size_t) b1 + 1] -= (int64_t) a.size;
    }
    for (int b = 0; b < nb; b++) {
        int64_t acc = 0;
        for (int s = 0; s < ns; s++) {
            acc += delta[(size_t) b * (size_t) (ns + 1) + (size_t) s];
            m->live[(size_t) b * (size_t) ns + (size_t) s] = acc > 0 ? (uint64_t) acc : 0;
        }
    }
    m->n_buffers = nb;
    m->n_steps = ns;
    free(delta);
    free(last);
    return m;
}

static void counter(struct exporter * x, int pid, int gi, int bi, uint64_t t, uint64_t bytes) {
    struct tg_trace_buffer b;
    if (!tg_trace_get_buffer(x->tr, gi, bi, &b)) return;
    char name[128];
    snprintf(name, sizeof(name), "buffer #%" PRIu64 " %s", b.uid, b.buft);
    begin_event(x, "C", pid, 0, t);
    fprintf(x->f, ", \"name\": ");
    tg_fx_json_str(x->f, name);
    fprintf(x->f, ", \"args\": {\"live bytes\": %" PRIu64 "}}", bytes);
    x->n_counters++;
}

// Per computation: what the previous node ended at, the split it was in.
struct compute_state {
    uint64_t begin_ns, prev_end;
    int      split;
    bool     seen;
};

static void export_copies(struct exporter * x, int gi, int pid, int split, uint64_t from, uint64_t to) {
    struct tg_trace_split sp;
    if (!tg_trace_get_split(x->tr, gi, split, &sp) || sp.n_inputs == 0) return;
    uint64_t total = 0;
    for (uint32_t k = 0; k < sp.n_inputs; k++) {
        struct tg_trace_split_input in;
        if (tg_trace_get_split_input(x->tr, gi, (int) (sp.first_input + k), &in)) total += in.bytes;
    }
    uint64_t gap = to > from ? to - from : 0, at = from, done = 0;
    for (uint32_t k = 0; k < sp.n_inputs; k++) {
        struct tg_trace_split_input in;
        if (!tg_trace_get_split_input(x->tr, gi, (int) (sp.first_input + k), &in)) continue;
        done += in.bytes;
        uint64_t end = from + (total ? (uint64_t) ((double) gap * (double) done / (double) total) : gap);
        char src[TG_TRACE_NAME], name[TG_TRACE_NAME + 16];
        tg_trace_tensor_name(x->tr, gi, in.tensor, src);
        snprintf(name, sizeof(name), "copy %s", src);
        slice(x, pid, tid_of_backend(sp.backend), at, end);
        struct tg_trace_graph g;
        tg_trace_get_graph(x->tr, gi, &g);
        fprintf(x->f, ", \"name\": ");
        tg_fx_json_str(x->f, name);
        fprintf(x->f, ", \"cat\": \"copy\", \"cname\": \"bad\", \"args\": {\"bytes\": %" PRIu64 ", \"from\": ", in.bytes);
        tg_fx_json_str(x->f, tg_trace_backend_name(x->tr, g.sched_id, in.from_backend));
        fprintf(x->f, ", \"to\": ");
        tg_fx_json_str(x->f, tg_trace_backend_name(x->tr, g.sched_id, sp.backend));
        fprintf(x->f, ", \"copy\": ");
        tg_fx_json_str(x->f, in.copy_name);
        fprintf(x->f, ", \"split\": %d, \"timing\": \"gap before the split, shared by bytes\"}}", split);
        x->n_copies++;
        at = end;
    }
}

static void export_eval(struct exporter * x, const struct tg_trace_eval * e, struct compute_state * cs) {
    struct tg_trace * tr = x->tr;
    int gi = tg_trace_find_graph(tr, e->graph_id);
    struct tg_trace_graph g = { 0 };
    struct tg_trace_tensor t;
    if (gi < 0 || !tg_trace_get_graph(tr, gi, &g) || !tg_trace_get_tensor(tr, gi, e->node, &t)) {
        memset(&t, 0, sizeof(t));
        snprintf(t.name, sizeof(t.name), "node %d", e->node);
        t.op = -1;
        g.sched_id = UINT32_MAX;
    }
    int pid = pid_of_sched(x, g.sched_id), tid = tid_of_backend(e->backend);
    bool timed = (e->flags & TG_TRACE_EVAL_TIME) && e->t_end_ns >= e->t_begin_ns && e->t_begin_ns >= x->t0;
    if (!cs->seen) { cs->seen = true; cs->split = -1; cs->prev_end = cs->begin_ns; }
    if (gi >= 0 && e->split >= 0 && e->split != cs->split) {
        if (timed) export_copies(x, gi, pid, e->split, cs->prev_end, e->t_begin_ns);
        cs->split = e->split;
    }
    uint64_t b = timed ? e->t_begin_ns : *track(x, pid, tid), en = timed ? e->t_end_ns : b;
    if (!timed && b < cs->prev_end) b = en = cs->prev_end;
    const char * op = t.op >= 0 ? tg_trace_op_name(tr, t.op) : "?";
    char opbuf[64];
    snprintf(opbuf, sizeof(opbuf), "%s", op);
    slice(x, pid, tid, b, en);
    fprintf(x->f, ", \"name\": ");
    tg_fx_json_str(x->f, t.name);
    fprintf(x->f, ", \"cat\": ");
    tg_fx_json_str(x->f, opbuf);
    fprintf(x->f, ", \"cname\": \"%s\", \"args\": {\"op\": ", op_colour(opbuf));
    tg_fx_json_str(x->f, opbuf);
    char shape[96];
    fprintf(x->f, ", \"type\": ");
    tg_fx_json_str(x->f, t.op >= 0 ? tg_trace_type_name(tr, t.type) : "?");
    fprintf(x->f, ", \"shape\": \"%s\", \"graph\": %u, \"node\": %d, \"compute\": %u, \"split\": %d, \"backend\": ",
            tg_trace_shape_str(t.ne, shape, sizeof(shape)), e->graph_id, e->node, e->compute_seq, e->split);
    tg_fx_json_str(x->f, tg_trace_backend_name(tr, g.sched_id, e->backend));
    fprintf(x->f, ", \"buffer\": \"#%" PRIu64 "@%" PRIu64 "\", \"bytes\": %" PRIu64, e->buffer_uid, e->offset, e->nbytes);
    if (e->flags & TG_TRACE_EVAL_HASH) fprintf(x->f, ", \"hash\": \"%016" PRIx64 "\"", e->hash);
    if (!timed) fprintf(x->f, ", \"untimed\": true");
    fprintf(x->f, "}}");
    x->n_slices++;
    x->n_untimed += !timed;
    if (en > cs->prev_end) cs->prev_end = en;
    // bytes live at this step, per compute buffer (only when they change)
    if (gi >= 0) {
        const struct graph_mem * m = graph_mem(x, gi);
        for (int bi = 0; m->live && bi < m->n_buffers && e->node < m->n_steps; bi++) {
            struct tg_trace_buffer buf;
            if (!tg_trace_get_buffer(tr, gi, bi, &buf) || buf.usage == TG_TRACE_USAGE_WEIGHTS) continue;
            uint64_t v = m->live[(size_t) bi * (size_t) m->n_steps + (size_t) e->node];
            uint64_t prev = e->node > 0 ? m->live[(size_t) bi * (size_t) m->n_steps + (size_t) e->node - 1] : UINT64_MAX;
            if (v != prev) counter(x, pid, gi, bi, b, v);
        }
    }
}

static void export_marker(struct exporter * x, const struct tg_trace_marker * mk) {
    static const char * const kinds[] = { "decode", "user", "phase" };
    begin_event(x, "i", 1, 0, mk->time_ns);
    fprintf(x->f, ", \"s\": \"g\", \"name\": ");
    char name[160];
    if (mk->kind == TG_TRACE_MARK_DECODE)
        snprintf(name, sizeof(name), "%s: %d token%s at pos %d", mk->text && mk->text[0] ? mk->text : "decode",
                 mk->n_tokens, mk->n_tokens == 1 ? "" : "s", mk->pos);
    else snprintf(name, sizeof(name), "%s", mk->text ? mk->text : "");
    tg_fx_json_str(x->f, name);
    fprintf(x->f, ", \"cat\": \"marker\", \"args\": {\"kind\": \"%s\", \"n_tokens\": %d, \"pos\": %d, \"seq\": %d, "
            "\"computations_before\": %u, \"tokens\": [", mk->kind < 3 ? kinds[mk->kind] : "?", mk->n_tokens, mk->pos,
            mk->seq_id, mk->compute_seq);
    x->n_markers++;
}

static void export_all(struct exporter * x) {
    struct tg_trace * tr = x->tr;
    fprintf(x->f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"source\": ");
    tg_fx_json_str(x->f, tg_trace_path(tr));
    struct tg_trace_run run;
    if (tg_trace_get_run(tr, &run)) {
        fprintf(x->f, ", \"command\": ");
        tg_fx_json_str(x->f, run.cmdline);
        fprintf(x->f, ", \"backends\": ");
        tg_fx_json_str(x->f, run.backends);
    }
    fprintf(x->f, "},\n\"traceEvents\": [");
    // track names
    for (int i = 0; i <= x->n_scheds; i++) {
        struct tg_trace_sched s = { 0 };
        char name[64];
        bool have = i < x->n_scheds && tg_trace_get_sched(tr, i, &s);
        if (i == x->n_scheds) snprintf(name, sizeof(name), "no scheduler");
        else snprintf(name, sizeof(name), "sched %u", s.sched_id);
        meta(x, "process_name", i + 1, 0, name, i + 1);
        meta(x, "thread_name", i + 1, 0, "computations", 0);
        for (int b = 0; have && b < s.n_backends && b < TG_TRACE_MAX_BACKENDS; b++)
            meta(x, "thread_name", i + 1, b + 1, s.backend[b], b + 1);
        meta(x, "thread_name", i + 1, N_TIDS - 1, "no backend", N_TIDS - 1);
    }
    // computations: begin times (for the first split's copies) and slices
    int nc = tg_trace_n_computes(tr), ne = tg_trace_n_evals(tr);
    uint32_t max_seq = 0;
    for (int i = 0; i < nc; i++) {
        struct tg_trace_compute c;
        if (tg_trace_get_compute(tr, i, &c) && c.compute_seq + 1 > max_seq && c.compute_seq < (1u << 26)) max_seq = c.compute_seq + 1;
    }
    for (int i = 0; i < ne; i++) {
        struct tg_trace_eval e;
        if (tg_trace_get_eval(tr, i, &e) && e.compute_seq + 1 > max_seq && e.compute_seq < (1u << 26)) max_seq = e.compute_seq + 1;
    }
    struct compute_state * cs = calloc(max_seq ? max_seq : 1, sizeof(*cs));
    if (!cs) return;
    for (int i = 0; i < nc; i++) {
        struct tg_trace_compute c;
        if (!tg_trace_get_compute(tr, i, &c) || c.compute_seq >= max_seq) continue;
        if (c.phase == TG_TRACE_BEGIN) { cs[c.compute_seq].begin_ns = c.time_ns; continue; }
        uint64_t b = cs[c.compute_seq].begin_ns ? cs[c.compute_seq].begin_ns : c.time_ns;
        int gi = tg_trace_find_graph(tr, c.graph_id);
        struct tg_trace_graph g = { .sched_id = UINT32_MAX };
        if (gi >= 0) tg_trace_get_graph(tr, gi, &g);
        int pid = pid_of_sched(x, g.sched_id);
        char name[64];
        snprintf(name, sizeof(name), "compute graph %u #%u", c.graph_id, c.compute_seq);
        slice(x, pid, 0, b, c.time_ns);
        fprintf(x->f, ", \"name\": \"%s\", \"cat\": \"compute\", \"args\": {\"graph\": %u, \"compute\": %u, \"status\": %d}}",
                name, c.graph_id, c.compute_seq, c.status);
        x->n_computes++;
    }
    for (int i = 0; i < ne; i++) {
        struct tg_trace_eval e;
        if (!tg_trace_get_eval(tr, i, &e)) continue;
        struct compute_state dummy = { 0 };
        export_eval(x, &e, e.compute_seq < max_seq ? &cs[e.compute_seq] : &dummy);
    }
    // the counters drop to zero after each computation of a graph with compute buffers
    for (int i = 0; i < nc; i++) {
        struct tg_trace_compute c;
        if (!tg_trace_get_compute(tr, i, &c) || c.phase != TG_TRACE_END) continue;
        int gi = tg_trace_find_graph(tr, c.graph_id);
        if (gi < 0) continue;
        const struct graph_mem * m = graph_mem(x, gi);
        struct tg_trace_graph g;
        tg_trace_get_graph(tr, gi, &g);
        for (int bi = 0; m->live && bi < m->n_buffers; bi++) {
            struct tg_trace_buffer buf;
            if (tg_trace_get_buffer(tr, gi, bi, &buf) && buf.usage != TG_TRACE_USAGE_WEIGHTS)
                counter(x, pid_of_sched(x, g.sched_id), gi, bi, c.time_ns, 0);
        }
    }
    free(cs);
    int nm = tg_trace_n_markers(tr);
    for (int i = 0; i < nm; i++) {
        struct tg_trace_marker mk;
        if (!tg_trace_get_marker(tr, i, &mk)) continue;
        export_marker(x, &mk);
        int32_t ids[64];
        int n = tg_trace_marker_tokens(tr, i, ids, 64);
        for (int k = 0; k < n && k < 64; k++) fprintf(x->f, "%s%d", k ? ", " : "", ids[k]);
        fprintf(x->f, "]}}");
    }
    fprintf(x->f, "\n]}\n");
}

int tg_fx_trace_export(int argc, char ** argv) {
    struct export_opts o = { .format = 0 };
    const char * pos[2];
    int n_pos = 0;
    if (tg_cli_parse_opts("trace export", export_opts_table, &o, argc - 1, argv + 1, pos, 2, &n_pos) != TG_CLI_OK)
        return TG_CLI_ERROR;
    if (n_pos != 1) return tg_cli_err("trace export: give one trace file (trace export FILE --format perfetto -o OUT)");
    struct tg_trace * tr = tg_fx_open(pos[0]);
    if (!tr) return TG_CLI_ERROR;
    if (tg_trace_n_evals(tr) == 0 && tg_trace_n_computes(tr) == 0) {
        tg_trace_close(tr);
        return tg_cli_err("trace export: '%s' holds no computations or evaluated nodes (record a run with TGDB_TRACE=FILE)",
                          pos[0]);
    }
    bool to_stdout = !o.out || !strcmp(o.out, "-");
    FILE * f = to_stdout ? stdout : fopen(o.out, "w");
    if (!f) { tg_trace_close(tr); return tg_cli_err("trace export: cannot write '%s'", o.out); }
    struct exporter x = { .tr = tr, .f = f, .n_scheds = tg_trace_n_scheds(tr) };
    struct tg_trace_run run;
    x.t0 = tg_trace_get_run(tr, &run) ? run.mono_start_ns : 0;
    // times before the run's start (clock oddities) would print as 0: start at the earliest time seen
    for (int i = 0; i < tg_trace_n_computes(tr); i++) {
        struct tg_trace_compute c;
        if (tg_trace_get_compute(tr, i, &c) && c.time_ns < x.t0) x.t0 = c.time_ns;
    }
    x.track_end = calloc((size_t) (x.n_scheds + 2) * N_TIDS, sizeof(uint64_t));
    x.mem = calloc((size_t) tg_trace_n_graphs(tr) + 1, sizeof(*x.mem));
    int rc = TG_CLI_OK;
    if (!x.track_end || !x.mem) rc = tg_cli_err("trace export: out of memory");
    else {
        for (size_t i = 0; i < (size_t) (x.n_scheds + 2) * N_TIDS; i++) x.track_end[i] = x.t0;
        export_all(&x);
    }
    if (!to_stdout && fclose(f) != 0 && rc == TG_CLI_OK) rc = tg_cli_err("trace export: error writing '%s'", o.out);
    if (x.mem)
        for (int gi = 0; gi < tg_trace_n_graphs(tr); gi++) free(x.mem[gi].live);
    free(x.mem);
    free(x.track_end);
    if (rc == TG_CLI_OK && !to_stdout) {
        if (o.json) {
            printf("{\"file\": ");
            tg_fx_json_str(stdout, pos[0]);
            printf(", \"output\": ");
            tg_fx_json_str(stdout, o.out);
            printf(", \"format\": \"chrome-trace-event-json\", \"events\": %ld, \"node_slices\": %ld, \"untimed_nodes\": %ld, "
                   "\"copy_slices\": %ld, \"computations\": %ld, \"counter_samples\": %ld, \"markers\": %ld}\n",
                   x.n_events, x.n_slices, x.n_untimed, x.n_copies, x.n_computes, x.n_counters, x.n_markers);
        } else {
            printf("wrote %s: %ld events: %ld node slices (%ld without times), %ld copies, %ld computations, "
                   "%ld counter samples, %ld markers\n", o.out, x.n_events, x.n_slices, x.n_untimed, x.n_copies,
                   x.n_computes, x.n_counters, x.n_markers);
            printf("open it in https://ui.perfetto.dev or chrome://tracing\n");
        }
    }
    tg_trace_close(tr);
    return rc;
}
