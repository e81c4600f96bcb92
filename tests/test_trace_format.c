// test_trace_format.c - writer/reader round trip of every record type, the
// index path and the linear-scan path, unknown records skipped.
#include "check.h"
#include "trace_sample.h"
#include "trace/trace-impl.h"
#include "tg/trace-read.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void check_sample(struct tg_trace * tr, const char * how) {
    struct tg_trace_run run;
    CHECK(tg_trace_get_run(tr, &run) && run.pid == 4242 && run.n_threads == 2, "%s: run pid/threads", how);
    CHECK(!strcmp(run.cmdline, "prog --flag") && !strcmp(run.backends, "CPU,BLAS") && !strcmp(run.note, "note"),
          "%s: run strings", how);
    CHECK(!strcmp(tg_trace_op_name(tr, 2), "MUL_MAT") && !strcmp(tg_trace_op_name(tr, 99), "OP#99"), "%s: op names", how);
    CHECK(!strcmp(tg_trace_type_name(tr, 8), "q8_0") && !strcmp(tg_trace_type_name(tr, 2), "type#2"), "%s: type names", how);
    CHECK(tg_trace_op_from_name(tr, "ADD") == 1, "%s: op from name", how);
    CHECK(!strcmp(tg_trace_cause_name(tr, 3), "weight_buffer") && !strcmp(tg_trace_cause_name(tr, 9), "cause#9"),
          "%s: cause names", how);
    struct tg_trace_sched s;
    CHECK(tg_trace_n_scheds(tr) == 1 && tg_trace_get_sched(tr, 0, &s) && s.n_backends == 2 &&
          !strcmp(s.backend[0], "BLAS"), "%s: sched", how);
    CHECK(!strcmp(tg_trace_backend_name(tr, 1, 1), "CPU") && !strcmp(tg_trace_backend_name(tr, 1, 5), "?"),
          "%s: backend names", how);

    CHECK(tg_trace_n_graphs(tr) == 1, "%s: one graph", how);
    int gi = tg_trace_find_graph(tr, 7);
    struct tg_trace_graph g;
    CHECK(gi == 0 && tg_trace_get_graph(tr, gi, &g) && g.n_nodes == 3 && g.n_leafs == 2 && g.sched_id == 1 &&
          g.structure_hash != 0, "%s: graph 7 header", how);
    CHECK(tg_trace_find_graph(tr, 8) == -1, "%s: missing graph id", how);
    struct tg_trace_tensor want[5], t;
    sample_tensors(want);
    bool all = true;
    for (int i = 0; i < 5; i++) {
        all = all && tg_trace_get_tensor(tr, gi, i, &t) && memcmp(&t, &want[i], sizeof(t)) == 0;
    }
    CHECK(all, "%s: all 5 tensors round-trip bit-exactly", how);
    CHECK(!tg_trace_get_tensor(tr, gi, 5, &t) && !tg_trace_get_tensor(tr, 3, 0, &t), "%s: out of range tensor", how);
    CHECK(tg_trace_find_tensor(tr, gi, "x") == 4 && tg_trace_find_tensor(tr, gi, "nope") == -1, "%s: find tensor", how);
    int ti = -1;
    CHECK(tg_trace_find_uid(tr, 0x1100, &ti) == gi && ti == 1, "%s: find uid", how);

    struct tg_trace_placement pl;
    CHECK(tg_trace_get_placement(tr, gi, 0, &pl) && pl.backend == 0 && pl.cause == 3 &&
          strstr(pl.text, "usage weights"), "%s: placement 0", how);
    CHECK(tg_trace_get_placement(tr, gi, 2, &pl) && pl.cause == 10 && !strcmp(pl.text, ""), "%s: placement no text", how);
    struct tg_trace_split sp;
    struct tg_trace_split_input in;
    CHECK(tg_trace_n_splits(tr, gi) == 2 && tg_trace_get_split(tr, gi, 1, &sp) && sp.node_begin == 1 &&
          sp.node_end == 3 && sp.n_inputs == 1, "%s: splits", how);
    CHECK(tg_trace_n_split_inputs(tr, gi) == 2 && tg_trace_get_split_input(tr, gi, 0, &in) && in.bytes == 64 &&
          !strcmp(in.copy_name, "BLAS#x#0"), "%s: split inputs", how);
    CHECK(tg_trace_split_of_node(tr, gi, 2) == 1 && tg_trace_split_of_node(tr, gi, 4) == -1, "%s: split of node", how);
    struct tg_trace_buffer b;
    struct tg_trace_alloc al;
    CHECK(tg_trace_n_buffers(tr, gi) == 2 && tg_trace_get_buffer(tr, gi, 1, &b) && b.uid == 0xB2 &&
          b.usage == TG_TRACE_USAGE_COMPUTE && !strcmp(b.buft, "CPU"), "%s: buffers", how);
    CHECK(tg_trace_get_alloc(tr, gi, 1, &al) && al.buffer == 1 && al.inplace_parent == 0 &&
          (al.flags & TG_TRACE_ALLOC_INPLACE) && al.first_step == 1, "%s: alloc entry", how);

    CHECK(tg_trace_n_computes(tr) == 2, "%s: compute begin/end", how);
    CHECK(tg_trace_n_evals(tr) == 3, "%s: 3 evals", how);
    struct tg_trace_eval e;
    CHECK(tg_trace_get_eval(tr, 1, &e) && e.node == 1 && e.hash == 0xABC1 && e.sum.n_nan == 1 &&
          e.sum.max == 11.5 && e.sum.n_elem == 16 && e.t_end_ns == 2115, "%s: eval fields", how);
    CHECK(tg_trace_find_eval(tr, 7, 2, 0) == 2 && tg_trace_find_eval(tr, 7, 2, UINT32_MAX) == 2 &&
          tg_trace_find_eval(tr, 7, 3, 0) == -1 && tg_trace_find_eval(tr, 6, 0, 0) == -1, "%s: find eval", how);

    int ci = tg_trace_find_contents(tr, 7, 1, UINT32_MAX);
    struct tg_trace_contents c;
    CHECK(ci == 0 && tg_trace_get_contents(tr, ci, &c) && c.raw_size == 64 && c.ne[0] == 8, "%s: contents header", how);
    float got[16] = {0};
    CHECK(tg_trace_read_contents(tr, ci, got, sizeof(got)) == TG_OK && got[0] == -3.5f && got[15] == 11.5f,
          "%s: contents decoded (codec %u)", how, c.codec);
    CHECK(tg_trace_read_contents(tr, ci, got, 8) == TG_ERR_INVALID_ARG, "%s: contents buffer too small", how);

    struct tg_trace_host h;
    CHECK(tg_trace_n_hosts(tr) == 1 && tg_trace_get_host(tr, 0, &h) && h.kind == TG_TRACE_HOST_READ &&
          !strcmp(h.name, "out-0") && h.hash == 0x1234, "%s: host read", how);
    struct tg_trace_marker m;
    int32_t ids[8];
    CHECK(tg_trace_n_markers(tr) == 1 && tg_trace_get_marker(tr, 0, &m) && m.n_tokens == 3 &&
          !strcmp(m.text, "decode"), "%s: marker", how);
    CHECK(tg_trace_marker_tokens(tr, 0, ids, 8) == 3 && ids[1] == 15043, "%s: marker tokens", how);
    CHECK(tg_trace_marker_before(tr, e.record) == 0 && tg_trace_marker_before(tr, 0) == -1, "%s: marker before", how);
    struct tg_trace_event ev;
    CHECK(tg_trace_n_events(tr) == 1 && tg_trace_get_event(tr, 0, &ev) && ev.kind == TG_TRACE_EV_UNALLOCATED_USE &&
          strstr(ev.message, "no buffer") && !strcmp(ev.name, "x"), "%s: event", how);
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    CHECK(st.n_unknown == 1 && st.n_invalid == 0, "%s: one unknown record skipped, none invalid", how);
}

