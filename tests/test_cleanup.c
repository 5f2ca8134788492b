/*
 * test_cleanup.c - nothing is left behind, and nothing else is touched.
 *
 * Segment files disappear on close, the space directory on destroy (also
 * with files still open, whose memory must be freed too); the directory is
 * private (0700) and segment files 0600 whatever the umask. bf_sweep
 * removes the directory of a process killed with SIGKILL, keeps the
 * directories of live processes and never follows a planted symlink.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "buffile.h"
#include "support.h"

#define BS 4096u
#define SMALL_SEG 16384u

T_PARENT_FIXTURE("cleanup")

static bf_space *small_seg_space(const bf_allocator *alloc)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.codec = BF_CODEC_NONE;
    o.segment_size = SMALL_SEG;
    o.allocator = alloc;
    return t_space_opts(&o);
}

/* A file of `nblocks` incompressible blocks: with codec none, bare, 4 to a small segment. */
static bf_file *written(bf_space *sp, uint64_t nblocks, uint64_t seed)
{
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    unsigned char blk[BS];
    t_rng rng = {seed};
    for (uint64_t b = 0; b < nblocks; b++) {
        t_fill(&rng, T_DATA_RANDOM, blk, BS);
        assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);
    }
    return f;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void test_close_removes_segments(void **state)
{
    (void)state;
    bf_space *sp = small_seg_space(NULL);
    const char *dir = bf_space_dir(sp);
    assert_int_equal(t_dir_entries(dir), 0);
    bf_file *a = written(sp, 9, 1), *b = written(sp, 2, 2), *never = NULL;
    assert_int_equal(bf_file_create(sp, NULL, &never), BF_OK);
    /* 9 bare blocks of 4096 bytes, 4 to a 16 KiB segment: 3 segments; 1 for b; none for never. */
    assert_int_equal(t_dir_entries(dir), 4);
    assert_int_equal(bf_file_close(a), BF_OK);
    assert_int_equal(t_dir_entries(dir), 1);
    assert_int_equal(bf_file_close(never), BF_OK);
    assert_int_equal(t_dir_entries(dir), 1);
    /* Truncating to zero gives the segments back before close. */
    assert_int_equal(bf_file_truncate(b, 0), BF_OK);
    assert_int_equal(t_dir_entries(dir), 0);
    assert_int_equal(bf_file_close(b), BF_OK);
    assert_int_equal(t_dir_entries(dir), 0);
    assert_true(exists(dir));
    bf_space_destroy(sp);
}

static void test_destroy_with_open_files(void **state)
{
    (void)state;
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = small_seg_space(&cnt.hooks);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(sp));
    bf_file *f[4];
    for (int i = 0; i < 3; i++)
        f[i] = written(sp, 4 + 3 * (uint64_t)i, 10 + (uint64_t)i);
    assert_int_equal(bf_file_create(sp, NULL, &f[3]), BF_OK);
    /* A dirty buffer that was never flushed, and a zstd file with its codec context. */
    assert_int_equal(bf_file_seek(f[0], 100, BF_SEEK_SET), BF_OK);
    assert_int_equal(bf_file_write(f[0], "dirty", 5), BF_OK);
    bf_file_options fo;
    bf_file_options_init(&fo);
    fo.codec = BF_CODEC_ZSTD;
    bf_file *z;
    assert_int_equal(bf_file_create(sp, &fo, &z), BF_OK);
    unsigned char blk[BS];
    t_rng rng = {5};
    t_fill(&rng, T_DATA_TEXT, blk, BS);
    assert_int_equal(bf_file_write_block(z, 0, blk), BF_OK);
    assert_true(t_dir_entries(dir) > 0);
    assert_true(cnt.live_bytes > 0);
    bf_space_destroy(sp);
    assert_false(exists(dir));
    /* Every byte the space and its open files allocated came back. */
    assert_int_equal(cnt.live_bytes, 0);
}

static void test_destroy_empty_space(void **state)
{
    (void)state;
    bf_space *sp = small_seg_space(NULL);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(sp));
    assert_true(exists(dir));
    bf_space_destroy(sp);
    assert_false(exists(dir));
    bf_space_destroy(NULL);
    assert_int_equal(bf_file_close(NULL), BF_OK);
}

