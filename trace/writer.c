// writer.c - the trace record writer: file header, framed records written
// into a shared map of the file (or with write(2) where it cannot be mapped),
// index + footer at close (trace/FORMAT.md).
#include "tg/trace.h"
#include "trace-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

struct index_entry { uint64_t off; uint32_t type; uint32_t len; };

// Records go straight into a shared mapping of the file (no system call per
// record): the file grows in reserved, zero-filled steps, and a record's sync
// word is stored last, so a process killed at any moment leaves every
// finished record in the page cache and at most one unfinished record (no
// sync word) followed by zeros. Files that cannot be mapped (pipes, devices)
// take write(2) instead, a record or a batch of records per call.
struct tg_trace_writer {
    int             fd;
    pthread_mutex_t mu;
    enum tg_status  err;       // first error (sticky)
    char            err_msg[512];   // its message, repeated by every later call
    uint64_t        off;       // bytes of the header and the finished records
    uint32_t        n_records;
    char *          path;
    bool            mapped;    // mapped mode (set at open; map may move as the file grows)
    uint8_t *       map;       // mapped mode: the file's first map_size bytes
    uint64_t        map_size;
    uint64_t        populated; // mapped mode: pages before this offset are already faulted in
    bool            no_populate;
    uint8_t *       cur;       // record under construction (in the map or in buf)
    uint8_t *       buf;       // write(2) mode: the record under construction
    size_t          buf_cap;
    struct index_entry * index;
    size_t          n_index, index_cap;
    int             batch;     // write(2) mode, > 0: records collect in `pending` until the batch ends
    uint8_t *       pending;
    size_t          n_pending, pending_cap;
};

uint32_t tg_trace_frame_checksum(const uint8_t * frame_after_sync, size_t n) {
    return XXH32(frame_after_sync, n, 0);
}

const char * tg_trace_rec_name(uint32_t type) {
    switch (type) {
    case TG_TRACE_REC_RUN:       return "RUN";
    case TG_TRACE_REC_SCHED:     return "SCHED";
    case TG_TRACE_REC_GRAPH:     return "GRAPH";
    case TG_TRACE_REC_PLACEMENT: return "PLACEMENT";
    case TG_TRACE_REC_SPLITS:    return "SPLITS";
    case TG_TRACE_REC_ALLOC:     return "ALLOC";
    case TG_TRACE_REC_COMPUTE:   return "COMPUTE";
    case TG_TRACE_REC_EVAL:      return "EVAL";
    case TG_TRACE_REC_CONTENTS:  return "CONTENTS";
    case TG_TRACE_REC_HOST:      return "HOST";
    case TG_TRACE_REC_MARKER:    return "MARKER";
    case TG_TRACE_REC_EVENT:     return "EVENT";
    case TG_TRACE_REC_GRAPH_DELTA:     return "GRAPH_DELTA";
    case TG_TRACE_REC_PLACEMENT_DELTA: return "PLACEMENT_DELTA";
    case TG_TRACE_REC_ALLOC_DELTA:     return "ALLOC_DELTA";
    case TG_TRACE_REC_INDEX:     return "INDEX";
    case TG_TRACE_REC_FOOTER:    return "FOOTER";
    default:                     return "UNKNOWN";
    }
}

const char * tg_trace_event_kind_name(uint32_t kind) {
    static const char * const names[TG_TRACE_EV_COUNT] = {
        "log", "unallocated-use", "graph-allocated", "buffer-realloc", "range-handed", "poison", "error",
    };
    return kind < TG_TRACE_EV_COUNT ? names[kind] : "unknown";
}

// ---- low level ------------------------------------------------------------

// Records the writer's first error (sticky: every later call repeats it) and
// returns it with the last error set.
static enum tg_status writer_fail(struct tg_trace_writer * w, enum tg_status st, const char * fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum tg_status writer_fail(struct tg_trace_writer * w, enum tg_status st, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err_msg, sizeof(w->err_msg), fmt, ap);
    va_end(ap);
    w->err = st;
    return tg_error(st, "%s", w->err_msg);
}

#define MAP_STEP_MIN (1ull << 20)    // the file grows by at least 1 MiB ...
#define MAP_STEP_MAX (64ull << 20)   // ... and at most 64 MiB at a time (or what one record needs)

static enum tg_status write_all(struct tg_trace_writer * w, const uint8_t * p, size_t n) {
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return writer_fail(w, TG_ERR_IO, "trace: write to '%s' failed at offset %llu: %s", w->path,
                               (unsigned long long) w->off, strerror(errno));
        }
        p += k; n -= (size_t) k; w->off += (uint64_t) k;
    }
    return TG_OK;
}

