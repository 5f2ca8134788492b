/*
 * slowfs_diff.c - slowfs against the kernel's own file system, call by call.
 *
 *   slowfs_diff MOUNT BACKING REFERENCE SEED STEPS
 *
 * Runs STEPS random calls of the kinds PostgreSQL's and libbuffile's temp
 * files make (open with O_CREAT/O_EXCL/O_TRUNC/O_APPEND/O_NOFOLLOW, pread
 * and pwrite at any offset and size, write at the file position, ftruncate,
 * fsync, fstat, close, unlink of open files, rename over files and across
 * directories, mkdir, rmdir, readdir, stat, chmod) in a fresh directory of
 * MOUNT and the same calls in a fresh directory of REFERENCE, a plain
 * directory, and requires every result, errno and byte read to be the same.
 * Then threads write and read files of their own and one file they share,
 * concurrently, against in-memory copies. At the end the trees under MOUNT,
 * under BACKING (what slowfs stored) and under REFERENCE must be identical,
 * and the device's stats (MOUNT/.slowfs-stats) must have counted exactly
 * the bytes this program moved through the mount: with direct_io nothing
 * is served from a cache. Exit 0 when all holds; else one line saying the
 * seed, the step and what differed, and exit 1.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"

enum { MNT = 0, REF = 1, NSLOTS = 8, MAX_IO = 256 * 1024, MAX_OFF = 2 * 1024 * 1024 };

static const char *root[2];           /* this run's directories under MOUNT and REFERENCE */
static const char *mount_root;        /* MOUNT itself, for the stats file */
static unsigned long long seed, step; /* for the message of a failure */
static atomic_uint_fast64_t
    moved[2]; /* bytes read and written through the mount: SF_READ, SF_WRITE */
enum { READ = 0, WRITE = 1 };

static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "slowfs_diff: seed %llu step %llu: ", seed, step);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* The outcome of one call: its return value and, when it failed, errno. */
typedef struct res {
    long r;
    int e;
} res;

static res outcome(long r)
{
    return (res){r, r < 0 ? errno : 0};
}

static unsigned long long calls_ok, calls_failed; /* compared calls, by outcome */

static void same(const char *what, res a, res b)
{
    ++*(a.r < 0 ? &calls_failed : &calls_ok);
    if ((a.r < 0) != (b.r < 0) || (a.r < 0 ? a.e != b.e : a.r != b.r))
        die("%s: mount gave %ld (%s), reference %ld (%s)", what, a.r,
            a.r < 0 ? strerror(a.e) : "ok", b.r, b.r < 0 ? strerror(b.e) : "ok");
}

/* dir/name into buf, which must hold it. */
static void join(char *buf, size_t len, const char *dir, const char *name)
{
    if (snprintf(buf, len, "%s/%s", dir, name) >= (int)len)
        die("path too long: %s/%s", dir, name);
}

/* The path of `rel` on side s (two buffers per side, for rename). */
static const char *at(int s, const char *rel, int which)
{
    static char buf[2][2][4096];
    join(buf[s][which], sizeof buf[s][which], root[s], rel);
    return buf[s][which];
}

