/* The decision search (search.py's Search), compiled: same inputs, same tree.
 *
 * "Does every buffer fit under capacity C?" by the canonical depth-first search of
 * search.py: each node places the unplaced buffer with the lowest (min_off, rank)
 * after the last placement at its min_off, under the same rules (canonical,
 * dominance, sections, hatless, floor, decompose, cover; a bit each in ``rules``),
 * visiting the same nodes in the same order, so status, node count and offsets
 * equal the Python reference's (tests/plan/planners/test_search_native.py). Not
 * here: fixed buffers and mixed alignments (the padding rule); search.py runs those
 * itself. Regroup (``heuristic``): given the preorder's key columns, each group a
 * decompose splits off is re-ranked by them (T on the remaining loads) and searched
 * from the floor, as search.py's _rerank.
 *
 * What makes a node cheap where the Python one scans its part: the unplaced buffers
 * of a pool are a treap keyed (min_off, rank), each node carrying the least
 * min_off + size of its subtree (the dominance cap at the root); the sections'
 * unplaced loads are a segment tree (range add, range max, first/last section at
 * or above a value), and a Fenwick tree counts the unplaced buffers by first
 * section (a decompose sizes its groups by it). Numbers are in the instance's
 * scaled units. Built on first use by native.py with walk.c.
 */
#define _POSIX_C_SOURCE 199309L
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BIG ((int64_t)1 << 62)
#define CLOCK_NODES 1 /* nodes between clock reads */

enum { R_CANONICAL = 1, R_DOMINANCE = 2, R_SECTIONS = 4, R_HATLESS = 8, R_FLOOR = 16, R_DECOMPOSE = 32,
       R_COVER = 64 };
enum { FOUND = 0, INFEASIBLE = 1, ABORTED = 2, NOMEM = 3 };

typedef struct { int64_t *v; int64_t len, cap; } vec;

typedef struct {
    int kind; /* 0: a node (search.py's _Node), 1: independent groups (_AllOf) */
    int hat;
    int64_t pool, sa, sb, cap, ae, ar, top_sum, gate_e, gate_first, gate_last, gate_size, mark;
    int64_t g_at, ng, next, last_off, last_rank, gm_mark, fresh;
} frame;

typedef struct {
    int64_t n, ns, C, limit, nodes;
    double deadline;
    int canonical, dominance, sections, hatless, floor_, decompose, cover, level_check, aligned;
    const int64_t *size, *align, *s0, *s1, *keys, *is_t;
    int64_t *rank, *tv, *scratch, ncols;
    int64_t *ovl_at, *mem_at, *order, *pos, *first_pos, *sec_sum, *sec_top, *cuts, *mo, *off, *wit;
    int32_t *ovl, *mem;
    char *unplaced;
    int64_t *tmax, *tlazy, tn; /* segment tree over sections */
    int64_t *fen;              /* Fenwick tree over start-order positions: 1 per unplaced buffer */
    int64_t *fill;             /* setup: entries written per row */
    int64_t *tl, *tr, *dm;     /* treap by buffer */
    uint32_t *pri;
    vec proot, motrail, wittrail, tops, trail, outs, groups, gmembers, rktrail;
    frame *fr;
    int64_t nfr, capfr;
    jmp_buf jb;
} S;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void push(S *s, vec *a, int64_t x) {
    if (a->len == a->cap) {
        int64_t c = a->cap ? 2 * a->cap : 256;
        int64_t *p = realloc(a->v, sizeof(int64_t) * (size_t)c);
        if (!p) longjmp(s->jb, NOMEM);
        a->v = p;
        a->cap = c;
    }
    a->v[a->len++] = x;
}

/* ------------------------------------------------------------------ treap of a pool */

static uint32_t mix(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return (uint32_t)x;
}

static int kless(const S *s, int64_t a, int64_t b) {
    return s->mo[a] < s->mo[b] || (s->mo[a] == s->mo[b] && s->rank[a] < s->rank[b]);
}

static void upd(S *s, int64_t t) {
    int64_t m = s->mo[t] + s->size[t];
    if (s->tl[t] >= 0 && s->dm[s->tl[t]] < m) m = s->dm[s->tl[t]];
    if (s->tr[t] >= 0 && s->dm[s->tr[t]] < m) m = s->dm[s->tr[t]];
    s->dm[t] = m;
}

static int64_t merge(S *s, int64_t a, int64_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    if (s->pri[a] > s->pri[b]) {
        s->tr[a] = merge(s, s->tr[a], b);
        upd(s, a);
        return a;
    }
    s->tl[b] = merge(s, a, s->tl[b]);
    upd(s, b);
    return b;
}

