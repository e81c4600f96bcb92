// dot.c - DOT text builder: record nodes, labelled edges, nested clusters.
#include "core/grow.h"
#include "core/text.h"
#include "tg/dot.h"
#include "dot-file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// The text is built incrementally in `body`; clusters are emitted inline
// (subgraph cluster_N { ... }), so the final text is header + body + "}".
struct tg_dot {
    char * name;
    char * attrs;  size_t attrs_len, attrs_cap;
    char * body;   size_t body_len,  body_cap;
    char * text;   // assembled on demand
    int    depth;  // open clusters
    int    n_nodes, n_edges, n_clusters;
};

static bool buf_append(char ** buf, size_t * len, size_t * cap, const char * s, size_t n) {
    if (n > SIZE_MAX - *len - 1 || !tg_grow(buf, cap, *len + n + 1, 1)) return false;
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return true;
}

static enum tg_status body_printf(struct tg_dot * d, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
static enum tg_status body_printf(struct tg_dot * d, const char * fmt, ...) {
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) return tg_error(TG_ERR_INVALID_ARG, "dot: formatting failed");
    char * s = small;
    if ((size_t) n >= sizeof(small)) {
        s = malloc((size_t) n + 1);
        if (!s) return tg_error(TG_ERR_NOMEM, "dot: out of memory");
        va_start(ap, fmt);
        vsnprintf(s, (size_t) n + 1, fmt, ap);
        va_end(ap);
    }
    bool ok = buf_append(&d->body, &d->body_len, &d->body_cap, s, (size_t) n);
    if (s != small) free(s);
    return ok ? TG_OK : tg_error(TG_ERR_NOMEM, "dot: out of memory");
}

struct tg_dot * tg_dot_new(const char * name) {
    struct tg_dot * d = calloc(1, sizeof(*d));
    if (!d) { tg_error(TG_ERR_NOMEM, "dot: out of memory"); return NULL; }
    d->name = strdup(name ? name : "tgdb");
    if (!d->name) { free(d); tg_error(TG_ERR_NOMEM, "dot: out of memory"); return NULL; }
    return d;
}

void tg_dot_free(struct tg_dot * d) {
    if (!d) return;
    free(d->name); free(d->attrs); free(d->body); free(d->text);
    free(d);
}

// Copies s into buf (n bytes, NUL-terminated) escaped for a quoted DOT
// string: `special` characters get a backslash, a newline becomes \n,
// other control characters and bytes that are not well-formed UTF-8 become
// '?', and a multi-byte character is copied whole or not at all (the text is
// cut at character boundaries).
static char * escape_into(const char * s, const char * special, char * buf, size_t n) {
    size_t j = 0;
    if (n == 0) return buf;
    const unsigned char * p = (const unsigned char *) (s ? s : "");
    while (*p) {
        unsigned char c = *p;
        if (c >= 0x80) {
            size_t len = tg_utf8_seq(p, 4);   // 0: a stray byte or a character cut short (the NUL ends it)
            if (len == 0 || tg_utf8_is_control(p, len)) { if (j + 1 >= n) break; buf[j++] = '?'; p += len ? len : 1; continue; }
            if (j + len >= n) break;
            memcpy(buf + j, p, len);
            j += len;
            p += len;
            continue;
        }
        if (c == '\n') { if (j + 2 >= n) break; buf[j++] = '\\'; buf[j++] = 'n'; p++; continue; }
        if (c < 0x20 || c == 0x7f) c = '?';
        bool esc = strchr(special, c) != NULL;
        if (j + 1 + (esc ? 1 : 0) >= n) break;
        if (esc) buf[j++] = '\\';
        buf[j++] = (char) c;
        p++;
    }
    buf[j] = '\0';
    return buf;
}

// Quotes s as a DOT ID string ("..." with \" and \\ escaped) into buf.
static char * quote_id(const char * s, char * buf, size_t n) {
    if (n < 3) { if (n) buf[0] = '\0'; return buf; }
    buf[0] = '"';
    escape_into(s, "\"\\", buf + 1, n - 2);
    size_t j = strlen(buf);
    buf[j++] = '"';
    buf[j] = '\0';
    return buf;
}

