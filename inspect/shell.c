// shell.c - `tgdb shell`: the command loop (GNU Readline with history and
// completion on a terminal; -x commands or a script on standard input
// otherwise), the parser and the command table.
#include "core/grow.h"
#include "cli.h"
#include "shell.h"
#include "tg/cpu.h"

#include <readline/history.h>
#include <readline/readline.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct shell_cmd commands[] = {
#define SHELL_CMD(name, args, help, complete, words) {#name, args, help, shell_cmd_##name, complete, words},
#include "shell-cmds.def"
#undef SHELL_CMD
};
#define N_COMMANDS ((int) (sizeof(commands) / sizeof(commands[0])))

static struct shell * current;  // for readline's completion callbacks

volatile sig_atomic_t shell_interrupted;

// Ctrl-C never ends the shell: it only raises the flag. At the prompt the
// interrupted read comes back to readline, which calls on_signal_event (in
// normal context) to drop the line; a running command sees the flag.
static void on_sigint(int sig) {
    (void) sig;
    shell_interrupted = 1;
    shell_live_interrupt();  // a running live move stops after its node
}

static int on_signal_event(void) {
    if (!shell_interrupted) return 0;
    shell_interrupted = 0;
    rl_replace_line("", 0);
    rl_crlf();
    rl_on_new_line();
    rl_redisplay();
    return 0;
}

static void catch_sigint(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
    sigaction(SIGINT, &sa, NULL);
}

int shell_err(struct shell * sh, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    va_end(ap);
    sh->n_errors++;
    return 1;
}

static const struct shell_cmd * find_cmd(const char * name) {
    const struct shell_cmd * prefix = NULL;
    int n_prefix = 0;
    for (int i = 0; i < N_COMMANDS; i++) {
        if (!strcmp(commands[i].name, name)) return &commands[i];
        if (!strncmp(commands[i].name, name, strlen(name))) { prefix = &commands[i]; n_prefix++; }
    }
    if (!strcmp(name, "exit") || !strcmp(name, "q")) return find_cmd("quit");
    if (!strcmp(name, "s")) return find_cmd("step");
    if (!strcmp(name, "n")) return find_cmd("next");
    if (!strcmp(name, "c")) return find_cmd("continue");
    if (!strcmp(name, "p")) return find_cmd("print");
    if (!strcmp(name, "b")) return find_cmd("break");
    return n_prefix == 1 ? prefix : NULL;  // unambiguous prefix
}

int shell_cmd_help(struct shell * sh, int argc, char ** argv) {
    if (argc > 1) {
        const struct shell_cmd * c = find_cmd(argv[1]);
        if (!c) return shell_err(sh, "no command '%s' (type 'help' for the list)", argv[1]);
        printf("%s %s\n    %s\n", c->name, c->args, c->help);
        return 0;
    }
    printf("commands (unambiguous prefixes work; s n c p b q are short for step next continue print break quit):\n");
    for (int i = 0; i < N_COMMANDS; i++) printf("  %-9s %-34s %s\n", commands[i].name, commands[i].args, commands[i].help);
    return 0;
}

int shell_cmd_quit(struct shell * sh, int argc, char ** argv) {
    (void) argc; (void) argv;
    sh->quit = true;
    return 0;
}

// Splits a command into words: whitespace separated, "double" or 'single'
// quotes group words. Returns the count, -1 on an unterminated quote.
static int split_words(char * s, char ** argv, int max) {
    int argc = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        if (argc == max) return -2;
        char * out = s;
        argv[argc++] = out;
        while (*s && *s != ' ' && *s != '\t') {
            if (*s == '"' || *s == '\'') {
                char q = *s++;
                while (*s && *s != q) *out++ = *s++;
                if (*s != q) return -1;
                s++;
            } else {
                *out++ = *s++;
            }
        }
        if (*s) s++;
        *out = '\0';
    }
    return argc;
}

