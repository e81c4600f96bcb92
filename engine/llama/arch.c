// arch.c - the architectures the llama runtime runs: one table entry per
// GGUF general.architecture value, saying which optional parts its graph has.
// Adding a relative of llama (mistral, gemma, phi3...) is an entry here plus
// its graph differences in graph.c.
#include "llama-impl.h"

#include <string.h>

static const struct tg_llama_arch arches[] = {
    {   // Llama 1/2/3.x, Mistral-style files: q/k/v biases and rope_freqs.weight when present
        .name = "llama", .rope_mode = TG_ROPE_NORMAL,
        .qkv_bias = TG_PART_OPTIONAL, .qk_norm = TG_PART_NONE, .rope_freqs = TG_PART_OPTIONAL,
    },
    {   // Qwen 2 / 2.5: biases on q, k and v, neox rope
        .name = "qwen2", .rope_mode = TG_ROPE_NEOX,
        .qkv_bias = TG_PART_REQUIRED, .qk_norm = TG_PART_NONE, .rope_freqs = TG_PART_NONE,
    },
    {   // Qwen 3: per-head RMS norm of Q and K before rope, neox rope, head_dim from key_length
        .name = "qwen3", .rope_mode = TG_ROPE_NEOX,
        .qkv_bias = TG_PART_NONE, .qk_norm = TG_PART_REQUIRED, .rope_freqs = TG_PART_NONE,
    },
};

const struct tg_llama_arch * tg_llama_arch_find(const char * name) {
    for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++) {
        if (name && strcmp(arches[i].name, name) == 0) return &arches[i];
    }
    return NULL;
}

const char * tg_llama_arch_list(void) {
    return "llama, qwen2, qwen3";
}