// Mapped mode: makes the file (and the map) at least `need` bytes long. The
// space is reserved on disk first, so a full disk is an error here and never
// a SIGBUS later.
static enum tg_status map_reserve(struct tg_trace_writer * w, uint64_t need) {
    if (need <= w->map_size) return TG_OK;
    uint64_t step = w->map_size < MAP_STEP_MIN ? MAP_STEP_MIN : w->map_size > MAP_STEP_MAX ? MAP_STEP_MAX : w->map_size;
    uint64_t size = w->map_size + step;
    if (size < need) size = (need + MAP_STEP_MIN - 1) / MAP_STEP_MIN * MAP_STEP_MIN;
    int rc = posix_fallocate(w->fd, (off_t) w->map_size, (off_t) (size - w->map_size));
    if (rc != 0 && size > need) {   // little room left: reserve just what this record needs
        size = (need + 4095) / 4096 * 4096;
        rc = posix_fallocate(w->fd, (off_t) w->map_size, (off_t) (size - w->map_size));
    }
    if (rc != 0)
        return writer_fail(w, TG_ERR_IO, "trace: cannot grow '%s' to %llu bytes: %s", w->path, (unsigned long long) size,
                           strerror(rc));
#ifdef MREMAP_MAYMOVE
    void * m = mremap(w->map, (size_t) w->map_size, (size_t) size, MREMAP_MAYMOVE);
#else
    void * m = mmap(NULL, (size_t) size, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
    if (m != MAP_FAILED) munmap(w->map, (size_t) w->map_size);
#endif
    if (m == MAP_FAILED)
        return writer_fail(w, TG_ERR_IO, "trace: cannot map %llu bytes of '%s': %s", (unsigned long long) size, w->path,
                           strerror(errno));
    w->map = m;
    w->map_size = size;
    return TG_OK;
}

// Mapped mode: faults the pages from `populated` on in, 1 MiB per call, so
// records are not written a page fault at a time. The space past the last
// record is first written with zeros through write(2): pages of reserved
// (fallocate) space populated through the map alone cost several times more
// (measured ~7 us against ~1 us a page on ext4). Best effort: without
// MADV_POPULATE_WRITE (older kernels) the pages fault in as written.
static void map_populate(struct tg_trace_writer * w, uint64_t need) {
#ifdef MADV_POPULATE_WRITE
    if (w->no_populate) { w->populated = need; return; }
    static const uint8_t zeros[64 << 10];
    const uint64_t page = 4096;
    uint64_t from = w->populated / page * page;
    uint64_t to = need + MAP_STEP_MIN;
    if (to > w->map_size) to = w->map_size;
    to = (to + page - 1) / page * page;
    if (to > w->map_size) to = w->map_size;
    // zeros only where nothing was written: whole pages past the last record
    uint64_t z = (w->populated > w->off ? w->populated : w->off);
    z = (z + page - 1) / page * page;
    for (; z < to; ) {
        size_t k = to - z < sizeof(zeros) ? (size_t) (to - z) : sizeof(zeros);
        ssize_t n = pwrite(w->fd, zeros, k, (off_t) z);
        if (n <= 0) break;   // the populate below still works, only slower
        z += (uint64_t) n;
    }
    if (to > from && madvise(w->map + from, (size_t) (to - from), MADV_POPULATE_WRITE) != 0) w->no_populate = true;
    w->populated = to > need ? to : need;
#else
    w->populated = need;
#endif
}

// Locks the writer and returns a zeroed payload area of len bytes for a
// record of this type (NULL + unlocked on error). Finish with rec_commit().
static uint8_t * rec_begin(struct tg_trace_writer * w, uint16_t type, size_t len) {
    if (!w) { tg_error(TG_ERR_INVALID_ARG, "trace: NULL writer"); return NULL; }
    if (len > TRACE_MAX_PAYLOAD) {
        tg_error(TG_ERR_INVALID_ARG, "trace: %s record of %zu bytes is too large", tg_trace_rec_name(type), len);
        return NULL;
    }
    pthread_mutex_lock(&w->mu);
    if (w->err != TG_OK) {
        pthread_mutex_unlock(&w->mu);
        tg_error(w->err, "%s (the trace stopped there)", w->err_msg[0] ? w->err_msg : "trace: writer in error");
        return NULL;
    }
    size_t need = len + TRACE_FRAME_OVERHEAD;
    if (w->map) {
        if (map_reserve(w, w->off + need) != TG_OK) { pthread_mutex_unlock(&w->mu); return NULL; }
        if (w->off + need > w->populated) map_populate(w, w->off + need);
        w->cur = w->map + w->off;   // zero: reserved space past the last record is never written
    } else {
        if (need > w->buf_cap) {
            size_t cap = w->buf_cap ? w->buf_cap : 4096;
            while (cap < need) cap *= 2;
            uint8_t * nb = realloc(w->buf, cap);
            if (!nb) {
                pthread_mutex_unlock(&w->mu);
                tg_error(TG_ERR_NOMEM, "trace: no memory for a %zu-byte record", need);
                return NULL;
            }
            w->buf = nb; w->buf_cap = cap;
        }
        w->cur = w->buf;
        memset(w->cur, 0, need);
    }
    wr_u16(w->cur + 4, type);   // the sync word comes last (rec_commit)
    wr_u16(w->cur + 6, 0);
    wr_u32(w->cur + 8, (uint32_t) len);
    return w->cur + TRACE_FRAME_HEAD;
}

// Appends the finished record to the pending batch. False on OOM.
static bool pend(struct tg_trace_writer * w, size_t n) {
    if (w->n_pending + n > w->pending_cap) {
        size_t cap = w->pending_cap ? w->pending_cap : 65536;
        while (cap < w->n_pending + n) cap *= 2;
        uint8_t * p = realloc(w->pending, cap);
        if (!p) return false;
        w->pending = p; w->pending_cap = cap;
    }
    memcpy(w->pending + w->n_pending, w->buf, n);
    w->n_pending += n;
    return true;
}

static enum tg_status flush_pending(struct tg_trace_writer * w) {
    if (w->n_pending == 0) return TG_OK;
    uint64_t start = w->off;
    enum tg_status st = write_all(w, w->pending, w->n_pending);
    if (st == TG_OK && w->off != start + w->n_pending) st = TG_ERR_INTERNAL;
    w->n_pending = 0;
    return st;
}

static enum tg_status rec_commit_locked(struct tg_trace_writer * w) {
    uint8_t * r = w->cur;
    uint16_t type = rd_u16(r + 4);
    uint32_t len  = rd_u32(r + 8);
    wr_u32(r + TRACE_FRAME_HEAD + len, tg_trace_frame_checksum(r + 4, 8 + (size_t) len));
    if (w->n_index == w->index_cap) {
        size_t cap = w->index_cap ? w->index_cap * 2 : 256;
        struct index_entry * ni = realloc(w->index, cap * sizeof(*ni));
        if (!ni) return writer_fail(w, TG_ERR_NOMEM, "trace: no memory for the index");
        w->index = ni; w->index_cap = cap;
    }
    size_t n = (size_t) len + TRACE_FRAME_OVERHEAD;
    if (w->map) {
        // Everything else first: a record with its sync word is whole, for a
        // reader of the file now and after this process dies.
        atomic_thread_fence(memory_order_release);
        wr_u32(r, TRACE_SYNC);
        w->index[w->n_index++] = (struct index_entry) { w->off, type, len };
        w->off += n;
        w->n_records++;
        return TG_OK;
    }
    wr_u32(r, TRACE_SYNC);
    w->index[w->n_index++] = (struct index_entry) { w->off + w->n_pending, type, len };
    if (w->batch > 0 && n < (1u << 20)) {   // big records (contents) go out at once
        if (pend(w, n)) { w->n_records++; return TG_OK; }
    }
    enum tg_status st = flush_pending(w);
    if (st == TG_OK) st = write_all(w, w->buf, n);
    if (st == TG_OK) w->n_records++;
    return st;
}

static enum tg_status rec_commit(struct tg_trace_writer * w) {
    enum tg_status st = rec_commit_locked(w);
    pthread_mutex_unlock(&w->mu);
    return st;
}

// Length-prefixed string (u32 length including the NUL, then bytes).
static size_t str_size(const char * s) { return 4 + (s ? strlen(s) + 1 : 1); }
static uint8_t * put_str(uint8_t * p, const char * s) {
    size_t n = (s ? strlen(s) : 0) + 1;
    wr_u32(p, (uint32_t) n);
    if (n > 1) memcpy(p + 4, s, n - 1);
    p[4 + n - 1] = 0;
    return p + 4 + n;
}

// ---- open / close ---------------------------------------------------------

static void writer_free(struct tg_trace_writer * w) {
    if (w->map) munmap(w->map, (size_t) w->map_size);
    pthread_mutex_destroy(&w->mu);
    free(w->pending);
    free(w->buf);
    free(w->index);
    free(w->path);
    free(w);
}

// Atomic replace (see FORMAT.md, "Writing a trace: atomic replace"): a run
// never truncates or rewrites the file at its path in place, since another run
// or a reader may have that file open (a writer's shared map of a file
// truncated under it dies with SIGBUS). It creates a new file beside the path
// (same directory, so rename(2) is atomic), writes the header, and renames it
// over the path right away - before any record - so a run that is killed
// still leaves its readable trace at the name (test_trace_kill.sh). Two runs
// writing the same path each write their own inode and both finish; the name
// holds the trace of the run that renamed last, complete once that run closes.
// After the rename there is no temporary name left to clean up; before it,
// every error path unlinks the new file.

static atomic_uint tmp_counter;

// Creates "<dir>/.<base>.<pid>-<n>.tgdb-tmp" beside `target` (O_EXCL, mode 0644
// less the umask). Returns the fd and the name in *tmp (caller frees), or -1.
static int create_beside(const char * target, char ** tmp) {
    const char * slash = strrchr(target, '/');
    int dir_len = slash ? (int) (slash - target + 1) : 0;
    const char * base = slash ? slash + 1 : target;
    if (!*base) return -1;
    size_t cap = strlen(target) + 64;
    char * name = malloc(cap);
    if (!name) return -1;
    for (int attempt = 0; attempt < 64; attempt++) {
        unsigned n = atomic_fetch_add(&tmp_counter, 1);
        snprintf(name, cap, "%.*s.%s.%ld-%u.tgdb-tmp", dir_len, target, base, (long) getpid(), n);
        int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) { *tmp = name; return fd; }
        if (errno != EEXIST) break;
    }
    free(name);
    return -1;
}

