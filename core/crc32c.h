/* CRC32C (Castagnoli, reflected poly 0x82F63B78), as Kafka's RecordBatch v2 uses it.
 * Hardware path: SSE4.2 crc32 instruction, chosen once at runtime by cpuid; three interleaved streams hide the
 * instruction's 3-cycle latency. Software path: slice-by-8 tables. Both work on a pointer: nothing is copied. */
#ifndef CYKAFKA_CRC32C_H
#define CYKAFKA_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint32_t cyk_crc32c_table[8][256];
static int cyk_crc32c_mode = -1; /* -1 unknown, 0 software, 1 sse4.2 */

static void cyk_crc32c_init_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        cyk_crc32c_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = cyk_crc32c_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = cyk_crc32c_table[0][c & 0xff] ^ (c >> 8);
            cyk_crc32c_table[k][n] = c;
        }
    }
}

static uint32_t cyk_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n) {
    crc = ~crc;
    while (n && ((uintptr_t)p & 7)) { crc = cyk_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8); n--; }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = cyk_crc32c_table[7][w & 0xff] ^ cyk_crc32c_table[6][(w >> 8) & 0xff] ^
              cyk_crc32c_table[5][(w >> 16) & 0xff] ^ cyk_crc32c_table[4][(w >> 24) & 0xff] ^
              cyk_crc32c_table[3][(w >> 32) & 0xff] ^ cyk_crc32c_table[2][(w >> 40) & 0xff] ^
              cyk_crc32c_table[1][(w >> 48) & 0xff] ^ cyk_crc32c_table[0][w >> 56];
        p += 8; n -= 8;
    }
    while (n--) crc = cyk_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define CYK_CRC_HW 1

#define CYK_CRC_BLOCK 4096 /* bytes per interleaved stream; 8*4096 = 2^15 bits */
static uint32_t cyk_crc32c_shift_block[32]; /* GF(2) operator: append 8*CYK_CRC_BLOCK zero bits to a register */

static uint32_t cyk_apply(const uint32_t *op, uint32_t crc) {
    uint32_t s = 0;
    for (int j = 0; crc; j++, crc >>= 1) if (crc & 1) s ^= op[j];
    return s;
}

static void cyk_crc32c_setup_shift(void) {
    uint32_t a[32], b[32];
    a[0] = 0x82F63B78u; /* one zero bit */
    for (int i = 1; i < 32; i++) a[i] = 1u << (i - 1);
    for (int k = 0; k < 15; k++) { /* square 15 times: 2^15 zero bits */
        for (int i = 0; i < 32; i++) b[i] = cyk_apply(a, a[i]);
        memcpy(a, b, sizeof a);
    }
    memcpy(cyk_crc32c_shift_block, a, sizeof a);
}

__attribute__((target("sse4.2")))
static uint32_t cyk_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) {
    uint64_t c0 = (uint32_t)~crc;
    while (n && ((uintptr_t)p & 7)) { c0 = _mm_crc32_u8((uint32_t)c0, *p++); n--; }
    /* three streams of CYK_CRC_BLOCK bytes each, combined by shifting */
    while (n >= 3 * CYK_CRC_BLOCK) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *p1 = p + CYK_CRC_BLOCK, *p2 = p + 2 * CYK_CRC_BLOCK;
        for (size_t i = 0; i < CYK_CRC_BLOCK; i += 8) {
            uint64_t w0, w1, w2;
            memcpy(&w0, p + i, 8); memcpy(&w1, p1 + i, 8); memcpy(&w2, p2 + i, 8);
            c0 = _mm_crc32_u64(c0, w0); c1 = _mm_crc32_u64(c1, w1); c2 = _mm_crc32_u64(c2, w2);
        }
        c0 = cyk_apply(cyk_crc32c_shift_block, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = cyk_apply(cyk_crc32c_shift_block, (uint32_t)c0) ^ (uint32_t)c2;
        p += 3 * CYK_CRC_BLOCK; n -= 3 * CYK_CRC_BLOCK;
    }
    while (n >= 8) { uint64_t w; memcpy(&w, p, 8); c0 = _mm_crc32_u64(c0, w); p += 8; n -= 8; }
    while (n--) c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return ~(uint32_t)c0;
}
#endif

static void cyk_crc32c_setup(void) {
    cyk_crc32c_init_table();
    cyk_crc32c_mode = 0;
#ifdef CYK_CRC_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        cyk_crc32c_setup_shift();
        cyk_crc32c_mode = 1;
    }
#endif
}

/* force: -1 auto, 0 software, 1 hardware (tests compare the two) */
static uint32_t cyk_crc32c(uint32_t crc, const unsigned char *p, size_t n, int force) {
    if (cyk_crc32c_mode < 0) cyk_crc32c_setup();
#ifdef CYK_CRC_HW
    if (force != 0 && cyk_crc32c_mode == 1) return cyk_crc32c_hw(crc, p, n);
#endif
    return cyk_crc32c_sw(crc, p, n);
}

static int cyk_crc32c_hardware(void) {
    if (cyk_crc32c_mode < 0) cyk_crc32c_setup();
    return cyk_crc32c_mode;
}

#endif
