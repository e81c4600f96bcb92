// cmd_quantize.c - `tgdb quantize IN OUT TYPE`: requantizes an F32/F16 GGUF
// model with a preset's per-tensor types (tg_llama_quantize_file).
#include "cli.h"
#include "tg/llama.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

TG_CLI_COMMAND(quantize, "quantize IN.gguf OUT.gguf TYPE",
               "requantize an F32/F16 model: TYPE is f32 f16 q8_0 q4_0 q6_k q5_k_m q4_k_m q4_k_s q3_k_m q2_k iq4_nl iq4_xs")

static void progress(int i, int n, const char * name, enum tg_type type, void * user) {
    (void) user;
    if (isatty(2)) fprintf(stderr, "\r[%d/%d] %-40.40s %-7s", i, n, name, tg_type_name(type));
    if (i == n && isatty(2)) fputc('\n', stderr);
}

static int cmd_quantize(int argc, char ** argv) {
    if (argc != 4 || argv[1][0] == '-' || argv[2][0] == '-') return tg_cli_usage("quantize");
    if (!tg_llama_quant_preset_known(argv[3])) {
        return tg_cli_err("quantize: unknown type '%s' (known: %s)", argv[3], tg_llama_quant_presets());
    }
    if (strcmp(argv[1], argv[2]) == 0) return tg_cli_err("quantize: input and output are the same file: %s", argv[1]);
    if (tg_llama_quantize_file(argv[1], argv[2], argv[3], progress, NULL) != TG_OK) {
        return tg_cli_err("quantize: %s", tg_last_error());
    }
    printf("wrote %s (%s)\n", argv[2], argv[3]);
    return 0;
}
