/* A patched stage run as one loop over its tiles (arena_model.h: arena_tiles_t).
 *
 * Once: each member output's whole height and width, forwards from the stage input. Per tile
 * (row-major): the tile's box of the stage output, backwards each member output's box and each
 * member's input windows and pads; each slot's row and bytes at the plan's offset; then the members
 * in order, each after copying the crops it reads; then the tile into the whole stage output.
 * The tables' generator replays this for every tile against the plan (emit/tileloop.check). */
#include <string.h>

#include "arena_kernels.h"

typedef struct {
    int32_t lo[2], hi[2]; /* rows, columns */
} box_t;

/* Copy box `b` (of a tensor whose box `from` has bytes at src, `planes` planes of es-byte elements:
 * NCHW's N x C planes of one element a pixel, NHWC's N planes of C elements a pixel) into the tensor
 * whose box `to` has bytes at dst. */
static void copy_box(uint8_t *dst, const box_t *to, const uint8_t *src, const box_t *from, const box_t *b,
                     uint32_t planes, size_t es)
{
    int32_t sw = from->hi[1] - from->lo[1], sh = from->hi[0] - from->lo[0];
    int32_t dw = to->hi[1] - to->lo[1], dh = to->hi[0] - to->lo[0];
    size_t row = (size_t)(b->hi[1] - b->lo[1]) * es;
    uint32_t p;
    int32_t h;
    for (p = 0u; p < planes; ++p) {
        for (h = b->lo[0]; h < b->hi[0]; ++h) {
            memcpy(dst + (((size_t)p * (size_t)dh + (size_t)(h - to->lo[0])) * (size_t)dw
                          + (size_t)(b->lo[1] - to->lo[1])) * es,
                   src + (((size_t)p * (size_t)sh + (size_t)(h - from->lo[0])) * (size_t)sw
                          + (size_t)(b->lo[1] - from->lo[1])) * es, row);
        }
    }
}

static int same_box(const box_t *a, const box_t *b)
{
    return a->lo[0] == b->lo[0] && a->hi[0] == b->hi[0] && a->lo[1] == b->lo[1] && a->hi[1] == b->hi[1];
}

/* The member producing tensor `index` (its OUT slot), or -1 (the stage input, a constant). */
static int32_t producer(const arena_tiles_t *t, int32_t index)
{
    uint32_t s;
    int32_t row = 0;
    for (s = 0u; s < t->n_slots; ++s) {
        if (t->slots[3u * s] != ARENA_SLOT_CROP) {
            if (t->slots[3u * s] == ARENA_SLOT_OUT && t->first_slot + row == index) {
                return t->slots[3u * s + 1u];
            }
            ++row;
        }
    }
    return -1;
}

