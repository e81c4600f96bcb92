// fuzz_json.c - the JSON Lines reader of `tgdb tokenize` (inspect/json.c) on
// arbitrary bytes. Checks: no crash or leak; a parsed string field written
// back with tg_json_write_string parses again to the same bytes.
#include "inspect/json.h"

#include <stdlib.h>
#include <string.h>

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
        // raw bytes >= 0x20 pass through unchanged, so this always parses
        if (!tg_json_parse_object(mem, n, &o2, err, sizeof(err))) abort();
        const struct tg_json_field * g = tg_json_get(&o2, "k");
        if (!g || g->str_len != f->str_len || memcmp(g->str, f->str, f->str_len) != 0) abort();
        tg_json_object_free(&o2);
        free(mem);
    }
    tg_json_object_free(&o);
    return 0;
}
