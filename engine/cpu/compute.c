// compute.c - the CPU graph compute loop: validation, per-op dispatch table,
// thread counts and work sizes, hooks.
//
// Every thread of the pool walks the same list of nodes; a node runs on its
// first nth threads (nth = min(pool threads, useful parallelism)); threads
// meet at a barrier around every node that runs on more than one thread
// (plan_syncs). Kernels split work so that each output element is produced by
// one thread in a fixed order, so results do not depend on nth.
#include "cpu/cpu-pool.h"
#include "tg/observe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- support predicates -------------------------------------------------------

static bool is_float(const struct tg_tensor * t) { return t && tg_cpu_is_float(t->type); }
static bool is_f32(const struct tg_tensor * t) { return t && t->type == TG_TYPE_F32; }
static bool is_index(const struct tg_tensor * t) {
    return t && (t->type == TG_TYPE_I32 || t->type == TG_TYPE_I64);
}
// Types the copy/convert kernels read and write: those with f32 conversions
// (F32, F16, BF16, F64, Q8_0, Q4_0); quantized rows must be dense blocks.
static bool is_storage(const struct tg_tensor * t) {
    const struct tg_type_traits * tr = t ? tg_type_traits(t->type) : NULL;
    if (!tr || !tr->to_float || !tr->from_float) return false;
    return !tr->is_quantized || t->nb[0] == tr->type_size;
}
static bool is_quant(const struct tg_tensor * t) {
    return t->type == TG_TYPE_Q8_0 || t->type == TG_TYPE_Q4_0;
}

static bool sup_dup(const struct tg_tensor * d) {
    const struct tg_tensor * s = d->src[0];
    if (!s) return false;
    if (s->type == d->type && !is_quant(s)) return tg_type_supported(s->type); // plain copy, any plain type
    if (!is_storage(s) || !is_storage(d)) return false;
    if (is_quant(d) && d->ne[0] % 32 != 0) return false;
    if (is_quant(s) && !tg_are_same_shape(s, d) && !tg_is_contiguous(s)) return false;
    return true;
}
static bool sup_binary(const struct tg_tensor * d) {
    return is_float(d) && is_float(d->src[0]) && is_float(d->src[1]);
}
static bool sup_f32_unary(const struct tg_tensor * d) { return is_float(d) && is_float(d->src[0]); }
static bool sup_f32_in(const struct tg_tensor * d) { return is_f32(d) && is_float(d->src[0]); }
static bool sup_argmax(const struct tg_tensor * d) { return d->type == TG_TYPE_I32 && is_float(d->src[0]); }
static bool sup_plain_same(const struct tg_tensor * d) {
    const struct tg_tensor * a = d->src[0];
    if (!a || a->type != d->type) return false;
    const struct tg_type_traits * tr = tg_type_traits(a->type);
    return tr && !tr->is_quantized;
}
static bool sup_concat(const struct tg_tensor * d) {
    return sup_plain_same(d) && d->src[1] && d->src[1]->type == d->type;
}
static bool sup_get_rows(const struct tg_tensor * d) {
    return is_f32(d) && is_storage(d->src[0]) && is_index(d->src[1]);
}
static bool sup_set_rows(const struct tg_tensor * d) {
    return is_storage(d) && is_float(d->src[1]) && is_index(d->src[2]) &&
           (!is_quant(d) || d->ne[0] % 32 == 0);
}
static bool sup_soft_max(const struct tg_tensor * d) {
    return sup_f32_unary(d) && (!d->src[1] || is_float(d->src[1]));
}
static bool sup_rope(const struct tg_tensor * d) {
    return sup_f32_unary(d) && d->src[1] && d->src[1]->type == TG_TYPE_I32;
}
static bool sup_glu(const struct tg_tensor * d) {
    return sup_f32_unary(d) && (!d->src[1] || is_float(d->src[1]));
}
static bool sup_ce(const struct tg_tensor * d) {
    return is_f32(d) && is_float(d->src[0]) && is_float(d->src[1]);
}
static bool sup_flash_attn(const struct tg_tensor * d) {
    const struct tg_tensor * q = d->src[0], * k = d->src[1], * v = d->src[2], * m = d->src[3];
    return is_f32(d) && tg_is_contiguous(d) && q && k && v && q->type == TG_TYPE_F32 &&
           (k->type == TG_TYPE_F16 || k->type == TG_TYPE_F32) && (v->type == TG_TYPE_F16 || v->type == TG_TYPE_F32) &&
           (!m || m->type == TG_TYPE_F16 || m->type == TG_TYPE_F32);
}
static bool sup_back2(const struct tg_tensor * d) {
    return is_f32(d) && is_f32(d->src[0]) && is_f32(d->src[1]);
}
static bool sup_get_rows_back(const struct tg_tensor * d) {
    return is_f32(d) && tg_is_contiguous(d) && is_f32(d->src[0]) && d->src[1] && d->src[1]->type == TG_TYPE_I32;
}
static bool sup_opt(const struct tg_tensor * d) {
    for (int i = 0; i < (d->op == TG_OP_OPT_STEP_ADAMW ? 5 : 3); i++)
        if (!is_f32(d->src[i]) || !tg_is_contiguous(d->src[i])) return false;
    return true;
}
static bool sup_set_acc(const struct tg_tensor * d) {
    return is_f32(d) && is_f32(d->src[0]) && is_float(d->src[1]);
}