int arena_run_tiles(const arena_model_t *m, uint32_t k, uint8_t *base, int *failed_op)
{
    const arena_tiles_t *t = &m->loops[k];
    const arena_op_t *ops = &m->ops[t->first];
    const arena_tensor_t *in = &m->tensors[t->input], *out = &m->tensors[t->output];
    int32_t full[ARENA_TILE_SLOTS][2];    /* each member output's whole (H, W) */
    uint32_t hx = t->nhwc ? 1u : 2u;      /* the images' row axis (columns: hx + 1) */
    int32_t act[ARENA_TILE_SLOTS][4];     /* per member, per input (up to 4 looked at): its producer, -2 stage input, -3 none */
    box_t region[ARENA_TILE_SLOTS], reads[ARENA_TILE_SLOTS][4];
    int32_t pads[ARENA_TILE_SLOTS][4];
    arena_tensor_t rows[ARENA_TILE_SLOTS], over_rows[4];
    uint8_t *addr[ARENA_TILE_SLOTS], *over_addr[4];
    int32_t over_index[4];
    arena_tile_view_t view;
    uint8_t *out_data = (uint8_t *)arena_tensor_data(m, base, t->output);
    uint32_t j, r, col, s, last = t->n_members - 1u;
    size_t es = arena_dtype_size(out->dtype);
    if (t->n_members == 0u || t->n_members > ARENA_TILE_SLOTS || t->n_slots > ARENA_TILE_SLOTS
        || t->first + t->n_members > m->n_ops || in->rank != 4u || out->rank != 4u || es == 0u) {
        *failed_op = (int)t->first;
        return ARENA_ERR_SHAPE;
    }
    for (j = 0u; j < t->n_members; ++j) { /* forwards: which inputs are activations, each output's size */
        const arena_op_t *op = &ops[j];
        int32_t n[2] = {-1, -1};
        uint32_t i, a;
        for (i = 0u; i < 4u; ++i) {
            int32_t x = i < op->n_inputs ? op->inputs[i] : -1, p = x < 0 ? -1 : producer(t, x);
            act[j][i] = x < 0 ? -3 : x == t->input ? -2 : p >= 0 && (uint32_t)p < j ? p : -3;
            if (act[j][i] != -3 && n[0] < 0) {
                n[0] = act[j][i] == -2 ? in->shape[hx] : full[act[j][i]][0];
                n[1] = act[j][i] == -2 ? in->shape[hx + 1u] : full[act[j][i]][1];
            }
        }
        if (n[0] < 0) {
            *failed_op = (int)(t->first + j);
            return ARENA_ERR_SHAPE;
        }
        for (a = 0u; a < 2u; ++a) {
            full[j][a] = op->attrs->kernel[0] > 0 ? (n[a] + op->attrs->pads[a] + op->attrs->pads[a + 2u]
                                                    - op->attrs->kernel[a]) / op->attrs->strides[a] + 1 : n[a];
        }
    }
    if (full[last][0] != out->shape[hx] || full[last][1] != out->shape[hx + 1u]) {
        *failed_op = (int)(t->first + last);
        return ARENA_ERR_SHAPE;
    }
    view.first = t->first_slot;
    view.rows = rows;
    view.addr = addr;
    view.over_index = over_index;
    view.over_rows = over_rows;
    view.over_addr = over_addr;
    for (r = 0u; r < t->rows; ++r) {
        for (col = 0u; col < t->cols; ++col) {
            uint32_t tile = r * t->cols + col, row = 0u;
            uint32_t rowof = t->tile_rows[tile] * (uint32_t)t->n_slots;
            for (j = 0u; j < t->n_members; ++j) {
                region[j].lo[0] = region[j].lo[1] = INT32_MAX;
                region[j].hi[0] = region[j].hi[1] = INT32_MIN;
            }
            region[last].lo[0] = (int32_t)((uint32_t)full[last][0] * r / t->rows);
            region[last].hi[0] = (int32_t)((uint32_t)full[last][0] * (r + 1u) / t->rows);
            region[last].lo[1] = (int32_t)((uint32_t)full[last][1] * col / t->cols);
            region[last].hi[1] = (int32_t)((uint32_t)full[last][1] * (col + 1u) / t->cols);
            for (j = t->n_members; j-- > 0u;) { /* backwards: what each member reads, its pads */
                const arena_op_t *op = &ops[j];
                uint32_t i, a;
                for (i = 0u; i < 4u; ++i) {
                    box_t *b = &reads[j][i];
                    if (act[j][i] == -3) {
                        continue;
                    }
                    for (a = 0u; a < 2u; ++a) {
                        int32_t n = act[j][i] == -2 ? in->shape[hx + a] : full[act[j][i]][a];
                        if (op->attrs->kernel[0] > 0) {
                            int32_t s0 = op->attrs->strides[a], p = op->attrs->pads[a];
                            int32_t start = region[j].lo[a] * s0 - p;
                            int32_t end = (region[j].hi[a] - 1) * s0 - p + op->attrs->kernel[a];
                            b->lo[a] = start > 0 ? start : 0;
                            b->hi[a] = end < n ? end : n;
                            pads[j][a] = b->lo[a] - start;
                            pads[j][a + 2u] = end - b->hi[a];
                        } else {
                            b->lo[a] = region[j].lo[a];
                            b->hi[a] = region[j].hi[a];
                        }
                    }
                    if (act[j][i] >= 0) {
                        box_t *q = &region[act[j][i]];
                        for (a = 0u; a < 2u; ++a) {
                            q->lo[a] = b->lo[a] < q->lo[a] ? b->lo[a] : q->lo[a];
                            q->hi[a] = b->hi[a] > q->hi[a] ? b->hi[a] : q->hi[a];
                        }
                    }
                }
            }
            for (s = 0u; s < t->n_slots; ++s) { /* the rowed slots' rows and bytes in this tile */
                const int16_t *info = &t->slots[3u * s];
                uint32_t off = t->offsets16 != NULL ? t->offsets16[rowof + s] : t->offsets32[rowof + s];
                const box_t *b = info[0] == ARENA_SLOT_OUT ? &region[info[1]] : &reads[info[1]][0];
                arena_tensor_t *rw = &rows[row];
                if (info[0] == ARENA_SLOT_CROP) {
                    continue;
                }
                *rw = m->tensors[t->first_slot + (int32_t)row];
                if (info[0] == ARENA_SLOT_WS_IN) { /* a depthwise conv's in-place channel: its input's plane */
                    rw->shape[0] = (b->hi[0] - b->lo[0]) * (b->hi[1] - b->lo[1]);
                    rw->elements = (uint32_t)rw->shape[0];
                } else if (info[0] != ARENA_SLOT_SCRATCH) { /* im2col columns keep the row's size */
                    rw->shape[hx] = b->hi[0] - b->lo[0];
                    rw->shape[hx + 1u] = b->hi[1] - b->lo[1];
                    rw->elements = (uint32_t)(rw->shape[0] * rw->shape[1] * rw->shape[2] * rw->shape[3]);
                }
                rw->size = rw->elements * (uint32_t)arena_dtype_size(rw->dtype);
                rw->offset = off;
                addr[row] = base + off;
                if (off > m->arena_size || rw->size > m->arena_size - off) {
                    *failed_op = (int)t->first;
                    return ARENA_ERR_BOUNDS;
                }
                ++row;
            }
            view.n = (int32_t)row;
            for (j = 0u; j < t->n_members; ++j) { /* the members, each after its crops */
                arena_op_t op = ops[j];
                arena_attrs_t tile_attrs;
                arena_ctx_t c;
                int rc;
                view.n_over = 0;
                for (s = 0u; s < t->n_slots; ++s) {
                    const int16_t *info = &t->slots[3u * s];
                    int32_t x, src;
                    const box_t *need, *have;
                    box_t whole;
                    arena_tensor_t *cr;
                    uint32_t off;
                    if (info[0] != ARENA_SLOT_CROP || (uint32_t)info[1] != j || info[2] < 0 || info[2] >= 4
                        || view.n_over >= 4) {
                        continue;
                    }
                    x = op.inputs[info[2]];
                    src = act[j][info[2]];
                    need = &reads[j][info[2]];
                    whole.lo[0] = whole.lo[1] = 0;
                    whole.hi[0] = in->shape[hx];
                    whole.hi[1] = in->shape[hx + 1u];
                    have = src >= 0 ? &region[src] : &whole;
                    if (src == -3 || same_box(need, have)) {
                        continue; /* this tile reads the whole source */
                    }
                    off = t->offsets16 != NULL ? t->offsets16[rowof + s] : t->offsets32[rowof + s];
                    cr = &over_rows[view.n_over];
                    c.m = m;
                    c.op = &op;
                    c.base = base;
                    c.tile = &view;
                    *cr = *arena_tensor_row(&c, x);
                    cr->shape[hx] = need->hi[0] - need->lo[0];
                    cr->shape[hx + 1u] = need->hi[1] - need->lo[1];
                    cr->elements = (uint32_t)(cr->shape[0] * cr->shape[1] * cr->shape[2] * cr->shape[3]);
                    cr->size = cr->elements * (uint32_t)arena_dtype_size(cr->dtype);
                    cr->offset = off;
                    cr->data = NULL;
                    if (off > m->arena_size || cr->size > m->arena_size - off) {
                        *failed_op = (int)(t->first + j);
                        return ARENA_ERR_BOUNDS;
                    }
                    copy_box(base + off, need, (const uint8_t *)arena_ctx_data(&c, x), have, need,
                             t->nhwc ? (uint32_t)cr->shape[0] : (uint32_t)(cr->shape[0] * cr->shape[1]),
                             arena_dtype_size(cr->dtype) * (t->nhwc ? (size_t)cr->shape[3] : 1u));
                    over_index[view.n_over] = x;
                    over_addr[view.n_over] = base + off;
                    ++view.n_over;
                }
                if (op.attrs->kernel[0] > 0) { /* a window member: its tile-local pads */
                    tile_attrs = *op.attrs;
                    tile_attrs.pads[0] = pads[j][0];
                    tile_attrs.pads[1] = pads[j][1];
                    tile_attrs.pads[2] = pads[j][2];
                    tile_attrs.pads[3] = pads[j][3];
                    op.attrs = &tile_attrs;
                }
                c.m = m;
                c.op = &op;
                c.base = base;
                c.tile = &view;
                rc = op.type < ARENA_OP_COUNT && arena_kernels[op.type] != NULL ? arena_kernels[op.type](&c)
                                                                                : ARENA_ERR_UNSUPPORTED;
                if (rc != ARENA_OK) {
                    *failed_op = (int)(t->first + j);
                    return rc;
                }
            }
            view.n_over = 0;
            {   /* the tile into the whole stage output */
                arena_ctx_t c;
                box_t whole;
                c.m = m;
                c.op = &ops[last];
                c.base = base;
                c.tile = &view;
                whole.lo[0] = whole.lo[1] = 0;
                whole.hi[0] = out->shape[hx];
                whole.hi[1] = out->shape[hx + 1u];
                copy_box(out_data, &whole, (const uint8_t *)arena_ctx_data(&c, ops[last].outputs[0]), &region[last],
                         &region[last], t->nhwc ? (uint32_t)out->shape[0] : (uint32_t)(out->shape[0] * out->shape[1]),
                         es * (t->nhwc ? (size_t)out->shape[3] : 1u));
            }
        }
    }
    return ARENA_OK;
}
