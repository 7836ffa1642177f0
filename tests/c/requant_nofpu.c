/* The integer requantizations of cores without an FPU (ARENA_HAVE_FPU 0: requant_i, quantize_i,
 * add_i) against the float arithmetic they replace, computed here with the host's FPU: random
 * operands plus ones aimed at exact ties and at one unit around them, where a short cut that
 * ignored the float roundings would be off by one. Prints "<bad> bad of <n>" per function;
 * exit status 1 when any differs. Built by tests/test_requant_nofpu.py. */
#include <math.h>
#include <stdio.h>

#include "support_int8.h"
#include "quantize_int8.c"
#include "add_mul_int8.c"

static uint64_t st = 88172645463325252ull;
static uint64_t rnd(void)
{
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    return st;
}

/* arena_q_round(v, zp, lo, hi): rint, then zp, then the clamp, in float (a NaN gives lo). */
static int32_t q_round(float v, int32_t zp, int32_t lo, int32_t hi)
{
    float r = rintf(v) + (float)zp;
    return !(r > (float)lo) ? lo : r < (float)hi ? (int32_t)r : hi;
}

static void out_range(int32_t *zp, int32_t *lo, int32_t *hi)
{
    *zp = (int32_t)(rnd() % 256) - 128, *lo = -128, *hi = 127;
    if (rnd() % 3 == 0) {
        *zp = (int32_t)(rnd() % 256), *lo = 0, *hi = 255;
    }
    if (rnd() % 4 == 0) { /* an absorbed Relu */
        *lo = *zp > *lo ? *zp : *lo;
    }
}

static long check_requant(long iters, long *n)
{
    long bad = 0;
    for (long it = 0; it < iters; ++it) {
        int e = (int)(rnd() % 40) - 30;
        float mult = ldexpf(1.0f + (float)(rnd() % 8388608u) / 8388608.0f, e), ws = 1.0f;
        int32_t acc, zp, lo, hi;
        cparams_t p = {0};
        chan_t ch;
        qpar_t q;
        if (rnd() % 8 == 0) {
            mult = ldexpf((float)(rnd() % 64 + 1), e); /* short significands: exact ties */
        }
        p.xs = mult, p.ys = 1.0f, p.ws = &ws, p.nws = 1;
        ch = chan(&p, 0);
        switch (rnd() % 4) {
        case 0: acc = (int32_t)(rnd() % 2000001) - 1000000; break;
        case 1: acc = (int32_t)(rnd() % 65537) - 32768; break;
        case 2: acc = (int32_t)rnd(); break; /* past 2^24 too */
        default: acc = (int32_t)(rnd() % 40000001) - 20000000; break;
        }
        if (rnd() % 4 == 0) { /* acc * mult at a half, or one step from it */
            float a = ((float)((int)(rnd() % 600) - 300) + 0.5f) / mult;
            if (fabsf(a) < 2e9f) {
                acc = (int32_t)a + (int32_t)(rnd() % 3) - 1;
            }
        }
        out_range(&zp, &lo, &hi);
        q = qpar(zp, lo, hi);
        ++*n;
        if (requant_i(acc, &ch, &q) != q_round((float)acc * mult, zp, lo, hi)) {
            if (bad++ < 5) {
                printf("requant_i: acc %d mult %a\n", acc, (double)mult);
            }
        }
    }
    return bad;
}

static long check_quantize(long iters, long *n)
{
    static float x[1024];
    static uint8_t y[1024];
    long bad = 0;
    for (long it = 0; it < iters; ++it) {
        float scale = ldexpf(1.0f + (float)(rnd() % 8388608u) / 8388608.0f, (int)(rnd() % 30) - 20);
        int32_t zp, lo, hi, i;
        qpar_t q;
        if (rnd() % 4 == 0) {
            scale = ldexpf((float)(rnd() % 255 + 1), (int)(rnd() % 20) - 20);
        }
        for (i = 0; i < 1024; ++i) {
            uint32_t b = (uint32_t)rnd();
            float k = (float)((int)(rnd() % 1000) - 500) + 0.5f;
            switch (rnd() % 5) {
            case 0: memcpy(&x[i], &b, sizeof b); break; /* any bits: NaN, inf, subnormal */
            case 1: x[i] = k * scale; break;
            case 2: x[i] = nextafterf(k * scale, (rnd() & 1u) ? INFINITY : -INFINITY); break;
            case 3: x[i] = (float)(rnd() % 256) / 255.0f; break;
            default: x[i] = rnd() % 8 == 0 ? 0.0f : (float)((int)(rnd() % 2001) - 1000) * scale * 0.3f; break;
            }
        }
        out_range(&zp, &lo, &hi);
        q = qpar(zp, lo, hi);
        if (!quantize_i(x, y, 1024, scale, &q)) {
            printf("quantize_i refused scale %a\n", (double)scale);
            return bad + 1;
        }
        for (i = 0; i < 1024; ++i) {
            ++*n;
            if (y[i] != (uint8_t)q_round(x[i] / scale, zp, lo, hi) && bad++ < 5) {
                printf("quantize_i: x %a scale %a\n", (double)x[i], (double)scale);
            }
        }
    }
    return bad;
}

static long check_add(long iters, long *n)
{
    static int8_t a[2048], b[2048], y[2048];
    long bad = 0;
    for (long it = 0; it < iters; ++it) {
        float ra = ldexpf(1.0f + (float)(rnd() % 8388608u) / 8388608.0f, (int)(rnd() % 12) - 8);
        float rb = ldexpf(1.0f + (float)(rnd() % 8388608u) / 8388608.0f, (int)(rnd() % 12) - 8);
        int32_t az = (int32_t)(rnd() % 256) - 128, bz = (int32_t)(rnd() % 256) - 128, zp, lo, hi, i;
        uint32_t plane = rnd() % 3 == 0 ? 64u : 1u;
        qpar_t q;
        if (rnd() % 3 == 0) { /* short significands: exact ties */
            ra = ldexpf((float)(rnd() % 16 + 1), -(int)(rnd() % 6));
            rb = ldexpf((float)(rnd() % 16 + 1), -(int)(rnd() % 6));
        }
        for (i = 0; i < 2048; ++i) {
            a[i] = (int8_t)rnd();
            b[i] = (int8_t)rnd();
        }
        out_range(&zp, &lo, &hi);
        if (lo == 0) { /* int8 codes only */
            zp -= 128, lo = -128, hi = 127;
        }
        q = qpar(zp, lo, hi);
        if (!add_i(a, b, y, 2048, plane, az, bz, ra, rb, &q)) {
            continue;
        }
        for (i = 0; i < 2048; ++i) {
            int32_t bi = plane == 1u ? b[i] : b[(uint32_t)i / plane];
            ++*n;
            if (y[i] != (int8_t)q_round(ra * (float)(a[i] - az) + rb * (float)(bi - bz), zp, lo, hi) && bad++ < 5) {
                printf("add_i: a %d b %d ra %a rb %a\n", a[i], bi, (double)ra, (double)rb);
            }
        }
    }
    return bad;
}

int main(void)
{
    long n1 = 0, n2 = 0, n3 = 0;
    long b1 = check_requant(3000000, &n1), b2 = check_quantize(3000, &n2), b3 = check_add(3000, &n3);
    printf("requant_i %ld bad of %ld\nquantize_i %ld bad of %ld\nadd_i %ld bad of %ld\n", b1, n1, b2, n2, b3, n3);
    return b1 || b2 || b3 || n3 == 0;
}