static void exec_one(struct shell * sh, char * cmd) {
    char * argv[SHELL_MAX_ARGS];
    int argc = split_words(cmd, argv, SHELL_MAX_ARGS);
    if (argc == -1) { shell_err(sh, "unterminated quote"); return; }
    if (argc == -2) { shell_err(sh, "too many arguments (at most %d)", SHELL_MAX_ARGS); return; }
    if (argc == 0) return;
    const struct shell_cmd * c = find_cmd(argv[0]);
    if (!c) { shell_err(sh, "unknown command '%s' (type 'help' for the list)", argv[0]); return; }
    argv[0] = (char *) c->name;
    c->fn(sh, argc, argv);
    fflush(stdout);
}

void shell_exec_line(struct shell * sh, char * line) {
    // ';' separates commands, except inside quotes
    char * start = line;
    char q = 0;
    for (char * p = line; ; p++) {
        if (*p == '"' || *p == '\'') q = q == *p ? 0 : (q ? q : *p);
        if ((*p == ';' && !q) || *p == '\0') {
            bool end = *p == '\0';
            *p = '\0';
            char * cmd = start;
            while (*cmd == ' ' || *cmd == '\t') cmd++;
            if (*cmd && *cmd != '#') {
                if (sh->echo) printf("(tgdb) %s\n", cmd);
                exec_one(sh, cmd);
            }
            if (end || sh->quit) break;
            start = p + 1;
        }
    }
}

// ---- completion -------------------------------------------------------------

static char ** matches;
static int n_matches;
static size_t cap_matches;

static void add_match(const char * name, void * user) {
    const char * prefix = user;
    if (strncmp(name, prefix, strlen(prefix)) != 0) return;
    for (int i = 0; i < n_matches; i++) if (!strcmp(matches[i], name)) return;
    if (!TG_GROW(matches, cap_matches, (size_t) n_matches + 1)) return;
    matches[n_matches++] = strdup(name);
}

static char * match_gen(const char * text, int state) {
    (void) text;
    static int idx;
    if (state == 0) idx = 0;
    return idx < n_matches ? strdup(matches[idx++]) : NULL;
}

static char ** shell_complete(const char * text, int start, int end) {
    (void) end;
    for (int i = 0; i < n_matches; i++) free(matches[i]);
    n_matches = 0;
    // which command is being completed?
    char first[64] = "";
    int k = 0;
    const char * p = rl_line_buffer;
    while (*p == ' ') p++;
    while (*p && *p != ' ' && k < 63) first[k++] = *p++;
    first[k] = '\0';
    bool completing_command = true;
    for (int i = 0; i < start; i++) if (rl_line_buffer[i] != ' ') { completing_command = (p - rl_line_buffer) >= start; break; }
    rl_attempted_completion_over = 1;
    if (completing_command) {
        for (int i = 0; i < N_COMMANDS; i++) add_match(commands[i].name, (void *) text);
    } else {
        const struct shell_cmd * c = find_cmd(first);
        if (!c) return NULL;
        if (c->complete == COMPLETE_FILE) { rl_attempted_completion_over = 0; return NULL; }
        if (c->complete == COMPLETE_NODE) shell_node_names(current, add_match, (void *) text);
        if (c->complete == COMPLETE_WORDS && c->words) {
            char words[256];
            snprintf(words, sizeof(words), "%s", c->words);
            for (char * w = strtok(words, " "); w; w = strtok(NULL, " ")) add_match(w, (void *) text);
            if (!strcmp(c->name, "help")) for (int i = 0; i < N_COMMANDS; i++) add_match(commands[i].name, (void *) text);
        }
    }
    if (n_matches == 0) return NULL;
    return rl_completion_matches(text, match_gen);
}

// ---- the loop ---------------------------------------------------------------

static char history_path[1024];

static void history_open(void) {
    const char * env = getenv("TGDB_HISTORY");
    const char * home = getenv("HOME");
    if (env) snprintf(history_path, sizeof(history_path), "%s", env);
    else if (home) snprintf(history_path, sizeof(history_path), "%s/.tgdb_history", home);
    using_history();
    stifle_history(2000);
    // append_history() needs the file to exist: create it on first use
    if (history_path[0] && read_history(history_path) != 0) write_history(history_path);
}

