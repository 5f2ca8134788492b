/*
 * test_contracts.c - what each public call leaves behind when it fails, and
 * the eleven defects of file sets and failure paths that independent tests
 * found, one deterministic test each (test_dN_*, N the defect's number in
 * docs/reliability.md), the defects a later round found at the edges
 * (outdated sources, the largest block numbers, a retried open, a failed
 * close's sources, sparse maps: docs/reliability.md's second table), plus
 * the contracts buffile.h states around them.
 *
 * Codec none makes extent sizes exact (block + 32 bytes), so the point at
 * which a temp limit bites and the offset of every extent are known. An
 * alarm turns a hang (defect 1 spun forever in a release build) into a
 * failure; ASan turns the use-after-free cases into one too, and where the
 * damage is visible in a release build the test also checks the space's
 * descriptor list directly.
 */
/* PostgreSQL's storage/buffile.h takes the guard BUFFILE_H: a program that includes both
   must still see every declaration of ours (this file would not compile otherwise). */
#define BUFFILE_H
#include "buffile.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "blockmap.h"
#include "buffile.h"
#include "crc32c.h"
#include "extent.h"
#include "index.h"
#include "segment.h"
#include "space.h"
#include "support.h"

#define BS 8192u
#define EXT BS /* codec none: a block is stored bare, its bytes alone */
/* The smallest segment two 8 KiB blocks fit in: extents cross segment files often. */
#define SMALL_SEG 24576u

T_PARENT_FIXTURE("contracts")

/* Every test starts with an empty set directory. */
static int fresh_set(void **state)
{
    (void)state;
    t_rm_rf(set);
    assert_int_equal(mkdir(set, 0700), 0);
    return 0;
}

static bf_space *space_with(uint64_t segment_size, uint64_t limit, uint32_t max_fds,
                            const bf_allocator *alloc)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.codec = BF_CODEC_NONE;
    o.block_size = BS;
    o.segment_size = segment_size;
    o.temp_limit = limit;
    o.max_open_fds = max_fds;
    o.allocator = alloc;
    return t_space_opts(&o);
}

static bf_space *space(void)
{
    return space_with(0, 0, 0, NULL);
}

static unsigned char *data(uint64_t seed, size_t len)
{
    unsigned char *d = malloc(len + 1);
    assert_non_null(d);
    t_rng r = {seed};
    t_fill(&r, T_DATA_MIXED, d, len);
    return d;
}

static uint64_t physical(const bf_space *sp)
{
    bf_stats st;
    bf_space_stats(sp, &st);
    return st.physical_bytes;
}

/* Create named file `name` holding `d` (`len` bytes), export and close it. */
static void make_named(bf_space *sp, const char *name, const unsigned char *d, size_t len)
{
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, name, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, len), BF_OK);
    assert_int_equal(bf_file_export(f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
}

static bf_file *open_named(bf_space *sp, const char *name, int mode)
{
    bf_file *f = NULL;
    int rc = bf_file_open_named(sp, set, name, mode, &f);
    if (rc != BF_OK)
        fail_msg("open %s: %s (%s)", name, bf_strerror(rc), bf_space_errmsg(sp));
    return f;
}

/* Block `b` of `f` equals block `db` of d[0..len) (zeros past `len`). */
static void assert_block(bf_file *f, uint64_t b, const unsigned char *d, size_t len, uint64_t db)
{
    unsigned char got[BS], want[BS];
    memset(want, 0, BS);
    if (db * BS < len)
        memcpy(want, d + db * BS, len - db * BS < BS ? len - db * BS : BS);
    int rc = bf_file_read_block(f, b, got);
    if (rc != BF_OK)
        fail_msg("read_block %llu: %s (%s)", (unsigned long long)b, bf_strerror(rc),
                 bf_space_errmsg(bf_file_space(f)));
    if (memcmp(got, want, BS) != 0)
        fail_msg("block %llu differs", (unsigned long long)b);
}

/* The whole file reads as d[0..len). */
static void assert_contents(bf_file *f, const unsigned char *d, size_t len)
{
    t_image img = {0};
    t_image_write(&img, 0, d, len);
    t_image_check(f, &img, "contents");
    t_image_free(&img);
}

/* The space's descriptor list agrees with its count and holds only open segments. */
static void assert_lru_sane(const bf_space *sp)
{
    uint32_t n = 0;
    for (const bf_seg *s = sp->segs->lru_head; s != NULL && n <= sp->segs->fds_open; s = s->lru_next, n++)
        assert_true(s->fd >= 0);
    assert_int_equal(n, sp->segs->fds_open);
}

static void use_fault_io(bf_space *sp, t_faults *flt)
{
    memset(flt, 0, sizeof(*flt));
    bf_io io = t_fault_io(flt);
    bf_space_set_io(sp, &io);
}

/* Sum of the sizes of the set's files whose names start with "<name>.". */
static uint64_t bytes_on_disk(const char *dir, const char *name)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "find '%s' -maxdepth 1 -type f -name '%s.*' -printf '%%s\\n'", dir,
             name);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    uint64_t sum = 0;
    unsigned long long v;
    while (fscanf(p, "%llu", &v) == 1)
        sum += v;
    pclose(p);
    return sum;
}

/* ---- defect 1: append after the target's parts were used ---------------- */

static void test_d1_append_after_parts_used(void **state)
{
    (void)state;
    bf_space *sp = space_with(0, 0, 2, NULL); /* two descriptors: eviction on every open */
    unsigned char *d1 = data(11, 3 * BS), *d2 = data(12, 3 * BS), *dt = data(13, BS);
    make_named(sp, "s1", d1, 3 * BS);
    make_named(sp, "s2", d2, 3 * BS);
    bf_file *t;
    assert_int_equal(bf_file_create_named(sp, set, "t", NULL, &t), BF_OK);
    assert_int_equal(bf_file_write(t, dt, BS), BF_OK);
    bf_file *s1 = open_named(sp, "s1", BF_OPEN_READONLY);
    bf_file *s2 = open_named(sp, "s2", BF_OPEN_READONLY);
    uint64_t at1, at2;
    assert_int_equal(bf_file_append(t, s1, &at1), BF_OK);
    assert_block(t, at1 / BS + 1, d1, 3 * BS, 1);         /* links part 1's segment into the LRU */
    assert_int_equal(bf_file_append(t, s2, &at2), BF_OK); /* grows the parts array */
    assert_block(t, at1 / BS + 2, d1, 3 * BS, 2);
    assert_block(t, at2 / BS, d2, 3 * BS, 0);
    bf_file *other;
    assert_int_equal(bf_file_create_named(sp, set, "other", NULL, &other), BF_OK);
    assert_int_equal(bf_file_write(other, dt, BS), BF_OK);
    assert_int_equal(bf_file_flush(other), BF_OK);
    assert_block(t, at1 / BS, d1, 3 * BS, 0);
    assert_block(t, 0, dt, BS, 0);
    assert_lru_sane(sp);
    assert_int_equal(bf_file_close(other), BF_OK);
    assert_int_equal(bf_file_close(t), BF_OK);

    /* A read-write open links the parts while checking them; one more append then moves them. */
    bf_file *s3 = NULL;
    make_named(sp, "s3", d2, BS);
    t = open_named(sp, "t", BF_OPEN_READWRITE);
    s3 = open_named(sp, "s3", BF_OPEN_READONLY);
    uint64_t at3;
    assert_int_equal(bf_file_append(t, s3, &at3), BF_OK);
    assert_block(t, at3 / BS, d2, BS, 0);
    assert_block(t, at2 / BS + 2, d2, 3 * BS, 2);
    assert_int_equal(bf_file_create_named(sp, set, "other2", NULL, &other), BF_OK);
    assert_int_equal(bf_file_write(other, dt, BS), BF_OK);
    assert_int_equal(bf_file_flush(other), BF_OK);
    assert_block(t, at1 / BS + 1, d1, 3 * BS, 1);
    assert_lru_sane(sp);
    bf_file_close(other);
    bf_file_close(t);
    bf_file_close(s1);
    bf_file_close(s2);
    bf_file_close(s3);
    bf_space_destroy(sp);
    free(d1);
    free(d2);
    free(dt);
}

