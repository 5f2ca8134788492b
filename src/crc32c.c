/*
 * crc32c.c - CRC-32C with hardware dispatch.
 * Implements: bf_crc32c, bf_crc32c_le64, bf_crc32c_le64_copy, bf_crc32c_sw, bf_crc32c_impl,
 * bf_crc32c_copy_impl, bf_crc32c_impl_name, bf_crc32c_selected (crc32c.h).
 *
 * Four implementations, the fastest this CPU runs chosen once:
 *   1. VPCLMULQDQ + AVX-512: four 512-bit accumulators fold 256 bytes per
 *      step by carry-less multiplication (Intel's "Fast CRC Computation for
 *      Generic Polynomials Using PCLMULQDQ", with 16 lanes of 128 bits);
 *   2. PCLMULQDQ + SSE4.2: the same folding with four 128-bit accumulators;
 *   3. SSE4.2: three interleaved chains of the crc32 instruction;
 *   4. slicing-by-8 tables, on every platform.
 * The folding paths take inputs of FOLD_MIN bytes and more and hand the
 * folded 128 bits and the tail to the crc32 instruction; shorter inputs go
 * to path 3. On the AVX-512 Xeon of docs/results/none-path-profile.md
 * ("Folded CRC-32C"), an 8 KiB block takes 68 ns with path 1, 253 with path 2,
 * 302 with path 3 and 3.9 us with the tables.
 *
 * The folding paths also come in a copying form (bf_crc32c_le64_copy): a
 * block read into one buffer and wanted in another is summed from the
 * registers that carry it there, one pass over its bytes instead of two.
 *
 * The tables and the fold constants are built once (pthread_once) so spaces
 * in many threads may checksum concurrently. The dispatch decision is made
 * in the same once routine; afterwards bf_crc32c is a plain indirect call.
 * The vector code is compiled per function (target attributes), so the file
 * builds with plain -O2 for any x86-64 and runs only what cpuid reports.
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static bf_crc32c_fn crc_impl;           /* set once by crc_init (crc_fn) */
static bf_crc32c_copy_fn crc_copy_impl; /* set by crc_init before crc_impl */
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
#include <cpuid.h>
#include <immintrin.h>

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

/* The crc32 instruction over the last `len` bytes from raw state `c`; the final inversion. */
__attribute__((target("sse4.2"))) static uint32_t crc_tail(uint64_t c, const unsigned char *p,
                                                           size_t len)
{
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

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t c = ~crc;
    p = three_chains(&c, p, &len, STRETCH_LONG, shift_long);
    p = three_chains(&c, p, &len, STRETCH_SHORT, shift_short);
    return crc_tail(c, p, len);
}

/*
 * Folding (the white paper's method). Read 16 bytes into a 128-bit lane
 * little-endian: lane bit k is message bit k (bit k % 8 of byte k / 8), and
 * the reflected CRC gives earlier message bits higher powers, so the lane is
 * the polynomial A = sum a_k x^(127-k) relative to its place: its low quadword H
 * holds A's x^127..x^64 and its high one L x^63..x^0, A = H x^64 + L.
 *
 * The CRC of a message M (the state XORed into its first 4 bytes, as the
 * crc32 instruction does with its operand) is M x^32 mod P, so any A may be
 * replaced by anything congruent mod P. A lane that D bits of message follow
 * weighs A x^D = H x^(D+64) + L x^D there; replacing the powers by their
 * residues mod P (degree < 32) gives a polynomial of degree < 96 congruent
 * to it, which is XORed into the lane D bits on. That step is one carry-less
 * multiplication per quadword.
 *
 * A carry-less product of two quadwords whose bit i stands for x^(63-i)
 * (like H) has bit k for x^(126-k): read as a 128-bit lane (bit k for
 * x^(127-k)) it is the product times x. So the constant for x^n is
 * x^(n-1) mod P, placed with bit i for x^(63-i), i.e. its reflected 32-bit
 * form (bit i for x^(31-i), how the tables hold residues) shifted up by 32:
 * fold_k[m] = (x^(64m-1) mod P) << 32, and a fold over D bits (a multiple of
 * 64) multiplies H by fold_k[D/64 + 1] and L by fold_k[D/64]. The products'
 * bits 0..31 stay zero (degree < 96). build_fold_k (from crc_init) computes
 * the residues by stepping x^0 up one power at a time, the table generator's
 * own step.
 */
