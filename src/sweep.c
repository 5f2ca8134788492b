/*
 * sweep.c - the temp-directory rules: where a space's directory goes and
 * its name, its removal when the space is destroyed, and the removal of
 * those crashed processes left behind.
 * Implements: bf_sweep, bf_sweep_list (buffile.h); bf_default_temp_parent,
 * bf_space_dir_make, bf_dir_default_limit, bf_remove_space_dir (sweep.h).
 *
 * A space directory is named buffile-<pid>-XXXXXX. It is swept only when it
 * belongs to the calling user, is a real directory (not a symlink) and no
 * process with that pid exists; inside it only regular files are removed,
 * so a sweep can never follow a planted link out of the directory.
 */
#include "sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"

const char *bf_default_temp_parent(void)
{
    const char *t = getenv("TMPDIR");
    return (t != NULL && t[0] != '\0') ? t : "/tmp";
}

int bf_space_dir_make(const bf_allocator *a, const char *parent, char **out, char *why,
                      size_t whylen)
{
    if (parent == NULL)
        parent = bf_default_temp_parent();
    size_t dlen = strlen(parent) + 64;
    char *dir = bf_malloc(a, dlen);
    if (dir == NULL) {
        snprintf(why, whylen, "out of memory creating a space");
        return BF_ENOMEM;
    }
    /* The pid in the name lets bf_sweep tell a crashed owner from a live one. */
    snprintf(dir, dlen, "%s/buffile-%ld-XXXXXX", parent, (long)getpid());
    if (mkdtemp(dir) == NULL) {
        int e = errno;
        snprintf(why, whylen, "create space directory under %s: %s%s", parent, strerror(e),
                 e == ENOENT ? " (the temp directory does not exist: make it, or set temp_dir or "
                               "$TMPDIR to one that does)"
                             : "");
        bf_free(a, dir);
        return e == ENOENT ? BF_ENOENT : bf_status_from_errno(e);
    }
    *out = dir;
    return BF_OK;
}

uint64_t bf_dir_default_limit(const char *dir)
{
    struct statvfs v;
    if (statvfs(dir, &v) != 0)
        return 0;
    uint64_t free_bytes = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    uint64_t limit = free_bytes / 10 * 9;
    /* A full file system would mean a limit of 0, which says "none": one byte is a wall. */
    return limit != 0 ? limit : 1;
}

static int owner_alive(const char *name)
{
    const char *p = name + strlen("buffile-");
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p || *end != '-' || pid <= 0)
        return 1; /* not our naming: leave it alone */
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

int bf_remove_space_dir(int parent_fd, const char *name)
{
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(fd, de->d_name, 0);
    }
    closedir(d);
    return unlinkat(parent_fd, name, AT_REMOVEDIR);
}

/* The bytes and count of the regular files in the directory `fd` (closed here). */
static void dir_usage(int fd, uint64_t *bytes, uint64_t *files)
{
    *bytes = *files = 0;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
            *bytes += (uint64_t)st.st_size;
            (*files)++;
        }
    }
    closedir(d);
}

/*
 * Call `fn` for each space directory under `parent` (NULL: the default):
 * a real directory named buffile-*, of the calling user; `fn` gets the
 * parent's descriptor, the entry's name and stat, and returns 0 to go on.
 * Returns BF_OK, or BF_ENOENT / BF_EIO when the parent cannot be read.
 */
static int each_space_dir(const char *parent,
                          int (*fn)(void *ctx, int pfd, const char *name, const struct stat *st),
                          void *ctx)
{
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return errno == ENOENT ? BF_ENOENT : BF_EIO;
    DIR *d = fdopendir(pfd);
    if (d == NULL) {
        close(pfd);
        return BF_EIO;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (strncmp(de->d_name, "buffile-", 8) != 0 ||
            fstatat(pfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        if (fn(ctx, pfd, de->d_name, &st) != 0)
            break;
    }
    closedir(d);
    return BF_OK;
}

typedef struct list_ctx {
    const char *parent;
    int (*each)(void *ctx, const bf_leftover *dir);
    void *ctx;
    int n;
} list_ctx;

static int list_one(void *ctx, int pfd, const char *name, const struct stat *st)
{
    list_ctx *c = ctx;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", c->parent, name);
    bf_leftover l = {.struct_size = sizeof(l), .path = path};
    l.pid = strtoll(name + 8, NULL, 10);
    l.alive = owner_alive(name);
    l.age_seconds = (int64_t)time(NULL) - (int64_t)st->st_mtime;
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        dir_usage(fd, &l.bytes, &l.files);
    c->n++;
    return c->each(c->ctx, &l);
}

int bf_sweep_list(const char *parent, int (*each)(void *ctx, const bf_leftover *dir), void *ctx)
{
    list_ctx c = {parent != NULL ? parent : bf_default_temp_parent(), each, ctx, 0};
    int rc = each_space_dir(c.parent, list_one, &c);
    return rc != BF_OK ? rc : c.n;
}

static int sweep_one(void *ctx, int pfd, const char *name, const struct stat *st)
{
    (void)st;
    if (!owner_alive(name) && bf_remove_space_dir(pfd, name) == 0)
        (*(int *)ctx)++;
    return 0;
}

int bf_sweep(const char *parent)
{
    int removed = 0;
    int rc =
        each_space_dir(parent != NULL ? parent : bf_default_temp_parent(), sweep_one, &removed);
    return rc != BF_OK ? rc : removed;
}
