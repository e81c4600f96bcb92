// fx.c - helpers of the debugging-feature commands (fx.h).
#include "fx.h"

#include "cli.h"
#include "tg/status.h"
#include "tg/trace-read.h"

#include <inttypes.h>
#include <string.h>

struct tg_trace * tg_fx_open(const char * path) {
    struct tg_trace * tr = tg_trace_open(path);
    if (!tr) tg_cli_err("%s", tg_last_error());
    tg_cli_trace_warning(tr);
    return tr;
}

void tg_fx_json_str(FILE * f, const char * s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else if (c >= 0x80) {
            int n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
            int k = 1;
            while (n && k < n && ((unsigned char) s[k] & 0xc0) == 0x80) k++;
            if (n && k == n) { fwrite(s, 1, (size_t) n, f); s += n - 1; }
            else fputs("\\ufffd", f);
        } else fputc(c, f);
    }
    fputc('"', f);
}

const char * tg_fx_bytes(uint64_t n, char * buf, size_t cap) {
    if (n >= (1ull << 30)) snprintf(buf, cap, "%.2f GiB", (double) n / (1ull << 30));
    else if (n >= (1ull << 20)) snprintf(buf, cap, "%.2f MiB", (double) n / (1ull << 20));
    else if (n >= (1ull << 10)) snprintf(buf, cap, "%.1f KiB", (double) n / (1ull << 10));
    else snprintf(buf, cap, "%" PRIu64 " B", n);
    return buf;
}

int tg_fx_alloc_owner(const struct tg_trace * tr, int gi, int ti) {
    for (int depth = 0; depth < 4096; depth++) {
        struct tg_trace_alloc a;
        if (!tg_trace_get_alloc(tr, gi, ti, &a)) return -1;
        if (a.flags & TG_TRACE_ALLOC_INPLACE) {
            ti = a.inplace_parent;
        } else if (a.flags & TG_TRACE_ALLOC_VIEW) {
            struct tg_trace_tensor t;
            if (!tg_trace_get_tensor(tr, gi, ti, &t)) return -1;
            ti = t.view_src;
        } else {
            return ti;
        }
        if (ti < 0) return -1;
    }
    return -1;
}