/* The names the random calls pick from: files and directories, nested one and two deep. */
static const char *const dirs[] = {"d0", "d1", "d0/e"};
static const char *const files[] = {"f0",    "f1",      "f2",      "d0/f0", "d0/f1",
                                    "d1/f0", "d0/e/f0", "d0/e/f1", "d1/f1", "f3"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A file name mostly; a directory one time in five, so that the tree is mostly there. */
static const char *any_name(t_rng *r)
{
    return t_below(r, 5) ? files[t_below(r, COUNT(files))] : dirs[t_below(r, COUNT(dirs))];
}

typedef struct slot {
    int fd[2];
    char name[32];
} slot;

static slot slots[NSLOTS];

static const int open_flags[] = {
    O_RDWR | O_CREAT,           O_RDWR | O_CREAT | O_EXCL,
    O_RDWR | O_CREAT | O_TRUNC, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
    O_RDONLY | O_NOFOLLOW,      O_RDWR,
    O_WRONLY | O_TRUNC,         O_RDWR | O_APPEND,
    O_RDONLY | O_DIRECTORY,
};

static uint64_t any_len(t_rng *r)
{
    /* Log-uniform up to MAX_IO: small and large requests, both across FUSE's request size. */
    return t_below(r, (uint64_t)1 << t_below(r, 19)) % MAX_IO + 1;
}

static uint64_t any_off(t_rng *r)
{
    return t_below(r, 4) == 0 ? t_below(r, MAX_OFF) : t_below(r, 64 * 1024);
}

static void do_open(t_rng *r)
{
    slot *s = &slots[t_below(r, NSLOTS)];
    const char *name = any_name(r);
    int flags = open_flags[t_below(r, COUNT(open_flags))] | O_CLOEXEC;
    mode_t mode = t_below(r, 2) ? 0600 : 0644;
    for (int side = 0; side < 2; side++)
        if (s->fd[side] >= 0)
            close(s->fd[side]);
    res a = outcome(open(at(MNT, name, 0), flags, mode));
    res b = outcome(open(at(REF, name, 0), flags, mode));
    same("open", (res){a.r < 0 ? -1 : 0, a.e}, (res){b.r < 0 ? -1 : 0, b.e});
    s->fd[MNT] = (int)a.r;
    s->fd[REF] = (int)b.r;
    snprintf(s->name, sizeof s->name, "%s", name);
}

/* An open slot, from a random start; NULL when none is open. */
static slot *open_slot(t_rng *r)
{
    uint64_t first = t_below(r, NSLOTS);
    for (uint64_t i = 0; i < NSLOTS; i++) {
        slot *s = &slots[(first + i) % NSLOTS];
        if (s->fd[MNT] >= 0)
            return s;
    }
    return NULL;
}

static void do_pwrite(t_rng *r, unsigned char *buf)
{
    slot *s = open_slot(r);
    if (s == NULL)
        return;
    uint64_t len = any_len(r), off = any_off(r);
    t_fill(r, t_below(r, 2) ? T_DATA_TEXT : T_DATA_RANDOM, buf, len);
    res a, b;
    if (t_below(r, 4) == 0) { /* at the file position, which both sides keep */
        a = outcome(write(s->fd[MNT], buf, len));
        b = outcome(write(s->fd[REF], buf, len));
    } else {
        a = outcome(pwrite(s->fd[MNT], buf, len, (off_t)off));
        b = outcome(pwrite(s->fd[REF], buf, len, (off_t)off));
    }
    same("write", a, b);
    if (a.r > 0)
        moved[WRITE] += (uint64_t)a.r;
}

static void do_pread(t_rng *r, unsigned char *bufa, unsigned char *bufb)
{
    slot *s = open_slot(r);
    if (s == NULL)
        return;
    uint64_t len = any_len(r), off = any_off(r);
    res a, b;
    if (t_below(r, 4) == 0) {
        a = outcome(read(s->fd[MNT], bufa, len));
        b = outcome(read(s->fd[REF], bufb, len));
    } else {
        a = outcome(pread(s->fd[MNT], bufa, len, (off_t)off));
        b = outcome(pread(s->fd[REF], bufb, len, (off_t)off));
    }
    same("read", a, b);
    if (a.r > 0) {
        moved[READ] += (uint64_t)a.r;
        if (memcmp(bufa, bufb, (size_t)a.r) != 0)
            die("read of %s: %ld bytes at %" PRIu64 " differ", s->name, a.r, off);
    }
}

static void do_fd_call(t_rng *r)
{
    slot *s = open_slot(r);
    if (s == NULL)
        return;
    switch (t_below(r, 6)) {
    case 0: {
        off_t len = (off_t)any_off(r);
        same("ftruncate", outcome(ftruncate(s->fd[MNT], len)), outcome(ftruncate(s->fd[REF], len)));
        break;
    }
    case 1: same("fsync", outcome(fsync(s->fd[MNT])), outcome(fsync(s->fd[REF]))); break;
    case 2:
        same("fdatasync", outcome(fdatasync(s->fd[MNT])), outcome(fdatasync(s->fd[REF])));
        break;
    case 3: {
        /* A directory's end is the file system's own business (ext4 answers with its htree's). */
        struct stat st;
        if (fstat(s->fd[REF], &st) != 0 || S_ISDIR(st.st_mode))
            break;
        int whence = t_below(r, 2) ? SEEK_END : SEEK_SET;
        off_t off = whence == SEEK_SET ? (off_t)any_off(r) : 0;
        same("lseek", outcome(lseek(s->fd[MNT], off, whence)),
             outcome(lseek(s->fd[REF], off, whence)));
        break;
    }
    case 4: {
        struct stat sa, sb;
        res a = outcome(fstat(s->fd[MNT], &sa)), b = outcome(fstat(s->fd[REF], &sb));
        /* fstat(2) asks for attributes by node, and libfuse's high-level API has no path left
           for a removed one: ESTALE once the file or directory is gone (README.md, limits). */
        if (a.r < 0 && a.e == ESTALE && b.r == 0 && sb.st_nlink == 0)
            break;
        same("fstat", a, b);
        if (a.r == 0 &&
            (sa.st_size != sb.st_size || sa.st_mode != sb.st_mode || sa.st_nlink != sb.st_nlink))
            die("fstat of %s: mount size %lld mode %o links %lu, reference %lld %o %lu", s->name,
                (long long)sa.st_size, sa.st_mode, (unsigned long)sa.st_nlink,
                (long long)sb.st_size, sb.st_mode, (unsigned long)sb.st_nlink);
        break;
    }
    default:
        close(s->fd[MNT]);
        close(s->fd[REF]);
        s->fd[MNT] = s->fd[REF] = -1;
    }
}

/* A directory's names, sorted. */
enum { MAX_NAMES = 256 };
typedef struct names {
    int n;
    char name[MAX_NAMES][256];
} names;

/* List path into *l; -1 with errno when it cannot be read. */
static long list_dir(const char *path, names *l)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    l->n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (l->n == MAX_NAMES)
            die("readdir of %s: more than %d entries", path, MAX_NAMES);
        snprintf(l->name[l->n++], sizeof l->name[0], "%s", de->d_name);
    }
    closedir(d);
    qsort(l->name, (size_t)l->n, sizeof l->name[0], (int (*)(const void *, const void *))strcmp);
    return l->n;
}