/* ---- defect 2: a close whose unlink fails ------------------------------- */

static void test_d2_close_unlink_fails(void **state)
{
    (void)state;
    bf_space *sp = space_with(SMALL_SEG, 0, 0, NULL);
    t_faults flt;
    use_fault_io(sp, &flt);
    unsigned char *d = data(21, 5 * BS);
    bf_file *f, *g;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 5 * BS), BF_OK); /* three segments */
    assert_block(f, 0, d, 5 * BS, 0);                     /* the descriptor is on segment 0 */
    flt.metas = 0;
    flt.fail_meta_at = 1; /* the first unlink: the last segment */
    flt.fail_errno = EIO;
    assert_int_equal(bf_file_close(f), BF_EIO);
    flt.fail_meta_at = 0;
    assert_non_null(strstr(bf_space_errmsg(sp), "unlink"));
    assert_lru_sane(sp);
    assert_int_equal(sp->segs->fds_open, 0);
    assert_int_equal(bf_file_create(sp, NULL, &g), BF_OK);
    assert_int_equal(bf_file_write(g, d, 5 * BS), BF_OK);
    assert_contents(g, d, 5 * BS);
    assert_int_equal(bf_file_close(g), BF_OK);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(sp));
    bf_space_destroy(sp);
    assert_int_equal(t_dir_entries(dir), -1); /* the leftover went with the directory */
    free(d);
}

/* ---- defect 3: a failed write past the end, then close and reopen ------- */

static void test_d3_failed_write_past_end_reopens(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(31, 2 * BS), *blk = data(32, BS);
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, "f", NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 2 * BS), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    bf_space_set_temp_limit(sp, physical(sp) + 100);
    assert_int_equal(bf_file_write_block(f, 10, blk), BF_ELIMIT);
    assert_int_equal(bf_file_size(f), 2 * BS);
    assert_int_equal(bf_file_seek(f, 20 * BS, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, blk, BS), BF_ELIMIT);
    assert_int_equal(bf_file_size(f), 2 * BS);
    bf_space_set_temp_limit(sp, 0);
    assert_int_equal(bf_file_close(f), BF_OK);
    f = open_named(sp, "f", BF_OPEN_READONLY);
    assert_contents(f, d, 2 * BS);
    bf_file_close(f);
    bf_space_destroy(sp);
    free(d);
    free(blk);
}

/* ---- defect 4: a file appended to itself through a second handle --------- */

static void test_d4_self_append(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(41, 3 * BS);
    make_named(sp, "a", d, 3 * BS);
    bf_file *rw = open_named(sp, "a", BF_OPEN_READWRITE);
    bf_file *ro = open_named(sp, "a", BF_OPEN_READONLY);
    uint64_t at;
    assert_int_equal(bf_file_append(rw, ro, &at), BF_EINVAL);
    assert_int_equal(bf_file_size(rw), 3 * BS);
    /* A source that already holds the target as a part is the target too. */
    bf_file *s;
    assert_int_equal(bf_file_create_named(sp, set, "s", NULL, &s), BF_OK);
    assert_int_equal(bf_file_append(s, ro, &at), BF_OK);
    assert_int_equal(bf_file_export(s), BF_OK);
    assert_int_equal(bf_file_append(rw, s, &at), BF_EINVAL);
    assert_int_equal(bf_file_size(rw), 3 * BS);
    assert_contents(s, d, 3 * BS);
    bf_file_close(s);
    bf_file_close(ro);
    bf_file_close(rw);
    bf_space_destroy(sp);
    free(d);
}

/* ---- defect 5: the old index after a killed or failed read-write session - */

static void test_d5_killed_session_old_index(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(51, 4 * BS), *n1 = data(52, BS), *n2 = data(53, BS);
    make_named(sp, "f", d, 4 * BS);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Rewrite block 1 twice: best fit puts the second copy on the block's own old
           extent. Then die without closing, as a SIGKILL would. */
        bf_space *csp = space();
        bf_file *f = NULL;
        int ok = bf_file_open_named(csp, set, "f", BF_OPEN_READWRITE, &f) == BF_OK &&
                 bf_file_write_block(f, 1, n1) == BF_OK && bf_file_write_block(f, 1, n2) == BF_OK;
        _exit(ok ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    bf_file *f = open_named(sp, "f", BF_OPEN_READONLY);
    assert_contents(f, d, 4 * BS);
    bf_file_close(f);

    /* The same through a close whose index cannot be written: the file is rolled back. */
    t_faults flt;
    use_fault_io(sp, &flt);
    f = open_named(sp, "f", BF_OPEN_READWRITE);
    assert_int_equal(bf_file_write_block(f, 1, n1), BF_OK);
    assert_int_equal(bf_file_write_block(f, 1, n2), BF_OK);
    assert_int_equal(bf_file_write_block(f, 7, n2), BF_OK); /* and grow it */
    flt.writes = 0;
    flt.fail_write_at = 1; /* writing the new index */
    flt.fail_errno = EIO;
    assert_int_equal(bf_file_close(f), BF_EIO);
    flt.fail_write_at = 0;
    f = open_named(sp, "f", BF_OPEN_READONLY);
    assert_contents(f, d, 4 * BS);
    bf_file_close(f);
    bf_space_destroy(sp);
    free(d);
    free(n1);
    free(n2);
}

/* ---- defect 6: truncating a named file to zero ---------------------------- */

static void test_d6_truncate_to_zero_keeps_name(void **state)
{
    (void)state;
    bf_space *a = space(), *b = space();
    unsigned char *d = data(61, 2 * BS);
    bf_file *f, *g = NULL;
    assert_int_equal(bf_file_create_named(a, set, "n", NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 2 * BS), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    assert_int_equal(bf_file_truncate(f, 0), BF_OK);
    assert_int_equal(bf_file_create_named(b, set, "n", NULL, &g), BF_EEXIST);
    assert_null(g);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, d, BS), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    f = open_named(b, "n", BF_OPEN_READONLY);
    assert_contents(f, d, BS);
    bf_file_close(f);
    bf_space_destroy(a);
    bf_space_destroy(b);
    free(d);
}

/* ---- defect 7: a failed read moves the position --------------------------- */

static void test_d7_failed_read_keeps_position(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(71, 3 * BS), *got = malloc(3 * BS);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 3 * BS), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    char path[4096];
    snprintf(path, sizeof(path), "%s/0.0", bf_space_dir(sp));
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char x = 0x5a;
    assert_int_equal(pwrite(fd, &x, 1, EXT + 100), 1); /* inside block 1's payload */
    close(fd);
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_read(f, got, 2 * BS), BF_ECORRUPT);
    assert_int_equal(bf_file_tell(f), 0);
    bf_stats st;
    bf_file_stats(f, &st);
    assert_int_equal(st.logical_read, 0);
    bf_file_close(f);

    /* A read that must write the buffered block first, at the temp limit: a new block (a
       block stored bare that was changed in part is patched in place, needing no room). */
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 3 * BS), BF_OK);
    assert_int_equal(bf_file_write(f, "0123456789", 10), BF_OK);
    assert_int_equal(bf_file_seek(f, 110, BF_SEEK_SET), BF_OK);
    bf_space_set_temp_limit(sp, physical(sp));
    assert_int_equal(bf_file_read(f, got, 2 * BS), BF_ELIMIT);
    assert_int_equal(bf_file_tell(f), 110);
    bf_space_set_temp_limit(sp, 0);
    assert_int_equal(bf_file_read(f, got, 2 * BS), 2 * BS);
    assert_memory_equal(got, d + 110, 2 * BS);
    bf_file_close(f);
    bf_space_destroy(sp);
    free(d);
    free(got);
}