// ---- useful parallelism and work sizes ----------------------------------------------

static _Atomic int64_t g_grain = 16384;

void tg_cpu_set_task_grain(int64_t elems) { atomic_store(&g_grain, elems < 1 ? 16384 : elems); }

static int64_t tasks_elems(const struct tg_tensor * d) {
    int64_t n = tg_nelements(d), g = atomic_load(&g_grain);
    for (int i = 0; i < TG_MAX_SRC; i++) {
        if (d->src[i] && tg_nelements(d->src[i]) > n) n = tg_nelements(d->src[i]);
    }
    return (n + g - 1) / g;
}
// Row kernels: no more threads than rows (of dst; of src0 for reductions, of
// src1 for SET_ROWS).
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t tasks_rows(const struct tg_tensor * d) { return min64(tasks_elems(d), tg_nrows(d)); }
static int64_t tasks_src0_rows(const struct tg_tensor * d) { return min64(tasks_elems(d), tg_nrows(d->src[0])); }
static int64_t tasks_src1_rows(const struct tg_tensor * d) { return min64(tasks_elems(d), tg_nrows(d->src[1])); }

// Softmax rows: an exponential and five more passes per element, worth
// threads at an eighth of the grain (generation's kq_soft_max at 1k cells:
// 12 rows of 1k, on one thread ~8 us a layer).
static int64_t tasks_softmax(const struct tg_tensor * d) {
    const int64_t g = atomic_load(&g_grain) / 8 > 0 ? atomic_load(&g_grain) / 8 : 1;
    return min64((tg_nelements(d) + g - 1) / g, tg_nrows(d));
}

// Multiply-adds / 4 per grain: a matmul is worth splitting much earlier.
static int64_t tasks_matmul(const struct tg_tensor * d) {
    const struct tg_tensor * a = d->src[0];
    double work = (double) tg_nelements(d) * (double) (a ? a->ne[0] : 1) / 4.0;
    double t = work / (double) atomic_load(&g_grain);
    return t > 1e9 ? 1000000000 : (int64_t) t + 1;
}

// Fused attention: one task per (head, tile of 16 tokens), each a whole pass
// over the cells.
static int64_t tasks_attn(const struct tg_tensor * d) { return d->ne[1] * ((d->ne[2] + 15) / 16); }

// Per-thread scratch: 4 f32 rows of the widest row of the node, + 64 slack each.
int64_t tg_cpu_row_stride(const struct tg_tensor * dst) {
    int64_t m = dst->ne[0];
    for (int i = 0; i < TG_MAX_SRC; i++) {
        if (dst->src[i] && dst->src[i]->ne[0] > m) m = dst->src[i]->ne[0];
    }
    return tg_cpu_pad64((size_t) (m + 64) * sizeof(float)) / sizeof(float);
}
size_t tg_cpu_row_scratch(const struct tg_tensor * dst) {
    return 4 * (size_t) tg_cpu_row_stride(dst) * sizeof(float);
}
float * tg_cpu_rows(const struct tg_cpu_params * p, const struct tg_tensor * dst) {
    return tg_cpu_scratch(p, tg_cpu_row_scratch(dst));
}
// Reductions keep one double per row of src0 after the threads' rows.
double * tg_cpu_partials(const struct tg_cpu_params * p, const struct tg_tensor * dst) {
    return (double *) ((char *) p->wdata + tg_cpu_scratch_size(tg_cpu_row_scratch(dst), p->nth));
}

