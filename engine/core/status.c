// status.c - status names, per-thread last error, log callback.
#include "tg/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * const status_names[] = {
#define TG_STATUS_DEF(e, name) [e] = name,
#include "tg/status.def"
#undef TG_STATUS_DEF
};
_Static_assert(sizeof(status_names) / sizeof(status_names[0]) == TG_STATUS_COUNT, "one name per status");

const char * tg_status_str(enum tg_status st) {
    if ((int) st < 0 || st >= TG_STATUS_COUNT) return "unknown status";
    return status_names[st];
}

static _Thread_local char last_msg[1024];
static _Thread_local enum tg_status last_st;

// Formats into a scratch buffer first: callers may pass tg_last_error() itself
// as an argument ("%s: %s", path, tg_last_error()) to add context, and
// formatting straight into the buffer being read garbles the message.
enum tg_status tg_verror(enum tg_status st, const char * fmt, va_list ap) {
    char tmp[sizeof(last_msg)];
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    memcpy(last_msg, tmp, sizeof(last_msg));
    last_st = st;
    return st;
}

enum tg_status tg_error(enum tg_status st, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tg_verror(st, fmt, ap);
    va_end(ap);
    return st;
}

const char * tg_last_error(void) { return last_msg; }
enum tg_status tg_last_status(void) { return last_st; }
void tg_clear_error(void) { last_msg[0] = '\0'; last_st = TG_OK; }

static void default_log(enum tg_log_level level, const char * msg, void * user) {
    (void) user;
    if (level == TG_LOG_DEBUG) return;
    fputs(msg, stderr);
    size_t n = strlen(msg);
    if (n == 0 || msg[n - 1] != '\n') fputc('\n', stderr);
}

static tg_log_fn log_fn = default_log;
static void *    log_user;

void tg_log_set(tg_log_fn fn, void * user) {
    log_fn = fn ? fn : default_log;
    log_user = fn ? user : NULL;
}

void tg_log_printf(enum tg_log_level level, const char * fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    log_fn(level, buf, log_user);
}

void tg_assert_fail(const char * file, int line, const char * expr) {
    // Internal invariant broken: this is a bug in tgdb, not bad input.
    fprintf(stderr, "tgdb: internal assertion failed at %s:%d: %s\n", file, line, expr);
    fflush(stderr);
    abort();
}