char * tg_dot_escape_record(const char * s, char * buf, size_t n) {
    return escape_into(s, "{}|<>\"\\", buf, n);
}

enum tg_status tg_dot_graph_attr(struct tg_dot * d, const char * key, const char * value) {
    if (!d || !key || !value) return tg_error(TG_ERR_INVALID_ARG, "dot: graph attribute needs a key and a value");
    char q[512], line[1024];
    int n = snprintf(line, sizeof(line), "  %s=%s;\n", key, quote_id(value, q, sizeof(q)));
    if (!buf_append(&d->attrs, &d->attrs_len, &d->attrs_cap, line, (size_t) n))
        return tg_error(TG_ERR_NOMEM, "dot: out of memory");
    return TG_OK;
}

enum tg_status tg_dot_cluster_begin(struct tg_dot * d, const char * label, const char * fillcolor) {
    if (!d) return tg_error(TG_ERR_INVALID_ARG, "dot: NULL graph");
    char ql[512], qc[64];
    enum tg_status st = body_printf(d, "subgraph cluster_%d {\n  label=%s; style=\"filled,rounded\"; fillcolor=%s;\n",
        d->n_clusters, quote_id(label ? label : "", ql, sizeof(ql)),
        quote_id(fillcolor ? fillcolor : "#f4f4f4", qc, sizeof(qc)));
    if (st != TG_OK) return st;
    d->n_clusters++;
    d->depth++;
    return TG_OK;
}

enum tg_status tg_dot_cluster_end(struct tg_dot * d) {
    if (!d || d->depth == 0) return tg_error(TG_ERR_INVALID_ARG, "dot: cluster_end without an open cluster");
    d->depth--;
    return body_printf(d, "}\n");
}

enum tg_status tg_dot_node(struct tg_dot * d, const char * id, const char * const * fields, int n,
                           const char * fillcolor, const char * style, const char * extra) {
    if (!d || !id || (n > 0 && !fields)) return tg_error(TG_ERR_INVALID_ARG, "dot: node needs an id");
    size_t cap = 64, len = 0;
    for (int i = 0; i < n; i++) cap += 2 * strlen(fields[i] ? fields[i] : "") + 2;
    char * label = malloc(cap);
    if (!label) return tg_error(TG_ERR_NOMEM, "dot: out of memory");
    label[len++] = '{';
    for (int i = 0; i < n; i++) {
        if (i) label[len++] = '|';
        tg_dot_escape_record(fields[i], label + len, cap - len - 2);
        len += strlen(label + len);
    }
    label[len++] = '}';
    label[len] = '\0';
    char qid[512], qc[64], qs[64];
    // the label is already escaped for a quoted record label
    enum tg_status st = body_printf(d, "  %s [shape=record, label=\"%s\", style=%s, fillcolor=%s%s%s];\n",
        quote_id(id, qid, sizeof(qid)), label,
        quote_id(style ? style : "filled", qs, sizeof(qs)),
        quote_id(fillcolor ? fillcolor : "white", qc, sizeof(qc)),
        extra ? ", " : "", extra ? extra : "");
    free(label);
    if (st == TG_OK) d->n_nodes++;
    return st;
}

enum tg_status tg_dot_edge(struct tg_dot * d, const char * from, const char * to,
                           const char * label, const char * extra) {
    if (!d || !from || !to) return tg_error(TG_ERR_INVALID_ARG, "dot: edge needs two ends");
    char qf[512], qt[512], ql[256];
    enum tg_status st = body_printf(d, "  %s -> %s [label=%s%s%s];\n",
        quote_id(from, qf, sizeof(qf)), quote_id(to, qt, sizeof(qt)),
        quote_id(label ? label : "", ql, sizeof(ql)), extra ? ", " : "", extra ? extra : "");
    if (st == TG_OK) d->n_edges++;
    return st;
}

