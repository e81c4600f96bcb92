// contents.c - recorded contents as floats, for views and comparisons.
#include "tg/trace-read.h"
#include "tg/types.h"

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