// Puts the new file at its name (the header is written). On failure the new
// file is removed and the writer is unusable.
static enum tg_status publish(struct tg_trace_writer * w, const char * tmp, const char * target) {
    if (!tmp) return TG_OK;
    if (rename(tmp, target) == 0) return TG_OK;
    int err = errno;
    unlink(tmp);
    return tg_error(TG_ERR_IO, "trace: cannot create '%s' (rename of the new file failed): %s", w->path, strerror(err));
}

struct tg_trace_writer * tg_trace_writer_open(const char * path) {
    if (!path || !*path) { tg_error(TG_ERR_INVALID_ARG, "trace: empty path"); return NULL; }
    struct tg_trace_writer * w = calloc(1, sizeof(*w));
    if (!w || !(w->path = strdup(path))) { free(w); tg_error(TG_ERR_NOMEM, "trace: no memory"); return NULL; }
    pthread_mutex_init(&w->mu, NULL);
    // A regular file (or a new one) is written as a new file renamed over the
    // path (above); a FIFO or device is opened write-only in place (a FIFO
    // waits for its reader here). A symbolic link is kept: its target is
    // replaced. Where no file can be created beside the path (a directory we
    // cannot write to) the existing file is truncated in place as before.
    struct stat pre;
    bool exists = stat(path, &pre) == 0;
    bool special = exists && !S_ISREG(pre.st_mode);
    char * tmp = NULL;
    char * real = NULL;
    const char * target = path;
    w->fd = -1;
    if (!special) {
        struct stat ls;
        if (exists && lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode) && (real = realpath(path, NULL))) target = real;
        w->fd = create_beside(target, &tmp);
        if (w->fd >= 0 && exists && fchmod(w->fd, pre.st_mode & 07777) != 0) { /* keep 0644 less umask */ }
    }
    if (w->fd < 0 && !special) w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0 && (special || errno == EACCES || errno == EPERM))
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        tg_error(TG_ERR_IO, "trace: cannot create '%s': %s", path, strerror(errno));
        free(real);
        writer_free(w);
        return NULL;
    }
    uint8_t h[TRACE_HEADER_SIZE] = {0};
    memcpy(h, TRACE_MAGIC, 8);
    wr_u16(h + 8, TRACE_VERSION_MAJOR);
    wr_u16(h + 10, TRACE_VERSION_MINOR);
    wr_u32(h + 12, 0);
    wr_u32(h + 16, TRACE_HEADER_SIZE);
    wr_u32(h + 28, XXH32(h, 28, 0));
    // A regular file we can read and write is mapped; anything else (a pipe,
    // a device, a file system without shared maps) is written with write(2).
    struct stat sb;
    int acc = fcntl(w->fd, F_GETFL) & O_ACCMODE;
    bool header_done = false;
    if (fstat(w->fd, &sb) == 0 && S_ISREG(sb.st_mode) && acc == O_RDWR) {
        void * m = mmap(NULL, (size_t) MAP_STEP_MIN, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
        if (m != MAP_FAILED) {
            int rc = posix_fallocate(w->fd, 0, (off_t) MAP_STEP_MIN);
            if (rc == 0) {
                w->mapped = true;
                w->map = m;
                w->map_size = MAP_STEP_MIN;
                memcpy(w->map, h, sizeof(h));
                w->off = sizeof(h);
                header_done = true;
            } else {
                // no room to reserve ahead (a nearly full disk), or no fallocate:
                // write(2) as records come, which fails only when the disk is full
                munmap(m, (size_t) MAP_STEP_MIN);
                if (ftruncate(w->fd, 0) != 0) { /* the write(2) path below reports real trouble */ }
            }
        }
    }
    enum tg_status st = header_done ? TG_OK : write_all(w, h, sizeof(h));
    if (st == TG_OK) st = publish(w, tmp, target);
    else if (tmp) unlink(tmp);
    free(tmp);
    free(real);
    if (st != TG_OK) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", tg_last_error());
        close(w->fd); writer_free(w);
        tg_error(TG_ERR_IO, "%s", msg);
        return NULL;
    }
    return w;
}

