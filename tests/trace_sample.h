// trace_sample.h - writes a small trace holding every record type, for the
// trace tests (round trip, damage corpus) and the fuzz seed corpus.
#ifndef TG_TEST_TRACE_SAMPLE_H
#define TG_TEST_TRACE_SAMPLE_H

#include "tg/trace.h"

#include <stdio.h>
#include <string.h>

static const char * const sample_ops[] = { "NONE", "ADD", "MUL_MAT", "VIEW" };
static const char * const sample_types[] = { "f32", "f16", NULL, NULL, NULL, NULL, NULL, NULL, "q8_0" };

// Graph 7 on scheduler 1: leafs w (weights) and x (input), nodes
// mm = MUL_MAT(w, x), out = ADD(mm, x), v = VIEW(out).
static void sample_tensors(struct tg_trace_tensor t[5]) {
    memset(t, 0, 5 * sizeof(*t));
    const char * names[5] = { "mm-0", "out-0", "v-0", "w.weight", "x" };
    for (int i = 0; i < 5; i++) {
        snprintf(t[i].name, sizeof(t[i].name), "%s", names[i]);
        t[i].uid = 0x1000 + (uint64_t) i * 0x100;
        for (int d = 0; d < 4; d++) t[i].ne[d] = 1;
        t[i].ne[0] = 8; t[i].ne[1] = 2;
        t[i].nb[0] = 4; t[i].nb[1] = 32; t[i].nb[2] = 64; t[i].nb[3] = 64;
        for (int k = 0; k < TG_TRACE_MAX_SRC; k++) t[i].src[k] = TG_TRACE_NONE;
        t[i].view_src = TG_TRACE_NONE;
    }
    t[0].op = 2; t[0].src[0] = 3; t[0].src[1] = 4; t[0].op_params[0] = 42;
    t[1].op = 1; t[1].src[0] = 0; t[1].src[1] = 4; t[1].flags = 2;
    t[2].op = 3; t[2].src[0] = 1; t[2].view_src = 1; t[2].view_offs = 32; t[2].ne[1] = 1;
    t[3].ne[0] = 8; t[3].ne[1] = 8; t[3].nb[1] = 32; t[3].flags = 4;
    t[4].flags = 1;
}

// RUN (with the cause table) and SCHED 1, the start of every sample trace.
static void sample_header(struct tg_trace_writer * w) {
    struct tg_trace_run run = { 1700000000000000000ull, 1000, 4242, 2, "0.1.0", "prog --flag", "CPU,BLAS", "note", 0 };
    static const char * const causes[] = { "none", "user", "preallocated", "weight_buffer" };
    tg_trace_write_run_causes(w, &run, sample_ops, 4, sample_types, 9, causes, 4);
    struct tg_trace_sched s = { 1, 2, { "BLAS", "CPU" }, { "CPU", "CPU" }, 0 };
    tg_trace_write_sched(w, &s);
}

// Placement, buffers and allocation of graph 7's five tensors.
static void sample_placement(struct tg_trace_placement pl[5]) {
    const struct tg_trace_placement v[5] = {
        { 0, 3, "weight w.weight is in buffer CPU (usage weights)" }, { 1, 8, "supports op" },
        { 1, 10, NULL }, { 1, 2, "preallocated" }, { 1, 11, "" } };
    memcpy(pl, v, sizeof(v));
}

static void sample_alloc(struct tg_trace_buffer b[2], struct tg_trace_alloc al[5]) {
    const struct tg_trace_buffer vb[2] = { { 0xB1, 1, TG_TRACE_USAGE_WEIGHTS, 256, "CPU" },
                                           { 0xB2, 1, TG_TRACE_USAGE_COMPUTE, 128, "CPU" } };
    const struct tg_trace_alloc va[5] = {
        { 1, TG_TRACE_NONE, 0, 64, 0, 1, TG_TRACE_ALLOC_ALLOCATED },
        { 1, 0, 0, 64, 1, 2, TG_TRACE_ALLOC_ALLOCATED | TG_TRACE_ALLOC_INPLACE },
        { 1, TG_TRACE_NONE, 32, 32, 2, 2, TG_TRACE_ALLOC_VIEW },
        { 0, TG_TRACE_NONE, 0, 256, -1, 0, TG_TRACE_ALLOC_EXTERNAL },
        { 1, TG_TRACE_NONE, 64, 64, -1, 1, TG_TRACE_ALLOC_ALLOCATED } };
    memcpy(b, vb, sizeof(vb));
    memcpy(al, va, sizeof(va));
}

// RUN, SCHED, then graph 7's GRAPH and PLACEMENT records (t, pl: what was written).
static void sample_graph7(struct tg_trace_writer * w, struct tg_trace_tensor t[5], struct tg_trace_placement pl[5]) {
    sample_header(w);
    sample_tensors(t);
    struct tg_trace_graph g = { 7, 1, 3, 2, 0, 0, 0, 0 };
    tg_trace_write_graph(w, &g, t);
    sample_placement(pl);
    tg_trace_write_placement(w, 7, pl, 5);
}

