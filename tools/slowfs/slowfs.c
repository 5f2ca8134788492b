/*
 * slowfs.c - a FUSE passthrough file system that models a slow device.
 *
 * Every path under the mount names the same path under the backing
 * directory, reached through a descriptor opened before mounting (so the
 * mount may cover the backing directory itself). File data is opened with
 * direct_io: no page cache sits above the device, every read(2) and
 * write(2) becomes requests here, and each request pays the device model
 * (device.h) after its backing call, timed from its arrival. Metadata
 * operations pass through unthrottled.
 *
 * Invariants: fi->fh of a file is its backing descriptor, with CONTROL_FH
 * set for the stats file (a memfd holding one snapshot, never charged);
 * fi->fh of a directory is an sf_dir. When the daemon runs as root (a mount
 * with allow_other serving other users), whatever it creates is given to
 * the calling user and group, as the kernel would for a local file system.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "device.h"
#include "options.h" /* FUSE_USE_VERSION, before any other libfuse header */

#include <fuse_lowlevel.h>

#define CONTROL_FH (1ull << 63)
#define CONTROL_PATH "/" SF_CONTROL_NAME

typedef struct sf_dir {
    DIR *d;
    int root; /* the mount's root, where the stats file is hidden */
} sf_dir;

static struct {
    int bfd; /* the backing directory */
    int as_root;
    FILE *stats_to;
    sf_device dev;
} fs;

/* The backing path relative to fs.bfd; NULL for the stats file, which no call may change. */
static const char *rel(const char *path)
{
    if (strcmp(path, CONTROL_PATH) == 0)
        return NULL;
    return path[1] ? path + 1 : ".";
}

static int fh_fd(const struct fuse_file_info *fi)
{
    return (int)(fi->fh & ~CONTROL_FH);
}

static int neg_errno(int rc)
{
    return rc < 0 ? -errno : 0;
}

/* Give what was just created to the caller, when the daemon is root. */
static int own(int fd, const char *name)
{
    if (!fs.as_root)
        return 0;
    struct fuse_context *c = fuse_get_context();
    return name ? fchownat(fs.bfd, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW)
                : fchown(fd, c->uid, c->gid);
}

static void control_stat(struct stat *st, off_t size)
{
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = size;
    clock_gettime(CLOCK_REALTIME, &st->st_mtim);
    st->st_atim = st->st_ctim = st->st_mtim;
}

static int sf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (fi != NULL) {
        int rc = neg_errno(fstat(fh_fd(fi), st));
        if (rc == 0 && (fi->fh & CONTROL_FH))
            control_stat(st, st->st_size);
        return rc;
    }
    const char *r = rel(path);
    if (r == NULL) {
        control_stat(st, 0);
        return 0;
    }
    return neg_errno(fstatat(fs.bfd, r, st, AT_SYMLINK_NOFOLLOW));
}

static int sf_readlink(const char *path, char *buf, size_t size)
{
    const char *r = rel(path);
    if (r == NULL)
        return -EINVAL;
    ssize_t n = readlinkat(fs.bfd, r, buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

static int sf_mkdir(const char *path, mode_t mode)
{
    const char *r = rel(path);
    if (r == NULL)
        return -EEXIST;
    if (mkdirat(fs.bfd, r, mode) != 0)
        return -errno;
    if (own(-1, r) != 0) {
        int e = errno;
        unlinkat(fs.bfd, r, AT_REMOVEDIR);
        return -e;
    }
    return 0;
}

static int sf_symlink(const char *target, const char *path)
{
    const char *r = rel(path);
    if (r == NULL)
        return -EEXIST;
    if (symlinkat(target, fs.bfd, r) != 0)
        return -errno;
    if (own(-1, r) != 0) {
        int e = errno;
        unlinkat(fs.bfd, r, 0);
        return -e;
    }
    return 0;
}

static int sf_unlink(const char *path)
{
    const char *r = rel(path);
    return r ? neg_errno(unlinkat(fs.bfd, r, 0)) : -EPERM;
}

static int sf_rmdir(const char *path)
{
    const char *r = rel(path);
    return r ? neg_errno(unlinkat(fs.bfd, r, AT_REMOVEDIR)) : -ENOTDIR;
}

static int sf_rename(const char *from, const char *to, unsigned int flags)
{
    const char *rf = rel(from), *rt = rel(to);
    if (rf == NULL || rt == NULL)
        return -EPERM;
    return neg_errno(renameat2(fs.bfd, rf, fs.bfd, rt, flags));
}

static int sf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    if (fi != NULL)
        return (fi->fh & CONTROL_FH) ? -EPERM : neg_errno(fchmod(fh_fd(fi), mode));
    const char *r = rel(path);
    return r ? neg_errno(fchmodat(fs.bfd, r, mode, 0)) : -EPERM;
}

static int sf_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    if (fi != NULL)
        return (fi->fh & CONTROL_FH) ? -EPERM : neg_errno(fchown(fh_fd(fi), uid, gid));
    const char *r = rel(path);
    return r ? neg_errno(fchownat(fs.bfd, r, uid, gid, AT_SYMLINK_NOFOLLOW)) : -EPERM;
}