static void test_modes(void **state)
{
    (void)state;
    /* With no umask to hide behind, the modes are exactly what the library asks for. */
    mode_t old = umask(0);
    bf_space *sp = small_seg_space(NULL);
    bf_file *f = written(sp, 9, 3); /* 3 segments */
    umask(old);
    struct stat st;
    assert_int_equal(lstat(bf_space_dir(sp), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(st.st_uid, geteuid());
    /* The directory name is the one bf_sweep parses: buffile-<pid>-<random>. */
    char prefix[600];
    snprintf(prefix, sizeof(prefix), "%s/buffile-%ld-", parent, (long)getpid());
    assert_int_equal(strncmp(bf_space_dir(sp), prefix, strlen(prefix)), 0);
    int segs = 0;
    DIR *d = opendir(bf_space_dir(sp));
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", bf_space_dir(sp), de->d_name);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0600);
        segs++;
    }
    closedir(d);
    assert_int_equal(segs, 3);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(sp);
}

/* ---- sweep ------------------------------------------------------------ */

/*
 * A child that makes a space, writes a file, reports the space directory
 * through the pipe and waits to be killed: a crash that cleans nothing.
 */
static pid_t crashing_child(char *dir, size_t len)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Never outlive a parent that failed before killing us. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(60);
        close(fds[0]);
        bf_space_options o;
        bf_space_options_init(&o);
        o.temp_dir = parent;
        bf_space *sp;
        bf_file *f;
        unsigned char blk[BS] = {1};
        if (bf_space_create(&o, &sp, NULL, 0) != BF_OK || bf_file_create(sp, NULL, &f) != BF_OK ||
            bf_file_write_block(f, 0, blk) != BF_OK)
            _exit(1);
        const char *d = bf_space_dir(sp);
        if (write(fds[1], d, strlen(d) + 1) != (ssize_t)strlen(d) + 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    /* The child keeps the pipe open, so stop at the terminating NUL, not at EOF. */
    while ((got == 0 || dir[got - 1] != '\0') && got < len &&
           (n = read(fds[0], dir + got, len - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    if (got == 0 || dir[got - 1] != '\0') {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("child did not report its space directory");
    }
    return pid;
}

static void test_sweep(void **state)
{
    (void)state;
    char child_dir[4096];
    pid_t child = crashing_child(child_dir, sizeof(child_dir));
    assert_int_equal(kill(child, SIGKILL), 0);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* The crash left the directory and its segment file behind. */
    assert_true(exists(child_dir));
    assert_int_equal(t_dir_entries(child_dir), 1);

    /* Our own live space must survive the sweep. */
    bf_space *mine = small_seg_space(NULL);
    bf_file *f = written(mine, 2, 7);

    /* A victim outside, reachable through planted links. */
    char victim_dir[4096], victim[4200], link[4096];
    snprintf(victim_dir, sizeof(victim_dir), "%s/victim", parent);
    assert_int_equal(mkdir(victim_dir, 0700), 0);
    snprintf(victim, sizeof(victim), "%s/precious", victim_dir);
    int fd = open(victim, O_CREAT | O_WRONLY | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    /* Symlinks named like space directories, of a live pid (1) and of the dead child. */
    snprintf(link, sizeof(link), "%s/buffile-1-xxxx", parent);
    assert_int_equal(symlink(victim_dir, link), 0);
    snprintf(link, sizeof(link), "%s/buffile-%ld-link", parent, (long)child);
    assert_int_equal(symlink(victim_dir, link), 0);
    /* A dead process's real directory holding a symlink to the victim file. */
    char trap[4096], trap_link[4200];
    snprintf(trap, sizeof(trap), "%s/buffile-%ld-trap", parent, (long)child);
    assert_int_equal(mkdir(trap, 0700), 0);
    snprintf(trap_link, sizeof(trap_link), "%s/lure", trap);
    assert_int_equal(symlink(victim, trap_link), 0);

    assert_int_equal(bf_sweep(parent), 1);
    assert_false(exists(child_dir));
    assert_true(exists(bf_space_dir(mine)));
    assert_int_equal(t_dir_entries(bf_space_dir(mine)), 1);
    assert_true(exists(victim));
    snprintf(link, sizeof(link), "%s/buffile-1-xxxx", parent);
    assert_true(exists(link));
    /* The trap directory cannot be emptied without touching the link: it stays. */
    assert_true(exists(trap_link));
    /* A second sweep finds nothing more to do. */
    assert_int_equal(bf_sweep(parent), 0);

    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(mine);
    unlink(trap_link);
    rmdir(trap);
}

static void test_sweep_missing_parent(void **state)
{
    (void)state;
    char missing[600];
    snprintf(missing, sizeof(missing), "%s/does-not-exist", parent);
    assert_int_equal(bf_sweep(missing), BF_ENOENT);
}

/* What bf_sweep_list reports of each directory: the caller keeps its own copy. */
typedef struct listed {
    int n;
    char path[4][4096];
    bf_leftover l[4];
    int stop_after;
} listed;

static int collect(void *ctx, const bf_leftover *d)
{
    listed *c = ctx;
    assert_true(d->struct_size >= sizeof(bf_leftover));
    if (c->n < 4) {
        snprintf(c->path[c->n], sizeof(c->path[0]), "%s", d->path);
        c->l[c->n] = *d;
    }
    c->n++;
    return c->stop_after != 0 && c->n >= c->stop_after;
}

/*
 * bf_sweep_list reports every space directory with its owner's pid,
 * whether that process runs, its files' bytes and count and its age;
 * links named like one are not reported; the callback can stop it; a
 * missing parent is BF_ENOENT. bf_sweep then removes the dead one only.
 */
static void test_sweep_list(void **state)
{
    (void)state;
    char child_dir[4096];
    pid_t child = crashing_child(child_dir, sizeof(child_dir));
    assert_int_equal(kill(child, SIGKILL), 0);
    waitpid(child, NULL, 0);
    bf_space *mine = small_seg_space(NULL);
    bf_file *f = written(mine, 2, 7);
    char link[4096];
    snprintf(link, sizeof(link), "%s/buffile-%ld-link", parent, (long)child);
    assert_int_equal(symlink(child_dir, link), 0);

    listed c = {0};
    assert_int_equal(bf_sweep_list(parent, collect, &c), 2);
    assert_int_equal(c.n, 2);
    int dead = strcmp(c.path[0], child_dir) == 0 ? 0 : 1, live = 1 - dead;
    assert_string_equal(c.path[dead], child_dir);
    assert_int_equal(c.l[dead].pid, child);
    assert_int_equal(c.l[dead].alive, 0);
    assert_int_equal(c.l[dead].files, 1);
    assert_true(c.l[dead].bytes > 0);
    assert_true(c.l[dead].age_seconds >= 0 && c.l[dead].age_seconds < 600);
    assert_string_equal(c.path[live], bf_space_dir(mine));
    assert_int_equal(c.l[live].pid, getpid());
    assert_int_equal(c.l[live].alive, 1);
    bf_stats st;
    bf_space_stats(mine, &st);
    assert_int_equal(c.l[live].bytes, st.physical_bytes);

    listed one = {.stop_after = 1};
    assert_int_equal(bf_sweep_list(parent, collect, &one), 1);
    char missing[600];
    snprintf(missing, sizeof(missing), "%s/does-not-exist", parent);
    assert_int_equal(bf_sweep_list(missing, collect, &c), BF_ENOENT);

    assert_int_equal(bf_sweep(parent), 1);
    listed after = {0};
    assert_int_equal(bf_sweep_list(parent, collect, &after), 1);
    assert_string_equal(after.path[0], bf_space_dir(mine));
    unlink(link);
    assert_int_equal(bf_file_close(f), BF_OK);
    bf_space_destroy(mine);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_close_removes_segments),
        cmocka_unit_test(test_destroy_with_open_files),
        cmocka_unit_test(test_destroy_empty_space),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_sweep_missing_parent),
        cmocka_unit_test(test_sweep_list),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
