/*
 * fsmodel.h - a model-based checker of file sets, shared by the random test
 * (tests/test_fsmodel.c) and the fileset fuzz target (tests/fuzz/fuzz_fileset.c).
 *
 * One engine runs interleaved operations on named files of one set from
 * several spaces (a writer, a reader with a small temp limit, a second
 * writer), injects faults through the I/O seam, the allocator hooks and the
 * temp limit, and after every call - success or failure - checks the
 * failure contracts of include/buffile.h (each call's comment there says
 * what its failure leaves) against an in-memory model: position, size, every
 * known byte, statistics, what a failed close/export/append leaves, that a
 * closed file reopens with exactly its persisted contents, and no leaks.
 * The two drivers differ only in where the choices come from (a seeded
 * generator or the fuzzer's bytes) and how a failed check is reported.
 *
 * Every check has a tag. Tags listed in `tolerate` ("all" for every one,
 * "all-but:<tags>" for every other one) are counted instead of failing the
 * run, and the first time each fires in the process is printed with the
 * sequence, step and steps run so far: how docs/reliability.md measured the
 * steps each defect took to be found. A tolerated check the model cannot
 * resynchronise from abandons the sequence (fsm_abandoned).
 */
#ifndef BF_FSMODEL_H
#define BF_FSMODEL_H

#include <stdint.h>

typedef struct fsm fsm;

typedef struct fsm_config {
    const char *parent; /* where spaces and the set directory go */
    uint64_t seed;      /* the data, and the choices when pick is NULL */
    /* Choices: a number in [0, n). NULL: a generator seeded with `seed`. */
    uint64_t (*pick)(void *ctx, uint64_t n);
    void *pick_ctx;
    /* Report a failed check; must not return. */
    void (*fail)(void *ctx, const char *msg);
    void *fail_ctx;
    const char *tolerate; /* comma-separated check tags, "all", or "all-but:<tags>"; NULL: none */
    const char *avoid;    /* comma-separated operation patterns not to generate (see fsmodel.c) */
    unsigned watchdog;    /* seconds one step may take before the process aborts; 0: none */
    uint32_t block_size;  /* 0: chosen (4 or 8 KiB) */
    /*
     * With the generator (pick NULL): write the seed and every choice to this
     * file in the fileset fuzz target's encoding (the seed as 4 bytes, then each
     * choice in 1, 2 or 4 bytes, big-endian), so the sequence replays as a fuzz
     * input. Seeds must fit in 32 bits. NULL: no recording.
     */
    const char *record;
    /*
     * 1: only the operations and choice ranges the model was first built with,
     * so that the sequences recorded with them (test_found_sequences, the
     * fileset corpus) replay as they did. 0: also the operations added later
     * at the edges of the contracts - appends of outdated sources, what a
     * killed session leaves (and faults while a read-write open removes it),
     * block numbers at the limit, codec=auto spaces started from figures an
     * earlier space passed on, some absurd.
     */
    int classic;
    /*
     * 1: every space seals its extents under one key (they open each other's
     * files), and knows the caller's codec "rle" (tests/support.c), which
     * some spaces write with; a codec=auto space may pick it too.
     */
    int sealed;
} fsm_config;

/* A new model: spaces, set directory, nothing open. */
fsm *fsm_open(const fsm_config *cfg);

/* One random operation (maybe under an armed fault) and the checks after it. */
void fsm_step(fsm *m);

/* 1 when a tolerated check left the model unable to go on. */
int fsm_abandoned(const fsm *m);

/*
 * Faults off: close every handle, reopen every file (read-only and
 * read-write) and compare, destroy the set and the spaces, and check that
 * no byte and no descriptor is left. Frees the model.
 */
void fsm_finish(fsm *m);

/* Steps run and check failures tolerated so far in this process (all models). */
uint64_t fsm_total_steps(void);
uint64_t fsm_total_tolerated(void);

#endif
