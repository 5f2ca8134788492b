/*
 * vfs.c - the buffile VFS: which opens become libbuffile files, the methods
 * of those files, the pass-through to the VFS underneath, and the registry
 * of buffile VFSes.
 *
 * Invariants:
 * - A temp file (no name, or delete-on-close with a temp type) is a bf_file
 *   of its VFS's space; everything else is the parent's file, placed right
 *   after our struct, and every call on it is forwarded unchanged.
 * - v->mu guards the space, the options, the counters and last_error: a
 *   space is not thread-safe and one serves all threads (the sorter's
 *   workers write PMA files while other connections use theirs). The mutex
 *   is a pthread one, taken in every threading mode: SQLite's own mutexes
 *   come and go with sqlite3_shutdown(), our files do not.
 * - With threads=N the space has N library workers (bf_space_set_workers),
 *   set when the space is made, since the library takes them only while
 *   no file is open. They touch only the blocks handed to them: every call
 *   into the space or its files is still made under v->mu, so the space
 *   keeps one caller at a time whichever SQLite thread that is.
 * - v->space is non-NULL exactly while a temp file is open (or between a
 *   failed create and its cleanup inside one call); v->done holds the
 *   counters of the spaces already gone, so statistics only ever grow.
 * - Lock order: reg_mu, then a VFS's mu.
 * - Memory comes from malloc, not sqlite3_malloc: what the shim holds is
 *   not SQLite's memory (and SQLite's own leak accounting stays its own).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfsqlite_int.h"
SQLITE_EXTENSION_INIT3

typedef struct bfs_vfs {
    sqlite3_vfs base; /* first: SQLite hands us this pointer */
    sqlite3_vfs *parent;
    pthread_mutex_t mu;
    bfs_options opt;
    bf_space *space;
    uint32_t space_threads;  /* the workers of the current space (opt.threads when made) */
    bf_stats done;           /* counters of destroyed spaces */
    uint64_t temp_files;     /* temp opens that succeeded */
    uint64_t temp_open;      /* of those, files not yet closed (all in `space`) */
    uint64_t other_files;    /* opens passed to the parent (atomic) */
    uint64_t spaces;         /* spaces created */
    int swept;               /* bf_sweep of the temp directory done */
    bf_auto_device dev;      /* codec=auto: what the last space learned of the device */
    int have_dev;
    char last_error[512];    /* message of the last temp-file failure */
    struct bfs_vfs *next;
    char name[64];
} bfs_vfs;

typedef struct bfs_file {
    sqlite3_file base;
    bfs_vfs *vfs;
    bf_file *bf;         /* temp file */
    int lock;            /* temp file: the lock level SQLite asked for */
    sqlite3_int64 mmap_limit; /* temp file: the mmap limit SQLite set (it is never used) */
    sqlite3_file *real;  /* pass-through: the parent's file, after this struct */
} bfs_file;

/* Where the parent's file starts inside ours (8-byte aligned, as SQLite allocates). */
#define REAL_OFFSET ((sizeof(bfs_file) + 7) & ~(size_t)7)

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static bfs_vfs *vfs_list;

/* The last temp-file failure of this thread, for xGetLastError. */
static _Thread_local struct {
    int code; /* a bf_status, 0 when the last failure was not ours */
    char msg[512];
} tls_err;

/* ---- spaces ------------------------------------------------------------ */

/* SQLite's own choice of temp directory (os_unix.c), from the first that is usable. */
static const char *temp_parent(const bfs_options *o)
{
    if (o->temp_dir[0] != '\0')
        return o->temp_dir;
    const char *cand[6];
    int n = 0;
#ifdef SQLITE_CORE
    cand[n++] = sqlite3_temp_directory;
#endif
    cand[n++] = getenv("SQLITE_TMPDIR");
    cand[n++] = getenv("TMPDIR");
    cand[n++] = "/var/tmp";
    cand[n++] = "/usr/tmp";
    cand[n++] = "/tmp";
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (cand[i] != NULL && cand[i][0] != '\0' && stat(cand[i], &st) == 0 &&
            S_ISDIR(st.st_mode) && access(cand[i], W_OK | X_OK) == 0)
            return cand[i];
    }
    return ".";
}

static void space_options(const bfs_options *o, bf_space_options *so)
{
    bf_space_options_init(so);
    so->temp_dir = temp_parent(o);
    so->codec = o->codec;
    so->level = o->level;
    so->block_size = o->block_size;
    so->temp_limit = o->temp_limit;
}

