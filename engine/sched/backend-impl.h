// backend-impl.h - private contract between the generic backend code
// (sched/backend.c, sched/registry.c), the built-in backends (cpu/cpu-backend.c,
// blas/blas.c) and the observer machinery (sched/observe.c).
#ifndef TG_BACKEND_IMPL_H
#define TG_BACKEND_IMPL_H

#include "tg/observe.h"

// Built-in devices (static objects).
struct tg_device * tg_cpu_device(void);
#ifdef TG_HAVE_BLAS
struct tg_device * tg_blas_device(void);
#endif
#ifdef TG_HAVE_CUDA
// Probes the GPUs and stores up to max device pointers in out; returns the count.
int tg_cuda_register_devices(struct tg_device ** out, int max);
#endif

// ---- observer dispatch (observe.c) ----
// Number of global observers; the one branch every emission site takes.
extern int tg_obs_n_global;
extern struct tg_observer tg_obs_global[TG_OBSERVE_MAX];

// Reports a refused host access (no memory) to the global observers.
void tg_obs_emit_access_error(enum tg_obs_io_what what, const struct tg_tensor * t, size_t offset, size_t size);
void tg_obs_emit_io(enum tg_obs_io_what what, const struct tg_tensor * t, const struct tg_buffer * buf,
                    size_t offset, size_t size, const void * data);

// Calls the weak tg_observe_env_hook once per process.
void tg_obs_call_env_hook_once(void);

// Name of t for messages: its name, or "#<id> (unnamed <op>)" in buf.
const char * tg_tensor_label(const struct tg_tensor * t, char * buf, size_t n);

#endif