/* ---- defect 8: a failed close of a named file ---------------------------- */

static void test_d8_failed_close_named(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(81, 2 * BS);
    bf_file *f;
    /* Never persisted: the file is deleted, its name free again. */
    assert_int_equal(bf_file_create_named(sp, set, "n", NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, BS + 100), BF_OK);
    bf_space_set_temp_limit(sp, 1);
    assert_int_equal(bf_file_close(f), BF_ELIMIT);
    bf_space_set_temp_limit(sp, 0);
    assert_int_equal(bf_file_open_named(sp, set, "n", BF_OPEN_READONLY, &f), BF_ENOENT);
    assert_int_equal(t_dir_entries(set), 0);
    assert_int_equal(bf_file_create_named(sp, set, "n", NULL, &f), BF_OK);
    bf_file_close(f);
    bf_space_destroy(sp);
    free(d);
}

/*
 * A failed close of a never-persisted file whose deletion fails too: segments
 * 0..k stay, from 0 up with no gap (before, the segments below the one that
 * stayed went, so the name looked free while a later segment was left, and
 * the next writer of the name failed with BF_EEXIST creating that segment).
 * No open finds a file, the name stays taken, the message says so, and
 * bf_file_delete_named frees the name.
 */
static void test_failed_close_named_unlink_fails(void **state)
{
    (void)state;
    bf_space *sp = space_with(SMALL_SEG, 0, 0, NULL);
    t_faults flt;
    use_fault_io(sp, &flt);
    unsigned char *d = data(82, 9 * BS);
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, "n", NULL, &f), BF_OK);
    /* segments 0..3: the head and 2 blocks (from the first page on), 3, 3, 1 */
    assert_int_equal(bf_file_write(f, d, 9 * BS), BF_OK);
    bf_space_set_temp_limit(sp, 1);                       /* the index does not fit */
    flt.meta_mask = T_META_UNLINK;
    flt.metas = 0;
    flt.fail_meta_at = 2; /* segment 3 goes, segment 2 stays */
    flt.fail_errno = EIO;
    assert_int_equal(bf_file_close(f), BF_ELIMIT); /* the persist's status */
    flt.fail_meta_at = 0;
    bf_space_set_temp_limit(sp, 0);
    assert_non_null(strstr(bf_space_errmsg(sp), "temp limit"));
    assert_non_null(strstr(bf_space_errmsg(sp), "segments 0..2 stay"));
    assert_int_equal(t_dir_entries(set), 3);
    char path[4096];
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof(path), "%s/n.%d", set, k);
        assert_int_equal(access(path, F_OK), 0);
    }
    assert_int_equal(bf_file_open_named(sp, set, "n", BF_OPEN_READONLY, &f), BF_ENOENT);
    assert_int_equal(bf_file_create_named(sp, set, "n", NULL, &f), BF_EEXIST);
    assert_int_equal(bf_file_delete_named(sp, set, "n"), BF_OK);
    assert_int_equal(t_dir_entries(set), 0);
    assert_int_equal(bf_file_delete_named(sp, set, "n"), BF_ENOENT);
    /* The name is free, and a new file by it writes all its segments afresh. */
    assert_int_equal(bf_file_create_named(sp, set, "n", NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 7 * BS), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    f = open_named(sp, "n", BF_OPEN_READONLY);
    assert_contents(f, d, 7 * BS);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
    free(d);
}

/*
 * Export with a tail it cannot give back: the space past the live extents
 * stays in segment 0 (the truncate's and the export's ftruncate fail; both
 * calls still succeed). Returns the exported handle of 3 blocks, d[0..3 BS).
 */
static bf_file *export_with_tail(bf_space *sp, t_faults *flt, const char *name,
                                 const unsigned char *d)
{
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, name, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 6 * BS), BF_OK);
    flt->meta_mask = T_META_FTRUNCATE;
    flt->fail_errno = EIO;
    flt->metas = 0;
    flt->fail_meta_at = 1;
    assert_int_equal(bf_file_truncate(f, 3 * BS), BF_OK);
    flt->metas = 0;
    assert_int_equal(bf_file_export(f), BF_OK);
    flt->fail_meta_at = 0;
    bf_stats st;
    bf_file_stats(f, &st);
    assert_int_equal(st.physical_bytes, bytes_on_disk(set, name));
    assert_true(st.dead_bytes >= 2 * EXT); /* the tail is there (the index took its start) */
    return f;
}

/* export_with_tail of file "n" from data(seed), closed; returns the data (the caller frees). */
static unsigned char *closed_with_tail(bf_space *sp, t_faults *flt, uint64_t seed)
{
    unsigned char *d = data(seed, 6 * BS);
    assert_int_equal(bf_file_close(export_with_tail(sp, flt, "n", d)), BF_OK);
    return d;
}

/*
 * A read-write open of "n" cuts what lies past the index in its last
 * segment: the writer's physical bytes are the sizes of its files and
 * segment 0 holds the head, the three live extents and the index only.
 */
static void readwrite_open_cuts(bf_space *sp, const unsigned char *d)
{
    bf_file *w = open_named(sp, "n", BF_OPEN_READWRITE);
    bf_stats st;
    bf_file_stats(w, &st);
    assert_int_equal(st.physical_bytes, bytes_on_disk(set, "n"));
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/n.0", set);
    assert_int_equal(stat(path, &sb), 0);
    size_t ilen;
    uint64_t ioff;
    snprintf(path, sizeof(path), "%s/n", set);
    unsigned char *index = t_index_read(path, BF_SEGMENT_SIZE_DEFAULT, &ilen, &ioff);
    assert_non_null(index);
    free(index);
    /* the index follows the live blocks, which start at the first multiple of the block
       size after the head (whole bare blocks are aligned to their size: file.c) */
    assert_int_equal(ioff, BS + 3 * EXT);
    assert_int_equal(sb.st_size, ioff + ilen);       /* and the tail went */
    assert_contents(w, d, 3 * BS);
    assert_int_equal(bf_file_close(w), BF_OK);
}

/*
 * A read-write open cuts what lies past the index in its last segment, so
 * that the writer's physical bytes are the sizes of its files (before, it
 * counted the index's end and missed the tail, also against the temp limit).
 */
static void test_readwrite_open_cuts_tail(void **state)
{
    (void)state;
    bf_space *sp = space();
    t_faults flt;
    use_fault_io(sp, &flt);
    unsigned char *d = closed_with_tail(sp, &flt, 83);
    readwrite_open_cuts(sp, d);
    bf_space_destroy(sp);
    free(d);
}

/*
 * A read-write open that cannot cut that tail fails with BF_EIO and leaves
 * the file as its index says: the next open finds it whole, and cuts.
 */
