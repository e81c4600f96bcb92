// fuzz_json.c - the JSON Lines reader of `tgdb tokenize` (inspect/json.c) on
// arbitrary bytes. Checks: no crash or leak; a parsed string field written
// back with tg_json_write_string parses again: to the same bytes when they
// are well-formed UTF-8, else to well-formed UTF-8 (invalid bytes become
// U+FFFD).
#include "core/text.h"
#include "inspect/json.h"

#include <stdlib.h>
#include <string.h>

static bool utf8_ok(const char * s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = tg_utf8_seq((const unsigned char *) s + i, n - i);
        if (k == 0) return false;
        i += k;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    struct tg_json_object o;
    char err[128];
    if (!tg_json_parse_object((const char *) data, size, &o, err, sizeof(err))) {
        if (o.n != 0 || o.fields != NULL || err[0] == 0) abort();
        return 0;
    }
    for (size_t i = 0; i < o.n; i++) {
        const struct tg_json_field * f = &o.fields[i];
        if (f->kind != TG_JSON_STRING) continue;
        char * mem = NULL;
        size_t n = 0;
        FILE * m = open_memstream(&mem, &n);
        if (!m) abort();
        fputs("{\"k\": ", m);
        tg_json_write_string(m, f->str, f->str_len);
        fputs("}", m);
        fclose(m);
        struct tg_json_object o2;
        // the writer's output is always valid JSON
        if (!tg_json_parse_object(mem, n, &o2, err, sizeof(err))) abort();
        const struct tg_json_field * g = tg_json_get(&o2, "k");
        if (!g || g->kind != TG_JSON_STRING) abort();
        if (utf8_ok(f->str, f->str_len)) {
            if (g->str_len != f->str_len || memcmp(g->str, f->str, f->str_len) != 0) abort();
        } else if (!utf8_ok(g->str, g->str_len)) abort();
        tg_json_object_free(&o2);
        free(mem);
    }
    tg_json_object_free(&o);
    return 0;
}
