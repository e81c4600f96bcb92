// runopts.h - the options of every command that runs a model (generate,
// perplexity, bench; train when it comes): one option table, one validation,
// one set-up and tear-down of the model, the context, tracing and poison.
//
//   struct gen_opts { struct tg_cli_run_opts run; struct tg_llama_sampler_params sp; int n_predict; ... };
//   static const struct tg_cli_opt gen_table[] = {
//       { .name = "--n-predict", .short_name = "-n", ... },
//       { .name = "run options", .kind = TG_CLI_TABLE, .off = offsetof(struct gen_opts, run), .table = tg_cli_run_table },
//       { 0 } };
//   ... tg_cli_parse_opts(...); tg_cli_run_validate("generate", &o.run);
//   struct tg_cli_run r; tg_cli_run_open(&r, "generate", &o.run);
//   struct tg_llama_context_params cp = tg_cli_run_params(&o.run); cp.n_ctx = ...;
//   tg_cli_run_context(&r, &cp, "tgdb generate");  ... use r.ctx ...
//   return tg_cli_run_close(&r, rc);
#ifndef TG_CLI_RUNOPTS_H
#define TG_CLI_RUNOPTS_H

#include "cli.h"
#include "tg/llama.h"

// -fa: the attention path (llama.cpp's flash-attention switch). The order is
// the choice list's: "auto|on|off".
enum tg_cli_fa { TG_CLI_FA_AUTO = 0, TG_CLI_FA_ON = 1, TG_CLI_FA_OFF = 2 };
#define TG_CLI_FA_CHOICES "auto|on|off"
// --ctk / --ctv: KV cache types ("f16|f32").
enum tg_cli_kv { TG_CLI_KV_F16 = 0, TG_CLI_KV_F32 = 1 };

struct tg_cli_run_opts {
    const char * model;       // -m
    int n_threads;            // -t (1..512)
    int n_ctx;                // -c; 0 = the command's choice (see its help)
    int n_batch, n_ubatch;    // -b, -ub; 0 = the command's choice
    int type_k, type_v;       // enum tg_cli_kv
    int flash_attn;           // enum tg_cli_fa
    const char * devices;     // -dev "BLAS,CPU"
    int n_gpu_layers;         // -ngl: layers whose weights go to the GPU (0 = none)
    int repack;               // --repack: enum tg_llama_repack (auto, on, off)
    const char * trace, * trace_dump, * trace_hash, * trace_thread;
    bool poison;
    bool allow_long_ctx;      // a context longer than the model's n_ctx_train is a warning, not an error
    bool no_mem_check;        // skip the available-memory check
    bool progress;            // progress lines on stderr even when it is not a terminal
};

// The shared options (model, threads, sizes, KV types, -fa, devices,
// tracing, poison, limits, progress) and the sampling options (writing
// into a struct tg_llama_sampler_params).
extern const struct tg_cli_opt tg_cli_run_table[];
extern const struct tg_cli_opt tg_cli_sampling_table[];

// Defaults: 4 threads, sizes 0, f16 KV, -fa auto, everything else off.
void tg_cli_run_defaults(struct tg_cli_run_opts * o);
// Checks what needs no model: -m given, --trace-dump / --trace-hash only
// with --trace, the hash mode, every device named exists in the registry.
// TG_CLI_OK, or TG_CLI_ERROR after one line "CMD: ...".
int tg_cli_run_validate(const char * cmd, const struct tg_cli_run_opts * o);
// --trace-thread MODE as tg_trace_options.hash_thread: on 1, off 0, auto -1; -2 for another word.
int tg_cli_trace_thread(const char * mode);
// Progress lines on stderr: with --progress, or when stderr is a terminal.
bool tg_cli_run_progress(const struct tg_cli_run_opts * o);

// One model run: what tg_cli_run_open / _context create and _close frees.
struct tg_cli_run {
    const char * cmd;
    const struct tg_cli_run_opts * opts;
    struct tg_llama_model * model;
    struct tg_llama_context * ctx;
    struct tg_trace_recorder * rec;
    bool poisoned;
};

// Loads the model (-m). TG_CLI_OK or TG_CLI_ERROR (message printed); r is
// ready for tg_cli_run_close either way.
int tg_cli_run_open(struct tg_cli_run * r, const char * cmd, const struct tg_cli_run_opts * o);
// Context parameters from the options (threads, sizes when non-zero, KV
// types, devices); the command adjusts the sizes it chooses itself.
struct tg_llama_context_params tg_cli_run_params(const struct tg_cli_run_opts * o);
// Checks the request against the model (n_ctx vs n_ctx_train: an error
// unless --allow-long-ctx) and the memory it needs (KV cache + compute
// estimate vs MemAvailable: an error unless --no-mem-check), saying both
// numbers; then turns poison on, attaches the trace recorder (note = the
// trace's note) and creates the context in r->ctx. TG_CLI_OK or TG_CLI_ERROR.
int tg_cli_run_context(struct tg_cli_run * r, struct tg_llama_context_params * cp, const char * note);
// The observing half of tg_cli_run_context for commands that make their own
// scheduler (train): poison on and the trace recorder attached, as the
// options say. TG_CLI_OK or TG_CLI_ERROR (message printed).
int tg_cli_run_observe(struct tg_cli_run * r, const char * note);
// Detaches the recorder (a failure to finish the trace turns rc into
// TG_CLI_ERROR; success says "trace written to FILE" on stderr), turns poison
// off again and frees the context and the model. Returns the final status.
int tg_cli_run_close(struct tg_cli_run * r, int rc);

// Says on stderr, once a process, that n_threads is more than the CPUs this
// process may use (each node then waits for threads the kernel has not run).
void tg_cli_note_threads(const char * cmd, int n_threads);

// Bytes of memory available for new allocations (MemAvailable of
// /proc/meminfo), 0 when unknown. Total memory in *total when not NULL.
uint64_t tg_cli_mem_available(uint64_t * total);

#endif
