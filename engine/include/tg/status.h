// tg/status.h - status codes, per-thread last-error message, log callback.
//
// Every fallible engine function returns an enum tg_status (or NULL) and, on
// failure, sets a per-thread message with the details (which tensor, which
// file offset, which op and shapes). Libraries never print and never exit().
#ifndef TG_STATUS_H
#define TG_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tg_status {  // the list with meanings: tg/status.def
#define TG_STATUS_DEF(e, name) e,
#include "tg/status.def"
#undef TG_STATUS_DEF
    TG_STATUS_COUNT
};

// Returns a static, human-readable name for a status ("shape error"...).
const char * tg_status_str(enum tg_status st);

// Sets the calling thread's last-error message (printf-style) and returns st,
// so callers can write `return tg_error(TG_ERR_SHAPE, "...", ...);`.
enum tg_status tg_error(enum tg_status st, const char * fmt, ...)
    __attribute__((format(printf, 2, 3)));
enum tg_status tg_verror(enum tg_status st, const char * fmt, va_list ap);

// Returns the calling thread's last-error message ("" if none). The string is
// owned by the library and valid until the next tg_error on this thread.
const char * tg_last_error(void);
// Returns the status of the last tg_error on this thread (TG_OK if none).
enum tg_status tg_last_status(void);
// Clears the calling thread's last error.
void tg_clear_error(void);

enum tg_log_level { TG_LOG_DEBUG, TG_LOG_INFO, TG_LOG_WARN, TG_LOG_ERROR };
typedef void (*tg_log_fn)(enum tg_log_level level, const char * msg, void * user);

// Installs a log callback (NULL restores the default, which drops DEBUG and
// writes the rest to stderr). Not thread-safe against concurrent logging.
void tg_log_set(tg_log_fn fn, void * user);
void tg_log_printf(enum tg_log_level level, const char * fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Internal invariant check, always on. Never use it for user input.
void tg_assert_fail(const char * file, int line, const char * expr)
    __attribute__((noreturn));
#define TG_ASSERT(x) \
    do { if (!(x)) tg_assert_fail(__FILE__, __LINE__, #x); } while (0)

#ifdef __cplusplus
}
#endif
#endif // TG_STATUS_H
