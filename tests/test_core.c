// test_core.c - contexts (arena, exhaustion, iteration), tensors (strides,
// predicates, element access), views/permutes/reshapes, graphs.
#include "check.h"
#include "tg/core.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tg_context * new_ctx(size_t size, bool no_alloc) {
    struct tg_context_params p = { size, NULL, no_alloc };
    return tg_context_new(p);
}

static void test_context(void) {
    struct tg_context * ctx = new_ctx(1 << 20, false);
    CHECK(ctx != NULL && tg_context_used(ctx) == 0 && !tg_context_no_alloc(ctx), "context of 1 MiB created, empty");
    struct tg_tensor * a = tg_new_tensor_2d(ctx, TG_TYPE_F32, 5, 3);
    struct tg_tensor * b = tg_new_tensor_1d(ctx, TG_TYPE_F16, 7);
    struct tg_tensor * c = tg_new_tensor_3d(ctx, TG_TYPE_Q8_0, 64, 2, 2);
    CHECK(a && b && c, "three tensors created");
    CHECK(((uintptr_t) a->data % TG_MEM_ALIGN) == 0 && ((uintptr_t) b->data % TG_MEM_ALIGN) == 0 &&
          ((uintptr_t) c->data % TG_MEM_ALIGN) == 0, "tensor data is 64-byte aligned");
    CHECK(a->nb[0] == 4 && a->nb[1] == 20 && a->nb[2] == 60 && a->nb[3] == 60, "f32 [5,3] strides 4,20,60,60");
    CHECK(c->nb[0] == 34 && c->nb[1] == 68 && c->nb[2] == 136 && tg_nbytes(c) == 272, "q8_0 [64,2,2] strides 34,68,136, 272 bytes");
    CHECK(a->id == 0 && b->id == 1 && c->id == 2 && a->ctx == ctx, "ids in creation order, ctx recorded");
    tg_set_name(a, "alpha"); tg_set_name(b, "beta"); tg_format_name(c, "gamma-%d", 3);
    CHECK(tg_context_first_tensor(ctx) == a && tg_context_next_tensor(ctx, a) == b && tg_context_next_tensor(ctx, b) == c &&
          tg_context_next_tensor(ctx, c) == NULL, "iteration in creation order");
    CHECK(tg_context_get_tensor(ctx, "gamma-3") == c && tg_context_get_tensor(ctx, "nope") == NULL, "lookup by name");
    char longname[200];
    memset(longname, 'x', sizeof(longname) - 1); longname[199] = 0;
    tg_set_name(b, longname);
    CHECK(strlen(tg_get_name(b)) == TG_MAX_NAME - 1, "names truncated to %d chars", TG_MAX_NAME - 1);
    size_t used = tg_context_used(ctx);
    CHECK(used >= 3 * tg_tensor_overhead() + 60 + 14 + 272 && used % TG_MEM_ALIGN == 0, "used %zu bytes covers overheads and data", used);
    CHECK(tg_graph_overhead(16) > 16 * 2 * sizeof(void *), "graph overhead %zu for 16 nodes", tg_graph_overhead(16));
    tg_set_input(a); tg_set_output(a); tg_set_param(b); tg_set_loss(c);
    CHECK(a->flags == (TG_FLAG_INPUT | TG_FLAG_OUTPUT) && b->flags == TG_FLAG_PARAM && c->flags == TG_FLAG_LOSS, "flags");
    tg_context_free(ctx);

    // arena exhaustion: metadata-only context sized for exactly two tensors
    ctx = new_ctx(2 * tg_tensor_overhead(), true);
    a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 1000000);
    b = tg_new_tensor_1d(ctx, TG_TYPE_F32, 10);
    CHECK(a && b && a->data == NULL && tg_context_no_alloc(ctx), "no_alloc context: 2 tensors fit, no data");
    tg_clear_error();
    c = tg_new_tensor_2d(ctx, TG_TYPE_F32, 4, 4);
    printf("    message: %s\n", tg_last_error());
    CHECK(c == NULL && tg_last_status() == TG_ERR_NOMEM && strstr(tg_last_error(), "[4,4,1,1] f32") &&
          strstr(tg_last_error(), "0 bytes left"), "third tensor: NULL, TG_ERR_NOMEM naming tensor, bytes needed and left");
    tg_context_free(ctx);

    // data arena too small for the data
    ctx = new_ctx(tg_tensor_overhead() + 1024, false);
    CHECK(tg_new_tensor_1d(ctx, TG_TYPE_F32, 256) != NULL, "1024-byte tensor fits exactly");
    CHECK(tg_new_tensor_1d(ctx, TG_TYPE_F32, 1) == NULL && tg_last_status() == TG_ERR_NOMEM, "next tensor does not");
    tg_context_free(ctx);

    // caller-owned buffer (unaligned start)
    char * buf = malloc(8192 + 1);
    struct tg_context_params p = { 8192, buf + 1, false };
    ctx = tg_context_new(p);
    a = tg_new_tensor_1d(ctx, TG_TYPE_F32, 16);
    CHECK(a && (char *) a->data > buf && (char *) a->data < buf + 8193 && ((uintptr_t) a->data % 64) == 0,
          "caller buffer used for tensor data, aligned");
    tg_context_free(ctx);
    free(buf);

    ctx = new_ctx(1 << 16, false);
    const int64_t bad_ne[2] = { 4, 0 };
    CHECK(tg_new_tensor(ctx, TG_TYPE_F32, 2, bad_ne) == NULL && tg_last_status() == TG_ERR_SHAPE, "ne1 = 0 rejected");
    CHECK(tg_new_tensor(ctx, TG_TYPE_F32, 5, bad_ne) == NULL && tg_last_status() == TG_ERR_INVALID_ARG, "n_dims 5 rejected");
    CHECK(tg_new_tensor_1d(ctx, TG_TYPE_Q4_0, 48) == NULL && tg_last_status() == TG_ERR_SHAPE, "q4_0 ne0 48 (not multiple of 32) rejected");
    CHECK(tg_new_tensor_1d(ctx, (enum tg_type) 5, 4) == NULL && tg_last_status() == TG_ERR_TYPE, "type id 5 rejected");
    CHECK(tg_new_tensor_4d(ctx, TG_TYPE_F32, INT64_C(1) << 40, INT64_C(1) << 30, 1, 1) == NULL && tg_last_status() == TG_ERR_SHAPE,
          "byte-size overflow rejected: %s", tg_last_error());
    tg_context_free(ctx);
}

