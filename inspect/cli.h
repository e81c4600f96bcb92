// cli.h - the `tgdb` command: subcommand registration and shared helpers
// (strict number parsing, option tables, escaping of untrusted names, exit codes).
//
// Each subcommand lives in its own file (cmd_<name>.c) and registers itself:
//
//   static int cmd_gguf(int argc, char ** argv) { ... return TG_CLI_OK; }
//   TG_CLI_COMMAND(gguf, "gguf FILE [--json]", "show a GGUF file's header, key/values and tensors")
//
// or, with an option table that `tgdb help gguf` prints (see struct tg_cli_opt):
//
//   TG_CLI_COMMAND_OPTS(gguf, "gguf FILE [OPTIONS]", "show ...", gguf_opts, struct gguf_opts, gguf_defaults)
//
// argv[0] is the subcommand name. A command returns the process exit status,
// as diff(1) and cmp(1) do:
//   0 (TG_CLI_OK)      same / no problem / success
//   1 (TG_CLI_FOUND)   a difference or a problem was found (the command worked)
//   2 (TG_CLI_ERROR)   usage or input error (bad option, unreadable file, ...),
//                      after ONE clear line on stderr via tg_cli_err.
// main() also returns 2 when standard output cannot be written (full disk, closed pipe).
#ifndef TG_CLI_H
#define TG_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { TG_CLI_OK = 0, TG_CLI_FOUND = 1, TG_CLI_ERROR = 2 };

// The exit-code convention, as printed by `tgdb help` and every command's help.
#define TG_CLI_EXIT_HELP "exit status: 0 success / same, 1 difference or problem found, 2 usage or input error"

typedef int (*tg_cli_fn)(int argc, char ** argv);

struct tg_cli_opt;

struct tg_cli_command {
    const char * name;
    const char * usage;    // "gguf FILE [--json]"
    const char * summary;  // one line
    tg_cli_fn    fn;
    const struct tg_cli_opt * opts; // option table (ends with a zero entry) or NULL
    size_t opts_size;               // size of the options struct opts writes into
    void (*opts_init)(void * o);    // fills an options struct with the defaults (for help)
    struct tg_cli_command * next;
};

void tg_cli_register(struct tg_cli_command * cmd);
// Looks up a registered command by name (NULL if none).
const struct tg_cli_command * tg_cli_find(const char * name);

// TG_CLI_COMMAND_OPTS: opts_ is the option table, type_ the options struct
// it fills and init_ a function `void init_(type_ *)` setting the defaults
// (the command calls it before tg_cli_parse_opts; help prints its values).
#define TG_CLI_COMMAND_OPTS(id, usage_, summary_, opts_, type_, init_)           \
    static int cmd_##id(int argc, char ** argv);                               \
    static void tg_cli_init_##id(void * o) { init_((type_ *) o); }             \
    static struct tg_cli_command tg_cli_cmd_##id = {                           \
        .name = #id, .usage = usage_, .summary = summary_, .fn = cmd_##id,     \
        .opts = opts_, .opts_size = sizeof(type_), .opts_init = tg_cli_init_##id }; \
    __attribute__((constructor)) static void tg_cli_reg_##id(void) { tg_cli_register(&tg_cli_cmd_##id); }
#define TG_CLI_COMMAND(id, usage_, summary_)                                   \
    static int cmd_##id(int argc, char ** argv);                               \
    static struct tg_cli_command tg_cli_cmd_##id = {                           \
        .name = #id, .usage = usage_, .summary = summary_, .fn = cmd_##id };   \
    __attribute__((constructor)) static void tg_cli_reg_##id(void) { tg_cli_register(&tg_cli_cmd_##id); }

// Prints "tgdb: <message>" on stderr (one line) and returns TG_CLI_ERROR (2).
int tg_cli_err(const char * fmt, ...) __attribute__((format(printf, 1, 2)));
// A damaged, truncated or unclosed trace: prints "tgdb: warning: trace 'FILE':
// <what was lost>" on stderr (one line). Nothing for a complete trace or NULL.
struct tg_trace;
void tg_cli_trace_warning(const struct tg_trace * tr);
// Reads the whole file at path into a malloc'd buffer with a NUL after its
// len bytes. On failure prints "tgdb: CMD: <path and what was wrong>" (cannot
// open it and why, a directory, a read error and why, out of memory) and
// returns NULL.
char * tg_cli_read_file(const char * cmd, const char * path, size_t * len);
// Prints the usage line of a command on stderr and returns TG_CLI_ERROR (2).
int tg_cli_usage(const char * name);
// Prints a command's full help (usage, summary, options, exit codes) on f.
void tg_cli_print_help(FILE * f, const struct tg_cli_command * c);

