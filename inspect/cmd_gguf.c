// cmd_gguf.c - `tgdb gguf FILE [--json] [--items N]`: a GGUF file's header,
// key/values (long arrays elided) and tensor table, as text or JSON.
#include "cli.h"
#include "core/text.h"
#include "json.h"
#include "tg/gguf.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gguf_opts {
    bool json;
    int items;
};

static const struct tg_cli_opt gguf_table[] = {
    { .name = "--json", .kind = TG_CLI_FLAG, .off = offsetof(struct gguf_opts, json), .help = "print one JSON object" },
    { .name = "--items", .value = "N", .kind = TG_CLI_INT, .off = offsetof(struct gguf_opts, items), .lo = 0, .hi = INT32_MAX,
      .help = "array items shown per key (the rest elided)" },
    { 0 },
};

static void gguf_defaults(struct gguf_opts * o) { *o = (struct gguf_opts) { .items = 8 }; }

TG_CLI_COMMAND_OPTS(gguf, "gguf FILE [--json] [--items N]",
               "show a GGUF file's header, key/values and tensors (arrays elided after N items)",
               gguf_table, struct gguf_opts, gguf_defaults)

// ---- JSON ----------------------------------------------------------------------

// Writes s as a JSON string (bytes that are not UTF-8 as \ufffd).
static void json_str(const char * s, size_t n) { tg_json_write_string(stdout, s, n); }

static void json_scalar(enum tg_gguf_type t, const uint8_t * v) {
    switch (t) {
    case TG_GGUF_UINT8:  printf("%u", v[0]); break;
    case TG_GGUF_INT8:   printf("%d", (int8_t) v[0]); break;
    case TG_GGUF_BOOL:   fputs(v[0] ? "true" : "false", stdout); break;
    case TG_GGUF_UINT16: { uint16_t x; memcpy(&x, v, 2); printf("%u", x); break; }
    case TG_GGUF_INT16:  { int16_t x; memcpy(&x, v, 2); printf("%d", x); break; }
    case TG_GGUF_UINT32: { uint32_t x; memcpy(&x, v, 4); printf("%" PRIu32, x); break; }
    case TG_GGUF_INT32:  { int32_t x; memcpy(&x, v, 4); printf("%" PRId32, x); break; }
    case TG_GGUF_UINT64: { uint64_t x; memcpy(&x, v, 8); printf("%" PRIu64, x); break; }
    case TG_GGUF_INT64:  { int64_t x; memcpy(&x, v, 8); printf("%" PRId64, x); break; }
    case TG_GGUF_FLOAT32: { float x; memcpy(&x, v, 4); if (isfinite(x)) printf("%.9g", x); else fputs("null", stdout); break; }
    case TG_GGUF_FLOAT64: { double x; memcpy(&x, v, 8); if (isfinite(x)) printf("%.17g", x); else fputs("null", stdout); break; }
    default: fputs("null", stdout);
    }
}

static void json_kv(const struct tg_gguf * g, int64_t i, int64_t items) {
    const char * key = tg_gguf_key(g, i);
    enum tg_gguf_type t = tg_gguf_kv_type(g, i);
    fputs("    {\"key\": ", stdout);
    json_str(key, strlen(key));
    printf(", \"type\": \"%s\", ", tg_gguf_type_name(t));
    if (t == TG_GGUF_STRING) {
        size_t len;
        const char * s = tg_gguf_kv_str(g, i, &len);
        fputs("\"value\": ", stdout);
        json_str(s, len);
    } else if (t == TG_GGUF_ARRAY) {
        enum tg_gguf_type et = tg_gguf_arr_type(g, i);
        int64_t n = tg_gguf_arr_n(g, i), shown = n < items ? n : items;
        printf("\"elem_type\": \"%s\", \"count\": %" PRId64 ", \"elided\": %s, \"value\": [", tg_gguf_type_name(et), n,
               shown < n ? "true" : "false");
        const uint8_t * d = tg_gguf_arr_data(g, i);
        for (int64_t j = 0; j < shown; j++) {
            if (j) fputs(", ", stdout);
            if (et == TG_GGUF_STRING) {
                size_t len;
                const char * s = tg_gguf_arr_str(g, i, j, &len);
                json_str(s, len);
            } else {
                json_scalar(et, d + (size_t) j * tg_gguf_type_size(et));
            }
        }
        putchar(']');
    } else {
        fputs("\"value\": ", stdout);
        json_scalar(t, tg_gguf_kv_data(g, i));
    }
    putchar('}');
}

static void json_tensor(const struct tg_gguf * g, int64_t i) {
    const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, i);
    fputs("    {\"name\": ", stdout);
    json_str(t->name, strlen(t->name));
    printf(", \"type\": \"%s\", \"type_id\": %d, \"shape\": [", tg_gguf_tensor_type_name(t->type), (int) t->type);
    for (int d = 0; d < t->n_dims; d++) printf("%s%" PRId64, d ? ", " : "", t->ne[d]);
    printf("], \"offset\": %" PRIu64 ", \"file_offset\": %" PRIu64 ", \"bytes\": %zu, \"data_present\": %s}",
           t->offset, (uint64_t) tg_gguf_data_offset(g) + t->offset, t->size,
           tg_gguf_tensor_data(g, i) ? "true" : "false");
}

