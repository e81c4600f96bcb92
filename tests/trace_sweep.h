// trace_sweep.h - calls every reader accessor over every record of an open
// trace (for the damage test and the fuzz harness: must never crash).
#ifndef TG_TEST_TRACE_SWEEP_H
#define TG_TEST_TRACE_SWEEP_H

#include "tg/trace-read.h"
#include "tg/trace-check.h"

#include <stdlib.h>
#include <string.h>

// Returns a checksum-ish count so the compiler keeps the calls.
static long trace_sweep(struct tg_trace * tr) {
    unsigned long acc = 0;   // wraps: only keeps the calls alive
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    acc += st.n_records;
    struct tg_trace_run run;
    if (tg_trace_get_run(tr, &run)) acc += (long) run.pid + (long) strlen(run.cmdline);
    for (int i = -1; i < 40; i++) acc += (long) strlen(tg_trace_op_name(tr, i)) + (long) strlen(tg_trace_type_name(tr, i));
    struct tg_trace_sched s;
    for (int i = 0; i <= tg_trace_n_scheds(tr); i++) if (tg_trace_get_sched(tr, i, &s)) acc += s.n_backends;
    for (int gi = -1; gi <= tg_trace_n_graphs(tr); gi++) {
        struct tg_trace_graph g;
        if (!tg_trace_get_graph(tr, gi, &g)) continue;
        acc += (long) strlen(tg_trace_backend_name(tr, g.sched_id, 0));
        for (int ti = -1; ti <= g.n_nodes + g.n_leafs; ti++) {
            struct tg_trace_tensor t;
            struct tg_trace_placement p;
            struct tg_trace_alloc a;
            char name[TG_TRACE_NAME];
            if (tg_trace_get_tensor(tr, gi, ti, &t)) acc += (long) t.op + (long) t.src[0];
            if (tg_trace_get_placement(tr, gi, ti, &p)) acc += (long) strlen(p.text);
            if (tg_trace_get_alloc(tr, gi, ti, &a)) acc += a.buffer;
            acc += (long) strlen(tg_trace_tensor_name(tr, gi, ti, name));
            acc += tg_trace_split_of_node(tr, gi, ti);
            acc += tg_trace_grad(tr, gi, ti) + tg_trace_grad_of(tr, gi, ti);
        }
        for (int k = -1; k <= tg_trace_n_grads(tr, gi); k++) {
            int gg = 0, of = 0;
            if (tg_trace_get_grad_link(tr, gi, k, &gg, &of)) acc += gg + of;
        }
        struct tg_trace_split sp;
        struct tg_trace_split_input in;
        struct tg_trace_buffer b;
        for (int i = -1; i <= tg_trace_n_splits(tr, gi); i++) if (tg_trace_get_split(tr, gi, i, &sp)) acc += sp.n_inputs;
        for (int i = -1; i <= tg_trace_n_split_inputs(tr, gi); i++) if (tg_trace_get_split_input(tr, gi, i, &in)) acc += in.tensor;
        for (int i = -1; i <= tg_trace_n_buffers(tr, gi); i++) if (tg_trace_get_buffer(tr, gi, i, &b)) acc += (long) b.size;
        acc += tg_trace_find_tensor(tr, gi, "x");
    }
    int ti;
    acc += tg_trace_find_uid(tr, 0x1100, &ti);
    struct tg_trace_compute c;
    for (int i = 0; i <= tg_trace_n_computes(tr); i++) if (tg_trace_get_compute(tr, i, &c)) acc += (long) c.phase;
    struct tg_trace_eval e;
    for (int i = 0; i <= tg_trace_n_evals(tr); i++) {
        if (!tg_trace_get_eval(tr, i, &e)) continue;
        acc += tg_trace_find_eval(tr, e.graph_id, e.node, e.compute_seq) + tg_trace_marker_before(tr, e.record);
    }
    struct tg_trace_contents ct;
    for (int i = 0; i <= tg_trace_n_contents(tr); i++) {
        if (!tg_trace_get_contents(tr, i, &ct)) continue;
        acc += tg_trace_find_contents(tr, ct.graph_id, ct.node, UINT32_MAX);
        if (ct.raw_size <= (1u << 20)) {
            void * buf = malloc(ct.raw_size ? (size_t) ct.raw_size : 1);
            if (buf) acc += tg_trace_read_contents(tr, i, buf, (size_t) ct.raw_size);
            free(buf);
        }
    }
    struct tg_trace_host h;
    for (int i = 0; i <= tg_trace_n_hosts(tr); i++) if (tg_trace_get_host(tr, i, &h)) acc += (long) h.kind;
    struct tg_trace_marker m;
    int32_t ids[16];
    for (int i = 0; i <= tg_trace_n_markers(tr); i++)
        if (tg_trace_get_marker(tr, i, &m)) acc += (long) strlen(m.text) + tg_trace_marker_tokens(tr, i, ids, 16);
    struct tg_trace_event ev;
    for (int i = 0; i <= tg_trace_n_events(tr); i++) if (tg_trace_get_event(tr, i, &ev)) acc += (long) strlen(ev.message);
    for (uint32_t o = 0; o <= st.n_records; o++) {
        uint32_t type, len;
        const uint8_t * p;
        uint64_t off;
        if (tg_trace_get_record(tr, o, &type, &p, &len, &off)) acc += type + (len ? p[len - 1] : 0);
    }
    struct tg_trace_report rep;
    if (tg_trace_check(tr, &rep) == TG_OK) {
        acc += rep.n_problems;
        tg_trace_report_free(&rep);
    }
    return (long) (acc & 0x7FFFFFFF);
}

#endif
