/* MaxPool of int8 and uint8 planes, the fast path of pool_f32.c's arena_k_pool (arena_i8_max_pool):
 * separable. Per output row the window's input rows are max-ed byte by byte into one stack row
 * (four bytes a step by USUB8 + SEL on DSP cores; int8 bytes compared as uint8 after XOR 0x80,
 * which keeps their order; sixteen a VMAX.U8 on Helium), then each output is the max of its taps
 * along that row (Helium: 16 outputs a step, see arena_i8_max_pool; rows up to 256 bytes take
 * each tap by a gather straight from its input row, mve_pool). The same
 * taps as the generic loop, so the same codes: a window all in the padding gives the lowest code.
 * Dilations other than 1, a plane wider than POOL_ROW_BYTES or an output overlapping its input
 * take the generic loop. No workspace. */
#include <string.h>

#include "arena_kernels.h"

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif

/* Bytes of the stack row: the widest input plane this path takes. */
#define POOL_ROW_BYTES 512

/* row[i] = max(row[i], src[i] ^ flip) for i < n, as unsigned bytes. */
static void vmax(uint8_t *row, const uint8_t *src, int32_t n, uint32_t flip)
{
    int32_t i = 0;
#if defined(__ARM_FEATURE_MVE)
    const uint8x16_t f = vdupq_n_u8((uint8_t)flip); /* Helium: 16 bytes a VMAX.U8, the last ones predicated */
    for (; i < n; i += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)(n - i));
        vstrbq_p_u8(row + i, vmaxq_u8(vldrbq_z_u8(row + i, p), veorq_u8(vldrbq_z_u8(src + i, p), f)), p);
    }
    return;
#endif
#if defined(__ARM_FEATURE_DSP)
    for (; i + 4 <= n; i += 4) {
        uint32_t a, b, r;
        memcpy(&a, row + i, 4);
        memcpy(&b, src + i, 4);
        b ^= flip;
        /* GE per byte where a >= b, then SEL takes a's byte there, b's elsewhere: the max */
        __asm__("usub8 %0, %1, %2\n\tsel %0, %1, %2" : "=&r"(r) : "r"(a), "r"(b) : "cc");
        memcpy(row + i, &r, 4);
    }
#endif
    for (; i < n; ++i) {
        uint8_t v = (uint8_t)(src[i] ^ (uint8_t)flip);
        row[i] = v > row[i] ? v : row[i];
    }
}

/* First and end tap of a window starting at i0 (kernel k) inside [0, n). */
static void taps(int32_t i0, int32_t k, int32_t n, int32_t *t0, int32_t *t1)
{
    *t0 = i0 < 0 ? -i0 : 0;
    *t1 = n - i0 < k ? n - i0 : k;
}

#if defined(__ARM_FEATURE_MVE) && !defined(__OPTIMIZE_SIZE__)
#define MVE_POOL 1
/* Offset vectors mve_pool keeps (16 bytes each): ceil(OW / 16) * kw of them. */
#define MVE_POOL_VECS 32

/* Helium, rows of at most 256 bytes: 16 outputs a step, each tap (ky, kx) one gather from its
 * input row at offsets ow * sw - pl + kx clamped into the row, the max by VMAX.S8 (int8) or
 * VMAX.U8 (uint8), no row copy. A clamped offset is a column of the same window (every window
 * holds one, checked), so the max is the generic loop's, which skips the padding; a window
 * whose rows are all padding gives the lowest code, as there. 0 when the shape is not its. */
