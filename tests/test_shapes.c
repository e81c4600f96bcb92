// test_shapes.c - issue acceptance: op constructors given bad shapes, types
// or NULL inputs return NULL and set a message naming the op and the shapes.
// Every message is printed so a reader can judge it.
#include "check.h"
#include "tg/core.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

// Checks that r is NULL with status st and that the message contains each of
// the (up to 3) substrings given.
static void expect_fail(const struct tg_tensor * r, enum tg_status st, const char * what,
                        const char * s1, const char * s2, const char * s3) {
    const char * m = tg_last_error();
    bool ok = r == NULL && tg_last_status() == st && (!s1 || strstr(m, s1)) && (!s2 || strstr(m, s2)) && (!s3 || strstr(m, s3));
    CHECK(ok, "%s -> NULL, %s: \"%s\"", what, tg_status_str(st), m);
    tg_clear_error();
}

// ---- random sweep: any input gives a valid tensor or NULL + a message -----

static uint32_t rng_state = 2463534242u;
static uint32_t rnd(uint32_t n) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 17; rng_state ^= rng_state << 5;
    return rng_state % n;
}

static struct tg_tensor * rand_tensor(struct tg_context * ctx) {
    static const enum tg_type types[] = { TG_TYPE_F32, TG_TYPE_F32, TG_TYPE_F32, TG_TYPE_F16, TG_TYPE_I32, TG_TYPE_Q8_0 };
    if (rnd(20) == 0) return NULL;
    enum tg_type t = types[rnd(6)];
    int64_t ne0 = t == TG_TYPE_Q8_0 ? 32 * (1 + rnd(2)) : 1 + rnd(6);
    struct tg_tensor * r = tg_new_tensor_4d(ctx, t, ne0, 1 + rnd(4), 1 + rnd(3), 1 + rnd(2));
    if (r && rnd(4) == 0) r = tg_transpose(ctx, r);
    return r;
}

// Invariants of a constructed tensor: dims >= 1, views point at an owner and stay inside it.
static bool valid_result(const struct tg_tensor * r) {
    for (int i = 0; i < TG_MAX_DIMS; i++) if (r->ne[i] < 1) return false;
    if (!r->view_src) return true;
    if (r->view_src->view_src) return false;
    if (r->view_offs + tg_nbytes(r) > tg_nbytes(r->view_src)) return false;
    return !r->view_src->data || r->data == (char *) r->view_src->data + r->view_offs;
}

