/* The comment text pool: one long run of grammar-generated sentences built
 * once per generation and shared read-only by all threads. Every comment is a
 * substring of it at a random offset with a random length, as the reference
 * does; that (not fresh sentences) is what gives comments realistic
 * compressibility. */
#ifndef TPCH_GEN_TEXT_H
#define TPCH_GEN_TEXT_H

#include <stddef.h>

#include "gen_lists.h"

/* 10 MiB has the same word statistics as the reference's 300 MiB pool. */
#define TPCH_POOL_BYTES ((size_t)10 << 20)

/* Builds exactly TPCH_POOL_BYTES of text (deterministic). Returns the pool
 * (caller frees) or NULL when out of memory. */
char *tpch_text_pool_build(const tpch_lists *L);

#endif
