// mktrace.c - writes a deterministic synthetic trace (llama-shaped names,
// two backends, splits, allocation with reuse, evals with fixed times and
// summaries, one NaN node, contents for a few nodes, decode markers). Used
// by the TUI screen tests (fixed content -> fixed screens) and the open /
// scroll benchmark (millions of records).
//   mktrace OUT.tgt [--nodes N] [--graphs G] [--nan] [--variant K] [--data all|summary|none]
//           [--graph-base B] [--tokens K] [--utf8] [--escapes]
// --data: what each eval carries (all: hash, summary, a few contents; summary:
// summaries only; none: neither, like --trace-hash none); --graph-base: graph
// ids start at B (not 0); --tokens K: the prompt's second token id is K;
// --utf8: node 1's name is multi-byte UTF-8 cut to the name field's size;
// --escapes: node 2's name holds a terminal escape sequence (ESC[31m), a
// newline, a C1 control and a character cut in half.
#include "tg/core.h"
#include "tg/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * layer_ops[][2] = {
    {"attn_norm", "RMS_NORM"}, {"Qcur", "MUL_MAT"}, {"Kcur", "MUL_MAT"}, {"Vcur", "MUL_MAT"},
    {"kq", "MUL_MAT"}, {"kq_soft_max", "SOFT_MAX"}, {"kqv_out", "MUL_MAT"}, {"attn_out", "MUL_MAT"},
    {"ffn_inp", "ADD"}, {"ffn_norm", "RMS_NORM"}, {"ffn_gate", "MUL_MAT"}, {"ffn_up", "MUL_MAT"},
    {"ffn_swiglu", "GLU"}, {"ffn_out", "MUL_MAT"}, {"l_out", "ADD"},
};
#define PER_LAYER ((int) (sizeof(layer_ops) / sizeof(layer_ops[0])))

static int op_id(const char * name) {
    for (int i = 0; i < TG_OP_COUNT; i++) if (!strcmp(tg_op_name((enum tg_op) i), name)) return i;
    return 0;
}

static void usage(FILE * f) {
    fprintf(f, "usage: mktrace OUT [--nodes N>=4] [--graphs G] [--variant K] [--graph-base B] [--tokens T]\n"
               "               [--data all|summary|none] [--nan] [--weird] [--utf8] [--escapes]\n"
               "writes a synthetic trace to OUT (a test helper)\n");
}