static enum tg_status write_index_footer(struct tg_trace_writer * w) {
    size_t n = w->n_index;
    uint8_t * p = rec_begin(w, TG_TRACE_REC_INDEX, TRACE_INDEX_HEAD + n * TRACE_INDEX_ENTRY);
    if (!p) return tg_last_status();
    wr_u32(p, (uint32_t) n);
    wr_u32(p + 4, TRACE_INDEX_ENTRY);
    for (size_t i = 0; i < n; i++) {
        uint8_t * e = p + TRACE_INDEX_HEAD + i * TRACE_INDEX_ENTRY;
        wr_u64(e, w->index[i].off);
        wr_u32(e + 8, w->index[i].type);
        wr_u32(e + 12, w->index[i].len);
    }
    uint64_t index_off = w->off;
    enum tg_status st = rec_commit(w);
    if (st != TG_OK) return st;
    p = rec_begin(w, TG_TRACE_REC_FOOTER, TRACE_FOOTER_PAYLOAD);
    if (!p) return tg_last_status();
    wr_u64(p, index_off);
    wr_u64(p + 8, (uint64_t) n);
    memcpy(p + 16, TRACE_FOOTER_MAGIC, 8);
    return rec_commit(w);
}

enum tg_status tg_trace_writer_close(struct tg_trace_writer * w) {
    if (!w) return TG_OK;
    w->batch = 0;
    enum tg_status st = w->err;
    if (st == TG_OK) st = flush_pending(w);
    if (st == TG_OK) st = write_index_footer(w);
    if (w->map) {   // give back the reserved space past the footer
        munmap(w->map, (size_t) w->map_size);
        w->map = NULL;
        if (ftruncate(w->fd, (off_t) w->off) != 0 && st == TG_OK)
            st = tg_error(TG_ERR_IO, "trace: cannot truncate '%s' to %llu bytes: %s", w->path,
                          (unsigned long long) w->off, strerror(errno));
    }
    if (close(w->fd) != 0 && st == TG_OK)
        st = tg_error(TG_ERR_IO, "trace: closing '%s' failed: %s", w->path, strerror(errno));
    writer_free(w);
    return st;
}

void tg_trace_writer_abandon(struct tg_trace_writer * w) {
    if (!w) return;
    close(w->fd);   // the reserved space stays, as after a crash
    writer_free(w);
}

uint32_t tg_trace_writer_n_records(const struct tg_trace_writer * w) { return w ? w->n_records : 0; }
uint64_t tg_trace_writer_size(const struct tg_trace_writer * w) { return w ? w->off + w->n_pending : 0; }

void tg_trace_writer_batch_begin(struct tg_trace_writer * w) {
    if (!w || w->mapped) return;   // mapped: every record is in the file as it is made
    pthread_mutex_lock(&w->mu);
    w->batch++;
    pthread_mutex_unlock(&w->mu);
}

enum tg_status tg_trace_writer_batch_end(struct tg_trace_writer * w) {
    if (!w || w->mapped) return TG_OK;
    pthread_mutex_lock(&w->mu);
    enum tg_status st = TG_OK;
    if (w->batch > 0 && --w->batch == 0 && w->err == TG_OK) st = flush_pending(w);
    pthread_mutex_unlock(&w->mu);
    return st;
}

// ---- records --------------------------------------------------------------

enum tg_status tg_trace_write_raw(struct tg_trace_writer * w, uint16_t type, const void * payload, uint32_t len) {
    uint8_t * p = rec_begin(w, type, len);
    if (!p) return tg_last_status();
    if (len) memcpy(p, payload, len);
    return rec_commit(w);
}

enum tg_status tg_trace_write_run(struct tg_trace_writer * w, const struct tg_trace_run * run,
                                  const char * const * op_names, int n_ops,
                                  const char * const * type_names, int n_types) {
    return tg_trace_write_run_causes(w, run, op_names, n_ops, type_names, n_types, NULL, 0);
}