int tg_dot_n_nodes(const struct tg_dot * d) { return d ? d->n_nodes : 0; }
int tg_dot_n_edges(const struct tg_dot * d) { return d ? d->n_edges : 0; }
int tg_dot_n_clusters(const struct tg_dot * d) { return d ? d->n_clusters : 0; }

const char * tg_dot_text(struct tg_dot * d, size_t * len) {
    if (!d) return NULL;
    char qn[256];
    quote_id(d->name, qn, sizeof(qn));
    size_t n = strlen(qn) + d->attrs_len + d->body_len + 256 + (size_t) d->depth * 2;
    if (!TG_RESIZE(d->text, n)) { tg_error(TG_ERR_NOMEM, "dot: out of memory"); return NULL; }
    char * t = d->text;
    int k = snprintf(t, n, "digraph %s {\n  node [fontname=\"monospace\", fontsize=10];\n"
                           "  edge [fontname=\"monospace\", fontsize=8];\n%s%s",
                     qn, d->attrs ? d->attrs : "", d->body ? d->body : "");
    for (int i = 0; i < d->depth; i++) k += snprintf(t + k, n - (size_t) k, "}\n");  // close open clusters
    k += snprintf(t + k, n - (size_t) k, "}\n");
    if (len) *len = (size_t) k;
    return t;
}

FILE * tg_dot_file_open(const char * path, char * tmp, size_t n) {
    if ((size_t) snprintf(tmp, n, "%s.tmp-XXXXXX", path) >= n) {
        tg_error(TG_ERR_INVALID_ARG, "%s: path too long", path);
        return NULL;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) { tg_error(TG_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno)); return NULL; }
    mode_t mask = umask(0);
    umask(mask);
    (void) fchmod(fd, 0666 & ~mask);   // as if created by fopen, not mkstemp's 0600
    FILE * f = fdopen(fd, "wb");
    if (!f) {
        tg_error(TG_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
    }
    return f;
}

enum tg_status tg_dot_file_close(FILE * f, const char * tmp, const char * path, enum tg_status st) {
    int err = 0;
    if (fflush(f) != 0 || ferror(f)) err = errno ? errno : EIO;
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    if (st == TG_OK && !err && rename(tmp, path) != 0) err = errno;
    if (st != TG_OK || err) {
        unlink(tmp);
        if (st == TG_OK) st = tg_error(TG_ERR_IO, "%s: write failed: %s (%s was not written)", path, strerror(err), path);
    }
    return st;
}

enum tg_status tg_dot_write(struct tg_dot * d, const char * path) {
    size_t len;
    const char * t = tg_dot_text(d, &len);
    if (!t) return tg_last_status();
    char tmp[4096 + 32];
    FILE * f = tg_dot_file_open(path, tmp, sizeof(tmp));
    if (!f) return tg_last_status();
    errno = 0;
    enum tg_status st = TG_OK;
    if (fwrite(t, 1, len, f) != len) st = tg_error(TG_ERR_IO, "%s: write failed: %s (%s was not written)", path,
                                                   strerror(errno ? errno : EIO), path);
    return tg_dot_file_close(f, tmp, path, st);
}

enum tg_status tg_dot_save(struct tg_dot * d, const char * path) {
    if (!d || !path) return tg_error(TG_ERR_INVALID_ARG, "dot: no output path");
    const char * ext = strrchr(path, '.');
    if (!ext) return tg_error(TG_ERR_INVALID_ARG, "%s: no extension (use .dot, .svg, .png or .pdf)", path);
    ext++;
    if (!strcmp(ext, "dot") || !strcmp(ext, "gv")) return tg_dot_write(d, path);
    if (!strcmp(ext, "svg") || !strcmp(ext, "png") || !strcmp(ext, "pdf")) return tg_dot_render(d, ext, path);
    return tg_error(TG_ERR_INVALID_ARG, "%s: unknown output format '.%s' (use .dot, .svg, .png or .pdf)", path, ext);
}