static int sf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi != NULL)
        return (fi->fh & CONTROL_FH) ? -EPERM : neg_errno(ftruncate(fh_fd(fi), size));
    const char *r = rel(path);
    if (r == NULL)
        return -EPERM;
    int fd = openat(fs.bfd, r, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = neg_errno(ftruncate(fd, size));
    close(fd);
    return rc;
}

static int sf_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    if (fi != NULL)
        return (fi->fh & CONTROL_FH) ? -EPERM : neg_errno(futimens(fh_fd(fi), tv));
    const char *r = rel(path);
    return r ? neg_errno(utimensat(fs.bfd, r, tv, AT_SYMLINK_NOFOLLOW)) : -EPERM;
}

/* A snapshot of the stats in a memfd, so that every read of one open sees the same text. */
static int open_control(struct fuse_file_info *fi)
{
    if ((fi->flags & O_ACCMODE) != O_RDONLY)
        return -EACCES;
    char text[2048];
    int len = sf_device_format(&fs.dev, sf_now_ns(), text, sizeof text);
    int fd = memfd_create("slowfs-stats", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (write(fd, text, (size_t)len) != len) {
        int e = errno ? errno : EIO;
        close(fd);
        return -e;
    }
    fi->fh = CONTROL_FH | (uint64_t)fd;
    fi->direct_io = 1;
    return 0;
}

/* The backing open's flags: O_DIRECT is ours to honour (no cache above the device), not the
 * backing's. */
static int backing_flags(int flags)
{
    return (flags & ~(O_DIRECT | O_CREAT | O_EXCL | O_NOCTTY)) | O_CLOEXEC;
}

static int sf_open(const char *path, struct fuse_file_info *fi)
{
    const char *r = rel(path);
    if (r == NULL)
        return open_control(fi);
    int fd = openat(fs.bfd, r, backing_flags(fi->flags));
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    fi->direct_io = 1;
    return 0;
}

static int sf_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    const char *r = rel(path);
    if (r == NULL)
        return -EEXIST;
    /* Create exclusively first: only a file made here is given to the caller. */
    int flags = backing_flags(fi->flags);
    int fd = openat(fs.bfd, r, flags | O_CREAT | O_EXCL, mode);
    if (fd < 0 && errno == EEXIST && !(fi->flags & O_EXCL))
        fd = openat(fs.bfd, r, flags);
    else if (fd >= 0 && own(fd, NULL) != 0) {
        int e = errno;
        close(fd);
        unlinkat(fs.bfd, r, 0);
        errno = e;
        fd = -1;
    }
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    fi->direct_io = 1;
    return 0;
}

/*
 * A read or a write, looped until all of it moved, end of file, or an error
 * after some bytes (which then counts as a short transfer, as pread and
 * pwrite report it); then the device holds it. Returns bytes or -errno.
 */
static int transfer(int dir, struct fuse_file_info *fi, char *buf, size_t size, off_t off)
{
    uint64_t arrival = sf_now_ns();
    int fd = fh_fd(fi);
    size_t done = 0;
    while (done < size) {
        off_t at = off + (off_t)done;
        ssize_t n = dir == SF_READ ? pread(fd, buf + done, size - done, at)
                                   : pwrite(fd, buf + done, size - done, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && done == 0)
            return -errno;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    if (!(fi->fh & CONTROL_FH))
        sf_sleep_until(sf_device_charge(&fs.dev, dir, arrival, sf_now_ns(), done));
    return (int)done;
}

static int sf_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    return transfer(SF_READ, fi, buf, size, off);
}

static int sf_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)path;
    /* transfer() only reads from buf when writing. */
    return transfer(SF_WRITE, fi, (char *)buf, size, off);
}

static int sf_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    return neg_errno(fstatvfs(fs.bfd, st));
}

static int sf_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    close(fh_fd(fi));
    return 0;
}