enum tg_status tg_trace_write_run_causes(struct tg_trace_writer * w, const struct tg_trace_run * r,
                                  const char * const * op_names, int n_ops,
                                  const char * const * type_names, int n_types,
                                  const char * const * cause_names, int n_causes) {
    if (!r || n_ops < 0 || n_types < 0 || n_causes < 0) return tg_error(TG_ERR_INVALID_ARG, "trace: bad RUN arguments");
    size_t len = 24 + str_size(r->engine_version) + str_size(r->cmdline) + str_size(r->backends)
               + str_size(r->note) + 12;
    for (int i = 0; i < n_ops; i++) len += str_size(op_names ? op_names[i] : NULL);
    for (int i = 0; i < n_types; i++) len += str_size(type_names ? type_names[i] : NULL);
    for (int i = 0; i < n_causes; i++) len += str_size(cause_names ? cause_names[i] : NULL);
    uint8_t * p = rec_begin(w, TG_TRACE_REC_RUN, len);
    if (!p) return tg_last_status();
    wr_u64(p, r->time_unix_ns);
    wr_u64(p + 8, r->mono_start_ns);
    wr_u32(p + 16, r->pid);
    wr_i32(p + 20, r->n_threads);
    uint8_t * q = p + 24;
    q = put_str(q, r->engine_version);
    q = put_str(q, r->cmdline);
    q = put_str(q, r->backends);
    q = put_str(q, r->note);
    wr_u32(q, (uint32_t) n_ops); q += 4;
    for (int i = 0; i < n_ops; i++) q = put_str(q, op_names ? op_names[i] : NULL);
    wr_u32(q, (uint32_t) n_types); q += 4;
    for (int i = 0; i < n_types; i++) q = put_str(q, type_names ? type_names[i] : NULL);
    wr_u32(q, (uint32_t) n_causes); q += 4;
    for (int i = 0; i < n_causes; i++) q = put_str(q, cause_names ? cause_names[i] : NULL);
    return rec_commit(w);
}

enum tg_status tg_trace_write_sched(struct tg_trace_writer * w, const struct tg_trace_sched * s) {
    if (!s || s->n_backends < 0 || s->n_backends > TG_TRACE_MAX_BACKENDS)
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad SCHED record");
    size_t len = 8;
    for (int i = 0; i < s->n_backends; i++) len += str_size(s->backend[i]) + str_size(s->buft[i]);
    uint8_t * p = rec_begin(w, TG_TRACE_REC_SCHED, len);
    if (!p) return tg_last_status();
    wr_u32(p, s->sched_id);
    wr_u32(p + 4, (uint32_t) s->n_backends);
    uint8_t * q = p + 8;
    for (int i = 0; i < s->n_backends; i++) {
        q = put_str(q, s->backend[i]);
        q = put_str(q, s->buft[i]);
    }
    return rec_commit(w);
}

// Checks a delta's change list: increasing indices below n.
static bool changes_ok(const int32_t * changed, int n_changed, int n) {
    if (n_changed < 0 || (n_changed > 0 && !changed)) return false;
    for (int k = 0; k < n_changed; k++)
        if (changed[k] < 0 || changed[k] >= n || (k > 0 && changed[k] <= changed[k - 1])) return false;
    return true;
}

static void put_tensor(uint8_t * e, const struct tg_trace_tensor * t) {
    wr_name(e, t->name, TG_TRACE_NAME);
    wr_u64(e + 64, t->uid);
    for (int d = 0; d < 4; d++) {
        wr_i64(e + 72 + 8 * d, t->ne[d]);
        wr_u64(e + 104 + 8 * d, t->nb[d]);
    }
    for (int k = 0; k < TG_TRACE_MAX_OP_PARAMS; k++) wr_i32(e + 136 + 4 * k, t->op_params[k]);
    wr_i32(e + 200, t->op);
    wr_i32(e + 204, t->type);
    wr_i32(e + 208, t->flags);
    for (int k = 0; k < TG_TRACE_MAX_SRC; k++) wr_i32(e + 212 + 4 * k, t->src[k]);
    wr_i32(e + 236, t->view_src);
    wr_u64(e + 240, t->view_offs);
}

enum tg_status tg_trace_write_graph(struct tg_trace_writer * w, const struct tg_trace_graph * g,
                                    const struct tg_trace_tensor * tensors) {
    if (!g || g->n_nodes < 0 || g->n_leafs < 0 || (g->n_nodes + g->n_leafs > 0 && !tensors))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad GRAPH record");
    size_t n = (size_t) g->n_nodes + (size_t) g->n_leafs;
    if (n > (TRACE_MAX_PAYLOAD - TRACE_GRAPH_HEAD) / TRACE_TENSOR_ENTRY)
        return tg_error(TG_ERR_INVALID_ARG, "trace: graph of %zu tensors is too large", n);
    uint8_t * p = rec_begin(w, TG_TRACE_REC_GRAPH, TRACE_GRAPH_HEAD + n * TRACE_TENSOR_ENTRY);
    if (!p) return tg_last_status();
    for (size_t i = 0; i < n; i++) put_tensor(p + TRACE_GRAPH_HEAD + i * TRACE_TENSOR_ENTRY, &tensors[i]);
    uint64_t h = g->structure_hash;
    if (h == 0) {
        // the hash ignores uids, so the same topology built twice hashes the same
        XXH64_state_t * s = XXH64_createState();
        if (s) {
            XXH64_reset(s, 0);
            for (size_t i = 0; i < n; i++) {
                const uint8_t * e = p + TRACE_GRAPH_HEAD + i * TRACE_TENSOR_ENTRY;
                XXH64_update(s, e, 64);
                XXH64_update(s, e + 72, TRACE_TENSOR_ENTRY - 72);
            }
            h = XXH64_digest(s);
            XXH64_freeState(s);
        }
    }
    wr_u32(p, g->graph_id);
    wr_u32(p + 4, g->sched_id);
    wr_i32(p + 8, g->n_nodes);
    wr_i32(p + 12, g->n_leafs);
    wr_u32(p + 16, TRACE_TENSOR_ENTRY);
    wr_u32(p + 20, 0);
    wr_u64(p + 24, h);
    return rec_commit(w);
}

