// live.c - live debugging: the model's decode on a worker thread, the eval
// callback blocking at breakpoints and steps (see tg/live.h).
#include "tg/live.h"
#include "tg/gguf.h"
#include "tg/llama.h"
#include "tg/trace.h"
#include "tg/trace-read.h"
#include "tg/vocab.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIVE_MAX_BREAKS 32

enum run_mode { MODE_STEP, MODE_CONTINUE, MODE_FINISH, MODE_NEXT_DECODE };

struct live_break { enum tg_live_break_kind kind; char pattern[96]; };

struct tg_live {
    char path[512];
    struct tg_llama_model * model;
    struct tg_llama_context * ctx;
    struct tg_vocab * vocab;
    struct live_break breaks[LIVE_MAX_BREAKS];
    int n_breaks;
    // run state, guarded by mu
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t worker;
    bool has_worker;
    enum tg_live_state state;
    bool running;            // the worker is computing (not paused)
    bool abort;
    atomic_int interrupt;    // tg_live_interrupt: stop after the node being computed
    enum run_mode mode;
    int step_left;
    int stop_seq;            // MODE_NEXT_DECODE: stop in the decode of this number
    int decode_seq;          // decodes started in this run (the prompt's is 0)
    int seen_decode;         // decode_seq when node_index last looked
    struct tg_tensor * node; // last observed node
    int index;
    int graph_seq, pos0, n_tokens;
    struct tg_graph * last_graph;
    char message[256];
    // the work
    int32_t * tokens;
    int n_prompt, n_predict, n_generated;
    char * text;
    size_t text_len, text_cap;
};

static void set_msg(struct tg_live * lv, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msg(struct tg_live * lv, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lv->message, sizeof(lv->message), fmt, ap);
    va_end(ap);
}

static int node_index(struct tg_live * lv, const struct tg_tensor * t) {
    struct tg_graph * g = tg_llama_last_graph(lv->ctx);
    if (!g) return -1;
    // the llama context rebuilds its graph in one arena: the pointer may
    // repeat, so a new decode also starts a new graph
    if (g != lv->last_graph || lv->seen_decode != lv->decode_seq) {
        lv->last_graph = g;
        lv->seen_decode = lv->decode_seq;
        lv->graph_seq++;
        lv->index = -1;
    }
    if (lv->index >= 0 && lv->index + 1 < g->n_nodes && g->nodes[lv->index + 1] == t) return lv->index + 1;  // usual case
    for (int i = 0; i < g->n_nodes; i++) if (g->nodes[i] == t) return i;
    return -1;
}

static bool nonfinite(struct tg_live * lv, struct tg_tensor * t) {
    if (!t->data || (t->type != TG_TYPE_F32 && t->type != TG_TYPE_F16)) return false;
    (void) lv;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < t->ne[0]; i0++)
                    if (!isfinite(tg_get_f32_nd(t, i0, i1, i2, i3))) return true;
    return false;
}

// Which breakpoint (1..) this node hits, 0 if none. `computed`: values readable.
static int break_hit(struct tg_live * lv, struct tg_tensor * t, bool computed) {
    for (int k = 0; k < lv->n_breaks; k++) {
        const struct live_break * b = &lv->breaks[k];
        if ((b->kind == TG_LIVE_BREAK_NAME && tg_trace_glob(b->pattern, t->name)) ||
            (b->kind == TG_LIVE_BREAK_OP && tg_trace_glob(b->pattern, tg_op_name(t->op))) ||
            (b->kind == TG_LIVE_BREAK_NAN && computed && nonfinite(lv, t)))
            return k + 1;
    }
    return 0;
}

static bool wants(struct tg_live * lv, struct tg_tensor * t) {
    if (atomic_load_explicit(&lv->interrupt, memory_order_relaxed)) return true;
    switch (lv->mode) {
    case MODE_STEP: return true;
    case MODE_FINISH: {
        struct tg_graph * g = tg_llama_last_graph(lv->ctx);
        return g && g->n_nodes > 0 && g->nodes[g->n_nodes - 1] == t;
    }
    case MODE_NEXT_DECODE:  // the first node of the next decode, or a breakpoint
        if (lv->decode_seq >= lv->stop_seq) return true;
        for (int k = 0; k < lv->n_breaks; k++) if (lv->breaks[k].kind == TG_LIVE_BREAK_NAN) return true;
        return break_hit(lv, t, false) > 0;
    default:
        for (int k = 0; k < lv->n_breaks; k++) if (lv->breaks[k].kind == TG_LIVE_BREAK_NAN) return true;
        return break_hit(lv, t, false) > 0;
    }
}