static void test_tensor_access(void) {
    struct tg_context * ctx = new_ctx(1 << 20, false);
    struct tg_tensor * a = tg_new_tensor_2d(ctx, TG_TYPE_F32, 3, 2);
    for (int i = 0; i < 6; i++) tg_set_f32_nd(a, i % 3, i / 3, 0, 0, (float) i);
    CHECK(((float *) a->data)[4] == 4.0f && tg_get_f32_nd(a, 2, 1, 0, 0) == 5.0f, "f32 set/get by index");
    struct tg_tensor * h = tg_new_tensor_1d(ctx, TG_TYPE_F16, 4);
    tg_set_f32_nd(h, 1, 0, 0, 0, 0.5f);
    CHECK(((tg_fp16_t *) h->data)[1] == 0x3800 && tg_get_f32_nd(h, 1, 0, 0, 0) == 0.5f, "f16 set/get converts");
    struct tg_tensor * bf = tg_new_tensor_1d(ctx, TG_TYPE_BF16, 2);
    tg_set_f32_nd(bf, 0, 0, 0, 0, -2.0f);
    CHECK(tg_get_f32_nd(bf, 0, 0, 0, 0) == -2.0f, "bf16 set/get");
    struct tg_tensor * iv = tg_new_tensor_1d(ctx, TG_TYPE_I32, 2);
    tg_set_f32_nd(iv, 1, 0, 0, 0, 42.0f);
    CHECK(((int32_t *) iv->data)[1] == 42 && tg_get_f32_nd(iv, 1, 0, 0, 0) == 42.0f, "i32 set/get");
    struct tg_tensor * q = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, 32, 2);
    float src[64];
    for (int i = 0; i < 64; i++) src[i] = (float) (i - 32) / 4;
    tg_quantize_row_q8_0(src, q->data, 64);
    CHECK(fabsf(tg_get_f32_nd(q, 5, 1, 0, 0) - src[37]) <= 7.75f / 127 / 2 + 1e-4f, "q8_0 get dequantizes the block (%g vs %g)",
          (double) tg_get_f32_nd(q, 5, 1, 0, 0), (double) src[37]);
    tg_clear_error();
    tg_set_f32_nd(q, 0, 0, 0, 0, 1.0f);
    CHECK(tg_last_status() == TG_ERR_UNSUPPORTED, "q8_0 set is refused with TG_ERR_UNSUPPORTED");
    CHECK(isnan(tg_get_f32_nd(a, 3, 0, 0, 0)) && tg_last_status() == TG_ERR_INVALID_ARG, "out-of-range get: NaN + INVALID_ARG");
    // strided access through a transposed view
    struct tg_tensor * t = tg_transpose(ctx, a);
    CHECK(tg_get_f32_nd(t, 1, 2, 0, 0) == 5.0f && tg_get_f32_nd(t, 0, 1, 0, 0) == 1.0f, "get through a transposed view");
    char buf[64];
    CHECK(strcmp(tg_shape_str(a, buf, sizeof(buf)), "[3,2,1,1] f32") == 0, "shape_str '%s'", buf);
    CHECK(strcmp(tg_shape_str(a, buf, 6), "[3,2,") == 0, "shape_str truncates and terminates");
    CHECK(strcmp(tg_op_name(TG_OP_MUL_MAT), "MUL_MAT") == 0 && strcmp(tg_op_name(TG_OP_CROSS_ENTROPY_LOSS), "CROSS_ENTROPY_LOSS") == 0 &&
          strcmp(tg_op_name(TG_OP_ACC), "ACC") == 0 && strcmp(tg_op_name(TG_OP_COUNT), "UNKNOWN") == 0, "op names (ggml spelling)");
    CHECK(tg_op_is_view(TG_OP_PERMUTE) && !tg_op_is_view(TG_OP_CPY), "op_is_view");
    struct tg_context * na = new_ctx(1 << 12, true);
    struct tg_tensor * nd = tg_new_tensor_1d(na, TG_TYPE_F32, 4);
    CHECK(isnan(tg_get_f32_nd(nd, 0, 0, 0, 0)) && tg_last_status() == TG_ERR_NO_BUFFER, "get on a tensor without data: TG_ERR_NO_BUFFER");
    tg_context_free(na);
    tg_context_free(ctx);
}