// Reads a FIFO to its end into memory (the other side of a trace written with write(2)).
struct fifo_read { const char * path; uint8_t * data; size_t n; };

static void * fifo_reader(void * arg) {
    struct fifo_read * fr = arg;
    int fd = open(fr->path, O_RDONLY);
    if (fd < 0) return NULL;
    size_t cap = 1 << 16;
    fr->data = malloc(cap);
    for (ssize_t k; fr->data && (k = read(fd, fr->data + fr->n, cap - fr->n)) > 0; ) {
        fr->n += (size_t) k;
        if (fr->n == cap) fr->data = realloc(fr->data, cap *= 2);
    }
    close(fd);
    return NULL;
}

// The reserved space a stopped writer leaves: zeros are "not closed", an
// unfinished record before them is "cut", anything else there is damage.
static void check_reserved_tail(const char * path) {
    int n = write_sample_trace(path, false);
    struct stat sb = {0};
    stat(path, &sb);
    CHECK(n == 16 && sb.st_size >= (1 << 20), "a stopped writer leaves its reserved space (%lld bytes)",
          (long long) sb.st_size);
    struct tg_trace * tr = tg_trace_open(path);
    struct tg_trace_status st;
    if (tr) { tg_trace_get_status(tr, &st); tg_trace_close(tr); }
    CHECK(tr && st.stop == TG_TRACE_STOP_NONE && st.n_records == 16 && strstr(st.message, "reserved space"),
          "zeros after the last record: not closed, nothing lost (%s)", tr ? st.message : tg_last_error());
    uint64_t end = tr ? st.valid_end : 0;
    // an unfinished record: type and length written, no sync word yet, part of the payload
    FILE * f = fopen(path, "r+b");
    uint8_t head[16] = { 0, 0, 0, 0, 11, 0, 0, 0, 40, 0, 0, 0, 7, 7, 7, 7 };
    fseek(f, (long) end, SEEK_SET);
    fwrite(head, 1, sizeof(head), f);
    fclose(f);
    tr = tg_trace_open(path);
    if (tr) { tg_trace_get_status(tr, &st); tg_trace_close(tr); }
    CHECK(tr && st.stop == TG_TRACE_STOP_CUT && st.n_records == 16 && st.stop_offset == end,
          "an unfinished record before the zeros: cut at offset %llu (%s)", (unsigned long long) end,
          tr ? st.message : tg_last_error());
    // a stray byte further on: damage, not a stopped writer
    f = fopen(path, "r+b");
    fseek(f, (long) end + 4096, SEEK_SET);
    fputc(0x5A, f);
    fclose(f);
    tr = tg_trace_open(path);
    if (tr) { tg_trace_get_status(tr, &st); tg_trace_close(tr); }
    CHECK(tr && st.stop == TG_TRACE_STOP_BAD_SYNC && st.n_records == 16 && strstr(st.message, "damaged"),
          "a nonzero byte in the reserved space: damaged (%s)", tr ? st.message : tg_last_error());
    // a clean close gives the reserved space back
    write_sample_trace(path, true);
    sb.st_size = -1;
    stat(path, &sb);
    CHECK(sb.st_size > 0 && sb.st_size < 8192, "a closed trace ends at its footer (%lld bytes)", (long long) sb.st_size);
}

