/* Counter-based random streams. A stream is a 64-bit seed; draw number i of
 * it is a pure function of (seed, i), so any row's draws can be produced
 * without generating the rows before it. This is the splitmix64 sequence
 * evaluated at position i, which makes "skip ahead" free.
 * Invariant: every column uses draws [row*TPCH_DRAWS_PER_ROW, +TPCH_DRAWS_PER_ROW)
 * of its own stream, whatever the row's values are. */
#ifndef TPCH_GEN_RNG_H
#define TPCH_GEN_RNG_H

#include <stdint.h>

#define TPCH_DRAWS_PER_ROW 8u

static inline uint64_t tpch_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Draw i of stream `seed`. */
static inline uint64_t tpch_draw(uint64_t seed, uint64_t i)
{
    return tpch_mix64(seed + i * 0x9e3779b97f4a7c15ull);
}

/* Maps a draw to [lo, hi] (hi - lo < 2^32) by multiply-shift on the high
 * 32 bits: no division, bias below 2^-32 per value. */
static inline int64_t tpch_bounded(uint64_t x, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(((x >> 32) * (uint64_t)(hi - lo + 1)) >> 32);
}

#endif
