// recorder-hasher.c - the recorder's hashing thread: the hash, summary and
// sketch of each node computed on a CPU the engine leaves free while the
// engine goes on with the next nodes.
//
// The recorder (under its mutex, on the engine's thread) puts each batch of
// items (a node and the views after it) into a ring and writes their EVAL
// records at once, those still to be hashed with TG_TRACE_EVAL_PENDING (a
// crash keeps every node that ran). The thread hashes the items in compute
// buffers first, in ring order (the allocator hands a dead node's memory to
// the next nodes within microseconds), and the others (the KV-cache views,
// whose bytes stay put until the next token's store) when it has nothing
// else, and frames their RESULT (and SKETCH) records; the recorder appends
// those in ring order at its next callbacks (records written from one thread
// only: a record written from either side would pull the writer's state and
// page over to its CPU). Readers merge a RESULT into its EVAL
// (trace/FORMAT.md, 1.4).
//
// The recorder hashes in its callback the items the very next node
// overwrites in place (it follows within a microsecond: the thread could not
// be first) and the last node of a split (the ring is drained next). Before
// a node runs, every other unhashed item whose bytes the node writes (a
// reused range; a cache view written by its store) is copied aside in
// logical order if the thread has not started on it, else waited for;
// before a split's input copies and at the end of a computation the ring is
// drained. KV-cache views (the element-set digest, viewdigest.h) are
// digested in place, never from a copy: their memo follows the cache's
// memory; the nodes of a computation that write into them (the K and V
// stores) are queued first, as items without a record, so that the thread
// takes the elements they overwrite out of the memo while the engine
// computes the nodes before them, and each such node waits for its own.
// Both sides spin a little before sleeping: a node takes
// microseconds, a wake-up through the kernel about as long.
#include "recorder-impl.h"
#include "trace-impl.h"
#include "viewdigest.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void) 0)
#endif

#define THREAD_SPIN_NS 50000000ull  // the thread, idle during a computation: this long before sleeping
                                    // (a node's compute, the output projection's included: a wake-up
                                    // through the kernel costs tens of microseconds on a VM)
#define THREAD_REST_NS 2000000ull   // idle between computations (a decode loop's next token comes sooner:
                                    // no wake-up through the kernel when it begins)
#define WAIT_SPIN_NS   200000ull    // the recorder: waiting this long before sleeping
#define POPULATE_AHEAD (4ull << 20)  // trace file bytes the idle thread keeps ready past the last record,
#define POPULATE_STEP  (128ull << 10) // this much a time (the writer is locked meanwhile)
#define WRITE_BURST    64           // done items the thread lets gather, while busy, before appending them