static int sf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    if (fi->fh & CONTROL_FH)
        return 0;
    atomic_fetch_add_explicit(&fs.dev.fsyncs, 1, memory_order_relaxed);
    return neg_errno(datasync ? fdatasync(fh_fd(fi)) : fsync(fh_fd(fi)));
}

static int sf_opendir(const char *path, struct fuse_file_info *fi)
{
    const char *r = rel(path);
    if (r == NULL)
        return -ENOTDIR;
    sf_dir *d = malloc(sizeof *d);
    if (d == NULL)
        return -ENOMEM;
    int fd = openat(fs.bfd, r, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    d->d = fd < 0 ? NULL : fdopendir(fd);
    if (d->d == NULL) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        free(d);
        return -e;
    }
    d->root = strcmp(path, "/") == 0;
    fi->fh = (uint64_t)(uintptr_t)d;
    return 0;
}

/*
 * Every entry in one call, at offset 0: libfuse keeps them for the handle
 * and serves later offsets itself, refilling on a rewind (offset 0 again).
 */
static int sf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)path;
    (void)off;
    (void)flags;
    sf_dir *d = (sf_dir *)(uintptr_t)fi->fh;
    rewinddir(d->d);
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d->d);
        if (de == NULL)
            return -errno;
        if (d->root && strcmp(de->d_name, SF_CONTROL_NAME) == 0)
            continue;
        struct stat st = {.st_ino = de->d_ino, .st_mode = (mode_t)DTTOIF(de->d_type)};
        if (fill(buf, de->d_name, &st, 0, 0) != 0)
            return -ENOMEM;
    }
}

static int sf_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    sf_dir *d = (sf_dir *)(uintptr_t)fi->fh;
    closedir(d->d);
    free(d);
    return 0;
}

static int sf_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    sf_dir *d = (sf_dir *)(uintptr_t)fi->fh;
    int fd = dirfd(d->d);
    return neg_errno(datasync ? fdatasync(fd) : fsync(fd));
}

static int sf_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
    (void)path;
    if (fi->fh & CONTROL_FH)
        return -EPERM;
    return neg_errno(fallocate(fh_fd(fi), mode, off, len));
}

static void *sf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->use_ino = 1;     /* stat shows the backing inode numbers */
    cfg->nullpath_ok = 1; /* descriptor calls need no path, so ... */
    cfg->hard_remove = 1; /* ... unlink removes at once, open or not (no .fuse_hidden files) */
    return NULL;
}

static void sf_destroy(void *data)
{
    (void)data;
    char text[2048];
    sf_device_format(&fs.dev, sf_now_ns(), text, sizeof text);
    fputs(text, fs.stats_to);
    fflush(fs.stats_to);
}

static const struct fuse_operations ops = {
    .getattr = sf_getattr,
    .readlink = sf_readlink,
    .mkdir = sf_mkdir,
    .symlink = sf_symlink,
    .unlink = sf_unlink,
    .rmdir = sf_rmdir,
    .rename = sf_rename,
    .chmod = sf_chmod,
    .chown = sf_chown,
    .truncate = sf_truncate,
    .utimens = sf_utimens,
    .open = sf_open,
    .create = sf_create,
    .read = sf_read,
    .write = sf_write,
    .statfs = sf_statfs,
    .release = sf_release,
    .fsync = sf_fsync,
    .opendir = sf_opendir,
    .readdir = sf_readdir,
    .releasedir = sf_releasedir,
    .fsyncdir = sf_fsyncdir,
    .fallocate = sf_fallocate,
    .init = sf_init,
    .destroy = sf_destroy,
};

/*
 * The kernel starts the mount's root with the mounting user as owner and no
 * mode bits, and chmod and chown check the owner without asking the file
 * system (PostgreSQL's CREATE TABLESPACE chmods its location first). One
 * stat through the mount, answered by the loop, gives the root the backing
 * directory's attributes; only then is the mount ready. `fd` (or -1) is the
 * pipe to the waiting parent: one byte, 0 when ready.
 */
typedef struct root_refresh {
    char *mountpoint;
    int fd;
} root_refresh;

static void *refresh_root(void *arg)
{
    root_refresh *r = arg;
    struct stat st;
    char status = stat(r->mountpoint, &st) == 0 ? 0 : 1;
    if (r->fd >= 0) {
        if (write(r->fd, &status, 1) != 1)
            status = 1; /* the parent is gone: nobody left to tell */
        close(r->fd);
    }
    return NULL;
}

/*
 * Into the background, as fuse_daemonize does, except that the parent exits
 * only once the child says the mount is ready (refresh_root): a script's next
 * command meets the root as it is. Returns the pipe's write end in the child.
 */
