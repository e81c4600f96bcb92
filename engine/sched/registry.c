// registry.c - the list of devices available in this build.
#include "sched/backend-impl.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

#define TG_MAX_DEVICES 16

static struct tg_device * devices[TG_MAX_DEVICES];
static int n_devices;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static void register_builtin(void) {
    devices[n_devices++] = tg_cpu_device();
#ifdef TG_HAVE_BLAS
    devices[n_devices++] = tg_blas_device();
#endif
#ifdef TG_HAVE_CUDA
    n_devices += tg_cuda_register_devices(devices + n_devices, TG_MAX_DEVICES - n_devices);
#endif
}

int tg_device_count(void) {
    pthread_once(&builtin_once, register_builtin);
    return n_devices;
}

struct tg_device * tg_device_get(int i) {
    int n = tg_device_count();
    return i >= 0 && i < n ? devices[i] : NULL;
}

struct tg_device * tg_device_by_name(const char * name) {
    if (!name) return NULL;
    int n = tg_device_count();
    for (int i = 0; i < n; i++)
        if (strcasecmp(tg_device_name(devices[i]), name) == 0) return devices[i];
    return NULL;
}

const char * tg_device_name(struct tg_device * dev) { return dev ? dev->iface.get_name(dev) : "(none)"; }

const char * tg_device_description(struct tg_device * dev) {
    return dev && dev->iface.get_description ? dev->iface.get_description(dev) : "";
}

enum tg_device_type tg_device_type(struct tg_device * dev) { return dev->iface.get_type(dev); }

const char * tg_device_type_name(enum tg_device_type type) {
    switch (type) {
        case TG_DEVICE_CPU:   return "cpu";
        case TG_DEVICE_ACCEL: return "accel";
        case TG_DEVICE_GPU:   return "gpu";
        default:              return "?";
    }
}

bool tg_device_memory(struct tg_device * dev, size_t * free_bytes, size_t * total_bytes) {
    size_t f = 0, t = 0;
    bool ok = dev && dev->iface.get_memory && dev->iface.get_memory(dev, &f, &t);
    if (free_bytes) *free_bytes = ok ? f : 0;
    if (total_bytes) *total_bytes = ok ? t : 0;
    return ok;
}

double tg_device_copy_bandwidth(struct tg_device * dev, size_t bytes) {
    struct tg_buffer_type * buft = tg_device_buffer_type(dev);
    if (!buft) { tg_error(TG_ERR_INVALID_ARG, "tg_device_copy_bandwidth: no device"); return 0; }
    bytes = bytes / 64 * 64;
    if (bytes == 0) { tg_error(TG_ERR_INVALID_ARG, "tg_device_copy_bandwidth: 0 bytes"); return 0; }
    struct tg_buffer * a = tg_buft_alloc_buffer(buft, bytes), * b = a ? tg_buft_alloc_buffer(buft, bytes) : NULL;
    if (!a || !b) { tg_buffer_free(a); return 0; }
    struct tg_tensor ta = { .type = TG_TYPE_F32, .ne = { (int64_t) (bytes / 4), 1, 1, 1 } }, tb;
    ta.nb[0] = 4; ta.nb[1] = ta.nb[2] = ta.nb[3] = bytes;
    tb = ta;
    tg_buffer_alloc_tensor(a, &ta, tg_buffer_get_base(a));
    tg_buffer_alloc_tensor(b, &tb, tg_buffer_get_base(b));
    tg_buffer_clear(a, 1);
    float sink;
    double best = 0;
    for (int rep = 0; rep < 6; rep++) {   // a round of copies, ended by a small read (it waits for them)
        const int n = 4;
        uint64_t t0 = tg_observe_now_ns();
        for (int i = 0; i < n; i++) {
            if (i & 1) { if (!a->iface.cpy_tensor || !a->iface.cpy_tensor(a, &tb, &ta)) memcpy(ta.data, tb.data, bytes); }
            else if (!b->iface.cpy_tensor || !b->iface.cpy_tensor(b, &ta, &tb)) memcpy(tb.data, ta.data, bytes);
        }
        if (b->iface.get_tensor) b->iface.get_tensor(b, &tb, &sink, 0, sizeof sink);
        else memcpy(&sink, tb.data, sizeof sink);
        const double s = (double) (tg_observe_now_ns() - t0) * 1e-9;
        const double gbps = 2.0 * (double) bytes * n / s / 1e9;
        if (rep > 0 && gbps > best) best = gbps;   // the first round warms up
    }
    tg_buffer_free(a);
    tg_buffer_free(b);
    return best;
}

struct tg_buffer_type * tg_device_buffer_type(struct tg_device * dev) {
    return dev ? dev->iface.get_buffer_type(dev) : NULL;
}

struct tg_backend * tg_device_init_backend(struct tg_device * dev, const char * params) {
    if (!dev) { tg_error(TG_ERR_INVALID_ARG, "tg_device_init_backend: device is NULL"); return NULL; }
    return dev->iface.init_backend(dev, params);
}

enum tg_status tg_device_register(struct tg_device * dev) {
    if (!dev) return tg_error(TG_ERR_INVALID_ARG, "tg_device_register: device is NULL");
    tg_device_count();
    pthread_mutex_lock(&reg_lock);
    enum tg_status st = TG_OK;
    if (n_devices >= TG_MAX_DEVICES)
        st = tg_error(TG_ERR_NOMEM, "tg_device_register: registry full (%d devices)", TG_MAX_DEVICES);
    else
        devices[n_devices++] = dev;
    pthread_mutex_unlock(&reg_lock);
    return st;
}

struct tg_backend * tg_backend_init_by_name(const char * name, const char * params) {
    struct tg_device * dev = tg_device_by_name(name);
    if (!dev) {
        bool cuda = name && strncasecmp(name, "CUDA", 4) == 0;
        tg_error(TG_ERR_UNSUPPORTED, "no backend device named '%s' in this build (%d available; see tg_device_get)%s%s%s",
                 name ? name : "(null)", tg_device_count(), cuda ? " (" : "", cuda ? tg_cuda_probe() : "", cuda ? ")" : "");
        return NULL;
    }
    return tg_device_init_backend(dev, params);
}
