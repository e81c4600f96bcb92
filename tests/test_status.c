// test_status.c - the error contract: status names, per-thread last error.
#include "check.h"
#include "tg/status.h"

#include <pthread.h>
#include <string.h>

static void * other_thread(void * arg) {
    (void) arg;
    tg_error(TG_ERR_IO, "thread message");
    return NULL;
}

int main(void) {
    CHECK(strcmp(tg_status_str(TG_ERR_SHAPE), "shape error") == 0, "tg_status_str(TG_ERR_SHAPE)");
    CHECK(strcmp(tg_status_str((enum tg_status) 999), "unknown status") == 0, "out-of-range status has a name");
    enum tg_status st = tg_error(TG_ERR_FORMAT, "bad field %s at offset %d", "n_kv", 24);
    CHECK(st == TG_ERR_FORMAT, "tg_error returns its status");
    CHECK(strcmp(tg_last_error(), "bad field n_kv at offset 24") == 0, "last error message is formatted: '%s'", tg_last_error());
    tg_error(TG_ERR_FORMAT, "%s: %s", "eps.gguf", tg_last_error());   // context added around the message itself
    CHECK(strcmp(tg_last_error(), "eps.gguf: bad field n_kv at offset 24") == 0,
          "an error formatted from the last error is not garbled: '%s'", tg_last_error());
    tg_error(TG_ERR_FORMAT, "%s", "rms epsilon 0 must be positive");
    tg_error(TG_ERR_FORMAT, "%s: %s", "m.gguf", tg_last_error());
    tg_error(TG_ERR_FORMAT, "%s: %s", "load", tg_last_error());
    CHECK(strcmp(tg_last_error(), "load: m.gguf: rms epsilon 0 must be positive") == 0, "twice: '%s'", tg_last_error());
    pthread_t th;
    pthread_create(&th, NULL, other_thread, NULL);
    pthread_join(th, NULL);
    CHECK(tg_last_status() == TG_ERR_FORMAT, "last error is per thread (other thread's error not seen)");
    tg_clear_error();
    CHECK(tg_last_error()[0] == '\0' && tg_last_status() == TG_OK, "tg_clear_error clears");
    return tg_check_finish("test_status");
}