static size_t ws_rows(const struct tg_tensor * d, int nth) {
    return tg_cpu_scratch_size(tg_cpu_row_scratch(d), nth);
}
static size_t ws_partials(const struct tg_tensor * d, int nth) {
    return ws_rows(d, nth) + (size_t) tg_nrows(d->src[0]) * sizeof(double) + 64;
}

// ---- dispatch table ---------------------------------------------------------------------

struct op_desc {
    tg_cpu_kernel_fn fn;
    bool    (*supported)(const struct tg_tensor * dst);
    int64_t (*tasks)(const struct tg_tensor * dst);
    size_t  (*wsize)(const struct tg_tensor * dst, int nth);
};

static const struct op_desc g_ops[TG_OP_COUNT] = {
    [TG_OP_DUP]      = { tg_cpu_op_dup,      sup_dup,        tasks_elems, ws_rows },
    [TG_OP_CPY]      = { tg_cpu_op_dup,      sup_dup,        tasks_elems, ws_rows },
    [TG_OP_CONT]     = { tg_cpu_op_dup,      sup_dup,        tasks_elems, ws_rows },
    [TG_OP_ADD]      = { tg_cpu_op_binary,   sup_binary,     tasks_elems, ws_rows },
    [TG_OP_SUB]      = { tg_cpu_op_binary,   sup_binary,     tasks_elems, ws_rows },
    [TG_OP_MUL]      = { tg_cpu_op_binary,   sup_binary,     tasks_elems, ws_rows },
    [TG_OP_DIV]      = { tg_cpu_op_binary,   sup_binary,     tasks_elems, ws_rows },
    [TG_OP_SCALE]    = { tg_cpu_op_scale,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_SQR]      = { tg_cpu_op_unary,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_SQRT]     = { tg_cpu_op_unary,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_LOG]      = { tg_cpu_op_unary,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_NEG]      = { tg_cpu_op_unary,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_ABS]      = { tg_cpu_op_unary,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_SILU]     = { tg_cpu_op_unary,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_GELU]     = { tg_cpu_op_unary,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_RELU]     = { tg_cpu_op_unary,    sup_f32_unary,  tasks_elems, ws_rows },
    [TG_OP_GLU]      = { tg_cpu_op_glu,      sup_glu,        tasks_rows, ws_rows },
    [TG_OP_SUM]      = { tg_cpu_op_sum,      sup_f32_in,     tasks_src0_rows, ws_partials },
    [TG_OP_SUM_ROWS] = { tg_cpu_op_sum_rows, sup_f32_in,     tasks_rows, ws_rows },
    [TG_OP_MEAN]     = { tg_cpu_op_sum_rows, sup_f32_in,     tasks_rows, ws_rows },
    [TG_OP_ARGMAX]   = { tg_cpu_op_argmax,   sup_argmax,     tasks_rows, ws_rows },
    [TG_OP_REPEAT]   = { tg_cpu_op_repeat,   sup_plain_same, tasks_rows, ws_rows },
    [TG_OP_CONCAT]   = { tg_cpu_op_concat,   sup_concat,     tasks_rows, ws_rows },
    [TG_OP_GET_ROWS] = { tg_cpu_op_get_rows, sup_get_rows,   tasks_rows, ws_rows },
    [TG_OP_SET_ROWS] = { tg_cpu_op_set_rows, sup_set_rows,   tasks_src1_rows, ws_rows },
    [TG_OP_MUL_MAT]  = { tg_cpu_mul_mat,     tg_cpu_mul_mat_supported,  tasks_matmul, tg_cpu_mul_mat_work_size },
    [TG_OP_OUT_PROD] = { tg_cpu_out_prod,    tg_cpu_out_prod_supported, tasks_matmul, tg_cpu_out_prod_work_size },
    [TG_OP_RMS_NORM] = { tg_cpu_op_norm,     sup_f32_unary,  tasks_rows, ws_rows },
    [TG_OP_NORM]     = { tg_cpu_op_norm,     sup_f32_unary,  tasks_rows, ws_rows },
    [TG_OP_SOFT_MAX] = { tg_cpu_op_soft_max, sup_soft_max,   tasks_softmax, ws_rows },
    [TG_OP_ROPE]     = { tg_cpu_op_rope,     sup_rope,       tasks_rows, ws_rows },
    [TG_OP_DIAG_MASK_INF] = { tg_cpu_op_diag_mask_inf, sup_f32_unary, tasks_rows, ws_rows },
    [TG_OP_CROSS_ENTROPY_LOSS] = { tg_cpu_op_cross_entropy, sup_ce, tasks_src0_rows, ws_partials },
    [TG_OP_SET]      = { tg_cpu_op_set_acc,  sup_set_acc,    tasks_elems, ws_rows },
    [TG_OP_ACC]      = { tg_cpu_op_set_acc,  sup_set_acc,    tasks_elems, ws_rows },
    [TG_OP_FLASH_ATTN_EXT] = { tg_cpu_op_flash_attn, sup_flash_attn, tasks_attn, tg_cpu_flash_attn_work_size },
    [TG_OP_SILU_BACK]     = { tg_cpu_op_silu_back,     sup_back2,    tasks_rows, ws_rows },
    [TG_OP_RMS_NORM_BACK] = { tg_cpu_op_rms_norm_back, sup_back2,    tasks_rows, ws_rows },
    [TG_OP_GET_ROWS_BACK] = { tg_cpu_op_get_rows_back, sup_get_rows_back, tasks_rows, ws_rows },
    [TG_OP_OPT_STEP_SGD]   = { tg_cpu_op_opt_step, sup_opt, tasks_elems, ws_rows },
    [TG_OP_OPT_STEP_ADAMW] = { tg_cpu_op_opt_step, sup_opt, tasks_elems, ws_rows },
    [TG_OP_UNARY_BACK]    = { tg_cpu_op_unary_back,    sup_back2,    tasks_rows, ws_rows },
    [TG_OP_NORM_BACK]     = { tg_cpu_op_norm_back,     sup_back2,    tasks_rows, ws_rows },
};

