/* The canonical search's first descent (walk.py), compiled: same inputs, same offsets.
 *
 * Buffers are numbered 0..n-1; s0/s1 are each one's first and last section
 * (inclusive), size/align in the instance's units, rank a permutation (the
 * preorder). Two buffers meet when their section spans intersect. Repeatedly the
 * unplaced buffer with the lowest (min_off, rank) goes to its min_off, and every
 * unplaced buffer it meets rises above it (aligned up). The heap holds each unplaced
 * buffer once, keyed at most its min_off (a raise only writes min_off; a stale entry
 * popped goes back in at its current one), so the first fresh entry popped is the
 * true lowest. Past ``deadline`` (perf_counter seconds; <= 0: none) the unplaced
 * buffers are stacked above the rest in rank order and *cut is set. Returns the
 * height, or -1 when memory runs out. Built on first use by native.py (host C compiler).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define CLOCK_EVERY 4096 /* placements between clock reads */

/* CLOCK_MONOTONIC in seconds: what Python's time.perf_counter() reads on Linux. */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct { int64_t e, r; int64_t x; } item;

static int less(const item *a, const item *b) {
    return a->e < b->e || (a->e == b->e && a->r < b->r);
}

static void push(item *h, int64_t *len, item it) {
    int64_t i = (*len)++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!less(&it, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = it;
}

/* Puts ``it`` at hole i, moved down below its smaller children. */
static void sift_down(item *h, int64_t n, int64_t i, item it) {
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && less(&h[c + 1], &h[c])) c++;
        if (!less(&h[c], &it)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = it;
}

static item pop(item *h, int64_t *len) {
    item top = h[0], last = h[--(*len)];
    if (*len) sift_down(h, *len, 0, last);
    return top;
}

static const int64_t *sort_key;
static int by_start(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (sort_key[x] != sort_key[y]) return sort_key[x] < sort_key[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The buffers x meets, without an adjacency list: those live in x's first section (the
 * members of each section, listed once: as many entries as the buffers span sections) and
 * those starting after it up to x's end (a range of the start order). Where the members would
 * take too much memory (MEMBERS_PER_BUFFER, dense lifetimes), a scan instead: in start order,
 * those from the first whose running maximum of ends reaches x's start up to the last starting
 * at or before x's end, less the ones ending before x starts. On syn_problem(100000, 2) the
 * members visit 9.5 M buffers where the scan visits 90 M (large_problem: 0.8 M, 6.6 M). */
#define MEMBERS_PER_BUFFER 64
static int64_t first_at_least(const int64_t *v, int64_t n, int64_t key) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (v[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* A buffer's state where the walk reads it, by its place in the start order: the scans of the
 * buffers a placement meets read these in (nearly) increasing order, one cache line for
 * what three arrays by index took (syn_problem(100000, 3): 0.55 -> 0.35 CPU-s a walk). */
typedef struct { int64_t mo, align, s1, placed; } node;

static int64_t align_up(int64_t v, int64_t a) { return a == 1 ? v : (v + a - 1) / a * a; }

int64_t arena_walk(int64_t n, const int64_t *s0, const int64_t *s1, const int64_t *size,
                   const int64_t *align, const int64_t *rank, double deadline, int64_t *off, int64_t *cut) {
    int64_t top = 0, len = 0, polls = 0;
    *cut = 0;
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *starts = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *reach = malloc(sizeof(int64_t) * (size_t)(n + 1));
    node *nd = malloc(sizeof(node) * (size_t)(n + 1));
    item *heap = malloc(sizeof(item) * (size_t)(n + 1));  /* one entry per unplaced buffer, by place k */
    if (!order || !starts || !reach || !nd || !heap) {
        free(order); free(starts); free(reach); free(nd); free(heap);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) order[i] = i;
    sort_key = s0;
    qsort(order, (size_t)n, sizeof(int64_t), by_start);
    int64_t sections = 0, spans = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t y = order[k];
        starts[k] = s0[y];
        reach[k] = k && reach[k - 1] > s1[y] ? reach[k - 1] : s1[y];
        if (s1[y] + 1 > sections) sections = s1[y] + 1;
        spans += s1[y] - s0[y] + 1;
        node v = {0, align[y], s1[y], 0};
        nd[k] = v;
    }
    /* members[first[s] .. first[s + 1]): the buffers live in section s, by place */
    int64_t *first = NULL, *members = NULL;
    if (spans <= MEMBERS_PER_BUFFER * n) {
        first = calloc((size_t)sections + 2, sizeof(int64_t));
        members = malloc(sizeof(int64_t) * (size_t)(spans + 1));
        if (!first || !members) {
            free(first); free(members);
            first = members = NULL;
        } else {
            for (int64_t y = 0; y < n; y++)
                for (int64_t t = s0[y]; t <= s1[y]; t++) first[t + 2]++;
            for (int64_t t = 2; t <= sections + 1; t++) first[t] += first[t - 1];
            for (int64_t k = 0; k < n; k++)  /* first[t + 1]: the next free entry of section t */
                for (int64_t t = starts[k]; t <= nd[k].s1; t++) members[first[t + 1]++] = k;
        }
    }
    for (int64_t k = 0; k < n; k++) {
        item it = {0, rank[order[k]], k};
        push(heap, &len, it);
    }
    while (len) {
        if (deadline > 0 && ++polls % CLOCK_EVERY == 0 && now() > deadline) {
            *cut = 1;
            break;
        }
        int64_t x = heap[0].x;
        if (heap[0].e != nd[x].mo) {  /* raised since it was pushed: back in at its min_off, in place */
            item up = {nd[x].mo, heap[0].r, x};  /* (one sift, not a pop and a push: ~10 a buffer on syn_problem) */
            sift_down(heap, len, 0, up);
            continue;
        }
        item it = pop(heap, &len);
        int64_t sx = starts[x], ex = nd[x].s1;
        off[order[x]] = it.e;
        nd[x].placed = 1;
        int64_t t = it.e + size[order[x]];
        if (t > top) top = t;
        int64_t hi = first_at_least(starts, n, ex + 1);
        if (members) {
            for (int64_t k = first[sx]; k < first[sx + 1]; k++) {
                node *v = &nd[members[k]];
                if (v->placed) continue;
                int64_t ty = align_up(t, v->align);
                if (v->mo < ty) v->mo = ty;
            }
        }
        for (int64_t k = members ? first_at_least(starts, n, sx + 1) : first_at_least(reach, n, sx); k < hi; k++) {
            node *v = &nd[k];
            if (v->placed || v->s1 < sx) continue;
            int64_t ty = align_up(t, v->align);
            if (v->mo < ty) v->mo = ty;
        }
    }
    if (*cut) {  /* what is left, in rank order (pop order with every key 0), stacked */
        for (int64_t k = 0; k < len; k++) heap[k].e = 0;
        for (int64_t k = len / 2; k-- > 0;) sift_down(heap, len, k, heap[k]);  /* heapify */
        while (len) {
            int64_t y = order[pop(heap, &len).x];
            off[y] = align_up(top, align[y]);
            top = off[y] + size[y];
        }
    }
    free(order); free(starts); free(reach); free(nd); free(heap); free(first); free(members);
    return top;
}