static inline __attribute__((always_inline)) void mve_rows(const uint8_t *x, uint8_t *y, const uint8_t *offs,
                                                           int32_t planes, int32_t H, int32_t W, int32_t OH,
                                                           int32_t OW, int32_t kh, int32_t kw, int32_t sh,
                                                           int32_t pt, int s8)
{
    const uint8_t *rows[8];
    int32_t nc, oh, ow, ky, ky0, ky1, kx, n;
    for (nc = 0; nc < planes; ++nc, x += (size_t)H * (size_t)W) {
        for (oh = 0; oh < OH; ++oh, y += OW) {
            int32_t ih0 = oh * sh - pt;
            const uint8_t *o = offs;
            taps(ih0, kh, H, &ky0, &ky1);
            if (ky1 <= ky0) {
                memset(y, s8 ? 0x80 : 0, (size_t)OW);
                continue;
            }
            for (ky = ky0, n = 0; ky < ky1; ++ky, ++n) {
                rows[n] = x + (size_t)(ih0 + ky) * (size_t)W;
            }
            for (ow = 0; ow < OW; ow += 16) {
                const mve_pred16_t p = vctp8q((uint32_t)(OW - ow));
                if (n == 3 && kw == 3) { /* 3x3 windows whose rows are all in the plane, unrolled */
                    const uint8x16_t o0 = vldrbq_u8(o), o1 = vldrbq_u8(o + 16), o2 = vldrbq_u8(o + 32);
                    o += 48;
                    if (s8) {
                        const int8_t *r0 = (const int8_t *)rows[0], *r1 = (const int8_t *)rows[1],
                                     *r2 = (const int8_t *)rows[2];
                        int8x16_t m = vmaxq_s8(vldrbq_gather_offset_s8(r0, o0), vldrbq_gather_offset_s8(r0, o1));
                        m = vmaxq_s8(m, vldrbq_gather_offset_s8(r0, o2));
                        m = vmaxq_s8(m, vmaxq_s8(vldrbq_gather_offset_s8(r1, o0), vldrbq_gather_offset_s8(r1, o1)));
                        m = vmaxq_s8(m, vmaxq_s8(vldrbq_gather_offset_s8(r1, o2), vldrbq_gather_offset_s8(r2, o0)));
                        m = vmaxq_s8(m, vmaxq_s8(vldrbq_gather_offset_s8(r2, o1), vldrbq_gather_offset_s8(r2, o2)));
                        vstrbq_p_s8((int8_t *)y + ow, m, p);
                    } else {
                        const uint8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2];
                        uint8x16_t m = vmaxq_u8(vldrbq_gather_offset_u8(r0, o0), vldrbq_gather_offset_u8(r0, o1));
                        m = vmaxq_u8(m, vldrbq_gather_offset_u8(r0, o2));
                        m = vmaxq_u8(m, vmaxq_u8(vldrbq_gather_offset_u8(r1, o0), vldrbq_gather_offset_u8(r1, o1)));
                        m = vmaxq_u8(m, vmaxq_u8(vldrbq_gather_offset_u8(r1, o2), vldrbq_gather_offset_u8(r2, o0)));
                        m = vmaxq_u8(m, vmaxq_u8(vldrbq_gather_offset_u8(r2, o1), vldrbq_gather_offset_u8(r2, o2)));
                        vstrbq_p_u8(y + ow, m, p);
                    }
                } else if (s8) {
                    int8x16_t m = vldrbq_gather_offset_s8((const int8_t *)rows[0], vldrbq_u8(o));
                    for (kx = 0; kx < kw; ++kx, o += 16) {
                        const uint8x16_t off = vldrbq_u8(o);
                        for (ky = kx == 0 ? 1 : 0; ky < n; ++ky) {
                            m = vmaxq_s8(m, vldrbq_gather_offset_s8((const int8_t *)rows[ky], off));
                        }
                    }
                    vstrbq_p_s8((int8_t *)y + ow, m, p);
                } else {
                    uint8x16_t m = vldrbq_gather_offset_u8(rows[0], vldrbq_u8(o));
                    for (kx = 0; kx < kw; ++kx, o += 16) {
                        const uint8x16_t off = vldrbq_u8(o);
                        for (ky = kx == 0 ? 1 : 0; ky < n; ++ky) {
                            m = vmaxq_u8(m, vldrbq_gather_offset_u8(rows[ky], off));
                        }
                    }
                    vstrbq_p_u8(y + ow, m, p);
                }
            }
        }
    }
}

static int mve_pool(const arena_attrs_t *a, const uint8_t *x, uint8_t *y, int s8, int32_t planes, int32_t H,
                    int32_t W, int32_t OH, int32_t OW)
{
    uint8_t offs[MVE_POOL_VECS * 16];
    const int32_t kh = a->kernel[0], kw = a->kernel[1], sw = a->strides[1], pl = a->pads[1];
    int32_t b, kx, i, nblk = (OW + 15) / 16;
    if (W > 256 || kh > 8 || OW < 1 || nblk * kw > MVE_POOL_VECS || pl >= kw || (OW - 1) * sw - pl > W - 1) {
        return 0;
    }
    for (b = 0; b < nblk; ++b) {
        for (kx = 0; kx < kw; ++kx) {
            for (i = 0; i < 16; ++i) {
                int32_t at = (b * 16 + i) * sw - pl + kx;
                offs[(b * kw + kx) * 16 + i] = (uint8_t)(at < 0 ? 0 : at > W - 1 ? W - 1 : at);
            }
        }
    }
    if (s8) {
        mve_rows(x, y, offs, planes, H, W, OH, OW, kh, kw, a->strides[0], a->pads[0], 1);
    } else {
        mve_rows(x, y, offs, planes, H, W, OH, OW, kh, kw, a->strides[0], a->pads[0], 0);
    }
    return 1;
}
#endif

