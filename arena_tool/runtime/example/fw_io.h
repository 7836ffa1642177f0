/* The example firmwares' printing and timing (main.c over arena's tables, tflm/main.cc over
 * TFLite Micro): one line builder (no printf), SysTick ticks of an inference, the calibration
 * loop, and the input pattern, so both firmwares print what arena_tool.run.verify.parse_output
 * reads. Static functions: include it once per firmware, from C or C++. */
#ifndef ARENA_FW_IO_H
#define ARENA_FW_IO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__arm__) && !defined(__linux__)
#include "semihost.h"
#define ARENA_TARGET 1
static void out(const char *text)
{
    sh_write0(text);
}

/* SysTick on the processor clock, 24-bit down counter; startup.c counts wraps.
 * Under QEMU with -icount shift=0 one instruction is 1 ns of virtual time. */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#ifdef __cplusplus
extern "C" volatile uint32_t arena_systick_wraps;
#else
extern volatile uint32_t arena_systick_wraps;
#endif

static uint32_t ticks_origin;

static void ticks_start(void)
{
    SYST_CSR = 0u;
    SYST_RVR = 0x00FFFFFFu;
    SYST_CVR = 0u;
    SYST_CSR = 7u; /* enable, interrupt on wrap, processor clock */
    while (SYST_CVR == 0u) {
        /* the first tick reloads the counter */
    }
    arena_systick_wraps = 0u;
    ticks_origin = SYST_CVR;
}

/* Ticks since ticks_start: the counter runs down from ticks_origin and
 * wraps every 2^24 ticks. */
static uint32_t ticks_stop(void)
{
    uint32_t wraps, val;
    do {
        wraps = arena_systick_wraps;
        val = SYST_CVR;
    } while (wraps != arena_systick_wraps);
    SYST_CSR = 0u;
    return wraps * 0x01000000u + ticks_origin - val;
}

/* Times a loop of exactly CALIBRATE_LOOPS * 2 instructions (subs + bne), so a
 * reader can check the ticks -> instructions rate (arena_tool/run/runreport.py).
 * Thumb-2 cores only (every QEMU machine arena targets); Thumb-1 inline asm
 * uses another syntax, and those cores print no calibrate line. */
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2
#define ARENA_CALIBRATE 1
#define CALIBRATE_LOOPS 25000u
static uint32_t calibrate(void)
{
    uint32_t n = CALIBRATE_LOOPS;
    ticks_start();
    __asm__ volatile("1:\n\tsubs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
    return ticks_stop();
}
#endif
#else
#include <stdio.h>
static void out(const char *text)
{
    fputs(text, stdout);
}
#endif

/* A tiny line builder: the firmware links no printf. */
static char line[160];
static size_t line_len;

static void put_s(const char *s)
{
    while (*s != '\0' && line_len + 1 < sizeof line) {
        line[line_len++] = *s++;
    }
    line[line_len] = '\0';
}

static void put_u(uint32_t v)
{
    char buf[11];
    int n = 0;
    do {
        buf[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u);
    while (n > 0 && line_len + 1 < sizeof line) {
        line[line_len++] = buf[--n];
    }
    line[line_len] = '\0';
}

static void put_i(int32_t v)
{
    if (v < 0) {
        put_s("-");
        put_u((uint32_t)0 - (uint32_t)v);
    } else {
        put_u((uint32_t)v);
    }
}

static void put_hex(uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    char buf[11];
    int i;
    buf[0] = '0';
    buf[1] = 'x';
    for (i = 0; i < 8; ++i) {
        buf[2 + i] = digits[(v >> (28 - 4 * i)) & 0xFu];
    }
    buf[10] = '\0';
    put_s(buf);
}

/* Readable only (six decimals, magnitudes below 1e9); the hex is exact. */
static void put_f(float f)
{
    uint32_t ip, fp;
    float a;
    if (f != f) {
        put_s("nan");
        return;
    }
    if (f < 0.0f) {
        put_s("-");
        f = -f;
    }
    if (f >= 1e9f) {
        put_s("inf-or-huge");
        return;
    }
    ip = (uint32_t)f;
    a = (f - (float)ip) * 1000000.0f + 0.5f;
    fp = (uint32_t)a;
    if (fp >= 1000000u) {
        ip += 1u;
        fp -= 1000000u;
    }
    put_u(ip);
    put_s(".");
    {
        uint32_t scale = 100000u;
        while (scale > 0u) {
            line[line_len++] = (char)('0' + (fp / scale) % 10u);
            scale /= 10u;
        }
        line[line_len] = '\0';
    }
}

static void flush(void)
{
    put_s("\n");
    out(line);
    line_len = 0;
    line[0] = '\0';
}

/* The calibration line (target, Thumb-2): "calibrate 50000 ticks 1250"; nothing elsewhere. */
static void print_calibration(void)
{
#if defined(ARENA_CALIBRATE)
    uint32_t ticks = calibrate();
    put_s("calibrate ");
    put_u(2u * CALIBRATE_LOOPS);
    put_s(" ticks ");
    put_u(ticks);
    flush();
#endif
}

/* Element i of input number `which`: main.c's pattern (arena_tool.run.verify.input_pattern is
 * its Python twin), before the per-type mapping (float: v / 125 - 1; int8: v - 125; uint8: v). */
static int32_t pattern_value(uint32_t i, uint32_t which)
{
    return (int32_t)((i * 7919u + 13u + which * 101u) % 251u);
}

#endif /* ARENA_FW_IO_H */