static bool is_noop(enum tg_op op) {
    return op == TG_OP_NONE || op == TG_OP_VIEW || op == TG_OP_RESHAPE ||
           op == TG_OP_PERMUTE || op == TG_OP_TRANSPOSE;
}

// True when the CPU kernels implement this node (op and type combination).
bool tg_cpu_supports_op(const struct tg_tensor * node) {
    if (!node || (int) node->op < 0 || node->op >= TG_OP_COUNT) return false;
    if (is_noop(node->op)) return true;
    const struct op_desc * d = &g_ops[node->op];
    return d->fn && d->supported && d->supported(node);
}

// ---- validation -------------------------------------------------------------------------

static const char * tname(const struct tg_tensor * t, char * buf, size_t n) {
    if (t->name[0]) snprintf(buf, n, "'%s'", t->name);
    else snprintf(buf, n, "(unnamed tensor #%d)", (int) t->id);
    return buf;
}

static enum tg_status no_data_error(const struct tg_tensor * node, int index, const struct tg_tensor * t, int src) {
    char nb[96], tb[96], sb[96];
    tg_shape_str(t, sb, sizeof(sb));
    const char * how = "allocate its context with data (no_alloc = false) or give it memory through "
                       "a backend buffer / the graph allocator before computing";
    if (src < 0) {
        return tg_error(TG_ERR_NO_BUFFER, "tensor %s (%s, node %d %s) has no memory: %s",
                        tname(t, tb, sizeof(tb)), sb, index, tg_op_name(node->op), how);
    }
    return tg_error(TG_ERR_NO_BUFFER, "tensor %s (%s, source %d of node %d %s %s) has no memory: %s",
                    tname(t, tb, sizeof(tb)), sb, src, index, tg_op_name(node->op),
                    tname(node, nb, sizeof(nb)), how);
}

static enum tg_status unsupported_error(const struct tg_tensor * node, int index) {
    char msg[400], nb[96], sb[96];
    int len = snprintf(msg, sizeof(msg), "CPU backend has no kernel for %s %s (node %d): result %s",
                       tg_op_name(node->op), tname(node, nb, sizeof(nb)), index,
                       tg_shape_str(node, sb, sizeof(sb)));
    for (int i = 0; i < TG_MAX_SRC && len > 0 && (size_t) len < sizeof(msg); i++) {
        if (!node->src[i]) continue;
        len += snprintf(msg + len, sizeof(msg) - (size_t) len, ", src%d %s", i,
                        tg_shape_str(node->src[i], sb, sizeof(sb)));
    }
    return tg_error(TG_ERR_UNSUPPORTED, "%s", msg);
}

