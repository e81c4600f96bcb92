// sample.c - token sampling: greedy, or top-k -> top-p -> min-p ->
// temperature -> a draw from the softmax with a seeded xoshiro256** PRNG.
#include "core/grow.h"
#include "llama-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cand { int32_t id; float logit; float p; };

struct tg_llama_sampler {
    struct tg_llama_sampler_params params;
    uint64_t s[4];          // xoshiro256** state
    struct cand * cands;    // [cap]
    size_t cap;
    int32_t * hist;         // [repeat_last_n] ring of the last accepted tokens
    int32_t n_hist, head;   // tokens held, next slot
};

struct tg_llama_sampler_params tg_llama_sampler_default_params(void) {
    struct tg_llama_sampler_params p = { .temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = 0x5eed,
                                         .repeat_penalty = 1.0f, .repeat_last_n = 64 };
    return p;
}

// splitmix64: expands the seed into the generator state.
static uint64_t splitmix64(uint64_t * x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// xoshiro256** (Blackman and Vigna): the next 64 random bits.
static uint64_t next_u64(uint64_t s[4]) {
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

// Uniform double in [0, 1) from the top 53 bits.
static double next_uniform(uint64_t s[4]) { return (double) (next_u64(s) >> 11) * 0x1.0p-53; }

struct tg_llama_sampler * tg_llama_sampler_new(const struct tg_llama_sampler_params * params) {
    struct tg_llama_sampler_params p = params ? *params : tg_llama_sampler_default_params();
    if (isnan(p.temp) || isnan(p.top_p) || isnan(p.min_p)) {
        tg_error(TG_ERR_INVALID_ARG, "sampler: temperature, top-p and min-p must be numbers");
        return NULL;
    }
    if (isnan(p.repeat_penalty) || p.repeat_last_n < 0 || p.repeat_last_n > 65536) {
        tg_error(TG_ERR_INVALID_ARG, "sampler: repeat penalty %g / repeat_last_n %d out of range (a number; 0..65536)",
                 (double) p.repeat_penalty, (int) p.repeat_last_n);
        return NULL;
    }
    struct tg_llama_sampler * s = calloc(1, sizeof *s);
    if (!s) { tg_error(TG_ERR_NOMEM, "out of memory (sampler)"); return NULL; }
    if (p.repeat_last_n > 0 && !(s->hist = malloc(sizeof(int32_t) * (size_t) p.repeat_last_n))) {
        free(s);
        tg_error(TG_ERR_NOMEM, "out of memory (sampler history)");
        return NULL;
    }
    s->params = p;
    uint64_t x = p.seed;
    for (int i = 0; i < 4; i++) s->s[i] = splitmix64(&x);
    return s;
}

void tg_llama_sampler_free(struct tg_llama_sampler * s) {
    if (!s) return;
    free(s->hist);
    free(s->cands);
    free(s);
}

void tg_llama_sampler_accept(struct tg_llama_sampler * s, int32_t token) {
    if (!s || s->params.repeat_last_n <= 0) return;
    s->hist[s->head] = token;
    s->head = (s->head + 1) % s->params.repeat_last_n;
    if (s->n_hist < s->params.repeat_last_n) s->n_hist++;
}

static bool penalty_on(const struct tg_llama_sampler * s) {
    float r = s->params.repeat_penalty;
    return s->n_hist > 0 && r > 0.0f && r != 1.0f;
}

// Applies the repeat penalty once to each distinct recent token among the
// candidates c[0..n), which are in ascending id order.
static void apply_penalty(const struct tg_llama_sampler * s, struct cand * c, int32_t n) {
    float r = s->params.repeat_penalty;
    for (int32_t i = 0; i < s->n_hist; i++) {
        int32_t t = s->hist[i];
        bool seen = false;
        for (int32_t j = 0; j < i && !seen; j++) seen = s->hist[j] == t;
        if (seen) continue;
        int32_t lo = 0, hi = n;                 // binary search by id
        while (lo < hi) {
            int32_t mid = lo + (hi - lo) / 2;
            if (c[mid].id < t) lo = mid + 1; else hi = mid;
        }
        if (lo < n && c[lo].id == t) c[lo].logit = c[lo].logit > 0.0f ? c[lo].logit / r : c[lo].logit * r;
    }
}

int32_t tg_llama_argmax(const float * logits, int32_t n) {
    int32_t best = -1;
    for (int32_t i = 0; i < n; i++)
        if (!isnan(logits[i]) && (best < 0 || logits[i] > logits[best])) best = i;
    return best;
}

// Descending logit; ties by ascending id (deterministic).
static int cmp_cand(const void * a, const void * b) {
    const struct cand * x = a, * y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

// Moves the k best candidates (cmp_cand order) to c[0..k), sorted; k < n.
// A binary min-heap of the best k seen so far: O(n log k).
static void top_k_select(struct cand * c, int32_t n, int32_t k) {
    for (int32_t i = 1; i < k; i++)                       // heapify c[0..k) (root = worst)
        for (int32_t j = i; j > 0 && cmp_cand(&c[(j - 1) / 2], &c[j]) < 0; j = (j - 1) / 2) {
            struct cand t = c[j]; c[j] = c[(j - 1) / 2]; c[(j - 1) / 2] = t;
        }
    for (int32_t i = k; i < n; i++) {
        if (cmp_cand(&c[i], &c[0]) >= 0) continue;        // not better than the worst kept
        c[0] = c[i];
        for (int32_t j = 0;;) {                           // sift down
            int32_t l = 2 * j + 1, r = l + 1, w = j;
            if (l < k && cmp_cand(&c[l], &c[w]) > 0) w = l;
            if (r < k && cmp_cand(&c[r], &c[w]) > 0) w = r;
            if (w == j) break;
            struct cand t = c[j]; c[j] = c[w]; c[w] = t;
            j = w;
        }
    }
    qsort(c, (size_t) k, sizeof *c, cmp_cand);
}

// Softmax of logits/temp over c[0..n) into c[i].p (c sorted, c[0] the max).
static void softmax(struct cand * c, int32_t n, float temp) {
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        c[i].p = (float) exp(((double) c[i].logit - c[0].logit) / temp);
        sum += c[i].p;
    }
    for (int32_t i = 0; i < n; i++) c[i].p = (float) (c[i].p / sum);
}

int32_t tg_llama_sample(struct tg_llama_sampler * s, const float * logits, int32_t n_vocab) {
    if (!s || !logits || n_vocab < 1) { tg_error(TG_ERR_INVALID_ARG, "sample: no logits"); return -1; }
    const struct tg_llama_sampler_params * p = &s->params;
    if (p->temp <= 0.0f && !penalty_on(s)) {
        int32_t id = tg_llama_argmax(logits, n_vocab);
        if (id < 0) tg_error(TG_ERR_INVALID_ARG, "sample: every logit is NaN");
        return id;
    }
    if (!TG_GROW(s->cands, s->cap, (size_t) n_vocab)) { tg_error(TG_ERR_NOMEM, "out of memory (sampler candidates)"); return -1; }
    struct cand * c = s->cands;
    int32_t n = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        if (!isnan(logits[i])) c[n++] = (struct cand) { i, logits[i], 0.0f };
    if (n == 0) { tg_error(TG_ERR_INVALID_ARG, "sample: every logit is NaN"); return -1; }
    if (penalty_on(s)) {
        apply_penalty(s, c, n);
        if (p->temp <= 0.0f) {                 // greedy over the penalized logits (lowest id on ties)
            int32_t best = 0;
            for (int32_t i = 1; i < n; i++)
                if (c[i].logit > c[best].logit) best = i;
            return c[best].id;
        }
    }
    if (p->top_k > 0 && p->top_k < n) {
        top_k_select(c, n, p->top_k);
        n = p->top_k;
    } else {
        qsort(c, (size_t) n, sizeof *c, cmp_cand);
    }
    if (p->top_p < 1.0f) {            // smallest prefix whose probability reaches top_p
        softmax(c, n, 1.0f);
        double cum = 0.0;
        int32_t keep = n;
        for (int32_t i = 0; i < n; i++) {
            cum += c[i].p;
            if (cum >= p->top_p) { keep = i + 1; break; }
        }
        n = keep;
    }
    if (p->min_p > 0.0f) {            // p_i >= min_p * p_max  <=>  logit_i >= max + log(min_p)
        float cut = c[0].logit + logf(p->min_p);
        int32_t keep = 1;
        while (keep < n && c[keep].logit >= cut) keep++;
        n = keep;
    }
    softmax(c, n, p->temp);
    double r = next_uniform(s->s), cum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        cum += c[i].p;
        if (r < cum) return c[i].id;
    }
    return c[n - 1].id;
}