/* Give a new space (no file open yet) its workers; message in err. */
static int space_workers(bf_space *sp, uint32_t threads, char *err, size_t len)
{
    if (threads == 0)
        return BF_OK;
    int st = bf_space_set_workers(sp, threads, NULL, NULL);
    if (st != BF_OK)
        snprintf(err, len, "threads=%" PRIu32 ": %s", threads, bf_space_errmsg(sp));
    return st;
}

/*
 * Ask the library whether it takes these options: a space made and removed
 * at once (its workers start only with a first block, so none is started).
 */
static int options_check(const bfs_options *o, char *err, size_t len)
{
    bf_space_options so;
    space_options(o, &so);
    bf_space *sp;
    int st = bf_space_create(&so, &sp, err, len);
    if (st != BF_OK)
        return st == BF_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    st = space_workers(sp, o->threads, err, len);
    bf_space_destroy(sp);
    if (st != BF_OK)
        return st == BF_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    return SQLITE_OK;
}

/* Add the counters of s to acc; peaks take the larger. */
static void stats_fold(bf_stats *acc, const bf_stats *s)
{
    if (s->logical_peak > acc->logical_peak)
        acc->logical_peak = s->logical_peak;
    if (s->physical_peak > acc->physical_peak)
        acc->physical_peak = s->physical_peak;
    acc->logical_written += s->logical_written;
    acc->logical_read += s->logical_read;
    acc->physical_written += s->physical_written;
    acc->physical_read += s->physical_read;
    acc->blocks_compressed += s->blocks_compressed;
    acc->blocks_raw += s->blocks_raw;
    acc->compress_ns += s->compress_ns;
    acc->decompress_ns += s->decompress_ns;
}

/* The space of v, created if none (v->mu held). */
static int space_get(bfs_vfs *v, char *err, size_t len)
{
    if (v->space != NULL)
        return BF_OK;
    bf_space_options so;
    space_options(&v->opt, &so);
    if (v->have_dev && v->opt.codec == BF_CODEC_AUTO)
        so.auto_device = &v->dev;
    if (!v->swept) {
        /* What crashed or killed processes left: their directories go before ours comes. */
        bf_sweep(so.temp_dir);
        v->swept = 1;
    }
    int st = bf_space_create(&so, &v->space, err, len);
    if (st != BF_OK)
        return st;
    st = space_workers(v->space, v->opt.threads, err, len);
    if (st != BF_OK) {
        bf_space_destroy(v->space);
        v->space = NULL;
        return st;
    }
    v->space_threads = v->opt.threads;
    v->spaces++;
    return BF_OK;
}

/* Remove v's space once no temp file is open in it (v->mu held). */
static void space_put_if_idle(bfs_vfs *v)
{
    /* Counted here, not asked of the space while files are open: bf_space_stats settles every
       open file first, waiting for its blocks on workers and packing the queued ones on this
       thread (issue 49: 80-210 blocks a CREATE INDEX of 2M rows, at each close of one of the
       sorter's files while another had blocks in flight). */
    if (v->space == NULL || v->temp_open != 0)
        return;
    bf_stats s;
    bf_space_stats(v->space, &s);
    if (s.files_open != 0)
        return;
    stats_fold(&v->done, &s);
    if (v->opt.codec == BF_CODEC_AUTO) {
        bf_space_auto_device(v->space, &v->dev);
        v->have_dev = 1;
    }
    bf_space_destroy(v->space);
    v->space = NULL;
}

/* Record a failure of the library (v->mu held) and give SQLite's code for it. */
static int fail_msg(bfs_vfs *v, int st, const char *msg, int ioerr)
{
    tls_err.code = st;
    snprintf(tls_err.msg, sizeof tls_err.msg, "%s", msg);
    snprintf(v->last_error, sizeof v->last_error, "%s", msg);
    int rc;
    switch (st) {
    case BF_ELIMIT:
    case BF_ENOSPC: rc = SQLITE_FULL; break;
    case BF_ENOMEM: rc = SQLITE_IOERR_NOMEM; break;
    case BF_ECORRUPT: rc = SQLITE_IOERR_DATA; break;
    default: rc = ioerr; break;
    }
    /* sqlite3_errmsg() says only "database or disk is full" for SQLITE_FULL, whatever the VFS
       knows (xGetLastError reaches the errno only for I/O errors): the reason goes to SQLite's
       error log, which an application reads with SQLITE_CONFIG_LOG and the sqlite3 shell
       prints after `.log stderr`, and stays in buffile_stats.last_error. */
    sqlite3_log(rc, "buffile VFS %s: %s", v->name, msg);
    return rc;
}

