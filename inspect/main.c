// main.c - the `tgdb` command: dispatch to self-registered subcommands.
#include "cli.h"
#include "tg/trace-read.h"

#include <errno.h>
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

int tg_cli_err(const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tgdb: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

void tg_cli_trace_warning(const struct tg_trace * tr) {
    char line[1024];
    if (tg_trace_warning(tr, line, sizeof(line))) fprintf(stderr, "tgdb: warning: %s\n", line);
}

bool tg_cli_parse_int(const char * s, long lo, long hi, int * out) {
    char * end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) return false;
    *out = (int) v;
    return true;
}

int tg_cli_usage(const char * name) {
    const struct tg_cli_command * c = tg_cli_find(name);
    if (c) fprintf(stderr, "usage: tgdb %s\n", c->usage);
    return 1;
}

static void print_help(FILE * f) {
    fprintf(f, "tgdb - a debugger for tensor graphs\n\nusage: tgdb COMMAND [ARGS]\n\ncommands:\n");
    for (const struct tg_cli_command * c = commands; c; c = c->next)
        fprintf(f, "  %-12s %s\n", c->name, c->summary);
    fprintf(f, "\n'tgdb help COMMAND' or 'tgdb COMMAND --help' shows a command's usage.\n");
}

int main(int argc, char ** argv) {
    if (argc < 2) { print_help(stderr); return 1; }
    const char * name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            const struct tg_cli_command * c = tg_cli_find(argv[2]);
            if (!c) return tg_cli_err("unknown command '%s' (see 'tgdb help')", argv[2]);
            printf("usage: tgdb %s\n%s\n", c->usage, c->summary);
            return 0;
        }
        print_help(stdout);
        return 0;
    }
    if (!strcmp(name, "--version")) { printf("tgdb %s\n", TG_VERSION); return 0; }
    const struct tg_cli_command * c = tg_cli_find(name);
    if (!c) return tg_cli_err("unknown command '%s' (see 'tgdb help')", name);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: tgdb %s\n%s\n", c->usage, c->summary);
            return 0;
        }
    }
    return c->fn(argc - 1, argv + 1);
}