static void print_json(const struct tg_gguf * g, const char * path, int64_t items) {
    fputs("{\n  \"file\": ", stdout);
    json_str(path, strlen(path));
    printf(",\n  \"version\": %u,\n  \"alignment\": %zu,\n  \"tensor_count\": %" PRId64 ",\n  \"kv_count\": %" PRId64
           ",\n  \"data_offset\": %zu,\n  \"file_size\": %zu,\n  \"data_complete\": %s,\n  \"data_error\": ",
           tg_gguf_version(g), tg_gguf_alignment(g), tg_gguf_n_tensors(g), tg_gguf_n_kv(g), tg_gguf_data_offset(g),
           tg_gguf_file_size(g), tg_gguf_data_complete(g) ? "true" : "false");
    const char * de = tg_gguf_data_error(g);
    if (de) json_str(de, strlen(de)); else fputs("null", stdout);
    fputs(",\n  \"kv\": [\n", stdout);
    for (int64_t i = 0; i < tg_gguf_n_kv(g); i++) {
        json_kv(g, i, items);
        fputs(i + 1 < tg_gguf_n_kv(g) ? ",\n" : "\n", stdout);
    }
    fputs("  ],\n  \"tensors\": [\n", stdout);
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        json_tensor(g, i);
        fputs(i + 1 < tg_gguf_n_tensors(g) ? ",\n" : "\n", stdout);
    }
    fputs("  ]\n}\n", stdout);
}

// ---- text ----------------------------------------------------------------------

static void print_text(const struct tg_gguf * g, const char * path, int64_t items) {
    printf("file:        %s\nversion:     %u\nalignment:   %zu\ntensors:     %" PRId64 "\nkey/values:  %" PRId64
           "\ndata offset: %zu\nfile size:   %zu\n", path, tg_gguf_version(g), tg_gguf_alignment(g),
           tg_gguf_n_tensors(g), tg_gguf_n_kv(g), tg_gguf_data_offset(g), tg_gguf_file_size(g));
    if (!tg_gguf_data_complete(g)) printf("data:        INCOMPLETE: %s\n", tg_gguf_data_error(g));
    printf("\nkey/values:\n");
    size_t cap = 65536;
    char * buf = malloc(cap);
    if (!buf) return;
    for (int64_t i = 0; i < tg_gguf_n_kv(g); i++) {
        enum tg_gguf_type t = tg_gguf_kv_type(g, i);
        char type[32];
        if (t == TG_GGUF_ARRAY) snprintf(type, sizeof(type), "%s[%s]", tg_gguf_type_name(t), tg_gguf_type_name(tg_gguf_arr_type(g, i)));
        else snprintf(type, sizeof(type), "%s", tg_gguf_type_name(t));
        printf("  %-40s %-14s %s\n", tg_escape_str(tg_gguf_key(g, i)), type, tg_gguf_value_str(g, i, (size_t) items, buf, cap));
    }
    free(buf);
    printf("\ntensors:\n  %4s  %-32s %-7s %-24s %12s %12s\n", "#", "name", "type", "shape", "offset", "bytes");
    for (int64_t i = 0; i < tg_gguf_n_tensors(g); i++) {
        const struct tg_gguf_tensor_info * t = tg_gguf_tensor(g, i);
        char shape[96];
        int o = snprintf(shape, sizeof(shape), "[");
        for (int d = 0; d < t->n_dims; d++) o += snprintf(shape + o, sizeof(shape) - (size_t) o, "%s%" PRId64, d ? ", " : "", t->ne[d]);
        snprintf(shape + o, sizeof(shape) - (size_t) o, "]");
        printf("  %4" PRId64 "  %-32s %-7s %-24s %12" PRIu64 " %12zu%s\n", i, tg_escape_str(t->name), tg_gguf_tensor_type_name(t->type),
               shape, t->offset, t->size, tg_gguf_tensor_data(g, i) ? "" : "  (missing)");
    }
}

static int cmd_gguf(int argc, char ** argv) {
    struct gguf_opts o;
    gguf_defaults(&o);
    const char * pos[1], * path = NULL;
    int np = 0;
    if (tg_cli_parse_opts("gguf", gguf_table, &o, argc, argv, pos, 1, &np)) return TG_CLI_ERROR;
    if (np) path = pos[0];
    bool json = o.json;
    int64_t items = o.items;
    if (!path) return tg_cli_usage("gguf");
    struct tg_gguf * g = tg_gguf_open(path);
    if (!g) return tg_cli_err("%s: %s", path, tg_last_error());
    if (json) print_json(g, path, items);
    else print_text(g, path, items);
    tg_gguf_close(g);
    return 0;
}
