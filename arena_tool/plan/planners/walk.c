/* The canonical search's first descent (walk.py), compiled: same inputs, same offsets.
 *
 * Buffers are numbered 0..n-1; s0/s1 are each one's first and last section
 * (inclusive), size/align in the instance's units, rank a permutation (the
 * preorder). Two buffers meet when their section spans intersect. Repeatedly the
 * unplaced buffer with the lowest (min_off, rank) goes to its min_off, and every
 * unplaced buffer it meets rises above it (aligned up). Returns the height, or -1
 * when memory runs out. Built on first use by native.py (host C compiler).
 */
#include <stdint.h>
#include <stdlib.h>

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

static item pop(item *h, int64_t *len) {
    item top = h[0], last = h[--(*len)];
    int64_t i = 0, n = *len;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && less(&h[c + 1], &h[c])) c++;
        if (!less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

static const int64_t *sort_key;
static int by_start(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (sort_key[x] != sort_key[y]) return sort_key[x] < sort_key[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Adjacency in CSR form: pass 0 counts each buffer's neighbours, pass 1 fills them. */
static int neighbours(int64_t n, const int64_t *s0, const int64_t *s1, int64_t **start_out, int64_t **adj_out) {
    int64_t *order = malloc(sizeof(int64_t) * (n ? n : 1));
    int64_t *active = malloc(sizeof(int64_t) * (n ? n : 1));
    int64_t *deg = calloc((size_t)n + 1, sizeof(int64_t));
    int64_t *fill = calloc((size_t)n + 1, sizeof(int64_t));
    int64_t *adj = NULL;
    if (!order || !active || !deg || !fill) goto fail;
    for (int64_t i = 0; i < n; i++) order[i] = i;
    sort_key = s0;
    qsort(order, (size_t)n, sizeof(int64_t), by_start);
    for (int pass = 0; pass < 2; pass++) {
        int64_t na = 0;
        for (int64_t k = 0; k < n; k++) {
            int64_t i = order[k], keep = 0;
            for (int64_t a = 0; a < na; a++)
                if (s1[active[a]] >= s0[i]) active[keep++] = active[a];
            na = keep;
            for (int64_t a = 0; a < na; a++) {
                int64_t j = active[a];
                if (pass == 0) { deg[i + 1]++; deg[j + 1]++; }
                else { adj[fill[i]++] = j; adj[fill[j]++] = i; }
            }
            active[na++] = i;
        }
        if (pass == 0) {
            for (int64_t i = 0; i < n; i++) deg[i + 1] += deg[i];
            adj = malloc(sizeof(int64_t) * (deg[n] ? deg[n] : 1));
            if (!adj) goto fail;
            for (int64_t i = 0; i < n; i++) fill[i] = deg[i];
        }
    }
    free(order); free(active); free(fill);
    *start_out = deg;
    *adj_out = adj;
    return 0;
fail:
    free(order); free(active); free(deg); free(fill); free(adj);
    return -1;
}

int64_t arena_walk(int64_t n, const int64_t *s0, const int64_t *s1, const int64_t *size,
                   const int64_t *align, const int64_t *rank, int64_t *off) {
    int64_t *start, *adj, top = 0, len = 0;
    if (neighbours(n, s0, s1, &start, &adj)) return -1;
    int64_t *mo = calloc((size_t)n + 1, sizeof(int64_t));
    item *heap = malloc(sizeof(item) * (size_t)(n + start[n] + 1));
    if (!mo || !heap) { free(mo); free(heap); free(start); free(adj); return -1; }
    for (int64_t i = 0; i < n; i++) {
        off[i] = -1;
        item it = {0, rank[i], i};
        push(heap, &len, it);
    }
    while (len) {
        item it = pop(heap, &len);
        int64_t x = it.x;
        if (off[x] >= 0 || it.e != mo[x]) continue;
        off[x] = it.e;
        int64_t t = it.e + size[x];
        if (t > top) top = t;
        for (int64_t k = start[x]; k < start[x + 1]; k++) {
            int64_t y = adj[k];
            int64_t ty = (t + align[y] - 1) / align[y] * align[y];
            if (off[y] < 0 && mo[y] < ty) {
                mo[y] = ty;
                item up = {ty, rank[y], y};
                push(heap, &len, up);
            }
        }
    }
    free(mo); free(heap); free(start); free(adj);
    return top;
}
