// text.h - text the engine writes and untrusted text shown to people: the
// fast %s/%d formatter of node names, the one UTF-8
// validator and the one escaping routine of the tgdb libraries (private: not installed; libtg
// defines them, the CLI, the TUI and the DOT writer reach them through this
// header). Names in traces and keys in GGUF files come from files anyone can
// write: they may hold control characters, escape sequences and bytes that
// are not UTF-8, and fixed-size name fields cut characters in half.
#ifndef TG_CORE_TEXT_H
#define TG_CORE_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

// vsnprintf(out, cap, fmt, ap) for formats made only of %s, %d and %% (the
// names the engine writes for every node of every graph, where glibc's
// vsnprintf is measurable): the same output, truncated
// the same way. False (nothing written, ap untouched) for any other format.
bool tg_format_simple(char * out, size_t cap, const char * fmt, va_list ap);

// Length (1..4) of the well-formed UTF-8 sequence at s (n bytes left), or 0
// when s starts an invalid, overlong, surrogate, out-of-range or truncated
// one. ASCII bytes, control characters included, are sequences of length 1.
size_t tg_utf8_seq(const unsigned char * s, size_t n);

// True when the character of len bytes at s is a control character: C0
// (below 0x20), DEL, or C1 (U+0080..U+009F, which terminals also obey).
static inline int tg_utf8_is_control(const unsigned char * s, size_t len) {
    return (len == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (len == 2 && s[0] == 0xc2 && s[1] <= 0x9f);
}

// Copies s (n bytes) into dst (cap bytes, always NUL-terminated when cap > 0)
// so that it prints as one line and cannot drive a terminal: backslash,
// newline, tab and CR as \\ \n \t \r; other control characters (C0, DEL,
// C1) and bytes that are not well-formed UTF-8 as \xNN (lower-case hex, one per byte); valid UTF-8 is
// kept. When the result does not fit, it is cut at a character or escape
// boundary (never inside one). Returns the length the whole escaped text
// needs, without the NUL, like snprintf.
size_t tg_escape(char * dst, size_t cap, const char * s, size_t n);

// The escaped form of the NUL-terminated s (NULL: ""), for printing names
// inline: one of 8 per-thread buffers of 1 KB used in turn (valid until 8
// more calls; several may appear in one printf). Longer escaped text is cut
// at a character boundary and ends in "...".
const char * tg_escape_str(const char * s);

#endif
