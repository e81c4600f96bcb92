// test_trace_contents.c - recorded contents read back: whole (as floats) and
// by byte range with bounded memory (zstd streamed, raw copied), equal to a
// full decode at every offset tried.
#include "check.h"
#include "tg/trace-read.h"
#include "tg/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    const char * path = "test_trace_contents.tgt";
    enum { N = 300000 };  // several zstd windows
    float * v = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) v[i] = (float) (i % 977) * 0.5f - (float) (i % 13);
    struct tg_trace_writer * w = tg_trace_writer_open(path);
    CHECK(w != NULL, "writer opened");
    for (int codec = 0; codec < 2; codec++) {
        struct tg_trace_contents c = {.graph_id = 1, .compute_seq = 0, .node = codec, .type = TG_TYPE_F32,
                                      .ne = {1000, N / 1000, 1, 1}, .raw_size = sizeof(float) * N};
        CHECK(tg_trace_write_contents(w, &c, v, codec ? 3 : 0) == TG_OK, "contents written (%s)", codec ? "zstd" : "raw");
    }
    CHECK(tg_trace_writer_close(w) == TG_OK, "writer closed");
    struct tg_trace * tr = tg_trace_open(path);
    CHECK(tr != NULL && tg_trace_n_contents(tr) == 2, "trace with 2 contents records");
    for (int i = 0; tr && i < 2; i++) {
        int64_t n = 0;
        float * all = tg_trace_contents_f32(tr, i, &n);
        CHECK(all && n == N && memcmp(all, v, sizeof(float) * N) == 0, "contents %d as floats: %lld values equal", i, (long long) n);
        const uint64_t offs[] = {0, 4, 131068, 131072, 400000, sizeof(float) * N - 8};
        for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
            float got[2048];
            size_t nb = offs[k] + sizeof(got) <= sizeof(float) * N ? sizeof(got) : sizeof(float) * N - offs[k];
            enum tg_status st = tg_trace_read_contents_range(tr, i, offs[k], got, nb);
            CHECK(st == TG_OK && memcmp(got, (const char *) v + offs[k], nb) == 0,
                  "contents %d: bytes [%llu, %llu) by range equal the full decode", i, (unsigned long long) offs[k],
                  (unsigned long long) (offs[k] + nb));
        }
        float x;
        CHECK(tg_trace_read_contents_range(tr, i, sizeof(float) * N, &x, 4) == TG_ERR_INVALID_ARG,
              "a range past the end is refused: %s", tg_last_error());
        free(all);
    }
    tg_trace_close(tr);
    remove(path);
    free(v);
    return tg_check_finish("test_trace_contents");
}