static int fail(bfs_file *f, int st, int ioerr)
{
    return fail_msg(f->vfs, st, bf_space_errmsg(f->vfs->space), ioerr);
}

/* ---- temp files ---------------------------------------------------------- */

static int tmp_close(sqlite3_file *pf)
{
    bfs_file *f = (bfs_file *)pf;
    bfs_vfs *v = f->vfs;
    pthread_mutex_lock(&v->mu);
    int st = bf_file_close(f->bf);
    int rc = st == BF_OK ? SQLITE_OK : fail(f, st, SQLITE_IOERR_CLOSE);
    f->bf = NULL; /* closed even when it failed */
    v->temp_open--;
    space_put_if_idle(v);
    pthread_mutex_unlock(&v->mu);
    return rc;
}

/* SQLite expects a read past the end to fill the rest with zeros and say so. */
static int tmp_read(sqlite3_file *pf, void *buf, int amt, sqlite3_int64 off)
{
    bfs_file *f = (bfs_file *)pf;
    pthread_mutex_lock(&f->vfs->mu);
    int rc = SQLITE_OK;
    int st = bf_file_seek(f->bf, off, BF_SEEK_SET);
    int64_t n = st == BF_OK ? bf_file_read(f->bf, buf, (size_t)amt) : st;
    if (n < 0) {
        rc = fail(f, (int)n, SQLITE_IOERR_READ);
    } else if (n < amt) {
        memset((unsigned char *)buf + n, 0, (size_t)(amt - n));
        rc = SQLITE_IOERR_SHORT_READ;
    }
    pthread_mutex_unlock(&f->vfs->mu);
    return rc;
}

static int tmp_write(sqlite3_file *pf, const void *buf, int amt, sqlite3_int64 off)
{
    bfs_file *f = (bfs_file *)pf;
    pthread_mutex_lock(&f->vfs->mu);
    int st = bf_file_seek(f->bf, off, BF_SEEK_SET);
    if (st == BF_OK)
        st = bf_file_write(f->bf, buf, (size_t)amt);
    int rc = st == BF_OK ? SQLITE_OK : fail(f, st, SQLITE_IOERR_WRITE);
    pthread_mutex_unlock(&f->vfs->mu);
    return rc;
}

static int tmp_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
    bfs_file *f = (bfs_file *)pf;
    pthread_mutex_lock(&f->vfs->mu);
    int st = size < 0 ? BF_EINVAL : bf_file_truncate(f->bf, (uint64_t)size);
    int rc = st == BF_OK ? SQLITE_OK : fail(f, st, SQLITE_IOERR_TRUNCATE);
    pthread_mutex_unlock(&f->vfs->mu);
    return rc;
}

/* Nothing to make durable: a temp file does not outlive its process. */
static int tmp_sync(sqlite3_file *pf, int flags)
{
    (void)pf;
    (void)flags;
    return SQLITE_OK;
}

static int tmp_size(sqlite3_file *pf, sqlite3_int64 *pSize)
{
    bfs_file *f = (bfs_file *)pf;
    pthread_mutex_lock(&f->vfs->mu);
    *pSize = (sqlite3_int64)bf_file_size(f->bf);
    pthread_mutex_unlock(&f->vfs->mu);
    return SQLITE_OK;
}

/* A temp file has one user, its connection: locks only record what was asked. */
static int tmp_lock(sqlite3_file *pf, int level)
{
    ((bfs_file *)pf)->lock = level;
    return SQLITE_OK;
}

static int tmp_check_reserved(sqlite3_file *pf, int *pResOut)
{
    *pResOut = ((bfs_file *)pf)->lock >= SQLITE_LOCK_RESERVED;
    return SQLITE_OK;
}

static int tmp_file_control(sqlite3_file *pf, int op, void *pArg)
{
    bfs_file *f = (bfs_file *)pf;
    switch (op) {
    case SQLITE_FCNTL_VFSNAME:
        *(char **)pArg = sqlite3_mprintf("%s", f->vfs->name);
        return SQLITE_OK;
    case SQLITE_FCNTL_LOCKSTATE:
        *(int *)pArg = f->lock;
        return SQLITE_OK;
    case SQLITE_FCNTL_MMAP_SIZE: {
        /* Kept and reported as the unix VFS does (PRAGMA mmap_size reads it back), though
           nothing is ever mapped: blocks are compressed, and xFetch declines. */
        sqlite3_int64 limit = *(sqlite3_int64 *)pArg;
        *(sqlite3_int64 *)pArg = f->mmap_limit;
        if (limit >= 0)
            f->mmap_limit = limit;
        return SQLITE_OK;
    }
    case SQLITE_FCNTL_SIZE_HINT:
    case SQLITE_FCNTL_CHUNK_SIZE:
        /* Blocks take room as they are written; nothing to reserve. */
        return SQLITE_OK;
    case SQLITE_FCNTL_HAS_MOVED:
        *(int *)pArg = 0;
        return SQLITE_OK;
    default:
        return SQLITE_NOTFOUND;
    }
}