#define FOLD_MIN 256  /* shorter inputs go to crc_hw (its single chain below 384) */
#define FOLD_K_MAX 33 /* fold_k[m] up to m = D/64 + 1 for D = 2048 bits */
static uint64_t fold_k[FOLD_K_MAX + 1];

static void build_fold_k(void)
{
    uint32_t v = 0x80000000u; /* x^0: bit 31 of the reflected form */
    for (unsigned n = 0; n < 64 * FOLD_K_MAX; n++) {
        if ((n + 1) % 64 == 0)
            fold_k[(n + 1) / 64] = (uint64_t)v << 32; /* v = x^n mod P, n = 64m - 1 */
        v = (v & 1) ? (v >> 1) ^ POLY : v >> 1;       /* times x */
    }
}

/* The two constants that fold a 128-bit lane over `bits` bits of message: H's low, L's high. */
__attribute__((target("pclmul,sse4.2"))) static __m128i fold_pair(unsigned bits)
{
    return _mm_set_epi64x((long long)fold_k[bits / 64], (long long)fold_k[bits / 64 + 1]);
}

/* x folded over `k`'s distance: H times k's low quadword XOR L times its high one. */
__attribute__((target("pclmul,sse4.2"))) static __m128i fold128(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/*
 * The end of both folding paths: r (congruent to all the message before p, as a lane
 * ending there) folded on over the remaining whole 16-byte pieces, then reduced by the
 * crc32 instruction. That is exact, not an approximation: the instruction from state 0
 * over 16 bytes computes their polynomial times x^32 mod P, and r's lane is laid out as
 * those 16 bytes would be, so it yields r x^32 mod P, the CRC state after the message up
 * to p (r is congruent to it mod P, and the state already went in with the first bytes).
 * The tail under 16 bytes continues from that state.
 */
__attribute__((target("pclmul,sse4.2"))) static uint32_t
fold_finish(__m128i r, const unsigned char *p, size_t len)
{
    __m128i k = fold_pair(128);
    while (len >= 16) {
        r = _mm_xor_si128(fold128(r, k), _mm_loadu_si128((const __m128i *)p));
        p += 16;
        len -= 16;
    }
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(r, 1));
    return crc_tail(c, p, len);
}

/* Path 2: four 128-bit accumulators, 64 bytes a step. */
__attribute__((target("pclmul,sse4.2"))) static uint32_t crc_pclmul(uint32_t crc, const void *data,
                                                                    size_t len)
{
    if (len < FOLD_MIN)
        return crc_hw(crc, data, len);
    const unsigned char *p = data;
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)~crc)); /* the state into the first 4 bytes */
    p += 64;
    len -= 64;
    __m128i k = fold_pair(512);
    while (len >= 64) {
        x0 = _mm_xor_si128(fold128(x0, k), _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(fold128(x1, k), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(fold128(x2, k), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(fold128(x3, k), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        len -= 64;
    }
    /* The four lanes lie 48, 32 and 16 bytes before x3's: fold each onto it (independently). */
    __m128i r =
        _mm_xor_si128(_mm_xor_si128(fold128(x0, fold_pair(384)), fold128(x1, fold_pair(256))),
                      _mm_xor_si128(fold128(x2, fold_pair(128)), x3));
    return fold_finish(r, p, len);
}

/*
 * Path 2 copying: crc_pclmul over `src` that also stores each 16 bytes it loads at the
 * same place in `dst` (the bytes are read once, not once to sum and once to copy); the
 * tail under 64 bytes is copied apart. dst and src do not overlap.
 */
__attribute__((target("pclmul,sse4.2"))) static uint32_t
crc_pclmul_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    if (len < FOLD_MIN) {
        memcpy(dst, src, len);
        return crc_hw(crc, src, len);
    }
    const unsigned char *p = src;
    unsigned char *q = dst;
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    _mm_storeu_si128((__m128i *)q, x0);
    _mm_storeu_si128((__m128i *)(q + 16), x1);
    _mm_storeu_si128((__m128i *)(q + 32), x2);
    _mm_storeu_si128((__m128i *)(q + 48), x3);
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)~crc));
    p += 64;
    q += 64;
    len -= 64;
    __m128i k = fold_pair(512);
    while (len >= 64) {
        __m128i d0 = _mm_loadu_si128((const __m128i *)p);
        __m128i d1 = _mm_loadu_si128((const __m128i *)(p + 16));
        __m128i d2 = _mm_loadu_si128((const __m128i *)(p + 32));
        __m128i d3 = _mm_loadu_si128((const __m128i *)(p + 48));
        _mm_storeu_si128((__m128i *)q, d0);
        _mm_storeu_si128((__m128i *)(q + 16), d1);
        _mm_storeu_si128((__m128i *)(q + 32), d2);
        _mm_storeu_si128((__m128i *)(q + 48), d3);
        x0 = _mm_xor_si128(fold128(x0, k), d0);
        x1 = _mm_xor_si128(fold128(x1, k), d1);
        x2 = _mm_xor_si128(fold128(x2, k), d2);
        x3 = _mm_xor_si128(fold128(x3, k), d3);
        p += 64;
        q += 64;
        len -= 64;
    }
    __m128i r =
        _mm_xor_si128(_mm_xor_si128(fold128(x0, fold_pair(384)), fold128(x1, fold_pair(256))),
                      _mm_xor_si128(fold128(x2, fold_pair(128)), x3));
    memcpy(q, p, len);
    return fold_finish(r, p, len);
}

