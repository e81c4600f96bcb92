// writer-file.c - the trace writer's file handling: file header, framed
// records written into a shared map of the file (or with write(2) where it
// cannot be mapped), batches, index + footer at close, errors
// (trace/FORMAT.md). Record payloads are encoded in writer-rec.c.
#include "core/grow.h"
#include "tg/trace.h"
#include "tg/observe.h"
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
#define XXH_INLINE_ALL   // frame checksums: short inputs, inlined
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
    bool            populating; // tg_trace_writer_populate_ahead is faulting pages from `populated` on, unlocked:
    pthread_cond_t  populated_cv; // a record that needs them waits for this
    uint64_t        grow_ns;   // mapped mode: time spent growing the file and faulting its pages in (atomic)
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

// Mapped mode: grows the file (and the map) to at least `need` bytes. The
// space is reserved on disk first, so a full disk is an error here and never
// a SIGBUS later.
static enum tg_status map_grow(struct tg_trace_writer * w, uint64_t need) {
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

// map_grow where the map is shorter than `need`, its time counted (grow_ns).
static enum tg_status map_reserve(struct tg_trace_writer * w, uint64_t need) {
    if (need <= w->map_size) return TG_OK;
    const uint64_t t0 = tg_observe_now_ns();
    enum tg_status st = map_grow(w, need);
    __atomic_fetch_add(&w->grow_ns, tg_observe_now_ns() - t0, __ATOMIC_RELAXED);
    return st;
}

// Mapped mode: faults the pages from `populated` on in, 1 MiB per call, so
// records are not written a page fault at a time. The space past the last
// record is first written with zeros through write(2): pages of reserved
// (fallocate) space populated through the map alone cost several times more
// (measured ~7 us against ~1 us a page on ext4). Best effort: without
// MADV_POPULATE_WRITE (older kernels) the pages fault in as written.
// Pages [populated, to) (to rounded up to a page, at most the map's end).
#ifdef MADV_POPULATE_WRITE
// The pages of [*from, *end) to fault in (end: `to` rounded up to a page, at
// most the map's end), and *z: where the zeros start (whole pages past the
// last record). Under the lock.
static void populate_range(const struct tg_trace_writer * w, uint64_t to, uint64_t * from, uint64_t * z, uint64_t * end) {
    const uint64_t page = 4096;
    *from = w->populated / page * page;
    if (to > w->map_size) to = w->map_size;
    to = (to + page - 1) / page * page;
    if (to > w->map_size) to = w->map_size;
    uint64_t zz = (w->populated > w->off ? w->populated : w->off);
    *z = (zz + page - 1) / page * page;
    *end = to;
}

// The zeros and the faults of populate_range's range (no lock needed while
// no record is written at or past z and the map stays: see populate_ahead).
// False if the kernel cannot populate.
static bool populate_pages(int fd, uint8_t * map, uint64_t from, uint64_t z, uint64_t to) {
    static const uint8_t zeros[64 << 10];
    for (; z < to; ) {
        size_t k = to - z < sizeof(zeros) ? (size_t) (to - z) : sizeof(zeros);
        ssize_t n = pwrite(fd, zeros, k, (off_t) z);
        if (n <= 0) break;   // the populate below still works, only slower
        z += (uint64_t) n;
    }
    return !(to > from && madvise(map + from, (size_t) (to - from), MADV_POPULATE_WRITE) != 0);
}
#endif

// Called with the lock held. unlocked: the system calls run without it, so
// that threads writing records meanwhile do not wait for them; a record that
// would reach past `populated` (or grow the map) waits until they are done
// (rec_wait_populate).
static void map_populate_to(struct tg_trace_writer * w, uint64_t to, bool unlocked) {
#ifdef MADV_POPULATE_WRITE
    const uint64_t t0 = tg_observe_now_ns();
    uint64_t from, z, end;
    populate_range(w, to, &from, &z, &end);
    bool ok;
    if (unlocked) {
        w->populating = true;
        uint8_t * map = w->map;
        pthread_mutex_unlock(&w->mu);
        ok = populate_pages(w->fd, map, from, z, end);
        pthread_mutex_lock(&w->mu);
        w->populating = false;
        pthread_cond_broadcast(&w->populated_cv);
    } else {
        ok = populate_pages(w->fd, w->map, from, z, end);
    }
    if (!ok) w->no_populate = true;
    if (end > w->populated) w->populated = end;
    __atomic_fetch_add(&w->grow_ns, tg_observe_now_ns() - t0, __ATOMIC_RELAXED);
#else
    (void) w; (void) to; (void) unlocked;
#endif
}

static void map_populate(struct tg_trace_writer * w, uint64_t need) {
#ifdef MADV_POPULATE_WRITE
    if (w->no_populate) { w->populated = need; return; }
    map_populate_to(w, need + MAP_STEP_MIN, false);
    if (w->populated < need) w->populated = need;
#else
    w->populated = need;
#endif
}

void tg_trace_writer_populate_ahead(struct tg_trace_writer * w, uint64_t ahead, uint64_t step) {
    if (!w || !w->mapped) return;
    pthread_mutex_lock(&w->mu);
    uint64_t target = w->off + ahead;
    if (target > w->map_size) target = w->map_size;   // within the space reserved: no new error here
    if (w->err == TG_OK && w->map && !w->no_populate && !w->populating && w->populated < target)
        map_populate_to(w, w->populated + step < target ? w->populated + step : target, true);
    pthread_mutex_unlock(&w->mu);
}

// Under the lock: waits while the pages past `populated` are being faulted in
// without it and a record of `need` bytes at the end would reach them.
static void rec_wait_populate(struct tg_trace_writer * w, size_t need) {
    while (w->populating && w->off + need > w->populated) pthread_cond_wait(&w->populated_cv, &w->mu);
}

// Locks the writer and returns a zeroed payload area of len bytes for a
// record of this type (NULL + unlocked on error). Finish with tg_trace_rec_commit().
uint8_t * tg_trace_rec_begin(struct tg_trace_writer * w, uint16_t type, size_t len) {
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
        rec_wait_populate(w, need);
        if (map_reserve(w, w->off + need) != TG_OK) { pthread_mutex_unlock(&w->mu); return NULL; }
        if (w->off + need > w->populated) map_populate(w, w->off + need);
        w->cur = w->map + w->off;   // zero: reserved space past the last record is never written
    } else {
        if (!TG_GROW(w->buf, w->buf_cap, need)) {
            pthread_mutex_unlock(&w->mu);
            tg_error(TG_ERR_NOMEM, "trace: no memory for a %zu-byte record", need);
            return NULL;
        }
        w->cur = w->buf;
        memset(w->cur, 0, need);
    }
    // the sync word stays 0 here: it comes last (rec_commit)
    return trace_put_frame_head(w->cur, &(struct trace_frame_head) { .type = type, .length = (uint32_t) len });
}

