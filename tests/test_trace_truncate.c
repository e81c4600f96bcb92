// test_trace_truncate.c - readers keep the version of a file they opened: a
// trace or GGUF model truncated (or rewritten) under an open handle must not
// crash the reader (it used to die with SIGBUS: the file was mmapped), and
// every record, contents and tensor still reads back as it was at open time.
// Re-opening the truncated file gives a clean error or a truncated status.
#include "check.h"
#include "trace_sample.h"
#include "trace_sweep.h"

#include "tg/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long file_size(const char * path) {
    FILE * f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

// Sum of every byte of every record (what a reader shows, roughly).
static unsigned long record_sum(const struct tg_trace * tr) {
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    unsigned long acc = 0;
    for (uint32_t o = 0; o < st.n_records; o++) {
        uint32_t type, len;
        const uint8_t * p;
        uint64_t off;
        if (!tg_trace_get_record(tr, o, &type, &p, &len, &off)) continue;
        acc = acc * 31 + type;
        for (uint32_t k = 0; k < len; k++) acc = acc * 131 + p[k];
    }
    return acc;
}

static void trace_under_truncation(const char * path) {
    int n = write_sample_trace(path, true);
    CHECK(n > 0, "sample trace written");
    long size = file_size(path);
    CHECK(size > 100, "sample trace size %ld", size);
    struct tg_trace * ref = tg_trace_open(path);
    CHECK(ref != NULL, "open: %s", tg_last_error());
    if (!ref) return;
    unsigned long want_sum = record_sum(ref);
    long want_sweep = trace_sweep(ref);
    tg_trace_close(ref);

    const long cuts[] = { 0, 20, 100, size / 2, size - 1 };
    for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
        CHECK(write_sample_trace(path, true) == n, "rewrite sample");
        struct tg_trace * tr = tg_trace_open(path);
        CHECK(tr != NULL, "open before cut %ld: %s", cuts[c], tg_last_error());
        if (!tr) continue;
        CHECK(truncate(path, cuts[c]) == 0, "truncate to %ld", cuts[c]);
        // every accessor over every record, after the file shrank under us
        CHECK(record_sum(tr) == want_sum, "records unchanged after truncation to %ld", cuts[c]);
        CHECK(trace_sweep(tr) == want_sweep, "sweep unchanged after truncation to %ld", cuts[c]);
        struct tg_trace_status st;
        tg_trace_get_status(tr, &st);
        CHECK(st.complete && (long) st.file_size == size, "status still that of the opened version (cut %ld)", cuts[c]);
        tg_trace_close(tr);
        // reopening sees the cut file: a clean error or a truncated trace
        struct tg_trace * again = tg_trace_open(path);
        if (again) {
            tg_trace_get_status(again, &st);
            CHECK(!st.complete, "reopened cut trace (%ld) is not complete", cuts[c]);
            trace_sweep(again);
            tg_trace_close(again);
        } else {
            CHECK(strstr(tg_last_error(), path) != NULL, "reopen error names the file: %s", tg_last_error());
        }
    }

    // replaced by another file (new inode) while open: the reader keeps the old one
    CHECK(write_sample_trace(path, true) == n, "rewrite sample");
    struct tg_trace * tr = tg_trace_open(path);
    CHECK(tr != NULL, "open: %s", tg_last_error());
    if (tr) {
        char tmp[600];
        snprintf(tmp, sizeof(tmp), "%s.new", path);
        FILE * f = fopen(tmp, "wb");
        CHECK(f && fputs("not a trace", f) >= 0, "write replacement");
        if (f) fclose(f);
        CHECK(rename(tmp, path) == 0, "rename over the trace");
        CHECK(record_sum(tr) == want_sum, "records unchanged after replacement");
        tg_trace_close(tr);
    }
    unlink(path);
}

static unsigned long tensor_sum(const struct tg_gguf * g) {
    unsigned long acc = 0;
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        const uint8_t * p = tg_gguf_tensor_data(g, i);
        const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, i);
        if (!p || !t) return 0;
        for (size_t k = 0; k < t->size; k += 61) acc = acc * 131 + p[k];
        acc = acc * 131 + p[t->size - 1];
    }
    return acc;
}

static bool copy_file(const char * from, const char * to) {
    FILE * a = fopen(from, "rb");
    FILE * b = fopen(to, "wb");
    bool ok = a && b;
    char buf[1 << 16];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof(buf), a)) > 0) ok = fwrite(buf, 1, n, b) == n;
    if (a) fclose(a);
    if (b && fclose(b) != 0) ok = false;
    return ok;
}

static void gguf_under_truncation(const char * path) {
    CHECK(copy_file(TG_TEST_DATA "/tiny-f32.gguf", path), "copy model");
    struct tg_gguf * g = tg_gguf_open(path);
    CHECK(g != NULL, "gguf open: %s", tg_last_error());
    if (!g) return;
    CHECK(tg_gguf_n_tensors(g) > 0, "model has tensors");
    unsigned long want = tensor_sum(g);
    CHECK(want != 0, "tensor data readable");
    const long cuts[] = { 100, 0 };
    for (size_t c = 0; c < 2; c++) {
        CHECK(truncate(path, cuts[c]) == 0, "truncate model to %ld", cuts[c]);
        CHECK(tensor_sum(g) == want, "tensor data unchanged after truncation to %ld", cuts[c]);
        CHECK(tg_gguf_n_kv(g) > 0 && tg_gguf_key(g, 0) != NULL, "metadata still readable");
    }
    tg_gguf_close(g);
    struct tg_gguf * again = tg_gguf_open(path);
    CHECK(again == NULL && strstr(tg_last_error(), "empty"), "reopening the emptied model fails cleanly: %s",
          tg_last_error());
    tg_gguf_close(again);
    unlink(path);
}

int main(void) {
    (void) write_delta_trace;   // shared header: unused here
    char path[512];
    snprintf(path, sizeof(path), "trunc-%d.tgtrace", (int) getpid());
    trace_under_truncation(path);
    snprintf(path, sizeof(path), "trunc-%d.gguf", (int) getpid());
    gguf_under_truncation(path);
    return tg_check_finish("test_trace_truncate");
}
