// diff.c - node-by-node comparison of two runs (traces or a per-node TSV dump).
#include "core/grow.h"
#include "tg/trace-diff.h"
#include "tg/types.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dnode {
    char     name[TG_TRACE_NAME];
    char     op[24];
    int64_t  ne[4];
    int      node;                // index in its graph
    int      src[TG_TRACE_MAX_SRC];
    bool     has_hash, has_summary, has_sums, has_sketch;
    bool     set_digest;          // hash and sketch are the element-set digest (1.5)
    uint64_t hash;
    struct tg_trace_summary sum;
    struct tg_trace_sketch sketch;   // has_sketch (format 1.2)
    double   s, sq;               // sum and sum of squares (finite values)
    double   n;                   // elements counted in s, sq
};

struct dgraph { struct dnode * nodes; int n; uint32_t graph_id; };

struct tg_diff_side {
    bool            tsv;
    bool            xxh3;      // content hashes are XXH3-64 (format 1.1 on), else XXH64
    struct tg_trace * tr;
    struct dgraph * graphs;
    int             n_graphs;
    bool            any_hash, any_summary, any_contents;  // recorded for some node
};

const char * tg_diff_kind_name(int kind) {
    static const char * names[] = {"same", "near", "DIFF", "only-A", "only-B", "?"};
    return kind >= 0 && kind < TG_DIFF_KIND_COUNT ? names[kind] : "?";
}

const char * tg_diff_evidence_name(int evidence) {
    static const char * const names[] = {
#define TG_DIFF_EV_NAME(e, name) name,
        TG_DIFF_EVIDENCE_LIST(TG_DIFF_EV_NAME)
#undef TG_DIFF_EV_NAME
    };
    return evidence >= 0 && evidence < TG_DIFF_EV_COUNT ? names[evidence] : "-";
}

struct tg_diff_options tg_diff_default_options(void) {
    return (struct tg_diff_options){.rtol = 1e-3, .atol = 1e-5};
}

bool tg_diff_side_is_tsv(const struct tg_diff_side * s) { return s && s->tsv; }

void tg_diff_side_free(struct tg_diff_side * s) {
    if (!s) return;
    for (int g = 0; g < s->n_graphs; g++) free(s->graphs[g].nodes);
    free(s->graphs);
    free(s);
}

struct tg_diff_side * tg_diff_side_trace(struct tg_trace * tr) {
    struct tg_diff_side * s = calloc(1, sizeof(*s));
    int ng = tr ? tg_trace_n_graphs(tr) : 0;
    if (!s || !(s->graphs = calloc((size_t) (ng > 0 ? ng : 1), sizeof(*s->graphs)))) {
        free(s);
        tg_error(TG_ERR_NOMEM, "diff: out of memory");
        return NULL;
    }
    s->tr = tr;
    s->n_graphs = ng;
    if (tr) {
        struct tg_trace_status st;
        tg_trace_get_status(tr, &st);
        s->xxh3 = st.version_minor >= 1;
        s->any_contents = tg_trace_n_contents(tr) > 0;
    }
    for (int g = 0; g < ng; g++) {
        struct tg_trace_graph gr;
        if (!tg_trace_get_graph(tr, g, &gr) || gr.n_nodes <= 0) continue;
        struct dgraph * dg = &s->graphs[g];
        dg->graph_id = gr.graph_id;
        dg->nodes = calloc((size_t) gr.n_nodes, sizeof(*dg->nodes));
        if (!dg->nodes) { tg_diff_side_free(s); tg_error(TG_ERR_NOMEM, "diff: out of memory"); return NULL; }
        for (int i = 0; i < gr.n_nodes; i++) {
            struct tg_trace_tensor t;
            struct dnode * d = &dg->nodes[dg->n];
            if (!tg_trace_get_tensor(tr, g, i, &t)) continue;
            memcpy(d->name, t.name, sizeof(d->name));
            snprintf(d->op, sizeof(d->op), "%s", tg_trace_op_name(tr, t.op));
            memcpy(d->ne, t.ne, sizeof(d->ne));
            d->node = i;
            for (int k = 0; k < TG_TRACE_MAX_SRC; k++) d->src[k] = t.src[k] < gr.n_nodes ? t.src[k] : TG_TRACE_NONE;
            int ei = tg_trace_find_eval(tr, gr.graph_id, i, UINT32_MAX);
            struct tg_trace_eval e;
            if (ei >= 0 && tg_trace_get_eval(tr, ei, &e)) {
                d->has_hash = (e.flags & TG_TRACE_EVAL_HASH) != 0;
                d->set_digest = (e.flags & TG_TRACE_EVAL_SETDIGEST) != 0;
                d->hash = e.hash;
                s->any_hash |= d->has_hash;
                s->any_summary |= (e.flags & TG_TRACE_EVAL_SUMMARY) != 0;
                int si = (e.flags & TG_TRACE_EVAL_SKETCH) ? tg_trace_find_sketch(tr, gr.graph_id, i, e.compute_seq) : -1;
                d->has_sketch = si >= 0 && tg_trace_get_sketch(tr, si, &d->sketch);
                if (e.flags & TG_TRACE_EVAL_SUMMARY) {
                    d->has_summary = d->has_sums = true;
                    d->sum = e.sum;
                    d->n = (double) (e.sum.n_elem - e.sum.n_nan - e.sum.n_inf);
                    d->s = e.sum.mean * d->n;
                    d->sq = e.sum.rms * e.sum.rms * d->n;
                }
            }
            dg->n++;
        }
    }
    return s;
}