static names *new_names(void)
{
    names *l = malloc(sizeof *l);
    if (l == NULL)
        die("out of memory");
    l->n = 0;
    return l;
}

/* Both listings, which must agree (a difference names the first name that differs). */
static void same_listing(const char *what, const char *pa, const char *pb)
{
    names *la = new_names(), *lb = new_names();
    same(what, outcome(list_dir(pa, la)), outcome(list_dir(pb, lb)));
    for (int i = 0; i < la->n || i < lb->n; i++)
        if (i == la->n || i == lb->n || strcmp(la->name[i], lb->name[i]) != 0)
            die("%s: %s lists '%s' where %s lists '%s'", what, pa, i < la->n ? la->name[i] : "", pb,
                i < lb->n ? lb->name[i] : "");
    free(la);
    free(lb);
}

static void do_path_call(t_rng *r)
{
    const char *name = any_name(r);
    switch (t_below(r, 8)) {
    case 0:
        same("unlink", outcome(unlink(at(MNT, name, 0))), outcome(unlink(at(REF, name, 0))));
        break;
    case 1:
    case 2: {
        const char *to = any_name(r);
        same("rename", outcome(rename(at(MNT, name, 0), at(MNT, to, 1))),
             outcome(rename(at(REF, name, 0), at(REF, to, 1))));
        break;
    }
    case 3: {
        /* Mostly the directories the other calls expect, so that a removed one comes back. */
        name = t_below(r, 4) ? dirs[t_below(r, COUNT(dirs))] : name;
        mode_t mode = t_below(r, 2) ? 0700 : 0755;
        same("mkdir", outcome(mkdir(at(MNT, name, 0), mode)),
             outcome(mkdir(at(REF, name, 0), mode)));
        break;
    }
    case 4:
        same("rmdir", outcome(rmdir(at(MNT, name, 0))), outcome(rmdir(at(REF, name, 0))));
        break;
    case 5: {
        static const mode_t modes[] = {0600, 0644, 0700, 0400, 0755};
        mode_t mode = modes[t_below(r, COUNT(modes))];
        same("chmod", outcome(chmod(at(MNT, name, 0), mode)),
             outcome(chmod(at(REF, name, 0), mode)));
        break;
    }
    case 6: {
        struct stat sa, sb;
        res a = outcome(lstat(at(MNT, name, 0), &sa)), b = outcome(lstat(at(REF, name, 0), &sb));
        same("stat", a, b);
        if (a.r == 0 &&
            (sa.st_mode != sb.st_mode ||
             (S_ISREG(sa.st_mode) && (sa.st_size != sb.st_size || sa.st_nlink != sb.st_nlink))))
            die("stat of %s: mount mode %o size %lld, reference %o %lld", name, sa.st_mode,
                (long long)sa.st_size, sb.st_mode, (long long)sb.st_size);
        break;
    }
    default: {
        const char *dir = t_below(r, 3) ? dirs[t_below(r, COUNT(dirs))] : ".";
        same_listing("readdir", at(MNT, dir, 0), at(REF, dir, 0));
    }
    }
}