static void split(S *s, int64_t t, int64_t y, int64_t *l, int64_t *r) {
    if (t < 0) { *l = *r = -1; return; }
    if (kless(s, t, y)) {
        split(s, s->tr[t], y, &s->tr[t], r);
        *l = t;
    } else {
        split(s, s->tl[t], y, l, &s->tl[t]);
        *r = t;
    }
    upd(s, t);
}

static void tinsert(S *s, int64_t pool, int64_t y) {
    int64_t l, r;
    s->tl[y] = s->tr[y] = -1;
    upd(s, y);
    split(s, s->proot.v[pool], y, &l, &r);
    s->proot.v[pool] = merge(s, merge(s, l, y), r);
}

static int64_t erase_rec(S *s, int64_t t, int64_t y) {
    if (t == y) return merge(s, s->tl[t], s->tr[t]);
    if (kless(s, y, t)) s->tl[t] = erase_rec(s, s->tl[t], y);
    else s->tr[t] = erase_rec(s, s->tr[t], y);
    upd(s, t);
    return t;
}

static void terase(S *s, int64_t pool, int64_t y) { s->proot.v[pool] = erase_rec(s, s->proot.v[pool], y); }

/* The buffer with the least key above (e, r), or -1. */
static int64_t succ(const S *s, int64_t t, int64_t e, int64_t r) {
    int64_t best = -1;
    while (t >= 0) {
        if (s->mo[t] > e || (s->mo[t] == e && s->rank[t] > r)) { best = t; t = s->tl[t]; }
        else t = s->tr[t];
    }
    return best;
}

/* ------------------------------------------------------------------ segment tree of section loads */

static void tbuild(S *s, int64_t v, int64_t lo, int64_t hi) {
    s->tlazy[v] = 0;
    if (lo == hi) { s->tmax[v] = s->sec_sum[lo]; return; }
    int64_t mid = (lo + hi) / 2;
    tbuild(s, 2 * v, lo, mid);
    tbuild(s, 2 * v + 1, mid + 1, hi);
    s->tmax[v] = s->tmax[2 * v] > s->tmax[2 * v + 1] ? s->tmax[2 * v] : s->tmax[2 * v + 1];
}

static void tadd(S *s, int64_t v, int64_t lo, int64_t hi, int64_t l, int64_t r, int64_t d) {
    if (hi < l || lo > r) return;
    if (l <= lo && hi <= r) {
        s->tmax[v] += d;
        if (lo != hi) s->tlazy[v] += d;
        return;
    }
    int64_t mid = (lo + hi) / 2;
    tadd(s, 2 * v, lo, mid, l, r, d);
    tadd(s, 2 * v + 1, mid + 1, hi, l, r, d);
    int64_t m = s->tmax[2 * v] > s->tmax[2 * v + 1] ? s->tmax[2 * v] : s->tmax[2 * v + 1];
    s->tmax[v] = m + s->tlazy[v];
}

static int64_t tq(const S *s, int64_t v, int64_t lo, int64_t hi, int64_t l, int64_t r) {
    if (hi < l || lo > r) return -BIG;
    if (l <= lo && hi <= r) return s->tmax[v];
    int64_t mid = (lo + hi) / 2;
    int64_t a = tq(s, 2 * v, lo, mid, l, r), b = tq(s, 2 * v + 1, mid + 1, hi, l, r);
    return (a > b ? a : b) + s->tlazy[v];
}

/* First (dir 0) or last (dir 1) section of [l, r] whose load is >= thr, or -1; acc: the
 * pending adds of v's ancestors. */
static int64_t tfind(const S *s, int64_t v, int64_t lo, int64_t hi, int64_t l, int64_t r, int64_t acc,
                     int64_t thr, int dir) {
    if (hi < l || lo > r || acc + s->tmax[v] < thr) return -1;
    if (lo == hi) return lo;
    acc += s->tlazy[v];
    int64_t mid = (lo + hi) / 2, x;
    if (!dir) {
        x = tfind(s, 2 * v, lo, mid, l, r, acc, thr, dir);
        return x >= 0 ? x : tfind(s, 2 * v + 1, mid + 1, hi, l, r, acc, thr, dir);
    }
    x = tfind(s, 2 * v + 1, mid + 1, hi, l, r, acc, thr, dir);
    return x >= 0 ? x : tfind(s, 2 * v, lo, mid, l, r, acc, thr, dir);
}

static int64_t qmax(const S *s, int64_t l, int64_t r) { return tq(s, 1, 0, s->ns - 1, l, r); }
static int64_t first_ge(const S *s, int64_t l, int64_t r, int64_t t) { return tfind(s, 1, 0, s->ns - 1, l, r, 0, t, 0); }
static int64_t last_ge(const S *s, int64_t l, int64_t r, int64_t t) { return tfind(s, 1, 0, s->ns - 1, l, r, 0, t, 1); }