// --- strict numbers -------------------------------------------------------
// Each parses the WHOLE string s (no leading/trailing junk, no empty string)
// and checks the range. On failure it prints one line naming the option and
// the value ("tgdb: --graph: 'abc' is not an integer", "... must be in 1..512")
// and returns false, leaving *out untouched. `what` is the option name.
bool tg_cli_int(const char * what, const char * s, long long lo, long long hi, int * out);
bool tg_cli_i64(const char * what, const char * s, long long lo, long long hi, long long * out);
// Unsigned 64-bit: decimal or 0x hex, no sign.
bool tg_cli_u64(const char * what, const char * s, uint64_t * out);
// Finite float in [lo, hi].
bool tg_cli_float(const char * what, const char * s, double lo, double hi, float * out);
// Finite double in [lo, hi].
bool tg_cli_double(const char * what, const char * s, double lo, double hi, double * out);
// Silent variant kept for existing callers: true and *out set when s is a
// whole decimal integer in [lo, hi].
bool tg_cli_parse_int(const char * s, long lo, long hi, int * out);

// --- option tables --------------------------------------------------------
// One definition per option, used to parse argv, to print help (meaning,
// default, range) and to share option groups between commands.
// `off` is the offsetof() of the destination inside the caller's options struct:
//   FLAG   -> bool            STR  -> const char *   INT -> int (lo..hi)
//   U64    -> uint64_t        FLOAT -> float (lo..hi, finite; lo excluded with open_lo)
//   DOUBLE -> double (as FLOAT)
//   CHOICE -> int: the index of the value among the '|'-separated words of `choices`
//   INTS   -> struct tg_cli_ints: a comma list of ints, each in lo..hi ("-p 128,256")
//   CHOICES-> struct tg_cli_ints: a comma list of choice indices ("-fa on,off")
//   TABLE  -> another option table (`table`) whose offsets are relative to `off`:
//             a group of options shared by several commands (see runopts.h).
//             An option named earlier in the including table overrides one of
//             the same name in the group (parse and help use the first).
// A table ends with an entry whose name is NULL (TABLE entries have a name
// too, used as a heading: "run options").
enum tg_cli_opt_kind { TG_CLI_FLAG, TG_CLI_STR, TG_CLI_INT, TG_CLI_U64, TG_CLI_FLOAT, TG_CLI_DOUBLE, TG_CLI_CHOICE,
                       TG_CLI_INTS, TG_CLI_CHOICES, TG_CLI_TABLE };

#define TG_CLI_INTS_MAX 16
struct tg_cli_ints {
    int n;                     // number of values (0: the option was not given and has no default)
    int v[TG_CLI_INTS_MAX];
};

struct tg_cli_opt {
    const char * name;        // "--threads"
    const char * short_name;  // "-t" or NULL
    const char * value;       // placeholder shown in help ("N"); NULL for flags
    const char * help;        // what the option means
    enum tg_cli_opt_kind kind;
    size_t off;
    double lo, hi;            // INT, INTS and FLOAT ranges
    bool open_lo;             // FLOAT: lo itself is not allowed ("must be > 0")
    const char * choices;     // CHOICE(S): "auto|on|off"
    const struct tg_cli_opt * table; // TABLE: the included group
};

// Parses argv[1..argc-1] against opts, writing into base. Non-option words
// (and everything after "--") go to pos[] (at most max_pos; *n_pos gets the
// count). Accepts "--name VALUE", "--name=VALUE" and "-s VALUE". Returns
// TG_CLI_OK, or TG_CLI_ERROR after one line on stderr: "CMD: unknown option
// --foo", "CMD: --x needs a value (N)", "CMD: too many arguments", or a value
// error naming the option and the value.
int tg_cli_parse_opts(const char * cmd, const struct tg_cli_opt * opts, void * base,
                      int argc, char ** argv, const char ** pos, int max_pos, int * n_pos);
// Prints one line per option ("  -t, --threads N   help [1..512] (default 4)")
// on f. `defaults` (optional) is an options struct holding the defaults: its
// values are printed as "(default X)" for every option that has one.
void tg_cli_print_opts(FILE * f, const struct tg_cli_opt * opts, const void * defaults);
// Parses a comma list of ints in lo..hi into *out; false after one line on
// stderr naming `what` and the bad element.
bool tg_cli_int_list(const char * what, const char * s, long long lo, long long hi, struct tg_cli_ints * out);

// --- tensor slices (the shell's print, `trace dump NAME[SLICE]`) ---------
// Parses a slice of a tensor with shape ne (ne[0] the row length), with or
// without the brackets: "[a:b]" flat elements a..b-1 ("a:" and ":b" open
// ends), "[r,:]" row r (rows counted over every dimension above 0),
// "[r,c]" one element, "[:]" everything. Sets [*lo, *hi); false with a
// message in err (bad syntax, out of range) otherwise.
bool tg_cli_parse_slice(const char * s, const int64_t ne[4], int64_t * lo, int64_t * hi, char * err, size_t n_err);
// Prints v[lo..hi) of a tensor with shape ne, one line per row part:
// "  [i1,i2,i3][c0:c1]" then the values, 8 per line.
void tg_cli_print_range(const float * v, const int64_t ne[4], int64_t lo, int64_t hi);

// --- untrusted strings ----------------------------------------------------
// Names and GGUF keys/strings come from files: everything the CLI prints of
// them goes through core/text.h (tg_escape_str inline in a printf, or this):
// control characters, C1, escape sequences and invalid UTF-8 as \xNN.
// Writes the escaped form of the NUL-terminated s on f (any length).
void tg_cli_fputs_escaped(FILE * f, const char * s);

#endif
