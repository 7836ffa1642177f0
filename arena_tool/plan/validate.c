/* validate.py's overlap sweep, compiled: the same pairs in O(n log n) (issue 39: the Python
 * sweep took ~1 CPU-s at 100,000 buffers, past the time limit's end; this one ~0.02).
 *
 * Buffers with size > 0 come alive in (start, index) order; before one does, those with
 * end < its start leave. The live set is kept in (offset, index) order as a Fenwick tree of
 * counts over each buffer's rank in that order, so the live buffer just below a new one and
 * the one just above it are found by two prefix sums and two descents. A new buffer is
 * compared with those two only; one that overlaps either is reported and left out of the live
 * set, so the set stays overlap-free and every plan with an overlap reports at least one pair.
 * Shares no code with the planners. Built on first use by core/native.py (host C compiler).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* idx[0, m), in ascending index order, sorted stably by key[idx[k]]: (key, index) order. An LSD
 * radix sort over 11-bit digits of key - min, as many as max - min needs (issue 39: qsort with a
 * comparator took most of this sweep, ~0.03 CPU-s at 100,000 buffers). 0, or -1 out of memory. */
static int sorted_by(int64_t *idx, int64_t m, const int64_t *key) {
    if (m < 2) return 0;
    int64_t lo = key[idx[0]], hi = lo;
    for (int64_t k = 1; k < m; k++) {
        int64_t v = key[idx[k]];
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)m), *src = idx, *dst = tmp;
    if (!tmp) return -1;
    for (int shift = 0; shift < 64 && (span >> shift); shift += 11) {
        int64_t count[2049] = {0};
        for (int64_t k = 0; k < m; k++) count[(((uint64_t)key[src[k]] - (uint64_t)lo) >> shift & 2047) + 1]++;
        for (int d = 0; d < 2048; d++) count[d + 1] += count[d];
        for (int64_t k = 0; k < m; k++) dst[count[((uint64_t)key[src[k]] - (uint64_t)lo) >> shift & 2047]++] = src[k];
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx) memcpy(idx, src, sizeof(int64_t) * (size_t)m);
    free(tmp);
    return 0;
}

/* Fenwick tree over ranks 0..m-1 (tree[1..m]), counts of live buffers. */
static void fw_add(int64_t *tree, int64_t m, int64_t r, int64_t d) {
    for (int64_t i = r + 1; i <= m; i += i & -i) tree[i] += d;
}

static int64_t fw_prefix(const int64_t *tree, int64_t r) {  /* live ranks < r */
    int64_t s = 0;
    for (int64_t i = r; i > 0; i -= i & -i) s += tree[i];
    return s;
}

static int64_t fw_kth(const int64_t *tree, int64_t m, int64_t k, int64_t top) {  /* rank of the k-th live (1-based) */
    int64_t pos = 0;
    for (int64_t step = top; step; step >>= 1) {
        if (pos + step <= m && tree[pos + step] < k) {
            pos += step;
            k -= tree[pos];
        }
    }
    return pos;
}

/* Writes up to 2 n pairs (i, j) into pairs[2 k], pairs[2 k + 1]; returns their number, or -1
 * when memory runs out. start/end inclusive ops, offsets in bytes. */
int64_t arena_overlaps(int64_t n, const int64_t *start, const int64_t *end, const int64_t *size,
                       const int64_t *off, int64_t *pairs) {
    int64_t m = 0;
    int64_t *items = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *by_off = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *by_end = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *rank = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *tree = calloc((size_t)n + 2, sizeof(int64_t));
    char *inside = calloc((size_t)n + 1, 1);
    int64_t found = 0;
    if (!items || !by_off || !by_end || !rank || !tree || !inside) {
        found = -1;
        goto done;
    }
    for (int64_t i = 0; i < n; i++)
        if (size[i] > 0) items[m++] = i;
    for (int64_t k = 0; k < m; k++) by_off[k] = by_end[k] = items[k];
    if (sorted_by(by_off, m, off) || sorted_by(by_end, m, end) || sorted_by(items, m, start)) {
        found = -1;
        goto done;
    }
    for (int64_t k = 0; k < m; k++) rank[by_off[k]] = k;
    int64_t top = 1;
    while (top * 2 <= m) top *= 2;
    int64_t live = 0, e = 0;
    for (int64_t k = 0; k < m; k++) {
        int64_t i = items[k];
        while (e < m && end[by_end[e]] < start[i]) {
            int64_t j = by_end[e++];
            if (inside[j]) {
                fw_add(tree, m, rank[j], -1);
                live--;
            }
        }
        int64_t r = rank[i], below = fw_prefix(tree, r), bad = 0;
        int64_t lo = off[i], hi = off[i] + size[i];
        int64_t near[2] = {below ? by_off[fw_kth(tree, m, below, top)] : -1,
                           below < live ? by_off[fw_kth(tree, m, below + 1, top)] : -1};
        for (int h = 0; h < 2; h++) {
            int64_t j = near[h];
            if (j >= 0 && off[j] < hi && lo < off[j] + size[j]) {
                pairs[2 * found] = i < j ? i : j;
                pairs[2 * found + 1] = i < j ? j : i;
                found++;
                bad = 1;
            }
        }
        if (bad) continue;
        fw_add(tree, m, r, 1);
        live++;
        inside[i] = 1;
    }
done:
    free(items); free(by_off); free(by_end); free(rank); free(tree); free(inside);
    return found;
}