int arena_i8_max_pool(const arena_ctx_t *c, const int32_t xd[4], const int32_t yd[4])
{
    const arena_attrs_t *a = c->op->attrs;
    const uint8_t *x = (const uint8_t *)arena_in_data(c, 0);
    uint8_t *y = (uint8_t *)arena_out_data(c, 0);
    uint8_t row[POOL_ROW_BYTES + 32];
    uint32_t flip = arena_in(c, 0)->dtype == ARENA_DT_INT8 ? 0x80808080u : 0u;
    int32_t H = xd[2], W = xd[3], OH = yd[2], OW = yd[3], kh = a->kernel[0], kw = a->kernel[1];
    int32_t nc, oh, ow, ky, ky0, ky1, kx, kx0, kx1;
    size_t pin = (size_t)H * (size_t)W, pout = (size_t)OH * (size_t)OW, planes = (size_t)xd[0] * (size_t)xd[1];
    uintptr_t xa = (uintptr_t)x, ya = (uintptr_t)y;
    if (a->dilations[0] != 1 || a->dilations[1] != 1 || W > POOL_ROW_BYTES
        || !(ya >= xa + planes * pin || ya + planes * pout <= xa)) {
        return 0;
    }
#if defined(MVE_POOL)
    if (mve_pool(a, x, y, flip != 0u, (int32_t)planes, H, W, OH, OW)) {
        return 1;
    }
#endif
#if defined(__ARM_FEATURE_MVE)
    /* Helium, wider rows: the row placed pads[1] bytes in, 0 (below every flipped code, as m's start) around it,
     * so 16 outputs a step take each tap by one gather (lanes strides[1] apart) and a VMAX without
     * clipping: a tap in the padding reads 0, as the generic loop skips it. */
    if (OW > 0 && a->strides[1] <= 17 && a->pads[1] + W <= POOL_ROW_BYTES + 32
        && (OW - 1) * a->strides[1] + kw <= POOL_ROW_BYTES + 32) {
        const int32_t sw = a->strides[1], pl = a->pads[1];
        const uint8x16_t f = vdupq_n_u8((uint8_t)flip), lanes = vmulq_n_u8(vidupq_n_u8(0u, 1), (uint8_t)sw);
        memset(row, 0, sizeof row);
        for (nc = 0; nc < (int32_t)planes; ++nc, x += pin) {
            for (oh = 0; oh < OH; ++oh, y += OW) {
                int32_t ih0 = oh * a->strides[0] - a->pads[0];
                taps(ih0, kh, H, &ky0, &ky1);
                memset(row + pl, 0, (size_t)W);
                for (ky = ky0; ky < ky1; ++ky) {
                    vmax(row + pl, x + (size_t)(ih0 + ky) * (size_t)W, W, flip);
                }
                for (ow = 0; ow < OW; ow += 16) {
                    const mve_pred16_t p = vctp8q((uint32_t)(OW - ow));
                    const uint8_t *r = row + ow * sw;
                    uint8x16_t m = vdupq_n_u8(0);
                    for (kx = 0; kx < kw; ++kx) {
                        m = vmaxq_u8(m, vldrbq_gather_offset_z_u8(r + kx, lanes, p));
                    }
                    vstrbq_p_u8(y + ow, veorq_u8(m, f), p);
                }
            }
        }
        return 1;
    }
#endif
    for (nc = 0; nc < (int32_t)planes; ++nc, x += pin) {
        for (oh = 0; oh < OH; ++oh, y += OW) {
            int32_t ih0 = oh * a->strides[0] - a->pads[0];
            taps(ih0, kh, H, &ky0, &ky1);
            memset(row, 0, (size_t)W);
            for (ky = ky0; ky < ky1; ++ky) {
                vmax(row, x + (size_t)(ih0 + ky) * (size_t)W, W, flip);
            }
            for (ow = 0; ow < OW; ++ow) {
                int32_t iw0 = ow * a->strides[1] - a->pads[1];
                uint8_t m = 0;
                taps(iw0, kw, W, &kx0, &kx1);
                for (kx = kx0; kx < kx1; ++kx) {
                    m = row[iw0 + kx] > m ? row[iw0 + kx] : m;
                }
                y[ow] = (uint8_t)(m ^ (uint8_t)flip);
            }
        }
    }
    return 1;
}