/* Compare the trees under a and b (relative path rel), reading each file whole. */
static void compare_trees(const char *a, const char *b, const char *rel, int through_mount)
{
    char pa[4096], pb[4096];
    join(pa, sizeof pa, a, rel);
    join(pb, sizeof pb, b, rel);
    struct stat sa, sb;
    if (lstat(pa, &sa) != 0 || lstat(pb, &sb) != 0)
        die("final tree: cannot stat %s or %s", pa, pb);
    if (sa.st_mode != sb.st_mode || (S_ISREG(sa.st_mode) && sa.st_size != sb.st_size))
        die("final tree: %s is mode %o size %lld, %s mode %o size %lld", pa, sa.st_mode,
            (long long)sa.st_size, pb, sb.st_mode, (long long)sb.st_size);
    if (S_ISREG(sa.st_mode)) {
        size_t na, nb;
        unsigned char *da = t_read_file(pa, &na), *db = t_read_file(pb, &nb);
        if (da == NULL || db == NULL || na != nb || memcmp(da, db, na) != 0)
            die("final tree: %s and %s differ", pa, pb);
        if (through_mount)
            moved[READ] += na;
        free(da);
        free(db);
        return;
    }
    same_listing("final tree", pa, pb);
    names *l = new_names();
    list_dir(pa, l);
    for (int i = 0; i < l->n; i++) {
        if (strcmp(l->name[i], ".") == 0 || strcmp(l->name[i], "..") == 0)
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", l->name[i]);
        compare_trees(a, b, sub, through_mount);
    }
    free(l);
}

/* Each thread: a file of its own, random blocks written and read back, and its stripes of a shared
 * one. */
enum { THREADS = 4, BLOCKS = 48, BLOCK = 24 * 1024, THREAD_OPS = 300 };