// The eval callback, on the worker thread.
static bool live_cb(struct tg_tensor * t, bool ask, void * user) {
    struct tg_live * lv = user;
    pthread_mutex_lock(&lv->mu);
    bool ret;
    if (ask) {
        ret = !lv->abort && wants(lv, t);
        pthread_mutex_unlock(&lv->mu);
        return ret;
    }
    lv->index = node_index(lv, t);
    bool stop = false;
    int hit = 0;
    const bool intr = atomic_exchange(&lv->interrupt, 0) != 0;
    if (intr) stop = true;
    else if (lv->mode == MODE_STEP) stop = --lv->step_left <= 0;
    else if (lv->mode == MODE_FINISH) stop = true;
    else if (lv->mode == MODE_NEXT_DECODE) stop = lv->decode_seq >= lv->stop_seq || (hit = break_hit(lv, t, true)) > 0;
    else stop = (hit = break_hit(lv, t, true)) > 0;
    if (stop && !lv->abort) {
        lv->node = t;
        lv->state = TG_LIVE_STOPPED;
        lv->running = false;
        if (intr) set_msg(lv, "interrupted after node %d %s (%s)", lv->index, t->name, tg_op_name(t->op));
        else if (hit) set_msg(lv, "breakpoint %d (%s) at node %d %s (%s)", hit, lv->breaks[hit - 1].pattern, lv->index, t->name, tg_op_name(t->op));
        else set_msg(lv, "stopped after node %d %s (%s)", lv->index, t->name, tg_op_name(t->op));
        pthread_cond_broadcast(&lv->cv);
        while (!lv->running && !lv->abort) pthread_cond_wait(&lv->cv, &lv->mu);
    }
    ret = !lv->abort;
    pthread_mutex_unlock(&lv->mu);
    return ret;
}

static void append_text(struct tg_live * lv, int32_t id) {
    char piece[256];
    int n = tg_vocab_token_to_piece(lv->vocab, id, piece, sizeof(piece), false);
    if (n <= 0) return;
    if (lv->text_len + (size_t) n + 1 > lv->text_cap) {
        size_t cap = lv->text_cap ? lv->text_cap * 2 : 256;
        while (cap < lv->text_len + (size_t) n + 1) cap *= 2;
        char * t = realloc(lv->text, cap);
        if (!t) return;
        lv->text = t;
        lv->text_cap = cap;
    }
    memcpy(lv->text + lv->text_len, piece, (size_t) n);
    lv->text_len += (size_t) n;
    lv->text[lv->text_len] = '\0';
}

static void * worker_main(void * arg) {
    struct tg_live * lv = arg;
    tg_llama_kv_clear(lv->ctx);
    enum tg_status st;
    pthread_mutex_lock(&lv->mu);
    lv->pos0 = 0; lv->n_tokens = lv->n_prompt;
    lv->decode_seq = 0;
    pthread_mutex_unlock(&lv->mu);
    st = tg_llama_decode(lv->ctx, lv->tokens, lv->n_prompt, 0);
    int32_t pos = lv->n_prompt;
    for (int k = 0; st == TG_OK && k < lv->n_predict; k++) {
        const float * logits = tg_llama_get_logits(lv->ctx, -1);
        if (!logits) { st = tg_last_status(); break; }
        int32_t id = tg_llama_argmax(logits, tg_vocab_n_tokens(lv->vocab));
        pthread_mutex_lock(&lv->mu);
        lv->n_generated++;
        append_text(lv, id);
        lv->pos0 = pos; lv->n_tokens = 1;
        if (id != tg_vocab_eos(lv->vocab)) lv->decode_seq++;
        pthread_mutex_unlock(&lv->mu);
        if (id == tg_vocab_eos(lv->vocab)) break;
        st = tg_llama_decode(lv->ctx, &id, 1, pos++);
    }
    pthread_mutex_lock(&lv->mu);
    if (lv->abort) set_msg(lv, "run aborted");
    else if (st == TG_OK) set_msg(lv, "done: %d prompt tokens, %d generated", lv->n_prompt, lv->n_generated);
    else set_msg(lv, "run failed: %s", tg_last_error());
    lv->state = st == TG_OK || lv->abort ? TG_LIVE_DONE : TG_LIVE_FAILED;
    lv->running = false;
    lv->node = NULL;
    pthread_cond_broadcast(&lv->cv);
    pthread_mutex_unlock(&lv->mu);
    return NULL;
}

// Waits until the worker pauses or ends.
static enum tg_status wait_stop(struct tg_live * lv) {
    pthread_mutex_lock(&lv->mu);
    while (lv->running) pthread_cond_wait(&lv->cv, &lv->mu);
    enum tg_live_state s = lv->state;
    pthread_mutex_unlock(&lv->mu);
    if (s == TG_LIVE_FAILED) return tg_error(TG_ERR_INTERNAL, "%s", lv->message);
    return TG_OK;
}

