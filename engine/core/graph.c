// graph.c - compute graphs: depth-first build (sources before users), views
// over node ranges, lookup and a printable summary.
#include "core-impl.h"
#include "core/grow.h"
#include "core/ptrmap.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t hash_size_for(int size) {
    size_t want = (size_t) size * 4 + 1, n = 16;
    while (n < want) n <<= 1;
    return n;
}

size_t tg_graph_overhead(int size) {
    if (size < 0) size = 0;
    size_t arrays = sizeof(struct tg_tensor *) * ((size_t) size * 2 + hash_size_for(size));
    return tg__arena_cost(TG_PAD(sizeof(struct tg_graph), TG_MEM_ALIGN) + arrays);
}

struct tg_graph * tg_graph_new(struct tg_context * ctx, int size) {
    if (!ctx) { tg_error(TG_ERR_INVALID_ARG, "graph_new: context is NULL"); return NULL; }
    if (size <= 0 || size > (1 << 26)) { tg_error(TG_ERR_INVALID_ARG, "graph_new: size %d not in 1..2^26", size); return NULL; }
    size_t hs = hash_size_for(size);
    size_t hdr = TG_PAD(sizeof(struct tg_graph), TG_MEM_ALIGN);
    char what[64];
    snprintf(what, sizeof(what), "graph of %d nodes", size);
    char * mem = tg__arena_alloc(ctx, hdr + sizeof(struct tg_tensor *) * ((size_t) size * 2 + hs), TG_OBJ_GRAPH, what);
    if (!mem) return NULL;
    struct tg_graph * g = (struct tg_graph *) mem;
    g->size = size;
    g->nodes = (struct tg_tensor **) (mem + hdr);
    g->leafs = g->nodes + size;
    g->hash_keys = g->leafs + size;
    g->hash_size = hs;
    return g;
}

// Inserts t into the visited set; returns false if it was there already.
// The set is a key array of fixed size in the graph's arena (at most a
// quarter full), probed as the pointer map probes (core/ptrmap.h).
static bool visit_insert(struct tg_graph * g, struct tg_tensor * t) {
    for (size_t h = tg_ptrmap_hash(tg_ptrmap_key(t), g->hash_size);; h = (h + 1) & (g->hash_size - 1)) {
        if (g->hash_keys[h] == t) return false;
        if (!g->hash_keys[h]) { g->hash_keys[h] = t; return true; }
    }
}

// Appends t as a node (op) or a leaf (no op). TG_ERR_NOMEM when full.
static enum tg_status append_tensor(struct tg_graph * g, struct tg_tensor * t) {
    if (t->op == TG_OP_NONE) {
        if (g->n_leafs >= g->size) {
            return tg_error(TG_ERR_NOMEM, "graph_build_forward: graph full: capacity %d leafs reached adding '%s'", g->size, t->name);
        }
        g->leafs[g->n_leafs++] = t;
    } else {
        if (g->n_nodes >= g->size) {
            return tg_error(TG_ERR_NOMEM, "graph_build_forward: graph full: capacity %d nodes reached adding '%s' (%s)",
                            g->size, t->name, tg_op_name(t->op));
        }
        g->nodes[g->n_nodes++] = t;
    }
    return TG_OK;
}

// Parent i of t in visiting order: src[0..TG_MAX_SRC-1], then view_src.
static struct tg_tensor * parent(const struct tg_tensor * t, int i) {
    return i < TG_MAX_SRC ? t->src[i] : t->view_src;
}

struct visit_frame { struct tg_tensor * t; int next; };

// Iterative depth-first post-order walk (no recursion: graphs can be deep).
static enum tg_status visit(struct tg_graph * g, struct tg_tensor * root) {
    if (!visit_insert(g, root)) return TG_OK;
    size_t cap = 64, top = 0;
    struct visit_frame * stack = malloc(cap * sizeof(*stack));
    if (!stack) return tg_error(TG_ERR_NOMEM, "graph_build_forward: cannot allocate the walk stack");
    stack[top++] = (struct visit_frame) { root, 0 };
    enum tg_status st = TG_OK;
    while (top > 0 && st == TG_OK) {
        struct visit_frame * f = &stack[top - 1];
        if (f->next > TG_MAX_SRC) {
            st = append_tensor(g, f->t);
            top--;
            continue;
        }
        struct tg_tensor * p = parent(f->t, f->next++);
        if (!p || !visit_insert(g, p)) continue;
        if (!TG_GROW(stack, cap, top + 1)) { st = tg_error(TG_ERR_NOMEM, "graph_build_forward: cannot grow the walk stack"); break; }
        stack[top++] = (struct visit_frame) { p, 0 };
    }
    free(stack);
    return st;
}

