// cmd_version.c - `tgdb version`: version and build features.
#include "cli.h"
#include "tg/core.h"

#include <stdio.h>

TG_CLI_COMMAND(version, "version", "print the tgdb version and build features")

static int cmd_version(int argc, char ** argv) {
    (void) argc; (void) argv;
    printf("tgdb %s\n", TG_VERSION);
#ifdef TG_HAVE_BLAS
    printf("blas: openblas\n");
#else
    printf("blas: off\n");
#endif
    return 0;
}