// ---- the compute job ---------------------------------------------------------------------

struct node_plan {
    struct tg_tensor * node;
    tg_cpu_kernel_fn fn;
    int nth;
    int index;
    bool sync_before;   // all threads meet before the node (after thread 0's before hook)
    bool sync_after;    // all threads meet after the node
    bool hooks_in_sync; // with hooks: thread 0 runs after(this) [and before(next)] inside sync_after
    bool before_done;   // before(this) already ran inside the previous node's sync
    int ngroup;         // > 1: this node and the next ngroup - 1 products run as one (group)
    struct tg_tensor * group[TG_CPU_MM_GROUP_MAX];
    bool ahead;         // computed ahead in entry `led`'s group: only its hooks here (deferrable hooks)
    int led;
    uint64_t t_cut[TG_CPU_MM_GROUP_MAX + 1];   // a group's time (thread 0) cut into its products' shares
};

struct graph_plan {
    struct node_plan * nodes;
    int n;
    const struct tg_cpu_hooks * hooks;  // NULL when neither hook is set
    bool defer;                         // hooks->deferrable, with its t_ns
    int stopped_at;                     // node index a hook stopped at, or -1
};

// Threads meet only where needed: around nodes that run on several threads
// (and, with hooks, on both sides of thread 0's hook calls). Runs of
// single-thread nodes go through thread 0 alone while the workers wait at the
// next meeting point. Returns whether any node runs on several threads.
static bool plan_syncs(struct graph_plan * pl) {
    bool any_multi = false;
    for (int k = 0; k < pl->n; k++) {
        struct node_plan * np = &pl->nodes[k];
        const bool multi = np->nth > 1;
        const bool next_multi = k + 1 < pl->n && pl->nodes[k + 1].nth > 1;
        const bool prev_multi = k > 0 && pl->nodes[k - 1].nth > 1;
        // With hooks, thread 0 runs after(k) and, when node k+1 is also
        // multi-threaded, before(k+1) while the others wait in the one sync
        // after node k: they start k+1 only once the hooks are done (a hook
        // may read node k's memory, which k+1 may overwrite in place).
        np->hooks_in_sync = pl->hooks && multi;
        np->before_done = pl->hooks && multi && prev_multi;
        np->sync_before = pl->hooks && multi && !prev_multi;
        np->sync_after = multi || (!pl->hooks && next_multi);
        any_multi |= multi;
    }
    return any_multi;
}

// Every thread walks the same schedule of syncs. Thread 0 alone decides to
// stop (a hook said so, or a kernel failed): it then skips work but keeps to
// the schedule until the next sync, after which every thread leaves.
// Thread 0's hook work inside a sync (tg_cpu_pool_sync_master).
struct hook_step {
    struct graph_plan * pl;
    struct tg_cpu_pool * pool;
    int k;            // the node just computed
    bool stopping;    // in/out: thread 0's stop decision
};

// A group's time [t_cut[0], end) cut into its products' shares, in their
// order, by the bytes of their weights (generation reads them at the memory's
// speed): product m's from t_cut[m] to t_cut[m + 1]. They ran interleaved;
// the shares keep the node times' sum that of the computation.
static void group_times(struct node_plan * np, uint64_t end) {
    const uint64_t t0 = np->t_cut[0], span = end > t0 ? end - t0 : 0;
    double total = 0, run = 0;
    for (int m = 0; m < np->ngroup; m++) total += (double) tg_nbytes(np->group[m]->src[0]);
    for (int m = 1; m < np->ngroup; m++) {
        run += (double) tg_nbytes(np->group[m - 1]->src[0]);
        np->t_cut[m] = t0 + (uint64_t) ((double) span * (total > 0 ? run / total : (double) m / np->ngroup));
    }
    np->t_cut[np->ngroup] = t0 + span;
}

