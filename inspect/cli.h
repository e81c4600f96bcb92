// cli.h - the `tgdb` command: subcommand registration and shared helpers.
//
// Each subcommand lives in its own file (cmd_<name>.c) and registers itself:
//
//   static int cmd_gguf(int argc, char ** argv) { ... return 0; }
//   TG_CLI_COMMAND(gguf, "gguf FILE [--json]", "show a GGUF file's header, key/values and tensors")
//
// argv[0] is the subcommand name. A command returns the process exit status:
// 0 success, 1 failure (after printing ONE clear line on stderr via tg_cli_err).
#ifndef TG_CLI_H
#define TG_CLI_H

#include <stdbool.h>

typedef int (*tg_cli_fn)(int argc, char ** argv);

struct tg_cli_command {
    const char * name;
    const char * usage;    // "gguf FILE [--json]"
    const char * summary;  // one line
    tg_cli_fn    fn;
    struct tg_cli_command * next;
};

void tg_cli_register(struct tg_cli_command * cmd);
// Looks up a registered command by name (NULL if none).
const struct tg_cli_command * tg_cli_find(const char * name);

#define TG_CLI_COMMAND(id, usage_, summary_)                                   \
    static int cmd_##id(int argc, char ** argv);                               \
    static struct tg_cli_command tg_cli_cmd_##id = {#id, usage_, summary_, cmd_##id, 0}; \
    __attribute__((constructor)) static void tg_cli_reg_##id(void) { tg_cli_register(&tg_cli_cmd_##id); }

// Prints "tgdb: <message>" on stderr (one line) and returns 1.
int tg_cli_err(const char * fmt, ...) __attribute__((format(printf, 1, 2)));
// A damaged, truncated or unclosed trace: prints "tgdb: warning: trace 'FILE':
// <what was lost>" on stderr (one line). Nothing for a complete trace or NULL.
struct tg_trace;
void tg_cli_trace_warning(const struct tg_trace * tr);
// Parses a whole decimal integer in [lo, hi] into *out. False (out untouched)
// on anything else: empty, trailing characters, out of range.
bool tg_cli_parse_int(const char * s, long lo, long hi, int * out);
// Prints the usage line of a command on stderr and returns 1.
int tg_cli_usage(const char * name);

#endif
