/* Gemm, float32, and the GEMM tiles Conv and MatMul share (arena_f32_gemm_nn). No workspace. */
#include "support_f32.h"

#if !ARENA_MVE_F32
/* A 4 x 4 output tile: y[i * ldy + j] = c[i] + sum_k a[i][k] * b[k * ldb + j] for the first `rows`
 * rows (a[i]: rows contiguous along k; rows past `rows` repeat the last and are not stored). The 16
 * sums stay in registers, so each value loaded feeds four multiply-adds. */
static NOINLINE void tile_4x4(const float *const a[4], const float *b, int32_t ldb, int32_t K, const float c[4], float *y,
                     int32_t ldy, int32_t rows)
{
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    float c00 = c[0], c01 = c[0], c02 = c[0], c03 = c[0], c10 = c[1], c11 = c[1], c12 = c[1], c13 = c[1];
    float c20 = c[2], c21 = c[2], c22 = c[2], c23 = c[2], c30 = c[3], c31 = c[3], c32 = c[3], c33 = c[3];
    int32_t k;
    for (k = K; k > 0; --k) {
        float v0 = b[0], v1 = b[1], v2 = b[2], v3 = b[3], u;
        b += ldb;
        u = *a0++;
        MAC4(c00, c01, c02, c03, u, v0, v1, v2, v3);
        u = *a1++;
        MAC4(c10, c11, c12, c13, u, v0, v1, v2, v3);
        u = *a2++;
        MAC4(c20, c21, c22, c23, u, v0, v1, v2, v3);
        u = *a3++;
        MAC4(c30, c31, c32, c33, u, v0, v1, v2, v3);
    }
    put4(y, 4, c00, c01, c02, c03);
    if (rows > 1) {
        put4(y + ldy, 4, c10, c11, c12, c13);
    }
    if (rows > 2) {
        put4(y + 2 * ldy, 4, c20, c21, c22, c23);
    }
    if (rows > 3) {
        put4(y + 3 * ldy, 4, c30, c31, c32, c33);
    }
}

/* One row by a 4-wide panel: y[j] = c + sum_k a[k] * b[k * ldb + j], for the first n (<= 4) columns
 * (the panel then has only n columns: no column past them is read). */
static NOINLINE void tile_1x4(const float *a, const float *b, int32_t ldb, int32_t K, float c, float *y, int32_t n)
{
    float c0 = c, c1 = c, c2 = c, c3 = c;
    int32_t k;
    if (n == 4) {
        for (k = K; k > 0; --k) {
            float u = *a++;
            MAC4(c0, c1, c2, c3, u, b[0], b[1], b[2], b[3]);
            b += ldb;
        }
    } else {
        for (k = K; k > 0; --k) {
            float u = *a++;
            MAC(c0, u, b[0]);
            if (n > 1) {
                MAC(c1, u, b[1]);
            }
            if (n > 2) {
                MAC(c2, u, b[2]);
            }
            b += ldb;
        }
    }
    put4(y, n, c0, c1, c2, c3);
}