#define V512 "avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2"

/* Each 128-bit lane of x folded over k's distance (k's lanes may differ), XOR d. */
__attribute__((target(V512))) static __m512i fold512(__m512i x, __m512i k, __m512i d)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), d, 0x96); /* a^b^c */
}

__attribute__((target(V512))) static __m512i fold_pair512(unsigned bits)
{
    return _mm512_broadcast_i32x4(fold_pair(bits));
}

/* The four 64-byte accumulators as one: x0, x1, x2 lie 192, 128 and 64 bytes before x3,
   each folded onto it independently. */
__attribute__((target(V512))) static inline __m512i fold512_merge(__m512i x0, __m512i x1,
                                                                  __m512i x2, __m512i x3)
{
    __m512i zero = _mm512_setzero_si512();
    return _mm512_ternarylogic_epi64(fold512(x0, fold_pair512(1536), zero),
                                     fold512(x1, fold_pair512(1024), zero),
                                     fold512(x2, fold_pair512(512), x3), 0x96);
}

/* One accumulator's four lanes as one: lanes 0..2 lie 48, 32, 16 bytes before lane 3,
   folded onto it (lane 3's constants 0). */
__attribute__((target(V512))) static inline __m128i fold512_lanes(__m512i a)
{
    __m512i k4 = _mm512_inserti32x4(
        _mm512_inserti32x4(_mm512_zextsi128_si512(fold_pair(384)), fold_pair(256), 1),
        fold_pair(128), 2);
    __m512i t = fold512(a, k4, _mm512_setzero_si512());
    return _mm_xor_si128(
        _mm_xor_si128(_mm512_extracti32x4_epi32(t, 0), _mm512_extracti32x4_epi32(t, 1)),
        _mm_xor_si128(_mm512_extracti32x4_epi32(t, 2), _mm512_extracti32x4_epi32(a, 3)));
}

/*
 * Path 1: four 512-bit accumulators (16 lanes of 128 bits), 256 bytes a step; each
 * lane folds over 2048 bits onto the lane 256 bytes on.
 */
__attribute__((target(V512))) static uint32_t crc_vpclmul(uint32_t crc, const void *data,
                                                          size_t len)
{
    if (len < FOLD_MIN)
        return crc_hw(crc, data, len);
    const unsigned char *p = data;
    __m512i x0 = _mm512_loadu_si512(p);
    __m512i x1 = _mm512_loadu_si512(p + 64);
    __m512i x2 = _mm512_loadu_si512(p + 128);
    __m512i x3 = _mm512_loadu_si512(p + 192);
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)~crc)));
    p += 256;
    len -= 256;
    __m512i k = fold_pair512(2048);
    while (len >= 256) {
        x0 = fold512(x0, k, _mm512_loadu_si512(p));
        x1 = fold512(x1, k, _mm512_loadu_si512(p + 64));
        x2 = fold512(x2, k, _mm512_loadu_si512(p + 128));
        x3 = fold512(x3, k, _mm512_loadu_si512(p + 192));
        p += 256;
        len -= 256;
    }
    __m512i a = fold512_merge(x0, x1, x2, x3);
    k = fold_pair512(512);
    while (len >= 64) {
        a = fold512(a, k, _mm512_loadu_si512(p));
        p += 64;
        len -= 64;
    }
    __m128i r = fold512_lanes(a);
    /* Clean upper register halves before the legacy-SSE code (fold_finish, and the rest of
       the library built for plain x86-64), which would otherwise pay for the dirty state;
       GCC 12 puts no vzeroupper before its tail call. */
    _mm256_zeroupper();
    return fold_finish(r, p, len);
}