static uint64_t ld(const uint64_t * p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static void st(uint64_t * p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static bool ldb(const bool * p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static void stb(bool * p, bool v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static bool is_done(const struct rec_hasher * h, uint64_t q) {
    return __atomic_load_n(&h->done[q % REC_RING], __ATOMIC_SEQ_CST) != 0;
}

// Wakes the recorder if it sleeps waiting for progress.
static void notify(struct rec_hasher * h) {
    if (!ldb(&h->waiting)) return;
    pthread_mutex_lock(&h->mu);
    pthread_cond_broadcast(&h->progress);
    pthread_mutex_unlock(&h->mu);
}

// ---- the thread ----------------------------------------------------------------------

// The item's bytes are now a contiguous copy at `copy` (gathered in logical
// order): the same hash, summary and sketch, whatever the original strides.
static void item_reads_copy(struct rec_item * it, const uint8_t * copy) {
    const struct tg_tensor * t = it->t;
    it->nb[0] = tg_type_size(t->type);
    it->nb[1] = it->nb[0] * (size_t) (t->ne[0] / tg_blck_size(t->type));
    for (int d = 2; d < 4; d++) it->nb[d] = it->nb[d - 1] * (size_t) t->ne[d - 1];
    it->data = copy;
}

// Bytes of an item the thread copies before hashing it, releasing the
// memory it read at once (a node about to overwrite it waits for the copy,
// not the hashing); larger ones are hashed in place.
#define OWN_MAX (8u << 20)

// The claimed item's bytes, still in the engine's memory, copied into the
// thread's buffer (logical order: hashed like the original), then released.
static void take_bytes(struct rec_hasher * h, uint64_t pos, struct rec_item * it) {
    const unsigned k = (unsigned) (pos % REC_RING);
    if (it->done || !it->data || h->a_end[k]) return;   // nothing to read, or a copy set aside already
    if (it->takeout || (it->vd && it->vdm && tg_trace_vd_memoized(it->t->ne))) return;   // its memo follows the bytes where they are
    const struct tg_tensor * t = it->t;
    const size_t n = tg_trace_gather_data(it->data, t->type, t->ne, it->nb, NULL, 0);
    if (n == 0 || n > OWN_MAX) return;
    if (h->own_cap < n) {
        uint8_t * q = realloc(h->own, n);
        if (!q) return;   // hashed in place
        h->own = q;
        h->own_cap = n;
    }
    if (tg_trace_gather_data(it->data, t->type, t->ne, it->nb, h->own, n) != n) return;
    item_reads_copy(it, h->own);
    __atomic_store_n(&h->released[k], 1, __ATOMIC_SEQ_CST);
}

static void process(struct rec_hasher * h, uint64_t pos) {
    struct rec_item * it = &h->ring[pos % REC_RING];
    int idle = 0;
    while (!__atomic_compare_exchange_n(&it->claim, &idle, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        idle = 0;   // the recorder is copying its bytes aside
        CPU_RELAX();
    }
    if (it->takeout) {   // a node's coming write into KV-cache views: its elements out of them now
        tg_trace_vd_before_write(it->vdm, it->data, it->t->type, it->t->ne, it->nb, it->t);
        it->done = true;
    } else if (it->same >= 0) {
        tg_trace_rec_item_copy(it, &h->ring[it->same]);   // done already (older, and the passes go in order)
    } else {
        take_bytes(h, pos, it);
        tg_trace_rec_item_hash(&h->r->opt, it);
        if (it->view_ns) __atomic_fetch_add(&h->view_ns, it->view_ns, __ATOMIC_RELAXED);
    }
    if (it->pending && !it->takeout) tg_trace_rec_item_frame_result(it);
    __atomic_store_n(&h->done[pos % REC_RING], 1, __ATOMIC_SEQ_CST);
    notify(h);
}

// Appends the RESULT / SKETCH frames of the done items from `written` on, in
// order, in one call to the writer (one lock, one pass of the writer's state
// over to this CPU): between the engine's nodes, while it computes.
static void flush_done(struct rec_hasher * h) {
    const uint8_t * fr[2 * REC_RING];
    size_t len[2 * REC_RING];
    int n = 0;
    uint64_t w = h->written;
    const uint64_t head = ld(&h->head);
    for (; w < head && is_done(h, w); w++) {
        const struct rec_item * it = &h->ring[w % REC_RING];
        if (!it->pending || it->takeout) continue;
        fr[n] = it->frames; len[n++] = TRACE_FRAME_RESULT;
        if (it->n_frames > 1) { fr[n] = it->frames + TRACE_FRAME_RESULT; len[n++] = TRACE_FRAME_SKETCH; }
    }
    if (n) tg_trace_writer_append_frames(h->r->w, fr, len, n);   // an error stays in the writer (detach reports it)
    if (w != h->written) { st(&h->written, w); notify(h); }
}

// Whether the thread may take items now (hash_thread 2 holds it back until
// the recorder waits for it, or stops it).
static bool may_work(const struct rec_hasher * h) { return !h->hold || ldb(&h->kick) || ldb(&h->stop); }

// Nothing for the thread to do: no new items (no EVAL to write) and none
// left behind, or held back.
static bool idle(const struct rec_hasher * h, uint64_t fast, uint64_t slow, uint64_t evald) {
    if (ldb(&h->stop)) return false;
    const uint64_t head = ld(&h->head);
    if (head > evald) return false;
    return !may_work(h) || (head == fast && slow >= fast);
}

// The EVAL records of the items put since *evald, at once (before any
// hashing: the node is in the trace even if the process ends now), those
// whose hash is to come with TG_TRACE_EVAL_PENDING. Returns the head seen.
static uint64_t write_evals(struct rec_hasher * h, uint64_t * evald) {
    const uint64_t head = ld(&h->head);
    for (; *evald < head; ++*evald) {
        const struct rec_item * it = &h->ring[*evald % REC_RING];
        if (it->takeout) continue;   // (no record)
        struct tg_trace_eval e = it->e;
        if (it->pending) e.flags |= TG_TRACE_EVAL_PENDING;
        tg_trace_write_eval(h->r->w, &e);
        if (!it->pending && it->sketched) {   // done when put (a KV-cache view's digest): its sketch now
            struct tg_trace_sketch sk = { .graph_id = e.graph_id, .compute_seq = e.compute_seq, .node = e.node,
                                          .n = TG_TRACE_SKETCH_N, .scheme = it->sketch_scheme };
            memcpy(sk.v, it->sketch, sizeof(sk.v));
            tg_trace_write_sketch(h->r->w, &sk);
        }
    }
    return head;
}

static void * hasher_main(void * arg) {
    struct rec_hasher * h = arg;
    uint64_t fast = 0, slow = 0, evald = 0;   // next item for the first pass, the second, its EVAL
    for (;;) {
        const uint64_t t0 = tg_observe_now_ns();
        const uint64_t ev0 = evald, seen = write_evals(h, &evald);
        uint64_t head = may_work(h) ? seen : fast;
        bool did = evald != ev0;
        for (; fast < head && may_work(h); fast++) {   // items in compute buffers, in order
            const struct rec_item * it = &h->ring[fast % REC_RING];
            if (it->lazy || (it->same >= 0 && !__atomic_load_n(&h->done[it->same], __ATOMIC_SEQ_CST))) continue;
            process(h, fast);
            write_evals(h, &evald);   // nodes that ran meanwhile
            did = true;
        }
        if (!did || fast - h->written >= WRITE_BURST) flush_done(h);
        while (slow < fast && is_done(h, slow)) slow++;
        if (slow < fast && may_work(h)) {   // then one of the others, oldest first
            process(h, slow++);
            did = true;
        }
        if (did) {
            __atomic_fetch_add(&h->busy_ns, tg_observe_now_ns() - t0, __ATOMIC_RELAXED);
            continue;
        }
        if (ldb(&h->stop) && fast == ld(&h->head) && slow >= fast && h->written == fast && evald == fast) break;
        tg_trace_writer_populate_ahead(h->r->w, POPULATE_AHEAD, POPULATE_STEP);   // off the engine's path, while idle
        uint64_t spin0 = t0;   // nothing to do: spin, then sleep until signalled (new items, a
        unsigned k = 0;        // computation beginning), then spin again
        while (idle(h, fast, slow, evald)) {
            CPU_RELAX();
            if (++k % 256 == 0 && tg_observe_now_ns() - spin0 > (ldb(&h->active) ? THREAD_SPIN_NS : THREAD_REST_NS)) {
                pthread_mutex_lock(&h->mu);
                stb(&h->sleeping, true);
                if (idle(h, fast, slow, evald)) pthread_cond_wait(&h->wake, &h->mu);
                stb(&h->sleeping, false);
                pthread_mutex_unlock(&h->mu);
                spin0 = tg_observe_now_ns();
            }
        }
    }
    return NULL;
}

bool tg_trace_rec_hasher_start(struct rec_hasher * h, struct tg_trace_recorder * r) {
    memset(h, 0, sizeof(*h));
    h->r = r;
    h->hold = r->opt.hash_thread == 2;
    if (pthread_mutex_init(&h->mu, NULL) != 0) return false;
    if (pthread_cond_init(&h->wake, NULL) != 0) { pthread_mutex_destroy(&h->mu); return false; }
    if (pthread_cond_init(&h->progress, NULL) != 0) {
        pthread_cond_destroy(&h->wake); pthread_mutex_destroy(&h->mu);
        return false;
    }
    if (pthread_create(&h->thread, NULL, hasher_main, h) != 0) {
        pthread_cond_destroy(&h->progress); pthread_cond_destroy(&h->wake); pthread_mutex_destroy(&h->mu);
        return false;
    }
    return true;
}

void tg_trace_rec_hasher_stop(struct rec_hasher * h) {
    pthread_mutex_lock(&h->mu);
    stb(&h->stop, true);
    pthread_cond_broadcast(&h->wake);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);   // it hashes what is left first
    pthread_cond_destroy(&h->progress);
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->mu);
    free(h->arena);
    free(h->own);
}

// ---- the recorder's side -------------------------------------------------------------------

// Waits until ready(h, arg) holds (the thread's progress).
static void wait_for(struct tg_trace_recorder * r, bool (*ready)(const struct rec_hasher *, uint64_t), uint64_t arg) {
    struct rec_hasher * h = r->hasher;
    if (ready(h, arg)) return;
    const uint64_t t0 = tg_observe_now_ns();
    if (h->hold) {   // let it work until this is done
        stb(&h->kick, true);
        pthread_mutex_lock(&h->mu);
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->mu);
    }
    unsigned k = 0;
    while (!ready(h, arg)) {
        CPU_RELAX();
        if (++k % 256 == 0 && tg_observe_now_ns() - t0 > WAIT_SPIN_NS) {
            pthread_mutex_lock(&h->mu);
            stb(&h->waiting, true);
            while (!ready(h, arg)) pthread_cond_wait(&h->progress, &h->mu);
            stb(&h->waiting, false);
            pthread_mutex_unlock(&h->mu);
        }
    }
    if (h->hold) stb(&h->kick, false);
    r->stats.wait_ns += tg_observe_now_ns() - t0;
}

// Its bytes need not stay: hashed, or copied by the thread.
static bool item_free(const struct rec_hasher * h, uint64_t q) {
    return is_done(h, q) || __atomic_load_n(&h->released[q % REC_RING], __ATOMIC_SEQ_CST) != 0;
}
static bool written_to(const struct rec_hasher * h, uint64_t pos) { return ld((uint64_t *) &h->written) >= pos; }

void tg_trace_rec_hasher_active(struct tg_trace_recorder * r, bool on) {
    struct rec_hasher * h = r->hasher;
    if (!h) return;
    stb(&h->active, on);
    if (on && ldb(&h->sleeping)) {   // awake before the first node ends
        pthread_mutex_lock(&h->mu);
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->mu);
    }
}

void tg_trace_rec_hasher_drain(struct tg_trace_recorder * r) {
    if (r->hasher) wait_for(r, written_to, r->hasher->head);
}

struct rec_item * tg_trace_rec_hasher_slots(struct tg_trace_recorder * r, int * max) {
    struct rec_hasher * h = r->hasher;
    const uint64_t head = h->head;
    const int in_row = (int) (REC_RING - head % REC_RING);   // up to the end of the ring
    if (*max > in_row) *max = in_row;
    if (head + (uint64_t) *max > REC_RING - REC_MARGIN)   // room, and the margin `same` needs
        wait_for(r, written_to, head + (uint64_t) *max - (REC_RING - REC_MARGIN));
    return &h->ring[head % REC_RING];
}

void tg_trace_rec_hasher_put(struct tg_trace_recorder * r, const int * same_as, int n) {
    struct rec_hasher * h = r->hasher;
    const uint64_t head = h->head;
    for (int i = 0; i < n; i++) {
        const unsigned k = (unsigned) ((head + (uint64_t) i) % REC_RING);
        struct rec_item * it = &h->ring[k];
        it->same = same_as[i] >= 0 ? (int32_t) ((head + (uint64_t) same_as[i]) % REC_RING) : -1;
        const bool reads = !it->done && it->data && it->same < 0;
        struct tg_buffer * b = reads ? tg_tensor_buffer(it->t) : NULL;
        // (a coming write taken out ahead goes first: its node waits for it)
        it->lazy = reads && !it->takeout && !(b && tg_buffer_get_usage(b) == TG_BUFFER_USAGE_COMPUTE);
        h->lo[k] = reads ? (uintptr_t) it->data : 0;
        h->hi[k] = reads ? (uintptr_t) it->data + (uintptr_t) it->e.nbytes : 0;
        h->a_end[k] = 0;
        __atomic_store_n(&h->done[k], 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&h->released[k], 0, __ATOMIC_SEQ_CST);
        it->pending = reads || it->same >= 0;   // its EVAL (the thread's first work) says so
    }
    st(&h->head, head + (uint64_t) n);
    if (ldb(&h->sleeping)) {
        pthread_mutex_lock(&h->mu);
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->mu);
    }
}