/* Four dot products with one vector: out[i] = c[i] + sum_k p[i][k] * q[k * qs] (p[i] contiguous). */
static NOINLINE void dot_4(const float *const p[4], const float *q, int32_t qs, int32_t K, const float c[4], float out[4])
{
    const float *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
    float c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    int32_t k = K;
    if (qs == 1) {
        for (; k >= 4; k -= 4) {
            float v0 = q[0], v1 = q[1], v2 = q[2], v3 = q[3];
            q += 4;
            MAC(c0, p0[0], v0); MAC(c0, p0[1], v1); MAC(c0, p0[2], v2); MAC(c0, p0[3], v3);
            MAC(c1, p1[0], v0); MAC(c1, p1[1], v1); MAC(c1, p1[2], v2); MAC(c1, p1[3], v3);
            MAC(c2, p2[0], v0); MAC(c2, p2[1], v1); MAC(c2, p2[2], v2); MAC(c2, p2[3], v3);
            MAC(c3, p3[0], v0); MAC(c3, p3[1], v1); MAC(c3, p3[2], v2); MAC(c3, p3[3], v3);
            p0 += 4;
            p1 += 4;
            p2 += 4;
            p3 += 4;
        }
    }
    for (; k > 0; --k) {
        float v = *q;
        q += qs;
        MAC(c0, *p0++, v);
        MAC(c1, *p1++, v);
        MAC(c2, *p2++, v);
        MAC(c3, *p3++, v);
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

#else
/* tile_4x4 in Helium's float lanes: row i's four sums one vector, a[i][k] times the panel's row k
 * (one VLDRW) fused into it (VFMA from a general register). The first n (<= 4) columns are on: a
 * narrower panel's loads and stores are predicated, its columns past n never read. */
static NOINLINE void tile_4x4_mve(const float *const a[4], const float *b, int32_t ldb, int32_t K, const float c[4],
                                  float *y, int32_t ldy, int32_t rows, int32_t n)
{
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    float32x4_t c0 = vdupq_n_f32(c[0]), c1 = vdupq_n_f32(c[1]), c2 = vdupq_n_f32(c[2]), c3 = vdupq_n_f32(c[3]);
    mve_pred16_t p = vctp32q((uint32_t)n);
    int32_t k;
    if (n == 4) {
        for (k = K; k > 0; --k) {
            float32x4_t v = vldrwq_f32(b);
            b += ldb;
            c0 = vfmaq_n_f32(c0, v, *a0++);
            c1 = vfmaq_n_f32(c1, v, *a1++);
            c2 = vfmaq_n_f32(c2, v, *a2++);
            c3 = vfmaq_n_f32(c3, v, *a3++);
        }
    } else {
        for (k = K; k > 0; --k) {
            float32x4_t v = vldrwq_z_f32(b, p);
            b += ldb;
            c0 = vfmaq_n_f32(c0, v, *a0++);
            c1 = vfmaq_n_f32(c1, v, *a1++);
            c2 = vfmaq_n_f32(c2, v, *a2++);
            c3 = vfmaq_n_f32(c3, v, *a3++);
        }
    }
    vstrwq_p_f32(y, c0, p);
    if (rows > 1) {
        vstrwq_p_f32(y + ldy, c1, p);
    }
    if (rows > 2) {
        vstrwq_p_f32(y + 2 * ldy, c2, p);
    }
    if (rows > 3) {
        vstrwq_p_f32(y + 3 * ldy, c3, p);
    }
}

/* One row by a panel of n (<= 4) columns in float lanes (tile_1x4's sums). */
static NOINLINE void tile_1x4_mve(const float *a, const float *b, int32_t ldb, int32_t K, float c, float *y, int32_t n)
{
    float32x4_t c0 = vdupq_n_f32(c);
    mve_pred16_t p = vctp32q((uint32_t)n);
    int32_t k;
    for (k = K; k > 0; --k) {
        c0 = vfmaq_n_f32(c0, vldrwq_z_f32(b, p), *a++);
        b += ldb;
    }
    vstrwq_p_f32(y, c0, p);
}

/* y[t] = p[t ld] . q (t < n <= 4, p's rows contiguous along k): dot_4's sums with row t in lane t,
 * gathered a column of four rows a VLDRW (lanes past n repeat the last row and are not stored). */
static NOINLINE void dot_rows_mve(const float *p, int32_t ld, const float *q, int32_t K, float *y, int32_t n)
{
    uint32x4_t off = vmulq_n_u32(vminq_u32(vidupq_n_u32(0u, 1), vdupq_n_u32((uint32_t)n - 1u)), (uint32_t)ld);
    float32x4_t acc = vdupq_n_f32(0.0f);
    int32_t k;
    for (k = K; k > 0; --k) {
        acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(p++, off), *q++);
    }
    vstrwq_p_f32(y, acc, vctp32q((uint32_t)n));
}
#endif

/* Y[m * ldy + n] = bias[m] + sum_k A[m * lda + k] * B[k * ldb + n] (m < M, n < N, k < K; bias NULL:
 * 0), in 4 x 4 register tiles. Y is none of A, B and bias. */
void arena_f32_gemm_nn(const float *A, int32_t lda, const float *B, int32_t ldb, const float *bias, float *Y,
                       int32_t ldy, int32_t M, int32_t N, int32_t K)
{
    int32_t m, n, i;
    for (m = 0; m < M; m += 4) {
        int32_t rows = min_i32(4, M - m);
        const float *a[4];
        float c[4];
        float *y = Y + (size_t)m * (size_t)ldy;
        for (i = 0; i < 4; ++i) {
            int32_t r = m + min_i32(i, rows - 1);
            a[i] = A + (size_t)r * (size_t)lda;
            c[i] = bias != NULL ? bias[r] : 0.0f;
        }
#if ARENA_MVE_F32
        for (n = 0; n < N; n += 4) {
            if (rows == 1) {
                tile_1x4_mve(a[0], B + n, ldb, K, c[0], y + n, min_i32(4, N - n));
            } else {
                tile_4x4_mve(a, B + n, ldb, K, c, y + n, ldy, rows, min_i32(4, N - n));
            }
        }
#else
        if (rows == 1) {
            for (n = 0; n < N; n += 4) {
                tile_1x4(a[0], B + n, ldb, K, c[0], y + n, min_i32(4, N - n));
            }
            continue;
        }
        for (n = 0; n + 4 <= N; n += 4) {
            tile_4x4(a, B + n, ldb, K, c, y + n, ldy, rows);
        }
        for (; n < N; ++n) {
            float out[4];
            dot_4(a, B + n, ldb, K, c, out);
            for (i = 0; i < rows; ++i) {
                y[(size_t)i * (size_t)ldy + (size_t)n] = out[i];
            }
        }
#endif
    }
}

/* --- Gemm, MatMul ------------------------------------------------------------ */

int arena_k_gemm(const arena_ctx_t *c)
{
    const arena_attrs_t *a = c->op->attrs;
    const arena_tensor_t *at = arena_in(c, 0), *bt = arena_in(c, 1), *ct = arena_in(c, 2);
    const arena_tensor_t *yt = arena_out(c, 0);
    const float *A = (const float *)arena_in_data(c, 0);
    const float *B = (const float *)arena_in_data(c, 1);
    const float *C = ct != NULL ? (const float *)arena_in_data(c, 2) : NULL;
    float *Y = (float *)arena_out_data(c, 0);
    int32_t M, N, K, i, j, k, cm = 1, cn = 1;
    if (at == NULL || bt == NULL || yt == NULL || at->rank != 2 || bt->rank != 2 || yt->rank != 2 ||
        !arena_shape_ok(at) || !arena_shape_ok(bt) || !arena_shape_ok(yt) || (ct != NULL && !arena_shape_ok(ct))) {
        return ARENA_ERR_SHAPE;
    }
    if (!is_f32(at) || !is_f32(bt) || !is_f32(yt) || (ct != NULL && !is_f32(ct))) {
        return ARENA_ERR_UNSUPPORTED;
    }
    M = yt->shape[0];
    N = yt->shape[1];
    K = a->trans_a ? at->shape[0] : at->shape[1];
    if ((a->trans_a ? at->shape[1] : at->shape[0]) != M || (a->trans_b ? bt->shape[1] : bt->shape[0]) != K ||
        (a->trans_b ? bt->shape[0] : bt->shape[1]) != N) {
        return ARENA_ERR_SHAPE;
    }
    if (ct != NULL) { /* C broadcasts to [M, N] (unidirectionally) */
        if (ct->rank > 2) {
            return ARENA_ERR_SHAPE;
        }
        cn = ct->rank >= 1 ? ct->shape[ct->rank - 1] : 1;
        cm = ct->rank == 2 ? ct->shape[0] : 1;
        if ((cn != 1 && cn != N) || (cm != 1 && cm != M)) {
            return ARENA_ERR_SHAPE;
        }
    }
    if (a->trans_a) {
        for (i = 0; i < M; ++i) { /* A read down its columns: a plain loop (no model here does this) */
            for (j = 0; j < N; ++j) {
                float acc = 0.0f;
                for (k = 0; k < K; ++k) {
                    float bv = a->trans_b ? B[(size_t)j * (size_t)K + (size_t)k] : B[(size_t)k * (size_t)N + (size_t)j];
                    MAC(acc, A[(size_t)k * (size_t)M + (size_t)i], bv);
                }
                Y[(size_t)i * (size_t)N + (size_t)j] = acc;
            }
        }
    } else if (a->trans_b) {
        /* Y[i][j] = A row i . B row j, both contiguous: four rows of B per pass over A's row */
#if !ARENA_MVE_F32
        static const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#endif
        for (i = 0; i < M; ++i) {
            for (j = 0; j < N; j += 4) {
                int32_t nj = min_i32(4, N - j);
#if ARENA_MVE_F32
                dot_rows_mve(B + (size_t)j * (size_t)K, K, A + (size_t)i * (size_t)K, K,
                             Y + (size_t)i * (size_t)N + (size_t)j, nj);
#else
                int32_t t;
                const float *p[4];
                float out[4];
                for (t = 0; t < 4; ++t) {
                    p[t] = B + (size_t)(j + min_i32(t, nj - 1)) * (size_t)K;
                }
                dot_4(p, A + (size_t)i * (size_t)K, 1, K, zero, out);
                for (t = 0; t < nj; ++t) {
                    Y[(size_t)i * (size_t)N + (size_t)(j + t)] = out[t];
                }
#endif
            }
        }
    } else {
        arena_f32_gemm_nn(A, K, B, N, NULL, Y, N, M, N, K);
    }
    if (a->alpha != 1.0f || C != NULL) {
        for (i = 0; i < M; ++i) {
            float *yr = Y + (size_t)i * (size_t)N;
            const float *cr = C != NULL ? C + (size_t)(cm == 1 ? 0 : i) * (size_t)cn : NULL;
            for (j = 0; j < N; ++j) {
                float acc = yr[j] * a->alpha;
                if (cr != NULL) {
                    acc += a->beta * cr[cn == 1 ? 0 : j];
                }
                yr[j] = acc;
            }
        }
    }
    return ARENA_OK;
}