static int tmp_sector_size(sqlite3_file *pf)
{
    (void)pf;
    return 4096; /* SQLITE_DEFAULT_SECTOR_SIZE, as the unix VFS says */
}

static int tmp_device_characteristics(sqlite3_file *pf)
{
    (void)pf;
    /* What the unix VFS says of its files by default, so the pager behaves the same. */
    return SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

/* No mapping of compressed blocks: SQLite then reads, as with mmap_size=0. */
static int tmp_fetch(sqlite3_file *pf, sqlite3_int64 off, int amt, void **pp)
{
    (void)pf;
    (void)off;
    (void)amt;
    *pp = NULL;
    return SQLITE_OK;
}

static int tmp_unfetch(sqlite3_file *pf, sqlite3_int64 off, void *p)
{
    (void)pf;
    (void)off;
    (void)p;
    return SQLITE_OK;
}

/* Version 3 for xFetch; no xShm*: SQLite never puts a temp file in WAL mode. */
static const sqlite3_io_methods tmp_methods = {
    3,           tmp_close,         tmp_read,        tmp_write,
    tmp_truncate, tmp_sync,         tmp_size,        tmp_lock,
    tmp_lock,    tmp_check_reserved, tmp_file_control, tmp_sector_size,
    tmp_device_characteristics, NULL, NULL,          NULL,
    NULL,        tmp_fetch,         tmp_unfetch,
};

static int tmp_open(bfs_vfs *v, bfs_file *f, int flags, int *pOutFlags)
{
    char err[512];
    pthread_mutex_lock(&v->mu);
    int rc = SQLITE_OK;
    int st = space_get(v, err, sizeof err);
    if (st != BF_OK) {
        rc = fail_msg(v, st, err, SQLITE_CANTOPEN);
    } else {
        bf_file_options fo;
        bf_file_options_init(&fo);
        fo.codec = v->opt.codec;
        fo.level = v->opt.level;
        fo.block_size = v->opt.block_size;
        st = bf_file_create(v->space, &fo, &f->bf);
        if (st != BF_OK) {
            rc = fail_msg(v, st, bf_space_errmsg(v->space), SQLITE_CANTOPEN);
            space_put_if_idle(v);
        } else {
            v->temp_files++;
            v->temp_open++;
        }
    }
    pthread_mutex_unlock(&v->mu);
    if (rc == SQLITE_IOERR_NOMEM)
        rc = SQLITE_NOMEM;
    if (rc != SQLITE_OK)
        return rc;
    f->base.pMethods = &tmp_methods;
    if (pOutFlags != NULL)
        *pOutFlags = flags;
    return SQLITE_OK;
}

/* ---- pass-through files ---------------------------------------------------- */

/* A failure of the parent's: its own xGetLastError tells of it, not ours. */
static int pass_rc(int rc)
{
    if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ)
        tls_err.code = 0;
    return rc;
}

#define REAL(pf) (((bfs_file *)(pf))->real)
#define RM(pf) (REAL(pf)->pMethods)

