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

/* The compiler may emit calls to these even in freestanding code; the
 * firmware links no libc, so define them here (byte loops: small, and only
 * used for view copies). */
void *memcpy(void *dst, const void *src, size_t n)
{
    volatile uint8_t *d = (volatile uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    while (n--) {
        *d++ = *s++;
    }
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    volatile uint8_t *d = (volatile uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    if (d < s) {
        while (n--) {
            *d++ = *s++;
        }
    } else if (d > s) {
        while (n--) {
            d[n] = s[n];
        }
    }
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    volatile uint8_t *d = (volatile uint8_t *)dst;
    while (n--) {
        *d++ = (uint8_t)c;
    }
    return dst;
}