enum tg_status tg_trace_write_graph_delta(struct tg_trace_writer * w, const struct tg_trace_graph * g,
                                          uint32_t base_graph_id, const struct tg_trace_tensor * tensors,
                                          const int32_t * changed, int n_changed) {
    if (!g || g->n_nodes < 0 || g->n_leafs < 0 || base_graph_id == 0 || (n_changed > 0 && !tensors) ||
        !changes_ok(changed, n_changed, g->n_nodes + g->n_leafs))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad GRAPH_DELTA record");
    const size_t esz = 4 + TRACE_TENSOR_ENTRY;
    if ((size_t) n_changed > (TRACE_MAX_PAYLOAD - TRACE_GDELTA_HEAD) / esz)
        return tg_error(TG_ERR_INVALID_ARG, "trace: graph delta of %d tensors is too large", n_changed);
    uint8_t * p = rec_begin(w, TG_TRACE_REC_GRAPH_DELTA, TRACE_GDELTA_HEAD + (size_t) n_changed * esz);
    if (!p) return tg_last_status();
    wr_u32(p, g->graph_id);
    wr_u32(p + 4, g->sched_id);
    wr_i32(p + 8, g->n_nodes);
    wr_i32(p + 12, g->n_leafs);
    wr_u32(p + 16, TRACE_TENSOR_ENTRY);
    wr_u32(p + 20, base_graph_id);
    wr_u64(p + 24, 0);   // structure hash: not computed for deltas
    wr_u32(p + 32, (uint32_t) n_changed);
    for (int k = 0; k < n_changed; k++) {
        uint8_t * e = p + TRACE_GDELTA_HEAD + (size_t) k * esz;
        wr_u32(e, (uint32_t) changed[k]);
        put_tensor(e + 4, &tensors[changed[k]]);
    }
    return rec_commit(w);
}

// A placement entry; its text goes to blob + at. Returns the new `at`.
static size_t put_place(uint8_t * e, const struct tg_trace_placement * x, uint8_t * blob, size_t at) {
    wr_i32(e, x->backend);
    wr_u32(e + 4, x->cause);
    size_t l = x->text && x->text[0] ? strlen(x->text) + 1 : 0;
    wr_u32(e + 8, (uint32_t) at);
    wr_u32(e + 12, (uint32_t) l);
    if (l) { memcpy(blob + at, x->text, l); at += l; }
    return at;
}

enum tg_status tg_trace_write_placement(struct tg_trace_writer * w, uint32_t graph_id,
                                        const struct tg_trace_placement * pl, int n) {
    if (n < 0 || (n > 0 && !pl)) return tg_error(TG_ERR_INVALID_ARG, "trace: bad PLACEMENT record");
    size_t text = 0;
    for (int i = 0; i < n; i++) text += pl[i].text && pl[i].text[0] ? strlen(pl[i].text) + 1 : 0;
    size_t len = TRACE_PLACE_HEAD + (size_t) n * TRACE_PLACE_ENTRY + text;
    uint8_t * p = rec_begin(w, TG_TRACE_REC_PLACEMENT, len);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, (uint32_t) n);
    wr_u32(p + 8, TRACE_PLACE_ENTRY);
    wr_u32(p + 12, (uint32_t) text);
    uint8_t * blob = p + TRACE_PLACE_HEAD + (size_t) n * TRACE_PLACE_ENTRY;
    size_t at = 0;
    for (int i = 0; i < n; i++) at = put_place(p + TRACE_PLACE_HEAD + (size_t) i * TRACE_PLACE_ENTRY, &pl[i], blob, at);
    return rec_commit(w);
}

enum tg_status tg_trace_write_placement_delta(struct tg_trace_writer * w, uint32_t graph_id, uint32_t base_graph_id,
                                              const struct tg_trace_placement * pl, int n,
                                              const int32_t * changed, int n_changed) {
    if (n < 0 || (n > 0 && !pl) || !changes_ok(changed, n_changed, n) || base_graph_id == 0)
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad PLACEMENT_DELTA record");
    size_t text = 0;
    for (int k = 0; k < n_changed; k++) {
        const struct tg_trace_placement * x = &pl[changed[k]];
        text += x->text && x->text[0] ? strlen(x->text) + 1 : 0;
    }
    const size_t esz = 4 + TRACE_PLACE_ENTRY;
    uint8_t * p = rec_begin(w, TG_TRACE_REC_PLACEMENT_DELTA, TRACE_PDELTA_HEAD + (size_t) n_changed * esz + text);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, base_graph_id);
    wr_u32(p + 8, (uint32_t) n);
    wr_u32(p + 12, TRACE_PLACE_ENTRY);
    wr_u32(p + 16, (uint32_t) text);
    wr_u32(p + 20, (uint32_t) n_changed);
    uint8_t * blob = p + TRACE_PDELTA_HEAD + (size_t) n_changed * esz;
    size_t at = 0;
    for (int k = 0; k < n_changed; k++) {
        uint8_t * e = p + TRACE_PDELTA_HEAD + (size_t) k * esz;
        wr_u32(e, (uint32_t) changed[k]);
        at = put_place(e + 4, &pl[changed[k]], blob, at);
    }
    return rec_commit(w);
}

enum tg_status tg_trace_write_splits(struct tg_trace_writer * w, uint32_t graph_id,
                                     const struct tg_trace_split * sp, int n_splits,
                                     const struct tg_trace_split_input * in, int n_inputs) {
    if (n_splits < 0 || n_inputs < 0 || (n_splits && !sp) || (n_inputs && !in))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad SPLITS record");
    size_t len = TRACE_SPLITS_HEAD + (size_t) n_splits * TRACE_SPLIT_ENTRY + (size_t) n_inputs * TRACE_INPUT_ENTRY;
    uint8_t * p = rec_begin(w, TG_TRACE_REC_SPLITS, len);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, (uint32_t) n_splits);
    wr_u32(p + 8, (uint32_t) n_inputs);
    wr_u32(p + 12, TRACE_SPLIT_ENTRY);
    wr_u32(p + 16, TRACE_INPUT_ENTRY);
    for (int i = 0; i < n_splits; i++) {
        uint8_t * e = p + TRACE_SPLITS_HEAD + (size_t) i * TRACE_SPLIT_ENTRY;
        wr_i32(e, sp[i].backend);
        wr_i32(e + 4, sp[i].node_begin);
        wr_i32(e + 8, sp[i].node_end);
        wr_u32(e + 12, sp[i].first_input);
        wr_u32(e + 16, sp[i].n_inputs);
    }
    uint8_t * ib = p + TRACE_SPLITS_HEAD + (size_t) n_splits * TRACE_SPLIT_ENTRY;
    for (int i = 0; i < n_inputs; i++) {
        uint8_t * e = ib + (size_t) i * TRACE_INPUT_ENTRY;
        wr_i32(e, in[i].tensor);
        wr_i32(e + 4, in[i].from_backend);
        wr_u64(e + 8, in[i].bytes);
        wr_name(e + 16, in[i].copy_name, TG_TRACE_NAME);
    }
    return rec_commit(w);
}