static void test_readwrite_open_cut_fails(void **state)
{
    (void)state;
    bf_space *sp = space();
    t_faults flt;
    use_fault_io(sp, &flt);
    unsigned char *d = closed_with_tail(sp, &flt, 85);
    flt.meta_mask = T_META_FTRUNCATE;
    flt.metas = 0;
    flt.fail_meta_at = 1;
    bf_file *w = (bf_file *)1;
    assert_int_equal(bf_file_open_named(sp, set, "n", BF_OPEN_READWRITE, &w), BF_EIO);
    assert_null(w);
    assert_non_null(strstr(bf_space_errmsg(sp), "n.0"));
    flt.fail_meta_at = 0;
    bf_file *r = open_named(sp, "n", BF_OPEN_READONLY);
    assert_contents(r, d, 3 * BS);
    assert_int_equal(bf_file_close(r), BF_OK);
    readwrite_open_cuts(sp, d);
    bf_space_destroy(sp);
    free(d);
}

/*
 * Appending an exported source whose tail is still on disk: the target's
 * part counts the source's bytes as its index does. Before, it took the
 * handle's physical end, and once a rolled-back session of the source had
 * cut the tail the target never opened again (BF_ECORRUPT).
 */
static void test_append_source_with_tail(void **state)
{
    (void)state;
    bf_space *sp = space();
    t_faults flt;
    use_fault_io(sp, &flt);
    unsigned char *d = data(84, 6 * BS);
    bf_file *src = export_with_tail(sp, &flt, "src", d);
    /* A session of the source that fails: the old version stays, the tail goes. */
    bf_file *w = open_named(sp, "src", BF_OPEN_READWRITE);
    assert_int_equal(bf_file_write(w, d, BS), BF_OK);
    bf_space_set_temp_limit(sp, 1);
    assert_int_equal(bf_file_close(w), BF_ELIMIT);
    bf_space_set_temp_limit(sp, 0);
    bf_file *t;
    uint64_t start;
    assert_int_equal(bf_file_create_named(sp, set, "t", NULL, &t), BF_OK);
    assert_int_equal(bf_file_append(t, src, &start), BF_OK);
    assert_int_equal(start, 0);
    assert_int_equal(bf_file_close(t), BF_OK);
    t = open_named(sp, "t", BF_OPEN_READONLY);
    assert_contents(t, d, 3 * BS);
    assert_int_equal(bf_file_close(t), BF_OK);
    assert_int_equal(bf_file_close(src), BF_OK);
    bf_space_destroy(sp);
    free(d);
}

/* ---- defect 9: a shrinking truncate at the temp limit --------------------- */

static void test_d9_shrinking_truncate_at_limit(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(91, 3 * BS + 100);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 3 * BS + 100), BF_OK); /* block 3 dirty */
    bf_space_set_temp_limit(sp, physical(sp));
    assert_int_equal(bf_file_truncate(f, BS + 100), BF_OK);
    assert_int_equal(bf_file_size(f), BS + 100);
    assert_contents(f, d, BS + 100);
    assert_int_equal(bf_file_truncate(f, 2 * BS), BF_OK); /* grows: the tail reads as zeros */
    unsigned char *z = calloc(1, 2 * BS);
    memcpy(z, d, BS + 100);
    assert_contents(f, z, 2 * BS);
    bf_file_close(f);
    bf_space_destroy(sp);
    free(d);
    free(z);
}

/* ---- defect 10: a failed write that stored nothing ------------------------ */

static void test_d10_failed_write_keeps_size_and_peak(void **state)
{
    (void)state;
    bf_space *sp = space_with(0, 1, 0, NULL); /* no room at all */
    unsigned char *d = data(101, 3 * BS);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_seek(f, 10 * BS, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, d, BS), BF_ELIMIT);
    assert_int_equal(bf_file_size(f), 0);
    assert_int_equal(bf_file_tell(f), 10 * BS);
    bf_stats st;
    bf_file_stats(f, &st);
    assert_int_equal(st.logical_peak, 0);
    assert_int_equal(st.logical_written, 0);
    bf_space_stats(sp, &st);
    assert_int_equal(st.logical_peak, 0);
    /* Room for one extent: the first block of three is stored, the size covers it alone. */
    bf_space_set_temp_limit(sp, EXT + 100);
    assert_int_equal(bf_file_write(f, d, 3 * BS), BF_ELIMIT);
    assert_int_equal(bf_file_tell(f), 10 * BS);
    assert_true(bf_file_size(f) == 0 || bf_file_size(f) == 11 * BS);
    bf_file_stats(f, &st);
    assert_true(st.logical_peak <= bf_file_size(f));
    bf_file_close(f);
    bf_space_destroy(sp);
    free(d);
}

/* ---- defect 11: statistics ------------------------------------------------ */

static void test_d11_statistics(void **state)
{
    (void)state;
    bf_space *sp = space_with(SMALL_SEG, 0, 0, NULL);
    unsigned char *d = data(111, 5 * BS), *got = malloc(5 * BS);
    bf_file *f;
    bf_stats st;
    /* A read_block served from the buffer is a read like any other. */
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 100), BF_OK);
    assert_int_equal(bf_file_read_block(f, 0, got), BF_OK);
    bf_file_stats(f, &st);
    assert_int_equal(st.logical_read, BS);
    /* A file counts the extents it read. */
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, d, 5 * BS), BF_OK);
    assert_int_equal(bf_file_release_buffer(f), BF_OK); /* every block comes from disk */
    assert_int_equal(bf_file_seek(f, 0, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_read(f, got, 5 * BS), 5 * BS);
    bf_file_stats(f, &st);
    assert_int_equal(st.blocks_read, 5);
    /* Physical bytes are what the segment files hold, segment-end gaps included. */
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "0");
    assert_int_equal(st.physical_bytes, bytes_on_disk(bf_space_dir(sp), prefix));
    bf_file_close(f);

    /* A named file's index is on disk too; opening a file is not creating one. */
    bf_space *rd = space_with(SMALL_SEG, 0, 0, NULL);
    assert_int_equal(bf_file_create_named(sp, set, "n", NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 5 * BS), BF_OK);
    assert_int_equal(bf_file_export(f), BF_OK);
    bf_file_stats(f, &st);
    assert_int_equal(st.physical_bytes, bytes_on_disk(set, "n"));
    bf_file *r = open_named(rd, "n", BF_OPEN_READONLY);
    bf_space_stats(rd, &st);
    assert_int_equal(st.files_created, 0);
    assert_int_equal(st.files_open, 1);
    bf_file_close(r);
    bf_file_close(f);
    bf_space_destroy(rd);
    bf_space_destroy(sp);
    free(d);
    free(got);
}

/*
 * Logical peaks are exact through small appends into the buffered block (which move a
 * file's size and the space's sum, and leave both peaks to be taken when reported or
 * when a size goes down), a truncate of one file while another has appended since,
 * and closes.
 */
