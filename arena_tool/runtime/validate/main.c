/* Validation firmware: the board's models, run on inputs that arrive over its UART.
 *
 * `arena-tool validate` (arena_tool/run/validate.py, the host side of the same protocol) streams
 * a data set to this firmware and compares what comes back with onnxruntime. It links the board's
 * generated tables, arena and runtime exactly as the application firmware does (one more ELF of
 * the build graph, build/<board>/validate.elf); only this main.c replaces the application's.
 *
 * Frames, both ways (little-endian):
 *
 *   0xA5 0x5A  type:u8  seq:u8  length:u32  payload[length]  crc:u32
 *
 * crc is CRC-32 (IEEE 802.3, zlib's crc32) of type, seq, length and payload. A frame whose CRC or
 * length is wrong is never used: the firmware answers 'n' (NAK) and the host sends it again.
 * A host frame is received whole into one static buffer (VALIDATE_MAX_FRAME bytes of payload)
 * before any byte of it reaches the arena. The reply carries the request's seq. The host ends a
 * frame it sees unanswered with VALIDATE_MAX_FRAME + 16 zero bytes: they complete a frame the
 * firmware still waits for (its CRC then fails, 'n') and are skipped while it looks for 0xA5.
 *
 *   host 'H' hello    ()                          -> 'h' info (below)
 *   host 'I' input    model:u8 input:u8 0:u16 offset:u32 bytes  -> 'a' (empty)
 *                     the bytes of graph input `input` at `offset`, in order: a chunk at the
 *                     offset received so far appends, an earlier one is written again
 *   host 'R' run      model:u8                    -> 'r' result (below)
 *                     every input of the model must be complete; the inputs are then consumed.
 *                     A repeated 'R' (no 'I' since) sends the same result again without a run.
 *   any error         -> 'e' code:u8 text         (a request the firmware cannot serve)
 *
 *   info:   version:u8 timer:u8 profile:u8 models:u8 max_frame:u32 clock_hz:u32, then per model:
 *           name_len:u8 name n_inputs:u8 n_outputs:u8 n_ops:u16, then per input and output
 *           bytes:u32 dtype:u8
 *   result: model:u8 status:u8 timer:u8 0:u8 failed_op:i32 count:u32 n_counts:u32
 *           count[n_counts]:u32 (per op, -DARENA_PROFILE builds), then the outputs' bytes in order
 *
 * timer: 1 DWT CYCCNT (core cycles), 2 SysTick ticks of the processor clock. DWT is used where
 * the core has one (Armv7-M, Armv8-M Mainline) and its counter runs; QEMU 7.2 reads the DWT as
 * zero, so under QEMU the time is SysTick's, counted as example/main.c counts it (the same
 * instructions in the timed window: `arena-tool run`'s count). With -DARENA_PROFILE each op is
 * timed alone (arena_run's hook) and count is their sum.
 *
 * No heap: the inputs are written at their planned place in the board's arena, the outputs are
 * sent from theirs. The UART is the board file's (`uart:`), given as ARENA_UART_* macros.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena_model.h"

#define VALIDATE_VERSION 1u
#define VALIDATE_MAX_FRAME 1024u
#define TIMER_DWT 1u
#define TIMER_SYSTICK 2u
#ifndef ARENA_UART_BASE
#error "ARENA_UART_BASE: the validation firmware needs the board file's uart: (base, baud)"
#endif
#ifndef ARENA_UART_BAUD
#define ARENA_UART_BAUD 115200u
#endif
#ifndef ARENA_CLOCK_HZ
#define ARENA_CLOCK_HZ 25000000u
#endif
#ifndef VALIDATE_MAX_OPS
#define VALIDATE_MAX_OPS 512u
#endif

/* --- the UART ------------------------------------------------------------------------------
 *
 * The board file's uart: kind picks the register interface (one of):
 *   ARENA_UART_CMSDK_APB       Arm CMSDK APB UART (the MPS2 boards)
 *   ARENA_UART_STM32_USART     STM32 USART with ISR/RDR/TDR (F0, F3, F7, G0, G4, H7, L4, WB...)
 *   ARENA_UART_STM32_LPUART    STM32 LPUART (the same registers, BRR = 256 x clock / baud)
 *   ARENA_UART_STM32F4_USART   STM32 USART with SR/DR (F1, F2, F4, L1)
 * ARENA_UART_CLOCK_HZ is the UART's kernel clock as this firmware leaves it (it sets no PLL),
 * ARENA_UART_SETUP_<k>_{ADDR,MASK,VALUE} (k = 0..7) the register writes that route it first
 * (clock enables, pins to their alternate function): *ADDR = (*ADDR & ~MASK) | VALUE, in order. */