static void put_buffer(uint8_t * e, const struct tg_trace_buffer * b) {
    wr_u64(e, b->uid);
    wr_i32(e + 8, b->backend);
    wr_i32(e + 12, b->usage);
    wr_u64(e + 16, b->size);
    wr_name(e + 24, b->buft, TG_TRACE_BUFT_NAME);
}

static void put_alloc(uint8_t * e, const struct tg_trace_alloc * a) {
    wr_i32(e, a->buffer);
    wr_i32(e + 4, a->inplace_parent);
    wr_u64(e + 8, a->offset);
    wr_u64(e + 16, a->size);
    wr_i32(e + 24, a->first_step);
    wr_i32(e + 28, a->last_step);
    wr_u32(e + 32, a->flags);
}

enum tg_status tg_trace_write_alloc(struct tg_trace_writer * w, uint32_t graph_id, uint32_t sched_id,
                                    const struct tg_trace_buffer * bufs, int n_buffers,
                                    const struct tg_trace_alloc * al, int n) {
    if (n_buffers < 0 || n < 0 || (n_buffers && !bufs) || (n && !al))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad ALLOC record");
    size_t len = TRACE_ALLOC_HEAD + (size_t) n_buffers * TRACE_BUFFER_ENTRY + (size_t) n * TRACE_ALLOC_ENTRY;
    uint8_t * p = rec_begin(w, TG_TRACE_REC_ALLOC, len);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, sched_id);
    wr_u32(p + 8, (uint32_t) n_buffers);
    wr_u32(p + 12, (uint32_t) n);
    wr_u32(p + 16, TRACE_BUFFER_ENTRY);
    wr_u32(p + 20, TRACE_ALLOC_ENTRY);
    for (int i = 0; i < n_buffers; i++) put_buffer(p + TRACE_ALLOC_HEAD + (size_t) i * TRACE_BUFFER_ENTRY, &bufs[i]);
    uint8_t * ab = p + TRACE_ALLOC_HEAD + (size_t) n_buffers * TRACE_BUFFER_ENTRY;
    for (int i = 0; i < n; i++) put_alloc(ab + (size_t) i * TRACE_ALLOC_ENTRY, &al[i]);
    return rec_commit(w);
}

enum tg_status tg_trace_write_alloc_delta(struct tg_trace_writer * w, uint32_t graph_id, uint32_t sched_id,
                                          uint32_t base_graph_id, const struct tg_trace_buffer * bufs, int n_buffers,
                                          const struct tg_trace_alloc * al, int n,
                                          const int32_t * changed, int n_changed) {
    if (n_buffers < 0 || n < 0 || (n_buffers && !bufs) || (n && !al) || base_graph_id == 0 ||
        !changes_ok(changed, n_changed, n))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad ALLOC_DELTA record");
    const size_t esz = 4 + TRACE_ALLOC_ENTRY;
    size_t len = TRACE_ADELTA_HEAD + (size_t) n_buffers * TRACE_BUFFER_ENTRY + (size_t) n_changed * esz;
    uint8_t * p = rec_begin(w, TG_TRACE_REC_ALLOC_DELTA, len);
    if (!p) return tg_last_status();
    wr_u32(p, graph_id);
    wr_u32(p + 4, sched_id);
    wr_u32(p + 8, base_graph_id);
    wr_u32(p + 12, (uint32_t) n_buffers);
    wr_u32(p + 16, (uint32_t) n);
    wr_u32(p + 20, TRACE_BUFFER_ENTRY);
    wr_u32(p + 24, TRACE_ALLOC_ENTRY);
    wr_u32(p + 28, (uint32_t) n_changed);
    for (int i = 0; i < n_buffers; i++) put_buffer(p + TRACE_ADELTA_HEAD + (size_t) i * TRACE_BUFFER_ENTRY, &bufs[i]);
    uint8_t * ab = p + TRACE_ADELTA_HEAD + (size_t) n_buffers * TRACE_BUFFER_ENTRY;
    for (int k = 0; k < n_changed; k++) {
        uint8_t * e = ab + (size_t) k * esz;
        wr_u32(e, (uint32_t) changed[k]);
        put_alloc(e + 4, &al[changed[k]]);
    }
    return rec_commit(w);
}


enum tg_status tg_trace_write_compute(struct tg_trace_writer * w, const struct tg_trace_compute * c) {
    if (!c) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL COMPUTE");
    uint8_t * p = rec_begin(w, TG_TRACE_REC_COMPUTE, TRACE_COMPUTE_SIZE);
    if (!p) return tg_last_status();
    wr_u32(p, c->graph_id);
    wr_u32(p + 4, c->compute_seq);
    wr_u32(p + 8, c->phase);
    wr_i32(p + 12, c->status);
    wr_u64(p + 16, c->time_ns);
    return rec_commit(w);
}

enum tg_status tg_trace_write_eval(struct tg_trace_writer * w, const struct tg_trace_eval * e) {
    if (!e) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL EVAL");
    uint8_t * p = rec_begin(w, TG_TRACE_REC_EVAL, TRACE_EVAL_SIZE);
    if (!p) return tg_last_status();
    wr_u32(p, e->graph_id);
    wr_u32(p + 4, e->compute_seq);
    wr_i32(p + 8, e->node);
    wr_u32(p + 12, e->flags);
    wr_u64(p + 16, e->t_begin_ns);
    wr_u64(p + 24, e->t_end_ns);
    wr_u64(p + 32, e->hash);
    wr_u64(p + 40, e->uid);
    wr_u64(p + 48, e->root_uid);
    wr_u64(p + 56, e->buffer_uid);
    wr_u64(p + 64, e->offset);
    wr_u64(p + 72, e->nbytes);
    wr_i32(p + 80, e->backend);
    wr_i32(p + 84, e->split);
    wr_f64(p + 88, e->sum.min);
    wr_f64(p + 96, e->sum.max);
    wr_f64(p + 104, e->sum.mean);
    wr_f64(p + 112, e->sum.rms);
    wr_u64(p + 120, e->sum.n_nan);
    wr_u64(p + 128, e->sum.n_inf);
    wr_u64(p + 136, e->sum.n_zero);
    wr_u64(p + 144, e->sum.n_elem);
    return rec_commit(w);
}