static void test_logical_peaks_through_appends_truncate_and_close(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(112, 3 * BS);
    bf_file *a, *b;
    bf_stats st;
    assert_int_equal(bf_file_create(sp, NULL, &a), BF_OK);
    assert_int_equal(bf_file_create(sp, NULL, &b), BF_OK);
    for (size_t off = 0; off < BS + 300; off += 4) /* crosses a block: one slow call */
        assert_int_equal(bf_file_write(a, d + off, 4), BF_OK);
    for (size_t off = 0; off < 700; off += 70)
        assert_int_equal(bf_file_write(b, d + off, 70), BF_OK);
    bf_file_stats(a, &st);
    assert_int_equal(st.logical_peak, BS + 300);
    bf_space_stats(sp, &st);
    assert_int_equal(st.logical_bytes, BS + 300 + 700);
    assert_int_equal(st.logical_peak, BS + 300 + 700);
    /* b appends after the last report; a shrinks: the sum before it went down is the peak. */
    assert_int_equal(bf_file_write(b, d, 30), BF_OK);
    assert_int_equal(bf_file_truncate(a, 100), BF_OK);
    bf_space_stats(sp, &st);
    assert_int_equal(st.logical_bytes, 100 + 730);
    assert_int_equal(st.logical_peak, BS + 300 + 730);
    bf_file_stats(a, &st);
    assert_int_equal(st.logical_bytes, 100);
    assert_int_equal(st.logical_peak, BS + 300);
    /* a grows again, by appends alone, past its old peak; b, grown since, is closed. */
    assert_int_equal(bf_file_seek(a, 100, BF_SEEK_SET), BF_OK);
    for (size_t off = 100; off < 2 * BS; off += 4)
        assert_int_equal(bf_file_write(a, d + off, 4), BF_OK);
    assert_int_equal(bf_file_write(b, d, 20), BF_OK);
    bf_file_close(b);
    bf_file_stats(a, &st);
    assert_int_equal(st.logical_peak, 2 * BS);
    bf_space_stats(sp, &st);
    assert_int_equal(st.logical_bytes, 2 * BS);
    assert_int_equal(st.logical_peak, 2 * BS + 750);
    bf_file_close(a);
    bf_space_stats(sp, &st);
    assert_int_equal(st.logical_bytes, 0);
    assert_int_equal(st.logical_peak, 2 * BS + 750);
    bf_space_destroy(sp);
    free(d);
}

/* ---- contracts around them ------------------------------------------------ */

/* A read-only handle on another space's file counts nothing against the reader's limit. */
static void test_readonly_handle_not_counted(void **state)
{
    (void)state;
    bf_space *w = space(), *r = space_with(0, 64 * 1024, 0, NULL);
    unsigned char *d = data(121, 1 << 20);
    make_named(w, "big", d, 1 << 20);
    bf_file *big = open_named(r, "big", BF_OPEN_READONLY), *f;
    assert_int_equal(physical(r), 0);
    assert_int_equal(bf_file_create(r, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 2 * BS), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    assert_int_equal(physical(r), 2 * EXT);
    bf_stats st;
    bf_file_stats(big, &st);
    assert_true(st.physical_bytes >= 1 << 20); /* the handle still shows its file */
    bf_file_close(f);
    bf_file_close(big);
    bf_space_destroy(w);
    bf_space_destroy(r);
    free(d);
}

/* A rewrite needs room for its new copy before the old one is freed. */
static void test_rewrite_at_limit(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(131, 2 * BS), *n = data(132, BS);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, d, 2 * BS), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    bf_space_set_temp_limit(sp, physical(sp));
    assert_int_equal(bf_file_write_block(f, 0, n), BF_ELIMIT);
    if (strstr(bf_space_errmsg(sp), "copy") == NULL)
        fail_msg("message should say the new copy needs room: %s", bf_space_errmsg(sp));
    assert_contents(f, d, 2 * BS);
    bf_file_close(f);
    bf_space_destroy(sp);
    free(d);
    free(n);
}

/* An append source is consumed: read-only from then on, its bytes belong to the target. */
static void test_append_consumes_source(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(141, 3 * BS);
    make_named(sp, "src", d, 3 * BS);
    bf_file *t, *s = open_named(sp, "src", BF_OPEN_READONLY), *x = NULL;
    assert_int_equal(bf_file_create_named(sp, set, "t", NULL, &t), BF_OK);
    uint64_t at;
    assert_int_equal(bf_file_append(t, s, &at), BF_OK);
    assert_int_equal(at, 0);
    assert_int_equal(bf_file_close(s), BF_OK);
    assert_int_equal(bf_file_close(t), BF_OK);
    assert_int_equal(bf_file_open_named(sp, set, "src", BF_OPEN_READWRITE, &x), BF_EBUSY);
    assert_null(x);
    assert_int_equal(bf_file_delete_named(sp, set, "src"), BF_EBUSY);
    s = open_named(sp, "src", BF_OPEN_READONLY);
    assert_contents(s, d, 3 * BS);
    bf_file_close(s);
    t = open_named(sp, "t", BF_OPEN_READONLY);
    assert_contents(t, d, 3 * BS);
    bf_file_close(t);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    free(d);
}

/* Appending onto a read-only handle makes a view for that handle alone. */
static void test_append_onto_readonly_target(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *a = data(151, 2 * BS), *b = data(152, 3 * BS);
    make_named(sp, "a", a, 2 * BS);
    make_named(sp, "b", b, 3 * BS);
    bf_file *ta = open_named(sp, "a", BF_OPEN_READONLY);
    bf_file *sb = open_named(sp, "b", BF_OPEN_READONLY);
    uint64_t at;
    assert_int_equal(bf_file_append(ta, sb, &at), BF_OK);
    assert_int_equal(at, 2 * BS);
    assert_int_equal(bf_file_size(ta), 5 * BS);
    assert_block(ta, 3, b, 3 * BS, 1);
    assert_int_equal(bf_file_write(ta, "x", 1), BF_EREADONLY);
    bf_file_close(ta);
    bf_file_close(sb);
    ta = open_named(sp, "a", BF_OPEN_READONLY);
    assert_contents(ta, a, 2 * BS); /* nothing was persisted */
    bf_file_close(ta);
    sb = open_named(sp, "b", BF_OPEN_READWRITE); /* and b was not consumed */
    bf_file_close(sb);
    bf_space_destroy(sp);
    free(a);
    free(b);
}

/* One byte at the largest offset costs a bounded block map, not 16 bytes per block. */
static void test_far_write_bounded_map(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = space_with(0, 0, 0, &cnt.hooks);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    uint64_t far = (uint64_t)BF_MAP_MAX_BLOCK * BS;
    assert_int_equal(bf_file_seek(f, (int64_t)far, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, "z", 1), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK);
    assert_int_equal(bf_file_size(f), far + 1);
    unsigned char got[BS];
    assert_int_equal(bf_file_read_block(f, BF_MAP_MAX_BLOCK, got), BF_OK);
    assert_int_equal(got[0], 'z');
    assert_int_equal(bf_file_read_block(f, 12345, got), BF_OK);
    assert_int_equal(got[0], 0);
    if (cnt.peak_bytes > 16 << 20)
        fail_msg("a one-byte file far out peaked at %lld bytes", (long long)cnt.peak_bytes);
    bf_file_close(f);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
}

/*
 * An old read-only handle outlives two read-write sessions; the second one
 * reuses the extents the first freed. The old handle reads its own version
 * or fails as corrupt, never a later version's bytes.
 */