// Parses "a,b,c,d" into ne (missing dims are 1). False if malformed.
static bool parse_shape(const char * s, int64_t ne[4]) {
    for (int k = 0; k < 4; k++) ne[k] = 1;
    for (int k = 0; k < 4 && *s; k++) {
        char * end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < 0) return false;
        ne[k] = v;
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') return false;
    }
    return *s == '\0';
}

struct tg_diff_side * tg_diff_side_tsv(const char * path) {
    FILE * f = fopen(path, "r");
    if (!f) { tg_error(TG_ERR_IO, "%s: cannot open: %s", path, strerror(errno)); return NULL; }
    struct tg_diff_side * s = calloc(1, sizeof(*s));
    struct dgraph * dg = s ? calloc(1, sizeof(*dg)) : NULL;
    if (!dg) { free(s); fclose(f); tg_error(TG_ERR_NOMEM, "diff: out of memory"); return NULL; }
    s->tsv = true;
    s->any_summary = true;   // sums
    s->graphs = dg;
    s->n_graphs = 1;
    char * line = NULL;
    size_t line_cap = 0, cap = 0;
    int lineno = 0;
    const char * bad = NULL;   // what is wrong with line `lineno`
    while (getline(&line, &line_cap, f) >= 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char * col[6];
        int nc = 0;
        for (char * p = line; nc < 6; ) {
            col[nc++] = p;
            char * tab = strchr(p, '\t');
            if (!tab) break;
            *tab = '\0';
            p = tab + 1;
        }
        struct dnode d;
        memset(&d, 0, sizeof(d));
        char * e1, * e2;
        int64_t n_elem = 1;
        if (nc != 5 || !parse_shape(col[2], d.ne) || (d.s = strtod(col[3], &e1), e1 == col[3] || *e1) ||
            (d.sq = strtod(col[4], &e2), e2 == col[4] || *e2)) {
            bad = "expected 5 tab-separated columns: name, op, ne0,ne1,ne2,ne3, sum, sum of squares";
        } else if (strlen(col[0]) >= sizeof(d.name) || strlen(col[1]) >= sizeof(d.op)) {
            bad = strlen(col[0]) >= sizeof(d.name) ? "the node name is longer than a tensor name can be (63 bytes)"
                                                  : "the op name is longer than 23 bytes";
        } else {
            for (int k = 0; k < 4 && !bad; k++)
                if (__builtin_mul_overflow(n_elem, d.ne[k], &n_elem)) bad = "the shape's element count overflows 64 bits";
        }
        if (bad) break;
        snprintf(d.name, sizeof(d.name), "%s", col[0]);
        snprintf(d.op, sizeof(d.op), "%s", col[1]);
        d.node = dg->n;
        d.has_sums = true;
        d.n = (double) n_elem;
        for (int k = 0; k < TG_TRACE_MAX_SRC; k++) d.src[k] = TG_TRACE_NONE;
        if (dg->n == INT32_MAX || !TG_GROW(dg->nodes, cap, (size_t) dg->n + 1)) {
            free(line); fclose(f); tg_diff_side_free(s); tg_error(TG_ERR_NOMEM, "diff: out of memory"); return NULL;
        }
        dg->nodes[dg->n++] = d;
    }
    const bool read_err = !bad && ferror(f);
    free(line);
    fclose(f);
    if (bad || read_err) {
        tg_diff_side_free(s);
        if (bad) tg_error(TG_ERR_FORMAT, "%s:%d: %s", path, lineno, bad);
        else tg_error(TG_ERR_IO, "%s:%d: read error", path, lineno + 1);
        return NULL;
    }
    if (dg->n == 0) { tg_diff_side_free(s); tg_error(TG_ERR_FORMAT, "%s: no nodes (empty dump)", path); return NULL; }
    return s;
}

