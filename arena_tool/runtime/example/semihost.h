/* Semihosting calls (ARM "bkpt 0xAB" on M-profile), used by startup.c and
 * main.c when built for the target. QEMU needs -semihosting, else the bkpt
 * is a HardFault (see shared/research/qemu.md). */
#ifndef ARENA_SEMIHOST_H
#define ARENA_SEMIHOST_H

#include <stdint.h>

#define SH_SYS_WRITE0 0x04
#define SH_SYS_EXIT_EXTENDED 0x20
#define SH_ADP_STOPPED_APPLICATION_EXIT 0x20026
#define SH_STATUS_FAULT 70

static inline int sh_call(int op, const void *arg)
{
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static inline void sh_write0(const char *text)
{
    (void)sh_call(SH_SYS_WRITE0, text);
}

/* QEMU's exit status becomes `status` (SYS_EXIT_EXTENDED subcode). */
static inline __attribute__((noreturn)) void sh_exit(int status)
{
    uint32_t block[2];
    block[0] = SH_ADP_STOPPED_APPLICATION_EXIT;
    block[1] = (uint32_t)status;
    (void)sh_call(SH_SYS_EXIT_EXTENDED, block);
    for (;;) {
    }
}

#endif
