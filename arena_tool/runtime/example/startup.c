/* Bare-metal Cortex-M startup for the example firmware.
 *
 * Symbols come from the linker script that arena_tool/emit/linker.py generates:
 * _sidata (load address of .data in flash), _sdata/_edata (.data in RAM),
 * _sbss/_ebss (.bss), _estack (initial stack pointer). The vector table goes
 * in section ".isr_vector", which the script keeps at the start of flash.
 * Reset_Handler copies .data, zeroes .bss, enables the FPU when the build
 * uses one, runs the init array (constructors: the generated arena_init that
 * copies weights placed in RAM, weights: <region>), runs main() and ends the
 * program with semihosting
 * SYS_EXIT_EXTENDED, so QEMU's exit status is main's return value.
 * The .arena section is NOLOAD and left uninitialised on purpose: the
 * runtime must never rely on its contents.
 */
#include <stddef.h>
#include <stdint.h>

#include "semihost.h"

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];
extern uint32_t _estack[];
/* Weak: a linker script without an init array links too (both are then 0: nothing runs). */
typedef void (*init_fn_t)(void);
extern init_fn_t __init_array_start[] __attribute__((weak));
extern init_fn_t __init_array_end[] __attribute__((weak));

int main(void);
void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
void SysTick_Handler(void);

/* SysTick wraps (main.c measures each inference with SysTick). */
volatile uint32_t arena_systick_wraps;

void Reset_Handler(void)
{
    uint32_t *src = _sidata;
    uint32_t *dst = _sdata;
    while (dst < _edata) {
        *dst++ = *src++;
    }
    for (dst = _sbss; dst < _ebss; ++dst) {
        *dst = 0u;
    }
#if defined(__ARM_FP)
    /* CPACR: full access to CP10 and CP11 (the FPU). */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    for (init_fn_t *fn = __init_array_start; fn < __init_array_end; ++fn) {
        (*fn)();
    }
    sh_exit(main());
}

void HardFault_Handler(void)
{
    sh_write0("fatal: HardFault\n");
    sh_exit(SH_STATUS_FAULT);
}

void Default_Handler(void)
{
    sh_write0("fatal: unexpected exception\n");
    sh_exit(SH_STATUS_FAULT);
}

void SysTick_Handler(void)
{
    arena_systick_wraps += 1u;
}

typedef void (*vector_t)(void);

/* Initial SP, then the 15 system exceptions (Reset .. SysTick). */
__attribute__((section(".isr_vector"), used))
const vector_t arena_vectors[16] = {
    (vector_t)(uintptr_t)_estack,
    Reset_Handler,
    Default_Handler,   /* NMI */
    HardFault_Handler,
    HardFault_Handler, /* MemManage */
    HardFault_Handler, /* BusFault */
    HardFault_Handler, /* UsageFault */
    0, 0, 0, 0,
    Default_Handler,   /* SVCall */
    Default_Handler,   /* DebugMon */
    0,
    Default_Handler,   /* PendSV */
    SysTick_Handler,
};

/* The compiler may emit calls to these even in freestanding code, and the kernels call
 * them to copy channels and rows; the firmware links no libc, so they are defined here,
 * a word at a time where the addresses allow it (the bytes before and after one at a
 * time). The accesses are volatile so that GCC does not turn these loops back into calls
 * to memcpy/memset themselves. */
#if defined(__ARM_FEATURE_UNALIGNED)
#define WORDS_OK(d, s) 1 /* LDR/STR take any address on these cores */
#else
#define WORDS_OK(d, s) ((((uintptr_t)(d) ^ (uintptr_t)(s)) & 3u) == 0u)
#endif

/* Copies n bytes upwards, which is also right for an overlap with dst below src. */
static void copy_up(uint8_t *d, const uint8_t *s, size_t n)
{
    if (n >= 8u && WORDS_OK(d, s)) {
        while (((uintptr_t)d & 3u) != 0u) {
            *(volatile uint8_t *)d++ = *s++;
            --n;
        }
        for (; n >= 16u; n -= 16u, d += 16, s += 16) {
            uint32_t a = *(const volatile uint32_t *)s, b = *(const volatile uint32_t *)(s + 4);
            uint32_t c = *(const volatile uint32_t *)(s + 8), e = *(const volatile uint32_t *)(s + 12);
            *(volatile uint32_t *)d = a;
            *(volatile uint32_t *)(d + 4) = b;
            *(volatile uint32_t *)(d + 8) = c;
            *(volatile uint32_t *)(d + 12) = e;
        }
        for (; n >= 4u; n -= 4u, d += 4, s += 4) {
            *(volatile uint32_t *)d = *(const volatile uint32_t *)s;
        }
    }
    while (n--) {
        *(volatile uint8_t *)d++ = *s++;
    }
}

void *memcpy(void *dst, const void *src, size_t n)
{
    copy_up((uint8_t *)dst, (const uint8_t *)src, n);
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    volatile uint8_t *d = (volatile uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    if (d < s) {
        copy_up((uint8_t *)dst, s, n);
    } else if (d > s) {
        while (n--) {
            d[n] = s[n];
        }
    }
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    if (n >= 8u) {
        uint32_t v = (uint32_t)(uint8_t)c * 0x01010101u;
        while (((uintptr_t)d & 3u) != 0u) {
            *(volatile uint8_t *)d++ = (uint8_t)c;
            --n;
        }
        for (; n >= 16u; n -= 16u, d += 16) {
            *(volatile uint32_t *)d = v;
            *(volatile uint32_t *)(d + 4) = v;
            *(volatile uint32_t *)(d + 8) = v;
            *(volatile uint32_t *)(d + 12) = v;
        }
        for (; n >= 4u; n -= 4u, d += 4) {
            *(volatile uint32_t *)d = v;
        }
    }
    while (n--) {
        *(volatile uint8_t *)d++ = (uint8_t)c;
    }
    return dst;
}
