// runopts.c - the shared options of the commands that run a model and their
// one set-up / tear-down (model, limits, poison, trace recorder, context).
#include "runopts.h"

#include "tg/backend.h"
#include "tg/cpu.h"
#include "tg/trace.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUN(f) offsetof(struct tg_cli_run_opts, f)
#define SMP(f) offsetof(struct tg_llama_sampler_params, f)

const struct tg_cli_opt tg_cli_run_table[] = {
    { .name = "--model", .short_name = "-m", .value = "MODEL", .kind = TG_CLI_STR, .off = RUN(model),
      .help = "the llama GGUF model file (required)" },
    { .name = "--threads", .short_name = "-t", .value = "N", .kind = TG_CLI_INT, .off = RUN(n_threads), .lo = 1, .hi = 512,
      .help = "CPU threads; by default one a core of the CPUs this process may use (more threads than CPUs slow every node)" },
    { .name = "--ctx-size", .short_name = "-c", .value = "N", .kind = TG_CLI_INT, .off = RUN(n_ctx), .lo = 0, .hi = 1 << 20,
      .help = "context size in tokens (KV cache cells); more than the model's training context needs --allow-long-ctx" },
    { .name = "--batch-size", .short_name = "-b", .value = "N", .kind = TG_CLI_INT, .off = RUN(n_batch), .lo = 0, .hi = 1 << 20,
      .help = "most tokens per decode call (0 = the context size)" },
    { .name = "--ubatch-size", .short_name = "-ub", .value = "N", .kind = TG_CLI_INT, .off = RUN(n_ubatch), .lo = 0, .hi = 1 << 20,
      .help = "most tokens per computed graph (0 = the batch size, at most 512)" },
    { .name = "--cache-type-k", .short_name = "-ctk", .value = "TYPE", .kind = TG_CLI_CHOICE, .off = RUN(type_k), .choices = "f16|f32",
      .help = "KV cache type of K (and of V unless -ctv)" },
    { .name = "--cache-type-v", .short_name = "-ctv", .value = "TYPE", .kind = TG_CLI_CHOICE, .off = RUN(type_v), .choices = "f16|f32",
      .help = "KV cache type of V (default: as -ctk)" },
    { .name = "--flash-attn", .short_name = "-fa", .value = "MODE", .kind = TG_CLI_CHOICE, .off = RUN(flash_attn),
      .choices = TG_CLI_FA_CHOICES,
      .help = "attention path (llama.cpp's -fa): on = one fused FLASH_ATTN_EXT node per layer, off = the kq / kq_soft_max / kqv nodes, auto = fused unless a trace or callback watches the nodes" },
    { .name = "--device", .short_name = "-dev", .value = "LIST", .kind = TG_CLI_STR, .off = RUN(devices),
      .help = "backends in priority order, comma-separated (see 'tgdb devices'; default CPU)" },
    { .name = "--n-gpu-layers", .short_name = "-ngl", .value = "N", .kind = TG_CLI_INT, .off = RUN(n_gpu_layers), .lo = 0, .hi = 100000,
      .help = "put the weights and KV cache of the last N layers in GPU memory (N above the layer count: the output too; "
              "the GPU is the first GPU in --device, else CUDA0)" },
    { .name = "--repack", .value = "MODE", .kind = TG_CLI_CHOICE, .off = RUN(repack), .choices = "auto|on|off",
      .help = "packed copies of the quantized matrices for the CPU's packed kernels (Q4_0 from AVX2 on, every type with AVX-512 VNNI; "
              "faster; as much memory again; "
              "same results): auto = when the CPU has them and they fit in half the available memory (TG_REPACK overrides auto)" },
    { .name = "--trace", .value = "FILE", .kind = TG_CLI_STR, .off = RUN(trace),
      .help = "record every graph into a trace file" },
    { .name = "--trace-dump", .value = "PATTERN", .kind = TG_CLI_STR, .off = RUN(trace_dump),
      .help = "store the full contents of the nodes matching PATTERN (needs --trace)" },
    { .name = "--trace-hash", .value = "MODE", .kind = TG_CLI_STR, .off = RUN(trace_hash),
      .help = "which nodes get content hashes: all, computed or none (needs --trace; default all)" },
    { .name = "--trace-thread", .value = "MODE", .kind = TG_CLI_STR, .off = RUN(trace_thread),
      .help = "hash on the recorder's own thread: on, off or auto (when -t leaves a CPU free; needs --trace; "
              "default auto, or TGDB_TRACE_HASH_THREAD)" },
    { .name = "--poison", .kind = TG_CLI_FLAG, .off = RUN(poison),
      .help = "fill freed compute memory with NaN so stale reads show" },
    { .name = "--allow-long-ctx", .kind = TG_CLI_FLAG, .off = RUN(allow_long_ctx),
      .help = "allow a context longer than the model was trained for (a warning instead of an error)" },
    { .name = "--no-mem-check", .kind = TG_CLI_FLAG, .off = RUN(no_mem_check),
      .help = "do not refuse a context that needs more memory than is available" },
    { .name = "--progress", .kind = TG_CLI_FLAG, .off = RUN(progress),
      .help = "progress lines on stderr even when it is not a terminal" },
    { 0 },
};