typedef struct worker {
    int id;
    int shared_fd;
    unsigned char *image; /* the thread's own file, BLOCKS x BLOCK */
    char err[256];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    t_rng r = {seed * 31 + (uint64_t)w->id};
    char name[16], path[4096];
    snprintf(name, sizeof name, "t%d", w->id);
    join(path, sizeof path, root[MNT], name);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    unsigned char *buf = malloc(BLOCK);
    if (fd < 0 || buf == NULL) {
        snprintf(w->err, sizeof w->err, "thread %d: open %s: %s", w->id, name, strerror(errno));
        return NULL;
    }
    memset(w->image, 0, (size_t)BLOCKS * BLOCK);
    uint64_t written = 0;
    for (int i = 0; i < THREAD_OPS && !w->err[0]; i++) {
        uint64_t k = t_below(&r, BLOCKS), len = 1 + t_below(&r, BLOCK);
        unsigned char *img = w->image + k * BLOCK;
        if (t_below(&r, 2)) {
            t_fill(&r, T_DATA_RANDOM, img, len);
            if (pwrite(fd, img, len, (off_t)(k * BLOCK)) != (ssize_t)len)
                snprintf(w->err, sizeof w->err, "thread %d: pwrite: %s", w->id, strerror(errno));
            written = written > (k * BLOCK + len) ? written : k * BLOCK + len;
            moved[WRITE] += len;
        } else {
            ssize_t n = pread(fd, buf, len, (off_t)(k * BLOCK));
            uint64_t want = written > k * BLOCK ? written - k * BLOCK : 0;
            want = want < len ? want : len;
            if (n != (ssize_t)want || memcmp(buf, img, want) != 0)
                snprintf(w->err, sizeof w->err,
                         "thread %d: pread of block %" PRIu64 " gave %zd of %" PRIu64
                         " bytes or other bytes",
                         w->id, k, n, want);
            if (n > 0)
                moved[READ] += (uint64_t)n;
        }
    }
    /* The shared file: this thread's stripes are every THREADS-th block, filled with its id. */
    memset(buf, 'A' + w->id, BLOCK);
    for (int k = w->id; k < BLOCKS && !w->err[0]; k += THREADS) {
        if (pwrite(w->shared_fd, buf, BLOCK, (off_t)k * BLOCK) != BLOCK)
            snprintf(w->err, sizeof w->err, "thread %d: shared pwrite: %s", w->id, strerror(errno));
        moved[WRITE] += BLOCK;
    }
    free(buf);
    close(fd);
    return NULL;
}

static void run_threads(void)
{
    char path[4096];
    join(path, sizeof path, root[MNT], "shared");
    int sfd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (sfd < 0)
        die("threads: open %s: %s", path, strerror(errno));
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.id = i, .shared_fd = sfd, .image = malloc((size_t)BLOCKS * BLOCK)};
        if (w[i].image == NULL || pthread_create(&t[i], NULL, work, &w[i]) != 0)
            die("threads: cannot start thread %d", i);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        if (w[i].err[0])
            die("%s", w[i].err);
    /* The shared file holds every stripe; each thread's file reads back as its copy. */
    unsigned char *all = malloc((size_t)BLOCKS * BLOCK);
    if (all == NULL || pread(sfd, all, (size_t)BLOCKS * BLOCK, 0) != BLOCKS * BLOCK)
        die("threads: cannot read the shared file back: %s", strerror(errno));
    moved[READ] += (uint64_t)BLOCKS * BLOCK;
    for (int k = 0; k < BLOCKS; k++)
        for (int i = 0; i < BLOCK; i++)
            if (all[(size_t)k * BLOCK + i] != 'A' + k % THREADS)
                die("threads: shared file block %d byte %d is '%c'", k, i,
                    all[(size_t)k * BLOCK + i]);
    close(sfd);
    free(all);
    /* The threads' files are the mount's alone; the reference gets copies for the final comparison.
     */
    for (int i = 0; i < THREADS; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        size_t n;
        unsigned char *d = t_read_file(at(MNT, name, 0), &n);
        if (d == NULL)
            die("threads: cannot read %s back", name);
        moved[READ] += n;
        if (t_write_file(at(REF, name, 0), d, n) != 0)
            die("threads: cannot copy %s to the reference", name);
        free(d);
        free(w[i].image);
    }
    size_t n;
    unsigned char *d = t_read_file(path, &n);
    if (d == NULL || t_write_file(at(REF, "shared", 0), d, n) != 0)
        die("threads: cannot copy the shared file to the reference");
    moved[READ] += n;
    free(d);
}