static void stop_worker(struct tg_live * lv) {
    if (!lv->has_worker) return;
    pthread_mutex_lock(&lv->mu);
    lv->abort = true;
    pthread_cond_broadcast(&lv->cv);
    pthread_mutex_unlock(&lv->mu);
    pthread_join(lv->worker, NULL);
    lv->has_worker = false;
    lv->abort = false;
}

struct tg_live * tg_live_open(const char * model_path, int n_threads, int n_ctx) {
    struct tg_live * lv = calloc(1, sizeof(*lv));
    if (!lv) { tg_error(TG_ERR_NOMEM, "live: out of memory"); return NULL; }
    snprintf(lv->path, sizeof(lv->path), "%s", model_path);
    pthread_mutex_init(&lv->mu, NULL);
    pthread_cond_init(&lv->cv, NULL);
    lv->index = -1;
    struct tg_llama_model_params mp = tg_llama_model_default_params();
    lv->model = tg_llama_model_load(model_path, &mp);
    if (!lv->model) { tg_live_close(lv); return NULL; }
    lv->vocab = tg_vocab_load(tg_llama_model_gguf(lv->model));
    if (!lv->vocab) { tg_live_close(lv); return NULL; }
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_threads = n_threads > 0 ? n_threads : 2;
    if (n_ctx > 0) cp.n_ctx = n_ctx;
    cp.eval_cb = live_cb;
    cp.eval_cb_user = lv;
    lv->ctx = tg_llama_context_new(lv->model, &cp);
    if (!lv->ctx) { tg_live_close(lv); return NULL; }
    return lv;
}

void tg_live_close(struct tg_live * lv) {
    if (!lv) return;
    stop_worker(lv);
    tg_llama_context_free(lv->ctx);
    tg_vocab_free(lv->vocab);
    tg_llama_model_free(lv->model);
    pthread_mutex_destroy(&lv->mu);
    pthread_cond_destroy(&lv->cv);
    free(lv->tokens);
    free(lv->text);
    free(lv);
}

const char * tg_live_model_path(const struct tg_live * lv) { return lv->path; }

int tg_live_break_add(struct tg_live * lv, enum tg_live_break_kind kind, const char * pattern) {
    if (lv->n_breaks == LIVE_MAX_BREAKS) { tg_error(TG_ERR_INVALID_ARG, "too many breakpoints (%d)", LIVE_MAX_BREAKS); return -1; }
    pthread_mutex_lock(&lv->mu);
    lv->breaks[lv->n_breaks].kind = kind;
    snprintf(lv->breaks[lv->n_breaks].pattern, sizeof(lv->breaks[0].pattern), "%s", pattern ? pattern : "nan");
    int k = ++lv->n_breaks;
    pthread_mutex_unlock(&lv->mu);
    return k;
}

void tg_live_break_clear(struct tg_live * lv) {
    pthread_mutex_lock(&lv->mu);
    lv->n_breaks = 0;
    pthread_mutex_unlock(&lv->mu);
}

int tg_live_break_count(const struct tg_live * lv) { return lv->n_breaks; }

bool tg_live_break_get(const struct tg_live * lv, int k, enum tg_live_break_kind * kind, char * buf, size_t n) {
    if (k < 1 || k > lv->n_breaks) return false;
    if (kind) *kind = lv->breaks[k - 1].kind;
    if (buf && n) snprintf(buf, n, "%s", lv->breaks[k - 1].pattern);
    return true;
}

enum tg_status tg_live_break_delete(struct tg_live * lv, int k) {
    pthread_mutex_lock(&lv->mu);
    if (k < 1 || k > lv->n_breaks) {
        int nb = lv->n_breaks;
        pthread_mutex_unlock(&lv->mu);
        return tg_error(TG_ERR_INVALID_ARG, nb ? "no breakpoint %d (have 1..%d)" : "no breakpoint %d (none set)", k, nb);
    }
    memmove(&lv->breaks[k - 1], &lv->breaks[k], sizeof(lv->breaks[0]) * (size_t) (lv->n_breaks - k));
    lv->n_breaks--;
    pthread_mutex_unlock(&lv->mu);
    return TG_OK;
}

void tg_live_interrupt(struct tg_live * lv) {
    if (lv) atomic_store_explicit(&lv->interrupt, 1, memory_order_relaxed);
}

enum tg_live_state tg_live_get_state(const struct tg_live * lv) { return lv->state; }
const char * tg_live_message(const struct tg_live * lv) { return lv->message; }
const char * tg_live_text(const struct tg_live * lv) { return lv->text ? lv->text : ""; }