static void hooks_between(void * arg) {
    struct hook_step * h = arg;
    struct graph_plan * pl = h->pl;
    const struct tg_cpu_hooks * hooks = pl->hooks;
    if (h->stopping) return;
    if (atomic_load(&h->pool->err_set)) { h->stopping = true; atomic_store(&h->pool->stop_request, 1); return; }
    struct node_plan * np = &pl->nodes[h->k];
    const bool cut = np->ngroup > 1 && pl->defer;
    if (cut) {   // every thread done: the group's time, a share for each product
        group_times(np, tg_observe_now_ns());
        *hooks->t_ns = np->t_cut[1];
    }
    if (hooks->after) hooks->after(np->node, np->index, hooks->user);
    if (cut) *hooks->t_ns = 0;
    if (h->k + 1 < pl->n && pl->nodes[h->k + 1].before_done && hooks->before) {
        const struct node_plan * nx = &pl->nodes[h->k + 1];
        if (!hooks->before(nx->node, nx->index, hooks->user)) {
            pl->stopped_at = nx->index;
            h->stopping = true;
            atomic_store(&h->pool->stop_request, 1);
        }
    }
}

// The hooks of a product computed ahead in a group (deferrable hooks): at
// its own place, its bytes as the group left them, with its share of the
// group's time; before's answer is not asked for (the node ran).
static void ahead_hooks(struct graph_plan * pl, const struct node_plan * np) {
    const struct tg_cpu_hooks * hooks = pl->hooks;
    const struct node_plan * gp = &pl->nodes[np->led];
    int m = 1;
    while (m < gp->ngroup - 1 && gp->group[m] != np->node) m++;
    if (!hooks) return;
    const uint64_t b = gp->t_cut[m], e = gp->t_cut[m + 1];
    if (hooks->before) {
        *hooks->t_ns = b ? b : 1;
        (void) hooks->before(np->node, np->index, hooks->user);
    }
    if (hooks->after) {
        *hooks->t_ns = e > b ? e : b + 1;
        hooks->after(np->node, np->index, hooks->user);
    }
    *hooks->t_ns = 0;
}

// Every thread walks the same schedule of syncs. Thread 0 alone decides to
// stop (a hook said so, or a kernel failed): it then skips work but keeps to
// the schedule until the next sync, after which every thread leaves.
static void graph_job(struct tg_cpu_pool * pool, void * job, int ith) {
    struct graph_plan * pl = job;
    const int n = pl->n;
    const struct tg_cpu_hooks * hooks = pl->hooks;
    struct tg_cpu_params prm = { .ith = ith, .nth = 1, .wdata = pool->wdata, .wsize = pool->wsize, .pool = pool };
    struct hook_step hs = { pl, pool, 0, false };   // hs.stopping: thread 0 only
    for (int k = 0; k < n; k++) {
        struct node_plan * np = &pl->nodes[k];
        if (np->ahead) {   // computed in an earlier group: its calls at its place, with the group's times
            if (ith == 0 && !hs.stopping) ahead_hooks(pl, np);
            continue;
        }
        if (ith == 0 && !hs.stopping && hooks && hooks->before && !np->before_done && !hooks->before(np->node, np->index, hooks->user)) {
            pl->stopped_at = np->index;
            hs.stopping = true;
            atomic_store(&pool->stop_request, 1);
        }
        if (np->sync_before && tg_cpu_pool_sync(pool)) break;
        if (ith == 0 && np->ngroup > 1 && pl->defer) np->t_cut[0] = tg_observe_now_ns();
        if (!hs.stopping && ith < np->nth) {
            prm.nth = np->nth;
            if (np->ngroup > 1) tg_cpu_mul_mat_group(&prm, np->group, np->ngroup);
            else np->fn(&prm, np->node);
        }
        if (np->sync_after) {
            bool stop;
            if (ith == 0 && np->hooks_in_sync) { hs.k = k; stop = tg_cpu_pool_sync_master(pool, hooks_between, &hs); }
            else stop = tg_cpu_pool_sync(pool);
            if (stop) break;
        }
        if (ith == 0 && !hs.stopping && !np->hooks_in_sync) {
            if (atomic_load(&pool->err_set)) {
                hs.stopping = true;
                atomic_store(&pool->stop_request, 1);
            } else if (hooks && hooks->after) {
                hooks->after(np->node, np->index, hooks->user);
            }
        }
    }
    // Nothing in `job` is read after this sync (thread 0 frees it).
    tg_cpu_pool_sync(pool);
}

static _Atomic bool g_mm_grouping = true;
static _Atomic uint64_t g_mm_grouped;   // products planned inside groups, ever
void tg_cpu_set_mm_grouping(bool on) { atomic_store(&g_mm_grouping, on); }
uint64_t tg_cpu_mm_grouped_count(void) { return atomic_load(&g_mm_grouped); }