// Appends the finished record to the pending batch. False on OOM.
static bool pend(struct tg_trace_writer * w, size_t n) {
    if (!TG_GROW(w->pending, w->pending_cap, w->n_pending + n)) return false;
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

// The record at w->cur, checksummed: its sync word last, then the index.
static enum tg_status commit_framed(struct tg_trace_writer * w) {
    uint8_t * r = w->cur;
    struct trace_frame_head f;
    trace_get_frame_head(r, &f);
    uint16_t type = f.type;
    uint32_t len  = f.length;
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
        wr_u32(r + TRACE_AT(frame_head, sync), TRACE_SYNC);
        w->index[w->n_index++] = (struct index_entry) { w->off, type, len };
        w->off += n;
        w->n_records++;
        return TG_OK;
    }
    wr_u32(r + TRACE_AT(frame_head, sync), TRACE_SYNC);
    w->index[w->n_index++] = (struct index_entry) { w->off + w->n_pending, type, len };
    if (w->batch > 0 && n < (1u << 20)) {   // big records (contents) go out at once
        if (pend(w, n)) { w->n_records++; return TG_OK; }
    }
    enum tg_status st = flush_pending(w);
    if (st == TG_OK) st = write_all(w, w->buf, n);
    if (st == TG_OK) w->n_records++;
    return st;
}

static enum tg_status rec_commit_locked(struct tg_trace_writer * w) {
    uint8_t * r = w->cur;
    struct trace_frame_head f;
    trace_get_frame_head(r, &f);
    const size_t after_sync = TRACE_AT(frame_head, type);   // the checksum covers type, flags, length, payload
    wr_u32(r + TRACE_FRAME_HEAD + f.length,
           tg_trace_frame_checksum(r + after_sync, TRACE_FRAME_HEAD - after_sync + (size_t) f.length));
    return commit_framed(w);
}