static int pass_close(sqlite3_file *pf)
{
    return pass_rc(RM(pf)->xClose(REAL(pf)));
}
static int pass_read(sqlite3_file *pf, void *buf, int amt, sqlite3_int64 off)
{
    return pass_rc(RM(pf)->xRead(REAL(pf), buf, amt, off));
}
static int pass_write(sqlite3_file *pf, const void *buf, int amt, sqlite3_int64 off)
{
    return pass_rc(RM(pf)->xWrite(REAL(pf), buf, amt, off));
}
static int pass_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
    return pass_rc(RM(pf)->xTruncate(REAL(pf), size));
}
static int pass_sync(sqlite3_file *pf, int flags)
{
    return pass_rc(RM(pf)->xSync(REAL(pf), flags));
}
static int pass_size(sqlite3_file *pf, sqlite3_int64 *pSize)
{
    return pass_rc(RM(pf)->xFileSize(REAL(pf), pSize));
}
static int pass_lock(sqlite3_file *pf, int level)
{
    return RM(pf)->xLock(REAL(pf), level);
}
static int pass_unlock(sqlite3_file *pf, int level)
{
    return RM(pf)->xUnlock(REAL(pf), level);
}
static int pass_check_reserved(sqlite3_file *pf, int *pResOut)
{
    return RM(pf)->xCheckReservedLock(REAL(pf), pResOut);
}
static int pass_file_control(sqlite3_file *pf, int op, void *pArg)
{
    int rc = RM(pf)->xFileControl(REAL(pf), op, pArg);
    if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK) {
        /* The stack of VFSes, outermost first, as SQLite's own shims name it. */
        char *inner = *(char **)pArg;
        *(char **)pArg = sqlite3_mprintf("%s/%z", ((bfs_file *)pf)->vfs->name, inner);
    }
    return rc;
}
static int pass_sector_size(sqlite3_file *pf)
{
    return RM(pf)->xSectorSize(REAL(pf));
}
static int pass_device_characteristics(sqlite3_file *pf)
{
    return RM(pf)->xDeviceCharacteristics(REAL(pf));
}
static int pass_shm_map(sqlite3_file *pf, int pg, int pgsz, int extend, void volatile **pp)
{
    return pass_rc(RM(pf)->xShmMap(REAL(pf), pg, pgsz, extend, pp));
}
static int pass_shm_lock(sqlite3_file *pf, int offset, int n, int flags)
{
    return RM(pf)->xShmLock(REAL(pf), offset, n, flags);
}
static void pass_shm_barrier(sqlite3_file *pf)
{
    RM(pf)->xShmBarrier(REAL(pf));
}
static int pass_shm_unmap(sqlite3_file *pf, int deleteFlag)
{
    return RM(pf)->xShmUnmap(REAL(pf), deleteFlag);
}
static int pass_fetch(sqlite3_file *pf, sqlite3_int64 off, int amt, void **pp)
{
    return pass_rc(RM(pf)->xFetch(REAL(pf), off, amt, pp));
}
static int pass_unfetch(sqlite3_file *pf, sqlite3_int64 off, void *p)
{
    return RM(pf)->xUnfetch(REAL(pf), off, p);
}

/* One table per version the parent's file may have: we offer no more than it does. */
#define PASS_METHODS(version)                                                                  \
    {                                                                                          \
        version, pass_close, pass_read, pass_write, pass_truncate, pass_sync, pass_size,       \
            pass_lock, pass_unlock, pass_check_reserved, pass_file_control, pass_sector_size,  \
            pass_device_characteristics, pass_shm_map, pass_shm_lock, pass_shm_barrier,        \
            pass_shm_unmap, pass_fetch, pass_unfetch                                           \
    }
static const sqlite3_io_methods pass_methods[3] = {PASS_METHODS(1), PASS_METHODS(2),
                                                   PASS_METHODS(3)};

/* ---- the VFS ----------------------------------------------------------------- */

/* SQLite's temp files: no name, or deleted on close and of a temporary type. */
static int is_temp(const char *zName, int flags)
{
    const int temp_types = SQLITE_OPEN_TEMP_DB | SQLITE_OPEN_TEMP_JOURNAL |
                           SQLITE_OPEN_SUBJOURNAL | SQLITE_OPEN_TRANSIENT_DB;
    return zName == NULL || ((flags & SQLITE_OPEN_DELETEONCLOSE) && (flags & temp_types));
}

static int vfs_open(sqlite3_vfs *pVfs, const char *zName, sqlite3_file *pf, int flags,
                    int *pOutFlags)
{
    bfs_vfs *v = (bfs_vfs *)pVfs;
    bfs_file *f = (bfs_file *)pf;
    memset(f, 0, sizeof(*f));
    f->vfs = v;
    if (is_temp(zName, flags))
        return tmp_open(v, f, flags, pOutFlags);
    f->real = (sqlite3_file *)((char *)pf + REAL_OFFSET);
    int rc = v->parent->xOpen(v->parent, zName, f->real, flags, pOutFlags);
    const sqlite3_io_methods *rm = f->real->pMethods;
    if (rc != SQLITE_OK) {
        if (rm != NULL)
            rm->xClose(f->real);
        return pass_rc(rc);
    }
    int version = rm->iVersion < 1 ? 1 : rm->iVersion > 3 ? 3 : rm->iVersion;
    f->base.pMethods = &pass_methods[version - 1];
    __atomic_add_fetch(&v->other_files, 1, __ATOMIC_RELAXED);
    return SQLITE_OK;
}

