#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n_pass, n_fail;

static bool check_v(bool ok, bool quiet, const char * file, int line, const char * fmt, va_list ap) {
    if (ok) n_pass++; else n_fail++;
    if (ok && quiet) return ok;
    fputs(ok ? "ok   " : "FAIL ", stdout);
    vprintf(fmt, ap);
    if (!ok) printf("  (%s:%d)", file, line);
    putchar('\n');
    fflush(stdout);
    return ok;
}

bool tg_check_at(bool ok, const char * file, int line, const char * fmt, ...) {
    va_list ap; va_start(ap, fmt);
    check_v(ok, false, file, line, fmt, ap);
    va_end(ap);
    return ok;
}

bool tg_check_quiet_at(bool ok, const char * file, int line, const char * fmt, ...) {
    va_list ap; va_start(ap, fmt);
    check_v(ok, true, file, line, fmt, ap);
    va_end(ap);
    return ok;
}

int tg_check_failures(void) { return n_fail; }

int tg_check_finish(const char * name) {
    printf("%s: %d passed, %d failed\n", name, n_pass, n_fail);
    return n_fail == 0 && n_pass > 0 ? 0 : 1;
}

char * tg_test_data(const char * rel) {
    const char * dir = getenv("TG_TEST_DATA");   // tests run from another checkout (a copy on a GPU machine)
    if (!dir || !*dir) dir = TG_TEST_DATA;
    size_t n = strlen(dir) + strlen(rel) + 2;
    char * p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

char * tg_test_ref(const char * rel) {
    const char * dir = getenv("TG_REF_DIR");
    char def[4096];
    if (!dir || !*dir) {
        snprintf(def, sizeof(def), "%s/../shared/reference", TG_SOURCE_DIR);
        dir = def;
    }
    size_t n = strlen(dir) + strlen(rel) + 2;
    char * p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s", dir, rel);
    if (access(p, R_OK) != 0) {
        printf("skipped: %s not found (reference data; set TG_REF_DIR)\n", p);
        free(p);
        return NULL;
    }
    return p;
}

void * tg_test_read_file(const char * path, size_t * len) {
    if (len) *len = 0;
    FILE * f = path ? fopen(path, "rb") : NULL;
    if (!f) return NULL;
    char * buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t) n + 1);
    if (buf && fread(buf, 1, (size_t) n, f) != (size_t) n) { free(buf); buf = NULL; }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    if (len) *len = (size_t) n;
    return buf;
}

void * tg_test_read_data(const char * rel, size_t * len) {
    char * path = tg_test_data(rel);
    void * buf = tg_test_read_file(path, len);
    free(path);
    return buf;
}

FILE * tg_test_open_data(const char * rel) {
    char * path = tg_test_data(rel);
    FILE * f = path ? fopen(path, "rb") : NULL;
    CHECK(f != NULL, "open %s", path ? path : rel);
    free(path);
    return f;
}
