// logits_tsv.h - the reference runtime's logits.tsv rows (model, prompt id,
// text, prompt ids, greedy ids) and the relative L2 error, shared by the
// runtime tests (test_llama.c: round 1, test_llama_r2.c: round 2).
#ifndef TG_TEST_LOGITS_TSV_H
#define TG_TEST_LOGITS_TSV_H

#include "check.h"
#include "tg/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOGITS_MAX_IDS 256

struct row {
    char model[64], pid[8];
    int32_t ids[LOGITS_MAX_IDS], greedy[16];
    int n_ids, n_greedy;
};

static inline int parse_ids(char * s, int32_t * out, int max) {
    int n = 0;
    for (char * tok = strtok(s, " "); tok && n < max; tok = strtok(NULL, " ")) out[n++] = (int32_t) atoi(tok);
    return n;
}

// Reads up to max rows of tests/data/<rel>; returns how many.
static inline int read_logits_rows(const char * rel, struct row * rows, int max) {
    char * path = tg_test_data(rel);
    FILE * f = fopen(path, "r");
    free(path);
    if (!f) return 0;
    static char line[1 << 16];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        char * cols[5] = { 0 };
        char * p = line;
        for (int c = 0; c < 5 && p; c++) { cols[c] = p; p = strchr(p, '\t'); if (p) *p++ = 0; }
        if (!cols[4]) continue;
        cols[4][strcspn(cols[4], "\r\n")] = 0;
        struct row * r = &rows[n++];
        snprintf(r->model, sizeof r->model, "%s", cols[0]);
        snprintf(r->pid, sizeof r->pid, "%s", cols[1]);
        r->n_ids = parse_ids(cols[3], r->ids, LOGITS_MAX_IDS);
        r->n_greedy = parse_ids(cols[4], r->greedy, 16);
    }
    fclose(f);
    return n;
}

// The first n floats of the file at path (malloc'd), or NULL when it is
// unreadable or shorter.
static inline float * read_f32s(const char * path, int n) {
    size_t len = 0;
    float * v = tg_test_read_file(path, &len);
    if (v && len < sizeof(float) * (size_t) n) { free(v); v = NULL; }
    return v;
}

// ||a - b|| / ||b|| over n values (float64).
static inline double rel_l2(const float * a, const float * b, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) { double d = (double) a[i] - b[i]; num += d * d; den += (double) b[i] * b[i]; }
    return sqrt(num / (den > 0 ? den : 1));
}

// Greedy continuation from the logits lg of c after r's prompt: 4 tokens
// (decoding 3 more), checked against the reference's greedy ids.
static inline void check_greedy(struct tg_llama_context * c, const float * lg, int n_vocab, const struct row * r) {
    int32_t got[4];
    int pos = r->n_ids;
    for (int i = 0; i < 4; i++) {
        got[i] = tg_llama_argmax(lg, n_vocab);
        if (i == 3 || tg_llama_decode(c, &got[i], 1, pos++) != TG_OK) break;
        lg = tg_llama_get_logits(c, -1);
    }
    CHECK(memcmp(got, r->greedy, sizeof got) == 0, "%s %s: greedy %d %d %d %d == reference %d %d %d %d", r->model, r->pid,
          got[0], got[1], got[2], got[3], r->greedy[0], r->greedy[1], r->greedy[2], r->greedy[3]);
}

#endif
