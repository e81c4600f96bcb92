// cmd_devices.c - `tgdb devices`: the backends of this build's device
// registry (what --device accepts), with their kind and memory:
//   CPU    cpu    host memory: 22.86 GiB available of 31.35 GiB; 16 CPUs, 8 threads by default (one a core)   avx2
#include "cli.h"
#include "json.h"
#include "runopts.h"
#include "tg/backend.h"
#include "tg/cpu.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct devices_opts { bool json, bandwidth; };

static const struct tg_cli_opt devices_table[] = {
    { .name = "--bandwidth", .kind = TG_CLI_FLAG, .off = offsetof(struct devices_opts, bandwidth),
      .help = "measure each device's memory bandwidth (copies of 256 MiB in its memory, bytes read + written per second; "
              "the host's with one thread)" },
    { .name = "--json", .kind = TG_CLI_FLAG, .off = offsetof(struct devices_opts, json),
      .help = "print a JSON array of {name, kind, description, host_memory, memory_total, memory_free}; the CPU's "
              "also cpus_available and default_threads" },
    { 0 },
};

static void devices_defaults(struct devices_opts * o) { *o = (struct devices_opts) { 0 }; }

TG_CLI_COMMAND_OPTS(devices, "devices [--bandwidth] [--json]",
    "list the devices (backends) --device accepts: name, kind, memory",
    devices_table, struct devices_opts, devices_defaults)

static void json_str(const char * s) { tg_json_write_string(stdout, s, strlen(s)); }

static int cmd_devices(int argc, char ** argv) {
    struct devices_opts o;
    devices_defaults(&o);
    if (tg_cli_parse_opts("devices", devices_table, &o, argc, argv, NULL, 0, NULL)) return TG_CLI_ERROR;
    uint64_t total = 0, avail = tg_cli_mem_available(&total);
    int n = tg_device_count();
    if (o.json) fputc('[', stdout);
    struct tg_buffer_type * measured[16];
    double measured_bw[16];
    int n_measured = 0;
    for (int i = 0; i < n; i++) {
        struct tg_device * d = tg_device_get(i);
        struct tg_buffer_type * buft = tg_device_buffer_type(d);
        bool host = tg_buft_is_host(buft);
        const char * kind = tg_device_type_name(tg_device_type(d));
        size_t dfree = 0, dtotal = 0;
        double bw = -1;   // measured once per buffer type (BLAS shares the CPU's)
        if (o.bandwidth) {
            for (int k = 0; k < n_measured; k++) if (measured[k] == buft) bw = measured_bw[k];
            if (bw < 0) {
                if (!o.json) { fprintf(stderr, "measuring %s ...\n", tg_device_name(d)); }
                bw = tg_device_copy_bandwidth(d, (size_t) 256 << 20);
                if (bw <= 0) fprintf(stderr, "tgdb: devices: %s: bandwidth not measured: %s\n", tg_device_name(d), tg_last_error());
                if (n_measured < 16) { measured[n_measured] = buft; measured_bw[n_measured++] = bw; }
            }
        }
        if (o.json) {
            printf("%s{\"name\": ", i ? ", " : "");
            json_str(tg_device_name(d));
            printf(", \"kind\": ");
            json_str(kind);
            printf(", \"description\": ");
            json_str(tg_device_description(d));
            if (host) printf(", \"host_memory\": true, \"memory_total\": %llu, \"memory_free\": %llu", (unsigned long long) total,
                             (unsigned long long) avail);
            else if (tg_device_memory(d, &dfree, &dtotal))
                printf(", \"host_memory\": false, \"memory_total\": %zu, \"memory_free\": %zu", dtotal, dfree);
            else printf(", \"host_memory\": false, \"memory_total\": null, \"memory_free\": null");
            if (tg_device_type(d) == TG_DEVICE_CPU)
                printf(", \"cpus_available\": %d, \"default_threads\": %d", tg_cpu_n_available(), tg_cpu_default_threads());
            if (o.bandwidth && bw > 0) printf(", \"copy_bandwidth_gbs\": %.1f", bw);
            else if (o.bandwidth) printf(", \"copy_bandwidth_gbs\": null");
            putchar('}');
            continue;
        }
        printf("%-8s %-6s ", tg_device_name(d), kind);
        if (host) printf("host memory: %.2f GiB available of %.2f GiB", avail / 1073741824.0, total / 1073741824.0);
        else if (tg_device_memory(d, &dfree, &dtotal))
            printf("own memory: %.2f GiB free of %.2f GiB", dfree / 1073741824.0, dtotal / 1073741824.0);
        else printf("own memory (size unknown)");
        if (tg_device_type(d) == TG_DEVICE_CPU)   // what -t is when not given
            printf("; %d CPU%s, %d thread%s by default (one a core)", tg_cpu_n_available(), tg_cpu_n_available() == 1 ? "" : "s",
                   tg_cpu_default_threads(), tg_cpu_default_threads() == 1 ? "" : "s");
        if (bw > 0) printf(", bandwidth %.1f GB/s%s", bw, host ? " (one thread)" : "");
        printf("   ");
        tg_cli_fputs_escaped(stdout, tg_device_description(d));   // last: the CPU's is its SIMD level
        putchar('\n');
    }
    if (o.json) fputs("]\n", stdout);
    else printf("(CUDA: %s)\n", tg_cuda_probe());
    return TG_CLI_OK;
}
