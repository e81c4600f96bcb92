// observe.c - global observers, host-access events, markers, the env hook.
#include "sched/sched-impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int tg_obs_n_global;
struct tg_observer tg_obs_global[TG_OBSERVE_MAX];

uint64_t tg_observe_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static bool same_observer(const struct tg_observer * a, const struct tg_observer * b) {
    return memcmp(a, b, sizeof(*a)) == 0;
}

enum tg_status tg_observe_attach_global(const struct tg_observer * obs) {
    if (!obs) return tg_error(TG_ERR_INVALID_ARG, "tg_observe_attach_global: observer is NULL");
    if (tg_obs_n_global >= TG_OBSERVE_MAX)
        return tg_error(TG_ERR_NOMEM, "tg_observe_attach_global: %d observers already attached", TG_OBSERVE_MAX);
    tg_obs_global[tg_obs_n_global] = *obs;
    tg_obs_n_global++;
    return TG_OK;
}

void tg_observe_detach_global(const struct tg_observer * obs) {
    for (int i = 0; obs && i < tg_obs_n_global; i++) {
        if (!same_observer(&tg_obs_global[i], obs)) continue;
        memmove(&tg_obs_global[i], &tg_obs_global[i + 1], (size_t) (tg_obs_n_global - i - 1) * sizeof(*obs));
        tg_obs_n_global--;
        return;
    }
}

int tg_observe_n_global(void) { return tg_obs_n_global; }

void tg_obs_emit_io(enum tg_obs_io_what what, const struct tg_tensor * t, const struct tg_buffer * buf,
                    size_t offset, size_t size, const void * data) {
    struct tg_obs_tensor_io ev = {
        .what = what, .tensor = t, .buffer = buf, .offset = offset, .size = size, .data = data,
        .t_ns = tg_observe_now_ns(),
    };
    for (int i = 0; i < tg_obs_n_global; i++) {
        const struct tg_observer * o = &tg_obs_global[i];
        if (what == TG_OBS_IO_GET) { if (o->on_tensor_get) o->on_tensor_get(&ev, o->user); }
        else if (o->on_tensor_set) o->on_tensor_set(&ev, o->user);
    }
}

void tg_obs_emit_access_error(enum tg_obs_io_what what, const struct tg_tensor * t, size_t offset, size_t size) {
    struct tg_obs_tensor_io ev = {
        .what = what, .tensor = t, .buffer = NULL, .offset = offset, .size = size, .data = NULL,
        .t_ns = tg_observe_now_ns(),
    };
    for (int i = 0; i < tg_obs_n_global; i++)
        if (tg_obs_global[i].on_access_error) tg_obs_global[i].on_access_error(&ev, tg_obs_global[i].user);
}

void tg_observe_marker(struct tg_sched * sched, const char * name, const char * fmt, ...) {
    if (tg_obs_n_global == 0 && (!sched || sched->n_obs == 0)) return;
    char text[512] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
    }
    struct tg_obs_marker ev = {
        .sched = sched, .sched_id = sched ? sched->id : 0, .name = name ? name : "", .text = text,
        .t_ns = tg_observe_now_ns(),
    };
    for (int i = 0; sched && i < sched->n_obs; i++)
        if (sched->obs[i].on_marker) sched->obs[i].on_marker(&ev, sched->obs[i].user);
    for (int i = 0; i < tg_obs_n_global; i++)
        if (tg_obs_global[i].on_marker) tg_obs_global[i].on_marker(&ev, tg_obs_global[i].user);
}

static pthread_once_t hook_once = PTHREAD_ONCE_INIT;

static void call_hook(void) {
    if (tg_observe_env_hook) tg_observe_env_hook();
}

void tg_obs_call_env_hook_once(void) { pthread_once(&hook_once, call_hook); }

// ---- scheduler observers ---------------------------------------------------------

enum tg_status tg_sched_add_observer(struct tg_sched * sched, const struct tg_observer * obs) {
    if (!sched || !obs) return tg_error(TG_ERR_INVALID_ARG, "tg_sched_add_observer: NULL scheduler or observer");
    if (sched->n_obs >= TG_OBSERVE_MAX)
        return tg_error(TG_ERR_NOMEM, "tg_sched_add_observer: %d observers already attached", TG_OBSERVE_MAX);
    sched->obs[sched->n_obs++] = *obs;
    return TG_OK;
}

void tg_sched_remove_observer(struct tg_sched * sched, const struct tg_observer * obs) {
    for (int i = 0; sched && obs && i < sched->n_obs; i++) {
        if (!same_observer(&sched->obs[i], obs)) continue;
        memmove(&sched->obs[i], &sched->obs[i + 1], (size_t) (sched->n_obs - i - 1) * sizeof(*obs));
        sched->n_obs--;
        return;
    }
}

int tg_sched_n_observers(const struct tg_sched * sched) { return sched ? sched->n_obs : 0; }
