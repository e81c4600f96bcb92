// features.c - CPU feature detection (cpuid + xgetbv) and the SIMD level the
// kernels dispatch on. Every SIMD path is compiled with target attributes, so
// one binary carries scalar, AVX(+FMA,F16C) and AVX-512 code and picks at run
// time; TG_NO_SIMD=1 or tg_cpu_force_scalar(true) selects the scalar paths,
// TG_SIMD=scalar|avx|avx2|avx512|avx512vnni (or tg_cpu_set_simd_cap) caps
// the level. avx512 means F+BW+VL+DQ; avx512vnni adds VNNI (vpdpbusd).
#include "cpu/cpu-impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TG_X86 1
#endif

#ifdef TG_X86
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t) hi << 32) | lo;
}
#endif

static struct tg_cpu_features detect(void) {
    struct tg_cpu_features f;
    memset(&f, 0, sizeof(f));
#ifdef TG_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    f.sse3 = (c >> 0) & 1;
    bool osxsave = (c >> 27) & 1;
    bool avx_cpu = (c >> 28) & 1;
    bool fma_cpu = (c >> 12) & 1;
    bool f16c_cpu = (c >> 29) & 1;
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    bool ymm_os = (xcr0 & 0x6) == 0x6;            // SSE + AVX state saved by the OS
    bool zmm_os = (xcr0 & 0xE6) == 0xE6;          // + opmask, ZMM hi256, hi16 ZMM
    f.avx = avx_cpu && ymm_os;
    f.fma = fma_cpu && f.avx;
    f.f16c = f16c_cpu && f.avx;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.avx2 = ((b >> 5) & 1) && f.avx;
        f.avx512f = ((b >> 16) & 1) && f.avx && zmm_os;
        f.avx512bw = ((b >> 30) & 1) && f.avx512f;
        f.avx512vl = ((b >> 31) & 1) && f.avx512f;
        f.avx512dq = ((b >> 17) & 1) && f.avx512f;
        f.avx512vnni = ((c >> 11) & 1) && f.avx512f;
    }
#endif
    return f;
}

static struct tg_cpu_features g_features;
static atomic_int g_detected_level = -1;   // level from the features, -1 = not yet
static atomic_int g_cap = -1;              // tg_cpu_set_simd_cap; -1 = none
static atomic_bool g_force_scalar;

static int level_from(const struct tg_cpu_features * f) {
    if (!f->avx || !f->fma || !f->f16c) return TG_SIMD_SCALAR;
    if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx2)
        return f->avx512vnni ? TG_SIMD_AVX512VNNI : TG_SIMD_AVX512;
    if (f->avx2) return TG_SIMD_AVX2;
    return TG_SIMD_AVX;
}

static void detect_once(void) {
    g_features = detect();
    int lvl = level_from(&g_features);
    const char * env = getenv("TG_NO_SIMD");
    if (env && env[0] && strcmp(env, "0") != 0) atomic_store(&g_force_scalar, true);
    // TG_SIMD=scalar|avx|avx2|avx512|avx512vnni: the highest level to use (never above
    // what the CPU has); other values are ignored (tg_cpu_simd_name tells).
    const char * want = getenv("TG_SIMD");
    if (want && want[0]) {
        static const char * const names[] = { "scalar", "avx", "avx2", "avx512", "avx512vnni" };
        static const int levels[] = { TG_SIMD_SCALAR, TG_SIMD_AVX, TG_SIMD_AVX2, TG_SIMD_AVX512,
                                      TG_SIMD_AVX512VNNI };
        for (int k = 0; k < 5; k++)
            if (!strcmp(want, names[k])) atomic_store(&g_cap, levels[k]);
    }
    atomic_store_explicit(&g_detected_level, lvl, memory_order_release);
}

// The first caller detects; callers racing with it (pool workers reaching their
// first kernel together) wait in pthread_once, so g_features is written once.
static int detected_level(void) {
    int lvl = atomic_load_explicit(&g_detected_level, memory_order_acquire);
    if (lvl >= 0) return lvl;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, detect_once);
    return atomic_load_explicit(&g_detected_level, memory_order_acquire);
}

// Features of this CPU (cpuid + OS support), detected once.
struct tg_cpu_features tg_cpu_features(void) {
    detected_level();
    return g_features;
}

// SIMD level the kernels use now (TG_SIMD_*).
int tg_cpu_simd_level(void) {
    int lvl = detected_level();
    if (atomic_load_explicit(&g_force_scalar, memory_order_relaxed)) return TG_SIMD_SCALAR;
    int cap = atomic_load_explicit(&g_cap, memory_order_relaxed);
    return cap >= 0 && cap < lvl ? cap : lvl;
}

void tg_cpu_set_simd_cap(int level) {
    detected_level();
    atomic_store(&g_cap, level < 0 ? -1 : level);
}

void tg_cpu_force_scalar(bool on) {
    detected_level();
    atomic_store(&g_force_scalar, on);
}