/* ------------------------------------------------------------------ Fenwick tree: unplaced by start */

static void fadd(S *s, int64_t i, int64_t d) { for (i++; i <= s->n; i += i & -i) s->fen[i] += d; }
static int64_t fsum(const S *s, int64_t i) { int64_t t = 0; for (; i > 0; i -= i & -i) t += s->fen[i]; return t; }
/* Unplaced buffers whose first section is in [a, b]. */
static int64_t unplaced_in(const S *s, int64_t a, int64_t b) { return fsum(s, s->first_pos[b + 1]) - fsum(s, s->first_pos[a]); }

/* ------------------------------------------------------------------ the rules */

static void count(S *s) {
    if (++s->nodes > s->limit) longjmp(s->jb, ABORTED);
    if (s->deadline > 0 && s->nodes % CLOCK_NODES == 0 && now() > s->deadline) longjmp(s->jb, ABORTED);
}

/* [cover] a section whose unplaced load exactly fills the room above the level needs a
 * candidate at exactly that level spanning it (search.py's _uncovered_tight). */
static int uncovered_tight(const S *s, int64_t root, int64_t ae, int64_t ar, int64_t cap, int64_t sa, int64_t sb,
                           int64_t last_off) {
    int64_t lvl = last_off > 0 ? last_off : 0, need = s->C - lvl;
    int64_t first = succ(s, root, ae, ar);
    if (first < 0 || s->mo[first] >= cap) return 0;
    int at_level = lvl < cap;
    for (int64_t j = sa; j <= sb; j++) {
        j = first_ge(s, j, sb, need);
        if (j < 0) return 0;
        if (s->sec_sum[j] != need) continue;
        int covered = 0;
        if (at_level)
            for (int64_t k = s->mem_at[j]; k < s->mem_at[j + 1]; k++) {
                int64_t y = s->mem[k];
                if (s->unplaced[y] && s->mo[y] == lvl && (lvl > ae || (lvl == ae && s->rank[y] > ar))) {
                    covered = 1;
                    break;
                }
            }
        if (!covered) return 1;
    }
    return 0;
}

/* Steps 1-5 of search.py's _open: the node for ``pool`` after (lo, lr) in *f, or 0 when refuted. */
static int open_node(S *s, int64_t pool, int64_t sa, int64_t sb, int64_t lo, int64_t lr, frame *f) {
    count(s);
    int64_t top = (s->level_check || s->cover) ? qmax(s, sa, sb) : 0;
    if (s->level_check && lo + top > s->C) return 0;
    int64_t root = s->proot.v[pool];
    int64_t cap = s->dominance && root >= 0 ? s->dm[root] : BIG;
    int64_t ae = s->canonical ? lo : -BIG, ar = s->canonical ? lr : -BIG;
    if (s->cover && top >= s->C - (lo > 0 ? lo : 0) && uncovered_tight(s, root, ae, ar, cap, sa, sb, lo)) return 0;
    memset(f, 0, sizeof *f);
    f->kind = 0;
    f->pool = pool; f->sa = sa; f->sb = sb; f->cap = cap; f->ae = ae; f->ar = ar;
    f->top_sum = s->cover ? top : 0;
    f->gate_e = -1; f->gate_size = -1;
    return 1;
}

static int rewitness(S *s, int64_t sec, int64_t old) {
    push(s, &s->wittrail, sec);
    push(s, &s->wittrail, old);
    int64_t thr = s->C - s->sec_sum[sec];
    for (int64_t k = s->mem_at[sec]; k < s->mem_at[sec + 1]; k++) {
        int64_t y = s->mem[k];
        if (s->unplaced[y] && s->mo[y] <= thr) { s->wit[sec] = y; return 1; }
    }
    s->wit[sec] = -1;
    return 0;
}

static int witnesses(const S *s, int64_t y) {
    for (int64_t q = s->s0[y]; q <= s->s1[y]; q++)
        if (s->wit[q] == y) return 1;
    return 0;
}

enum { T_PLACE = 0, T_SPLIT = 1, T_RANK = 2 };
#define TRAIL 6 /* int64s per trail entry: kind, x or out_at, tops_at or out_len, k, k2, pool */

