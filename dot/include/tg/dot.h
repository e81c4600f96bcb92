// tg/dot.h - a small Graphviz DOT builder and in-process renderer (libtgdot).
//
// Build a graph of record nodes, edges and (nested) clusters, then write it
// as .dot text or render it to SVG/PNG/PDF through the Graphviz library
// (libgvc/libcgraph). Nothing else in tgdb includes Graphviz.
#ifndef TG_DOT_H
#define TG_DOT_H

#include "tg/status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tg_dot;

// New empty directed graph. NULL on out of memory.
struct tg_dot * tg_dot_new(const char * name);
void tg_dot_free(struct tg_dot * d);

// Graph-level attribute (e.g. "rankdir" = "TB"). Strings are copied.
enum tg_status tg_dot_graph_attr(struct tg_dot * d, const char * key, const char * value);

// Opens a cluster (clusters nest); label and colour may be NULL. Nodes added
// until tg_dot_cluster_end belong to it.
enum tg_status tg_dot_cluster_begin(struct tg_dot * d, const char * label, const char * fillcolor);
enum tg_status tg_dot_cluster_end(struct tg_dot * d);

// A record node: `fields` (n of them) are shown top to bottom, each escaped
// for DOT record syntax. id must be unique (any text). fillcolor/style may
// be NULL (defaults: white, "filled"); `extra` is appended verbatim to the
// attribute list (e.g. "penwidth=3, color=red") or NULL.
enum tg_status tg_dot_node(struct tg_dot * d, const char * id, const char * const * fields, int n,
                           const char * fillcolor, const char * style, const char * extra);
// An edge from -> to with an optional label and extra attributes.
enum tg_status tg_dot_edge(struct tg_dot * d, const char * from, const char * to,
                           const char * label, const char * extra);

int tg_dot_n_nodes(const struct tg_dot * d);
int tg_dot_n_edges(const struct tg_dot * d);
int tg_dot_n_clusters(const struct tg_dot * d);

// The DOT text (NUL-terminated, owned by d, valid until the next change).
const char * tg_dot_text(struct tg_dot * d, size_t * len);
// Writes the DOT text to path. TG_ERR_IO (path, reason) on failure.
enum tg_status tg_dot_write(struct tg_dot * d, const char * path);
// Lays out with `dot` and renders to path in format "svg", "png" or "pdf"
// in-process. TG_ERR_UNSUPPORTED if the format's plugin is missing.
enum tg_status tg_dot_render(struct tg_dot * d, const char * format, const char * path);
// The Graphviz release whose headers this library was built with ("2.43.0").
const char * tg_dot_graphviz_version(void);
// Picks the format from the path's extension (.dot, .gv, .svg, .png, .pdf).
enum tg_status tg_dot_save(struct tg_dot * d, const char * path);

// Escapes s for one field of a record label inside a quoted DOT string
// ({ } | < > " \ get a backslash, newlines become \n) into buf (always
// NUL-terminated); returns buf.
char * tg_dot_escape_record(const char * s, char * buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
