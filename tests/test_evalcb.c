// test_evalcb.c - the runtime's per-node sums (and sums of squares), taken
// through the eval callback, against llama.cpp's (tests/data/
// evalcb-tiny-f32-p1.tsv: name, op, ne0..3, sum, sum of squares) for the
// prompt p1 on tiny-f32.gguf. Reference rows are matched in order with our
// nodes of the same name and op (rows named node_N there by op and shape); relative difference < 1e-3 (for a sum much
// smaller than the tensor's magnitude, relative to sqrt(sum of squares)).
#include "check.h"
#include "tg/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 512

struct stat_row { char name[64], op[24]; int64_t ne[4]; double sum, sumsq; };

static struct stat_row ours[MAX_NODES];
static int n_ours;

// Sum and sum of squares over the logical elements of an F32 host tensor.
static void tensor_sums(const struct tg_tensor * t, double * sum, double * sumsq) {
    double s = 0, q = 0;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < t->ne[0]; i0++) {
                    const float * p = (const float *) ((const char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] +
                                                       i2 * t->nb[2] + i3 * t->nb[3]);
                    s += *p;
                    q += (double) *p * *p;
                }
    *sum = s;
    *sumsq = q;
}

static bool eval_cb(struct tg_tensor * t, bool ask, void * user) {
    (void) user;
    if (ask) return t->type == TG_TYPE_F32;
    if (n_ours < MAX_NODES && t->data) {
        struct stat_row * r = &ours[n_ours++];
        snprintf(r->name, sizeof r->name, "%s", t->name);
        // llama.cpp's dump names a GLU node by its variant (SWIGLU)
        bool swiglu = t->op == TG_OP_GLU && tg_get_op_param_i32(t, 0) == TG_GLU_SWIGLU;
        snprintf(r->op, sizeof r->op, "%s", swiglu ? "SWIGLU" : tg_op_name(t->op));
        for (int i = 0; i < 4; i++) r->ne[i] = t->ne[i];
        tensor_sums(t, &r->sum, &r->sumsq);
    }
    return true;
}

static int read_ref(struct stat_row * rows, int max) {
    char * path = tg_test_data("evalcb-tiny-f32-p1.tsv");
    FILE * f = fopen(path, "r");
    free(path);
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        struct stat_row * r = &rows[n];
        char * name = strtok(line, "\t"), * op = strtok(NULL, "\t"), * ne = strtok(NULL, "\t");
        char * sum = strtok(NULL, "\t"), * sq = strtok(NULL, "\t\r\n");
        if (!name || !op || !ne || !sum || !sq) continue;
        snprintf(r->name, sizeof r->name, "%s", name);
        snprintf(r->op, sizeof r->op, "%s", op);
        long long a = 1, b = 1, c = 1, d = 1;
        sscanf(ne, "%lld,%lld,%lld,%lld", &a, &b, &c, &d);
        r->ne[0] = a; r->ne[1] = b; r->ne[2] = c; r->ne[3] = d;
        r->sum = atof(sum);
        r->sumsq = atof(sq);
        n++;
    }
    fclose(f);
    return n;
}

static double rel(double a, double b, double scale) {
    double den = fabs(b) > scale ? fabs(b) : scale;
    return den > 0 ? fabs(a - b) / den : fabs(a - b);
}

int main(void) {
    static struct stat_row ref[MAX_NODES];
    int n_ref = read_ref(ref, MAX_NODES);
    CHECK(n_ref > 50, "reference has %d rows", n_ref);
    char * path = tg_test_data("tiny-f32.gguf");
    struct tg_llama_model * m = tg_llama_model_load(path, NULL);
    free(path);
    if (!CHECK(m != NULL, "load tiny-f32.gguf (%s)", tg_last_error())) return tg_check_finish("test_evalcb");
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.eval_cb = eval_cb;
    struct tg_llama_context * c = tg_llama_context_new(m, &cp);
    static const int32_t p1[] = { 1, 9038, 2501, 263, 931, 29892, 727, 471, 263, 2217, 19964 };
    enum tg_status st = c ? tg_llama_decode(c, p1, 11, 0) : tg_last_status();
    CHECK(st == TG_OK, "decode p1 with the eval callback (%s)", tg_last_error());
    CHECK(n_ours > 40, "callback observed %d F32 nodes", n_ours);
    int matched = 0, j = 0, bad = 0, n_compute = 0, matched_compute = 0;
    for (int i = 0; i < n_ref; i++) {
        const struct stat_row * r = &ref[i];
        bool is_view = !strcmp(r->op, "RESHAPE") || !strcmp(r->op, "VIEW") || !strcmp(r->op, "PERMUTE") || !strcmp(r->op, "TRANSPOSE");
        n_compute += !is_view;
        int k = j;
        bool anon = strncmp(r->name, "node_", 5) == 0;  // unnamed there: match by op and shape
        while (k < n_ours && (strcmp(ours[k].op, r->op) ||
                              (anon ? memcmp(ours[k].ne, r->ne, sizeof r->ne) != 0 : strcmp(ours[k].name, r->name) != 0))) k++;
        if (k == n_ours) { printf("     (reference node %s %s has no counterpart)\n", r->name, r->op); continue; }
        const struct stat_row * o = &ours[k];
        j = k + 1;
        matched++;
        matched_compute += !is_view;
        double scale = 1e-2 * sqrt(r->sumsq);
        double es = rel(o->sum, r->sum, scale), eq = rel(o->sumsq, r->sumsq, 0);
        bool shape = memcmp(o->ne, r->ne, sizeof o->ne) == 0;
        bool ok = es < 1e-3 && eq < 1e-3 && shape;
        bad += !ok;
        CHECK(ok, "%-20s = %-22s %-9s [%lld,%lld,%lld,%lld] sum %.6g vs %.6g (rel %.1e), sumsq %.6g vs %.6g (rel %.1e)%s",
              r->name, o->name, r->op, (long long) r->ne[0], (long long) r->ne[1], (long long) r->ne[2], (long long) r->ne[3],
              o->sum, r->sum, es, o->sumsq, r->sumsq, eq, shape ? "" : " SHAPE DIFFERS");
    }
    // view nodes (RESHAPE ...) are observed only when the engine reports no-op nodes
    CHECK(matched_compute == n_compute, "%d of %d computing reference nodes matched by name and op (%d of %d with views)",
          matched_compute, n_compute, matched, n_ref);
    CHECK(bad == 0, "%d matched nodes differ", bad);
    tg_llama_context_free(c);
    tg_llama_model_free(m);
    return tg_check_finish("test_evalcb");
}