// Names and ops that differ between engines (and versions) for the same
// node: llama.cpp's embedding output "embd" (older: "inp_embd", ours), its
// SwiGLU as SWIGLU (ours: GLU).
static bool alias_eq(const char * a, const char * b, const char * const (*alias)[2], int n) {
    if (strcmp(a, b) == 0) return true;
    for (int k = 0; k < n; k++)
        if ((!strcmp(a, alias[k][0]) && !strcmp(b, alias[k][1])) || (!strcmp(a, alias[k][1]) && !strcmp(b, alias[k][0])))
            return true;
    return false;
}
static const char * const name_alias[][2] = { { "inp_embd", "embd" } };
static const char * const op_alias[][2] = { { "GLU", "SWIGLU" } };

static bool same_key(const struct dnode * x, const struct dnode * y) {
    return memcmp(x->ne, y->ne, sizeof(x->ne)) == 0 && alias_eq(x->op, y->op, op_alias, 1) &&
           alias_eq(x->name, y->name, name_alias, 1);
}

// The same node of another engine's dump, larger in one dimension by its
// padding (llama.cpp steps the KV length of kq, kq_soft_max and the cache
// views by 256 cells, tgdb by 32): a multiple of 32 there. The extra cells
// hold zeros (masked probabilities; scores against a cleared cache), so the
// sums compare.
static bool pad_key(const struct dnode * x, const struct dnode * y) {
    if (!alias_eq(x->name, y->name, name_alias, 1) || !alias_eq(x->op, y->op, op_alias, 1) || !x->has_sums || !y->has_sums)
        return false;
    int n_diff = 0, padded = 0;
    for (int d = 0; d < 4; d++) {
        n_diff += x->ne[d] != y->ne[d];
        padded += y->ne[d] > x->ne[d] && y->ne[d] % 32 == 0;
    }
    return n_diff == 1 && padded == 1;
}

// Pairing key: exact, or padded against a TSV dump.
static bool key_match(const struct tg_diff_side * B, const struct dnode * x, const struct dnode * y) {
    return same_key(x, y) || (B->tsv && pad_key(x, y));
}

// Contents of (graph_id, node) as floats (malloc'd), NULL if none recorded.
static float * load_contents(struct tg_trace * tr, uint32_t graph_id, int node, int64_t * n) {
    int ci = tg_trace_find_contents(tr, graph_id, node, UINT32_MAX);
    return ci < 0 ? NULL : tg_trace_contents_f32(tr, ci, n);
}

static bool is_view(const struct dnode * d) {
    return !strcmp(d->op, "NONE") || !strcmp(d->op, "VIEW") || !strcmp(d->op, "RESHAPE") || !strcmp(d->op, "PERMUTE") ||
           !strcmp(d->op, "TRANSPOSE");
}

double tg_diff_sketch_rel_l2(const struct tg_trace_sketch * a, const struct tg_trace_sketch * b,
                             const struct tg_trace_summary * sum_b, double * err) {
    if (err) *err = NAN;
    if (!a || !b || !sum_b || (a->scheme != 1 && a->scheme != 2) || b->scheme != a->scheme || a->n != TG_TRACE_SKETCH_N || b->n != a->n)
        return NAN;
    // each bucket of A - B is a signed sum over a random part of the elements
    // of A - B: the squares add up to ||A - B||^2 on average
    double d2 = 0;
    for (int k = 0; k < TG_TRACE_SKETCH_N; k++) {
        double d = (double) a->v[k] - (double) b->v[k];
        d2 += d * d;
    }
    double fin = (double) (sum_b->n_elem - sum_b->n_nan - sum_b->n_inf);
    double norm_b = sum_b->rms * sqrt(fin);
    double rel = norm_b > 0 ? sqrt(d2) / norm_b : (d2 > 0 ? INFINITY : 0);
    // relative sd of the squared-norm estimate: at most sqrt(2 / buckets); of the norm: half that
    if (err) *err = rel * 0.5 * sqrt(2.0 / TG_TRACE_SKETCH_N);
    return rel;
}