// Arena space for n bytes for item q at position *at; NULL if there is none
// without waiting for q itself to be written, or n is too large. A copy
// lives from a_at to a_end until its item is written.
static uint8_t * arena_get(struct tg_trace_recorder * r, size_t n, uint64_t q, uint64_t * at) {
    struct rec_hasher * h = r->hasher;
    if (n > REC_ARENA / 4 || (!h->arena && !(h->arena = malloc(REC_ARENA)))) return NULL;
    const uint64_t len = (n + 63) & ~(uint64_t) 63;
    uint64_t p = h->a_head;
    if (p % REC_ARENA + len > REC_ARENA) p += REC_ARENA - p % REC_ARENA;   // not across the end
    for (;;) {
        const uint64_t w = ld(&h->written);
        uint64_t tail = p;   // the oldest copy still in use
        for (uint64_t k = w; k < h->head; k++)
            if (h->a_end[k % REC_RING] && h->a_at[k % REC_RING] < tail) tail = h->a_at[k % REC_RING];
        if (p + len - tail <= REC_ARENA) break;
        if (w >= q) return NULL;   // the space is held by q or newer items: wait for q instead
        wait_for(r, written_to, w + 1);
    }
    h->a_head = p + len;
    *at = p;
    return h->arena + p % REC_ARENA;
}