/* The stats file's value of `name`. */
static uint64_t stat_value(const char *name)
{
    char path[4096];
    join(path, sizeof path, mount_root, ".slowfs-stats");
    size_t n;
    char *text = (char *)t_read_file(path, &n);
    if (text == NULL)
        die("cannot read %s: %s", path, strerror(errno));
    char key[64];
    snprintf(key, sizeof key, "\n%s ", name);
    char *p = strstr(text, key);
    if (p == NULL)
        die("%s has no %s", path, name);
    uint64_t v = strtoull(p + strlen(key), NULL, 10);
    free(text);
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: slowfs_diff MOUNT BACKING REFERENCE SEED STEPS\n");
        return 2;
    }
    mount_root = argv[1];
    seed = strtoull(argv[4], NULL, 10);
    unsigned long long steps = strtoull(argv[5], NULL, 10);
    static char dir[3][4096];
    for (int i = 0; i < 3; i++)
        if (snprintf(dir[i], sizeof dir[i], "%s/diff-%llu", argv[i + 1], seed) >=
            (int)sizeof dir[i])
            die("path too long: %s", argv[i + 1]);
    root[MNT] = dir[0];
    root[REF] = dir[2];
    t_rm_rf(dir[0]);
    t_rm_rf(dir[2]);
    if (mkdir(dir[0], 0755) != 0 || mkdir(dir[2], 0755) != 0)
        die("cannot make %s and %s: %s", dir[0], dir[2], strerror(errno));
    uint64_t read0 = stat_value("read_bytes"), written0 = stat_value("write_bytes");

    for (int i = 0; i < NSLOTS; i++)
        slots[i].fd[MNT] = slots[i].fd[REF] = -1;
    unsigned char *bufa = malloc(MAX_IO), *bufb = malloc(MAX_IO);
    if (bufa == NULL || bufb == NULL)
        die("out of memory");
    t_rng r = {seed};
    for (size_t i = 0; i < COUNT(dirs); i++)
        same("mkdir", outcome(mkdir(at(MNT, dirs[i], 0), 0755)),
             outcome(mkdir(at(REF, dirs[i], 0), 0755)));
    for (step = 0; step < steps; step++) {
        switch (t_below(&r, 10)) {
        case 0:
        case 1: do_open(&r); break;
        case 2:
        case 3: do_pwrite(&r, bufa); break;
        case 4:
        case 5: do_pread(&r, bufa, bufb); break;
        case 6:
        case 7: do_fd_call(&r); break;
        default: do_path_call(&r);
        }
    }
    for (int i = 0; i < NSLOTS; i++)
        if (slots[i].fd[MNT] >= 0) {
            close(slots[i].fd[MNT]);
            close(slots[i].fd[REF]);
        }
    run_threads();

    /* MAP_SHARED cannot be had on a direct_io file; slowfs's README says so. */
    int fd = open(at(MNT, "t0", 0), O_RDWR | O_CLOEXEC);
    if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) != MAP_FAILED ||
        errno != ENODEV)
        die("a shared mmap of a slowfs file did not fail with ENODEV");
    close(fd);

    compare_trees(dir[0], dir[2], "", 1);
    compare_trees(dir[1], dir[2], "", 0);
    names *l = new_names();
    if (list_dir(mount_root, l) < 0)
        die("cannot list %s: %s", mount_root, strerror(errno));
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->name[i], ".slowfs-stats") == 0)
            die("readdir of %s lists the stats file", mount_root);
    free(l);

    uint64_t read = stat_value("read_bytes") - read0,
             written = stat_value("write_bytes") - written0;
    if (read != moved[READ] || written != moved[WRITE])
        die("the device counted %" PRIu64 " bytes read and %" PRIu64 " written; this program "
            "moved %" PRIu64 " and %" PRIu64,
            read, written, (uint64_t)moved[READ], (uint64_t)moved[WRITE]);
    printf("slowfs_diff: seed %llu, %llu steps and %d threads: mount and reference agree on "
           "%llu calls that succeeded and %llu that failed alike; %" PRIu64
           " bytes read and %" PRIu64 " written, all counted by the device\n",
           seed, steps, THREADS, calls_ok, calls_failed, read, written);
    t_rm_rf(dir[0]);
    t_rm_rf(dir[2]);
    free(bufa);
    free(bufb);
    return 0;
}
