/* expf and tanhf for TFLite's float32 kernels (SOFTMAX, LOGISTIC, TANH), computing what the host's
 * C library computes, so that a float .tflite gives TFLite Micro's host interpreter's bits on every
 * board: newlib's expf and tanhf (fdlibm's) differ from glibc's in the last bit for some inputs.
 *
 * arena_tfl_expf: glibc's expf (2.27 on): x * 32 / ln 2 split into an integer k and r in [-1/2, 1/2],
 * 2^(k/32) from a 32-entry table of 2^(i/32) (each the correctly rounded double, less i << 47 in its bits)
 * times a degree-3 polynomial in r, all in double, rounded once to float. arena_tfl_tanhf: fdlibm's tanhf
 * on expm1f as glibc up to 2.40 builds them (2.41 replaced them with CORE-MATH's correctly rounded ones). Double and float steps in the order written
 * (C99: no contraction into fused multiply-adds), so the same bits on the host, a double-precision FPU, a
 * single-precision one (libgcc's double routines) or none. Measured against glibc 2.36 (x86-64) on every
 * 7th float32 bit pattern (611 million inputs): expf and tanhf equal on all (tests/run/test_tflite_arena.py
 * checks 4.3 million). */
#include <string.h>

#include "support_tfl.h"

static const uint64_t EXP2_32[32] = {
    0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu, 0x3fef9301d0125b51u,
    0x3fef72b83c7d517bu, 0x3fef54873168b9aau, 0x3fef387a6e756238u, 0x3fef1e9df51fdee1u,
    0x3fef06fe0a31b715u, 0x3feef1a7373aa9cbu, 0x3feedea64c123422u, 0x3feece086061892du,
    0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u, 0x3feea47eb03a5585u,
    0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u, 0x3feea11473eb0187u, 0x3feea589994cce13u,
    0x3feeace5422aa0dbu, 0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du,
    0x3feee89f995ad3adu, 0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu, 0x3fef3720dcef9069u,
    0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu, 0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u,
};

static uint32_t f_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static float f_from(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

float arena_tfl_expf(float x)
{
    const double inv_ln2_n = 0x1.71547652b82fep+0 * 32, shift = 0x1.8p+52;
    const double c0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32, c1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
    const double c2 = 0x1.62e42ff0c52d6p-1 / 32;
    uint32_t abstop = (f_bits(x) >> 20) & 0x7ffu;
    uint64_t ki, t;
    double xd = (double)x, z, kd, r, r2, y, s;
    if (abstop >= ((f_bits(88.0f) >> 20) & 0x7ffu)) { /* |x| >= 88, or NaN */
        if (f_bits(x) == 0xff800000u) {
            return 0.0f;
        }
        if (abstop >= 0x7f8u) {
            return x + x;
        }
        if (x > 0x1.62e42ep6f) {
            return f_from(0x7f800000u); /* overflow */
        }
        if (x < -0x1.9fe368p6f) {
            return 0.0f; /* underflow */
        }
    }
    z = inv_ln2_n * xd;
    kd = z + shift; /* rounds z to an integer, in the low bits of kd */
    memcpy(&ki, &kd, sizeof ki);
    kd -= shift;
    r = z - kd;
    t = EXP2_32[ki % 32u] + (ki << 47);
    memcpy(&s, &t, sizeof s);
    z = c0 * r + c1;
    r2 = r * r;
    y = c2 * r + 1.0;
    y = z * r2 + y;
    y = y * s;
    return (float)y;
}

/* fdlibm's expm1f (glibc's before 2.41: the five-term polynomial, FreeBSD's has two). */
static float tfl_expm1f(float x)
{
    const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f, invln2 = 1.4426950216e+00f;
    const float q1 = -3.3333335072e-02f, q2 = 1.5873016091e-03f, q3 = -7.9365076090e-05f, q4 = 4.0082177293e-06f;
    const float q5 = -2.0109921195e-07f;
    float y, hi, lo, c = 0.0f, t, e, hxs, hfx, r1;
    int32_t k;
    uint32_t hx = f_bits(x), xsb = hx & 0x80000000u;
    hx &= 0x7fffffffu;
    if (hx >= 0x4195b844u) { /* |x| >= 27 ln 2 */
        if (hx >= 0x42b17218u) {
            if (hx > 0x7f800000u) {
                return x + x;
            }
            if (hx == 0x7f800000u) {
                return xsb == 0u ? x : -1.0f;
            }
            if (x > 8.8721679688e+01f) {
                return f_from(0x7f800000u);
            }
        }
        if (xsb != 0u) {
            return 1.0e-30f - 1.0f;
        }
    }
    if (hx > 0x3eb17218u) { /* |x| > ln 2 / 2: reduce */
        if (hx < 0x3f851592u) {
            hi = xsb == 0u ? x - ln2_hi : x + ln2_hi;
            lo = xsb == 0u ? ln2_lo : -ln2_lo;
            k = xsb == 0u ? 1 : -1;
        } else {
            k = (int32_t)(invln2 * x + (xsb == 0u ? 0.5f : -0.5f));
            t = (float)k;
            hi = x - t * ln2_hi;
            lo = t * ln2_lo;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x33000000u) { /* |x| < 2^-25 */
        return x;
    } else {
        k = 0;
    }
    hfx = 0.5f * x;
    hxs = x * hfx;
    r1 = 1.0f + hxs * (q1 + hxs * (q2 + hxs * (q3 + hxs * (q4 + hxs * q5))));
    t = 3.0f - r1 * hfx;
    e = hxs * ((r1 - t) / (6.0f - x * t));
    if (k == 0) {
        return x - (x * e - hxs);
    }
    e = (x * (e - c) - c);
    e -= hxs;
    if (k == -1) {
        return 0.5f * (x - e) - 0.5f;
    }
    if (k == 1) {
        return x < -0.25f ? -2.0f * (e - (x + 0.5f)) : 1.0f + 2.0f * (x - e);
    }
    if (k <= -2 || k > 56) {
        y = 1.0f - (e - x);
        y = f_from(f_bits(y) + ((uint32_t)k << 23));
        return y - 1.0f;
    }
    if (k < 23) {
        t = f_from(0x3f800000u - (0x1000000u >> k)); /* 1 - 2^-k */
        y = t - (e - x);
    } else {
        t = f_from((uint32_t)(0x7f - k) << 23); /* 2^-k */
        y = x - (e + t);
        y += 1.0f;
    }
    return f_from(f_bits(y) + ((uint32_t)k << 23));
}

float arena_tfl_tanhf(float x)
{
    uint32_t jx = f_bits(x), ix = jx & 0x7fffffffu;
    float t, z;
    if (ix >= 0x7f800000u) { /* inf or NaN */
        return jx < 0x80000000u ? 1.0f / x + 1.0f : 1.0f / x - 1.0f;
    }
    if (ix < 0x41b00000u) { /* |x| < 22 */
        if (ix == 0u) {
            return x;
        }
        if (ix < 0x24000000u) { /* |x| < 2^-55 */
            return x * (1.0f + x);
        }
        if (ix >= 0x3f800000u) { /* |x| >= 1 */
            t = tfl_expm1f(2.0f * f_from(ix));
            z = 1.0f - 2.0f / (t + 2.0f);
        } else {
            t = tfl_expm1f(-2.0f * f_from(ix));
            z = -t / (t + 2.0f);
        }
    } else {
        z = 1.0f - 1.0e-30f;
    }
    return jx < 0x80000000u ? z : -z;
}
