/*
 * test_security.c - planted links and foreign files are refused, names are
 * not guessable, and every open goes through O_NOFOLLOW (O_EXCL, 0600 on
 * create).
 *
 * An attacker who can write where the library creates files gets nothing:
 * a symlink or a foreign file at the path a segment will use makes that
 * write fail with a clear error while the link's target and the foreign
 * file stay untouched, and closing does not delete what is not ours. The
 * same holds in file sets (segment, index, set directory). The space
 * directory names of many spaces are distinct and random. Covered
 * elsewhere and not repeated here: the 0700/0600 modes under umask 0 and
 * the sweep after SIGKILL (test_cleanup.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "buffile.h"
#include "file.h"
#include "support.h"

#define BS 4096u
#define SMALL_SEG 16384u

static char parent[512];
static char victim[600];
static const char precious[] = "precious bytes that must survive";

static int setup(void **state)
{
    (void)state;
    t_temp_parent(parent, sizeof(parent), "security");
    snprintf(victim, sizeof(victim), "%s/victim", parent);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_rm_rf(parent);
    return 0;
}

static void put_victim(void)
{
    int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, precious, sizeof(precious)), (ssize_t)sizeof(precious));
    close(fd);
}

/* The victim file still exists with exactly its original bytes. */
static void assert_victim_intact(void)
{
    char got[sizeof(precious) + 16];
    int fd = open(victim, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, got, sizeof(got));
    close(fd);
    if (n != (ssize_t)sizeof(precious) || memcmp(got, precious, sizeof(precious)) != 0)
        fail_msg("the victim file %s was modified (%zd bytes now)", victim, n);
}

static int is_symlink(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

static bf_space *small_space(void)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.codec = BF_CODEC_NONE;
    o.segment_size = SMALL_SEG;
    return t_space_opts(&o);
}

static void assert_refused(bf_space *sp, int rc, const char *path)
{
    if (rc != BF_EEXIST)
        fail_msg("expected BF_EEXIST for a planted %s, got %d (%s)", path, rc, bf_space_errmsg(sp));
    if (strstr(bf_space_errmsg(sp), path) == NULL)
        fail_msg("message \"%s\" does not name %s", bf_space_errmsg(sp), path);
}

/* Plant a symlink to the victim, or a foreign file, at `path`. */
static void plant(const char *path, int as_link)
{
    if (as_link) {
        assert_int_equal(symlink(victim, path), 0);
    } else {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, precious, sizeof(precious)), (ssize_t)sizeof(precious));
        close(fd);
    }
}

/* The planted foreign file still holds what was planted. */
static void assert_foreign_intact(const char *path)
{
    char got[sizeof(precious) + 16];
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    assert_true(fd >= 0);
    ssize_t n = read(fd, got, sizeof(got));
    close(fd);
    assert_int_equal(n, (ssize_t)sizeof(precious));
    assert_memory_equal(got, precious, sizeof(precious));
}

static void planted_at_segment(int as_link)
{
    put_victim();
    bf_space *sp = small_space();
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    unsigned char blk[BS];
    memset(blk, 'a', sizeof(blk));
    char seg0[4096], seg1[4096];
    bf_seg_path(&f->seg, 0, seg0, sizeof(seg0));
    bf_seg_path(&f->seg, 1, seg1, sizeof(seg1));

    /* At the first segment: the very first write is refused. */
    plant(seg0, as_link);
    assert_refused(sp, bf_file_write_block(f, 0, blk), seg0);
    assert_int_equal(bf_file_size(f), 0);
    assert_victim_intact();
    if (!as_link)
        assert_foreign_intact(seg0);
    /* Once the plant is gone, the same write works. */
    assert_int_equal(unlink(seg0), 0);
    for (uint64_t b = 0; b < 3; b++)
        assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);

    /* At the next segment: rollover is refused, acknowledged blocks still read. */
    plant(seg1, as_link);
    int rc = BF_OK;
    for (uint64_t b = 3; b < 8 && rc == BF_OK; b++)
        rc = bf_file_write_block(f, b, blk);
    assert_refused(sp, rc, seg1);
    unsigned char got[BS];
    for (uint64_t b = 0; b < 3; b++) {
        assert_int_equal(bf_file_read_block(f, b, got), BF_OK);
        assert_memory_equal(got, blk, BS);
    }
    assert_victim_intact();

    /* Closing removes our segments only: the plant is not ours to delete. */
    assert_int_equal(bf_file_close(f), BF_OK);
    if (as_link)
        assert_true(is_symlink(seg1));
    else
        assert_foreign_intact(seg1);
    assert_false(access(seg0, F_OK) == 0);
    assert_int_equal(t_dir_entries(bf_space_dir(sp)), 1);
    assert_victim_intact();
    assert_int_equal(unlink(seg1), 0);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(sp));
    bf_space_destroy(sp);
    assert_int_equal(t_dir_entries(dir), -1);
}