enum tg_status tg_trace_write_contents(struct tg_trace_writer * w, const struct tg_trace_contents * c,
                                       const void * data, int zstd_level) {
    if (!c || (c->raw_size && !data)) return tg_error(TG_ERR_INVALID_ARG, "trace: bad CONTENTS record");
    if (c->raw_size > TRACE_MAX_PAYLOAD - TRACE_CONTENTS_HEAD)
        return tg_error(TG_ERR_INVALID_ARG, "trace: contents of %llu bytes are too large",
                        (unsigned long long) c->raw_size);
    void * z = NULL;
    size_t zn = 0;
    uint32_t codec = TG_TRACE_CODEC_RAW;
    if (zstd_level > 0 && c->raw_size > 0) {
        size_t bound = ZSTD_compressBound((size_t) c->raw_size);
        z = malloc(bound);
        if (!z) return tg_error(TG_ERR_NOMEM, "trace: no memory to compress %llu bytes",
                                (unsigned long long) c->raw_size);
        zn = ZSTD_compress(z, bound, data, (size_t) c->raw_size, zstd_level);
        if (ZSTD_isError(zn) || zn >= c->raw_size) { free(z); z = NULL; }  // store raw instead
        else codec = TG_TRACE_CODEC_ZSTD;
    }
    size_t stored = z ? zn : (size_t) c->raw_size;
    uint64_t hash = c->hash ? c->hash : XXH3_64bits(data, (size_t) c->raw_size);
    uint8_t * p = rec_begin(w, TG_TRACE_REC_CONTENTS, TRACE_CONTENTS_HEAD + stored);
    if (!p) { free(z); return tg_last_status(); }
    wr_u32(p, c->graph_id);
    wr_u32(p + 4, c->compute_seq);
    wr_i32(p + 8, c->node);
    wr_i32(p + 12, c->type);
    wr_u32(p + 16, codec);
    for (int d = 0; d < 4; d++) wr_i64(p + 24 + 8 * d, c->ne[d]);
    wr_u64(p + 56, c->raw_size);
    wr_u64(p + 64, hash);
    if (stored) memcpy(p + TRACE_CONTENTS_HEAD, z ? z : data, stored);
    free(z);
    return rec_commit(w);
}

enum tg_status tg_trace_write_host(struct tg_trace_writer * w, const struct tg_trace_host * h) {
    if (!h) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL HOST");
    uint8_t * p = rec_begin(w, TG_TRACE_REC_HOST, TRACE_HOST_SIZE);
    if (!p) return tg_last_status();
    wr_u32(p, h->kind);
    wr_u32(p + 4, h->compute_seq);
    wr_u64(p + 8, h->time_ns);
    wr_u64(p + 16, h->uid);
    wr_u64(p + 24, h->root_uid);
    wr_u64(p + 32, h->buffer_uid);
    wr_u64(p + 40, h->offset);
    wr_u64(p + 48, h->size);
    wr_u64(p + 56, h->hash);
    wr_i32(p + 64, h->graph_id);
    wr_i32(p + 68, h->tensor);
    wr_name(p + 72, h->name, TG_TRACE_NAME);
    return rec_commit(w);
}

enum tg_status tg_trace_write_marker(struct tg_trace_writer * w, const struct tg_trace_marker * m,
                                     const int32_t * ids) {
    if (!m || (m->n_ids && !ids) || m->n_ids > (1u << 24))
        return tg_error(TG_ERR_INVALID_ARG, "trace: bad MARKER record");
    size_t len = TRACE_MARKER_HEAD + str_size(m->text) + (size_t) m->n_ids * 4;
    uint8_t * p = rec_begin(w, TG_TRACE_REC_MARKER, len);
    if (!p) return tg_last_status();
    wr_u32(p, m->kind);
    wr_u32(p + 4, m->compute_seq);
    wr_u64(p + 8, m->time_ns);
    wr_i32(p + 16, m->n_tokens);
    wr_i32(p + 20, m->pos);
    wr_i32(p + 24, m->seq_id);
    wr_u32(p + 28, m->n_ids);
    uint8_t * q = put_str(p + TRACE_MARKER_HEAD, m->text);
    for (uint32_t i = 0; i < m->n_ids; i++) wr_i32(q + 4 * i, ids[i]);
    return rec_commit(w);
}

enum tg_status tg_trace_write_event(struct tg_trace_writer * w, const struct tg_trace_event * e) {
    if (!e) return tg_error(TG_ERR_INVALID_ARG, "trace: NULL EVENT");
    uint8_t * p = rec_begin(w, TG_TRACE_REC_EVENT, TRACE_EVENT_HEAD + str_size(e->message));
    if (!p) return tg_last_status();
    wr_u32(p, e->kind);
    wr_u32(p + 4, e->severity);
    wr_u64(p + 8, e->time_ns);
    wr_i32(p + 16, e->graph_id);
    wr_i32(p + 20, e->tensor);
    wr_u64(p + 24, e->uid);
    wr_u64(p + 32, e->buffer_uid);
    wr_u64(p + 40, e->offset);
    wr_u64(p + 48, e->size);
    wr_i32(p + 56, e->step);
    wr_name(p + 64, e->name, TG_TRACE_NAME);
    put_str(p + TRACE_EVENT_HEAD, e->message);
    return rec_commit(w);
}
