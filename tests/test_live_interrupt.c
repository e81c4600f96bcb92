// test_live_interrupt.c - tg_live_interrupt (the shell's Ctrl-C) stops a
// running live move after the node being computed, leaves the run stopped
// and resumable, and a request made while nothing runs is dropped.
#include "check.h"
#include "tg/live.h"
#include "tg/status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mover { struct tg_live * lv; enum tg_status st; atomic_int done; int which; };

static void * move(void * arg) {
    struct mover * m = arg;
    m->st = m->which == 0 ? tg_live_run(m->lv, "Once upon a time there was", 400) : tg_live_continue(m->lv);
    atomic_store(&m->done, 1);
    return NULL;
}

// Runs one move on a thread and interrupts it every 50 us until it returns.
static void interrupted_move(struct tg_live * lv, int which, struct mover * m) {
    memset(m, 0, sizeof(*m));
    m->lv = lv; m->which = which;
    pthread_t th;
    pthread_create(&th, NULL, move, m);
    struct timespec ts = { 0, 50000 };
    while (!atomic_load(&m->done)) { tg_live_interrupt(lv); nanosleep(&ts, NULL); }
    pthread_join(th, NULL);
}

int main(void) {
    char * path = tg_test_data("tiny-f32.gguf");
    struct tg_live * lv = tg_live_open(path, 2, 512);
    if (!CHECK(lv != NULL, "open %s: %s", path, tg_last_error())) return tg_check_finish("test_live_interrupt");

    struct mover m;
    interrupted_move(lv, 0, &m);
    CHECK(m.st == TG_OK, "interrupted run returns TG_OK (%s)", tg_last_error());
    CHECK(tg_live_get_state(lv) == TG_LIVE_STOPPED, "an interrupted run is stopped, not done (state %d)", (int) tg_live_get_state(lv));
    CHECK(strstr(tg_live_message(lv), "interrupted after node") != NULL, "message says interrupted: '%s'", tg_live_message(lv));
    struct tg_live_where w;
    CHECK(tg_live_where(lv, &w) && w.n_generated < 400, "stopped before the end (%d generated)", w.n_generated);

    // interrupt while stopped: dropped by the next move, which runs to the end
    tg_live_interrupt(lv);
    enum tg_status st = tg_live_continue(lv);
    CHECK(st == TG_OK && tg_live_get_state(lv) == TG_LIVE_DONE,
          "a request made while stopped does not stop the next continue (state %d, '%s')", (int) tg_live_get_state(lv), tg_live_message(lv));

    // a second run, interrupted during continue after a breakpoint
    tg_live_break_add(lv, TG_LIVE_BREAK_NAME, "attn_norm-0");
    st = tg_live_run(lv, "Hello", 400);
    CHECK(st == TG_OK && strstr(tg_live_message(lv), "breakpoint 1") != NULL, "breakpoint stops: '%s'", tg_live_message(lv));
    tg_live_break_clear(lv);
    interrupted_move(lv, 1, &m);
    CHECK(tg_live_get_state(lv) == TG_LIVE_STOPPED && strstr(tg_live_message(lv), "interrupted") != NULL,
          "continue interrupted: '%s'", tg_live_message(lv));
    tg_live_close(lv);
    free(path);
    return tg_check_finish("test_live_interrupt");
}