#define PARENT(pVfs) (((bfs_vfs *)(pVfs))->parent)

static int vfs_delete(sqlite3_vfs *pVfs, const char *zName, int syncDir)
{
    return PARENT(pVfs)->xDelete(PARENT(pVfs), zName, syncDir);
}
static int vfs_access(sqlite3_vfs *pVfs, const char *zName, int flags, int *pResOut)
{
    return PARENT(pVfs)->xAccess(PARENT(pVfs), zName, flags, pResOut);
}
static int vfs_full_pathname(sqlite3_vfs *pVfs, const char *zName, int nOut, char *zOut)
{
    return PARENT(pVfs)->xFullPathname(PARENT(pVfs), zName, nOut, zOut);
}
static void *vfs_dlopen(sqlite3_vfs *pVfs, const char *zPath)
{
    return PARENT(pVfs)->xDlOpen(PARENT(pVfs), zPath);
}
static void vfs_dlerror(sqlite3_vfs *pVfs, int nByte, char *zErrMsg)
{
    PARENT(pVfs)->xDlError(PARENT(pVfs), nByte, zErrMsg);
}
static void (*vfs_dlsym(sqlite3_vfs *pVfs, void *p, const char *zSym))(void)
{
    return PARENT(pVfs)->xDlSym(PARENT(pVfs), p, zSym);
}
static void vfs_dlclose(sqlite3_vfs *pVfs, void *p)
{
    PARENT(pVfs)->xDlClose(PARENT(pVfs), p);
}
static int vfs_randomness(sqlite3_vfs *pVfs, int nByte, char *zOut)
{
    return PARENT(pVfs)->xRandomness(PARENT(pVfs), nByte, zOut);
}
static int vfs_sleep(sqlite3_vfs *pVfs, int microseconds)
{
    return PARENT(pVfs)->xSleep(PARENT(pVfs), microseconds);
}
static int vfs_current_time(sqlite3_vfs *pVfs, double *pOut)
{
    return PARENT(pVfs)->xCurrentTime(PARENT(pVfs), pOut);
}
static int vfs_current_time_int64(sqlite3_vfs *pVfs, sqlite3_int64 *pOut)
{
    return PARENT(pVfs)->xCurrentTimeInt64(PARENT(pVfs), pOut);
}
static int vfs_set_system_call(sqlite3_vfs *pVfs, const char *zName, sqlite3_syscall_ptr p)
{
    return PARENT(pVfs)->xSetSystemCall(PARENT(pVfs), zName, p);
}
static sqlite3_syscall_ptr vfs_get_system_call(sqlite3_vfs *pVfs, const char *zName)
{
    return PARENT(pVfs)->xGetSystemCall(PARENT(pVfs), zName);
}
static const char *vfs_next_system_call(sqlite3_vfs *pVfs, const char *zName)
{
    return PARENT(pVfs)->xNextSystemCall(PARENT(pVfs), zName);
}

/*
 * The library's message of this thread's last temp-file failure, and its
 * bf_status (negative, so that it is not mistaken for an errno); when the
 * last failure was the parent's, the parent's answer.
 */
static int vfs_get_last_error(sqlite3_vfs *pVfs, int nBuf, char *zBuf)
{
    if (tls_err.code != 0) {
        if (nBuf > 0 && zBuf != NULL)
            snprintf(zBuf, (size_t)nBuf, "%s", tls_err.msg);
        return tls_err.code;
    }
    sqlite3_vfs *p = PARENT(pVfs);
    return p->xGetLastError != NULL ? p->xGetLastError(p, nBuf, zBuf) : 0;
}

static bfs_vfs *find_locked(const char *zName)
{
    for (bfs_vfs *v = vfs_list; v != NULL; v = v->next)
        if (strcmp(v->name, zName) == 0)
            return v;
    return NULL;
}

static void set_err(char **pzErr, const char *msg)
{
    if (pzErr != NULL)
        *pzErr = sqlite3_mprintf("%s", msg);
}

/*
 * Change the options of VFS zVfs by apply(), checked by the library first.
 * Returns SQLITE_OK or an error with its message in err.
 */