// Sum and sum of squares: the largest of the relative deltas of the sum
// (against sqrt(sumsq)) and of the sum of squares.
static void compare_sums(const struct dnode * x, const struct dnode * y, const struct tg_diff_options * o,
                         struct tg_diff_pair * p, int evidence) {
    double norm = sqrt(fmax(y->sq, 0.0));
    double rs = fabs(x->s - y->s) / (fmax(fabs(y->s), norm) + o->atol);
    double rq = fabs(x->sq - y->sq) / (fabs(y->sq) + o->atol);
    p->evidence = evidence;
    p->rel = fmax(rs, rq);
    p->kind = p->rel <= o->rtol ? TG_DIFF_NEAR : TG_DIFF_DIFF;
}

static void compare(const struct tg_diff_side * A, const struct tg_diff_side * B, uint32_t ga, uint32_t gb,
                    const struct dnode * x, const struct dnode * y, const struct tg_diff_options * o,
                    struct tg_diff_pair * p) {
    p->rel_l2 = p->rel_l2_err = p->max_abs = p->mean_abs = p->max_rel = p->rel = NAN;
    if (p->padded) { compare_sums(x, y, o, p, TG_DIFF_EV_PADDED); return; }   // (pad_key: both have sums)
    // equal hashes mean equal contents only when both traces hash alike
    bool hashed = x->has_hash && y->has_hash && A->xxh3 == B->xxh3 && x->set_digest == y->set_digest;
    if (hashed && x->hash == y->hash) {
        p->kind = TG_DIFF_SAME;
        p->evidence = TG_DIFF_EV_HASH;
        p->rel_l2 = p->rel_l2_err = p->max_abs = p->mean_abs = p->max_rel = p->rel = 0;
        return;
    }
    p->hash_differs = hashed;
    if (A->tr && B->tr) {
        int64_t na = 0, nb = 0;
        float * a = load_contents(A->tr, ga, x->node, &na);
        float * b = a ? load_contents(B->tr, gb, y->node, &nb) : NULL;
        if (a && b && na == nb) {
            double sum = 0, d2 = 0, b2 = 0, max_abs = 0, max_rel = 0;
            bool within = true;
            for (int64_t k = 0; k < na; k++) {
                double d = fabs((double) a[k] - (double) b[k]);
                if (isnan(a[k]) != isnan(b[k]) || (isinf(a[k]) && a[k] != b[k])) d = INFINITY;
                else if (isnan(a[k]) || isinf(a[k])) d = 0;   // same NaN / same infinity
                double r = d / (fabs((double) b[k]) + o->atol);
                if (d > max_abs) max_abs = d;
                if (r > max_rel) max_rel = r;
                if (d > o->atol + o->rtol * fabs((double) b[k])) within = false;
                sum += d;
                d2 += d * d;
                if (isfinite(b[k])) b2 += (double) b[k] * (double) b[k];
            }
            p->evidence = TG_DIFF_EV_CONTENTS;
            p->from_contents = true;
            p->max_abs = max_abs;
            p->max_rel = max_rel;
            p->mean_abs = na ? sum / (double) na : 0;
            p->rel_l2 = b2 > 0 ? sqrt(d2) / sqrt(b2) : (d2 > 0 ? INFINITY : 0);
            p->rel_l2_err = 0;
            p->rel = max_rel;
            p->kind = within ? TG_DIFF_NEAR : TG_DIFF_DIFF;
            free(a);
            free(b);
            return;
        }
        free(a);
        free(b);
    }
    if (x->has_sketch && y->has_sketch && x->has_summary && y->has_summary &&
        x->sum.n_nan == y->sum.n_nan && x->sum.n_inf == y->sum.n_inf) {
        double err;
        double rel = tg_diff_sketch_rel_l2(&x->sketch, &y->sketch, &y->sum, &err);
        if (!isnan(rel)) {
            p->evidence = TG_DIFF_EV_SKETCH;
            p->rel_l2 = p->rel = rel;
            p->rel_l2_err = err;
            p->kind = rel <= o->rtol ? TG_DIFF_NEAR : TG_DIFF_DIFF;
            return;
        }
    }
    if (x->has_summary && y->has_summary) {
        const struct tg_trace_summary * s = &x->sum, * t = &y->sum;
        p->evidence = TG_DIFF_EV_SUMMARY;
        if (s->n_nan != t->n_nan || s->n_inf != t->n_inf) { p->kind = TG_DIFF_DIFF; p->rel = INFINITY; return; }
        double scale = fmax(fabs(s->rms), fabs(t->rms)) + o->atol;
        double d = fmax(fmax(fabs(s->mean - t->mean), fabs(s->rms - t->rms)), fmax(fabs(s->min - t->min), fabs(s->max - t->max)));
        p->rel = d / scale;
        p->kind = p->rel <= o->rtol ? TG_DIFF_NEAR : TG_DIFF_DIFF;
        return;
    }
    if (x->has_sums && y->has_sums) { compare_sums(x, y, o, p, TG_DIFF_EV_SUMS); return; }
    p->kind = TG_DIFF_UNKNOWN;   // (hash_differs: the bytes differ, but nothing measures by how much)
    // a view recorded without data on both sides (--trace-hash computed):
    // its bytes are those of the computed nodes it views, compared there
    p->view_skipped = is_view(x) && is_view(y) && !x->has_hash && !y->has_hash && !x->has_summary && !y->has_summary;
}

