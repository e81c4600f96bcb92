// main.c - the `tgdb` command: dispatch to self-registered subcommands.
#include "cli.h"
#include "tg/trace-read.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static struct tg_cli_command * commands;

void tg_cli_register(struct tg_cli_command * cmd) {
    // keep the list sorted by name so help is stable
    struct tg_cli_command ** p = &commands;
    while (*p && strcmp((*p)->name, cmd->name) < 0) p = &(*p)->next;
    cmd->next = *p;
    *p = cmd;
}

const struct tg_cli_command * tg_cli_find(const char * name) {
    for (const struct tg_cli_command * c = commands; c; c = c->next)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

void tg_cli_trace_warning(const struct tg_trace * tr) {
    char line[1024];
    if (tg_trace_warning(tr, line, sizeof(line))) fprintf(stderr, "tgdb: warning: %s\n", line);
}

static void print_help(FILE * f) {
    fprintf(f, "tgdb - a debugger for tensor graphs\n\nusage: tgdb COMMAND [ARGS]\n\ncommands:\n");
    for (const struct tg_cli_command * c = commands; c; c = c->next)
        fprintf(f, "  %-12s %s\n", c->name, c->summary);
    fprintf(f, "\n'tgdb help COMMAND' or 'tgdb COMMAND --help' shows a command's usage and options.\n%s\n", TG_CLI_EXIT_HELP);
}

// Every command's output goes through stdout: a write error there (full
// disk, /dev/full, a closed pipe) must not be reported as success. Flushes and
// closes stdout; on failure prints one line and returns TG_CLI_ERROR.
static int finish(int rc) {
    errno = 0;
    bool bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (fclose(stdout) != 0 && !bad) { bad = true; err = errno; }
    if (bad) {
        tg_cli_err("cannot write to standard output: %s", err ? strerror(err) : "write error");
        return TG_CLI_ERROR;
    }
    return rc;
}

int main(int argc, char ** argv) {
    if (argc < 2) { print_help(stderr); return TG_CLI_ERROR; }
    const char * name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            const struct tg_cli_command * c = tg_cli_find(argv[2]);
            if (!c) return tg_cli_err("unknown command '%s' (see 'tgdb help')", argv[2]);
            tg_cli_print_help(stdout, c);
            return finish(TG_CLI_OK);
        }
        print_help(stdout);
        return finish(TG_CLI_OK);
    }
    if (!strcmp(name, "--version")) { printf("tgdb %s\n", TG_VERSION); return finish(TG_CLI_OK); }
    const struct tg_cli_command * c = tg_cli_find(name);
    if (!c) return tg_cli_err("unknown command '%s' (see 'tgdb help')", name);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tg_cli_print_help(stdout, c);
            return finish(TG_CLI_OK);
        }
    }
    return finish(c->fn(argc - 1, argv + 1));
}
