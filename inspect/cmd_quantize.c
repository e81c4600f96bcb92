// cmd_quantize.c - `tgdb quantize IN OUT TYPE`: requantizes an F32/F16 GGUF
// model with a preset's per-tensor types (tg_llama_quantize_file).
#include "cli.h"
#include "tg/llama.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct quant_opts { bool progress; };

static const struct tg_cli_opt quant_table[] = {
    { .name = "--progress", .kind = TG_CLI_FLAG, .off = offsetof(struct quant_opts, progress),
      .help = "a progress line per tensor on stderr even when it is not a terminal" },
    { 0 },
};

static void quant_defaults(struct quant_opts * o) { *o = (struct quant_opts) { 0 }; }

TG_CLI_COMMAND_OPTS(quantize, "quantize IN.gguf OUT.gguf TYPE [--progress]",
               "requantize an F32/F16 model: TYPE is f32 f16 q8_0 q4_0 q4_1 q5_0 q5_1 q6_k q5_k_m q4_k_m q4_k_s q3_k_m q2_k iq4_nl iq4_xs",
               quant_table, struct quant_opts, quant_defaults)

// On a terminal one line rewritten in place; otherwise (--progress) one line per tensor.
static void progress(int i, int n, const char * name, enum tg_type type, void * user) {
    (void) user;
    if (isatty(2)) {
        fprintf(stderr, "\r[%d/%d] %-40.40s %-7s", i, n, name, tg_type_name(type));
        if (i == n) fputc('\n', stderr);
    } else {
        fprintf(stderr, "[%d/%d] %s %s\n", i, n, name, tg_type_name(type));
    }
}

static int cmd_quantize(int argc, char ** argv) {
    struct quant_opts o;
    quant_defaults(&o);
    const char * pos[3];
    int np = 0;
    if (tg_cli_parse_opts("quantize", quant_table, &o, argc, argv, pos, 3, &np)) return TG_CLI_ERROR;
    if (np != 3) return tg_cli_usage("quantize");
    if (!tg_llama_quant_preset_known(pos[2])) {
        return tg_cli_err("quantize: unknown type '%s' (known: %s)", pos[2], tg_llama_quant_presets());
    }
    if (strcmp(pos[0], pos[1]) == 0) return tg_cli_err("quantize: input and output are the same file: %s", pos[0]);
    bool show = o.progress || isatty(2);
    if (tg_llama_quantize_file(pos[0], pos[1], pos[2], show ? progress : NULL, NULL) != TG_OK) {
        return tg_cli_err("quantize: %s", tg_last_error());
    }
    printf("wrote %s (%s)\n", pos[1], pos[2]);
    return 0;
}