enum tg_status tg_trace_rec_commit(struct tg_trace_writer * w) {
    enum tg_status st = rec_commit_locked(w);
    pthread_mutex_unlock(&w->mu);
    return st;
}

enum tg_status tg_trace_writer_append_frames(struct tg_trace_writer * w, const uint8_t * const * frames,
                                             const size_t * len, int n) {
    if (!w || n <= 0) return w || n == 0 ? TG_OK : tg_error(TG_ERR_INVALID_ARG, "trace: NULL writer");
    enum tg_status st = TG_OK;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < n && st == TG_OK; i++) {   // one record at a time, under one lock
        if (w->err != TG_OK) { st = tg_error(w->err, "%s (the trace stopped there)", w->err_msg); break; }
        if (len[i] < TRACE_FRAME_OVERHEAD) { st = tg_error(TG_ERR_INTERNAL, "trace: bad frame"); break; }
        if (w->map) {
            rec_wait_populate(w, len[i]);
            if (map_reserve(w, w->off + len[i]) != TG_OK) { st = tg_last_status(); break; }
            if (w->off + len[i] > w->populated) map_populate(w, w->off + len[i]);
            w->cur = w->map + w->off;
        } else {
            if (!TG_GROW(w->buf, w->buf_cap, len[i])) { st = tg_error(TG_ERR_NOMEM, "trace: no memory for a record"); break; }
            w->cur = w->buf;
        }
        memcpy(w->cur, frames[i], len[i]);   // sync word 0: commit_framed stores it last
        struct trace_frame_head f;
        trace_get_frame_head(w->cur, &f);
        if ((size_t) f.length + TRACE_FRAME_OVERHEAD != len[i]) { st = tg_error(TG_ERR_INTERNAL, "trace: bad frame"); break; }
        st = commit_framed(w);   // checksummed by the frame's maker
    }
    pthread_mutex_unlock(&w->mu);
    return st;
}


// ---- open / close ---------------------------------------------------------

static void writer_free(struct tg_trace_writer * w) {
    if (w->map) munmap(w->map, (size_t) w->map_size);
    pthread_cond_destroy(&w->populated_cv);
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
    pthread_cond_init(&w->populated_cv, NULL);
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
    uint8_t h[TRACE_HEADER_SIZE];
    struct trace_file_header fh = { .magic = TRACE_MAGIC, .version_major = TRACE_VERSION_MAJOR,
                                    .version_minor = TRACE_VERSION_MINOR, .header_size = TRACE_HEADER_SIZE };
    trace_put_file_header(h, &fh);   // then the checksum of the bytes before it
    wr_u32(h + TRACE_AT(file_header, checksum), XXH32(h, TRACE_AT(file_header, checksum), 0));
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
    uint8_t * p = tg_trace_rec_begin(w, TG_TRACE_REC_INDEX, TRACE_SIZE(index_head) + n * TRACE_SIZE(index_entry));
    if (!p) return tg_last_status();
    p = trace_put_index_head(p, &(struct trace_index_head) { .n = (uint32_t) n, .entry_size = TRACE_SIZE(index_entry) });
    for (size_t i = 0; i < n; i++)
        p = trace_put_index_entry(p, &(struct trace_index_entry) {
            .offset = w->index[i].off, .type = w->index[i].type, .length = w->index[i].len });
    uint64_t index_off = w->off;
    enum tg_status st = tg_trace_rec_commit(w);
    if (st != TG_OK) return st;
    p = tg_trace_rec_begin(w, TG_TRACE_REC_FOOTER, TRACE_SIZE(footer));
    if (!p) return tg_last_status();
    trace_put_footer(p, &(struct trace_footer) { .index_offset = index_off, .n_records = (uint64_t) n,
                                                 .magic = TRACE_FOOTER_MAGIC });
    return tg_trace_rec_commit(w);
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

uint64_t tg_trace_writer_size_now(struct tg_trace_writer * w) {
    if (!w) return 0;
    pthread_mutex_lock(&w->mu);   // (other threads may be writing records)
    const uint64_t n = w->off + w->n_pending;
    pthread_mutex_unlock(&w->mu);
    return n;
}

uint64_t tg_trace_writer_grow_ns(const struct tg_trace_writer * w) {
    return w ? __atomic_load_n(&w->grow_ns, __ATOMIC_RELAXED) : 0;
}

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
