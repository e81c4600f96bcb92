// test_trace_damage.c - the reader survives damaged traces: truncated at every
// byte (record boundaries and mid-record), every byte flipped, zero and huge
// record lengths, a damaged index. Each case opens (or fails with a clean
// error) and every accessor runs over what was recovered.
#include "check.h"
#include "trace_sample.h"
#include "trace_sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Record start offsets of a valid trace (linear walk of the frames).
static int record_offsets(const uint8_t * b, size_t n, size_t * offs, int max) {
    size_t off = 32;
    int k = 0;
    while (off + 16 <= n && k < max) {
        uint32_t len = (uint32_t) b[off + 8] | ((uint32_t) b[off + 9] << 8) | ((uint32_t) b[off + 10] << 16) |
                       ((uint32_t) b[off + 11] << 24);
        offs[k++] = off;
        off += 16 + len;
    }
    return k;
}

// Every cut and every flipped byte of a trace with delta records: the reader
// opens what it can, and every accessor runs over it (ASan watches).
static void damage_deltas(void) {
    char path[256];
    snprintf(path, sizeof(path), "test_trace_damage.%d.delta.tgt", (int) getpid());
    int n_written = write_delta_trace(path);
    size_t n = 0;
    uint8_t * good = tg_test_read_file(path, &n);
    unlink(path);
    CHECK(good != NULL && n_written == 10, "delta trace written (%zu bytes)", n);
    if (!good) return;
    uint8_t * dam = malloc(n);
    int opened = 0, flipped = 0;
    for (size_t cut = 32; cut < n; cut++) {
        struct tg_trace * tr = tg_trace_open_mem(good, cut);
        if (tr) { opened++; trace_sweep(tr); tg_trace_close(tr); }
    }
    for (size_t i = 32; i < n; i++) {
        memcpy(dam, good, n);
        dam[i] ^= 0xFF;
        struct tg_trace * tr = tg_trace_open_mem(dam, n);
        if (tr) { flipped++; trace_sweep(tr); tg_trace_close(tr); }
    }
    CHECK(opened == (int) n - 32 && flipped == (int) n - 32, "deltas: every cut (%d) and flipped byte (%d) opens and sweeps",
          opened, flipped);
    free(dam);
    free(good);
}

