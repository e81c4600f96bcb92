// dot-file.h - (internal to libtgdot) output files written atomically: to a
// temporary name in the target's directory, renamed over the target only
// when every byte was written, so a full disk never leaves a partial file.
#ifndef TG_DOT_FILE_H
#define TG_DOT_FILE_H

#include "tg/status.h"

#include <stdio.h>

// Opens a temporary file next to path (its name written into tmp, n >= 32 +
// strlen(path)). NULL + last error (TG_ERR_IO naming path and the reason).
FILE * tg_dot_file_open(const char * path, char * tmp, size_t n);
// Flushes and closes f; on success renames tmp to path, on any write error
// (or when st is not TG_OK) removes tmp and leaves path untouched. Returns
// st if it is an error, else TG_OK or TG_ERR_IO ("PATH: write failed: No
// space left on device (PATH was not written)").
enum tg_status tg_dot_file_close(FILE * f, const char * tmp, const char * path, enum tg_status st);

#endif