#ifndef ARENA_UART_CLOCK_HZ
#define ARENA_UART_CLOCK_HZ ARENA_CLOCK_HZ
#endif
#define REG(offset) (*(volatile uint32_t *)(ARENA_UART_BASE + (offset)))

#if defined(ARENA_UART_STM32_USART) || defined(ARENA_UART_STM32_LPUART)
#define UART_CR1 REG(0x00u) /* bit0 UE, bit2 RE, bit3 TE, bit5 RXNEIE */
#define UART_BRR REG(0x0Cu)
#define UART_ISR REG(0x1Cu) /* bit3 ORE, bit5 RXNE, bit7 TXE */
#define UART_ICR REG(0x20u) /* bit3 ORECF */
#define UART_RDR REG(0x24u)
#define UART_TDR REG(0x28u)
#define UART_ENABLE (1u | 4u | 8u)
#define UART_RX_READY() ((UART_ISR & 0x20u) != 0u)
#define UART_TX_FULL() ((UART_ISR & 0x80u) == 0u)
#define UART_READ() (UART_ICR = 8u, (uint8_t)UART_RDR) /* an overrun loses a byte: its frame is NAKed */
#define UART_WRITE(c) (UART_TDR = (c))
#elif defined(ARENA_UART_STM32F4_USART)
#define UART_SR REG(0x00u) /* bit5 RXNE, bit7 TXE; reading SR then DR clears an overrun */
#define UART_DR REG(0x04u)
#define UART_BRR REG(0x08u)
#define UART_CR1 REG(0x0Cu) /* bit2 RE, bit3 TE, bit5 RXNEIE, bit13 UE */
#define UART_ENABLE (0x2000u | 4u | 8u)
#define UART_RX_READY() ((UART_SR & 0x20u) != 0u)
#define UART_TX_FULL() ((UART_SR & 0x80u) == 0u)
#define UART_READ() ((uint8_t)UART_DR)
#define UART_WRITE(c) (UART_DR = (c))
#elif defined(ARENA_UART_CMSDK_APB)
#define UART_DATA REG(0x00u)
#define UART_STATE REG(0x04u) /* bit0 TX full, bit1 RX full */
#define UART_CTRL REG(0x08u)  /* bit0 TX enable, bit1 RX enable, bit3 RX irq */
#define UART_INTCLEAR REG(0x0Cu)
#define UART_BAUDDIV REG(0x10u)
#define UART_RX_READY() ((UART_STATE & 2u) != 0u)
#define UART_TX_FULL() ((UART_STATE & 1u) != 0u)
#define UART_READ() ((uint8_t)UART_DATA)
#define UART_WRITE(c) (UART_DATA = (c))
#else
#error "the board file's uart: kind: none of ARENA_UART_CMSDK_APB, ARENA_UART_STM32_USART, ARENA_UART_STM32_LPUART, ARENA_UART_STM32F4_USART"
#endif
#if defined(ARENA_UART_STM32_USART) || defined(ARENA_UART_STM32_LPUART) || defined(ARENA_UART_STM32F4_USART)
#define STM32_USART 1
#else
#define STM32_USART 0
#endif

static void setup_write(uint32_t address, uint32_t mask, uint32_t value)
{
    volatile uint32_t *r = (volatile uint32_t *)address;
    *r = (*r & ~mask) | value;
}