enum tg_status tg_live_run(struct tg_live * lv, const char * prompt, int n_predict) {
    stop_worker(lv);
    int n = (int) strlen(prompt) + 8;
    int32_t * toks = realloc(lv->tokens, sizeof(int32_t) * (size_t) n);
    if (!toks) return tg_error(TG_ERR_NOMEM, "live: out of memory");
    lv->tokens = toks;
    int k = tg_vocab_tokenize(lv->vocab, prompt, strlen(prompt), toks, n, true, false);
    if (k <= 0) return tg_error(TG_ERR_INVALID_ARG, "live: cannot tokenize the prompt%s", k == 0 ? " (empty)" : "");
    if (k + n_predict > tg_llama_n_ctx(lv->ctx)) return tg_error(TG_ERR_INVALID_ARG, "live: %d prompt + %d generated tokens exceed the context (%d)", k, n_predict, tg_llama_n_ctx(lv->ctx));
    lv->n_prompt = k;
    lv->n_predict = n_predict < 0 ? 0 : n_predict;
    lv->n_generated = 0;
    lv->text_len = 0;
    if (lv->text) lv->text[0] = '\0';
    lv->graph_seq = -1;
    lv->decode_seq = lv->seen_decode = 0;
    lv->last_graph = NULL;
    lv->index = -1;
    lv->mode = MODE_CONTINUE;
    lv->state = TG_LIVE_IDLE;
    lv->running = true;
    lv->abort = false;
    atomic_store(&lv->interrupt, 0);
    if (pthread_create(&lv->worker, NULL, worker_main, lv) != 0) { lv->running = false; return tg_error(TG_ERR_INTERNAL, "live: cannot start the worker thread"); }
    lv->has_worker = true;
    return wait_stop(lv);
}

static enum tg_status resume(struct tg_live * lv, enum run_mode mode, int n) {
    pthread_mutex_lock(&lv->mu);
    if (lv->state != TG_LIVE_STOPPED) {
        pthread_mutex_unlock(&lv->mu);
        return tg_error(TG_ERR_INVALID_ARG, "the model is not stopped in a run (%s)", lv->state == TG_LIVE_DONE ? "the run finished; run PROMPT starts another" : "use run PROMPT first");
    }
    lv->mode = mode;
    lv->step_left = n;
    atomic_store(&lv->interrupt, 0);  // a Ctrl-C while stopped is not for this move
    lv->running = true;
    pthread_cond_broadcast(&lv->cv);
    pthread_mutex_unlock(&lv->mu);
    return wait_stop(lv);
}

enum tg_status tg_live_step(struct tg_live * lv, int n) { return resume(lv, MODE_STEP, n < 1 ? 1 : n); }
enum tg_status tg_live_continue(struct tg_live * lv) { return resume(lv, MODE_CONTINUE, 0); }
enum tg_status tg_live_finish(struct tg_live * lv) { return resume(lv, MODE_FINISH, 0); }

enum tg_status tg_live_next_decode(struct tg_live * lv) {
    pthread_mutex_lock(&lv->mu);
    lv->stop_seq = lv->decode_seq + 1;
    pthread_mutex_unlock(&lv->mu);
    return resume(lv, MODE_NEXT_DECODE, 0);
}

bool tg_live_where(const struct tg_live * lv, struct tg_live_where * w) {
    if (lv->state != TG_LIVE_STOPPED || !lv->node) return false;
    w->graph = tg_llama_last_graph(lv->ctx);
    w->node = lv->node;
    w->index = lv->index;
    w->graph_seq = lv->graph_seq;
    w->pos0 = lv->pos0;
    w->n_tokens = lv->n_tokens;
    w->layer = tg_trace_layer_of_name(lv->node->name);
    w->n_generated = lv->n_generated;
    return true;
}

struct tg_graph * tg_live_graph(const struct tg_live * lv) {
    return lv->state == TG_LIVE_IDLE ? NULL : tg_llama_last_graph(lv->ctx);
}

bool tg_live_node_done(const struct tg_live * lv, int i) {
    if (lv->state == TG_LIVE_DONE) return true;
    return lv->state == TG_LIVE_STOPPED && i <= lv->index;
}

int64_t tg_live_read(struct tg_live * lv, const struct tg_tensor * t, int64_t first, int64_t n, float * out) {
    (void) lv;
    if (!t || !t->data) { tg_error(TG_ERR_NO_BUFFER, "tensor '%s' has no host data to read", t ? t->name : "?"); return -1; }
    int64_t total = tg_nelements(t);
    if (first < 0 || first >= total) return 0;
    if (n > total - first) n = total - first;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = first + k;
        int64_t i0 = i % t->ne[0], r = i / t->ne[0];
        int64_t i1 = r % t->ne[1], i2 = (r / t->ne[1]) % t->ne[2], i3 = r / (t->ne[1] * t->ne[2]);
        out[k] = tg_get_f32_nd(t, i0, i1, i2, i3);
    }
    return n;
}