// Writes the sample to path. Returns the number of records written (before
// index/footer) or -1. With `close_it` false the writer is abandoned (no index).
static int write_sample_trace(const char * path, bool close_it) {
    struct tg_trace_writer * w = tg_trace_writer_open(path);
    if (!w) return -1;
    struct tg_trace_tensor t[5];
    struct tg_trace_placement pl[5];
    sample_graph7(w, t, pl);
    struct tg_trace_split sp[2] = { { 0, 0, 1, 0, 1 }, { 1, 1, 3, 1, 1 } };
    struct tg_trace_split_input in[2] = { { 4, 1, 64, "BLAS#x#0" }, { 0, 0, 64, "" } };
    tg_trace_write_splits(w, 7, sp, 2, in, 2);
    struct tg_trace_buffer b[2];
    struct tg_trace_alloc al[5];
    sample_alloc(b, al);
    tg_trace_write_alloc(w, 7, 1, b, 2, al, 5);
    int32_t ids[3] = { 1, 15043, 3186 };
    struct tg_trace_marker m = { TG_TRACE_MARK_DECODE, 0, 1500, 3, 0, 0, 3, "decode", 0 };
    tg_trace_write_marker(w, &m, ids);
    struct tg_trace_compute c0 = { 7, 0, TG_TRACE_BEGIN, 0, 2000, 0 };
    tg_trace_write_compute(w, &c0);
    float data[16];
    for (int i = 0; i < 16; i++) data[i] = (float) i - 3.5f;
    for (int n = 0; n < 3; n++) {
        struct tg_trace_eval e = { 7, 0, n, TG_TRACE_EVAL_TIME | TG_TRACE_EVAL_HASH | TG_TRACE_EVAL_SUMMARY,
                                   2100 + (uint64_t) n * 10, 2105 + (uint64_t) n * 10, 0xABC0 + (uint64_t) n,
                                   t[n].uid, n == 2 ? t[1].uid : t[n].uid, 0xB2, 0, 64, n == 0 ? 0 : 1, n == 0 ? 0 : 1,
                                   { -3.5, 11.5, 4.0, 6.5, 0, 0, 0, 16 }, 0 };
        if (n == 1) { e.flags |= TG_TRACE_EVAL_CONTENTS; e.sum.n_nan = 1; }
        tg_trace_write_eval(w, &e);
        if (n == 1) {
            struct tg_trace_contents cc = { 7, 0, 1, 0, 0, { 8, 2, 1, 1 }, sizeof(data), 0, 0, 0 };
            tg_trace_write_contents(w, &cc, data, 3);
        }
    }
    struct tg_trace_compute c1 = { 7, 0, TG_TRACE_END, 0, 2200, 0 };
    tg_trace_write_compute(w, &c1);
    struct tg_trace_host h = { TG_TRACE_HOST_READ, 1, 2300, t[1].uid, t[1].uid, 0xB2, 0, 64, 0x1234, 7, 1, "out-0", 0 };
    tg_trace_write_host(w, &h);
    struct tg_trace_event ev = { TG_TRACE_EV_UNALLOCATED_USE, TG_TRACE_ERROR, 2400, 7, 4, t[4].uid, 0, 0, 64, -1,
                                 "x", "tensor 'x' has no buffer: allocate its context", 0 };
    tg_trace_write_event(w, &ev);
    const uint8_t unknown[5] = { 1, 2, 3, 4, 5 };
    tg_trace_write_raw(w, 0x1234, unknown, sizeof(unknown));
    int n = (int) tg_trace_writer_n_records(w);
    if (close_it) {
        if (tg_trace_writer_close(w) != TG_OK) return -1;
    } else {
        tg_trace_writer_abandon(w);
    }
    return n;
}

// Writes graph 7 (full records, as in the sample) and then graph 8 as deltas
// against it: GRAPH_DELTA (tensor 2's shape and tensor 4's name change),
// PLACEMENT_DELTA (entry 1), ALLOC_DELTA (entry 2), and two deltas a reader
// must drop: graph 9 against a graph that does not exist, and a placement of
// graph 8 against graph 8 itself (no full PLACEMENT there). Returns the
// number of records before index/footer, or -1.
static int write_delta_trace(const char * path) {
    struct tg_trace_writer * w = tg_trace_writer_open(path);
    if (!w) return -1;
    struct tg_trace_tensor t[5];
    struct tg_trace_placement pl[5];
    sample_graph7(w, t, pl);
    struct tg_trace_buffer b[2];
    struct tg_trace_alloc al[5];
    sample_alloc(b, al);
    tg_trace_write_alloc(w, 7, 1, b, 2, al, 5);
    // graph 8: the same but for tensors 2 and 4
    t[2].ne[0] = 4; t[2].uid = 0x9000;
    snprintf(t[4].name, sizeof(t[4].name), "x-renamed");
    const int32_t gch[2] = { 2, 4 };
    struct tg_trace_graph g8 = { 8, 1, 3, 2, 0, 0, 0, 0 };
    tg_trace_write_graph_delta(w, &g8, 7, t, gch, 2);
    pl[1].cause = 9; pl[1].text = "changed text";
    const int32_t pch[1] = { 1 };
    tg_trace_write_placement_delta(w, 8, 7, pl, 5, pch, 1);
    al[2].offset = 48;
    const int32_t ach[1] = { 2 };
    tg_trace_write_alloc_delta(w, 8, 1, 7, b, 2, al, 5, ach, 1);
    struct tg_trace_graph g9 = { 9, 1, 3, 2, 0, 0, 0, 0 };
    tg_trace_write_graph_delta(w, &g9, 99, t, gch, 2);   // no graph 99: dropped
    tg_trace_write_placement_delta(w, 8, 8, pl, 5, pch, 1);   // graph 8 has no full PLACEMENT: dropped
    int n = (int) tg_trace_writer_n_records(w);
    return tg_trace_writer_close(w) == TG_OK ? n : -1;
}

#endif