static void test_symlink_at_segment(void **state)
{
    (void)state;
    planted_at_segment(1);
}

static void test_foreign_file_at_segment(void **state)
{
    (void)state;
    planted_at_segment(0);
}

/* ---- file sets ------------------------------------------------------- */

static void set_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/set/%s", parent, name);
}

static void test_fileset_plants(void **state)
{
    (void)state;
    put_victim();
    bf_space *sp = small_space();
    char set[4096], path[4400];
    snprintf(set, sizeof(set), "%s/set", parent);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    unsigned char blk[BS];
    memset(blk, 'b', sizeof(blk));

    /* A symlink where a named file's first segment goes: the name is refused. */
    set_path(path, sizeof(path), "f.0");
    plant(path, 1);
    bf_file *f = NULL;
    assert_refused(sp, bf_file_create_named(sp, set, "f", NULL, &f), path);
    assert_null(f);
    assert_true(is_symlink(path));
    assert_victim_intact();

    /* A symlinked segment 0, which holds the head and index, is not followed: open refuses. */
    set_path(path, sizeof(path), "h.0");
    plant(path, 1);
    assert_true(bf_file_open_named(sp, set, "h", BF_OPEN_READONLY, &f) < 0);
    assert_null(f);
    assert_victim_intact();

    /* A real file whose segment is swapped for a symlink to a copy: refused on open. */
    bf_file *g;
    assert_int_equal(bf_file_create_named(sp, set, "g", NULL, &g), BF_OK);
    assert_int_equal(bf_file_write_block(g, 0, blk), BF_OK);
    assert_int_equal(bf_file_close(g), BF_OK);
    char seg[4200], copy[4200];
    set_path(seg, sizeof(seg), "g.0");
    snprintf(copy, sizeof(copy), "%s/g0-copy", parent);
    assert_int_equal(rename(seg, copy), 0);
    assert_int_equal(symlink(copy, seg), 0);
    assert_int_equal(bf_file_open_named(sp, set, "g", BF_OPEN_READONLY, &g), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), seg));

    /* Destroying the set removes links, not what they point to. */
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    assert_int_equal(t_dir_entries(set), -1);
    assert_victim_intact();
    assert_int_equal(access(copy, F_OK), 0);

    /* A set directory that is a symlink is neither adopted nor emptied through. */
    char real[4200];
    snprintf(real, sizeof(real), "%s/real-dir", parent);
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink(real, set), 0);
    snprintf(path, sizeof(path), "%s/keep.0", real);
    plant(path, 0);
    assert_int_equal(bf_fileset_create(sp, set), BF_EEXIST);
    assert_true(bf_fileset_destroy(sp, set) < 0);
    assert_foreign_intact(path);
    unlink(set);
    bf_space_destroy(sp);
}

/*
 * Files planted at the names an index file once had, "<name>.idx" and
 * "<name>.idx.tmp" - here hard links to the victim, as a same-user
 * attacker would leave - are never written: the index goes into the file's
 * own segments, which the library created itself with O_EXCL.
 */
static void test_index_only_in_own_segments(void **state)
{
    (void)state;
    put_victim();
    bf_space *sp = small_space();
    char set[4096], tmp[4200];
    snprintf(set, sizeof(set), "%s/set", parent);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    set_path(tmp, sizeof(tmp), "f.idx.tmp");
    assert_int_equal(link(victim, tmp), 0);
    set_path(tmp, sizeof(tmp), "f.idx");
    assert_int_equal(link(victim, tmp), 0);
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, "f", NULL, &f), BF_OK);
    unsigned char blk[BS];
    memset(blk, 'c', sizeof(blk));
    assert_int_equal(bf_file_write_block(f, 0, blk), BF_OK);
    assert_int_equal(bf_file_export(f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_victim_intact();
    assert_int_equal(bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &f), BF_OK);
    unsigned char got[BS];
    assert_int_equal(bf_file_read_block(f, 0, got), BF_OK);
    assert_memory_equal(got, blk, BS);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    assert_victim_intact();
}

/* ---- every open through the seam ------------------------------------- */

typedef struct opens {
    int n, creates, bad;
    char first_bad[4200];
} opens;

static opens seen;

static int recording_open(void *ctx, const char *path, int flags, mode_t mode)
{
    (void)ctx;
    seen.n++;
    int creates = (flags & O_CREAT) != 0;
    seen.creates += creates;
    int ok = (flags & O_NOFOLLOW) && (flags & O_CLOEXEC) &&
             (!creates || ((flags & O_EXCL) && (mode & 07777) == 0600));
    if (!ok && seen.bad++ == 0)
        snprintf(seen.first_bad, sizeof(seen.first_bad), "%s flags 0%o mode 0%o", path, flags,
                 (unsigned)mode);
    return bf_posix_io.open(NULL, path, flags, mode);
}