static void random_sweep(void) {
    static const char * names[] = { "add", "mul_mat", "concat", "get_rows", "reshape_2d", "view_2d", "permute",
                                    "rope", "soft_max_ext", "set", "cross_entropy_loss", "glu", "cpy", "repeat",
                                    "mul_inplace", "set_rows", "out_prod", "acc_inplace" };
    enum { N_OPS = sizeof(names) / sizeof(names[0]), ITERS = 4000 };
    int ok_results = 0, failures = 0, bad = 0;
    struct tg_context_params p = { 4 << 20, NULL, false };
    struct tg_context * ctx = NULL;
    for (int it = 0; it < ITERS; it++) {
        if (it % 200 == 0) { tg_context_free(ctx); ctx = tg_context_new(p); }
        struct tg_tensor * a = rand_tensor(ctx), * b = rand_tensor(ctx), * c = rand_tensor(ctx), * r = NULL;
        if (a && rnd(2)) b = tg_dup_tensor(ctx, a);   // same shape half of the time
        int op = (int) rnd(N_OPS);
        int64_t n0 = 1 + rnd(8), n1 = 1 + rnd(8);
        size_t off = 4 * rnd(16), nb1 = 4 * rnd(40);
        tg_clear_error();
        switch (op) {
            case 0:  r = tg_add(ctx, a, b); break;
            case 1:  r = tg_mul_mat(ctx, a, b); break;
            case 2:  r = tg_concat(ctx, a, b, (int) rnd(5)); break;
            case 3:  r = tg_get_rows(ctx, a, b); break;
            case 4:  r = tg_reshape_2d(ctx, a, n0, n1); break;
            case 5:  r = tg_view_2d(ctx, a, n0, n1, nb1, off); break;
            case 6:  r = tg_permute(ctx, a, (int) rnd(4), (int) rnd(4), (int) rnd(4), (int) rnd(4)); break;
            case 7:  r = tg_rope(ctx, a, b, 2 * (int) rnd(4), rnd(2) ? 0 : 2, 10000.0f, 1.0f); break;
            case 8:  r = tg_soft_max_ext(ctx, a, rnd(3) ? b : NULL, 1.0f, 0.0f); break;
            case 9:  r = tg_set(ctx, a, b, nb1, nb1 * 2, nb1 * 4, off); break;
            case 10: r = tg_cross_entropy_loss(ctx, a, b); break;
            case 11: r = tg_glu(ctx, a, rnd(2) ? b : NULL, (enum tg_glu_op) rnd(4), rnd(2)); break;
            case 12: r = tg_cpy(ctx, a, b); break;
            case 13: r = tg_repeat(ctx, a, b); break;
            case 14: r = tg_mul_inplace(ctx, a, b); break;
            case 15: r = tg_set_rows(ctx, a, b, c); break;
            case 16: r = tg_out_prod(ctx, a, b); break;
            case 17: r = tg_acc_inplace(ctx, a, b, nb1, nb1 * 2, nb1 * 4, off); break;
        }
        if (r) {
            ok_results++;
            if (!valid_result(r)) {
                char sr[96], sa[96];
                bad++;
                CHECKQ(false, "%s produced an invalid tensor %s (nb %zu,%zu,%zu,%zu, offs %zu) from a %s (nb %zu,%zu,%zu,%zu)", names[op],
                       tg_shape_str(r, sr, sizeof(sr)), r->nb[0], r->nb[1], r->nb[2], r->nb[3], r->view_offs,
                       tg_shape_str(a, sa, sizeof(sa)), a->nb[0], a->nb[1], a->nb[2], a->nb[3]);
            }
        } else {
            failures++;
            bool named = tg_last_status() != TG_OK && strncmp(tg_last_error(), names[op], strlen(names[op])) == 0;
            if (!named && op == 11) named = strncmp(tg_last_error(), "glu", 3) == 0;
            if (!named) { bad++; CHECKQ(false, "%s returned NULL with message '%s'", names[op], tg_last_error()); }
        }
    }
    tg_context_free(ctx);
    CHECK(bad == 0, "random sweep of %d constructor calls: %d valid results, %d rejections naming their op, %d bad",
          ITERS, ok_results, failures, bad);
}