const char * tg_cpu_simd_name(void) {
    switch (tg_cpu_simd_level()) {
        case TG_SIMD_AVX512VNNI: return "avx512vnni";
        case TG_SIMD_AVX512: return "avx512";
        case TG_SIMD_AVX2:   return "avx2";
        case TG_SIMD_AVX:    return "avx";
        default:             return "scalar";
    }
}

uint64_t tg_cpu_memory_available(uint64_t * total) {
    FILE * f = fopen("/proc/meminfo", "r");
    uint64_t avail = 0, tot = 0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            unsigned long long kb;
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = (uint64_t) kb * 1024;
            else if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) tot = (uint64_t) kb * 1024;
        }
        fclose(f);
    }
    if (total) *total = tot;
    return avail;
}

// ---- thread count -------------------------------------------------------------

#if defined(__linux__)
#include <sched.h>
#endif
#include <unistd.h>

// One integer from a sysfs file; -1 when it cannot be read.
static long read_long(const char * path) {
    FILE * f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

// CPUs' worth of time the process's cgroup allows (its CPU quota over its
// period, rounded up: cgroup v2 cpu.max, v1 cpu.cfs_quota_us; a container
// limited to 2 CPUs on a 64-CPU host); 0 when there is no limit or none can
// be read.
static int cgroup_cpus(void) {
#if defined(__linux__)
    char v2[512] = "", v1[512] = "", line[512];
    FILE * f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof(line), f)) {   // "0::/path" (v2), "N:cpu,cpuacct:/path" (v1)
        line[strcspn(line, "\n")] = 0;
        char * a = strchr(line, ':'), * b = a ? strchr(a + 1, ':') : NULL;
        if (!a || !b) continue;
        *b = 0;
        const char * ctl = a + 1, * path = b + 1;
        if (!*ctl) snprintf(v2, sizeof(v2), "%s", path);
        else if (!strcmp(ctl, "cpu") || !strncmp(ctl, "cpu,", 4) || strstr(ctl, ",cpu,") ||
                 (strlen(ctl) > 4 && !strcmp(ctl + strlen(ctl) - 4, ",cpu")))
            snprintf(v1, sizeof(v1), "%s", path);
    }
    if (f) fclose(f);
    char path[1200];
    const char * v2dirs[2] = { v2, "" };
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max", v2dirs[i]);
        FILE * m = fopen(path, "r");
        if (!m) continue;
        char q[32] = "";
        long period = 0;
        int got = fscanf(m, "%31s %ld", q, &period);
        fclose(m);
        if (got == 2 && strcmp(q, "max") != 0 && period > 0) {
            const long quota = atol(q);
            if (quota > 0) return (int) ((quota + period - 1) / period);
        }
        return 0;   // "max": no limit
    }
    const char * v1dirs[2] = { v1, "" };
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu%s/cpu.cfs_quota_us", v1dirs[i]);
        const long quota = read_long(path);
        snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu%s/cpu.cfs_period_us", v1dirs[i]);
        const long period = read_long(path);
        if (period > 0 && quota > 0) return (int) ((quota + period - 1) / period);
        if (period > 0) return 0;   // -1: no limit
    }
#endif
    return 0;
}

static int g_cgroup_cpus;
static void cgroup_once(void) { g_cgroup_cpus = cgroup_cpus(); }

int tg_cpu_n_available(void) {
    int n = 0;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
#endif
    if (n <= 0) {
        long k = sysconf(_SC_NPROCESSORS_ONLN);
        n = k > 0 ? (int) k : 1;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;   // the quota read once: called per computation (the recorder)
    pthread_once(&once, cgroup_once);
    const int q = g_cgroup_cpus;
    return q > 0 && q < n ? q : n;
}

// Physical cores among the CPUs this process may run on: CPUs with the same
// (package, core) in /sys/devices/system/cpu/cpuN/topology are SMT siblings
// of one core; without that information every CPU counts.
static int count_cores(void) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return tg_cpu_n_available();
    enum { MAXC = CPU_SETSIZE };
    static long key[MAXC];   // package << 32 | core of each counted CPU
    int n_cores = 0, n_cpus = 0;
    for (int c = 0; c < MAXC; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        n_cpus++;
        char path[128];
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
        const long core = read_long(path);
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
        const long pkg = read_long(path);
        if (core < 0 || pkg < 0) return tg_cpu_n_available();   // no topology: every CPU
        const long k = pkg << 32 | core;
        bool seen = false;
        for (int i = 0; i < n_cores && !seen; i++) seen = key[i] == k;
        if (!seen) key[n_cores++] = k;
    }
    return n_cores > 0 ? n_cores : n_cpus > 0 ? n_cpus : 1;
#else
    return tg_cpu_n_available();
#endif
}

static int g_default_threads;
static void default_threads_once(void) {
    const int cores = count_cores(), avail = tg_cpu_n_available();   // a CPU quota caps the cores
    g_default_threads = cores < avail ? cores : avail;
}

int tg_cpu_default_threads(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, default_threads_once);
    return g_default_threads > 512 ? 512 : g_default_threads;
}