enum tg_status tg_graph_build_forward(struct tg_graph * g, struct tg_tensor * t) {
    if (!g) return tg_error(TG_ERR_INVALID_ARG, "graph_build_forward: graph is NULL");
    if (!t) return tg_error(TG_ERR_INVALID_ARG, "graph_build_forward: tensor is NULL");
    if (!g->hash_keys) return tg_error(TG_ERR_INVALID_ARG, "graph_build_forward: graph is a view (no visited set)");
    return visit(g, t);
}

struct tg_graph tg_graph_view(struct tg_graph * g, int i0, int i1) {
    struct tg_graph v;
    memset(&v, 0, sizeof(v));
    if (!g) { tg_error(TG_ERR_INVALID_ARG, "graph_view: graph is NULL"); return v; }
    if (i0 < 0 || i1 > g->n_nodes || i0 > i1) {
        tg_error(TG_ERR_INVALID_ARG, "graph_view: range [%d,%d) not within the %d nodes", i0, i1, g->n_nodes);
        return v;
    }
    v.size = i1 - i0;
    v.n_nodes = i1 - i0;
    v.nodes = g->nodes + i0;
    return v;
}

void tg_graph_reset_visited(struct tg_graph * g) {
    if (!g) return;
    g->n_nodes = 0;
    g->n_leafs = 0;
    if (g->hash_keys) memset(g->hash_keys, 0, g->hash_size * sizeof(*g->hash_keys));
}

struct tg_tensor * tg_graph_get_tensor(const struct tg_graph * g, const char * name) {
    if (!g || !name) return NULL;
    for (int i = 0; i < g->n_nodes; i++) if (strcmp(g->nodes[i]->name, name) == 0) return g->nodes[i];
    for (int i = 0; i < g->n_leafs; i++) if (strcmp(g->leafs[i]->name, name) == 0) return g->leafs[i];
    return NULL;
}

// Appends to buf at *len (counting what did not fit), snprintf-style.
static void append(char * buf, size_t n, size_t * len, const char * fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char * buf, size_t n, size_t * len, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(*len < n ? buf + *len : NULL, *len < n ? n - *len : 0, fmt, ap);
    va_end(ap);
    if (k > 0) *len += (size_t) k;
}

static const char * label(const struct tg_tensor * t, char * tmp, size_t n) {
    if (t->name[0]) return t->name;
    snprintf(tmp, n, "#%d", t->id);
    return tmp;
}

size_t tg_graph_summary(const struct tg_graph * g, char * buf, size_t n) {
    size_t len = 0;
    if (buf && n) buf[0] = '\0';
    if (!buf) n = 0;
    if (!g) { append(buf, n, &len, "(null graph)\n"); return len; }
    append(buf, n, &len, "graph: %d nodes, %d leafs (capacity %d)\n", g->n_nodes, g->n_leafs, g->size);
    char shape[96], tmp[32], tmp2[32];
    for (int i = 0; i < g->n_nodes; i++) {
        const struct tg_tensor * t = g->nodes[i];
        append(buf, n, &len, "  node %4d %-18s %-24s %s", i, tg_op_name(t->op), label(t, tmp, sizeof(tmp)),
               tg_shape_str(t, shape, sizeof(shape)));
        for (int s = 0; s < TG_MAX_SRC; s++) {
            if (t->src[s]) append(buf, n, &len, "%s%s", s == 0 ? " <- " : ", ", label(t->src[s], tmp2, sizeof(tmp2)));
        }
        append(buf, n, &len, "\n");
    }
    for (int i = 0; i < g->n_leafs; i++) {
        const struct tg_tensor * t = g->leafs[i];
        append(buf, n, &len, "  leaf %4d %-18s %-24s %s\n", i, "NONE", label(t, tmp, sizeof(tmp)), tg_shape_str(t, shape, sizeof(shape)));
    }
    return len;
}
