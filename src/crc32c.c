/*
 * crc32c.c - CRC-32C with hardware dispatch.
 * Implements: bf_crc32c, bf_crc32c_sw (crc32c.h).
 *
 * The table is built once (pthread_once) so spaces in many threads may
 * checksum concurrently. The dispatch decision is made in the same once
 * routine; afterwards bf_crc32c is a plain indirect call.
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static uint32_t (*crc_impl)(uint32_t, const void *, size_t);
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static uint32_t crc_sw(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        v ^= crc;
        crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^ table[5][(v >> 16) & 0xff] ^
              table[4][(v >> 24) & 0xff] ^ table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
              table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>

/*
 * The crc32 instruction has a latency of three cycles but issues one per
 * cycle, so one dependent chain runs at a third of the possible speed. The
 * fast path runs three chains over three adjacent stretches of `len`
 * bytes and then joins them: the state of a chain followed by `len` zero
 * bytes is a linear map of that state (GF(2)), precomputed as four
 * byte-indexed tables per stretch length.
 */
#define STRETCH_LONG 1024
#define STRETCH_SHORT 128

static uint32_t shift_long[4][256], shift_short[4][256];

/* mat (32 columns) times vec over GF(2). */
static uint32_t gf2_apply(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    for (int i = 0; vec != 0; i++, vec >>= 1)
        if (vec & 1)
            sum ^= mat[i];
    return sum;
}

static void gf2_square(uint32_t *out, const uint32_t *mat)
{
    for (int i = 0; i < 32; i++)
        out[i] = gf2_apply(mat, mat[i]);
}

/* Tables applying `len` zero bytes (a power of two) to a raw CRC state. */
static void build_shift(uint32_t tab[4][256], unsigned len)
{
    uint32_t op[32], sq[32];
    op[0] = POLY; /* one zero bit */
    for (int i = 1; i < 32; i++)
        op[i] = 1u << (i - 1);
    for (unsigned bits = 1; bits < 8 * len; bits *= 2) {
        gf2_square(sq, op);
        memcpy(op, sq, sizeof(op));
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 0; k < 4; k++)
            tab[k][b] = gf2_apply(op, b << (8 * k));
}

static uint32_t shift(uint32_t tab[4][256], uint32_t crc)
{
    return tab[0][crc & 0xff] ^ tab[1][(crc >> 8) & 0xff] ^ tab[2][(crc >> 16) & 0xff] ^
           tab[3][crc >> 24];
}

__attribute__((target("sse4.2"))) static const unsigned char *
three_chains(uint64_t *crc, const unsigned char *p, size_t *len, size_t stretch,
             uint32_t tab[4][256])
{
    while (*len >= 3 * stretch) {
        uint64_t c0 = *crc, c1 = 0, c2 = 0;
        const unsigned char *end = p + stretch;
        while (p < end) {
            uint64_t v0, v1, v2;
            memcpy(&v0, p, 8);
            memcpy(&v1, p + stretch, 8);
            memcpy(&v2, p + 2 * stretch, 8);
            c0 = _mm_crc32_u64(c0, v0);
            c1 = _mm_crc32_u64(c1, v1);
            c2 = _mm_crc32_u64(c2, v2);
            p += 8;
        }
        c0 = shift(tab, (uint32_t)c0) ^ (uint32_t)c1;
        *crc = shift(tab, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * stretch;
        *len -= 3 * stretch;
    }
    return p;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t c = ~crc;
    p = three_chains(&c, p, &len, STRETCH_LONG, shift_long);
    p = three_chains(&c, p, &len, STRETCH_SHORT, shift_short);
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}

static int have_hw(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("sse4.2"))
        return 0;
    build_shift(shift_long, STRETCH_LONG);
    build_shift(shift_short, STRETCH_SHORT);
    return 1;
}
#else
static uint32_t crc_hw(uint32_t crc, const void *data, size_t len)
{
    return crc_sw(crc, data, len);
}

static int have_hw(void)
{
    return 0;
}
#endif

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
    crc_impl = have_hw() ? crc_hw : crc_sw;
}

uint32_t bf_crc32c(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return crc_impl(crc, data, len);
}

uint32_t bf_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return crc_sw(crc, data, len);
}