static void test_views(void) {
    struct tg_context * ctx = new_ctx(1 << 20, false);
    struct tg_tensor * a = tg_set_name(tg_new_tensor_3d(ctx, TG_TYPE_F32, 8, 6, 4), "a");
    CHECK(tg_is_contiguous(a) && !tg_is_permuted(a) && !tg_is_transposed(a) && tg_n_dims(a) == 3, "a contiguous, 3 dims");
    struct tg_tensor * v = tg_view_2d(ctx, a, 4, 3, a->nb[1], 2 * a->nb[1] + 8);
    CHECK(v && v->view_src == a && v->view_offs == 2 * 32 + 8 && v->data == (char *) a->data + 72, "view_2d: view_src a, offset 72, data a+72");
    CHECK(v->nb[1] == 32 && v->ne[0] == 4 && v->ne[1] == 3 && !tg_is_contiguous(v) && tg_is_contiguous_rows(v), "view_2d strides, not contiguous");
    CHECK(v->op == TG_OP_VIEW && v->src[0] == a && strcmp(v->name, "a (view)") == 0, "view op, src, name '%s'", v->name);
    struct tg_tensor * vv = tg_view_1d(ctx, v, 2, 4);
    CHECK(vv && vv->view_src == a && vv->view_offs == 76 && vv->data == (char *) a->data + 76, "view of a view points at the owner (offs 76)");
    struct tg_tensor * p = tg_permute(ctx, a, 2, 0, 1, 3);
    CHECK(p && p->ne[0] == 6 && p->ne[1] == 4 && p->ne[2] == 8 && p->nb[0] == 32 && p->nb[1] == 192 && p->nb[2] == 4,
          "permute(2,0,1,3): ne [6,4,8], nb [32,192,4]");
    CHECK(tg_is_permuted(p) && p->op_params[0] == 2 && p->op_params[1] == 0 && strcmp(p->name, "a (permuted)") == 0, "permute params/name");
    struct tg_tensor * t = tg_transpose(ctx, a);
    CHECK(t && t->ne[0] == 6 && t->ne[1] == 8 && t->nb[0] == 32 && t->nb[1] == 4 && tg_is_transposed(t) &&
          t->op == TG_OP_TRANSPOSE && strcmp(t->name, "a (transposed)") == 0, "transpose swaps ne/nb 0 and 1");
    CHECK(tg_nbytes(t) == tg_nbytes(a) && tg_nbytes(p) == tg_nbytes(a), "nbytes of transposed/permuted a = a's %zu bytes", tg_nbytes(a));
    struct tg_tensor * tv = tg_view_1d(ctx, t, 3, 0);
    CHECK(tv && tv->nb[0] == 4 && tg_nbytes(tv) == 12, "view of a transposed tensor has dense elements (nb0 4)");
    struct tg_tensor * q = tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, 64, 3);
    CHECK(tg_permute(ctx, q, 0, 2, 1, 3) != NULL && tg_transpose(ctx, q) == NULL && tg_last_status() == TG_ERR_TYPE,
          "quantized tensors permute only dims 1..3 (transpose refused: %s)", tg_last_error());
    struct tg_tensor * r = tg_reshape_2d(ctx, a, 48, 4);
    CHECK(r && r->ne[0] == 48 && r->ne[1] == 4 && r->nb[1] == 192 && r->view_src == a && r->data == a->data &&
          r->op == TG_OP_RESHAPE && strcmp(r->name, "a (reshaped)") == 0, "reshape_2d [48,4] views a");
    struct tg_tensor * tc = tg_cont(ctx, t);
    CHECK(tc && tg_is_contiguous(tc) && tc->ne[0] == 6 && tc->op == TG_OP_CONT && tc->view_src == NULL, "cont of transpose is a new contiguous tensor");
    struct tg_tensor * b = tg_new_tensor_3d(ctx, TG_TYPE_F32, 8, 6, 4);
    struct tg_tensor * ai = tg_add_inplace(ctx, a, b);
    CHECK(ai && ai->view_src == a && ai->data == a->data && ai->op == TG_OP_ADD && ai->src[0] == a && ai->src[1] == b, "add_inplace views a");
    struct tg_tensor * si = tg_scale_inplace(ctx, v, 2.0f);
    CHECK(si && si->view_src == a && si->view_offs == 72 && tg_get_op_param_f32(si, 0) == 2.0f, "scale_inplace of a view: owner a, offs 72, s = 2");
    struct tg_tensor * cp = tg_cpy(ctx, t, tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F16, 6, 32), "dst"));
    CHECK(cp && cp->op == TG_OP_CPY && cp->view_src == cp->src[1] && cp->src[0] == t && strcmp(cp->name, "dst (copy of a (transposed))") == 0,
          "cpy: result views b, name '%s'", cp ? cp->name : "");
    struct tg_tensor * add = tg_add(ctx, a, b);
    CHECK(add && add->view_src == NULL && add->name[0] == 0 && tg_op_can_inplace(add), "add result is new, unnamed, can be in place");
    struct tg_tensor * mm = tg_mul_mat(ctx, a, b);
    CHECK(mm && mm->ne[0] == 6 && mm->ne[1] == 6 && mm->ne[2] == 4 && mm->type == TG_TYPE_F32 && !tg_op_can_inplace(mm), "mul_mat [8,6,4]x[8,6,4] -> [6,6,4]");
    struct tg_tensor * pos = tg_new_tensor_1d(ctx, TG_TYPE_I32, 4);
    struct tg_tensor * rp = tg_rope(ctx, a, pos, 8, TG_ROPE_NEOX, 10000.0f, 1.0f);
    CHECK(rp && rp->op_params[0] == 8 && rp->op_params[1] == 2 && tg_get_op_param_f32(rp, 3) == 10000.0f &&
          tg_get_op_param_f32(rp, 4) == 1.0f && tg_op_can_inplace(rp), "rope op_params");
    struct tg_tensor * sw = tg_swiglu(ctx, a);
    CHECK(sw && sw->ne[0] == 4 && sw->op == TG_OP_GLU && sw->op_params[0] == TG_GLU_SWIGLU && !tg_op_can_inplace(sw), "swiglu halves ne0");
    struct tg_tensor * gr = tg_get_rows(ctx, tg_new_tensor_2d(ctx, TG_TYPE_Q4_0, 64, 10), tg_new_tensor_1d(ctx, TG_TYPE_I32, 3));
    CHECK(gr && gr->ne[0] == 64 && gr->ne[1] == 3 && gr->type == TG_TYPE_F32, "get_rows q4_0 [64,10] by 3 ids -> f32 [64,3]");
    struct tg_tensor * cc = tg_concat(ctx, a, b, 2);
    CHECK(cc && cc->ne[2] == 8 && cc->op_params[0] == 2, "concat along dim 2");
    struct tg_tensor * sm = tg_soft_max_ext(ctx, a, tg_new_tensor_2d(ctx, TG_TYPE_F16, 8, 8), 0.125f, 0.0f);
    CHECK(sm && sm->src[1] && tg_get_op_param_f32(sm, 0) == 0.125f, "soft_max_ext with f16 mask, scale param");
    struct tg_tensor * st = tg_set(ctx, a, tg_new_tensor_1d(ctx, TG_TYPE_F32, 8), a->nb[1], a->nb[2], a->nb[3], 32);
    CHECK(st && st->op == TG_OP_SET && st->op_params[3] == 32 && st->op_params[4] == 0 && st->view_src == NULL, "set: params, new memory");
    struct tg_tensor * ac = tg_acc_inplace(ctx, a, tg_new_tensor_1d(ctx, TG_TYPE_F32, 8), a->nb[1], a->nb[2], a->nb[3], 0);
    CHECK(ac && ac->op == TG_OP_ACC && ac->op_params[4] == 1 && ac->view_src == a, "acc_inplace views a");
    struct tg_tensor * kv = tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F16, 8, 10), "kv");
    struct tg_tensor * kview = tg_view_2d(ctx, kv, 8, 5, kv->nb[1], 5 * kv->nb[1]);
    struct tg_tensor * rows = tg_new_tensor_2d(ctx, TG_TYPE_F32, 8, 3), * ids = tg_new_tensor_1d(ctx, TG_TYPE_I64, 3);
    struct tg_tensor * sr2 = tg_set_rows(ctx, kview, rows, ids);
    CHECK(sr2 && sr2->op == TG_OP_SET_ROWS && sr2->src[0] == kview && sr2->src[1] == rows && sr2->src[2] == ids &&
          sr2->view_src == kv && sr2->view_offs == 80 && sr2->ne[1] == 5 && sr2->data == (char *) kv->data + 80,
          "set_rows into a view of kv: src a,b,c; views kv at offset 80");
    struct tg_tensor * am = tg_argmax(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F32, 10, 3));
    CHECK(am && am->type == TG_TYPE_I32 && am->ne[0] == 3, "argmax [10,3] -> i32 [3]");
    struct tg_tensor * sr = tg_sum_rows(ctx, a);
    CHECK(sr && sr->ne[0] == 1 && sr->ne[1] == 6 && sr->ne[2] == 4, "sum_rows [8,6,4] -> [1,6,4]");
    tg_context_free(ctx);
}