// A file that cannot be mapped (a pipe) is written with write(2).
static void check_fifo(const char * dir) {
    char fifo[512];
    snprintf(fifo, sizeof(fifo), "%s/test_trace_format.%d.fifo", dir, (int) getpid());
    unlink(fifo);
    if (mkfifo(fifo, 0600) != 0) { CHECK(0, "mkfifo %s", fifo); return; }
    struct fifo_read fr = { fifo, NULL, 0 };
    pthread_t th;
    pthread_create(&th, NULL, fifo_reader, &fr);
    int n = write_sample_trace(fifo, true);
    pthread_join(th, NULL);
    unlink(fifo);
    struct tg_trace * tr = fr.data ? tg_trace_open_mem(fr.data, fr.n) : NULL;
    struct tg_trace_status st;
    if (tr) tg_trace_get_status(tr, &st);
    CHECK(n == 16 && tr && st.complete && st.indexed && st.n_records == 18, "trace written into a pipe: complete (%zu bytes)",
          fr.n);
    if (tr) { check_sample(tr, "pipe"); tg_trace_close(tr); }
    free(fr.data);
}

// Deltas read back as the full records they stand for; bad ones are dropped.
static void check_deltas(const char * path) {
    int n = write_delta_trace(path);
    struct tg_trace * tr = tg_trace_open(path);
    CHECK(n == 10 && tr != NULL, "delta trace written (%d records) and opened", n);
    if (!tr) return;
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    CHECK(st.complete && st.n_invalid == 2 && tg_trace_n_graphs(tr) == 2,
          "two bad deltas dropped as invalid (%u), graphs 7 and 8 remain (%d)", st.n_invalid, tg_trace_n_graphs(tr));
    int g7 = tg_trace_find_graph(tr, 7), g8 = tg_trace_find_graph(tr, 8);
    struct tg_trace_tensor base[5], want[5];
    sample_tensors(base);
    sample_tensors(want);
    want[2].ne[0] = 4; want[2].uid = 0x9000;
    snprintf(want[4].name, sizeof(want[4].name), "x-renamed");
    int same7 = 0, same8 = 0;
    for (int i = 0; i < 5; i++) {
        struct tg_trace_tensor a, b;
        if (tg_trace_get_tensor(tr, g7, i, &a) && !strcmp(a.name, base[i].name) && a.uid == base[i].uid && a.ne[0] == base[i].ne[0]) same7++;
        if (tg_trace_get_tensor(tr, g8, i, &b) && !strcmp(b.name, want[i].name) && b.uid == want[i].uid &&
            b.ne[0] == want[i].ne[0] && b.src[0] == want[i].src[0] && b.op == want[i].op && b.view_offs == want[i].view_offs) same8++;
    }
    CHECK(same7 == 5 && same8 == 5, "graph 8 reads as graph 7 with its two changed tensors (%d/5, %d/5)", same7, same8);
    struct tg_trace_graph gg;
    CHECK(tg_trace_get_graph(tr, g8, &gg) && gg.n_nodes == 3 && gg.n_leafs == 2 && tg_trace_find_tensor(tr, g8, "x-renamed") == 4,
          "graph 8 header and name lookup");
    struct tg_trace_placement p1, p0 = { 0, 0, "" }, q1;
    bool pok = tg_trace_get_placement(tr, g8, 1, &p1) && p1.cause == 9 && !strcmp(p1.text, "changed text") &&
               tg_trace_get_placement(tr, g8, 0, &p0) && p0.cause == 3 && strstr(p0.text, "w.weight") &&
               tg_trace_get_placement(tr, g7, 1, &q1) && q1.cause == 8 && !strcmp(q1.text, "supports op");
    CHECK(pok, "placement delta: entry 1 changed, the others from graph 7 ('%s')", p0.text);
    struct tg_trace_alloc a2, a1, b2;
    struct tg_trace_buffer buf;
    CHECK(tg_trace_get_alloc(tr, g8, 2, &a2) && a2.offset == 48 && a2.buffer == 1 &&
          tg_trace_get_alloc(tr, g8, 1, &a1) && a1.inplace_parent == 0 && a1.last_step == 2 &&
          tg_trace_get_alloc(tr, g7, 2, &b2) && b2.offset == 32 &&
          tg_trace_n_buffers(tr, g8) == 2 && tg_trace_get_buffer(tr, g8, 1, &buf) && buf.uid == 0xB2,
          "alloc delta: entry 2 moved to 48, the others and the buffers as in graph 7");
    CHECK(tg_trace_n_alloc_records(tr) == 2, "the alloc delta is listed with the alloc records");
    int ti = -1;
    CHECK(tg_trace_find_uid(tr, 0x9000, &ti) == g8 && ti == 2, "uid lookup finds the delta's changed tensor");
    tg_trace_close(tr);
    // the writer refuses a change list that is not increasing, or out of range
    struct tg_trace_writer * w = tg_trace_writer_open(path);
    struct tg_trace_tensor t[5];
    sample_tensors(t);
    struct tg_trace_graph g = { .graph_id = 8, .sched_id = 1, .n_nodes = 3, .n_leafs = 2 };
    const int32_t bad1[2] = { 3, 1 }, bad2[1] = { 5 };
    CHECK(tg_trace_write_graph_delta(w, &g, 7, t, bad1, 2) == TG_ERR_INVALID_ARG &&
          tg_trace_write_graph_delta(w, &g, 7, t, bad2, 1) == TG_ERR_INVALID_ARG &&
          tg_trace_write_graph_delta(w, &g, 0, t, bad2, 0) == TG_ERR_INVALID_ARG, "bad change lists refused: %s", tg_last_error());
    tg_trace_writer_close(w);
}

