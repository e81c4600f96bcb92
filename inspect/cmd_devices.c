// cmd_devices.c - `tgdb devices`: the backends of this build's device
// registry (what --device accepts), with their kind and memory:
//   CPU    cpu    host memory: 22.86 GiB available of 31.35 GiB   AMD EPYC ...
#include "cli.h"
#include "json.h"
#include "runopts.h"
#include "tg/backend.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct devices_opts { bool json; };

static const struct tg_cli_opt devices_table[] = {
    { .name = "--json", .kind = TG_CLI_FLAG, .off = offsetof(struct devices_opts, json),
      .help = "print a JSON array of {name, kind, description, host_memory, memory_total, memory_free}" },
    { 0 },
};

static void devices_defaults(struct devices_opts * o) { *o = (struct devices_opts) { 0 }; }

TG_CLI_COMMAND_OPTS(devices, "devices [--json]",
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
    for (int i = 0; i < n; i++) {
        struct tg_device * d = tg_device_get(i);
        bool host = tg_buft_is_host(tg_device_buffer_type(d));
        const char * kind = tg_device_type_name(tg_device_type(d));
        size_t dfree = 0, dtotal = 0;
        if (o.json) {
            printf("%s{\"name\": ", i ? ", " : "");
            json_str(tg_device_name(d));
            printf(", \"kind\": ");
            json_str(kind);
            printf(", \"description\": ");
            json_str(tg_device_description(d));
            if (host) printf(", \"host_memory\": true, \"memory_total\": %llu, \"memory_free\": %llu}", (unsigned long long) total,
                             (unsigned long long) avail);
            else if (tg_device_memory(d, &dfree, &dtotal))
                printf(", \"host_memory\": false, \"memory_total\": %zu, \"memory_free\": %zu}", dtotal, dfree);
            else printf(", \"host_memory\": false, \"memory_total\": null, \"memory_free\": null}");
            continue;
        }
        printf("%-8s %-6s ", tg_device_name(d), kind);
        if (host) printf("host memory: %.2f GiB available of %.2f GiB", avail / 1073741824.0, total / 1073741824.0);
        else if (tg_device_memory(d, &dfree, &dtotal))
            printf("own memory: %.2f GiB free of %.2f GiB", dfree / 1073741824.0, dtotal / 1073741824.0);
        else printf("own memory (size unknown)");
        printf("   ");
        tg_cli_fputs_escaped(stdout, tg_device_description(d));
        putchar('\n');
    }
    if (o.json) fputs("]\n", stdout);
    else printf("(CUDA: %s)\n", tg_cuda_probe());
    return TG_CLI_OK;
}