static void test_old_readonly_handle_after_sessions(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *v1 = data(161, 4 * BS), *v2 = data(162, BS), *v3 = data(163, 2 * BS);
    make_named(sp, "f", v1, 4 * BS);
    bf_file *old = open_named(sp, "f", BF_OPEN_READONLY);
    bf_file *f = open_named(sp, "f", BF_OPEN_READWRITE);
    assert_int_equal(bf_file_write_block(f, 1, v2), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_contents(old, v1, 4 * BS); /* the session never touched what the old index holds */
    f = open_named(sp, "f", BF_OPEN_READWRITE);
    assert_int_equal(bf_file_write_block(f, 1, v3), BF_OK);
    assert_int_equal(bf_file_write_block(f, 2, v3 + BS), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    unsigned char got[BS];
    int corrupt = 0;
    for (uint64_t b = 0; b < 4; b++) {
        int rc = bf_file_read_block(old, b, got);
        if (rc == BF_ECORRUPT) {
            corrupt++;
            continue;
        }
        assert_int_equal(rc, BF_OK);
        if (memcmp(got, v1 + b * BS, BS) != 0)
            fail_msg("old handle read block %llu of a later version", (unsigned long long)b);
    }
    bf_file_close(old);
    f = open_named(sp, "f", BF_OPEN_READONLY);
    assert_block(f, 1, v3, 2 * BS, 0);
    assert_block(f, 2, v3, 2 * BS, 1);
    assert_block(f, 3, v1, 4 * BS, 3);
    bf_file_close(f);
    bf_space_destroy(sp);
    free(v1);
    free(v2);
    free(v3);
}

/* A file names the path its segments start with; destroying a set needs no space. */
static void test_file_path_and_set_without_space(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(171, BS);
    bf_file *a, *n;
    assert_int_equal(bf_file_create(sp, NULL, &a), BF_OK);
    assert_int_equal(bf_file_create_named(sp, set, "named", NULL, &n), BF_OK);
    assert_int_equal(bf_file_write(a, d, BS), BF_OK);
    assert_int_equal(bf_file_flush(a), BF_OK);
    char path[4096], seg[4200];
    int len = bf_file_path(a, path, sizeof(path));
    assert_int_equal(len, (int)strlen(path));
    assert_non_null(strstr(path, bf_space_dir(sp)));
    snprintf(seg, sizeof(seg), "%s.0", path);
    assert_int_equal(access(seg, F_OK), 0);
    bf_file_path(n, path, sizeof(path));
    snprintf(seg, sizeof(seg), "%s/named", set);
    assert_string_equal(path, seg);
    char small[8];
    assert_int_equal(bf_file_path(n, small, sizeof(small)), (int)strlen(seg));
    assert_int_equal(strlen(small), 7);
    assert_int_equal(bf_file_close(n), BF_OK);
    assert_int_equal(bf_file_close(a), BF_OK);
    assert_int_equal(bf_fileset_destroy(NULL, set), BF_OK);
    assert_int_equal(t_dir_entries(set), -1);
    assert_int_equal(bf_fileset_destroy(NULL, set), BF_ENOENT);
    bf_space_destroy(sp);
    free(d);
}

/* ---- the defects at the edges (docs/reliability.md's second table) ------------------------- */

/*
 * An outdated read-only handle as an append source. S of 4 segments is
 * closed, a handle kept on it; two read-write sessions trim S to 1 segment.
 * Appending the old handle onto T is refused (BF_EINVAL, nothing changes)
 * onto a writable target and onto a view alike; T still opens with its own
 * block 0. Before, the splice took the old handle's physical end, and every
 * open of T failed ("segment files do not match the index").
 */
static void test_outdated_source_append_refused(void **state)
{
    (void)state;
    bf_space *sp = space_with(SMALL_SEG, 0, 0, NULL);
    unsigned char *d = data(231, 8 * BS), *t0 = data(232, BS), *nw = data(233, BS);
    make_named(sp, "s", d, 8 * BS); /* two extents a segment: 4 segments */
    bf_file *old = open_named(sp, "s", BF_OPEN_READONLY);
    bf_file *w = open_named(sp, "s", BF_OPEN_READWRITE);
    assert_int_equal(bf_file_truncate(w, 3 * BS), BF_OK);
    assert_int_equal(bf_file_write_block(w, 0, nw), BF_OK);
    assert_int_equal(bf_file_close(w), BF_OK);
    w = open_named(sp, "s", BF_OPEN_READWRITE);
    assert_int_equal(bf_file_truncate(w, BS), BF_OK);
    assert_int_equal(bf_file_close(w), BF_OK);
    bf_file *t;
    assert_int_equal(bf_file_create_named(sp, set, "t", NULL, &t), BF_OK);
    assert_int_equal(bf_file_write(t, t0, BS), BF_OK);
    uint64_t at = 77;
    int rc = bf_file_append(t, old, &at);
    if (rc != BF_EINVAL)
        fail_msg("append of an outdated handle returned %d (%s), not BF_EINVAL", rc,
                 bf_strerror(rc));
    assert_non_null(strstr(bf_space_errmsg(sp), "outdated"));
    assert_int_equal(at, 77);
    assert_int_equal(bf_file_size(t), BS);
    assert_int_equal(bf_file_tell(t), BS);
    assert_int_equal(bf_file_close(t), BF_OK);
    t = open_named(sp, "t", BF_OPEN_READONLY);
    assert_contents(t, t0, BS);
    /* Onto a view too: the old handle's extents are not the file's any more. */
    assert_int_equal(bf_file_append(t, old, &at), BF_EINVAL);
    assert_int_equal(bf_file_size(t), BS);
    /* A current handle of the same file appends. */
    bf_file *cur = open_named(sp, "s", BF_OPEN_READONLY);
    assert_int_equal(bf_file_append(t, cur, &at), BF_OK);
    assert_int_equal(at, BS);
    assert_block(t, 1, nw, BS, 0);
    bf_file_close(cur);
    bf_file_close(t);
    bf_file_close(old);
    bf_space_destroy(sp);
    free(d);
    free(t0);
    free(nw);
}

/* Open named file `name` read-only and read its block `b`, which must hold `want` at byte `i`. */
static void expect_byte(bf_space *sp, const char *name, uint64_t size, uint64_t b, uint32_t i,
                        unsigned char want)
{
    bf_file *f = NULL;
    int rc = bf_file_open_named(sp, set, name, BF_OPEN_READONLY, &f);
    if (rc != BF_OK)
        fail_msg("%s (%llu bytes) does not reopen: %s (%s)", name, (unsigned long long)size,
                 bf_strerror(rc), bf_space_errmsg(sp));
    assert_int_equal(bf_file_size(f), size);
    unsigned char got[BS];
    assert_int_equal(bf_file_read_block(f, b, got), BF_OK);
    assert_int_equal(got[i], want);
    assert_int_equal(bf_file_read_block(f, b / 2, got), BF_OK); /* a hole */
    assert_int_equal(got[0], 0);
    bf_file_close(f);
}

/*
 * Data in the last block a file can hold is persisted and reopens - one
 * byte at the largest offset, or a whole block at the largest block number
 * (before, the index recorded nblocks = UINT32_MAX and every open said
 * "inconsistent sizes in index header"); an append at the limit takes a
 * source whose holes fit (an empty one just past the last block), refuses
 * one whose holes would not, and the result reopens.
 */
static void test_last_block_reopens(void **state)
{
    (void)state;
    bf_space *sp = space();
    const uint64_t max_size = ((uint64_t)BF_MAP_MAX_BLOCK + 1) * BS;
    bf_file *f, *g, *src;
    assert_int_equal(bf_file_create_named(sp, set, "byte", NULL, &f), BF_OK);
    assert_int_equal(bf_file_seek(f, (int64_t)(max_size - 1), BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f, "z", 1), BF_OK);
    assert_int_equal(bf_file_write(f, "z", 1), BF_EINVAL); /* no byte more */
    unsigned char *blk = data(234, BS);
    assert_int_equal(bf_file_create_named(sp, set, "block", NULL, &g), BF_OK);
    assert_int_equal(bf_file_write_block(g, BF_MAP_MAX_BLOCK, blk), BF_OK);
    assert_int_equal(bf_file_write_block(g, (uint64_t)BF_MAP_MAX_BLOCK + 1, blk), BF_EINVAL);
    int rc = bf_file_close(f);
    if (rc != BF_OK)
        fail_msg("close: %s (%s)", bf_strerror(rc), bf_space_errmsg(sp));
    assert_int_equal(bf_file_close(g), BF_OK);
    expect_byte(sp, "byte", max_size, BF_MAP_MAX_BLOCK, BS - 1, 'z');
    expect_byte(sp, "block", max_size, BF_MAP_MAX_BLOCK, 5, blk[5]);
    /* A read-write session of such a file persists again, here with appends at the limit:
       sources of holes only, an empty one and one of 10 bytes. */
    f = open_named(sp, "byte", BF_OPEN_READWRITE);
    assert_int_equal(bf_file_create_named(sp, set, "empty", NULL, &src), BF_OK);
    assert_int_equal(bf_file_export(src), BF_OK);
    uint64_t at;
    assert_int_equal(bf_file_append(f, src, &at), BF_OK);
    assert_int_equal(at, max_size);
    bf_file_close(src);
    assert_int_equal(bf_file_create_named(sp, set, "holes", NULL, &src), BF_OK);
    assert_int_equal(bf_file_truncate(src, 10), BF_OK);
    assert_int_equal(bf_file_export(src), BF_OK);
    assert_int_equal(bf_file_append(f, src, &at), BF_EINVAL); /* its hole would not fit */
    bf_file_close(src);
    assert_int_equal(bf_file_close(f), BF_OK);
    expect_byte(sp, "byte", max_size, BF_MAP_MAX_BLOCK, BS - 1, 'z');
    bf_space_destroy(sp);
    free(blk);
}

/* Create "<set>/<name>.<k>" holding `len` bytes, as a killed session leaves it. */
static void plant_segment(const char *name, int k, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.%d", set, name, k);
    unsigned char *junk = data(235, len);
    assert_int_equal(t_write_file(path, junk, len), 0);
    free(junk);
}

/*
 * A killed session left segments n.1 and n.2 (the index counts n.0); the
 * read-write open removes them from the last down, fails on the second
 * (BF_EIO), and the retry removes the rest: nothing stays, and a write that
 * needs segments 1, 2 and 3 creates them. Before, the first open removed
 * n.1 and failed on n.2; the retry stopped at the missing n.1 and left n.2
 * for good: writes needing segment 2 failed with BF_EEXIST, in every later
 * session, and a delete (counting from 0) left n.2 behind.
 */
static void test_retried_open_removes_leftovers(void **state)
{
    (void)state;
    bf_space *sp = space_with(SMALL_SEG, 0, 0, NULL);
    t_faults flt;
    use_fault_io(sp, &flt);
    unsigned char *d = data(236, 8 * BS);
    make_named(sp, "n", d, BS);
    plant_segment("n", 1, EXT);
    plant_segment("n", 2, 100);
    flt.meta_mask = T_META_UNLINK;
    flt.metas = 0;
    flt.fail_meta_at = 2;
    flt.fail_errno = EIO;
    bf_file *w = NULL;
    assert_int_equal(bf_file_open_named(sp, set, "n", BF_OPEN_READWRITE, &w), BF_EIO);
    assert_null(w);
    flt.fail_meta_at = 0;
    w = open_named(sp, "n", BF_OPEN_READWRITE);
    assert_int_equal(t_dir_entries(set), 1); /* n.0, holding the index */
    assert_int_equal(bf_file_seek(w, BS, BF_SEEK_SET), BF_OK);
    int rc = bf_file_write(w, d + BS, 7 * BS); /* segments 1..3 */
    if (rc != BF_OK)
        fail_msg("write after the retried open: %s (%s)", bf_strerror(rc), bf_space_errmsg(sp));
    bf_stats st;
    bf_file_stats(w, &st);
    assert_int_equal(st.physical_bytes, bytes_on_disk(set, "n"));
    assert_int_equal(bf_file_close(w), BF_OK);
    w = open_named(sp, "n", BF_OPEN_READONLY);
    assert_contents(w, d, 8 * BS);
    bf_file_close(w);
    assert_int_equal(bf_file_delete_named(sp, set, "n"), BF_OK);
    assert_int_equal(t_dir_entries(set), 0);
    bf_space_destroy(sp);
    free(d);
}

/*
 * An append onto a writable target whose close then fails (the index
 * does not fit the temp limit): the splice is rolled back, and so is the
 * source's consumption - it opens read-write and deletes again. For a
 * target persisted before (rolled back to it) and one never persisted
 * (deleted). Before, the source stayed consumed: BF_EBUSY for good, its
 * name taken, its bytes no file's until the set went.
 */
static void test_failed_close_frees_source(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(237, 2 * BS), *t0 = data(238, BS);
    for (int persisted = 0; persisted < 2; persisted++) {
        make_named(sp, "src", d, 2 * BS);
        bf_file *t, *s = open_named(sp, "src", BF_OPEN_READONLY);
        if (persisted) {
            make_named(sp, "t", t0, BS);
            t = open_named(sp, "t", BF_OPEN_READWRITE);
        } else {
            assert_int_equal(bf_file_create_named(sp, set, "t", NULL, &t), BF_OK);
        }
        uint64_t at;
        assert_int_equal(bf_file_append(t, s, &at), BF_OK);
        bf_space_set_temp_limit(sp, 1);
        assert_int_equal(bf_file_close(t), BF_ELIMIT);
        bf_space_set_temp_limit(sp, 0);
        bf_file_close(s);
        bf_file *x = NULL;
        int rc = bf_file_open_named(sp, set, "src", BF_OPEN_READWRITE, &x);
        if (rc != BF_OK)
            fail_msg("%s target: after its failed close the source opens read-write with %d "
                     "(%s): %s",
                     persisted ? "persisted" : "new", rc, bf_strerror(rc), bf_space_errmsg(sp));
        assert_contents(x, d, 2 * BS);
        assert_int_equal(bf_file_close(x), BF_OK);
        assert_int_equal(bf_file_delete_named(sp, set, "src"), BF_OK);
        if (persisted) { /* the target reads as before the session */
            t = open_named(sp, "t", BF_OPEN_READONLY);
            assert_contents(t, t0, BS);
            bf_file_close(t);
            assert_int_equal(bf_file_delete_named(sp, set, "t"), BF_OK);
        }
        assert_int_equal(t_dir_entries(set), 0);
    }
    bf_space_destroy(sp);
    free(d);
    free(t0);
}

/*
 * The same failed close, when the rollback cannot remove the marker: the
 * source stays consumed, and the message says so; the close's status is the
 * persist's.
 */
static void test_failed_close_marker_stays_when_unlink_fails(void **state)
{
    (void)state;
    bf_space *sp = space();
    t_faults flt;
    use_fault_io(sp, &flt);
    unsigned char *d = data(239, BS), *t0 = data(240, BS);
    make_named(sp, "src", d, BS);
    make_named(sp, "t", t0, BS);
    bf_file *s = open_named(sp, "src", BF_OPEN_READONLY),
            *t = open_named(sp, "t", BF_OPEN_READWRITE);
    uint64_t at;
    assert_int_equal(bf_file_append(t, s, &at), BF_OK);
    bf_space_set_temp_limit(sp, 1);
    flt.meta_mask = T_META_UNLINK;
    flt.metas = 0;
    flt.fail_meta_at = 1; /* nothing else unlinks: the marker */
    flt.fail_errno = EIO;
    assert_int_equal(bf_file_close(t), BF_ELIMIT);
    flt.fail_meta_at = 0;
    bf_space_set_temp_limit(sp, 0);
    assert_non_null(strstr(bf_space_errmsg(sp), "stays consumed"));
    assert_non_null(strstr(bf_space_errmsg(sp), "temp limit"));
    bf_file *x = NULL;
    assert_int_equal(bf_file_open_named(sp, set, "src", BF_OPEN_READWRITE, &x), BF_EBUSY);
    t = open_named(sp, "t", BF_OPEN_READONLY);
    assert_contents(t, t0, BS);
    bf_file_close(t);
    bf_file_close(s);
    bf_space_destroy(sp);
    free(d);
    free(t0);
}

/*
 * One byte in each of 2000 blocks 4096 apart costs what buffile.h states,
 * through the hooks (before compact leaves: 125 MiB of map, a 64 KiB leaf per
 * block).
 */
static void test_sparse_map_memory(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = space_with(0, 0, 0, &cnt.hooks);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_write(f, "a", 1), BF_OK);
    assert_int_equal(bf_file_flush(f), BF_OK); /* the block buffer exists now */
    int64_t base = cnt.live_bytes;
    for (uint64_t i = 1; i < 2000; i++) {
        assert_int_equal(bf_file_seek(f, (int64_t)(i * 4096 * BS), BF_SEEK_SET), BF_OK);
        assert_int_equal(bf_file_write(f, "a", 1), BF_OK);
    }
    assert_int_equal(bf_file_flush(f), BF_OK);
    uint64_t nblocks = 1999 * 4096 + 1, bound = t_map_bound(2000, nblocks);
    int64_t grew = cnt.live_bytes - base;
    print_message("  2000 blocks 4096 apart: %lld bytes more through the hooks, bound %llu\n",
                  (long long)grew, (unsigned long long)bound);
    if (grew > (int64_t)bound)
        fail_msg("2000 blocks 4096 apart took %lld bytes of map; buffile.h says at most %llu",
                 (long long)grew, (unsigned long long)bound);
    bf_stats st;
    bf_file_stats(f, &st);
    assert_true(st.memory_bytes <= bound + BS + 512);
    bf_file_close(f);
    bf_space_destroy(sp);
    assert_int_equal(cnt.live_bytes, 0);
}

/* Index of named file `name`: its generation set to `gen`, the CRC made right again, and the
   head holding the slot of that generation alone. */
static void set_index_gen(const char *name, uint32_t gen)
{
    char prefix[4096];
    snprintf(prefix, sizeof(prefix), "%s/%s", set, name);
    size_t len;
    uint64_t off;
    unsigned char *b = t_index_read(prefix, BF_SEGMENT_SIZE_DEFAULT, &len, &off);
    assert_non_null(b);
    for (int k = 0; k < 4; k++)
        b[60 + k] = (unsigned char)(gen >> (8 * k));
    uint32_t crc = bf_crc32c(0, b, len - 4);
    for (int k = 0; k < 4; k++)
        b[len - 4 + k] = (unsigned char)(crc >> (8 * k));
    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, off, b, len), 0);
    unsigned char head[BF_HEAD_BYTES] = {0};
    bf_head_encode(&(bf_head_slot){gen, off, len}, head + bf_head_slot_at(gen));
    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, 0, head, sizeof(head)), 0);
    free(b);
}