static void test_every_open_is_nofollow_exclusive(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof(seen));
    bf_space *sp = small_space();
    bf_io io = bf_posix_io;
    io.open = recording_open;
    bf_space_set_io(sp, &io);
    unsigned char blk[BS];
    memset(blk, 'd', sizeof(blk));
    /* Anonymous files over several segments, with the descriptor cache churning. */
    bf_file *f[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(bf_file_create(sp, NULL, &f[i]), BF_OK);
    for (uint64_t b = 0; b < 12; b++)
        for (int i = 0; i < 3; i++)
            assert_int_equal(bf_file_write_block(f[i], b, blk), BF_OK);
    unsigned char got[BS];
    for (int i = 0; i < 3; i++)
        assert_int_equal(bf_file_read_block(f[i], 1, got), BF_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(bf_file_close(f[i]), BF_OK);
    /* Named files: create, export, open, append, reopen read-write. */
    char set[4096];
    snprintf(set, sizeof(set), "%s/set", parent);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    bf_file *a, *b, *c;
    assert_int_equal(bf_file_create_named(sp, set, "a", NULL, &a), BF_OK);
    assert_int_equal(bf_file_write_block(a, 5, blk), BF_OK);
    assert_int_equal(bf_file_export(a), BF_OK);
    assert_int_equal(bf_file_create_named(sp, set, "b", NULL, &b), BF_OK);
    uint64_t start;
    assert_int_equal(bf_file_append(b, a, &start), BF_OK);
    assert_int_equal(bf_file_close(b), BF_OK);
    assert_int_equal(bf_file_open_named(sp, set, "b", BF_OPEN_READWRITE, &c), BF_OK);
    assert_int_equal(bf_file_read_block(c, start / BS + 5, got), BF_OK);
    assert_int_equal(bf_file_write_block(c, 40, blk), BF_OK);
    assert_int_equal(bf_file_close(c), BF_OK);
    assert_int_equal(bf_file_close(a), BF_OK);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    printf("%d opens through the seam, %d creating; all O_NOFOLLOW|O_CLOEXEC, creates "
           "O_EXCL 0600\n",
           seen.n, seen.creates);
    assert_true(seen.creates >= 3 * 3 + 3);
    if (seen.bad)
        fail_msg("%d opens without the flags, first: %s", seen.bad, seen.first_bad);
}

/* ---- unguessable names ----------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void test_space_names_unguessable(void **state)
{
    (void)state;
    enum { N = 400, LEN = 6 };
    static char sfx[N][LEN + 1];
    char prefix[600];
    snprintf(prefix, sizeof(prefix), "%s/buffile-%ld-", parent, (long)getpid());
    int seen_char[256] = {0}, distinct_chars = 0;
    for (int i = 0; i < N; i++) {
        bf_space *sp = small_space();
        const char *d = bf_space_dir(sp);
        assert_int_equal(strncmp(d, prefix, strlen(prefix)), 0);
        const char *s = d + strlen(prefix);
        assert_int_equal(strlen(s), LEN);
        for (int k = 0; k < LEN; k++) {
            unsigned char ch = (unsigned char)s[k];
            assert_true((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                        (ch >= '0' && ch <= '9'));
            distinct_chars += !seen_char[ch]++;
        }
        memcpy(sfx[i], s, LEN + 1);
        /* Destroyed at once: a name that was just freed must not come back. */
        bf_space_destroy(sp);
    }
    /* Successive names share few positions (a counter would share most). */
    int same = 0;
    for (int i = 1; i < N; i++)
        for (int k = 0; k < LEN; k++)
            same += sfx[i][k] == sfx[i - 1][k];
    qsort(sfx, N, sizeof(sfx[0]), cmp_str);
    for (int i = 1; i < N; i++)
        if (strcmp(sfx[i], sfx[i - 1]) == 0)
            fail_msg("space name suffix %s repeated", sfx[i]);
    printf("%d space names: all distinct, %d of 62 characters used, %d of %d positions equal "
           "to the previous name\n",
           N, distinct_chars, same, (N - 1) * LEN);
    assert_true(distinct_chars >= 55);
    /* 62 equally likely characters: about 1/62 of positions repeat; allow 4x that. */
    assert_true(same < (N - 1) * LEN * 4 / 62);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symlink_at_segment),
        cmocka_unit_test(test_foreign_file_at_segment),
        cmocka_unit_test(test_fileset_plants),
        cmocka_unit_test(test_index_only_in_own_segments),
        cmocka_unit_test(test_every_open_is_nofollow_exclusive),
        cmocka_unit_test(test_space_names_unguessable),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
