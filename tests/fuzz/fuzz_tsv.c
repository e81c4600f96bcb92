// fuzz_tsv.c - the per-node TSV dump reader of `tgdb diff` (another engine's
// eval-callback sums: name, op, ne0,ne1,ne2,ne3, sum, sum of squares;
// trace/diff.c) and the pairing run on what it reads. An input is one dump,
// or two separated by a line "--" (A and B). Checks: no crash or leak; a
// rejected dump leaves an error naming the file; an accepted one diffed
// against itself pairs every node with itself (nothing only on one side);
// A against B and B against A run (padding is paired one way only, so
// the two directions may pair differently).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tg/status.h"
#include "tg/trace-diff.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// The bytes as a file (a memory file: no disk), its /proc path in path.
static int as_file(const uint8_t * data, size_t size, char * path, size_t cap) {
    int fd = memfd_create("fuzz-tsv", 0);
    if (fd < 0) abort();
    for (size_t at = 0; at < size;) {
        ssize_t k = write(fd, data + at, size - at);
        if (k <= 0) abort();
        at += (size_t) k;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

static struct tg_diff_side * read_side(const uint8_t * data, size_t size) {
    char path[64];
    int fd = as_file(data, size, path, sizeof(path));
    struct tg_diff_side * s = tg_diff_side_tsv(path);
    if (!s && !strstr(tg_last_error(), path)) abort();   // the message names the file
    if (s && !tg_diff_side_is_tsv(s)) abort();
    close(fd);
    return s;
}

static void self_diff(struct tg_diff_side * s) {
    struct tg_diff_result r;
    if (tg_diff_run(s, s, NULL, &r) != TG_OK) abort();
    if (r.counts[TG_DIFF_ONLY_A] || r.counts[TG_DIFF_ONLY_B] || r.n_aligned != r.n_pairs) abort();
    tg_diff_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size > (1u << 16)) return 0;
    size_t cut = size;
    for (size_t i = 0; i + 4 <= size; i++)
        if ((i == 0 || data[i - 1] == '\n') && !memcmp(data + i, "--\n", 3)) { cut = i; break; }
    struct tg_diff_side * a = read_side(data, cut);
    struct tg_diff_side * b = cut < size ? read_side(data + cut + 3, size - cut - 3) : NULL;
    if (a) self_diff(a);
    if (b) self_diff(b);
    if (a && b) {
        struct tg_diff_result ab, ba;
        if (tg_diff_run(a, b, NULL, &ab) != TG_OK || tg_diff_run(b, a, NULL, &ba) != TG_OK) abort();
        if (ab.n_aligned > ab.n_pairs || ba.n_aligned > ba.n_pairs) abort();
        tg_diff_result_free(&ab);
        tg_diff_result_free(&ba);
    }
    tg_diff_side_free(a);
    tg_diff_side_free(b);
    return 0;
}