/* x at o: the state change, on the trail; 1 when some boundary in x's span lost its last crossing buffer. */
static int commit(S *s, int64_t x, int64_t o, int64_t pool) {
    int64_t a0 = s->s0[x], a1 = s->s1[x] + 1, sx = s->size[x], top = o + sx;
    terase(s, pool, x);
    fadd(s, s->pos[x], -1);
    push(s, &s->trail, T_PLACE);
    push(s, &s->trail, x);
    push(s, &s->trail, s->tops.len);
    push(s, &s->trail, s->motrail.len);
    push(s, &s->trail, s->wittrail.len);
    push(s, &s->trail, pool);
    for (int64_t q = a0; q < a1; q++) push(s, &s->tops, s->sec_top[q]);
    s->unplaced[x] = 0;
    s->off[x] = o;
    for (int64_t q = a0; q < a1; q++) {
        s->sec_sum[q] -= sx;
        if (s->sec_top[q] < top) s->sec_top[q] = top;
    }
    tadd(s, 1, 0, s->ns - 1, a0, a1 - 1, -sx);
    int zero = 0;
    for (int64_t b = a0; b < a1 - 1; b++)
        if (--s->cuts[b] == 0) zero = 1;
    return zero;
}

/* x's unplaced time-neighbours rest at or above top now (search.py's _raise_neighbours). */
static int raise_neighbours(S *s, int64_t x, int64_t top, int64_t pool, int *hat) {
    *hat = 1;
    for (int64_t k = s->ovl_at[x]; k < s->ovl_at[x + 1]; k++) {
        int64_t y = s->ovl[k];
        if (!s->unplaced[y]) continue;
        *hat = 0;
        int64_t m = s->mo[y];
        int64_t t = s->aligned ? top : (top + s->align[y] - 1) / s->align[y] * s->align[y];
        if (m >= t) continue;
        push(s, &s->motrail, y);
        push(s, &s->motrail, m);
        terase(s, pool, y);
        s->mo[y] = t;
        tinsert(s, pool, y);
        if (t + s->size[y] > s->C) return 0;
        if (s->floor_) {
            if (!witnesses(s, y)) continue;
            int64_t mx = -BIG;
            for (int64_t q = s->s0[y]; q <= s->s1[y]; q++)
                if (s->sec_sum[q] > mx) mx = s->sec_sum[q];
            if (t + mx <= s->C) continue;
            for (int64_t q = s->s0[y]; q <= s->s1[y]; q++)
                if (s->wit[q] == y && t + s->sec_sum[q] > s->C && !rewitness(s, q, y)) return 0;
        }
    }
    return 1;
}

/* Step 7: x at o and the rules' checks; *hat: x overlaps no unplaced buffer, *zero: a cut emptied. */
static int place(S *s, int64_t x, int64_t o, int64_t pool, int *hat, int *zero) {
    *zero = commit(s, x, o, pool);
    int ok = 1;
    if (s->sections)
        for (int64_t q = s->s0[x]; q <= s->s1[x] && ok; q++)
            if (s->sec_sum[q] && s->sec_top[q] + s->sec_sum[q] > s->C) ok = 0;
    if (ok && s->floor_ && witnesses(s, x))
        for (int64_t q = s->s0[x]; q <= s->s1[x] && ok; q++)
            if (s->wit[q] == x && s->sec_sum[q] && !rewitness(s, q, x)) ok = 0;
    if (!ok) {
        *hat = 1;
        for (int64_t k = s->ovl_at[x]; k < s->ovl_at[x + 1]; k++)
            if (s->unplaced[s->ovl[k]]) { *hat = 0; break; }
        return 0;
    }
    return raise_neighbours(s, x, o + s->size[x], pool, hat);
}

static void undo_to(S *s, int64_t mark) {
    while (s->trail.len > mark * TRAIL) {
        int64_t *e = s->trail.v + s->trail.len - TRAIL;
        int64_t kind = e[0], pool = e[5];
        s->trail.len -= TRAIL;
        if (kind == T_RANK) {  /* a regroup: the old ranks */
            for (int64_t k = e[1]; k < s->rktrail.len; k += 2) s->rank[s->rktrail.v[k]] = s->rktrail.v[k + 1];
            s->rktrail.len = e[1];
            continue;
        }
        if (kind == T_SPLIT) {  /* a decompose: its groups go back into the pool */
            for (int64_t k = e[1]; k < e[1] + e[2]; k++) tinsert(s, pool, s->outs.v[k]);
            s->outs.len = e[1];
            continue;
        }
        int64_t x = e[1], tops_at = e[2], k = e[3], k2 = e[4];
        while (s->motrail.len > k) {
            int64_t m = s->motrail.v[--s->motrail.len], y = s->motrail.v[--s->motrail.len];
            terase(s, pool, y);
            s->mo[y] = m;
            tinsert(s, pool, y);
        }
        while (s->wittrail.len > k2) {
            int64_t w = s->wittrail.v[--s->wittrail.len], q = s->wittrail.v[--s->wittrail.len];
            s->wit[q] = w;
        }
        int64_t a0 = s->s0[x], a1 = s->s1[x] + 1, sx = s->size[x];
        for (int64_t q = a0; q < a1; q++) {
            s->sec_sum[q] += sx;
            s->sec_top[q] = s->tops.v[tops_at + q - a0];
        }
        s->tops.len = tops_at;
        tadd(s, 1, 0, s->ns - 1, a0, a1 - 1, sx);
        for (int64_t b = a0; b < a1 - 1; b++) s->cuts[b]++;
        s->unplaced[x] = 1;
        s->off[x] = -1;
        fadd(s, s->pos[x], 1);
        tinsert(s, pool, x);
    }
}