// A full disk (here: a file size limit): the writer stops with a message
// naming the file and the reason, later calls repeat it, and the file reads
// back with every record written before. Runs in a child (the limit is per
// process). limit below 1 MiB: no room to reserve ahead, write(2) is used.
static void check_full_disk(const char * path, long limit) {
    unlink(path);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = { (rlim_t) limit, (rlim_t) limit };
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
        struct tg_trace_writer * w = tg_trace_writer_open(path);
        if (!w) _exit(11);
        struct tg_trace_eval e = { .graph_id = 1, .flags = TG_TRACE_EVAL_TIME, .t_begin_ns = 1, .t_end_ns = 2 };
        enum tg_status st = TG_OK;
        int n = 0;
        for (; n < 100000 && st == TG_OK; n++) { e.node = n; st = tg_trace_write_eval(w, &e); }
        bool named = strstr(tg_last_error(), path) && strstr(tg_last_error(), "too large");
        e.node = -1;
        bool sticky = tg_trace_write_eval(w, &e) == TG_ERR_IO && strstr(tg_last_error(), "the trace stopped there");
        enum tg_status cst = tg_trace_writer_close(w);
        _exit(st == TG_ERR_IO && named && sticky && cst == TG_ERR_IO ? 0 : 12);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "file size limit %ld: the writer stops with the reason (file too large), later calls repeat it (child %d)",
          limit, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    struct tg_trace * tr = tg_trace_open(path);
    struct tg_trace_status st;
    if (tr) tg_trace_get_status(tr, &st);
    int n_evals = tr ? tg_trace_n_evals(tr) : 0;
    CHECK(tr && st.truncated && n_evals > 1000 && n_evals == (int) st.n_records,
          "file size limit %ld: the trace keeps its %d evals (%s)", limit, n_evals, tr ? st.message : tg_last_error());
    if (tr) tg_trace_close(tr);
    unlink(path);
}