static int configure(const char *zVfs, int (*apply)(bfs_options *, const void *, char *, size_t),
                     const void *arg, char *err, size_t len)
{
    pthread_mutex_lock(&reg_mu);
    bfs_vfs *v = find_locked(zVfs ? zVfs : "buffile");
    int rc = SQLITE_OK;
    if (v == NULL) {
        snprintf(err, len, "no buffile VFS named '%s'", zVfs ? zVfs : "buffile");
        rc = SQLITE_ERROR;
    } else {
        pthread_mutex_lock(&v->mu);
        bfs_options o = v->opt;
        rc = apply(&o, arg, err, len);
        if (rc == SQLITE_OK)
            rc = options_check(&o, err, len);
        if (rc == SQLITE_OK) {
            v->opt = o;
            if (v->space != NULL)
                bf_space_set_temp_limit(v->space, o.temp_limit);
        }
        pthread_mutex_unlock(&v->mu);
    }
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

static int apply_text(bfs_options *o, const void *text, char *err, size_t len)
{
    return bfs_options_parse(o, text, err, len);
}

int bf_sqlite_configure(const char *zVfs, const char *zOptions, char **pzErr)
{
    char err[600];
    int rc = configure(zVfs, apply_text, zOptions, err, sizeof err);
    if (rc != SQLITE_OK)
        set_err(pzErr, err);
    return rc;
}

typedef struct key_value {
    const char *key, *value;
} key_value;

static int apply_kv(bfs_options *o, const void *arg, char *err, size_t len)
{
    const key_value *kv = arg;
    return bfs_options_set(o, kv->key, kv->value, err, len);
}

int bfs_configure_one(const char *zVfs, const char *key, const char *value, char *err, size_t len)
{
    key_value kv = {key, value};
    return configure(zVfs, apply_kv, &kv, err, len);
}

int bf_sqlite_register(const char *zName, const char *zParent, int makeDefault,
                       const char *zOptions, char **pzErr)
{
    char err[600] = "";
    if (zName == NULL)
        zName = "buffile";
    if (pzErr != NULL)
        *pzErr = NULL;
    if (strlen(zName) >= sizeof(((bfs_vfs *)0)->name)) {
        set_err(pzErr, "buffile VFS name too long");
        return SQLITE_ERROR;
    }
    sqlite3_vfs *parent = sqlite3_vfs_find(zParent);
    if (parent == NULL) {
        snprintf(err, sizeof err, "no VFS named '%s' to put buffile over",
                 zParent ? zParent : "(default)");
        set_err(pzErr, err);
        return SQLITE_ERROR;
    }
    pthread_mutex_lock(&reg_mu);
    bfs_vfs *v = find_locked(zName);
    int rc = SQLITE_OK;
    if (v != NULL) {
        pthread_mutex_unlock(&reg_mu);
        if (zOptions != NULL && (rc = bf_sqlite_configure(zName, zOptions, pzErr)) != SQLITE_OK)
            return rc;
        return sqlite3_vfs_register(&v->base, makeDefault);
    }
    if (sqlite3_vfs_find(zName) != NULL) {
        snprintf(err, sizeof err, "a VFS named '%s' is registered already", zName);
        rc = SQLITE_ERROR;
    } else if ((v = calloc(1, sizeof(*v))) == NULL) {
        rc = SQLITE_NOMEM;
    } else {
        bfs_options_default(&v->opt);
        rc = bfs_options_parse(&v->opt, zOptions, err, sizeof err);
        if (rc == SQLITE_OK)
            rc = options_check(&v->opt, err, sizeof err);
    }
    if (rc == SQLITE_OK) {
        pthread_mutex_init(&v->mu, NULL);
        snprintf(v->name, sizeof v->name, "%s", zName);
        v->parent = parent;
        sqlite3_vfs *b = &v->base;
        b->iVersion = parent->iVersion < 3 ? parent->iVersion : 3;
        b->szOsFile = (int)(REAL_OFFSET + (size_t)parent->szOsFile);
        b->mxPathname = parent->mxPathname;
        b->zName = v->name;
        b->xOpen = vfs_open;
        b->xDelete = vfs_delete;
        b->xAccess = vfs_access;
        b->xFullPathname = vfs_full_pathname;
        b->xDlOpen = vfs_dlopen;
        b->xDlError = vfs_dlerror;
        b->xDlSym = vfs_dlsym;
        b->xDlClose = vfs_dlclose;
        b->xRandomness = vfs_randomness;
        b->xSleep = vfs_sleep;
        b->xCurrentTime = vfs_current_time;
        b->xGetLastError = vfs_get_last_error;
        if (b->iVersion >= 2 && parent->xCurrentTimeInt64 != NULL)
            b->xCurrentTimeInt64 = vfs_current_time_int64;
        if (b->iVersion >= 3 && parent->xSetSystemCall != NULL) {
            b->xSetSystemCall = vfs_set_system_call;
            b->xGetSystemCall = vfs_get_system_call;
            b->xNextSystemCall = vfs_next_system_call;
        }
        rc = sqlite3_vfs_register(b, makeDefault);
    }
    if (rc == SQLITE_OK) {
        bfs_vfs **tail = &vfs_list;
        while (*tail != NULL)
            tail = &(*tail)->next;
        *tail = v;
    } else {
        if (rc == SQLITE_ERROR)
            set_err(pzErr, err);
        free(v);
    }
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

/* Statistics of v (v->mu held). */
static void stats_locked(bfs_vfs *v, bf_sqlite_stats *out)
{
    bf_stats cur, sum = v->done;
    memset(&cur, 0, sizeof cur);
    if (v->space != NULL)
        bf_space_stats(v->space, &cur);
    stats_fold(&sum, &cur);
    memset(out, 0, sizeof(*out));
    out->temp_files = v->temp_files;
    out->temp_files_open = cur.files_open;
    out->other_files = __atomic_load_n(&v->other_files, __ATOMIC_RELAXED);
    out->logical_bytes = cur.logical_bytes;
    out->physical_bytes = cur.physical_bytes;
    out->logical_peak = sum.logical_peak;
    out->physical_peak = sum.physical_peak;
    out->logical_written = sum.logical_written;
    out->physical_written = sum.physical_written;
    out->logical_read = sum.logical_read;
    out->physical_read = sum.physical_read;
    out->blocks_compressed = sum.blocks_compressed;
    out->blocks_raw = sum.blocks_raw;
    out->compress_ns = sum.compress_ns;
    out->decompress_ns = sum.decompress_ns;
    out->spaces = v->spaces;
}

int bf_sqlite_stats_get(const char *zVfs, bf_sqlite_stats *pOut)
{
    pthread_mutex_lock(&reg_mu);
    bfs_vfs *v = find_locked(zVfs ? zVfs : "buffile");
    if (v != NULL) {
        pthread_mutex_lock(&v->mu);
        stats_locked(v, pOut);
        pthread_mutex_unlock(&v->mu);
    }
    pthread_mutex_unlock(&reg_mu);
    return v != NULL ? SQLITE_OK : SQLITE_ERROR;
}

int bfs_snapshot(bfs_row **rows)
{
    pthread_mutex_lock(&reg_mu);
    int n = 0;
    for (bfs_vfs *v = vfs_list; v != NULL; v = v->next)
        n++;
    *rows = sqlite3_malloc64((sqlite3_uint64)(n ? n : 1) * sizeof(bfs_row));
    if (*rows == NULL) {
        pthread_mutex_unlock(&reg_mu);
        return -1;
    }
    sqlite3_vfs *dflt = sqlite3_vfs_find(NULL);
    int i = 0;
    for (bfs_vfs *v = vfs_list; v != NULL; v = v->next, i++) {
        bfs_row *r = &(*rows)[i];
        snprintf(r->name, sizeof r->name, "%s", v->name);
        r->is_default = dflt == &v->base;
        pthread_mutex_lock(&v->mu);
        r->opt = v->opt;
        r->limit_known = v->space != NULL;
        r->temp_limit = v->space != NULL ? bf_space_temp_limit(v->space) : v->opt.temp_limit;
        r->threads = v->space != NULL ? v->space_threads : v->opt.threads;
        stats_locked(v, &r->st);
        snprintf(r->last_error, sizeof r->last_error, "%s", v->last_error);
        pthread_mutex_unlock(&v->mu);
    }
    pthread_mutex_unlock(&reg_mu);
    return n;
}

int bfs_vfs_name(sqlite3_vfs *pVfs, char *buf, size_t len)
{
    pthread_mutex_lock(&reg_mu);
    int found = 0;
    for (bfs_vfs *v = vfs_list; v != NULL && !found; v = v->next)
        if (&v->base == pVfs) {
            snprintf(buf, len, "%s", v->name);
            found = 1;
        }
    pthread_mutex_unlock(&reg_mu);
    return found;
}

int bfs_vfs_options(const char *zVfs, bfs_options *out)
{
    pthread_mutex_lock(&reg_mu);
    bfs_vfs *v = find_locked(zVfs);
    if (v != NULL) {
        pthread_mutex_lock(&v->mu);
        *out = v->opt;
        pthread_mutex_unlock(&v->mu);
    }
    pthread_mutex_unlock(&reg_mu);
    return v != NULL ? SQLITE_OK : SQLITE_ERROR;
}