static int64_t trail_len(const S *s) { return s->trail.len / TRAIL; }

/* [decompose] search.py's _split: the pool's buffers fall into the segments between the
 * boundaries of x's span no unplaced buffer crosses; the largest keeps the pool, the
 * others leave it (on the trail) for pools of their own. */
static void split_node(S *s, frame *f, int64_t x, int64_t e, int64_t r, frame *child) {
    int64_t g_at = s->groups.len, gm_mark = s->gmembers.len, lo = f->sa, ng = 0;
    int64_t best = -1, best_n = -1;
    for (int64_t b = s->s0[x]; b <= s->s1[x]; b++) {
        int64_t a, z;
        if (b < s->s1[x]) {
            if (s->cuts[b]) continue;
            a = lo; z = b; lo = b + 1;
        } else {
            a = lo; z = f->sb;
        }
        int64_t cnt = unplaced_in(s, a, z);
        if (!cnt) continue;
        if (cnt > best_n) { best_n = cnt; best = ng; }
        push(s, &s->groups, -1);
        push(s, &s->groups, cnt);
        push(s, &s->groups, a);
        push(s, &s->groups, z);
        ng++;
    }
    int64_t out_at = s->outs.len, fresh = s->ncols > 0 && ng > 1;
    for (int64_t g = 0; g < ng; g++) {
        int64_t *gr = s->groups.v + g_at + 4 * g;
        if (g == best && !fresh) { gr[1] = -1; continue; }
        gr[0] = s->gmembers.len;
        for (int64_t p = s->first_pos[gr[2]]; p < s->first_pos[gr[3] + 1]; p++) {
            int64_t y = s->order[p];
            if (!s->unplaced[y]) continue;
            push(s, &s->gmembers, y);
            push(s, &s->outs, y);
        }
    }
    if (s->outs.len > out_at) {
        for (int64_t k = out_at; k < s->outs.len; k++) terase(s, f->pool, s->outs.v[k]);
        push(s, &s->trail, T_SPLIT);
        push(s, &s->trail, out_at);
        push(s, &s->trail, s->outs.len - out_at);
        push(s, &s->trail, 0);
        push(s, &s->trail, 0);
        push(s, &s->trail, f->pool);
    }
    memset(child, 0, sizeof *child);
    child->kind = 1;
    child->pool = f->pool;
    child->g_at = g_at; child->ng = ng; child->next = 0;
    child->last_off = fresh ? -1 : e; child->last_rank = fresh ? -1 : r; child->gm_mark = gm_mark;
    child->fresh = fresh;
}

/* Steps 6-9 over the node's remaining candidates: 0 none left, 1 the last buffer placed,
 * 2 a child node in *child, 3 child groups in *child. */
static int advance(S *s, int64_t fi, frame *child) {
    frame *f = &s->fr[fi];
    for (;;) {
        int64_t x = succ(s, s->proot.v[f->pool], f->ae, f->ar);
        if (x < 0) break;
        int64_t e = s->mo[x], r = s->rank[x];
        if (e >= f->cap) break;
        f->ae = e; f->ar = r;
        if (s->cover && e + f->top_sum > s->C) {
            if (e != f->gate_e) {
                f->gate_e = e;
                f->gate_size = -1;
                f->gate_first = first_ge(s, f->sa, f->sb, s->C - e + 1);
                f->gate_last = last_ge(s, f->sa, f->sb, s->C - e + 1);
            }
            if (s->s0[x] > f->gate_first || s->s1[x] < f->gate_last) continue;
            if (f->gate_size < 0) f->gate_size = qmax(s, f->sa, f->sb) - (s->C - e);
            if (s->size[x] < f->gate_size) continue;
        }
        int64_t mark = trail_len(s);
        int hat, zero;
        if (place(s, x, e, f->pool, &hat, &zero)) {
            if (s->proot.v[f->pool] < 0) return 1;
            f->mark = mark; f->hat = hat;
            if (s->decompose && zero) { split_node(s, f, x, e, r, child); return 3; }
            if (open_node(s, f->pool, f->sa, f->sb, e, r, child)) return 2;
        }
        undo_to(s, mark);
        if (s->hatless && hat) break;
    }
    return 0;
}