// Counts pair p in (sign +1) or out of (-1) the result's tallies.
static void tally(struct tg_diff_result * r, const struct tg_diff_pair * p, int sign) {
    r->counts[p->kind] += sign;
    if (p->node_a >= 0 && p->node_b >= 0) {
        r->n_aligned += sign;
        r->evidence[p->evidence] += sign;
        if (p->evidence != TG_DIFF_EV_NONE) r->n_compared += sign;
        else if (p->hash_differs) r->n_hash_differs += sign;
        else if (p->view_skipped) r->n_views_skipped += sign;
    }
}

static bool push(struct tg_diff_result * r, size_t * cap, const struct tg_diff_pair * p) {
    if (!TG_GROW(r->pairs, *cap, (size_t) r->n_pairs + 1)) return false;
    r->pairs[r->n_pairs++] = *p;
    tally(r, p, +1);
    return true;
}

static void fill_names(struct tg_diff_pair * p, const struct dnode * d) {
    memcpy(p->name, d->name, sizeof(p->name));
    snprintf(p->op, sizeof(p->op), "%s", d->op);
    memcpy(p->ne, d->ne, sizeof(p->ne));
}

#define LOOKAHEAD 256

// Against another engine's dump: nodes the in-order alignment left on one
// side whose key matches exactly one node left on the other side and no
// other of its own: the engines ran them in another order (llama.cpp
// computes Vcur before Kcur, tgdb after).
// Paired in A's place; B's entry goes. Pairs from `start` on are graph g's.
static bool pair_leftovers(const struct tg_diff_side * A, const struct tg_diff_side * B, int g, int gb,
                           const struct tg_diff_options * o, struct tg_diff_result * r, int start) {
    const struct dgraph * x = &A->graphs[g], * y = &B->graphs[gb];
    // the one-sided entries' nodes (the pairs come in each side's node order)
    const int n = r->n_pairs - start;
    const struct dnode ** side = malloc(sizeof(*side) * (size_t) (n > 0 ? n : 1));
    if (!side) return false;
    for (int k = 0, ia = 0, ib = 0; k < n; k++) {
        const struct tg_diff_pair * p = &r->pairs[start + k];
        while (ia < x->n && p->node_a >= 0 && x->nodes[ia].node != p->node_a) ia++;
        while (ib < y->n && p->node_b >= 0 && y->nodes[ib].node != p->node_b) ib++;
        side[k] = p->kind == TG_DIFF_ONLY_A && ia < x->n ? &x->nodes[ia] : p->kind == TG_DIFF_ONLY_B && ib < y->n ? &y->nodes[ib] : NULL;
    }
    for (int k = 0; k < r->n_pairs - start; k++) {
        struct tg_diff_pair * pa = &r->pairs[start + k];
        const struct dnode * dx = pa->kind == TG_DIFF_ONLY_A ? side[k] : NULL;
        if (!dx) continue;
        int hit = -1, n_hit = 0, n_own = 0;
        for (int m = 0; m < r->n_pairs - start && n_hit < 2; m++)
            if (r->pairs[start + m].kind == TG_DIFF_ONLY_B && side[m] && key_match(B, dx, side[m])) { hit = m; n_hit++; }
        if (n_hit != 1) continue;
        const struct dnode * dy = side[hit];
        for (int m = 0; m < r->n_pairs - start && n_own < 2; m++)
            if (r->pairs[start + m].kind == TG_DIFF_ONLY_A && side[m] && key_match(B, side[m], dy)) n_own++;
        if (n_own != 1) continue;
        tally(r, pa, -1);
        tally(r, &r->pairs[start + hit], -1);
        pa->node_b = dy->node;
        pa->padded = !same_key(dx, dy);
        if (pa->padded) memcpy(pa->ne_b, dy->ne, sizeof(pa->ne_b));
        compare(A, B, x->graph_id, y->graph_id, dx, dy, o, pa);
        tally(r, pa, +1);
        const int tail = r->n_pairs - start - hit - 1;   // B's entry goes
        memmove(&r->pairs[start + hit], &r->pairs[start + hit + 1], sizeof(r->pairs[0]) * (size_t) tail);
        memmove(&side[hit], &side[hit + 1], sizeof(side[0]) * (size_t) tail);
        r->n_pairs--;
        if (hit < k) k--;
    }
    free(side);
    return true;
}