int main(int argc, char ** argv) {
    const char * out = NULL;
    int n_nodes = 64, n_graphs = 2, variant = 0;
    bool nan = false, weird = false, utf8 = false, escapes = false;
    int data_mode = 2, graph_base = 0, token2 = 9038;   // data_mode: 2 all, 1 summary, 0 none
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc) n_nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--graphs") && i + 1 < argc) n_graphs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--variant") && i + 1 < argc) variant = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--nan")) nan = true;
        else if (!strcmp(argv[i], "--weird")) weird = true;  // a node name with a control byte and invalid UTF-8
        else if (!strcmp(argv[i], "--utf8")) utf8 = true;
        else if (!strcmp(argv[i], "--escapes")) escapes = true;
        else if (!strcmp(argv[i], "--graph-base") && i + 1 < argc) graph_base = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) token2 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) {
            const char * m = argv[++i];
            data_mode = !strcmp(m, "all") ? 2 : !strcmp(m, "summary") ? 1 : !strcmp(m, "none") ? 0 : -1;
            if (data_mode < 0) { fprintf(stderr, "mktrace: --data all|summary|none\n"); return 1; }
        }
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else if (argv[i][0] == '-') { fprintf(stderr, "mktrace: unknown option '%s' (or its value missing)\n", argv[i]); usage(stderr); return 1; }
        else if (!out) out = argv[i];
        else { fprintf(stderr, "mktrace: unexpected argument '%s'\n", argv[i]); return 1; }
    }
    if (!out || n_nodes < 4 || n_graphs < 1) { usage(stderr); return 1; }
    struct tg_trace_writer * w = tg_trace_writer_open(out);
    if (!w) { fprintf(stderr, "mktrace: %s\n", tg_last_error()); return 1; }
    const char * op_names[TG_OP_COUNT], * type_names[TG_TYPE_COUNT];
    for (int i = 0; i < TG_OP_COUNT; i++) op_names[i] = tg_op_name((enum tg_op) i);
    for (int i = 0; i < TG_TYPE_COUNT; i++) type_names[i] = tg_type_traits((enum tg_type) i) ? tg_type_name((enum tg_type) i) : "";
    struct tg_trace_run run = {.time_unix_ns = 1700000000ull * 1000000000ull, .pid = 1, .n_threads = 2,
                               .engine_version = "synthetic", .cmdline = "mktrace", .backends = "CPU,BLAS", .note = ""};
    tg_trace_write_run(w, &run, op_names, TG_OP_COUNT, type_names, TG_TYPE_COUNT);
    struct tg_trace_sched sc = {.sched_id = 1, .n_backends = 2, .backend = {"BLAS", "CPU"}, .buft = {"CPU", "CPU"}};
    tg_trace_write_sched(w, &sc);
    int n_leafs = 2, nt = n_nodes + n_leafs;
    struct tg_trace_tensor * t = calloc((size_t) nt, sizeof(*t));
    struct tg_trace_placement * pl = calloc((size_t) nt, sizeof(*pl));
    struct tg_trace_alloc * al = calloc((size_t) nt, sizeof(*al));
    float * data = malloc(sizeof(float) * 64 * 8);
    if (!t || !pl || !al || !data) return 1;
    uint64_t clock = 1000;
    for (int g = 0; g < n_graphs; g++) {
        int n_tok = g == 0 ? 8 : 1;
        for (int i = 0; i < nt; i++) {
            struct tg_trace_tensor * x = &t[i];
            memset(x, 0, sizeof(*x));
            for (int k = 0; k < 6; k++) x->src[k] = TG_TRACE_NONE;
            x->view_src = TG_TRACE_NONE;
            x->uid = 0x1000 + (uint64_t) i * 64;
            x->type = TG_TYPE_F32;
            x->ne[0] = 64; x->ne[1] = n_tok; x->ne[2] = 1; x->ne[3] = 1;
            if (i >= n_nodes) {  // leafs
                snprintf(x->name, sizeof(x->name), i == n_nodes ? "token_embd.weight" : "inp_tokens");
                x->op = 0;
                if (i == n_nodes + 1) { x->type = TG_TYPE_I32; x->ne[0] = n_tok; x->ne[1] = 1; }
                else x->ne[1] = 32000;
            } else if (i == 0) {
                snprintf(x->name, sizeof(x->name), "inp_embd");
                x->op = op_id("GET_ROWS");
                x->src[0] = n_nodes; x->src[1] = n_nodes + 1;
            } else {
                int k = (i - 1) % PER_LAYER, layer = (i - 1) / PER_LAYER;
                snprintf(x->name, sizeof(x->name), "%s-%d", layer_ops[k][0], layer);
                if (variant == 1 && i == n_nodes / 2) snprintf(x->name, sizeof(x->name), "inserted-%d", i);
                if (weird && i == 1) snprintf(x->name, sizeof(x->name), "bad\x01name\xff\xfe-0");
                if (escapes && i == 2) snprintf(x->name, sizeof(x->name), "\x1b[31mred\nline\xc2\x9bx\xe2\x82-0");
                if (utf8 && i == 1) {   // "é" repeated past the field: the last one is cut in half
                    size_t q = 0;
                    while (q + 2 < sizeof(x->name)) { x->name[q++] = (char) 0xc3; x->name[q++] = (char) 0xa9; }
                    if (q + 1 < sizeof(x->name)) x->name[q++] = (char) 0xc3;
                    x->name[q] = '\0';
                }
                x->op = op_id(layer_ops[k][1]);
                x->src[0] = i - 1;
                if (x->op == op_id("MUL_MAT")) x->src[1] = n_nodes;  // weight leaf (shape kept simple)
            }
            x->nb[0] = x->type == TG_TYPE_I32 ? 4 : 4;
            x->nb[1] = x->nb[0] * (uint64_t) x->ne[0];
            x->nb[2] = x->nb[1] * (uint64_t) x->ne[1];
            x->nb[3] = x->nb[2];
            bool blas = i < n_nodes && x->op == op_id("MUL_MAT") && n_tok > 1;
            pl[i].backend = blas ? 0 : 1;
            pl[i].text = i >= n_nodes ? "weight in CPU buffer (usage weights)" : blas ? "upgrade: BLAS supports MUL_MAT with 8 columns" : "source inp_embd on CPU";
            pl[i].cause = blas ? 3 : 1;
            al[i] = (struct tg_trace_alloc){.buffer = i < n_nodes ? 0 : 1, .inplace_parent = TG_TRACE_NONE,
                .offset = i < n_nodes ? (uint64_t) (i % 4) * 2048 : 0, .size = (uint64_t) x->ne[0] * (uint64_t) x->ne[1] * 4,
                .first_step = i < n_nodes ? i : -1, .last_step = i < n_nodes ? (i + 1 < n_nodes ? i + 1 : i) : -1,
                .flags = i < n_nodes ? TG_TRACE_ALLOC_ALLOCATED : TG_TRACE_ALLOC_EXTERNAL};
            if (i < n_nodes && x->op == op_id("ADD") && i > 0) { al[i].inplace_parent = i - 1; al[i].flags |= TG_TRACE_ALLOC_INPLACE; al[i].offset = al[i - 1].offset; }
        }
        // the runtime marks a decode before it builds and plans its graph
        int32_t ids[8] = {1, token2, 2501, 263, 931, 29892, 727, 471};
        struct tg_trace_marker m = {.kind = TG_TRACE_MARK_DECODE, .time_ns = clock, .n_tokens = n_tok,
                                    .pos = g == 0 ? 0 : 7 + g, .n_ids = (uint32_t) n_tok, .text = "decode"};
        tg_trace_write_marker(w, &m, g == 0 ? ids : ids + 1);
        struct tg_trace_graph gr = {.graph_id = (uint32_t) (g + graph_base), .sched_id = 1, .n_nodes = n_nodes, .n_leafs = n_leafs};
        tg_trace_write_graph(w, &gr, t);
        tg_trace_write_placement(w, (uint32_t) (g + graph_base), pl, nt);
        // splits: runs of equal backends
        struct tg_trace_split sp[64];
        struct tg_trace_split_input in[64];
        int ns = 0, ni = 0;
        for (int i = 0; i < n_nodes && ns < 64; ) {
            int j = i;
            while (j < n_nodes && pl[j].backend == pl[i].backend) j++;
            sp[ns] = (struct tg_trace_split){.backend = pl[i].backend, .node_begin = i, .node_end = j, .first_input = (uint32_t) ni, .n_inputs = 0};
            if (i > 0 && ni < 64) {
                in[ni] = (struct tg_trace_split_input){.tensor = i - 1, .from_backend = pl[i - 1].backend, .bytes = al[i - 1].size};
                snprintf(in[ni].copy_name, sizeof(in[ni].copy_name), "%.50s#copy", t[i - 1].name);
                ni++;
                sp[ns].n_inputs = 1;
            }
            ns++;
            i = j;
        }
        tg_trace_write_splits(w, (uint32_t) (g + graph_base), sp, ns, in, ni);
        struct tg_trace_buffer bufs[2] = {{.uid = 0xb0, .backend = 1, .usage = TG_TRACE_USAGE_COMPUTE, .size = 8192, .buft = "CPU"},
                                          {.uid = 0xb1, .backend = 1, .usage = TG_TRACE_USAGE_WEIGHTS, .size = 8192000, .buft = "CPU"}};
        tg_trace_write_alloc(w, (uint32_t) (g + graph_base), 1, bufs, 2, al, nt);
        struct tg_trace_compute c = {.graph_id = (uint32_t) (g + graph_base), .compute_seq = (uint32_t) (g + graph_base), .phase = TG_TRACE_BEGIN, .time_ns = clock};
        tg_trace_write_compute(w, &c);
        for (int i = 0; i < n_nodes; i++) {
            int64_t n = t[i].ne[0] * t[i].ne[1];
            for (int64_t k = 0; k < n; k++) data[k] = (float) sin((double) (k + 1) * (i + 1) * 0.01 + g) * (1.0f + (variant == 2 && i >= n_nodes / 2 ? 0.5f : 0.0f));
            if (nan && g == 0 && i == n_nodes / 2) data[3] = NAN;
            int64_t ne[4] = {t[i].ne[0], t[i].ne[1], 1, 1};
            size_t nb[4] = {4, 4 * (size_t) ne[0], 4 * (size_t) (ne[0] * ne[1]), 4 * (size_t) (ne[0] * ne[1])};
            struct tg_trace_eval e = {.graph_id = (uint32_t) (g + graph_base), .compute_seq = (uint32_t) (g + graph_base), .node = i,
                .flags = TG_TRACE_EVAL_TIME | TG_TRACE_EVAL_HASH | TG_TRACE_EVAL_SUMMARY,
                .t_begin_ns = clock, .t_end_ns = clock + 1000 + (uint64_t) (i % 7) * 250,
                .uid = t[i].uid, .root_uid = t[i].uid, .buffer_uid = 0xb0, .offset = al[i].offset,
                .nbytes = al[i].size, .backend = pl[i].backend, .split = -1};
            e.hash = tg_trace_hash_data(data, TG_TYPE_F32, ne, nb);
            tg_trace_summarize_data(data, TG_TYPE_F32, ne, nb, &e.sum);
            bool dump = data_mode == 2 && (i < 3 || (nan && i == n_nodes / 2));
            if (data_mode < 2) e.flags &= ~(uint32_t) TG_TRACE_EVAL_HASH;
            if (data_mode < 1) e.flags &= ~(uint32_t) TG_TRACE_EVAL_SUMMARY;
            if (dump) e.flags |= TG_TRACE_EVAL_CONTENTS;
            tg_trace_write_eval(w, &e);
            if (dump) {
                struct tg_trace_contents ct = {.graph_id = (uint32_t) (g + graph_base), .compute_seq = (uint32_t) (g + graph_base), .node = i,
                    .type = TG_TYPE_F32, .ne = {ne[0], ne[1], 1, 1}, .raw_size = (uint64_t) n * 4};
                tg_trace_write_contents(w, &ct, data, 1);
            }
            clock += 2000;
        }
        c.phase = TG_TRACE_END;
        c.time_ns = clock;
        tg_trace_write_compute(w, &c);
    }
    enum tg_status st = tg_trace_writer_close(w);
    free(t); free(pl); free(al); free(data);
    if (st != TG_OK) { fprintf(stderr, "mktrace: %s\n", tg_last_error()); return 1; }
    return 0;
}
