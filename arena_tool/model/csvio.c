/* csvio.py's reader and writer of well-formed rows, compiled (issue 39: a CSV plan's whole
 * process counts against minimalloc's; at 100,000 rows the Python reader took ~0.4 CPU-s and
 * made a Buffer per row, the writer ~0.3).
 *
 * arena_read_rows accepts only what csvio.read_problem's row reader reads the same way: ASCII,
 * '\n' or "\r\n" line ends, no other control byte but tab, blank lines (spaces and tabs)
 * skipped, cells trimmed of spaces and tabs, integers as [+-]digits (at most 18), every value
 * in range, ids non-empty and unique. Anything else returns -1 and the Python reader runs: it
 * reads what this one refuses (1_000, other whitespace) or names the fault. Ids stay where they
 * are in the file's bytes (offset and length), so a plan writes them back without making a
 * Python string per row. Built on first use by core/native.py (host C compiler).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { C_ID, C_LOWER, C_HI, C_SIZE, C_ALIGN, C_COUNT };

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* [p, q) trimmed of spaces and tabs as [+-]digits: 0 and *v, or -1. */
static int parse_int(const char *p, const char *q, int64_t *v) {
    while (p < q && is_blank(*p)) p++;
    while (q > p && is_blank(q[-1])) q--;
    int neg = 0;
    if (p < q && (*p == '+' || *p == '-')) neg = *p++ == '-';
    if (p == q || q - p > 18) return -1;
    int64_t x = 0;
    for (; p < q; p++) {
        if (*p < '0' || *p > '9') return -1;
        x = x * 10 + (*p - '0');
    }
    *v = neg ? -x : x;
    return 0;
}

static uint64_t hash_bytes(const char *p, int64_t n) {  /* FNV-1a */
    uint64_t h = 1469598103934665603ULL;
    for (int64_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

/* The rows of data[start, len) (the file after its header line) into the arrays (each room for
 * max_rows): the id's offset in data and its length, lower, the inclusive end, size, alignment (1
 * without that column). cols: the column of id, lower, upper-or-end, size, alignment (-1:
 * none); inclusive: cols[C_HI] is 'end'. Returns the row count, -1 for a row the Python reader
 * must read, -2 out of memory. */
int64_t arena_read_rows(const char *data, int64_t start, int64_t len, int64_t width, const int64_t *cols, int64_t inclusive,
                        int64_t max_rows, int64_t *name_at, int64_t *name_len, int64_t *lower, int64_t *end,
                        int64_t *size, int64_t *align) {
    if (width < 1 || width > 64) return -1;
    int64_t which[64];  /* per column: which field (C_*) or -1 */
    for (int64_t c = 0; c < width; c++) which[c] = -1;
    for (int k = 0; k < C_COUNT; k++)
        if (cols[k] >= 0) {
            if (cols[k] >= width) return -1;
            which[cols[k]] = k;
        }
    int64_t m = 0;
    const char *p = data + start, *stop = data + len;
    while (p < stop) {
        const char *eol = memchr(p, '\n', (size_t)(stop - p));
        const char *next = eol ? eol + 1 : stop;
        const char *q = eol ? eol : stop;
        if (q > p && q[-1] == '\r') q--;
        int blank = 1;
        for (const char *s = p; s < q; s++) {
            unsigned char c = (unsigned char)*s;
            if (c >= 0x80 || (c < 0x20 && c != '\t') || c == 0x7f) return -1;
            if (!is_blank(*s)) blank = 0;
        }
        if (!blank) {
            if (m >= max_rows) return -1;
            int64_t v[C_COUNT] = {0, 0, 0, 0, 1};
            int64_t c = 0;
            const char *cell = p;
            for (;;) {
                const char *comma = memchr(cell, ',', (size_t)(q - cell));
                const char *ce = comma ? comma : q;
                if (c >= width) return -1;
                int k = (int)which[c];
                if (k == C_ID) {
                    const char *a = cell, *b = ce;
                    while (a < b && is_blank(*a)) a++;
                    while (b > a && is_blank(b[-1])) b--;
                    if (a == b) return -1;
                    name_at[m] = a - data;
                    name_len[m] = b - a;
                } else if (k >= 0 && parse_int(cell, ce, &v[k]) != 0) {
                    return -1;
                }
                c++;
                if (!comma) break;
                cell = comma + 1;
            }
            if (c != width) return -1;
            int64_t e = inclusive ? v[C_HI] : v[C_HI] - 1;
            if (v[C_LOWER] < 0 || v[C_HI] < 0 || v[C_SIZE] < 1 || v[C_ALIGN] < 1 || e < v[C_LOWER]) return -1;
            lower[m] = v[C_LOWER];
            end[m] = e;
            size[m] = v[C_SIZE];
            align[m] = v[C_ALIGN];
            m++;
        }
        p = next;
    }
    /* unique ids: an open-addressed table of row indices, at most half full */
    int64_t slots = 16;
    while (slots < 2 * m) slots *= 2;
    int64_t *table = malloc((size_t)slots * sizeof(int64_t));
    if (!table) return -2;
    for (int64_t s = 0; s < slots; s++) table[s] = -1;
    for (int64_t i = 0; i < m; i++) {
        const char *a = data + name_at[i];
        int64_t s = (int64_t)(hash_bytes(a, name_len[i]) & (uint64_t)(slots - 1));
        while (table[s] >= 0) {
            int64_t j = table[s];
            if (name_len[j] == name_len[i] && memcmp(data + name_at[j], a, (size_t)name_len[i]) == 0) {
                free(table);
                return -1;
            }
            s = (s + 1) & (slots - 1);
        }
        table[s] = i;
    }
    free(table);
    return m;
}

static char *put_int(char *o, int64_t v) {
    char tmp[24];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *o++ = '-';
    while (k) *o++ = tmp[--k];
    return o;
}

/* The rows 'id,lower,upper,size[,alignment][,offset]\n' (upper = end + 1) into out, the ids
 * copied from text at name_at/name_len; align and offset NULL to leave that column out. out
 * needs room for the ids and 6 * 21 bytes a row. Returns the bytes written. */
int64_t arena_write_rows(int64_t n, const char *text, const int64_t *name_at, const int64_t *name_len,
                         const int64_t *lower, const int64_t *end, const int64_t *size, const int64_t *align,
                         const int64_t *offset, char *out) {
    char *o = out;
    for (int64_t i = 0; i < n; i++) {
        memcpy(o, text + name_at[i], (size_t)name_len[i]);
        o += name_len[i];
        *o++ = ',';
        o = put_int(o, lower[i]);
        *o++ = ',';
        o = put_int(o, end[i] + 1);
        *o++ = ',';
        o = put_int(o, size[i]);
        if (align) {
            *o++ = ',';
            o = put_int(o, align[i]);
        }
        if (offset) {
            *o++ = ',';
            o = put_int(o, offset[i]);
        }
        *o++ = '\n';
    }
    return o - out;
}