static void uart_setup(void)
{
#define SETUP(k) setup_write(ARENA_UART_SETUP_##k##_ADDR, ARENA_UART_SETUP_##k##_MASK, ARENA_UART_SETUP_##k##_VALUE)
#ifdef ARENA_UART_SETUP_0_ADDR
    SETUP(0);
#endif
#ifdef ARENA_UART_SETUP_1_ADDR
    SETUP(1);
#endif
#ifdef ARENA_UART_SETUP_2_ADDR
    SETUP(2);
#endif
#ifdef ARENA_UART_SETUP_3_ADDR
    SETUP(3);
#endif
#ifdef ARENA_UART_SETUP_4_ADDR
    SETUP(4);
#endif
#ifdef ARENA_UART_SETUP_5_ADDR
    SETUP(5);
#endif
#ifdef ARENA_UART_SETUP_6_ADDR
    SETUP(6);
#endif
#ifdef ARENA_UART_SETUP_7_ADDR
    SETUP(7);
#endif
#undef SETUP
    __asm__ volatile("dsb" ::: "memory"); /* a clock enabled before its peripheral is touched */
}

#if defined(ARENA_UART_RX_IRQ)
/* The receiver's interrupt (the board file's uart: rx_irq) wakes the core from WFI when a byte
 * arrives, instead of a loop polling the receiver: under QEMU every register read takes the lock
 * the emulator's I/O thread needs to deliver the next byte, and a polling loop starves it (2 KB/s
 * where waiting in WFI moves the bytes at the host's pace). A vector table of our own (VTOR)
 * holds its handler, startup.c's core vectors first. The CMSDK UART's handler only clears the
 * request; an STM32 USART's request stays up until its data register is read, so its handler
 * moves the byte into a ring that uart_get reads. */
#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define NVIC_ISER ((volatile uint32_t *)0xE000E100u)
typedef void (*vector_t)(void);
extern const vector_t arena_vectors[16];
void Default_Handler(void);
#if STM32_USART
#define RING 256u
static volatile uint8_t ring[RING];
static volatile uint32_t ring_head, ring_tail;
static void uart_rx_handler(void)
{
    while (UART_RX_READY()) {
        uint8_t c = UART_READ();
        if (ring_head - ring_tail < RING) { /* full: the byte is lost, its frame NAKed */
            ring[ring_head % RING] = c;
            ++ring_head;
        }
    }
}
#define RX_PENDING() (ring_head != ring_tail)
#else
static void uart_rx_handler(void)
{
    UART_INTCLEAR = 2u;
}
#define RX_PENDING() UART_RX_READY()
#endif
#define N_VECTORS (16u + (uint32_t)(ARENA_UART_RX_IRQ) + 1u)
static vector_t vectors[N_VECTORS] __attribute__((aligned(512)));
#endif

static void uart_init(void)
{
    uart_setup();
#if STM32_USART
    UART_CR1 = 0u;
#if defined(ARENA_UART_STM32_LPUART) /* a constant: no division at run time */
    UART_BRR = (uint32_t)(((uint64_t)ARENA_UART_CLOCK_HZ * 256u + ARENA_UART_BAUD / 2u) / ARENA_UART_BAUD);
#else
    UART_BRR = (ARENA_UART_CLOCK_HZ + ARENA_UART_BAUD / 2u) / ARENA_UART_BAUD; /* 16x oversampling */
#endif
#else
    UART_BAUDDIV = ARENA_UART_CLOCK_HZ / ARENA_UART_BAUD;
#endif
#if defined(ARENA_UART_RX_IRQ)
    {
        uint32_t i;
        for (i = 0u; i < N_VECTORS; ++i) {
            vectors[i] = i < 16u ? arena_vectors[i] : Default_Handler;
        }
        vectors[16u + ARENA_UART_RX_IRQ] = uart_rx_handler;
        SCB_VTOR = (uint32_t)(uintptr_t)vectors;
        __asm__ volatile("dsb\n\tisb" ::: "memory");
        NVIC_ISER[ARENA_UART_RX_IRQ / 32u] = 1u << (ARENA_UART_RX_IRQ % 32u);
    }
#if STM32_USART
    UART_CR1 = UART_ENABLE | 0x20u; /* RXNEIE */
#else
    UART_CTRL = 3u | 8u;
#endif
#elif STM32_USART
    UART_CR1 = UART_ENABLE;
#else
    UART_CTRL = 3u;
#endif
}