// GRADS (1.3): links read back both ways; a record naming a tensor the graph
// does not have is dropped as invalid.
static void check_grads(const char * path) {
    struct tg_trace_writer * w = tg_trace_writer_open(path);
    struct tg_trace_tensor t[5];
    struct tg_trace_placement pl[5];
    if (!w) { CHECK(0, "grads: writer"); return; }
    sample_graph7(w, t, pl);
    const int32_t good[2][2] = { { 2, 0 }, { 1, 3 } }, bad[1][2] = { { 1, 99 } };
    tg_trace_write_grads(w, 7, good, 2);
    tg_trace_write_grads(w, 7, bad, 1);
    CHECK(tg_trace_writer_close(w) == TG_OK, "grads: trace written");
    struct tg_trace * tr = tg_trace_open(path);
    if (!CHECK(tr != NULL, "grads: opened")) return;
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    const int gi = tg_trace_find_graph(tr, 7);
    CHECK(st.n_invalid == 1 && tg_trace_n_grads(tr, gi) == 2, "grads: the bad GRADS record dropped (%u invalid), 2 links kept",
          st.n_invalid);
    CHECK(tg_trace_grad(tr, gi, 0) == 2 && tg_trace_grad_of(tr, gi, 2) == 0 && tg_trace_grad(tr, gi, 3) == 1 &&
          tg_trace_grad_of(tr, gi, 1) == 3 && tg_trace_grad(tr, gi, 4) == -1 && tg_trace_grad_of(tr, gi, 4) == -1,
          "grads: gradient <-> forward tensor both ways, -1 for none");
    tg_trace_close(tr);
}