/* Path 1 copying: crc_vpclmul storing what it loads into `dst` (crc_pclmul_copy). */
__attribute__((target(V512))) static uint32_t crc_vpclmul_copy(uint32_t crc, void *dst,
                                                               const void *src, size_t len)
{
    if (len < FOLD_MIN) {
        memcpy(dst, src, len);
        return crc_hw(crc, src, len);
    }
    const unsigned char *p = src;
    unsigned char *q = dst;
    __m512i x0 = _mm512_loadu_si512(p);
    __m512i x1 = _mm512_loadu_si512(p + 64);
    __m512i x2 = _mm512_loadu_si512(p + 128);
    __m512i x3 = _mm512_loadu_si512(p + 192);
    _mm512_storeu_si512(q, x0);
    _mm512_storeu_si512(q + 64, x1);
    _mm512_storeu_si512(q + 128, x2);
    _mm512_storeu_si512(q + 192, x3);
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)~crc)));
    p += 256;
    q += 256;
    len -= 256;
    __m512i k = fold_pair512(2048);
    while (len >= 256) {
        __m512i d0 = _mm512_loadu_si512(p);
        __m512i d1 = _mm512_loadu_si512(p + 64);
        __m512i d2 = _mm512_loadu_si512(p + 128);
        __m512i d3 = _mm512_loadu_si512(p + 192);
        _mm512_storeu_si512(q, d0);
        _mm512_storeu_si512(q + 64, d1);
        _mm512_storeu_si512(q + 128, d2);
        _mm512_storeu_si512(q + 192, d3);
        x0 = fold512(x0, k, d0);
        x1 = fold512(x1, k, d1);
        x2 = fold512(x2, k, d2);
        x3 = fold512(x3, k, d3);
        p += 256;
        q += 256;
        len -= 256;
    }
    __m512i a = fold512_merge(x0, x1, x2, x3);
    k = fold_pair512(512);
    while (len >= 64) {
        __m512i d = _mm512_loadu_si512(p);
        _mm512_storeu_si512(q, d);
        a = fold512(a, k, d);
        p += 64;
        q += 64;
        len -= 64;
    }
    __m128i r = fold512_lanes(a);
    _mm256_zeroupper(); /* as in crc_vpclmul, before the legacy-SSE code and memcpy */
    memcpy(q, p, len);
    return fold_finish(r, p, len);
}

/*
 * cpuid, read directly rather than through __builtin_cpu_supports, whose feature names
 * and bit layout for the newer extensions differ between compiler versions. AVX-512 also
 * needs the OS to save its registers: XCR0's SSE, AVX, opmask and ZMM bits (0xe6).
 */
enum { CPU_SSE42 = 1, CPU_PCLMUL = 2, CPU_VPCLMUL512 = 4 };

static int cpu_features(void)
{
    unsigned a, b, c, d;
    int f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (c & (1u << 20)) /* SSE4.2 */
        f |= CPU_SSE42;
    if ((f & CPU_SSE42) && (c & (1u << 1))) /* PCLMULQDQ */
        f |= CPU_PCLMUL;
    if (!(f & CPU_PCLMUL) || !(c & (1u << 27))) /* OSXSAVE: xgetbv allowed */
        return f;
    unsigned xlo, xhi;
    __asm__("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    (void)xhi;
    if ((xlo & 0xe6) != 0xe6)
        return f;
    /* Leaf 7: EBX bit 16 AVX512F, bit 31 AVX512VL; ECX bit 10 VPCLMULQDQ. */
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 16)) && (b & (1u << 31)) &&
        (c & (1u << 10)))
        f |= CPU_VPCLMUL512;
    return f;
}

/* The implementations besides the table this CPU runs (bits 1 << BF_CRC32C_*). */
static unsigned hw_usable(void)
{
    int f = cpu_features();
    if (!(f & CPU_SSE42))
        return 0;
    build_shift(shift_long, STRETCH_LONG);
    build_shift(shift_short, STRETCH_SHORT);
    build_fold_k();
    unsigned u = 1u << BF_CRC32C_SSE42;
    if (f & CPU_PCLMUL)
        u |= 1u << BF_CRC32C_PCLMUL;
    if (f & CPU_VPCLMUL512)
        u |= 1u << BF_CRC32C_VPCLMUL;
    return u;
}
#else
static unsigned hw_usable(void)
{
    return 0;
}
#endif

static unsigned crc_usable;
static int crc_selected;