const struct tg_cli_opt tg_cli_sampling_table[] = {
    { .name = "--temp", .value = "T", .kind = TG_CLI_FLOAT, .off = SMP(temp), .lo = 0, .hi = 100,
      .help = "temperature; 0 = greedy" },
    { .name = "--top-k", .value = "K", .kind = TG_CLI_INT, .off = SMP(top_k), .lo = 0, .hi = 1 << 30,
      .help = "keep the K most likely tokens; 0 = off" },
    { .name = "--top-p", .value = "P", .kind = TG_CLI_FLOAT, .off = SMP(top_p), .lo = 0, .hi = 1,
      .help = "keep the smallest set of tokens whose probability reaches P; 1 = off" },
    { .name = "--min-p", .value = "P", .kind = TG_CLI_FLOAT, .off = SMP(min_p), .lo = 0, .hi = 1,
      .help = "drop tokens less likely than P times the most likely; 0 = off" },
    { .name = "--repeat-penalty", .value = "F", .kind = TG_CLI_FLOAT, .off = SMP(repeat_penalty), .lo = 0, .hi = 100,
      .open_lo = true, .help = "divide the logits of recently seen tokens by F; 1 = off" },
    { .name = "--repeat-last-n", .value = "N", .kind = TG_CLI_INT, .off = SMP(repeat_last_n), .lo = 0, .hi = 65536,
      .help = "how many recent tokens the repeat penalty looks at" },
    { .name = "--seed", .short_name = "-s", .value = "S", .kind = TG_CLI_U64, .off = SMP(seed),
      .help = "random seed (decimal or 0x hex); a seed gives the same tokens everywhere" },
    { 0 },
};

void tg_cli_run_defaults(struct tg_cli_run_opts * o) {
    *o = (struct tg_cli_run_opts) { .n_threads = tg_cpu_default_threads(), .type_k = TG_CLI_KV_F16, .type_v = -1, .flash_attn = TG_CLI_FA_AUTO };
}

bool tg_cli_run_progress(const struct tg_cli_run_opts * o) { return o->progress || isatty(2); }

