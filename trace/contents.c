// contents.c - recorded contents as floats, for views and comparisons.
#include "tg/trace-read.h"
#include "tg/types.h"

#include <zstd.h>

#include <stdlib.h>
#include <string.h>

float * tg_trace_contents_f32(const struct tg_trace * tr, int ci, int64_t * n_out) {
    struct tg_trace_contents c;
    if (!tg_trace_get_contents(tr, ci, &c)) { tg_error(TG_ERR_INVALID_ARG, "no contents record %d", ci); return NULL; }
    const struct tg_type_traits * tt = tg_type_traits((enum tg_type) c.type);
    int64_t n = c.ne[0] * c.ne[1] * c.ne[2] * c.ne[3];
    if (n <= 0 || c.raw_size > ((uint64_t) 1 << 34)) { tg_error(TG_ERR_FORMAT, "contents record %d: bad size", ci); return NULL; }
    if (c.type != TG_TYPE_I32 && (!tt || !tt->to_float || n % tt->blck_size != 0)) {
        tg_error(TG_ERR_UNSUPPORTED, "contents record %d: type %d cannot be shown as numbers", ci, c.type);
        return NULL;
    }
    void * raw = malloc(c.raw_size ? c.raw_size : 1);
    float * out = malloc(sizeof(float) * (size_t) n);
    if (!raw || !out) { free(raw); free(out); tg_error(TG_ERR_NOMEM, "out of memory for %lld values", (long long) n); return NULL; }
    if (tg_trace_read_contents(tr, ci, raw, c.raw_size) != TG_OK) { free(raw); free(out); return NULL; }
    if (c.type == TG_TYPE_F32) memcpy(out, raw, sizeof(float) * (size_t) n);
    else if (c.type == TG_TYPE_I32) for (int64_t k = 0; k < n; k++) out[k] = (float) ((const int32_t *) raw)[k];
    else tt->to_float(raw, out, n);
    free(raw);
    *n_out = n;
    return out;
}

// Bytes [off, off + n) of the decoded contents i, without decoding the rest
// into memory: RAW payloads are copied from the mapping; ZSTD frames are
// decompressed as a stream through a fixed window, output before `off`
// discarded. Memory stays bounded whatever the tensor's size.
enum tg_status tg_trace_read_contents_range(const struct tg_trace * tr, int i, uint64_t off, void * dst, size_t n) {
    struct tg_trace_contents c;
    uint32_t type, len;
    const uint8_t * payload;
    uint64_t foff;
    if (!tg_trace_get_contents(tr, i, &c) || !tg_trace_get_record(tr, c.record, &type, &payload, &len, &foff) || len < 72)
        return tg_error(TG_ERR_INVALID_ARG, "no contents record %d", i);
    if (off > c.raw_size || n > c.raw_size - off)
        return tg_error(TG_ERR_INVALID_ARG, "contents %d: bytes [%llu, %llu) outside its %llu bytes", i,
                        (unsigned long long) off, (unsigned long long) (off + n), (unsigned long long) c.raw_size);
    const uint8_t * data = payload + 72;
    size_t stored = len - 72;
    if (c.codec == TG_TRACE_CODEC_RAW) {
        if (stored < c.raw_size) return tg_error(TG_ERR_FORMAT, "contents %d: %zu stored bytes for %llu", i, stored, (unsigned long long) c.raw_size);
        memcpy(dst, data + off, n);
        return TG_OK;
    }
    ZSTD_DStream * zs = ZSTD_createDStream();
    size_t wcap = ZSTD_DStreamOutSize();
    uint8_t * win = malloc(wcap);
    if (!zs || !win) { ZSTD_freeDStream(zs); free(win); return tg_error(TG_ERR_NOMEM, "out of memory"); }
    ZSTD_initDStream(zs);
    ZSTD_inBuffer in = {data, stored, 0};
    uint64_t pos = 0;      // decoded bytes produced so far
    size_t copied = 0;
    enum tg_status st = TG_OK;
    while (copied < n) {
        ZSTD_outBuffer out = {win, wcap, 0};
        size_t r = ZSTD_decompressStream(zs, &out, &in);
        if (ZSTD_isError(r)) { st = tg_error(TG_ERR_FORMAT, "contents %d: %s", i, ZSTD_getErrorName(r)); break; }
        // the part of [pos, pos + out.pos) inside [off + copied, off + n)
        uint64_t lo = off + copied, hi = off + n;
        if (pos + out.pos > lo && pos < hi) {
            uint64_t a = lo > pos ? lo : pos, b = hi < pos + out.pos ? hi : pos + out.pos;
            memcpy((uint8_t *) dst + (a - off), win + (a - pos), (size_t) (b - a));
            copied += (size_t) (b - a);
        }
        pos += out.pos;
        if (out.pos == 0 && in.pos == in.size) { st = tg_error(TG_ERR_FORMAT, "contents %d: stream ends at %llu bytes", i, (unsigned long long) pos); break; }
    }
    ZSTD_freeDStream(zs);
    free(win);
    return st;
}
