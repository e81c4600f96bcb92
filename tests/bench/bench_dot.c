// bench_dot.c - time to draw a traced graph: building the DOT text from the
// trace and laying out + rendering SVG in-process with Graphviz, for the whole
// graph and the collapsed view. Target: a whole ~100M-model graph in < 5 s.
//   bench_dot TRACE [--graph G]
//   (a trace of the 100M preset: make-model --preset 100m --type q8_0 -o m.gguf;
//    tgdb generate -m m.gguf -p "Hello world" -n 1 --trace m.tgt)
#include "tg/dot-trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_dot TRACE [--graph G]\n"); return 1; }
    struct tg_dot_trace_options o = tg_dot_trace_default_options();
    if (argc > 3 && !strcmp(argv[2], "--graph")) o.graph = atoi(argv[3]);
    double t0 = now();
    struct tg_trace * tr = tg_trace_open(argv[1]);
    if (!tr) { fprintf(stderr, "bench_dot: %s\n", tg_last_error()); return 1; }
    double t_open = now() - t0;
    printf("%-12s %8s %8s %9s %12s %12s %10s\n", "view", "nodes", "edges", "clusters", "build ms", "render ms", "target");
    for (int collapse = 0; collapse < 2; collapse++) {
        o.collapse = collapse;
        t0 = now();
        struct tg_dot * d = tg_dot_from_trace(tr, &o);
        if (!d) { fprintf(stderr, "bench_dot: %s\n", tg_last_error()); return 1; }
        double t_build = now() - t0;
        t0 = now();
        if (tg_dot_render(d, "svg", "/tmp/bench_dot.svg") != TG_OK) { fprintf(stderr, "bench_dot: %s\n", tg_last_error()); return 1; }
        double t_render = now() - t0;
        printf("%-12s %8d %8d %9d %12.1f %12.1f %10s\n", collapse ? "collapsed" : "whole", tg_dot_n_nodes(d), tg_dot_n_edges(d),
               tg_dot_n_clusters(d), t_build * 1e3, t_render * 1e3, collapse ? "" : "< 5000 ms");
        tg_dot_free(d);
    }
    printf("(trace opened in %.1f ms)\n", t_open * 1e3);
    remove("/tmp/bench_dot.svg");
    tg_trace_close(tr);
    return 0;
}