// Aligns graph ga of A with gb of B and appends the pairs.
static bool align_graph(const struct tg_diff_side * A, const struct tg_diff_side * B, int g, int gb,
                        const struct tg_diff_options * o, struct tg_diff_result * r, size_t * cap) {
    const struct dgraph * x = &A->graphs[g], * y = &B->graphs[gb];
    const int start = r->n_pairs;
    int i = 0, j = 0;
    while (i < x->n || j < y->n) {
        struct tg_diff_pair p;
        memset(&p, 0, sizeof(p));
        p.graph = g;
        p.graph_id = x->graph_id;
        p.rel_l2 = p.rel_l2_err = p.max_abs = p.mean_abs = p.max_rel = p.rel = NAN;
        p.node_a = p.node_b = -1;
        if (i < x->n && j < y->n && key_match(B, &x->nodes[i], &y->nodes[j])) {
            p.node_a = x->nodes[i].node;
            p.node_b = y->nodes[j].node;
            fill_names(&p, &x->nodes[i]);
            p.padded = !same_key(&x->nodes[i], &y->nodes[j]);
            if (p.padded) memcpy(p.ne_b, y->nodes[j].ne, sizeof(p.ne_b));
            compare(A, B, x->graph_id, y->graph_id, &x->nodes[i], &y->nodes[j], o, &p);
            i++, j++;
        } else if (i < x->n && j < y->n) {
            int kb = -1, ka = -1;
            for (int k = j + 1; k < y->n && k <= j + LOOKAHEAD && kb < 0; k++) if (key_match(B, &x->nodes[i], &y->nodes[k])) kb = k;
            for (int k = i + 1; k < x->n && k <= i + LOOKAHEAD && ka < 0; k++) if (key_match(B, &x->nodes[k], &y->nodes[j])) ka = k;
            if (kb >= 0 && (ka < 0 || kb - j <= ka - i)) {
                p.kind = TG_DIFF_ONLY_B; p.node_b = y->nodes[j].node; fill_names(&p, &y->nodes[j]); j++;
            } else {
                p.kind = TG_DIFF_ONLY_A; p.node_a = x->nodes[i].node; fill_names(&p, &x->nodes[i]); i++;
            }
        } else if (i < x->n) {
            p.kind = TG_DIFF_ONLY_A; p.node_a = x->nodes[i].node; fill_names(&p, &x->nodes[i]); i++;
        } else {
            p.kind = TG_DIFF_ONLY_B; p.node_b = y->nodes[j].node; fill_names(&p, &y->nodes[j]); j++;
        }
        if (!push(r, cap, &p)) return false;
    }
    // another engine's order (between two traces it is a difference)
    return !B->tsv || pair_leftovers(A, B, g, gb, o, r, start);
}

// Nodes of A's graph g that (transitively) read node `first`.
static bool dependents(const struct tg_diff_side * A, int g, int first, struct tg_diff_result * r) {
    const struct dgraph * x = &A->graphs[g];
    int n_idx = 0;
    for (int k = 0; k < x->n; k++) if (x->nodes[k].node >= n_idx) n_idx = x->nodes[k].node + 1;
    char * mark = calloc((size_t) (n_idx > 0 ? n_idx : 1), 1);
    r->dependents = malloc(sizeof(int) * (size_t) (x->n > 0 ? x->n : 1));
    if (!mark || !r->dependents) { free(mark); return false; }
    mark[first] = 1;
    for (int k = 0; k < x->n; k++) {
        const struct dnode * d = &x->nodes[k];
        if (d->node <= first) continue;
        for (int s = 0; s < TG_TRACE_MAX_SRC; s++) {
            if (d->src[s] >= 0 && d->src[s] < n_idx && mark[d->src[s]]) {
                mark[d->node] = 1;
                r->dependents[r->n_dependents++] = d->node;
                break;
            }
        }
    }
    free(mark);
    return true;
}