static const S *sort_state;
static int cmp_keys(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    const S *s = sort_state;
    for (int64_t c = 0; c < s->ncols; c++) {
        int64_t kx = s->is_t[c] ? s->tv[x] : s->keys[c * s->n + x], ky = s->is_t[c] ? s->tv[y] : s->keys[c * s->n + y];
        if (kx != ky) return kx > ky ? -1 : 1;
    }
    return x < y ? -1 : x > y;
}

/* Regroup: rank a group's buffers by the preorder's keys, T on the remaining loads; the
 * old ranks go on the trail. */
static void rerank(S *s, const int64_t *ys, int64_t m) {
    for (int64_t k = 0; k < m; k++) {
        int64_t y = ys[k];
        s->tv[y] = qmax(s, s->s0[y], s->s1[y]);
        s->scratch[k] = y;
        push(s, &s->rktrail, y);
        push(s, &s->rktrail, s->rank[y]);
    }
    sort_state = s;
    qsort(s->scratch, (size_t)m, 8, cmp_keys);
    for (int64_t k = 0; k < m; k++) s->rank[s->scratch[k]] = k;
}

/* The node of a groups frame's next group: 1 when every group is placed, 0 refuted, 2 in *child. */
static int next_group(S *s, int64_t fi, frame *child) {
    frame *f = &s->fr[fi];
    if (f->next == f->ng) return 1;
    int64_t *g = s->groups.v + f->g_at + 4 * f->next;
    f->next++;
    int64_t pool = f->pool;
    if (g[1] >= 0) {
        if (f->fresh) {
            int64_t at = s->rktrail.len;
            rerank(s, s->gmembers.v + g[0], g[1]);
            int64_t entry[TRAIL] = {T_RANK, at, 0, 0, 0, 0};
            for (int k = 0; k < TRAIL; k++) push(s, &s->trail, entry[k]);
        }
        pool = s->proot.len;
        push(s, &s->proot, -1);
        for (int64_t k = g[0]; k < g[0] + g[1]; k++) tinsert(s, pool, s->gmembers.v[k]);
    }
    return open_node(s, pool, g[2], g[3], s->fr[fi].last_off, s->fr[fi].last_rank, child) ? 2 : 0;
}

static void push_frame(S *s, const frame *f) {
    if (s->nfr == s->capfr) {
        int64_t c = s->capfr ? 2 * s->capfr : 256;
        frame *p = realloc(s->fr, sizeof(frame) * (size_t)c);
        if (!p) longjmp(s->jb, NOMEM);
        s->fr = p;
        s->capfr = c;
    }
    s->fr[s->nfr++] = *f;
}

static void pop_frame(S *s) {
    frame *f = &s->fr[--s->nfr];
    if (f->kind == 1) {
        s->groups.len = f->g_at;
        s->gmembers.len = f->gm_mark;
    }
}

