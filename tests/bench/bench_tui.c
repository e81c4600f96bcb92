// bench_tui.c - how fast the TUI opens and scrolls big traces. Writes a
// synthetic trace of N nodes (default 200000; the same generator as the
// screen tests: tests/tools/mktrace), then times, through the TUI's own data
// source (no terminal needed): opening it, fetching the first screen (60
// rows), and 2000 page jumps of 60 rows across the whole graph; prints the
// process's resident memory next to the file size.
//   bench_tui [--nodes N] [--trace FILE]   (FILE: an existing trace to measure)
#include "tg/tui-trace.h"
#include "tg/tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long rss_kib(void) {
    FILE * f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6)) kib = atol(line + 6);
    if (f) fclose(f);
    return kib;
}

int main(int argc, char ** argv) {
    int n_nodes = 200000;
    const char * path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc) n_nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc) path = argv[++i];
        else { fprintf(stderr, "usage: bench_tui [--nodes N] [--trace FILE]\n"); return 1; }
    }
    char tmp[] = "/tmp/bench-tui-XXXXXX";
    char made[256] = "";
    if (!path) {
        if (!mkdtemp(tmp)) { perror("mkdtemp"); return 1; }
        snprintf(made, sizeof(made), "%s/big.tgt", tmp);
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "%s/tests/mktrace %s --nodes %d --graphs 1", TG_BUILD_DIR, made, n_nodes);
        double t0 = now();
        if (system(cmd) != 0) { fprintf(stderr, "bench_tui: generating the trace failed (%s)\n", cmd); return 1; }
        printf("generated %s (%d nodes) in %.2f s\n", made, n_nodes, now() - t0);
        path = made;
    }
    struct stat st;
    if (stat(path, &st) != 0) { perror(path); return 1; }
    long rss0 = rss_kib();
    double t0 = now();
    struct tg_tui_source src;
    if (!tg_tui_source_trace(path, &src)) { fprintf(stderr, "bench_tui: %s\n", tg_last_error()); return 1; }
    double t_open = now() - t0;
    int n = src.ops->n_nodes(src.ctx, 0);
    struct tg_tui_node nd;
    t0 = now();
    for (int i = 0; i < 60 && i < n; i++) src.ops->node(src.ctx, 0, i, &nd);
    double t_first = now() - t0;
    t0 = now();
    long fetched = 0;
    unsigned seed = 1;
    for (int page = 0; page < 2000; page++) {
        seed = seed * 1103515245u + 12345u;
        int top = n > 60 ? (int) (seed % (unsigned) (n - 60)) : 0;
        for (int i = top; i < top + 60 && i < n; i++) { src.ops->node(src.ctx, 0, i, &nd); fetched++; }
    }
    double t_scroll = now() - t0;
    long rss1 = rss_kib();
    printf("\n%-34s %12s %12s\n", "measure", "value", "target");
    printf("%-34s %12d %12s\n", "nodes in graph", n, "");
    printf("%-34s %10.1f MB %12s\n", "trace file size", st.st_size / 1e6, "");
    printf("%-34s %10.1f ms %12s\n", "open (index, no node decoded)", t_open * 1e3, "< 1000 ms");
    printf("%-34s %10.2f ms %12s\n", "open + first screen (60 rows)", (t_open + t_first) * 1e3, n > 100000 ? "< 1000 ms" : "< 500 ms");
    printf("%-34s %10.3f ms %12s\n", "page jump (60 rows), mean", t_scroll * 1e3 / 2000, "< 16 ms");
    printf("%-34s %10.1f us %12s\n", "one row fetched", t_scroll * 1e6 / (double) fetched, "");
    printf("%-34s %10.1f MB %12s\n", "resident memory added", (rss1 - rss0) / 1024.0, "bounded");
    src.ops->close(src.ctx);
    if (made[0]) { remove(made); rmdir(tmp); }
    return 0;
}