static void run_interactive(struct shell * sh) {
    current = sh;
    rl_readline_name = "tgdb";
    rl_attempted_completion_function = shell_complete;
    rl_completer_word_break_characters = " \t";
    rl_catch_signals = 0;                 // our SIGINT handler, not readline's
    rl_signal_event_hook = on_signal_event;
    catch_sigint();
    history_open();
    while (!sh->quit) {
        char * line = readline("(tgdb) ");
        if (!line) { putchar('\n'); break; }  // EOF (^D)
        if (*line) {
            HIST_ENTRY * last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
            if (!last || strcmp(last->line, line) != 0) add_history(line);
            if (history_path[0]) append_history(1, history_path);
        }
        shell_interrupted = 0;
        shell_exec_line(sh, line);
        free(line);
    }
    if (history_path[0]) history_truncate_file(history_path, 2000);
    for (int i = 0; i < n_matches; i++) free(matches[i]);
    free(matches);
}

static void run_script(struct shell * sh, FILE * in) {
    char * line = NULL;
    size_t cap = 0;
    while (!sh->quit && getline(&line, &cap, in) > 0) {
        line[strcspn(line, "\r\n")] = '\0';
        shell_exec_line(sh, line);
    }
    free(line);
}

struct shell_opts {
    const char * model, * script;
    int n_threads;
};

#define SHO(f) offsetof(struct shell_opts, f)
static const struct tg_cli_opt shell_table[] = {
    { .name = "--model", .short_name = "-m", .value = "MODEL", .kind = TG_CLI_STR, .off = SHO(model),
      .help = "debug a live run of this llama GGUF model (run PROMPT, step, break, ...)" },
    { .name = "--threads", .short_name = "-t", .value = "N", .kind = TG_CLI_INT, .off = SHO(n_threads), .lo = 1, .hi = 512,
      .help = "CPU threads of the live model" },
    { .name = "--exec", .short_name = "-x", .value = "'CMD; CMD...'", .kind = TG_CLI_STR, .off = SHO(script),
      .help = "run these commands (echoed) instead of reading a terminal or stdin" },
    { 0 },
};

static void shell_defaults(struct shell_opts * o) { *o = (struct shell_opts) { .n_threads = tg_cpu_default_threads() }; }

TG_CLI_COMMAND_OPTS(shell, "shell [TRACE] [-m MODEL [-t THREADS]] [-x 'CMD; CMD...']",
               "interactive debugger shell: post-mortem on a trace, or live on a model (-m); -x or stdin for scripts",
               shell_table, struct shell_opts, shell_defaults)

static int cmd_shell(int argc, char ** argv) {
    struct shell sh;
    memset(&sh, 0, sizeof(sh));
    sh.eval = -1;
    struct shell_opts o;
    shell_defaults(&o);
    const char * pos[1];
    int np = 0;
    if (tg_cli_parse_opts("shell", shell_table, &o, argc, argv, pos, 1, &np)) return TG_CLI_ERROR;
    const char * path = np ? pos[0] : NULL, * model = o.model, * script = o.script;
    int n_threads = o.n_threads;
    if (path && !shell_open_trace(&sh, path)) return tg_cli_err("%s", tg_last_error());
    if (model) {
        char err[512];
        sh.live = shell_live_open(model, n_threads, err, sizeof(err));
        if (!sh.live) { shell_close_trace(&sh); return tg_cli_err("%s", err); }
    }
    if (script) {
        sh.echo = true;
        char * buf = strdup(script);
        if (!buf) return tg_cli_err("out of memory");
        shell_exec_line(&sh, buf);
        free(buf);
    } else if (isatty(STDIN_FILENO)) {
        sh.interactive = true;
        if (!path && !model) printf("tgdb shell: no trace or model yet (open TRACE); 'help' lists the commands\n");
        run_interactive(&sh);
    } else {
        sh.echo = true;
        run_script(&sh, stdin);
    }
    shell_live_close(sh.live);
    shell_close_trace(&sh);
    return sh.interactive ? 0 : (sh.n_errors ? 1 : 0);
}

const char * tg_shell_readline_version(void) { return rl_library_version; }