// Another thread populating the file ahead of the records (the recorder's
// hashing thread, idle) while records are written: every record reads back
// whole, in order, and nothing is written past the space reserved.
struct pop_arg { struct tg_trace_writer * w; atomic_int stop; atomic_int calls; };
static void * populate_loop(void * p) {
    struct pop_arg * a = p;
    while (!atomic_load(&a->stop)) { tg_trace_writer_populate_ahead(a->w, 4u << 20, 64u << 10); atomic_fetch_add(&a->calls, 1); }
    return NULL;
}
static void check_populate_ahead(const char * path) {
    struct tg_trace_writer * w = tg_trace_writer_open(path);
    struct pop_arg a = { .w = w };
    atomic_init(&a.stop, 0);
    atomic_init(&a.calls, 0);
    pthread_t th;
    bool started = w && pthread_create(&th, NULL, populate_loop, &a) == 0;
    while (started && atomic_load(&a.calls) == 0) sched_yield();   // running before the writes (a loaded machine
                                                                   // may otherwise start it after they end)
    char text[64];
    const int n = 20000;   // ~1.5 MiB of markers: the map grows under the populating thread
    for (int i = 0; i < n && w; i++) {
        snprintf(text, sizeof(text), "marker %d", i);
        struct tg_trace_marker m = { .kind = TG_TRACE_MARK_USER, .time_ns = (uint64_t) i, .text = text };
        tg_trace_write_marker(w, &m, NULL);
    }
    if (started) { atomic_store(&a.stop, 1); pthread_join(th, NULL); }
    tg_trace_writer_populate_ahead(w, 4u << 20, 64u << 10);
    uint64_t size = tg_trace_writer_size(w);
    // the file grew past its first reservation and its pages were faulted in: that time is counted
    CHECK(w && tg_trace_writer_grow_ns(w) > 0 && tg_trace_writer_grow_ns(NULL) == 0,
          "time growing the mapped file counted (%.3f ms)", w ? (double) tg_trace_writer_grow_ns(w) / 1e6 : 0.0);
    CHECK(w && tg_trace_writer_close(w) == TG_OK && started && atomic_load(&a.calls) > 0, "records written while another thread "
          "populates ahead (%d calls)", atomic_load(&a.calls));
    struct tg_trace * tr = tg_trace_open(path);
    struct tg_trace_status st = { 0 };
    if (tr) tg_trace_get_status(tr, &st);
    bool all = tr && tg_trace_n_markers(tr) == n;
    for (int i = 0; all && i < n; i += 997) {
        struct tg_trace_marker m;
        snprintf(text, sizeof(text), "marker %d", i);
        all = tg_trace_get_marker(tr, i, &m) && m.time_ns == (uint64_t) i && !strcmp(m.text, text);
    }
    CHECK(all && st.complete && st.indexed && size > (1u << 20), "populated ahead: %d markers read back whole, in order, "
          "complete (%s)", n, tr ? st.message : tg_last_error());
    tg_trace_close(tr);
}