static uint8_t uart_get(void)
{
#if defined(ARENA_UART_RX_IRQ)
    for (;;) {
        __asm__ volatile("cpsid i" ::: "memory");
        if (RX_PENDING()) {
            break;
        }
        __asm__ volatile("wfi" ::: "memory"); /* a byte that came after the test wakes it too */
        __asm__ volatile("cpsie i" ::: "memory");
    }
#if STM32_USART
    {
        uint8_t c = ring[ring_tail % RING];
        ++ring_tail;
        __asm__ volatile("cpsie i" ::: "memory");
        return c;
    }
#else
    __asm__ volatile("cpsie i" ::: "memory");
#endif
#else
    while (!UART_RX_READY()) {
    }
#endif
    return UART_READ();
}

static void uart_put(uint8_t c)
{
    while (UART_TX_FULL()) {
    }
    UART_WRITE(c);
}

/* --- time: DWT CYCCNT where it counts, else SysTick (as example/fw_io.h) ------------------- */

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define DWT_CTRL (*(volatile uint32_t *)0xE0001000u)
#define DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)

extern volatile uint32_t arena_systick_wraps; /* startup.c's SysTick handler counts wraps */
static uint32_t timer_kind = TIMER_SYSTICK;
static uint32_t ticks_origin;

static void timer_init(void)
{
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
    uint32_t a;
    volatile uint32_t spin;
    DEMCR |= 1u << 24; /* TRCENA */
    if ((DEMCR & (1u << 24)) != 0u && (DWT_CTRL & (1u << 25)) == 0u) { /* NOCYCCNT clear */
        DWT_CYCCNT = 0u;
        DWT_CTRL |= 1u;
        a = DWT_CYCCNT;
        for (spin = 0u; spin < 100u; ++spin) {
        }
        if (DWT_CYCCNT != a) {
            timer_kind = TIMER_DWT;
        }
    }
#endif
}

/* example/fw_io.h's SysTick count, to the instruction: the same window as `arena-tool run`'s. */
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

#if !defined(ARENA_PROFILE)
/* One inference of m, timed: DWT cycles or SysTick ticks. */
static int timed_run(const arena_model_t *m, uint8_t *base, int *failed, uint32_t *count)
{
    int rc;
    if (timer_kind == TIMER_DWT) {
        uint32_t start = DWT_CYCCNT;
        rc = arena_run(m, base, failed);
        *count = DWT_CYCCNT - start;
        return rc;
    }
    ticks_start();
    rc = arena_run(m, base, failed);
    *count = ticks_stop();
    return rc;
}
#endif

/* --- frames -------------------------------------------------------------------------------- */

static uint32_t crc_table[256];

