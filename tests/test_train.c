// test_train.c - training the tiny reference model (tests/data/tiny-f32.gguf,
// 2 layers, grouped-query heads, 32000-token vocabulary) with the first-cut
// trainer: on a short repeating token sequence the next-token loss falls by
// more than half within 12 AdamW steps, two runs give the same losses bit for
// bit, the backward graph has no gradient of a gradient, and bad tokens are
// refused.
#include "check.h"
#include "tg/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CTX = 16, STEPS = 12 };

static bool run(struct tg_llama_model * m, float * losses) {
    struct tg_llama_train_params p = tg_llama_train_default_params();
    p.n_ctx = CTX;
    p.lr = 3e-3f;
    struct tg_llama_trainer * t = tg_llama_trainer_new(m, &p);
    if (!CHECK(t != NULL, "trainer over the tiny model (%s)", t ? "" : tg_last_error())) return false;
    int32_t toks[CTX + 1];
    for (int i = 0; i <= CTX; i++) toks[i] = 100 + 37 * (i % 5);   // a period-5 sequence
    bool ok = true;
    for (int s = 0; s < STEPS && ok; s++) {
        float gn = 0;
        ok = tg_llama_train_step(t, toks, &losses[s], &gn) == TG_OK && isfinite(losses[s]) && isfinite(gn) && gn > 0;
    }
    CHECK(ok, "%d training steps (%s)", STEPS, ok ? "" : tg_last_error());
    const struct tg_graph * gb = tg_llama_trainer_backward_graph(t);
    int n_grad = 0;
    bool clean = gb != NULL;
    for (int i = 0; gb && i < gb->n_nodes; i++) {
        n_grad += gb->nodes[i]->grad_of != NULL;
        if (gb->nodes[i]->grad_of && gb->nodes[i]->grad) clean = false;
    }
    CHECK(clean && n_grad > 20, "backward graph: %d nodes, %d gradients named and linked, none with a gradient of its own",
          gb ? gb->n_nodes : 0, n_grad);
    toks[3] = 32000;
    CHECK(tg_llama_train_step(t, toks, NULL, NULL) == TG_ERR_INVALID_ARG && strstr(tg_last_error(), "32000"),
          "a token past the vocabulary is refused: %s", tg_last_error());
    tg_llama_trainer_free(t);
    return ok;
}

int main(void) {
    char * path = tg_test_data("tiny-f32.gguf");
    struct tg_llama_model * m = tg_llama_model_load(path, NULL);
    free(path);
    if (!CHECK(m != NULL, "load the tiny model")) return tg_check_finish("test_train");
    float a[STEPS], b[STEPS];
    if (run(m, a) && run(m, b)) {
        printf("     loss: step 1 %.4f, step 6 %.4f, step %d %.4f\n", a[0], a[5], STEPS, a[STEPS - 1]);
        CHECK(a[STEPS - 1] < 0.5f * a[0], "the loss falls by more than half: %.4f -> %.4f", a[0], a[STEPS - 1]);
        CHECK(memcmp(a, b, sizeof(a)) == 0, "two runs give the same %d losses bit for bit", STEPS);
    }
    tg_llama_model_free(m);
    return tg_check_finish("test_train");
}