// Without hooks (nothing watches a node's memory between nodes), or with
// hooks that accept a node computed ahead of its place (deferrable: the
// products taken into a group keep their entries, for their calls only),
// generation products of the same activations on every thread become one entry: their
// row blocks one list for the threads, b converted once, one barrier
// (tg_cpu_mul_mat_group). In the llama graph Q, K and V stand a rope or two
// apart (llama.cpp's node order, kept so that dumps line up): a later product
// joins the first when it is up to TG_GROUP_AHEAD plan entries on and moving
// it before the entries in between changes nothing they read or write (their
// memory and the product's are apart, and they are ops that write only their
// result); gate and up stand side by side.
enum { TG_GROUP_AHEAD = 6 };

static bool mem_apart(const struct tg_tensor * x, const struct tg_tensor * y) {
    if (!x || !y || !x->data || !y->data) return true;
    const char * a0 = x->data, * b0 = y->data;
    return a0 + tg_nbytes(x) <= b0 || b0 + tg_nbytes(y) <= a0;
}
// Whether node x (computed between) and product b (moved before it) are independent.
static bool can_pass(const struct tg_tensor * x, const struct tg_tensor * b) {
    switch (x->op) {   // ops that write their result only
    case TG_OP_ROPE: case TG_OP_ADD: case TG_OP_MUL: case TG_OP_RMS_NORM: case TG_OP_NORM: case TG_OP_SCALE:
    case TG_OP_CPY: case TG_OP_DUP: case TG_OP_CONT: case TG_OP_GET_ROWS: case TG_OP_SET_ROWS: case TG_OP_GLU:
        break;
    default:
        return false;
    }
    if (!mem_apart(x, b)) return false;   // x writes or reads what b writes
    for (int i = 0; i < TG_MAX_SRC; i++) {
        if (!mem_apart(x, b->src[i])) return false;   // x writes what b reads
        if (!mem_apart(x->src[i], b)) return false;   // x reads what b writes
    }
    return true;
}

static void plan_groups(struct graph_plan * pl, int n_threads) {
    if ((pl->hooks && !pl->defer) || n_threads < 2 || !atomic_load(&g_mm_grouping)) return;
    const bool keep = pl->hooks != NULL;   // taken products keep an entry for their hooks
    int * taken = calloc((size_t) pl->n, sizeof(int));   // 1 + the entry of the group a product joined
    if (!taken) return;   // no grouping: the same results
    int out = 0;
    for (int k = 0; k < pl->n; k++) {
        if (taken[k]) {
            if (keep) {
                struct node_plan np = pl->nodes[k];
                np.fn = NULL;
                np.nth = 1;
                np.ahead = true;
                np.led = taken[k] - 1;
                pl->nodes[out++] = np;
            }
            continue;
        }
        struct node_plan np = pl->nodes[k];
        if (np.node->op == TG_OP_MUL_MAT && np.nth == n_threads) {
            struct tg_tensor * g[TG_CPU_MM_GROUP_MAX] = { np.node };
            int len = 1;
            for (int j = k + 1; j < pl->n && j <= k + TG_GROUP_AHEAD && len < TG_CPU_MM_GROUP_MAX; j++) {
                struct tg_tensor * b = pl->nodes[j].node;
                bool ok = !taken[j] && pl->nodes[j].nth == n_threads && b->op == TG_OP_MUL_MAT;
                for (int i = 0; i < len && ok; i++)   // with every product of the group, apart in memory
                    ok = tg_cpu_mul_mat_groupable(g[i], b) && mem_apart(g[i], b) && mem_apart(g[i], b->src[0]) &&
                         mem_apart(b, g[i]->src[0]) && mem_apart(b, g[i]->src[1]);
                for (int x = k + 1; x < j && ok; x++)   // and with every entry it passes
                    ok = taken[x] || can_pass(pl->nodes[x].node, b);
                if (ok) { g[len++] = b; taken[j] = out + 1; }
            }
            if (len > 1) {
                atomic_fetch_add(&g_mm_grouped, (uint64_t) len);
                np.ngroup = len;
                for (int i = 0; i < len; i++) np.group[i] = g[i];
            }
        }
        pl->nodes[out++] = np;
    }
    free(taken);
    pl->n = out;
}

