// shell.h - `tgdb shell`: a GNU Readline command shell over a trace
// (post-mortem) or a model running in-process (live). One command table
// (shell-cmds.def) generates the parser, the help and the completion.
#ifndef TG_SHELL_H
#define TG_SHELL_H

#include "tg/trace-check.h"
#include "tg/trace-read.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#define SHELL_MAX_BREAKS 32
#define SHELL_MAX_ARGS   32

enum shell_break_kind { BREAK_NAME, BREAK_OP, BREAK_NAN, BREAK_STALE };

struct shell_break {
    enum shell_break_kind kind;
    char pattern[96];
    bool enabled;
    int  hits;
};

struct shell_live;  // shell-live.c

struct shell {
    // post-mortem
    struct tg_trace * tr;
    char   path[512];
    int    eval;              // current position: eval index in file order (-1: before the first)
    struct tg_trace_report report;
    bool   report_ready;
    // live
    struct shell_live * live;
    // both
    struct shell_break breaks[SHELL_MAX_BREAKS];
    int    n_breaks;
    bool   interactive;       // readline on a terminal
    bool   echo;              // echo commands (scripts)
    bool   quit;
    int    n_errors;
};

// Set by Ctrl-C (SIGINT) while the shell runs; a long command (continue)
// checks it at each node and stops there. Cleared before each command.
extern volatile sig_atomic_t shell_interrupted;
// Async-signal-safe: asks the live model's running move (run, continue,
// step) to stop after the node being computed; nothing when none runs.
void shell_live_interrupt(void);

// A command: argv[0] is its name. Returns 0, or 1 after printing one
// "error: ..." line (the shell keeps running).
typedef int (*shell_fn)(struct shell * sh, int argc, char ** argv);

enum shell_complete { COMPLETE_NONE, COMPLETE_NODE, COMPLETE_FILE, COMPLETE_WORDS };

struct shell_cmd {
    const char *        name;
    const char *        args;     // usage of the arguments
    const char *        help;     // one line
    shell_fn            fn;
    enum shell_complete complete;
    const char *        words;    // COMPLETE_WORDS: space-separated first arguments
};

// Prints "error: ..." (one line) and returns 1.
int shell_err(struct shell * sh, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
// Runs one command line (may hold several commands separated by ';').
void shell_exec_line(struct shell * sh, char * line);

// Post-mortem helpers (shell-trace.c).
bool shell_open_trace(struct shell * sh, const char * path);
void shell_close_trace(struct shell * sh);
// Names of nodes of the current graph for completion: calls fn for each.
void shell_node_names(struct shell * sh, void (*fn)(const char * name, void * user), void * user);
bool shell_break_matches(struct shell * sh, const char * name, const char * op, bool nonfinite, bool stale);

// Commands, defined in shell-trace.c and shell-live.c.
#define SHELL_CMD(name, args, help, complete, words) int shell_cmd_##name(struct shell * sh, int argc, char ** argv);
#include "shell-cmds.def"
#undef SHELL_CMD

// Live session (shell-live.c): open a model; NULL + message on failure.
struct shell_live * shell_live_open(const char * model, int n_threads, char * err, size_t n);
void shell_live_close(struct shell_live * lv);

// The GNU Readline library the shell runs on ("8.2"): for `tgdb version`
// (only the shell's files include readline).
const char * tg_shell_readline_version(void);

#endif
