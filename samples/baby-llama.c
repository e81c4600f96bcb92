// baby-llama.c - a tiny llama model trained from scratch: the scenario of
// debugging training. It builds the trainer over a randomly initialised
// model (default: tests/data/tiny-f32.gguf, random weights), prints the
// backward graph's size, which of its nodes are gradients of which forward
// tensors (and checks that no gradient has a gradient of its own), then
// trains for a fixed number of steps on the shipped corpus and prints the
// loss curve.
//
// usage: baby-llama [MODEL.gguf] [--steps N (60)] [--ctx N (32)] [--text FILE]
#include "tg/core.h"
#include "tg/llama.h"
#include "tg/vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char ** argv) {
    const char * model_path = TG_SOURCE_DIR "/tests/data/tiny-f32.gguf";
    const char * text_path = TG_SOURCE_DIR "/samples/corpus/apache-2.0.txt";
    int steps = 60, ctx = 32;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ctx") && i + 1 < argc) ctx = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--text") && i + 1 < argc) text_path = argv[++i];
        else if (argv[i][0] != '-') model_path = argv[i];
        else { fprintf(stderr, "usage: baby-llama [MODEL.gguf] [--steps N] [--ctx N] [--text FILE]\n"); return 2; }
    }
    if (steps < 1 || steps > 100000 || ctx < 2 || ctx > 1024) { fprintf(stderr, "baby-llama: --steps 1..100000, --ctx 2..1024\n"); return 2; }
    struct tg_llama_model * m = tg_llama_model_load(model_path, NULL);
    if (!m) { fprintf(stderr, "baby-llama: %s\n", tg_last_error()); return 1; }
    FILE * f = fopen(text_path, "rb");
    if (!f) { fprintf(stderr, "baby-llama: cannot read %s\n", text_path); tg_llama_model_free(m); return 1; }
    static char text[1 << 20];
    const size_t len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = 0;
    int32_t * toks = malloc((len + 16) * sizeof(int32_t));
    const int32_t nt = toks ? tg_vocab_tokenize(tg_llama_model_vocab(m), text, len, toks, (int32_t) len + 16, true, false) : -1;
    if (nt < ctx + 1) { fprintf(stderr, "baby-llama: %s: %d tokens, need %d\n", text_path, nt, ctx + 1); return 1; }

    struct tg_llama_train_params p = tg_llama_train_default_params();
    p.n_ctx = ctx;
    p.lr = 3e-3f;
    struct tg_llama_trainer * t = tg_llama_trainer_new(m, &p);
    if (!t) { fprintf(stderr, "baby-llama: %s\n", tg_last_error()); return 1; }

    const struct tg_graph * gb = tg_llama_trainer_backward_graph(t);
    int n_grad = 0, n_grad_of_grad = 0;
    for (int i = 0; i < gb->n_nodes; i++) {
        n_grad += gb->nodes[i]->grad_of != NULL;
        n_grad_of_grad += gb->nodes[i]->grad_of && gb->nodes[i]->grad;
    }
    printf("backward graph: %d nodes (%d leafs), %d of them gradients; %d gradient%s with a gradient of its own\n",
           gb->n_nodes, gb->n_leafs, n_grad, n_grad_of_grad, n_grad_of_grad == 1 ? "" : "s");
    printf("gradients of the parameters (node: what it is the gradient of):\n");
    for (int i = 0; i < gb->n_nodes; i++) {
        const struct tg_tensor * g = gb->nodes[i];
        if (g->grad_of && (g->grad_of->flags & TG_FLAG_PARAM))
            printf("  node %4d  %-36s <- %s [%lld,%lld]\n", i, g->name, g->grad_of->name, (long long) g->grad_of->ne[0],
                   (long long) g->grad_of->ne[1]);
    }

    printf("training %d steps of %d tokens on %s (%d tokens):\n", steps, ctx, text_path, nt);
    float * loss = malloc((size_t) steps * sizeof(float));
    float lo = 1e30f, hi = 0;
    uint64_t rng = 42;
    for (int s = 0; s < steps; s++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        const int32_t start = (int32_t) ((rng >> 33) % (uint64_t) (nt - ctx));
        float gn = 0;
        if (tg_llama_train_step(t, toks + start, &loss[s], &gn) != TG_OK) { fprintf(stderr, "baby-llama: %s\n", tg_last_error()); return 1; }
        if (loss[s] < lo) lo = loss[s];
        if (loss[s] > hi) hi = loss[s];
    }
    // the loss curve: one row per step (every k-th), a bar scaled between the extremes
    const int every = steps > 30 ? steps / 30 : 1;
    for (int s = 0; s < steps; s += every) {
        const int w = hi > lo ? (int) (50.0f * (loss[s] - lo) / (hi - lo) + 0.5f) : 0;
        printf("  step %4d  %8.4f  |%.*s\n", s + 1, loss[s], w, "##################################################");
    }
    printf("loss %.4f -> %.4f\n", loss[0], loss[steps - 1]);
    free(loss);
    free(toks);
    tg_llama_trainer_free(t);
    tg_llama_model_free(m);
    return n_grad_of_grad == 0 ? 0 : 1;
}