// Builds the plan: skips no-op nodes, checks data and support, picks nth and
// the work size. Returns TG_OK or the error (message set).
static enum tg_status make_plan(struct tg_cpu_pool * pool, struct tg_graph * g, struct graph_plan * pl, size_t * wsize) {
    *wsize = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        struct tg_tensor * node = g->nodes[i];
        if (!node) return tg_error(TG_ERR_INVALID_ARG, "tg_cpu_graph_compute: node %d is NULL", i);
        if ((int) node->op < 0 || node->op >= TG_OP_COUNT) {
            return tg_error(TG_ERR_INVALID_ARG, "tg_cpu_graph_compute: node %d has invalid op %d", i, (int) node->op);
        }
        if (is_noop(node->op)) continue;
        for (int s = 0; s < TG_MAX_SRC; s++) {
            if (node->src[s] && !node->src[s]->data) return no_data_error(node, i, node->src[s], s);
        }
        if (!node->data) return no_data_error(node, i, node, -1);
        const struct op_desc * d = &g_ops[node->op];
        if (!d->fn || !d->supported(node)) return unsupported_error(node, i);
        int64_t t = d->tasks(node);
        int nth = t < pool->n_threads ? (int) (t < 1 ? 1 : t) : pool->n_threads;
        size_t ws = d->wsize ? d->wsize(node, nth) : 0;
        if (ws > *wsize) *wsize = ws;
        pl->nodes[pl->n++] = (struct node_plan) { .node = node, .fn = d->fn, .nth = nth, .index = i };
    }
    plan_groups(pl, pool->n_threads);
    return TG_OK;
}

// Computes the nodes of g in order on host memory. See tg/cpu.h.
enum tg_status tg_cpu_graph_compute(struct tg_cpu_pool * pool, struct tg_graph * g,
                                    const struct tg_cpu_hooks * hooks) {
    if (!pool || !g) return tg_error(TG_ERR_INVALID_ARG, "tg_cpu_graph_compute: NULL %s", pool ? "graph" : "pool");
    if (g->n_nodes == 0) return TG_OK;
    if (pthread_mutex_trylock(&pool->busy) != 0) {
        return tg_error(TG_ERR_INVALID_ARG, "tg_cpu_graph_compute: the pool is already computing a graph "
                        "(concurrent or re-entrant use from a hook)");
    }
    struct graph_plan pl = { .n = 0, .stopped_at = -1 };
    pl.hooks = hooks && (hooks->before || hooks->after) ? hooks : NULL;
    pl.defer = pl.hooks && pl.hooks->deferrable && pl.hooks->t_ns;
    pl.nodes = malloc((size_t) g->n_nodes * sizeof(*pl.nodes));
    enum tg_status st = TG_OK;
    size_t ws = 0;
    if (!pl.nodes) st = tg_error(TG_ERR_NOMEM, "tg_cpu_graph_compute: out of memory for %d nodes", g->n_nodes);
    if (st == TG_OK) st = make_plan(pool, g, &pl, &ws);
    if (st == TG_OK && !tg_cpu_pool_reserve(pool, ws + 64)) {
        st = tg_error(TG_ERR_NOMEM, "tg_cpu_graph_compute: cannot allocate a %zu-byte work buffer", ws);
    }
    if (st == TG_OK && pl.n > 0) {
        bool all_threads = plan_syncs(&pl);   // no node worth splitting: the workers sleep on
        tg_cpu_pool_run(pool, graph_job, &pl, all_threads);
        if (atomic_load(&pool->err_set)) {
            st = tg_error(pool->err_st, "%s", pool->err_msg);
        } else if (pl.stopped_at >= 0) {
            char nb[96];
            st = tg_error(TG_ERR_ABORTED, "graph compute stopped by the before hook at node %d %s %s",
                          pl.stopped_at, tg_op_name(g->nodes[pl.stopped_at]->op),
                          tname(g->nodes[pl.stopped_at], nb, sizeof(nb)));
        }
    }
    free(pl.nodes);
    pthread_mutex_unlock(&pool->busy);
    return st;
}

// Convenience: temporary pool of n_threads.
enum tg_status tg_cpu_compute(struct tg_graph * g, int n_threads) {
    struct tg_cpu_pool * pool = tg_cpu_pool_new(n_threads);
    if (!pool) return tg_last_status();
    enum tg_status st = tg_cpu_graph_compute(pool, g, NULL);
    tg_cpu_pool_free(pool);
    return st;
}