#if defined(__x86_64__) && defined(__GNUC__)
/* crc_hw(0, the 8 little-endian bytes of v, 8) in one instruction (x86-64 is little-endian). */
__attribute__((target("sse4.2"))) static uint32_t crc_u64_from0(uint64_t v)
{
    return ~(uint32_t)_mm_crc32_u64(0xffffffffu, v);
}
#endif

/* The paths without a copying variant sum, then copy (what the caller would do). */
static uint32_t crc_sw_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
    return crc_sw(crc, src, len);
}

#if defined(__x86_64__) && defined(__GNUC__)
static uint32_t crc_hw_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
    return crc_hw(crc, src, len);
}
#endif

static bf_crc32c_copy_fn copy_fn(int which)
{
    switch (which) {
    case BF_CRC32C_TABLE: return crc_sw_copy;
#if defined(__x86_64__) && defined(__GNUC__)
    case BF_CRC32C_SSE42: return crc_hw_copy;
    case BF_CRC32C_PCLMUL: return crc_pclmul_copy;
    case BF_CRC32C_VPCLMUL: return crc_vpclmul_copy;
#endif
    default: return NULL;
    }
}

static bf_crc32c_fn impl_fn(int which)
{
    switch (which) {
    case BF_CRC32C_TABLE: return crc_sw;
#if defined(__x86_64__) && defined(__GNUC__)
    case BF_CRC32C_SSE42: return crc_hw;
    case BF_CRC32C_PCLMUL: return crc_pclmul;
    case BF_CRC32C_VPCLMUL: return crc_vpclmul;
#endif
    default: return NULL;
    }
}

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
    crc_usable = (1u << BF_CRC32C_TABLE) | hw_usable();
    /* The kinds are numbered slowest first: take the highest usable. */
    for (int k = 0; k < BF_CRC32C_KINDS; k++)
        if (crc_usable & (1u << k))
            crc_selected = k;
    crc_copy_impl = copy_fn(crc_selected);
    /* Published last: a thread that sees it set (crc_fn) sees the tables too. */
    __atomic_store_n(&crc_impl, impl_fn(crc_selected), __ATOMIC_RELEASE);
}

/* The chosen implementation: once set, one load instead of pthread_once at every call. */
static inline bf_crc32c_fn crc_fn(void)
{
    bf_crc32c_fn fn = __atomic_load_n(&crc_impl, __ATOMIC_ACQUIRE);
    if (fn == NULL) {
        pthread_once(&crc_once, crc_init);
        fn = __atomic_load_n(&crc_impl, __ATOMIC_ACQUIRE);
    }
    return fn;
}

uint32_t bf_crc32c(uint32_t crc, const void *data, size_t len)
{
    return crc_fn()(crc, data, len);
}

/*
 * CRC-32C from 0 of `v` as 8 little-endian bytes: one crc32 instruction where the CPU has
 * it (through the dispatched function it took ~40 instructions, twice a block). Called
 * after crc_fn, which made crc_selected visible.
 */
static uint32_t crc_le64_seed(uint64_t v)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (crc_selected >= BF_CRC32C_SSE42)
        return crc_u64_from0(v);
#endif
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return crc_sw(0, b, sizeof(b));
}

uint32_t bf_crc32c_le64(uint64_t v, const void *data, size_t len)
{
    bf_crc32c_fn fn = crc_fn();
    return fn(crc_le64_seed(v), data, len);
}

uint32_t bf_crc32c_le64_copy(uint64_t v, void *dst, const void *src, size_t len)
{
    crc_fn(); /* after it, crc_copy_impl and crc_selected are set */
    return crc_copy_impl(crc_le64_seed(v), dst, src, len);
}

uint32_t bf_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return crc_sw(crc, data, len);
}

bf_crc32c_fn bf_crc32c_impl(int which)
{
    pthread_once(&crc_once, crc_init);
    if (which < 0 || which >= BF_CRC32C_KINDS || !(crc_usable & (1u << which)))
        return NULL;
    return impl_fn(which);
}

bf_crc32c_copy_fn bf_crc32c_copy_impl(int which)
{
    pthread_once(&crc_once, crc_init);
    if (which < 0 || which >= BF_CRC32C_KINDS || !(crc_usable & (1u << which)))
        return NULL;
    return copy_fn(which);
}

const char *bf_crc32c_impl_name(int which)
{
    static const char *const names[BF_CRC32C_KINDS] = {"table", "sse42", "pclmul", "vpclmul"};
    return which >= 0 && which < BF_CRC32C_KINDS ? names[which] : "?";
}

int bf_crc32c_selected(void)
{
    pthread_once(&crc_once, crc_init);
    return crc_selected;
}