int main(void) {
    char path[256];
    snprintf(path, sizeof(path), "test_trace_damage.%d.tgt", (int) getpid());
    int n_written = write_sample_trace(path, true);
    size_t n = 0;
    uint8_t * good = tg_test_read_file(path, &n);
    unlink(path);
    CHECK(good != NULL && n_written > 0, "sample trace written (%zu bytes)", n);
    if (!good) return tg_check_finish("test_trace_damage");
    size_t offs[64];
    int n_recs = record_offsets(good, n, offs, 64);
    CHECK(n_recs == n_written + 2, "%d records incl. index and footer", n_recs);

    // 1. truncation at every byte
    int opened = 0, refused = 0, bad_counts = 0, no_trunc_flag = 0;
    for (size_t cut = 0; cut < n; cut++) {
        struct tg_trace * tr = tg_trace_open_mem(good, cut);
        if (!tr) { refused++; continue; }
        opened++;
        struct tg_trace_status st;
        tg_trace_get_status(tr, &st);
        int expect = 0;   // records wholly before the cut
        for (int r = 0; r < n_recs; r++) {
            size_t end = r + 1 < n_recs ? offs[r + 1] : n;
            if (end <= cut) expect = r + 1;
        }
        if ((int) st.n_records != expect || st.valid_end > cut) bad_counts++;
        if (!st.truncated || st.complete) no_trunc_flag++;
        trace_sweep(tr);
        tg_trace_close(tr);
    }
    CHECK(refused == 32, "cuts inside the 32-byte header are refused (%d)", refused);
    CHECK(opened == (int) n - 32, "every cut after the header opens (%d)", opened);
    CHECK(bad_counts == 0, "every cut keeps exactly the complete records before it (%d wrong)", bad_counts);
    CHECK(no_trunc_flag == 0, "every cut is reported truncated (%d not)", no_trunc_flag);
    {
        struct tg_trace * tr = tg_trace_open_mem(good, offs[5] + 7);
        struct tg_trace_status st;
        tg_trace_get_status(tr, &st);
        CHECK(st.stop == TG_TRACE_STOP_CUT && st.n_records == 5 && st.stop_offset == offs[5] &&
              strstr(st.message, "cut mid-record"), "mid-record cut: says where and why: %s", st.message);
        tg_trace_close(tr);
    }

    // 2. every byte flipped
    uint8_t * dam = malloc(n);
    int flip_open = 0, flip_complete = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(dam, good, n);
        dam[i] ^= 0xFF;
        struct tg_trace * tr = tg_trace_open_mem(dam, n);
        if (!tr) continue;
        flip_open++;
        struct tg_trace_status st;
        tg_trace_get_status(tr, &st);
        if (st.complete) flip_complete++;
        trace_sweep(tr);
        tg_trace_close(tr);
    }
    CHECK(flip_open == (int) n - 32, "a flipped byte after the header never stops the open (%d/%zu)", flip_open, n - 32);
    CHECK(flip_complete == 0, "a flipped byte is always noticed (checksums): %d went unnoticed", flip_complete);
    {
        memcpy(dam, good, n);
        dam[offs[3] + 20] ^= 0x01;   // inside the PLACEMENT payload
        struct tg_trace * tr = tg_trace_open_mem(dam, n);
        struct tg_trace_status st;
        tg_trace_get_status(tr, &st);
        struct tg_trace_damage d;
        CHECK(st.stop == TG_TRACE_STOP_BAD_CHECKSUM && st.stop_offset == offs[3] && st.n_damaged == 1 &&
              !st.complete && st.indexed && strstr(st.message, "bad checksum") && strstr(st.message, "record 3"),
              "flipped payload byte: bad checksum at record 3, reported: %s", st.message);
        CHECK(tg_trace_get_damage(tr, 0, &d) && d.record == 3 && d.offset == offs[3] &&
              d.bytes == offs[4] - offs[3] && d.type == TG_TRACE_REC_PLACEMENT && !tg_trace_get_damage(tr, 1, &d),
              "the damage entry names record 3, its offset, size and type");
        CHECK(st.n_records == (uint32_t) n_recs - 1 && tg_trace_n_evals(tr) == 3 && tg_trace_n_graphs(tr) == 1,
              "records after the damaged one are still read from the index (%u of %d)", st.n_records, n_recs);
        char line[512];
        CHECK(tg_trace_warning(tr, line, sizeof(line)) && strstr(line, "(memory)") && strstr(line, "offset"),
              "a warning line: %s", line);
        tg_trace_close(tr);
        memcpy(dam, good, n);
        dam[offs[2]] ^= 0x01;   // sync word
        tr = tg_trace_open_mem(dam, n);
        tg_trace_get_status(tr, &st);
        CHECK(st.stop == TG_TRACE_STOP_BAD_SYNC && st.n_damaged == 1 && st.stop_offset == offs[2] &&
              st.n_records == (uint32_t) n_recs - 1 && tg_trace_n_evals(tr) == 3, "flipped sync: the rest is read: %s", st.message);
        tg_trace_close(tr);
        // the same damage with the index destroyed too: the scan resynchronises
        memcpy(dam, good, n);
        dam[offs[3] + 20] ^= 0x01;
        dam[offs[n_recs - 2] + 20] ^= 0x01;   // the index payload
        tr = tg_trace_open_mem(dam, n);
        tg_trace_get_status(tr, &st);
        CHECK(tr && !st.indexed && st.n_damaged == 2 && st.stop == TG_TRACE_STOP_BAD_CHECKSUM &&
              st.stop_offset == offs[3] && st.n_records == (uint32_t) n_recs - 2 && tg_trace_n_evals(tr) == 3,
              "no index: resynchronised after the damaged record, later records read (%s)", st.message);
        CHECK(tg_trace_get_damage(tr, 1, &d) && d.offset == offs[n_recs - 2] && d.record == (uint32_t) n_recs - 2 && !d.to_end,
              "second damage: the index record");
        CHECK(strstr(st.message, "2 damaged stretches") != NULL, "message counts them: %s", st.message);
        tg_trace_close(tr);
        // a damaged record and garbage to the end (no resync possible)
        memcpy(dam, good, n);
        for (size_t i = offs[5] + 4; i < n; i++) dam[i] = 0x5A;
        tr = tg_trace_open_mem(dam, n);
        tg_trace_get_status(tr, &st);
        CHECK(tr && st.n_records == 5 && st.n_damaged == 1 && tg_trace_get_damage(tr, 0, &d) && d.to_end &&
              d.offset == offs[5] && d.bytes == n - offs[5], "garbage to the end: one damage to the end (%s)", st.message);
        tg_trace_close(tr);
    }

    // 3. zero and huge lengths in every record's length field
    int len_cases = 0, len_ok = 0;
    uint32_t lens[4] = { 0, 1, 0x7FFFFFFFu, 0xFFFFFFFFu };
    for (int r = 0; r < n_recs; r++) {
        for (int l = 0; l < 4; l++) {
            memcpy(dam, good, n);
            for (int k = 0; k < 4; k++) dam[offs[r] + 8 + k] = (uint8_t) (lens[l] >> (8 * k));
            struct tg_trace * tr = tg_trace_open_mem(dam, n);
            len_cases++;
            if (!tr) continue;
            struct tg_trace_status st;
            tg_trace_get_status(tr, &st);
            if (!st.complete && st.n_damaged >= 1 && st.stop_offset == offs[r]) len_ok++;
            trace_sweep(tr);
            tg_trace_close(tr);
        }
    }
    CHECK(len_ok == len_cases, "bad lengths: reported as damage at that record (%d/%d)", len_ok, len_cases);

    // 4. a damaged index falls back to the scan and recovers everything
    memcpy(dam, good, n);
    dam[offs[n_recs - 2] + 12 + 8 + 3] ^= 0x40;   // an index entry's offset
    struct tg_trace * tr = tg_trace_open_mem(dam, n);
    struct tg_trace_status st;
    tg_trace_get_status(tr, &st);
    CHECK(tr && !st.indexed && st.n_records == (uint32_t) n_recs - 1 && st.stop == TG_TRACE_STOP_BAD_CHECKSUM &&
          st.n_damaged == 1 && strstr(st.message, "index unusable"),
          "damaged index: scan recovers the %d records before it and the footer (%s)", n_written, st.message);
    CHECK(tg_trace_n_evals(tr) == 3 && tg_trace_n_graphs(tr) == 1, "damaged index: evals and graph still readable");
    tg_trace_close(tr);

    // 5. random garbage after a valid header
    srand(7);
    int garbage_ok = 0;
    for (int k = 0; k < 300; k++) {
        size_t m = 32 + (size_t) (rand() % 600);
        memcpy(dam, good, 32);
        for (size_t i = 32; i < m; i++) dam[i] = (uint8_t) rand();
        struct tg_trace * g = tg_trace_open_mem(dam, m);
        if (g) { trace_sweep(g); tg_trace_close(g); garbage_ok++; }
    }
    CHECK(garbage_ok == 300, "random garbage after a header opens as an empty damaged trace (%d/300)", garbage_ok);
    free(dam);
    free(good);
    damage_deltas();
    return tg_check_finish("test_trace_damage");
}
