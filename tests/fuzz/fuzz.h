/*
 * fuzz.h - what every fuzz target provides and the helpers they share.
 *
 * A target is one LLVMFuzzerTestOneInput. Built with libFuzzer (clang,
 * BF_FUZZ=ON) the fuzzer drives it; built plainly, fuzz_main.c replays
 * corpus files, and mutations of them, through the same function, so the
 * seed corpus runs in ctest with any compiler. A failed property is a
 * crash (abort), which both drivers report.
 */
#ifndef BF_FUZZ_H
#define BF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "buffile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Write the target's seed inputs into `dir` (plain driver, --write-seeds). */
int fuzz_write_seeds(const char *dir);

/* Abort with a message: a property did not hold. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fuzz_fail(__VA_ARGS__);                                                                \
    } while (0)

/* A directory for this process's spaces and sets, made on first use, removed at exit. */
const char *fuzz_parent(void);

/* A space under fuzz_parent(); aborts if it cannot be made. */
bf_space *fuzz_space(bf_codec codec, uint32_t block_size, uint64_t segment_size,
                     const bf_allocator *alloc);

/*
 * bf_space_create of such a space, codec=auto started from `seed` when it
 * is not NULL; the message of a failure goes into err[len].
 */
int fuzz_space_create(bf_codec codec, uint32_t block_size, uint64_t segment_size,
                      const bf_allocator *alloc, const bf_auto_device *seed, bf_space **out,
                      char *err, size_t len);

/* Deterministic, partly compressible bytes: random, repeated-phrase and zero runs. */
void fuzz_data(uint64_t seed, unsigned char *buf, size_t len);

/* Save one seed input: `dir`/`name`, the flag byte `flags` followed by `body`. */
void fuzz_seed(const char *dir, const char *name, uint8_t flags, const void *body, size_t len);

/* Codecs built into this library, in id order, and their count. */
int fuzz_codecs(bf_codec out[4]);

#endif