int main(void) {
    struct tg_context_params p = { 1 << 20, NULL, true };
    struct tg_context * ctx = tg_context_new(p);
    struct tg_tensor * a64 = tg_new_tensor_2d(ctx, TG_TYPE_F32, 64, 32);
    struct tg_tensor * b48 = tg_new_tensor_2d(ctx, TG_TYPE_F32, 48, 8);
    struct tg_tensor * i32 = tg_new_tensor_1d(ctx, TG_TYPE_I32, 5);

    // mul_mat
    expect_fail(tg_mul_mat(ctx, a64, b48), TG_ERR_SHAPE, "mul_mat inner dims differ",
                "mul_mat: a [64,32,1,1] f32 and b [48,8,1,1] f32", "a.ne0 (64) != b.ne0 (48)", NULL);
    expect_fail(tg_mul_mat(ctx, tg_new_tensor_3d(ctx, TG_TYPE_F32, 8, 4, 3), tg_new_tensor_3d(ctx, TG_TYPE_F32, 8, 4, 4)),
                TG_ERR_SHAPE, "mul_mat batch not broadcastable", "mul_mat", "b.ne2 (4)", "a.ne2 (3)");
    expect_fail(tg_mul_mat(ctx, a64, tg_new_tensor_2d(ctx, TG_TYPE_Q8_0, 64, 2)), TG_ERR_TYPE, "mul_mat with quantized b",
                "mul_mat", "q8_0", NULL);
    expect_fail(tg_mul_mat(ctx, tg_transpose(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F32, 8, 8)), tg_new_tensor_2d(ctx, TG_TYPE_F32, 8, 2)),
                TG_ERR_SHAPE, "mul_mat with transposed a", "mul_mat", "transposed", NULL);
    // add broadcast
    expect_fail(tg_add(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F32, 6, 4), tg_new_tensor_2d(ctx, TG_TYPE_F32, 4, 4)), TG_ERR_SHAPE,
                "add: b not broadcastable", "add: a [6,4,1,1] f32 and b [4,4,1,1] f32", "a.ne0 (6)", "b.ne0 (4)");
    expect_fail(tg_mul(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F32, 6, 4), tg_new_tensor_2d(ctx, TG_TYPE_F32, 6, 3)), TG_ERR_SHAPE,
                "mul: b.ne1 3 does not divide 4", "mul:", "a.ne1 (4)", NULL);
    expect_fail(tg_add(ctx, i32, i32), TG_ERR_TYPE, "add on i32", "add:", "i32", NULL);
    CHECK(tg_add(ctx, tg_new_tensor_3d(ctx, TG_TYPE_F32, 6, 4, 2), tg_new_tensor_1d(ctx, TG_TYPE_F32, 6)) != NULL, "add broadcasts [6] over [6,4,2]");
    // concat
    expect_fail(tg_concat(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F32, 4, 3), tg_new_tensor_2d(ctx, TG_TYPE_F32, 5, 3), 1), TG_ERR_SHAPE,
                "concat along 1 with ne0 4 vs 5", "concat: a [4,3,1,1] f32 and b [5,3,1,1] f32", "a.ne0 (4) != b.ne0 (5)", NULL);
    expect_fail(tg_concat(ctx, a64, a64, 4), TG_ERR_INVALID_ARG, "concat dim 4", "concat", "dim 4", NULL);
    expect_fail(tg_concat(ctx, a64, tg_new_tensor_2d(ctx, TG_TYPE_F16, 64, 32), 0), TG_ERR_TYPE, "concat f32 with f16", "concat", "f16", NULL);
    // get_rows
    expect_fail(tg_get_rows(ctx, a64, tg_new_tensor_1d(ctx, TG_TYPE_F32, 3)), TG_ERR_TYPE, "get_rows with f32 ids",
                "get_rows: a [64,32,1,1] f32 and b [3,1,1,1] f32", "i32", NULL);
    expect_fail(tg_get_rows(ctx, tg_new_tensor_3d(ctx, TG_TYPE_F32, 8, 4, 2), tg_new_tensor_2d(ctx, TG_TYPE_I32, 3, 3)), TG_ERR_SHAPE,
                "get_rows ids ne1 != a.ne2", "get_rows", "b.ne1 (3) vs a.ne2 (2)", NULL);
    // set_rows
    expect_fail(tg_set_rows(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F16, 8, 10), tg_new_tensor_2d(ctx, TG_TYPE_F32, 8, 3),
                            tg_new_tensor_1d(ctx, TG_TYPE_I32, 4)), TG_ERR_SHAPE, "set_rows with 4 ids for 3 rows", "set_rows", "[4,1,1,1] i32", NULL);
    expect_fail(tg_set_rows(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F16, 8, 10), tg_new_tensor_2d(ctx, TG_TYPE_F32, 7, 3),
                            tg_new_tensor_1d(ctx, TG_TYPE_I32, 3)), TG_ERR_SHAPE, "set_rows row length differs", "set_rows", "a.ne0 (8) != b.ne0 (7)", NULL);
    // reshape
    expect_fail(tg_reshape_2d(ctx, a64, 100, 20), TG_ERR_SHAPE, "reshape to a different element count",
                "reshape_2d: a [64,32,1,1] f32", "2000 elements, a has 2048", NULL);
    expect_fail(tg_reshape_1d(ctx, tg_transpose(ctx, a64), 2048), TG_ERR_SHAPE, "reshape of a transposed tensor", "reshape_1d", "contiguous", NULL);
    // views
    expect_fail(tg_view_1d(ctx, a64, 64, 8000), TG_ERR_SHAPE, "view_1d past the end", "view_1d: a [64,32,1,1] f32", "out of bounds", "8192");
    expect_fail(tg_view_2d(ctx, a64, 64, 33, a64->nb[1], 0), TG_ERR_SHAPE, "view_2d with one row too many", "view_2d", "out of bounds", NULL);
    expect_fail(tg_view_2d(ctx, a64, 0, 2, 256, 0), TG_ERR_SHAPE, "view_2d with ne0 = 0", "view_2d", "ne0 = 0", NULL);
    CHECK(tg_view_2d(ctx, a64, 64, 32, a64->nb[1], 0) != NULL, "view_2d covering exactly a is accepted");
    // rope
    struct tg_tensor * q = tg_new_tensor_3d(ctx, TG_TYPE_F32, 64, 4, 7);
    expect_fail(tg_rope(ctx, q, i32, 64, TG_ROPE_NORMAL, 10000.0f, 1.0f), TG_ERR_SHAPE, "rope with 5 positions for 7 tokens",
                "rope: a [64,4,7,1] f32 and b [5,1,1,1] i32", "b.ne0 (5) != a.ne2 (7", NULL);
    struct tg_tensor * pos7 = tg_new_tensor_1d(ctx, TG_TYPE_I32, 7);
    expect_fail(tg_rope(ctx, q, pos7, 65, TG_ROPE_NORMAL, 10000.0f, 1.0f), TG_ERR_INVALID_ARG, "rope n_dims 65", "rope", "n_dims 65", NULL);
    expect_fail(tg_rope(ctx, q, pos7, 64, 1, 10000.0f, 1.0f), TG_ERR_INVALID_ARG, "rope mode 1", "rope", "mode 1", NULL);
    // soft_max mask
    struct tg_tensor * kq = tg_new_tensor_3d(ctx, TG_TYPE_F32, 32, 7, 4);
    expect_fail(tg_soft_max_ext(ctx, kq, tg_new_tensor_2d(ctx, TG_TYPE_F32, 16, 7), 1.0f, 0.0f), TG_ERR_SHAPE, "soft_max mask ne0 16 vs 32",
                "soft_max_ext: a [32,7,4,1] f32 and b [16,7,1,1] f32", "mask.ne0 (16) != a.ne0 (32)", NULL);
    expect_fail(tg_soft_max_ext(ctx, kq, tg_new_tensor_2d(ctx, TG_TYPE_F32, 32, 6), 1.0f, 0.0f), TG_ERR_SHAPE, "soft_max mask too few rows",
                "soft_max_ext", "mask.ne1 (6) < a.ne1 (7)", NULL);
    expect_fail(tg_soft_max_ext(ctx, kq, tg_new_tensor_3d(ctx, TG_TYPE_F32, 32, 8, 3), 1.0f, 0.0f), TG_ERR_SHAPE, "soft_max mask ne2 3 vs 4",
                "soft_max_ext", "broadcast", NULL);
    expect_fail(tg_soft_max_ext(ctx, kq, tg_new_tensor_2d(ctx, TG_TYPE_I32, 32, 8), 1.0f, 0.0f), TG_ERR_TYPE, "soft_max i32 mask", "soft_max_ext", "f16", NULL);
    CHECK(tg_soft_max_ext(ctx, kq, tg_new_tensor_2d(ctx, TG_TYPE_F16, 32, 8), 1.0f, 0.0f) != NULL, "soft_max with a padded f16 mask [32,8] is accepted");
    // permute
    expect_fail(tg_permute(ctx, a64, 0, 0, 2, 3), TG_ERR_INVALID_ARG, "permute repeated axis", "permute: a [64,32,1,1] f32", "(0,0,2,3)", NULL);
    expect_fail(tg_permute(ctx, a64, 0, 1, 2, 4), TG_ERR_INVALID_ARG, "permute axis 4", "permute", "not a permutation", NULL);
    // set / acc
    struct tg_tensor * small = tg_new_tensor_1d(ctx, TG_TYPE_F32, 16);
    expect_fail(tg_set(ctx, a64, small, a64->nb[1], a64->nb[2], a64->nb[3], 8190 * 4), TG_ERR_SHAPE, "set past the end of a",
                "set: a [64,32,1,1] f32 and b [16,1,1,1] f32", "offset 32760", NULL);
    expect_fail(tg_acc(ctx, small, a64, 64, 64, 64, 0), TG_ERR_SHAPE, "acc with b larger than a", "acc:", "more elements", NULL);
    expect_fail(tg_acc(ctx, a64, small, a64->nb[1], a64->nb[2], a64->nb[3], 2), TG_ERR_INVALID_ARG, "acc with unaligned offset", "acc", "multiples of 4", NULL);
    // cross_entropy_loss
    expect_fail(tg_cross_entropy_loss(ctx, a64, tg_new_tensor_2d(ctx, TG_TYPE_F32, 64, 31)), TG_ERR_SHAPE, "cross_entropy_loss shapes differ",
                "cross_entropy_loss: a [64,32,1,1] f32 and b [64,31,1,1] f32", "same shape", NULL);
    // glu
    expect_fail(tg_swiglu(ctx, tg_new_tensor_2d(ctx, TG_TYPE_F32, 7, 2)), TG_ERR_SHAPE, "swiglu of odd ne0", "glu: a [7,2,1,1] f32", "even", NULL);
    expect_fail(tg_swiglu_split(ctx, a64, b48), TG_ERR_SHAPE, "swiglu_split with different shapes", "glu", "same shape", NULL);
    expect_fail(tg_glu(ctx, a64, NULL, (enum tg_glu_op) 7, false), TG_ERR_INVALID_ARG, "glu op 7", "glu", "unknown glu op 7", NULL);
    // others
    expect_fail(tg_cpy(ctx, a64, b48), TG_ERR_SHAPE, "cpy with different element counts", "cpy", "2048 elements, b has 384", NULL);
    expect_fail(tg_cpy(ctx, i32, tg_new_tensor_1d(ctx, TG_TYPE_F32, 5)), TG_ERR_TYPE, "cpy i32 -> f32", "cpy", "no conversion from i32 to f32", NULL);
    expect_fail(tg_repeat(ctx, tg_new_tensor_1d(ctx, TG_TYPE_F32, 3), a64), TG_ERR_SHAPE, "repeat [3] to [64,32]", "repeat", "b.ne0 (64)", "a.ne0 (3)");
    expect_fail(tg_argmax(ctx, kq), TG_ERR_SHAPE, "argmax of a 3-D tensor", "argmax", "2-D", NULL);
    expect_fail(tg_rms_norm(ctx, a64, -1.0f), TG_ERR_INVALID_ARG, "rms_norm with eps -1", "rms_norm", "eps", NULL);
    expect_fail(tg_out_prod(ctx, a64, b48), TG_ERR_SHAPE, "out_prod with a.ne1 32 vs b.ne1 8", "out_prod", "a.ne1 (32) != b.ne1 (8)", NULL);
    expect_fail(tg_diag_mask_inf(ctx, i32, 0), TG_ERR_TYPE, "diag_mask_inf of i32", "diag_mask_inf", "f32", NULL);
    expect_fail(tg_cont_4d(ctx, a64, 10, 10, 1, 1), TG_ERR_SHAPE, "cont_4d to 100 elements", "cont", "2048 elements", NULL);
    // NULL inputs, including the cascade of a failed constructor
    expect_fail(tg_add(ctx, a64, NULL), TG_ERR_INVALID_ARG, "add with NULL b", "add: b is NULL", NULL, NULL);
    expect_fail(tg_mul_mat(NULL, a64, a64), TG_ERR_INVALID_ARG, "mul_mat with NULL context", "mul_mat: context is NULL", NULL, NULL);
    struct tg_tensor * bad = tg_mul_mat(ctx, a64, b48);
    struct tg_tensor * next = tg_soft_max(ctx, bad);
    expect_fail(next, TG_ERR_INVALID_ARG, "soft_max of a failed mul_mat", "soft_max: a is NULL", "previous error: mul_mat", NULL);
    expect_fail(tg_view_1d(ctx, NULL, 4, 0), TG_ERR_INVALID_ARG, "view_1d of NULL", "view_1d: a is NULL", NULL, NULL);
    expect_fail(tg_rope(ctx, q, NULL, 64, 0, 1e4f, 1.0f), TG_ERR_INVALID_ARG, "rope with NULL positions", "rope: pos is NULL", NULL, NULL);
    expect_fail(tg_set_rows(ctx, a64, NULL, i32), TG_ERR_INVALID_ARG, "set_rows with NULL b", "set_rows: b is NULL", NULL, NULL);
    tg_context_free(ctx);
    random_sweep();
    return tg_check_finish("test_shapes");
}