// A pair's measure of difference for mark_introduced: the relative L2
// difference (measured or estimated from sketches) where known, else the
// relative difference of the sums or summaries (a TSV dump has only those).
static double growth_figure(const struct tg_diff_pair * p) {
    if (!isnan(p->rel_l2)) return p->rel_l2;
    const int e = p->evidence;
    return e == TG_DIFF_EV_SUMS || e == TG_DIFF_EV_PADDED || e == TG_DIFF_EV_SUMMARY ? p->rel : NAN;
}

// Flags the pairs whose difference (growth_figure) grows faster than their
// inputs': beyond 1.5x the largest of their input nodes' (leafs, such as
// weights, count as 0), both taken at two standard errors against the node,
// and beyond rtol. Views are never flagged. False on OOM.
static bool mark_introduced(const struct tg_diff_side * A, struct tg_diff_result * r, const struct tg_diff_options * o) {
    int start = 0;
    while (start < r->n_pairs) {
        int g = r->pairs[start].graph, end = start;
        while (end < r->n_pairs && r->pairs[end].graph == g) end++;
        const struct dgraph * x = &A->graphs[g];
        int n_idx = 0;
        for (int k = 0; k < x->n; k++) if (x->nodes[k].node >= n_idx) n_idx = x->nodes[k].node + 1;
        int * pair_of = malloc(sizeof(int) * (size_t) (n_idx > 0 ? n_idx : 1));   // A node index -> pair
        if (!pair_of) return false;
        for (int k = 0; k < n_idx; k++) pair_of[k] = -1;
        for (int k = start; k < end; k++)
            if (r->pairs[k].node_a >= 0 && r->pairs[k].node_a < n_idx) pair_of[r->pairs[k].node_a] = k;
        for (int k = 0; k < x->n; k++) {
            const struct dnode * d = &x->nodes[k];
            int pk = d->node < n_idx ? pair_of[d->node] : -1;
            if (pk < 0) continue;
            struct tg_diff_pair * p = &r->pairs[pk];
            // views read bytes other nodes wrote (a KV cache view: the stores before it), not their sources
            const double pf = growth_figure(p);
            if (!isfinite(pf) || pf <= o->rtol || is_view(d)) continue;
            double in = 0;
            for (int s = 0; s < TG_TRACE_MAX_SRC; s++) {
                int ps = d->src[s] >= 0 && d->src[s] < n_idx ? pair_of[d->src[s]] : -1;
                if (ps < 0) continue;
                const struct tg_diff_pair * q = &r->pairs[ps];
                const double qf = growth_figure(q);
                if (isnan(qf)) continue;   // not compared: no figure to hold it against
                double qe = isfinite(q->rel_l2_err) ? q->rel_l2_err : 0;
                if (qf + 2 * qe > in) in = qf + 2 * qe;
            }
            double pe = isfinite(p->rel_l2_err) ? p->rel_l2_err : 0;
            p->introduced = pf - 2 * pe > 1.5 * in;
            r->n_introduced += p->introduced;
        }
        free(pair_of);
        start = end;
    }
    return true;
}

// DECODE markers of a trace, in file order: their indices (malloc'd), *n set.
static int * decode_markers(const struct tg_trace * tr, int * n) {
    int nm = tg_trace_n_markers(tr);
    int * idx = malloc(sizeof(int) * (size_t) (nm > 0 ? nm : 1));
    *n = 0;
    for (int i = 0; idx && i < nm; i++) {
        struct tg_trace_marker m;
        if (tg_trace_get_marker(tr, i, &m) && m.kind == TG_TRACE_MARK_DECODE) idx[(*n)++] = i;
    }
    return idx;
}