static const int64_t *key0;
static int cmp_first(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (key0[x] != key0[y]) return key0[x] < key0[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The search proper, on a state whose arrays are allocated. */
static int run(S *s) {
    int64_t n = s->n;
    for (int64_t i = 0; i < n; i++) {
        if (s->size[i] > s->C) return INFEASIBLE;
    }
    for (int64_t q = 0; q < s->ns; q++)
        if ((s->sections || s->floor_) && s->sec_sum[q] > s->C) return INFEASIBLE;
    frame root, child;
    memset(&root, 0, sizeof root);
    root.kind = 1;
    root.g_at = s->groups.len;
    root.last_off = -1; root.last_rank = -1;
    /* the root's groups: split in start order where no buffer crosses (search.py's _groups) */
    int64_t reach = -1, ng = 0, cur_at = 0, lo = 0;
    for (int64_t p = 0; p <= n; p++) {
        int64_t y = p < n ? s->order[p] : -1;
        if (p == n || p == 0 || (s->decompose && s->s0[y] > reach)) {
            if (p) {
                push(s, &s->groups, cur_at);
                push(s, &s->groups, s->gmembers.len - cur_at);
                push(s, &s->groups, s->decompose ? lo : 0);
                push(s, &s->groups, s->decompose ? reach : s->ns - 1);
                ng++;
            }
            if (p == n) break;
            cur_at = s->gmembers.len;
            lo = s->s0[y];
        }
        push(s, &s->gmembers, y);
        if (s->s1[y] > reach) reach = s->s1[y];
    }
    root.ng = ng;
    root.pool = -1;
    push_frame(s, &root);
    int result = -1; /* -1: the top frame was just pushed */
    while (s->nfr) {
        int64_t fi = s->nfr - 1;
        int step;
        if (s->fr[fi].kind == 1) {
            step = result == 0 ? 0 : next_group(s, fi, &child);
        } else if (result < 0) {
            step = advance(s, fi, &child);
        } else if (result == 1) {
            step = 1;
        } else {
            undo_to(s, s->fr[fi].mark);
            step = s->hatless && s->fr[fi].hat ? 0 : advance(s, fi, &child);
        }
        if (step == 0 || step == 1) {
            pop_frame(s);
            result = step;
        } else {
            push_frame(s, &child);
            result = -1;
        }
    }
    return result == 1 ? FOUND : INFEASIBLE;
}

/* Returns FOUND (off[] filled), INFEASIBLE, ABORTED or NOMEM; *nodes: nodes visited. */
/* keys: ncols rows of n (the preorder's key columns, regroup; ncols 0: none), is_t[c]: row c
 * is T (computed on the remaining loads instead). */
int64_t arena_search(int64_t n, int64_t ns, const int64_t *s0, const int64_t *s1, const int64_t *size,
                     const int64_t *align, const int64_t *rank, int64_t capacity, int64_t rules,
                     int64_t node_limit, double deadline, int64_t ncols, const int64_t *keys,
                     const int64_t *is_t, int64_t *off, int64_t *nodes) {
    S st;
    S *s = &st;
    memset(s, 0, sizeof st);
    s->n = n; s->ns = ns; s->C = capacity; s->limit = node_limit < 0 ? BIG : node_limit; s->deadline = deadline;
    s->s0 = s0; s->s1 = s1; s->size = size; s->align = align;
    s->ncols = (rules & R_DECOMPOSE) ? ncols : 0; s->keys = keys; s->is_t = is_t;
    s->canonical = !!(rules & R_CANONICAL); s->dominance = !!(rules & R_DOMINANCE);
    s->sections = !!(rules & R_SECTIONS); s->hatless = !!(rules & R_HATLESS); s->floor_ = !!(rules & R_FLOOR);
    s->decompose = !!(rules & R_DECOMPOSE); s->cover = (rules & R_COVER) && s->canonical;
    s->level_check = s->canonical && s->sections;
    s->aligned = 1;
    for (int64_t i = 0; i < n; i++) if (align[i] != 1) s->aligned = 0;
    int status;
    int64_t tn = 1;
    while (tn < 2 * ns) tn *= 2;
    size_t N = (size_t)n + 1, NS = (size_t)ns + 2;
    s->order = malloc(8 * N); s->pos = malloc(8 * N); s->first_pos = malloc(8 * NS);
    s->sec_sum = calloc(NS, 8); s->sec_top = calloc(NS, 8); s->cuts = calloc(NS, 8);
    s->mo = calloc(N, 8); s->wit = malloc(8 * NS); s->unplaced = malloc(N);
    s->tmax = calloc((size_t)tn * 2 + 4, 8); s->tlazy = calloc((size_t)tn * 2 + 4, 8);
    s->fen = calloc(N + 1, 8);
    s->rank = malloc(8 * N); s->tv = malloc(8 * N); s->scratch = malloc(8 * N);
    s->tl = malloc(8 * N); s->tr = malloc(8 * N); s->dm = malloc(8 * N); s->pri = malloc(4 * N);
    s->ovl_at = calloc(N + 1, 8); s->mem_at = calloc(NS + 1, 8);
    s->off = off;
    if ((status = setjmp(s->jb)) != 0) goto done;
    if (!s->order || !s->pos || !s->first_pos || !s->sec_sum || !s->sec_top || !s->cuts || !s->mo || !s->wit ||
        !s->unplaced || !s->tmax || !s->tlazy || !s->fen || !s->tl || !s->tr || !s->dm || !s->pri ||
        !s->ovl_at || !s->mem_at || !s->rank || !s->tv || !s->scratch) { status = NOMEM; goto done; }
    memcpy(s->rank, rank, 8 * (size_t)n);
    /* start order, positions, and the first position of each first section */
    for (int64_t i = 0; i < n; i++) s->order[i] = i;
    key0 = s0;
    qsort(s->order, (size_t)n, 8, cmp_first);
    for (int64_t p = 0; p < n; p++) s->pos[s->order[p]] = p;
    for (int64_t q = 0, p = 0; q <= ns; q++) {
        while (p < n && s0[s->order[p]] < q) p++;
        s->first_pos[q] = p;
    }
    /* loads, cuts, members by section (buffer order), overlaps (buffer order) */
    /* by differences, then prefix sums: O(n + sections), where a loop over each buffer's
     * sections is the sum of their spans (a tenth of 50,000 buffers across 400 sections) */
    for (int64_t i = 0; i < n; i++) {
        s->sec_sum[s0[i]] += size[i]; s->sec_sum[s1[i] + 1] -= size[i];
        s->mem_at[s0[i] + 1]++; s->mem_at[s1[i] + 2]--;
        s->cuts[s0[i]]++; s->cuts[s1[i]]--;
        s->off[i] = -1; s->unplaced[i] = 1;
        s->pri[i] = mix((uint64_t)i + 0x9e3779b97f4a7c15ULL);
        s->tl[i] = s->tr[i] = -1;
        fadd(s, s->pos[i], 1);
    }
    for (int64_t q = 1; q <= ns; q++) { s->sec_sum[q] += s->sec_sum[q - 1]; s->cuts[q] += s->cuts[q - 1]; }
    for (int64_t q = 1; q <= ns; q++) s->mem_at[q + 1] += s->mem_at[q];  /* members of each section */
    for (int64_t q = 0; q < ns; q++) s->mem_at[q + 1] += s->mem_at[q];
    s->mem = malloc(4 * ((size_t)s->mem_at[ns] + 1));
    if (!s->mem) { status = NOMEM; goto done; }
    {
        int64_t *fill = calloc(NS, 8), work = 0;
        if (!fill) { status = NOMEM; goto done; }
        for (int64_t i = 0; i < n; i++) {
            for (int64_t q = s0[i]; q <= s1[i]; q++) s->mem[s->mem_at[q] + fill[q]++] = (int32_t)i;
            work += 1 + s1[i] - s0[i];
            if (s->deadline > 0 && work >= 65536) {
                work = 0;
                if (now() > s->deadline) { free(fill); status = ABORTED; goto done; }
            }
        }
        free(fill);
    }
    for (int64_t q = 0; q < ns; q++) s->wit[q] = s->mem_at[q + 1] > s->mem_at[q] ? s->mem[s->mem_at[q]] : -1;
    /* overlaps, each row in buffer order, in O(E): v meets the members of its first section
     * that come before it in start order and the buffers after it in start order that start
     * within its span; counted, then each v appended to its neighbours' rows in index order */
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            for (int64_t x = 0; x < n; x++) s->ovl_at[x + 1] += s->ovl_at[x];
            s->ovl = malloc(4 * ((size_t)s->ovl_at[n] + 1));
            s->fill = calloc(N, 8);
            if (!s->ovl || !s->fill) { status = NOMEM; goto done; }
        }
        int64_t work = 0;  /* the clock is read every 2^16 rows' entries: a dense row is thousands */
        for (int64_t v = 0; v < n; v++) {
            int64_t a = s0[v], pv = s->pos[v];
            work += 1 + (s->mem_at[a + 1] - s->mem_at[a]) + (s->first_pos[s1[v] + 1] - pv);
            if (s->deadline > 0 && work >= 65536) {
                work = 0;
                if (now() > s->deadline) { status = ABORTED; goto done; }
            }
            for (int64_t k = s->mem_at[a]; k < s->mem_at[a + 1]; k++) {
                int64_t u = s->mem[k];
                if (s->pos[u] >= pv) continue;
                if (pass) s->ovl[s->ovl_at[u] + s->fill[u]++] = (int32_t)v; else s->ovl_at[u + 1]++;
            }
            for (int64_t q = pv + 1; q < s->first_pos[s1[v] + 1]; q++) {
                int64_t u = s->order[q];
                if (pass) s->ovl[s->ovl_at[u] + s->fill[u]++] = (int32_t)v; else s->ovl_at[u + 1]++;
            }
        }
    }
    tbuild(s, 1, 0, ns - 1);
    status = run(s);
done:
    *nodes = s->nodes;
    free(s->order); free(s->pos); free(s->first_pos); free(s->sec_sum); free(s->sec_top); free(s->cuts);
    free(s->mo); free(s->wit); free(s->unplaced); free(s->tmax); free(s->tlazy); free(s->fen);
    free(s->tl); free(s->tr); free(s->dm); free(s->pri); free(s->ovl_at); free(s->mem_at); free(s->ovl); free(s->mem);
    free(s->fill);
    free(s->proot.v); free(s->motrail.v); free(s->wittrail.v); free(s->tops.v); free(s->trail.v); free(s->outs.v);
    free(s->groups.v); free(s->gmembers.v); free(s->fr); free(s->rank); free(s->tv); free(s->scratch);
    free(s->rktrail.v);
    return status;
}