/* An index at the last generation: no read-write session left (BF_EINVAL); readers still read. */
static void test_no_generation_left(void **state)
{
    (void)state;
    bf_space *sp = space();
    unsigned char *d = data(241, BS);
    make_named(sp, "g", d, BS);
    set_index_gen("g", UINT32_MAX);
    bf_file *f = NULL;
    assert_int_equal(bf_file_open_named(sp, set, "g", BF_OPEN_READWRITE, &f), BF_EINVAL);
    assert_null(f);
    assert_non_null(strstr(bf_space_errmsg(sp), "no generation left"));
    f = open_named(sp, "g", BF_OPEN_READONLY);
    assert_contents(f, d, BS);
    bf_file_close(f);
    set_index_gen("g", UINT32_MAX - 1); /* the last session there is */
    f = open_named(sp, "g", BF_OPEN_READWRITE);
    assert_int_equal(bf_file_write_block(f, 0, d), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_open_named(sp, set, "g", BF_OPEN_READWRITE, &f), BF_EINVAL);
    f = open_named(sp, "g", BF_OPEN_READONLY);
    assert_contents(f, d, BS);
    bf_file_close(f);
    bf_space_destroy(sp);
    free(d);
}

int main(void)
{
    /* Defect 1 spun forever in a release build: a hang is a failure, not a CI timeout. */
    alarm(300);
    if (getenv("BF_TEST_FILTER") != NULL) /* run one test: BF_TEST_FILTER=test_d5* */
        cmocka_set_test_filter(getenv("BF_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_d1_append_after_parts_used, fresh_set),
        cmocka_unit_test_setup(test_d2_close_unlink_fails, fresh_set),
        cmocka_unit_test_setup(test_d3_failed_write_past_end_reopens, fresh_set),
        cmocka_unit_test_setup(test_d4_self_append, fresh_set),
        cmocka_unit_test_setup(test_d5_killed_session_old_index, fresh_set),
        cmocka_unit_test_setup(test_d6_truncate_to_zero_keeps_name, fresh_set),
        cmocka_unit_test_setup(test_d7_failed_read_keeps_position, fresh_set),
        cmocka_unit_test_setup(test_d8_failed_close_named, fresh_set),
        cmocka_unit_test_setup(test_failed_close_named_unlink_fails, fresh_set),
        cmocka_unit_test_setup(test_readwrite_open_cuts_tail, fresh_set),
        cmocka_unit_test_setup(test_readwrite_open_cut_fails, fresh_set),
        cmocka_unit_test_setup(test_append_source_with_tail, fresh_set),
        cmocka_unit_test_setup(test_d9_shrinking_truncate_at_limit, fresh_set),
        cmocka_unit_test_setup(test_d10_failed_write_keeps_size_and_peak, fresh_set),
        cmocka_unit_test_setup(test_d11_statistics, fresh_set),
        cmocka_unit_test_setup(test_logical_peaks_through_appends_truncate_and_close, fresh_set),
        cmocka_unit_test_setup(test_readonly_handle_not_counted, fresh_set),
        cmocka_unit_test_setup(test_rewrite_at_limit, fresh_set),
        cmocka_unit_test_setup(test_append_consumes_source, fresh_set),
        cmocka_unit_test_setup(test_append_onto_readonly_target, fresh_set),
        cmocka_unit_test_setup(test_far_write_bounded_map, fresh_set),
        cmocka_unit_test_setup(test_old_readonly_handle_after_sessions, fresh_set),
        cmocka_unit_test_setup(test_file_path_and_set_without_space, fresh_set),
        cmocka_unit_test_setup(test_outdated_source_append_refused, fresh_set),
        cmocka_unit_test_setup(test_last_block_reopens, fresh_set),
        cmocka_unit_test_setup(test_retried_open_removes_leftovers, fresh_set),
        cmocka_unit_test_setup(test_failed_close_frees_source, fresh_set),
        cmocka_unit_test_setup(test_failed_close_marker_stays_when_unlink_fails, fresh_set),
        cmocka_unit_test_setup(test_sparse_map_memory, fresh_set),
        cmocka_unit_test_setup(test_no_generation_left, fresh_set),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
