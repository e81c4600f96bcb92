// check.h - minimal assertion helpers for tgdb's test executables.
// Every check prints what it checked; tg_check_finish() prints the totals as
// "N passed, N failed" and returns the process exit status.
#ifndef TG_CHECK_H
#define TG_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

// Records one check. Prints "ok   <msg>" or "FAIL <msg> (file:line)". Returns ok.
bool tg_check_at(bool ok, const char * file, int line, const char * fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define CHECK(cond, ...) tg_check_at((cond), __FILE__, __LINE__, __VA_ARGS__)
// Silent on success (for checks in big loops); prints on failure.
bool tg_check_quiet_at(bool ok, const char * file, int line, const char * fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define CHECKQ(cond, ...) tg_check_quiet_at((cond), __FILE__, __LINE__, __VA_ARGS__)
// Prints "<name>: N passed, N failed" and returns 0 if none failed, else 1.
int  tg_check_finish(const char * name);
int  tg_check_failures(void);

// Path of a file under tests/data (static buffer per call site is NOT used:
// returns a malloc'd string the caller frees).
char * tg_test_data(const char * rel);
// The whole file at path in a malloc'd buffer the caller frees, with a NUL
// after its bytes (a text file is a string); *len (if not NULL) gets the byte
// count. NULL when the file cannot be opened or read.
void * tg_test_read_file(const char * path, size_t * len);
// Opens tests/data/<rel> for reading, recording the check "open PATH";
// NULL (check failed) when it cannot be opened.
FILE * tg_test_open_data(const char * rel);
// tg_test_read_file of a file under tests/data.
void * tg_test_read_data(const char * rel, size_t * len);

// Path of a file of the shared reference data (../shared/reference beside the
// source tree, or $TG_REF_DIR), malloc'd; NULL when the file is not there
// (after printing "skipped: <path> not found"): large reference models are
// read from there, not copied into tests/data.
char * tg_test_ref(const char * rel);

#endif