static void test_graph(void) {
    struct tg_context * ctx = new_ctx(32 << 20, true);
    struct tg_tensor * w = tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F32, 4, 3), "w");
    struct tg_tensor * x = tg_set_name(tg_new_tensor_2d(ctx, TG_TYPE_F32, 4, 2), "x");
    struct tg_tensor * y = tg_set_name(tg_mul_mat(ctx, w, x), "y");           // [3,2]
    struct tg_tensor * z = tg_set_name(tg_add(ctx, y, y), "z");
    struct tg_tensor * s = tg_set_name(tg_soft_max(ctx, z), "s");
    struct tg_tensor * v = tg_view_1d(ctx, s, 3, 0);
    struct tg_tensor * out = tg_set_name(tg_scale_inplace(ctx, v, 0.5f), "out");
    struct tg_graph * g = tg_graph_new(ctx, 16);
    CHECK(g && g->size == 16 && g->n_nodes == 0, "graph of 16 created");
    CHECK(tg_graph_build_forward(g, out) == TG_OK, "build_forward ok");
    CHECK(g->n_nodes == 5 && g->n_leafs == 2, "5 nodes, 2 leafs (got %d, %d)", g->n_nodes, g->n_leafs);
    CHECK(g->nodes[0] == y && g->nodes[1] == z && g->nodes[2] == s && g->nodes[3] == v && g->nodes[4] == out, "nodes in execution order");
    CHECK(g->leafs[0] == w && g->leafs[1] == x, "leafs w, x");
    CHECK(tg_graph_build_forward(g, z) == TG_OK && g->n_nodes == 5, "rebuilding with a visited tensor adds nothing");
    CHECK(tg_graph_get_tensor(g, "s") == s && tg_graph_get_tensor(g, "w") == w && tg_graph_get_tensor(g, "q") == NULL, "graph_get_tensor");
    struct tg_graph gv = tg_graph_view(g, 1, 3);
    CHECK(gv.n_nodes == 2 && gv.nodes[0] == z && gv.nodes[1] == s && gv.n_leafs == 0, "graph_view [1,3)");
    struct tg_graph bad = tg_graph_view(g, 3, 9);
    CHECK(bad.n_nodes == 0 && tg_last_status() == TG_ERR_INVALID_ARG, "graph_view out of range is empty + error");
    char buf[4096];
    size_t need = tg_graph_summary(g, buf, sizeof(buf));
    printf("%s", buf);
    CHECK(need == strlen(buf) && strstr(buf, "MUL_MAT") && strstr(buf, "SOFT_MAX") && strstr(buf, "<- w, x") && strstr(buf, "leaf"),
          "summary lists nodes with sources and leafs (%zu chars)", need);
    char small[16];
    CHECK(tg_graph_summary(g, small, sizeof(small)) == need && strlen(small) == 15, "summary into a small buffer truncates, returns full length");
    tg_graph_reset_visited(g);
    CHECK(g->n_nodes == 0 && tg_graph_build_forward(g, y) == TG_OK && g->n_nodes == 1, "reset then rebuild");
    // capacity exhaustion
    struct tg_graph * g2 = tg_graph_new(ctx, 2);
    enum tg_status st = tg_graph_build_forward(g2, out);
    printf("    message: %s\n", tg_last_error());
    CHECK(st == TG_ERR_NOMEM && strstr(tg_last_error(), "capacity 2"), "graph full: TG_ERR_NOMEM naming capacity 2");
    // a long chain
    struct tg_tensor * c = x;
    for (int i = 0; i < 20000; i++) c = tg_scale(ctx, c, 1.0f);
    struct tg_graph * g3 = tg_graph_new(ctx, 20000);
    CHECK(tg_graph_build_forward(g3, c) == TG_OK && g3->n_nodes == 20000 && g3->n_leafs == 1 && g3->nodes[19999] == c &&
          g3->nodes[0]->src[0] == x, "chain of 20000 scales (deep graph, no recursion)");
    tg_context_free(ctx);
}