// Copies queued item q aside into the arena: false if the thread has it or
// there is no room (the caller waits for it instead).
static bool copy_aside(struct tg_trace_recorder * r, uint64_t q) {
    struct rec_hasher * h = r->hasher;
    struct rec_item * it = &h->ring[q % REC_RING];
    const struct tg_tensor * t = it->t;
    if (it->takeout || (it->vd && it->vdm && tg_trace_vd_memoized(t->ne))) return false;   // its memo needs the bytes in place: waited for
    // bytes in logical order (from the tensor: the item's strides are the thread's to change once it has it)
    const size_t n = tg_row_size(t->type, t->ne[0]) * (size_t) t->ne[1] * (size_t) t->ne[2] * (size_t) t->ne[3];
    uint64_t at;
    uint8_t * dst = n ? arena_get(r, n, q, &at) : NULL;
    if (!dst) return false;
    int idle = 0;
    if (!__atomic_compare_exchange_n(&it->claim, &idle, 2, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        h->a_head = at;   // the thread has it: the space back
        return false;
    }
    const bool ok = tg_trace_gather_data(it->data, t->type, t->ne, it->nb, dst, n) == n;
    if (ok) {
        item_reads_copy(it, dst);
        h->a_at[q % REC_RING] = at;
        h->a_end[q % REC_RING] = h->a_head;
        h->lo[q % REC_RING] = h->hi[q % REC_RING] = 0;
        r->stats.n_set_aside++;
    } else {
        h->a_head = at;
    }
    __atomic_store_n(&it->claim, 0, __ATOMIC_SEQ_CST);
    return ok;
}

void tg_trace_rec_hasher_before_write(struct tg_trace_recorder * r, uintptr_t lo, uintptr_t hi) {
    struct rec_hasher * h = r->hasher;
    if (!h || lo >= hi) return;
    // the lines of the next two items' slots that the recorder writes (last written by the thread),
    // fetched for writing while the node computes
    for (int k = 0; k < 2; k++) {
        const char * it = (const char *) &h->ring[(h->head + (uint64_t) k) % REC_RING];
        for (size_t l = 0; l < 512 && l < sizeof(struct rec_item); l += 64) __builtin_prefetch(it + l, 1, 3);
    }
    for (uint64_t q = ld(&h->written); q < h->head; q++) {
        const unsigned k = (unsigned) (q % REC_RING);
        if (h->lo[k] < hi && lo < h->hi[k] && !item_free(h, q) && !copy_aside(r, q)) wait_for(r, item_free, q);
    }
}

_Static_assert(TRACE_FRAME_RESULT + TRACE_FRAME_SKETCH <= REC_ITEM_FRAMES, "REC_ITEM_FRAMES too small");

void tg_trace_rec_item_frame_result(struct rec_item * it) {
    const uint32_t adds = TG_TRACE_EVAL_HASH | TG_TRACE_EVAL_SUMMARY | TG_TRACE_EVAL_SKETCH | TG_TRACE_EVAL_NODATA |
                          TG_TRACE_EVAL_SETDIGEST;
    const struct tg_trace_result res = { .graph_id = it->e.graph_id, .compute_seq = it->e.compute_seq,
                                         .node = it->e.node, .flags = it->e.flags & adds, .hash = it->e.hash,
                                         .sum = it->e.sum };
    tg_trace_frame_result(it->frames, &res);
    it->n_frames = 1;
    if (it->sketched) {
        struct tg_trace_sketch sk = { .graph_id = it->e.graph_id, .compute_seq = it->e.compute_seq,
                                      .node = it->e.node, .n = TG_TRACE_SKETCH_N, .scheme = it->sketch_scheme };
        memcpy(sk.v, it->sketch, sizeof(sk.v));
        tg_trace_frame_sketch(it->frames + TRACE_FRAME_RESULT, &sk);
        it->n_frames = 2;
    }
}
