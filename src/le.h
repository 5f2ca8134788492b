/*
 * le.h - little-endian loads and stores for the on-disk formats.
 *
 * Byte by byte, so they are correct on any host and at any alignment.
 */
#ifndef BF_LE_H
#define BF_LE_H

#include <stdint.h>

static inline void bf_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline uint16_t bf_get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline void bf_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t bf_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void bf_put64(unsigned char *p, uint64_t v)
{
    bf_put32(p, (uint32_t)v);
    bf_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t bf_get64(const unsigned char *p)
{
    return (uint64_t)bf_get32(p) | (uint64_t)bf_get32(p + 4) << 32;
}

#endif
