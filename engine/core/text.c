// text.c - UTF-8 validation and escaping of untrusted text (see text.h).
#include "core/text.h"

#include <stdbool.h>
#include <string.h>

size_t tg_utf8_seq(const unsigned char * s, size_t n) {
    if (n == 0) return 0;
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t k = 1; k < len; k++) if ((s[k] & 0xc0) != 0x80) return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
        return 0;   // overlong, surrogate, beyond U+10FFFF
    return len;
}

size_t tg_escape(char * dst, size_t cap, const char * s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char * u = (const unsigned char *) s;
    size_t out = 0, w = 0;   // length of the whole escaped text; bytes written to dst
    bool full = false;       // a piece did not fit: nothing more is written
    for (size_t i = 0; i < n;) {
        char esc[4];
        const char * piece = esc;
        size_t len = tg_utf8_seq(u + i, n - i), plen, used;
        unsigned char c = u[i];
        if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
            esc[0] = '\\'; esc[1] = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
            plen = 2; used = 1;
        } else if (len == 0 || tg_utf8_is_control(u + i, len)) {
            esc[0] = '\\'; esc[1] = 'x'; esc[2] = hex[c >> 4]; esc[3] = hex[c & 15];
            plen = 4; used = 1;   // a C1 control: its two bytes are escaped one by one
        } else {
            piece = (const char *) u + i;
            plen = len; used = len;
        }
        if (!full && w + plen < cap) { memcpy(dst + w, piece, plen); w += plen; }
        else full = true;
        out += plen;
        i += used;
    }
    if (cap) dst[w] = '\0';
    return out;
}

// Escaped copies live in a ring of buffers, so that a printf can take several.
#define ESC_RING 8
#define ESC_SIZE 1024

const char * tg_escape_str(const char * s) {
    static _Thread_local char ring[ESC_RING][ESC_SIZE];
    static _Thread_local int next;
    char * buf = ring[next];
    next = (next + 1) % ESC_RING;
    if (!s) return "";
    size_t n = strlen(s);
    if (tg_escape(buf, ESC_SIZE, s, n) >= ESC_SIZE) {   // cut at a boundary: say so
        size_t k = strlen(buf);
        if (k > ESC_SIZE - 4) k = ESC_SIZE - 4;
        while (k > 0 && ((unsigned char) buf[k] & 0xc0) == 0x80) k--;   // not inside a character
        memcpy(buf + k, "...", 4);
    }
    return buf;
}