static int daemonize(void)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0) {
        close(p[1]);
        char status = 1;
        _exit(read(p[0], &status, 1) == 1 && status == 0 ? 0 : 1);
    }
    close(p[0]);
    int null = open("/dev/null", O_RDWR);
    if (setsid() < 0 || chdir("/") != 0 || null < 0)
        return -1;
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    if (null > STDERR_FILENO)
        close(null);
    return p[1];
}

/*
 * Mount and serve until unmounted, as fuse_main would, but with the thread
 * limit applied (libfuse 3.14's fuse_main drops max_threads, leaving 10
 * threads, each held by a request the model delays, and warns about an unset
 * idle-thread count) and the root made ready before anyone is told.
 */
static int serve(struct fuse_args *args)
{
    struct fuse_cmdline_opts opts;
    if (fuse_parse_cmdline(args, &opts) != 0)
        return 1;
    int rc = 1;
    root_refresh refresh = {realpath(opts.mountpoint, NULL), -1};
    pthread_t refresher;
    struct fuse *f = fuse_new(args, &ops, sizeof ops, NULL);
    if (f == NULL || refresh.mountpoint == NULL)
        goto destroy;
    if (fuse_mount(f, opts.mountpoint) != 0)
        goto destroy;
    struct fuse_session *se = fuse_get_session(f);
    if (!opts.foreground && (refresh.fd = daemonize()) < 0)
        goto unmount;
    if (fuse_set_signal_handlers(se) != 0 ||
        pthread_create(&refresher, NULL, refresh_root, &refresh) != 0)
        goto unmount;
    if (opts.singlethread) {
        rc = fuse_loop(f) != 0;
    } else {
        struct fuse_loop_config *loop = fuse_loop_cfg_create();
        if (loop != NULL) {
            fuse_loop_cfg_set_clone_fd(loop, (unsigned)opts.clone_fd);
            fuse_loop_cfg_set_max_threads(loop, opts.max_threads);
            rc = fuse_loop_mt(f, loop) != 0;
            fuse_loop_cfg_destroy(loop);
        }
    }
    pthread_join(refresher, NULL);
    fuse_remove_signal_handlers(se);
unmount:
    fuse_unmount(f);
destroy:
    if (f != NULL)
        fuse_destroy(f);
    free(refresh.mountpoint);
    free(opts.mountpoint);
    return rc;
}

int main(int argc, char **argv)
{
    sf_config cfg;
    struct fuse_args args;
    char err[512];
    if (sf_parse_args(argc, argv, &cfg, &args, err, sizeof err) != 0) {
        fprintf(stderr, "slowfs: %s (see --help)\n", err);
        sf_config_free(&cfg);
        return 2;
    }
    if (cfg.help || cfg.version) {
        if (cfg.help)
            sf_usage(stdout);
        else
            printf("slowfs (buffile %s), libfuse %s\n", SLOWFS_VERSION, fuse_pkgversion());
        sf_config_free(&cfg);
        fuse_opt_free_args(&args);
        return 0;
    }
    int rc = 1;
    fs.bfd = open(cfg.backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fs.bfd < 0) {
        fprintf(stderr, "slowfs: cannot open backing directory '%s': %s\n", cfg.backing,
                strerror(errno));
        goto out;
    }
    struct stat st;
    if (stat(cfg.mountpoint, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "slowfs: mount point '%s': %s\n", cfg.mountpoint,
                errno ? strerror(errno) : "not a directory");
        goto out;
    }
    fs.stats_to = stderr;
    if (cfg.stats_file && (fs.stats_to = fopen(cfg.stats_file, "we")) == NULL) {
        fprintf(stderr, "slowfs: cannot open stats file '%s': %s\n", cfg.stats_file,
                strerror(errno));
        goto out;
    }
    fs.as_root = geteuid() == 0;
    sf_device_init(&fs.dev, &cfg.model, sf_now_ns());
    /* Modes arrive masked by the caller's umask already; the daemon's must not mask them again. */
    umask(0);
    /* Wake-ups within a microsecond of the model's deadlines; threads inherit this. */
    prctl(PR_SET_TIMERSLACK, 1000ul);
    rc = serve(&args);
    sf_device_destroy(&fs.dev);
out:
    if (fs.stats_to && fs.stats_to != stderr)
        fclose(fs.stats_to);
    if (fs.bfd >= 0)
        close(fs.bfd);
    sf_config_free(&cfg);
    fuse_opt_free_args(&args);
    return rc;
}