static void crc_init(void)
{
    uint32_t i, k, c;
    for (i = 0u; i < 256u; ++i) {
        c = i;
        for (k = 0u; k < 8u; ++k) {
            c = (c & 1u) != 0u ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[i] = c;
    }
}

static uint32_t crc_add(uint32_t crc, const uint8_t *p, uint32_t n)
{
    while (n-- != 0u) {
        crc = crc_table[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
    }
    return crc;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void set32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* A reply is sent in pieces (header, its fields, tensors straight from the arena), the CRC
 * running over them. */
static uint32_t tx_crc;

static void tx_bytes(const void *data, uint32_t n)
{
    const uint8_t *p = (const uint8_t *)data;
    uint32_t i;
    tx_crc = crc_add(tx_crc, p, n);
    for (i = 0u; i < n; ++i) {
        uart_put(p[i]);
    }
}

static void tx_begin(uint8_t type, uint8_t seq, uint32_t length)
{
    uint8_t head[6];
    uart_put(0xA5u);
    uart_put(0x5Au);
    head[0] = type;
    head[1] = seq;
    set32(head + 2, length);
    tx_crc = 0xFFFFFFFFu;
    tx_bytes(head, sizeof head);
}

static void tx_end(void)
{
    uint8_t tail[4];
    set32(tail, tx_crc ^ 0xFFFFFFFFu);
    tx_crc = 0u;
    {
        uint32_t i;
        for (i = 0u; i < 4u; ++i) {
            uart_put(tail[i]);
        }
    }
}

static void tx_u8(uint8_t v)
{
    tx_bytes(&v, 1u);
}

static void tx_u32(uint32_t v)
{
    uint8_t b[4];
    set32(b, v);
    tx_bytes(b, 4u);
}

static void reply_error(uint8_t seq, uint8_t code, const char *text)
{
    uint32_t n = (uint32_t)strlen(text);
    tx_begin('e', seq, 1u + n);
    tx_u8(code);
    tx_bytes(text, n);
    tx_end();
}

/* One host frame: type, seq, length and payload in rx; 1 when its CRC holds, 0 when not (the
 * caller NAKs). Bytes before the sync are skipped. */
static uint8_t rx[6u + VALIDATE_MAX_FRAME + 4u]; /* type, seq, length; payload; crc */

static int receive(uint8_t *type, uint8_t *seq, uint32_t *length)
{
    uint32_t n, i, crc;
    uint8_t prev = 0u, c = 0u;
    while (!(prev == 0xA5u && c == 0x5Au)) {
        prev = c;
        c = uart_get();
    }
    for (i = 0u; i < 6u; ++i) {
        rx[i] = uart_get();
    }
    *type = rx[0];
    *seq = rx[1];
    n = get32(rx + 2);
    *length = n;
    if (n > VALIDATE_MAX_FRAME) {
        return 0;
    }
    for (i = 0u; i < n + 4u; ++i) {
        rx[6u + i] = uart_get();
    }
    crc = crc_add(0xFFFFFFFFu, rx, 6u + n) ^ 0xFFFFFFFFu;
    return crc == get32(rx + 6u + n);
}

/* --- the models ---------------------------------------------------------------------------- */

static uint32_t tensor_bytes(const arena_model_t *m, int32_t index)
{
    const arena_tensor_t *t = &m->tensors[index];
    return t->elements * (uint32_t)arena_dtype_size(t->dtype);
}

#define MAX_INPUTS 16u
static uint32_t filled[MAX_INPUTS]; /* bytes of each input of `current` received so far */
static uint32_t current = 0xFFFFFFFFu; /* the model the inputs are for */
static uint32_t last_run = 0xFFFFFFFFu; /* the model whose outputs the arena holds (no input since) */
static int last_status;
static int last_failed;
static uint32_t last_count;
#if defined(ARENA_PROFILE)
static uint32_t op_counts[VALIDATE_MAX_OPS];
static uint32_t op_total;

void arena_profile_op(const arena_model_t *m, uint32_t op, int done)
{
    static uint32_t start;
    uint32_t count;
    (void)m;
    if (!done) {
        if (timer_kind == TIMER_DWT) {
            start = DWT_CYCCNT;
        } else {
            ticks_start();
        }
        return;
    }
    count = timer_kind == TIMER_DWT ? DWT_CYCCNT - start : ticks_stop();
    if (op < VALIDATE_MAX_OPS) {
        op_counts[op] = count;
    }
    op_total += count;
}
#endif

static void send_info(uint8_t seq)
{
    uint32_t e, k, size = 12u;
    for (e = 0u; e < arena_entry_count; ++e) {
        const arena_model_t *m = arena_entries[e].model;
        size += 1u + (uint32_t)strlen(m->name) + 4u + 5u * ((uint32_t)m->n_inputs + m->n_outputs);
    }
    tx_begin('h', seq, size);
    tx_u8(VALIDATE_VERSION);
    tx_u8((uint8_t)timer_kind);
#if defined(ARENA_PROFILE)
    tx_u8(1u);
#else
    tx_u8(0u);
#endif
    tx_u8((uint8_t)arena_entry_count);
    tx_u32(VALIDATE_MAX_FRAME);
    tx_u32(ARENA_CLOCK_HZ);
    for (e = 0u; e < arena_entry_count; ++e) {
        const arena_model_t *m = arena_entries[e].model;
        uint32_t n = (uint32_t)strlen(m->name);
        tx_u8((uint8_t)n);
        tx_bytes(m->name, n);
        tx_u8((uint8_t)m->n_inputs);
        tx_u8((uint8_t)m->n_outputs);
        tx_u8((uint8_t)m->n_ops);
        tx_u8((uint8_t)(m->n_ops >> 8));
        for (k = 0u; k < (uint32_t)m->n_inputs + m->n_outputs; ++k) {
            int32_t t = k < m->n_inputs ? m->inputs[k] : m->outputs[k - m->n_inputs];
            tx_u32(tensor_bytes(m, t));
            tx_u8(m->tensors[t].dtype);
        }
    }
    tx_end();
}

static void take_input(uint8_t seq, const uint8_t *p, uint32_t n)
{
    uint32_t model, k, offset, bytes;
    const arena_model_t *m;
    if (n < 8u) {
        reply_error(seq, 1u, "input frame shorter than its header");
        return;
    }
    model = p[0];
    k = p[1];
    offset = get32(p + 4);
    n -= 8u;
    if (model >= arena_entry_count) {
        reply_error(seq, 2u, "no such model");
        return;
    }
    m = arena_entries[model].model;
    if (k >= m->n_inputs || k >= MAX_INPUTS) {
        reply_error(seq, 3u, "no such input");
        return;
    }
    bytes = tensor_bytes(m, m->inputs[k]);
    if (model != current) {
        memset(filled, 0, sizeof filled);
        current = model;
    }
    if (offset > filled[k] || n > bytes || offset > bytes - n) {
        reply_error(seq, 4u, "input chunk out of order or past the tensor's end");
        return;
    }
    memcpy((uint8_t *)arena_tensor_data(m, arena + arena_entries[model].base, m->inputs[k]) + offset, p + 8, n);
    if (offset + n > filled[k]) {
        filled[k] = offset + n;
    }
    last_run = 0xFFFFFFFFu; /* the arena no longer holds those outputs */
    tx_begin('a', seq, 0u);
    tx_end();
}

static void run_model(uint8_t seq, const uint8_t *p, uint32_t n)
{
    uint32_t model, k, size, counts = 0u;
    const arena_model_t *m;
    uint8_t *base;
    if (n < 1u || p[0] >= arena_entry_count) {
        reply_error(seq, 2u, "no such model");
        return;
    }
    model = p[0];
    m = arena_entries[model].model;
    base = arena + arena_entries[model].base;
    if (last_run != model) {
        for (k = 0u; k < m->n_inputs; ++k) {
            if (model != current || k >= MAX_INPUTS || filled[k] != tensor_bytes(m, m->inputs[k])) {
                reply_error(seq, 5u, "an input of the model is incomplete");
                return;
            }
        }
        last_failed = -1;
#if defined(ARENA_PROFILE)
        memset(op_counts, 0, sizeof op_counts);
        op_total = 0u;
        last_status = arena_run(m, base, &last_failed);
        last_count = op_total;
#else
        last_status = timed_run(m, base, &last_failed, &last_count);
#endif
        memset(filled, 0, sizeof filled);
        current = 0xFFFFFFFFu;
        last_run = model;
    }
#if defined(ARENA_PROFILE)
    counts = m->n_ops < VALIDATE_MAX_OPS ? m->n_ops : VALIDATE_MAX_OPS;
#endif
    size = 16u + 4u * counts;
    if (last_status == ARENA_OK) {
        for (k = 0u; k < m->n_outputs; ++k) {
            size += tensor_bytes(m, m->outputs[k]);
        }
    }
    tx_begin('r', seq, size);
    tx_u8((uint8_t)model);
    tx_u8((uint8_t)last_status);
    tx_u8((uint8_t)timer_kind);
    tx_u8(0u);
    tx_u32((uint32_t)last_failed);
    tx_u32(last_count);
    tx_u32(counts);
#if defined(ARENA_PROFILE)
    for (k = 0u; k < counts; ++k) {
        tx_u32(op_counts[k]);
    }
#endif
    if (last_status == ARENA_OK) {
        for (k = 0u; k < m->n_outputs; ++k) {
            tx_bytes(arena_tensor_data(m, base, m->outputs[k]), tensor_bytes(m, m->outputs[k]));
        }
    }
    tx_end();
}

int main(void)
{
    uint8_t type, seq;
    uint32_t n;
    uart_init();
    crc_init();
    timer_init();
    for (;;) {
        if (!receive(&type, &seq, &n)) {
            tx_begin('n', seq, 0u);
            tx_end();
            continue;
        }
        switch (type) {
        case 'H': send_info(seq); break;
        case 'I': take_input(seq, rx + 6, n); break;
        case 'R': run_model(seq, rx + 6, n); break;
        default: reply_error(seq, 6u, "unknown frame type"); break;
        }
    }
}
