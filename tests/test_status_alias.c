// test_status_alias.c - the last-error setter is safe when one of its
// arguments is the last error itself (tg_error(st, "%s: %s", path,
// tg_last_error())): the old message must appear once, intact, not garbled.
#include "check.h"
#include "tg/status.h"

#include <string.h>

int main(void) {
    tg_error(TG_ERR_FORMAT, "rope freq base 0 must be positive");
    tg_error(TG_ERR_FORMAT, "%s: %s", "eps.gguf", tg_last_error());
    CHECK(strcmp(tg_last_error(), "eps.gguf: rope freq base 0 must be positive") == 0,
          "prefixing the last error with a path keeps it intact: '%s'", tg_last_error());
    tg_error(TG_ERR_IO, "%s (%s)", tg_last_error(), tg_last_error());
    CHECK(strcmp(tg_last_error(), "eps.gguf: rope freq base 0 must be positive (eps.gguf: rope freq base 0 must be positive)") == 0,
          "the last error used twice as an argument: '%s'", tg_last_error());
    CHECK(tg_last_status() == TG_ERR_IO, "status set");
    return tg_check_finish("test_status_alias");
}