// Were the two runs fed the same tokens? Compares the DECODE markers' token
// ids and positions in order; fills the token_* fields of res.
static void compare_tokens(const struct tg_diff_side * a, const struct tg_diff_side * b, struct tg_diff_result * res) {
    res->token_mismatch = -1;
    res->token_a = res->token_b = res->token_pos = -1;
    if (!a->tr || !b->tr) return;
    int na = 0, nb = 0;
    int * ma = decode_markers(a->tr, &na), * mb = decode_markers(b->tr, &nb);
    res->n_decodes_a = na;
    res->n_decodes_b = nb;
    enum { CAP = 4096 };
    int32_t * ta = malloc(sizeof(int32_t) * CAP), * tb = malloc(sizeof(int32_t) * CAP);
    for (int k = 0; ma && mb && ta && tb && k < na && k < nb && res->token_mismatch < 0; k++) {
        struct tg_trace_marker x, y;
        if (!tg_trace_get_marker(a->tr, ma[k], &x) || !tg_trace_get_marker(b->tr, mb[k], &y)) continue;
        int ca = tg_trace_marker_tokens(a->tr, ma[k], ta, CAP), cb = tg_trace_marker_tokens(b->tr, mb[k], tb, CAP);
        if (ca > CAP) ca = CAP;
        if (cb > CAP) cb = CAP;
        int n = ca > cb ? ca : cb;
        for (int i = 0; i < n; i++) {
            int32_t u = i < ca ? ta[i] : -1, v = i < cb ? tb[i] : -1;
            if (u != v) {
                res->token_mismatch = k;
                res->token_a = u; res->token_b = v; res->token_pos = x.pos + i;
                break;
            }
        }
        if (res->token_mismatch < 0 && (x.pos != y.pos || x.n_tokens != y.n_tokens)) {
            res->token_mismatch = k;
            res->token_pos = x.pos;
        }
    }
    free(ma); free(mb); free(ta); free(tb);
}

enum tg_status tg_diff_run(struct tg_diff_side * a, struct tg_diff_side * b,
                           const struct tg_diff_options * opt, struct tg_diff_result * res) {
    memset(res, 0, sizeof(*res));
    if (!a || !b) return tg_error(TG_ERR_INVALID_ARG, "diff: missing side");
    struct tg_diff_options o = opt ? *opt : tg_diff_default_options();
    res->first = -1;
    res->n_graphs_a = a->n_graphs;
    res->n_graphs_b = b->n_graphs;
    // A TSV dump is one graph: compare it with A's first graph that has nodes.
    int ga0 = 0;
    if (b->tsv) while (ga0 < a->n_graphs && a->graphs[ga0].n == 0) ga0++;
    int n = b->tsv ? (ga0 < a->n_graphs ? 1 : 0) : (a->n_graphs < b->n_graphs ? a->n_graphs : b->n_graphs);
    res->n_graphs = n;
    size_t cap = 0;
    for (int k = 0; k < n; k++) {
        if (!align_graph(a, b, ga0 + k, b->tsv ? 0 : k, &o, res, &cap)) {
            tg_diff_result_free(res);
            return tg_error(TG_ERR_NOMEM, "diff: out of memory");
        }
    }
    if (!mark_introduced(a, res, &o)) {
        tg_diff_result_free(res);
        return tg_error(TG_ERR_NOMEM, "diff: out of memory");
    }
    for (int k = 0; k < res->n_pairs; k++)
        if (res->pairs[k].kind == TG_DIFF_DIFF) { res->first = k; break; }
    if (res->first >= 0 && !dependents(a, res->pairs[res->first].graph, res->pairs[res->first].node_a, res)) {
        tg_diff_result_free(res);
        return tg_error(TG_ERR_NOMEM, "diff: out of memory");
    }
    res->differs = res->counts[TG_DIFF_DIFF] > 0 ||
                   (!b->tsv && (res->counts[TG_DIFF_ONLY_A] > 0 || res->counts[TG_DIFF_ONLY_B] > 0 || a->n_graphs != b->n_graphs));
    res->inconclusive = !res->differs && (res->n_compared == 0 || res->n_compared + res->n_views_skipped < res->n_aligned);
    res->a_hashes = a->any_hash; res->a_summaries = a->any_summary; res->a_contents = a->any_contents;
    res->b_hashes = b->any_hash; res->b_summaries = b->any_summary; res->b_contents = b->any_contents;
    compare_tokens(a, b, res);
    return TG_OK;
}

void tg_diff_result_free(struct tg_diff_result * res) {
    if (!res) return;
    free(res->pairs);
    free(res->dependents);
    memset(res, 0, sizeof(*res));
}