// Every comma-separated name of list is a registered device.
static int check_devices(const char * cmd, const char * list) {
    const char * p = list;
    for (;;) {
        const char * comma = strchr(p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen(p);
        char name[64];
        if (len == 0 || len >= sizeof name)
            return tg_cli_err("%s: --device '%s': empty or overlong device name", cmd, list);
        memcpy(name, p, len);
        name[len] = 0;
        if (!tg_device_by_name(name)) {
            char known[256] = "";
            size_t n = 0;
            for (int i = 0; i < tg_device_count() && n < sizeof known; i++)
                n += (size_t) snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", tg_device_name(tg_device_get(i)));
            return tg_cli_err("%s: --device: unknown device '%s' (this build has: %s; see 'tgdb devices')", cmd, name, known);
        }
        if (!comma) return TG_CLI_OK;
        p = comma + 1;
    }
}

int tg_cli_trace_thread(const char * mode) {
    if (!strcmp(mode, "on") || !strcmp(mode, "1")) return 1;
    if (!strcmp(mode, "off") || !strcmp(mode, "0")) return 0;
    if (!strcmp(mode, "auto")) return -1;
    return -2;
}

int tg_cli_run_validate(const char * cmd, const struct tg_cli_run_opts * o) {
    if (!o->model) return tg_cli_err("%s: no model (-m MODEL)", cmd);
    if (o->trace_dump && !o->trace) return tg_cli_err("%s: --trace-dump needs --trace FILE", cmd);
    if (o->trace_hash && !o->trace) return tg_cli_err("%s: --trace-hash needs --trace FILE", cmd);
    struct tg_trace_options probe = tg_trace_default_options();
    if (o->trace_hash && !tg_trace_set_hash_mode(&probe, o->trace_hash))
        return tg_cli_err("%s: --trace-hash '%s': expected all, computed or none", cmd, o->trace_hash);
    if (o->trace_thread && !o->trace) return tg_cli_err("%s: --trace-thread needs --trace FILE", cmd);
    if (o->trace_thread && tg_cli_trace_thread(o->trace_thread) < -1)
        return tg_cli_err("%s: --trace-thread '%s': expected on, off or auto", cmd, o->trace_thread);
    if (o->devices && *o->devices && check_devices(cmd, o->devices)) return TG_CLI_ERROR;
    return TG_CLI_OK;
}

int tg_cli_run_open(struct tg_cli_run * r, const char * cmd, const struct tg_cli_run_opts * o) {
    *r = (struct tg_cli_run) { .cmd = cmd, .opts = o };
    struct tg_llama_model_params mp = tg_llama_model_default_params();
    mp.n_gpu_layers = o->n_gpu_layers;
    mp.repack = (enum tg_llama_repack) o->repack;   // the same order: auto, on, off
    for (const char * p = o->devices; p && *p && o->n_gpu_layers;) {   // the first GPU named in --device
        size_t len = strcspn(p, ",");
        char name[64];
        if (len < sizeof name) {
            memcpy(name, p, len);
            name[len] = 0;
            struct tg_device * d = tg_device_by_name(name);
            if (d && tg_device_type(d) == TG_DEVICE_GPU) { mp.gpu_device = tg_device_name(d); break; }
        }
        p += len;
        if (*p == ',') p++;
    }
    r->model = tg_llama_model_load(o->model, &mp);
    if (!r->model) return tg_cli_err("%s: %s", cmd, tg_last_error());
    return TG_CLI_OK;
}

struct tg_llama_context_params tg_cli_run_params(const struct tg_cli_run_opts * o) {
    struct tg_llama_context_params cp = tg_llama_context_default_params();
    cp.n_threads = o->n_threads;
    if (o->n_ctx) cp.n_ctx = o->n_ctx;
    if (o->n_batch) cp.n_batch = o->n_batch;
    if (o->n_ubatch) cp.n_ubatch = o->n_ubatch;
    cp.type_k = o->type_k == TG_CLI_KV_F32 ? TG_TYPE_F32 : TG_TYPE_F16;
    int tv = o->type_v < 0 ? o->type_k : o->type_v;
    cp.type_v = tv == TG_CLI_KV_F32 ? TG_TYPE_F32 : TG_TYPE_F16;
    cp.devices = o->devices;
    cp.flash_attn = (enum tg_llama_flash_attn) o->flash_attn;   // the same order: auto, on, off
    return cp;
}

uint64_t tg_cli_mem_available(uint64_t * total) { return tg_cpu_memory_available(total); }

static double gib(uint64_t b) { return (double) b / (1024.0 * 1024.0 * 1024.0); }

// The request against the model's training context and the memory it needs.
// More engine threads than CPUs: every node waits until the kernel has run
// its last thread; said once, on stderr.
void tg_cli_note_threads(const char * cmd, int n_threads) {
    static bool said;
    const int n_cpu = tg_cpu_n_available();
    if (said || n_threads <= n_cpu) return;
    said = true;
    fflush(stdout);
    fprintf(stderr, "%s: note: %d threads on %d CPU%s: every node waits for the threads that find no CPU "
            "(generation several times slower; the default is %d)\n", cmd, n_threads, n_cpu, n_cpu == 1 ? "" : "s",
            tg_cpu_default_threads());
}

static int check_limits(struct tg_cli_run * r, const struct tg_llama_context_params * cp) {
    tg_cli_note_threads(r->cmd, (int) cp->n_threads);
    const struct tg_llama_hparams * h = tg_llama_model_hparams(r->model);
    struct tg_llama_memory_estimate est;
    if (tg_llama_context_estimate(r->model, cp, &est) != TG_OK) return tg_cli_err("%s: %s", r->cmd, tg_last_error());
    if (est.n_ctx > h->n_ctx_train) {
        if (!r->opts->allow_long_ctx && r->opts->n_ctx)
            return tg_cli_err("%s: context size %d is more than the %d tokens %s was trained for"
                              " (use -c %d or less, or --allow-long-ctx)", r->cmd, est.n_ctx, h->n_ctx_train,
                              r->opts->model, h->n_ctx_train);
        if (!r->opts->allow_long_ctx)   // the command sized the context from the request
            return tg_cli_err("%s: the request needs a context of %d tokens, more than the %d tokens %s was trained for"
                              " (ask for fewer tokens, or --allow-long-ctx)", r->cmd, est.n_ctx, h->n_ctx_train,
                              r->opts->model);
        fprintf(stderr, "tgdb: warning: %s: context size %d is more than the %d tokens the model was trained for\n",
                r->cmd, est.n_ctx, h->n_ctx_train);
    }
    uint64_t need = est.kv_bytes + est.compute_bytes;
    uint64_t total = 0, avail = tg_cli_mem_available(&total);
    if (avail && need > avail && !r->opts->no_mem_check)
        return tg_cli_err("%s: context size %d needs about %.2f GiB (KV cache %.2f GiB + compute %.2f GiB),"
                          " only %.2f GiB of memory is available (use a smaller -c, or --no-mem-check)", r->cmd,
                          est.n_ctx, gib(need), gib(est.kv_bytes), gib(est.compute_bytes), gib(avail));
    return TG_CLI_OK;
}

int tg_cli_run_observe(struct tg_cli_run * r, const char * note) {
    const struct tg_cli_run_opts * o = r->opts;
    // --poison (TGDB_POISON=1): freed and reused compute ranges are filled with
    // NaN as the allocator gives them up, so a stale read shows in the output
    if (o->poison && !r->poisoned) {
        if (tg_trace_set_poison(true) != TG_OK) return tg_cli_err("%s: --poison: %s", r->cmd, tg_last_error());
        r->poisoned = true;
    }
    if (o->trace && !r->rec) {  // global recorder attached before the scheduler exists: recorded from birth
        struct tg_trace_options topt = tg_trace_default_options();
        topt.contents = o->trace_dump;
        if (o->trace_hash) tg_trace_set_hash_mode(&topt, o->trace_hash);
        if (o->trace_thread) topt.hash_thread = tg_cli_trace_thread(o->trace_thread);
        topt.note = note;
        r->rec = tg_trace_attach(NULL, o->trace, &topt);
        if (!r->rec) return tg_cli_err("%s: %s", r->cmd, tg_last_error());
    }
    return TG_CLI_OK;
}

int tg_cli_run_context(struct tg_cli_run * r, struct tg_llama_context_params * cp, const char * note) {
    if (check_limits(r, cp)) return TG_CLI_ERROR;
    if (tg_cli_run_observe(r, note)) return TG_CLI_ERROR;
    r->ctx = tg_llama_context_new(r->model, cp);
    if (!r->ctx) return tg_cli_err("%s: %s", r->cmd, tg_last_error());
    return TG_CLI_OK;
}

int tg_cli_run_close(struct tg_cli_run * r, int rc) {
    if (r->rec) {
        struct tg_trace_recorder_stats st;
        tg_trace_recorder_get_stats(r->rec, &st);
        if (tg_trace_detach(r->rec) != TG_OK) {
            if (rc == TG_CLI_OK) rc = tg_cli_err("%s: trace %s: %s", r->cmd, r->opts->trace, tg_last_error());
        } else if (rc == TG_CLI_OK) {
            // what recording added to the run's time (the engine waits for the recorder's callbacks)
            fflush(stdout);   // after the command's output, also when both go to one pipe
            fprintf(stderr, "trace written to %s (recording: %.1f ms in %llu callbacks", r->opts->trace,
                    (double) st.hook_ns / 1e6, (unsigned long long) st.n_hooks);
            if (st.thread_ns)   // hashing beside the computation, on a CPU the run left free
                fprintf(stderr, "; hashing: %.1f ms on the recorder's own thread", (double) st.thread_ns / 1e6);
            fprintf(stderr, ")\n");
            if (!st.thread_ns && st.view_ns > st.hook_ns / 4 && st.view_ns > 100000000ull)   // views dominate: say what to do
                fprintf(stderr, "  %.1f ms of it hashed views (the KV-cache views grow with the context); "
                        "--trace-hash computed skips views\n", (double) st.view_ns / 1e6);
            const int n_cpu = tg_cpu_n_available(), nt = r->opts->n_threads;
            const bool hashed = !r->opts->trace_hash || strcmp(r->opts->trace_hash, "none") != 0;
            if (!st.thread_ns && hashed && !r->opts->trace_thread && n_cpu >= 4 && nt >= n_cpu && st.n_hooks > 0)
                // every CPU computes, so the engine's threads waited while thread 0 hashed each node; with
                // 4 or more CPUs one thread fewer costs less than that (on 2, hashing inline is the faster)
                fprintf(stderr, "  the nodes were hashed in the engine's callbacks (-t %d on %d CPUs); -t %d leaves a CPU "
                        "to the recorder's own hashing thread\n", nt, n_cpu, n_cpu - 1);
        }
        r->rec = NULL;
    }
    if (r->poisoned) tg_trace_set_poison(false);
    r->poisoned = false;
    tg_llama_context_free(r->ctx);
    tg_llama_model_free(r->model);
    r->ctx = NULL;
    r->model = NULL;
    return rc;
}
