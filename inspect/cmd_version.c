// cmd_version.c - `tgdb version`: the version, how this binary was built, the
// CPU paths it takes here, and the libraries it runs on (what a bug report
// needs: `tgdb version --json`).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "cli.h"
#include "json.h"
#include "shell.h"
#include "tg/backend.h"
#include "tg/core.h"
#include "tg/cpu.h"
#include "tg/dot.h"
#include "tg/trace.h"
#include "tg/tui.h"

#include <pcre2.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#ifndef TG_BUILD_TYPE
#define TG_BUILD_TYPE "unknown"
#endif

struct version_opts { bool json; };

static const struct tg_cli_opt version_table[] = {
    { .name = "--json", .kind = TG_CLI_FLAG, .off = offsetof(struct version_opts, json),
      .help = "print one JSON object: version, build, simd, cpu_features, blas, cuda, trace_format, libraries" },
    { 0 },
};

static void version_defaults(struct version_opts * o) { *o = (struct version_opts) { 0 }; }

TG_CLI_COMMAND_OPTS(version, "version [--json]", "print the tgdb version and build features", version_table,
                    struct version_opts, version_defaults)

static const char * compiler(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

static const char * sanitizers(void) {
#if defined(TG_TSAN)
    return "thread";
#elif defined(TG_SANITIZE)
    return "address,undefined";
#else
    return "none";
#endif
}

// The CPU features the engine looks at, space-separated, into buf.
static const char * cpu_features(char * buf, size_t cap) {
    const struct tg_cpu_features f = tg_cpu_features();
    const struct { bool on; const char * name; } fs[] = {
        { f.sse3, "sse3" }, { f.avx, "avx" }, { f.fma, "fma" }, { f.f16c, "f16c" }, { f.avx2, "avx2" },
        { f.avx512f, "avx512f" }, { f.avx512bw, "avx512bw" }, { f.avx512vl, "avx512vl" }, { f.avx512dq, "avx512dq" },
        { f.avx512vnni, "avx512vnni" },
    };
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
        if (fs[i].on && at < cap) at += (size_t) snprintf(buf + at, cap - at, "%s%s", at ? " " : "", fs[i].name);
    return buf[0] ? buf : "none";
}

// CUDA's 1000 * major + 10 * minor as "12.4" ("none" for 0).
static const char * cuda_ver(int v, char * buf, size_t cap) {
    if (v <= 0) return "none";
    snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
    return buf;
}

static void json_kv(const char * key, const char * value, bool comma) {
    printf("%s", comma ? ", " : "");
    tg_json_write_string(stdout, key, strlen(key));
    printf(": ");
    tg_json_write_string(stdout, value, strlen(value));
}

static int cmd_version(int argc, char ** argv) {
    struct version_opts o;
    version_defaults(&o);
    if (tg_cli_parse_opts("version", version_table, &o, argc, argv, NULL, 0, NULL)) return TG_CLI_ERROR;
    char feats[160], xxh[32], pcre[64] = "unknown", rt[16], drv[16], trace_fmt[16];
    const unsigned xv = XXH_versionNumber();
    snprintf(xxh, sizeof xxh, "%u.%u.%u", xv / 10000, xv / 100 % 100, xv % 100);
    if (pcre2_config(PCRE2_CONFIG_VERSION, NULL) <= (int) sizeof pcre) pcre2_config(PCRE2_CONFIG_VERSION, pcre);
    snprintf(trace_fmt, sizeof trace_fmt, "%d.%d", TG_TRACE_FORMAT_MAJOR, TG_TRACE_FORMAT_MINOR);
    const char * blas = tg_blas_library();
    int runtime = 0, driver = 0;
    const bool cuda = tg_cuda_versions(&runtime, &driver);
    const char * probe = tg_cuda_probe();
    const struct { const char * name; const char * version; } libs[] = {
        { "xxhash", xxh }, { "zstd", ZSTD_versionString() }, { "pcre2", pcre }, { "readline", tg_shell_readline_version() },
        { "curses", tg_tui_curses_version() }, { "graphviz", tg_dot_graphviz_version() },
    };
    const size_t n_libs = sizeof(libs) / sizeof(libs[0]);
    if (o.json) {
        printf("{");
        json_kv("version", TG_VERSION, false);
        json_kv("build_type", TG_BUILD_TYPE, true);
        json_kv("compiler", compiler(), true);
        json_kv("sanitizers", sanitizers(), true);
        json_kv("simd", tg_cpu_simd_name(), true);
        json_kv("cpu_features", cpu_features(feats, sizeof feats), true);
        printf(", \"blas\": ");
        if (blas) tg_json_write_string(stdout, blas, strlen(blas)); else printf("null");
        printf(", \"cuda\": ");
        if (cuda) {
            printf("{");
            json_kv("runtime", cuda_ver(runtime, rt, sizeof rt), false);
            json_kv("driver", cuda_ver(driver, drv, sizeof drv), true);
            json_kv("devices", probe, true);
            printf("}");
        } else {
            printf("null");
        }
        json_kv("trace_format", trace_fmt, true);
        printf(", \"libraries\": {");
        for (size_t i = 0; i < n_libs; i++) json_kv(libs[i].name, libs[i].version ? libs[i].version : "unknown", i > 0);
        printf("}}\n");
        return TG_CLI_OK;
    }
    printf("tgdb %s\n", TG_VERSION);
    printf("build:     %s, %s, sanitizers %s\n", TG_BUILD_TYPE, compiler(), sanitizers());
    printf("cpu:       SIMD level %s (this CPU: %s; TG_SIMD=scalar|avx|avx2|avx512|avx512vnni forces a lower one)\n",
           tg_cpu_simd_name(), cpu_features(feats, sizeof feats));
    printf("blas:      %s\n", blas ? blas : "off (built without OpenBLAS)");
    if (cuda)
        printf("cuda:      runtime %s, driver %s; %s\n", cuda_ver(runtime, rt, sizeof rt), cuda_ver(driver, drv, sizeof drv),
               probe);
    else
        printf("cuda:      off (%s)\n", probe);
    printf("trace:     format %s\n", trace_fmt);
    printf("libraries:");
    for (size_t i = 0; i < n_libs; i++)
        printf("%s %s %s", i ? "," : "", libs[i].name, libs[i].version ? libs[i].version : "unknown");
    printf("\n");
    return TG_CLI_OK;
}