int main(void) {
    char path[256];
    snprintf(path, sizeof(path), "test_trace_format.%d.tgt", (int) getpid());

    int n = write_sample_trace(path, true);
    CHECK(n == 16, "writer wrote 16 records (got %d)", n);
    struct tg_trace * tr = tg_trace_open(path);
    CHECK(tr != NULL, "open closed trace: %s", tr ? "ok" : tg_last_error());
    if (tr) {
        struct tg_trace_status st;
        tg_trace_get_status(tr, &st);
        CHECK(st.complete && st.indexed && !st.truncated && st.n_records == 18, "closed trace is complete and indexed (%s)",
              st.message);
        check_sample(tr, "indexed");
        tg_trace_close(tr);
    }

    n = write_sample_trace(path, false);
    tr = tg_trace_open(path);
    CHECK(tr != NULL, "open abandoned trace");
    if (tr) {
        struct tg_trace_status st;
        tg_trace_get_status(tr, &st);
        CHECK(!st.complete && !st.indexed && st.truncated && st.stop == TG_TRACE_STOP_NONE && st.n_records == 16,
              "abandoned trace: scanned, not closed, clean end (%s)", st.message);
        CHECK(strstr(st.message, "not closed") != NULL, "message says the trace was not closed");
        check_sample(tr, "scanned");
        tg_trace_close(tr);
    }

    // a batch: records reach the file together at batch_end, with the right offsets
    struct tg_trace_writer * bw = tg_trace_writer_open(path);
    struct tg_trace_marker bm = { .kind = TG_TRACE_MARK_USER, .time_ns = 1, .text = "one" };
    tg_trace_writer_batch_begin(bw);
    tg_trace_write_marker(bw, &bm, NULL);
    bm.text = "two";
    tg_trace_write_marker(bw, &bm, NULL);
    uint64_t size_in_batch = tg_trace_writer_size(bw);
    CHECK(tg_trace_writer_batch_end(bw) == TG_OK && tg_trace_writer_n_records(bw) == 2, "batch of 2 records written");
    bm.text = "three";
    tg_trace_write_marker(bw, &bm, NULL);
    tg_trace_writer_abandon(bw);
    tr = tg_trace_open(path);
    struct tg_trace_marker m3;
    CHECK(tr && tg_trace_n_markers(tr) == 3 && tg_trace_get_marker(tr, 2, &m3) && !strcmp(m3.text, "three") &&
          size_in_batch > 32, "batched and unbatched records read back in order");
    tg_trace_close(tr);
    bw = tg_trace_writer_open(path);
    tg_trace_writer_batch_begin(bw);
    tg_trace_write_marker(bw, &bm, NULL);
    CHECK(tg_trace_writer_close(bw) == TG_OK, "close flushes an open batch");
    tr = tg_trace_open(path);
    struct tg_trace_status bst;
    tg_trace_get_status(tr, &bst);
    CHECK(tr && bst.complete && tg_trace_n_markers(tr) == 1, "closed with an open batch: complete, 1 marker");
    tg_trace_close(tr);

    check_reserved_tail(path);
    check_populate_ahead(path);
    check_deltas(path);
    check_grads(path);
    check_full_disk(path, 300 << 10);   // write(2): no room to reserve 1 MiB ahead
    check_full_disk(path, 3 << 20);     // mapped, until the reservation cannot grow
    check_fifo(".");

    // errors: missing file, not a trace, empty file
    CHECK(tg_trace_open("/nonexistent/x.tgt") == NULL && tg_last_status() == TG_ERR_IO, "missing file: %s", tg_last_error());
    FILE * f = fopen(path, "wb");
    fputs("hello, this is not a trace file at all....", f);
    fclose(f);
    CHECK(tg_trace_open(path) == NULL && tg_last_status() == TG_ERR_FORMAT, "not a trace: %s", tg_last_error());
    f = fopen(path, "wb");
    fclose(f);
    CHECK(tg_trace_open(path) == NULL && tg_last_status() == TG_ERR_FORMAT, "empty file: %s", tg_last_error());
    unlink(path);

    // glob patterns
    CHECK(tg_trace_glob("blk.3.*", "blk.3.attn_q") && !tg_trace_glob("blk.3.*", "blk.30x"), "glob *");
    CHECK(tg_trace_glob("attn_norm-?", "attn_norm-3") && !tg_trace_glob("attn_norm-?", "attn_norm-13"), "glob ?");
    CHECK(tg_trace_pattern_match("x,op=MUL_*", "kq-0", "MUL_MAT") && !tg_trace_pattern_match("x,op=ADD", "kq-0", "MUL_MAT"),
          "pattern list with op=");
    CHECK(tg_trace_pattern_match("*-3", "ffn_out-3", "ADD") && !tg_trace_pattern_match("", "a", "ADD") &&
          !tg_trace_pattern_match(NULL, "a", "ADD"), "pattern list edge cases");
    // the one node filter (CLI, shell, TUI)
    CHECK(tg_trace_filter_match("type=Q4_*,op=add", "kq-0", "ADD", "f32") &&
          tg_trace_filter_match("type=Q4_*", "w", "MUL_MAT", "q4_0") &&
          !tg_trace_filter_match("type=Q4_*", "w", "MUL_MAT", "f32") && !tg_trace_filter_match("type=f32", "w", "ADD", NULL),
          "filter: type= and op= case-insensitive alternatives");
    CHECK(tg_trace_filter_match("name=kq-*", "kq-0", "ADD", "f32") && !tg_trace_filter_match("name=KQ-*", "kq-0", "ADD", "f32") &&
          tg_trace_filter_match(NULL, "a", "ADD", "f32") && tg_trace_filter_match("", "a", "ADD", "f32"),
          "filter: name= exact glob; no filter matches all");
    char why[128] = "";
    CHECK(tg_trace_filter_check("blk.*,op=ADD,type=f32,name=x", why, sizeof(why)) &&
          !tg_trace_filter_check("shape=3", why, sizeof(why)) && strstr(why, "shape=") &&
          !tg_trace_filter_check("a,,b", why, sizeof(why)) && !tg_trace_filter_check("a,", why, sizeof(why)),
          "filter_check: unknown keys and empty items rejected");
    return tg_check_finish("test_trace_format");
}