// tg_format_name writes what snprintf writes (its fast path for %s/%d/%%
// formats, and the fallback), truncated to TG_MAX_NAME - 1 characters.
static void test_format_name(void) {
    struct tg_context * ctx = tg_context_new((struct tg_context_params) { .mem_size = 1 << 16 });
    struct tg_tensor * t = ctx ? tg_new_tensor_1d(ctx, TG_TYPE_F32, 4) : NULL;
    if (!CHECK(t != NULL, "a tensor to name")) { tg_context_free(ctx); return; }
    char longs[150], want[TG_MAX_NAME];
    memset(longs, 'y', sizeof(longs) - 1); longs[149] = 0;
    bool same = true;
    const int ints[] = { 0, 7, -3, 12345, -2147483647 - 1, 2147483647 };
    const char * strs[] = { "attn_norm", "", "50%", longs };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        for (size_t j = 0; j < sizeof(strs) / sizeof(strs[0]); j++) {
#define ONE(FMT, ...) do { tg_format_name(t, FMT, __VA_ARGS__); snprintf(want, sizeof(want), FMT, __VA_ARGS__); \
                           if (strcmp(t->name, want)) { same = false; printf("     '%s' != '%s'\n", t->name, want); } } while (0)
            ONE("%s-%d", strs[j], ints[i]);
            ONE("%s (view)", strs[j]);
            ONE("%d%%%s%d", ints[i], strs[j], ints[i]);
            ONE("%s (copy of %s)", strs[j], strs[j]);
            ONE("cache_k_l%d (view)", ints[i]);
            ONE("%5d|%-4s|", ints[i], strs[j]);     // not the fast path
            ONE("%x %s", (unsigned) ints[i], strs[j]);
#undef ONE
        }
    CHECK(same, "tg_format_name matches snprintf for %%s/%%d/%%%% formats and the others, truncation included");
    bool set_same = true;
    for (size_t j = 0; j < sizeof(strs) / sizeof(strs[0]); j++) {
        tg_set_name(t, strs[j]);
        snprintf(want, sizeof(want), "%s", strs[j]);
        set_same = set_same && !strcmp(t->name, want);
    }
    tg_set_name(t, NULL);
    CHECK(set_same && t->name[0] == 0, "tg_set_name copies like snprintf \"%%s\" (cut at %d characters; NULL: empty)",
          TG_MAX_NAME - 1);
    tg_context_free(ctx);
}

int main(void) {
    test_format_name();
    test_context();
    test_tensor_access();
    test_views();
    test_graph();
    return tg_check_finish("test_core");
}
