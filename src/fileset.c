/*
 * fileset.c - named files shared between spaces: create, export, open,
 * append (extent splicing), delete, and the index inside each file.
 * Implements: bf_fileset_create, bf_fileset_destroy, bf_file_create_named,
 * bf_file_export, bf_file_open_named, bf_file_delete_named, bf_file_append
 * (buffile.h); bf_named_close, bf_named_abort (fileset.h).
 *
 * Invariants: a named file is its segments "<dir>/<name>.<n>" alone, one
 * inode each, as PostgreSQL's own temporary files are (file creation is
 * what a parallel hash join of many batches spends its time on). Segment
 * 0 starts with the head (index.h): two slots, each naming an index
 * inside the file. A session writes its index where neither the version
 * it started from (extents and index) nor its own live extents lie, and
 * only then its slot, the one the previous session did not write: an
 * opener sees the old version or the new one, never a mix, and a crash
 * at any point leaves the old one whole.
 * Spliced parts are only ever read: their extents are never freed into the
 * target's free list, and their segments are never truncated by it. A file
 * spliced into a writable target is marked consumed ("<name>.consumed"):
 * from then on nobody opens it read-write or deletes it alone, so the
 * bytes the target points at never change.
 *
 * Sessions (see bf_named in file.h): an index records the generation of
 * the session that wrote it; a read-write open starts the next generation,
 * marks the index's extents kept, and its close either persists a new
 * index or rolls the file back to the old one, which nothing in the
 * session touched.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileset.h"

#include "abi.h"
#include "alloc.h"
#include "budget.h"
#include "buffile.h"
#include "file.h"
#include "index.h"

static char *str_dup(const bf_allocator *a, const char *s, size_t n)
{
    char *d = bf_malloc(a, n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* "<dir>/<name>", allocated. */
static char *join(const bf_allocator *a, const char *dir, const char *name, size_t name_len)
{
    size_t dl = strlen(dir);
    char *p = bf_malloc(a, dl + 1 + name_len + 1);
    if (p != NULL) {
        memcpy(p, dir, dl);
        p[dl] = '/';
        memcpy(p + dl + 1, name, name_len);
        p[dl + 1 + name_len] = '\0';
    }
    return p;
}

static int check_name(bf_space *sp, const char *op, const char *dir, const char *name)
{
    if (name == NULL || !bf_name_valid(name, strlen(name)))
        return bf_fail(sp, BF_EINVAL, op, name, 0,
                       "file set names are 1..128 of [A-Za-z0-9_.-], not starting with '.'");
    /* Room for "<dir>/<name>.<segment or idx.tmp>" in the fixed path buffers. */
    if (dir == NULL || strlen(dir) + strlen(name) + 32 > 3900)
        return bf_fail(sp, BF_EINVAL, op, dir, 0, "file set directory path too long");
    return BF_OK;
}

int bf_fileset_create(bf_space *sp, const char *dir)
{
    if (mkdir(dir, 0700) == 0)
        return BF_OK;
    int e = errno;
    struct stat st;
    if (e == EEXIST && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
        return BF_OK;
    if (e == EEXIST)
        return bf_fail(sp, BF_EEXIST, "create file set", dir, 0,
                       "exists and is not a directory owned by this user");
    return bf_fail(sp, bf_status_from_errno(e), "create file set", dir, e, NULL);
}

int bf_fileset_destroy(bf_space *sp, const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return bf_fail(sp, e == ENOENT ? BF_ENOENT : BF_EIO, "destroy file set", dir, e, NULL);
    }
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return bf_fail(sp, BF_EIO, "destroy file set", dir, errno, NULL);
    }
    int status = BF_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
            continue;
        if (unlinkat(fd, de->d_name, 0) != 0)
            status = bf_fail(sp, BF_EIO, "destroy file set", de->d_name, errno, NULL);
    }
    closedir(d);
    if (rmdir(dir) != 0)
        status = bf_fail(sp, BF_EIO, "destroy file set", dir, errno, NULL);
    return status;
}

/* Give `f` its named state: set dir, name, and the prefix of its segments. */
static int attach_named(bf_file *f, const char *dir, const char *name)
{
    const bf_allocator *a = bf_file_alloc(f);
    bf_named *nm = bf_calloc(a, 1, sizeof(*nm));
    if (nm == NULL)
        return bf_fail(f->seg.space, BF_ENOMEM, "open", name, 0, "named file state");
    nm->dir = str_dup(a, dir, strlen(dir));
    nm->name = str_dup(a, name, strlen(name));
    nm->prefix = join(a, dir, name, strlen(name));
    f->named = nm;
    if (nm->dir == NULL || nm->name == NULL || nm->prefix == NULL)
        return bf_fail(f->seg.space, BF_ENOMEM, "open", name, 0, "named file state");
    f->seg.prefix = nm->prefix;
    return BF_OK;
}

/* Free a named file's state and close its parts' descriptors (before bf_file_release). */
static void named_release(bf_file *f)
{
    bf_named *nm = f->named;
    if (nm == NULL)
        return;
    const bf_allocator *a = bf_file_alloc(f);
    bf_seg_close(&f->seg);
    for (uint32_t i = 0; i < nm->nparts; i++) {
        bf_seg_close(&nm->parts[i].seg);
        bf_free(a, nm->parts[i].name);
        bf_free(a, nm->parts[i].prefix);
    }
    bf_free(a, nm->parts);
    bf_free(a, nm->dir);
    bf_free(a, nm->name);
    bf_free(a, nm->prefix);
    bf_free(a, nm);
    f->named = NULL;
}

/* ---- consumed files ---------------------------------------------------- */

static void marker_path(const char *dir, const char *name, size_t name_len, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%.*s.consumed", dir, (int)name_len, name);
}

/* 1 if `name` of set `dir` was consumed by an append, 0 if not, or a negative status. */
static int consumed(bf_space *sp, const char *dir, const char *name)
{
    char path[4096];
    marker_path(dir, name, strlen(name), path, sizeof(path));
    int fd = bf_fd_open(sp, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd >= 0) {
        bf_fd_close(sp, fd);
        return 1;
    }
    if (errno == ENOENT)
        return 0;
    return bf_fail(sp, BF_EIO, "open", path, errno, "checking whether the file was appended");
}

/* Refuse `op` on a consumed file with BF_EBUSY; BF_OK when it was not consumed. */
static int refuse_consumed(bf_space *sp, const char *op, const char *dir, const char *name)
{
    int c = consumed(sp, dir, name);
    if (c == 1)
        return bf_fail(sp, BF_EBUSY, op, name, 0,
                       "it was appended to another file of set %s, which reads its bytes: it "
                       "stays read-only and goes with the set",
                       dir);
    return c;
}

/*
 * Mark the names of parts[0..n) (spliced into a writable target of set
 * `dir`) consumed, with `op` for messages. New markers are created with
 * O_EXCL and flagged `marked`; on failure the ones this call created are
 * removed (and unflagged) again.
 */
static int mark_consumed(bf_space *sp, const char *dir, bf_part *parts, uint32_t n, const char *op)
{
    int rc = BF_OK;
    char path[4096];
    uint32_t i = 0;
    for (; i < n && rc == BF_OK; i++) {
        marker_path(dir, parts[i].name, strlen(parts[i].name), path, sizeof(path));
        int fd = bf_fd_open(sp, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            S_IRUSR | S_IWUSR);
        if (fd >= 0) {
            bf_fd_close(sp, fd);
            parts[i].marked = 2; /* made by this call: undone below if it fails */
        } else if (errno != EEXIST) {
            rc = bf_fail(sp, bf_status_from_errno(errno), op, path, errno,
                         "marking the source consumed");
        }
    }
    for (uint32_t j = 0; j < i; j++) {
        if (parts[j].marked != 2)
            continue;
        parts[j].marked = rc == BF_OK;
        if (rc != BF_OK) {
            marker_path(dir, parts[j].name, strlen(parts[j].name), path, sizeof(path));
            sp->ios.io.unlink(sp->ios.io.ctx, path);
        }
    }
    return rc;
}

/*
 * A session whose splices are rolled back (its close failed, or `op` gave
 * the session up) takes back the consumption it caused: the markers it made
 * for parts spliced in since the last persist go, so those sources can be
 * written or deleted again. A marker that cannot be removed keeps its
 * source consumed, and the message says so. Returns `rc`, the status of
 * the roll-back so far, or BF_EIO when that was BF_OK and a marker stayed.
 */
static int unmark_consumed(bf_file *f, int rc, const char *op)
{
    bf_space *sp = f->seg.space;
    bf_named *nm = f->named;
    char path[4096], why[BF_ERRMSG_MAX];
    for (uint32_t i = nm->kept_parts; i < nm->nparts; i++) {
        if (!nm->parts[i].marked)
            continue;
        marker_path(nm->dir, nm->parts[i].name, strlen(nm->parts[i].name), path, sizeof(path));
        if (sp->ios.io.unlink(sp->ios.io.ctx, path) != 0 && errno != ENOENT) {
            int e = errno;
            snprintf(why, sizeof(why), "%s", rc != BF_OK ? bf_space_errmsg(sp) : "");
            rc = bf_fail(sp, rc != BF_OK ? rc : BF_EIO, op, path, e,
                         "%s%sthe splice was rolled back, but its source %s stays consumed: its "
                         "marker could not be removed",
                         why, why[0] ? "; " : "", nm->parts[i].name);
        }
    }
    return rc;
}

int bf_file_create_named(bf_space *sp, const char *dir, const char *name,
                         const bf_file_options *opts, bf_file **out)
{
    *out = NULL;
    int rc = check_name(sp, "create", dir, name);
    if (rc != BF_OK)
        return rc;
    bf_file *f;
    if ((rc = bf_file_create(sp, opts, &f)) != BF_OK)
        return rc;
    if ((rc = attach_named(f, dir, name)) == BF_OK) {
        f->named->gen = 1;
        if (f->sealed) /* a nonce: no other file sealed under this key has it */
            bf_seal_nonce(sp->seal, f->named->file_id);
        rc = bf_seg_reserve(&f->seg); /* takes the name at once, O_EXCL */
        if (rc != BF_OK && sp->err.errnum == ENOENT)
            rc = bf_fail(sp, BF_ENOENT, "create", dir, ENOENT, "file set directory");
        /* The head's bytes are the file's from the start: its extents follow them. */
        else if (rc == BF_OK && (rc = bf_seg_resize(&f->seg, BF_HEAD_BYTES)) != BF_OK)
            bf_seg_remove(&f->seg); /* the name was ours: give it back */
        else if (rc == BF_OK)
            bf_file_set_physical(f, BF_HEAD_BYTES, BF_HEAD_BYTES);
    }
    if (rc != BF_OK) {
        f->readonly = 1; /* nothing to persist, and never delete a name someone else holds */
        if (f->named != NULL)
            bf_named_close(f);
        else
            bf_file_discard(f);
        return rc;
    }
    *out = f;
    return BF_OK;
}

/* ---- persisting and loading the index ---------------------------------- */

/* Segments a named file with `bytes` physical bytes keeps: segment 0 holds its name. */
static uint32_t segs_for(const bf_space *sp, uint64_t bytes)
{
    uint64_t n = (bytes + sp->segment_size - 1) / sp->segment_size;
    return n > 0 ? (uint32_t)n : 1;
}

/* Read or write `len` bytes at physical offset `off` of a row, across segment boundaries. */
static int span_io(bf_seg *seg, uint64_t off, unsigned char *buf, uint64_t len, int write)
{
    uint64_t ss = seg->space->segment_size;
    while (len > 0) {
        uint64_t n = ss - off % ss;
        if (n > len)
            n = len;
        struct iovec v = {buf, (size_t)n};
        int rc = write ? bf_seg_write(seg, off, &v, 1, (size_t)n) : bf_seg_read(seg, off, buf, n);
        if (rc != BF_OK)
            return rc;
        off += n;
        buf += n;
        len -= n;
    }
    return BF_OK;
}

/*
 * Where a session's index of `len` bytes goes, its live extents ending at
 * `end`: not over the version it started from (kept extents all lie below
 * that version's extent end, its index at idx_off) - just past the live
 * extents when it fits below the old index, else past the old index. So
 * the file stays within its live extents and two indexes, and the next
 * session places its index low again once the old one is out of the way.
 */
static uint64_t index_place(const bf_file *f, uint64_t end, uint64_t len)
{
    const bf_named *nm = f->named;
    if (!nm->persisted)
        return end;
    uint64_t old_end = nm->idx_off + nm->idx_len;
    if (end >= nm->kept_extents && end + len <= nm->idx_off)
        return end;
    return end > old_end ? end : old_end;
}

/*
 * Flush a named file and write its index into the file, then the slot of
 * its generation in the head, recording the extents as they are: physical
 * end = where the live extents end. On success the file's version is this
 * one (bf_named.persisted); on failure the previous version, if any, is
 * untouched (its slot, index and extents were not written).
 */
static int named_persist(bf_file *f)
{
    bf_space *sp = f->seg.space;
    int rc = bf_file_flush(f);
    if (rc != BF_OK)
        return rc;
    bf_named *nm = f->named;
    /* The index about to be durable holds the parts spliced in since the last one: their
       sources are consumed from now on (made sure of again: another target's rollback may
       have taken a marker back that this one shares). */
    if (nm->nparts > nm->kept_parts &&
        (rc = mark_consumed(sp, nm->dir, nm->parts + nm->kept_parts, nm->nparts - nm->kept_parts,
                            "export")) != BF_OK)
        return rc;
    uint64_t end = bf_file_live_end(f);
    bf_index idx;
    memset(&idx, 0, sizeof(idx));
    idx.block_size = f->block_size;
    idx.codec = (uint8_t)bf_file_codec(f); /* auto stays auto after a reopen */
    idx.level = f->level;
    idx.size = f->size;
    idx.segment_size = sp->segment_size;
    idx.phys_end = end;
    idx.nparts = nm->nparts;
    idx.nblocks = f->map.n;
    idx.gen = nm->gen;
    memcpy(idx.file_id, nm->file_id, sizeof(idx.file_id));
    if (sp->seal != NULL) { /* every index a key's space writes is tagged, sealed file or not */
        idx.flags = BF_INDEX_TAGGED | (f->sealed ? BF_INDEX_SEALED : 0);
        memcpy(idx.kcv, bf_seal_kcv(sp->seal), BF_KCV_BYTES);
    }
    if (bf_codec_is_user(idx.codec))
        snprintf(idx.codec_name, sizeof(idx.codec_name), "%s",
                 bf_space_codec_name(sp, (bf_codec)idx.codec));
    bf_index_part *parts = bf_calloc(&sp->alloc, nm->nparts ? nm->nparts : 1, sizeof(*parts));
    if (parts == NULL)
        return bf_fail(sp, BF_ENOMEM, "export", nm->prefix, 0, "index parts");
    for (uint32_t i = 0; i < nm->nparts; i++) {
        parts[i].name = nm->parts[i].name;
        parts[i].name_len = (uint16_t)strlen(nm->parts[i].name);
        parts[i].nsegs = nm->parts[i].seg.nsegs;
        parts[i].gen = nm->parts[i].gen;
        parts[i].bytes = nm->parts[i].bytes;
        parts[i].blk_delta = nm->parts[i].blk_delta;
        memcpy(parts[i].file_id, nm->parts[i].file_id, sizeof(parts[i].file_id));
    }
    idx.parts = parts;
    size_t len = bf_index_size(&idx, &f->map);
    idx.idx_off = index_place(f, end, len);
    idx.nsegs = segs_for(sp, idx.idx_off + len);
    uint64_t file_end = idx.idx_off + len;
    /* The index is on disk like the extents: it counts against the temp limit. */
    uint64_t grow = file_end > f->phys_end ? file_end - f->phys_end : 0;
    if (f->counted && sp->temp_limit != 0 && sp->physical_now + grow > sp->temp_limit) {
        bf_free(&sp->alloc, parts);
        return bf_fail(sp, BF_ELIMIT, "export", nm->prefix, 0,
                       "temp limit of %llu bytes reached (%llu in use, index of %zu bytes)",
                       (unsigned long long)sp->temp_limit, (unsigned long long)sp->physical_now,
                       len);
    }
    if (f->counted && grow > 0 &&
        (rc = bf_budget_reserve(sp, grow, "export", nm->prefix)) != BF_OK) {
        bf_free(&sp->alloc, parts);
        return rc;
    }
    unsigned char *buf = bf_malloc(&sp->alloc, len);
    if (buf == NULL) {
        bf_free(&sp->alloc, parts);
        bf_budget_sync(sp); /* what the budget reserved for the index */
        return bf_fail(sp, BF_ENOMEM, "export", nm->prefix, 0, "index of %zu bytes", len);
    }
    rc = bf_index_encode(&idx, &f->map, sp->seal, buf);
    bf_free(&sp->alloc, parts);
    if (rc == BF_OK)
        rc = span_io(&f->seg, idx.idx_off, buf, len, 1);
    else
        rc = bf_fail(sp, rc, "export", nm->prefix, 0, "sealing the index");
    bf_free(&sp->alloc, buf);
    if (rc == BF_OK) {
        unsigned char slot[BF_HEAD_SLOT];
        bf_head_encode(&(bf_head_slot){nm->gen, idx.idx_off, len}, slot);
        struct iovec v = {slot, sizeof(slot)};
        rc = bf_seg_write(&f->seg, bf_head_slot_at(nm->gen), &v, 1, sizeof(slot));
        /* A slot written in part beside no valid one would read as a damaged head, not as a
           file never persisted: the first session's slot goes back to zeros (best effort; a
           later session's torn slot is ignored beside the previous one). */
        if (rc != BF_OK && !nm->persisted) {
            char why[sizeof(sp->err.msg)];
            int e = sp->err.errnum;
            memcpy(why, sp->err.msg, sizeof(why)); /* the failure the caller is told of */
            memset(slot, 0, sizeof(slot));
            bf_seg_write(&f->seg, bf_head_slot_at(nm->gen), &v, 1, sizeof(slot));
            memcpy(sp->err.msg, why, sizeof(why));
            sp->err.errnum = e;
        }
    }
    if (rc != BF_OK) {
        if (grow > 0)
            bf_seg_resize(&f->seg, f->phys_end); /* best effort: what the index write added */
        bf_budget_sync(sp);                      /* what the budget reserved for it */
        return rc;
    }
    nm->persisted = 1;
    nm->kept_parts = nm->nparts;
    nm->idx_off = idx.idx_off;
    nm->idx_len = len;
    nm->kept_extents = end;
    bf_file_set_physical(f, f->phys_end + grow, BF_HEAD_BYTES + len);
    return BF_OK;
}

/*
 * After a new version is durable, nothing needs the bytes past its index:
 * give them back, unless the file was consumed by an append, whose target
 * may point at extents this session no longer has. A failure here leaves
 * dead bytes that the set's removal takes; it is not the caller's.
 */
static void trim_after_persist(bf_file *f)
{
    bf_named *nm = f->named;
    if (consumed(f->seg.space, nm->dir, nm->name) != 0)
        return;
    nm->kept_end = 0;
    uint64_t end = nm->idx_off + nm->idx_len;
    if (end < f->phys_end && bf_seg_resize(&f->seg, end) == BF_OK) {
        bf_free_drop_beyond(&f->free, bf_file_alloc(f), f->seg.space->segment_size, end);
        bf_file_set_physical(f, end, nm->idx_bytes);
    }
}

int bf_file_export(bf_file *f)
{
    if (f->named == NULL)
        return bf_fail(f->seg.space, BF_EINVAL, "export", NULL, 0,
                       "only files of a file set can be exported");
    if (f->readonly)
        return BF_OK;
    int rc = named_persist(f);
    if (rc != BF_OK)
        return rc;
    f->readonly = 1;
    trim_after_persist(f);
    return BF_OK;
}

/*
 * A never-persisted file whose close failed (`rc`) goes, and its name with
 * it. If a segment cannot be removed, bf_seg_remove leaves segments 0..k:
 * with no index no open finds a file, but segment 0 still holds the name,
 * as after a writer that died before its first persist, and
 * bf_file_delete_named or the set's removal take them. The status stays
 * the persist's (the cause the caller can act on); the message gets both.
 */
static void remove_unpersisted(bf_file *f, int rc)
{
    bf_space *sp = f->seg.space;
    char why[BF_ERRMSG_MAX], left[BF_ERRMSG_MAX];
    snprintf(why, sizeof(why), "%s", bf_space_errmsg(sp));
    if (bf_seg_remove(&f->seg) == BF_OK)
        return;
    snprintf(left, sizeof(left), "%s", bf_space_errmsg(sp));
    bf_fail(sp, rc, "close", NULL, 0,
            "%s; the never-persisted file could not be deleted: its segments 0..%u stay, "
            "holding the name until bf_file_delete_named or the set's removal (%s)",
            why, f->seg.nsegs - 1, left);
}

int bf_named_close(bf_file *f)
{
    bf_named *nm = f->named;
    int rc = BF_OK;
    if (!f->readonly) {
        rc = named_persist(f);
        if (rc == BF_OK)
            trim_after_persist(f);
        else if (nm->persisted)
            bf_seg_resize(&f->seg, nm->kept_end); /* roll back: the old index is intact */
        else
            remove_unpersisted(f, rc);
        if (rc != BF_OK)
            unmark_consumed(f, rc, "close");
    }
    named_release(f);
    bf_file_release(f);
    return rc;
}

int bf_named_abort(bf_file *f)
{
    bf_named *nm = f->named;
    int rc = BF_OK;
    if (!f->readonly) {
        /* A set directory removed under the handle took the segments with it. */
        if (nm->persisted)
            rc = bf_seg_resize(&f->seg, nm->kept_end);
        else
            rc = bf_seg_remove(&f->seg);
        if (rc != BF_OK && f->seg.space->err.errnum == ENOENT)
            rc = BF_OK;
        rc = unmark_consumed(f, rc, "abort");
    }
    named_release(f);
    bf_file_release(f);
    return rc;
}

/*
 * Read the head of the named file `seg` (a named row, its segment count
 * not known yet) and the index its newest slot names, into an allocated
 * buffer. Afterwards `seg` counts the segments up to the index's end, with
 * segment 0 open.
 */
static int read_index(bf_seg *seg, unsigned char **out, size_t *len, bf_head_slot *slot)
{
    bf_space *sp = seg->space;
    unsigned char head[BF_HEAD_BYTES];
    size_t got = 0;
    const char *why = NULL;
    int rc = bf_seg_read_head(seg, head, sizeof(head), &got);
    if (rc != BF_OK)
        return rc;
    char path[4096];
    bf_seg_path(seg, 0, path, sizeof(path));
    rc = bf_head_decode(head, got, slot, &why);
    if (rc == BF_ENOENT)
        return bf_fail(sp, BF_ENOENT, "open", path, ENOENT,
                       "no index: the file was never exported or closed");
    if (rc != BF_OK)
        return bf_fail(sp, rc, "open", path, 0, "%s", why);
    uint64_t ss = sp->segment_size, end = slot->off + slot->len;
    if (slot->len > SIZE_MAX || (end + ss - 1) / ss > UINT32_MAX)
        return bf_fail(sp, BF_ECORRUPT, "open", path, 0, "index of %llu bytes at %llu",
                       (unsigned long long)slot->len, (unsigned long long)slot->off);
    seg->nsegs = (uint32_t)((end + ss - 1) / ss);
    /* No length from disk reaches the allocator before the file is known to hold that many
       bytes: an index that fits the scratch buffer is read there first (no extra call), a
       larger one's last byte is read first. */
    int staged = slot->len <= sp->scratch_size;
    unsigned char last;
    rc = staged ? span_io(seg, slot->off, sp->scratch, slot->len, 0)
                : bf_seg_read(seg, end - 1, &last, 1);
    if (rc != BF_OK)
        return rc == BF_ECORRUPT ? bf_fail(sp, rc, "open", path, 0,
                                           "the head names an index past the file's end "
                                           "(truncated or corrupt)")
                                 : rc;
    unsigned char *buf = bf_malloc(&sp->alloc, (size_t)slot->len);
    if (buf == NULL)
        return bf_fail(sp, BF_ENOMEM, "open", path, 0, "index of %llu bytes",
                       (unsigned long long)slot->len);
    if (staged)
        memcpy(buf, sp->scratch, (size_t)slot->len);
    else if ((rc = span_io(seg, slot->off, buf, slot->len, 0)) != BF_OK) {
        bf_free(&sp->alloc, buf);
        return rc;
    }
    *out = buf;
    *len = (size_t)slot->len;
    return BF_OK;
}

/*
 * Check a part's segment files against the index: the last byte before
 * its physical end exists (a shorter file means segments and index
 * differ), and so do the first and the last segment the index counts.
 */
static int check_segments(bf_seg *seg, uint64_t bytes)
{
    uint64_t ss = seg->space->segment_size;
    uint64_t probe[3] = {bytes - 1, 0, (uint64_t)(seg->nsegs - 1) * ss};
    size_t plen[3] = {1, 0, 0};
    for (int i = bytes > 0 ? 0 : 1; i < 3 && seg->nsegs > 0; i++) {
        unsigned char b;
        int rc = bf_seg_read(seg, probe[i], &b, plen[i]);
        /* A missing or short segment is corruption; an I/O error stays one (EIO). */
        if (rc == BF_ECORRUPT) {
            char path[4096];
            bf_seg_path(seg, (uint32_t)(probe[i] / ss), path, sizeof(path));
            return bf_fail(seg->space, BF_ECORRUPT, "open", path, 0,
                           "segment files do not match the index (missing or truncated)");
        }
        if (rc != BF_OK)
            return rc;
    }
    return BF_OK;
}

/* Sift c[i] down the max-heap c[0..n) ordered by offset. */
static void sift_down(bf_chunk *c, uint32_t i, uint32_t n)
{
    for (;;) {
        uint32_t big = i, l = 2 * i + 1, r = l + 1;
        if (l < n && c[l].off > c[big].off)
            big = l;
        if (r < n && c[r].off > c[big].off)
            big = r;
        if (big == i)
            return;
        bf_chunk t = c[i];
        c[i] = c[big];
        c[big] = t;
        i = big;
    }
}

/*
 * Sort by offset in place: heapsort, because a map rewritten by a sort's
 * tapes is far from ordered (insertion sort would be quadratic) and qsort
 * may allocate behind the space's allocator.
 */
static void sort_by_offset(bf_chunk *c, uint32_t n)
{
    for (uint32_t i = n / 2; i-- > 0;)
        sift_down(c, i, n);
    for (uint32_t end = n; end > 1; end--) {
        bf_chunk t = c[0];
        c[0] = c[end - 1];
        c[end - 1] = t;
        sift_down(c, 0, end - 1);
    }
}

/*
 * The file's own extents (part 0) in offset order: straight from the map
 * when it already is in that order, as a sequentially written file's is,
 * else from a sorted copy (`sorted`, n chunks).
 */
typedef struct own_extents {
    const bf_blockmap *map;
    uint64_t b;
    bf_chunk *sorted;
    uint32_t n, i;
} own_extents;

static int own_next(own_extents *it, bf_chunk *out)
{
    if (it->sorted != NULL) {
        if (it->i == it->n)
            return 0;
        *out = it->sorted[it->i++];
        return 1;
    }
    const bf_map_entry *e;
    while ((e = bf_map_next(it->map, &it->b)) != NULL) {
        it->b++;
        if (bf_map_part(e) == 0) {
            *out = (bf_chunk){bf_map_off(e), bf_map_room(e), 0};
            return 1;
        }
    }
    return 0;
}

/*
 * Rebuild the free list of a file reopened for writing: the gaps between
 * its own extents. Extents that overlap are refused as corrupt: freeing
 * one of them on a rewrite would hand out bytes the other still holds.
 */
static int rebuild_free(bf_file *f, uint64_t phys_end)
{
    bf_space *sp = f->seg.space;
    const char *prefix = f->named->prefix;
    own_extents it = {&f->map, 0, NULL, 0, 0};
    int ordered = 1;
    bf_chunk ch;
    for (uint64_t last = 0; own_next(&it, &ch); last = ch.off) {
        ordered &= ch.off >= last;
        it.n++;
    }
    it.b = 0;
    if (!ordered) {
        /* A copy of 16 bytes per extent only when rewrites left the map out of order. */
        bf_chunk *sorted = bf_malloc(&sp->alloc, (size_t)it.n * sizeof(*sorted));
        if (sorted == NULL)
            return bf_fail(sp, BF_ENOMEM, "open", prefix, 0, "free list of %u extents", it.n);
        for (uint32_t k = 0; own_next(&it, &ch); k++)
            sorted[k] = ch;
        sort_by_offset(sorted, it.n);
        it.sorted = sorted;
    }
    int rc = BF_OK;
    uint64_t pos = BF_HEAD_BYTES; /* the head is never free */
    for (;;) {
        int more = own_next(&it, &ch);
        uint64_t next = more ? ch.off : phys_end;
        if (next < pos) {
            rc = bf_fail(sp, BF_ECORRUPT, "open", prefix, 0,
                         "index maps two extents onto the bytes at offset %llu",
                         (unsigned long long)next);
            break;
        }
        while (pos < next) { /* a gap, cut at segment boundaries */
            uint64_t seg_end = (pos / sp->segment_size + 1) * sp->segment_size;
            uint64_t end = next < seg_end ? next : seg_end;
            bf_free_put(&f->free, bf_file_alloc(f), sp->segment_size, pos, (uint32_t)(end - pos));
            pos = end;
        }
        if (!more)
            break;
        pos = ch.off + ch.cap;
    }
    bf_free(&sp->alloc, it.sorted);
    return rc;
}

/*
 * Remove the segments "<prefix>.<first>", "<prefix>.<first + 1>", ... that
 * exist, from the last down, as bf_seg_remove does: a removal that fails
 * half way leaves first..k, which the next try finds. Removing from `first`
 * up would leave the segments after a failure for good, past a gap no
 * count from `first` reaches, and a writer needing one would fail to create
 * it (O_EXCL). *found says whether there were any.
 */
static int remove_segments(bf_space *sp, const char *prefix, uint32_t first, const char *op,
                           const char *why, int *found)
{
    char path[4096];
    uint32_t end = first;
    for (;; end++) {
        snprintf(path, sizeof(path), "%s.%u", prefix, end);
        if (access(path, F_OK) != 0)
            break;
    }
    *found = end > first;
    for (; end > first; end--) {
        snprintf(path, sizeof(path), "%s.%u", prefix, end - 1);
        if (sp->ios.io.unlink(sp->ios.io.ctx, path) != 0 && errno != ENOENT)
            return why != NULL ? bf_fail(sp, BF_EIO, op, path, errno, "%s", why)
                               : bf_fail(sp, BF_EIO, op, path, errno, NULL);
    }
    return BF_OK;
}

/*
 * A writer creates the segments after the last one the index counts (with
 * O_EXCL, so that nothing planted is ever written through). Segments found
 * there were left by a session that died before its index was durable
 * (the index is the truth, and it does not point into them): a read-write
 * open removes them, or the first write needing one would fail long after
 * the open said all was well. Bytes past the index's physical end in its
 * last segment (such a session's, or a tail an export or close could not give
 * back) are cut too: a writer's physical bytes are its segments' sizes, as
 * bf_stats says and the temp limit counts.
 */
static int cut_to_index(bf_file *f, uint64_t phys_end)
{
    int found;
    int rc = remove_segments(f->seg.space, f->named->prefix, f->seg.nsegs, "open",
                             "removing a segment a failed session left", &found);
    return rc != BF_OK ? rc : bf_seg_resize(&f->seg, phys_end);
}

/* An index entry into the map of the file being opened (`ctx`); `kept` marks part-0 extents. */
typedef struct loader {
    bf_file *f;
    uint32_t kept;
} loader;

static int load_entry(void *ctx, uint32_t blkno, const bf_map_entry *e)
{
    loader *l = ctx;
    if (bf_map_slot(&l->f->map, bf_file_alloc(l->f), blkno) == NULL)
        return BF_ENOMEM;
    bf_map_entry v = *e;
    if (bf_map_part(e) == 0)
        v.len |= l->kept;
    bf_map_put(&l->f->map, blkno, &v);
    return BF_OK;
}

/* Fill an opened file from a decoded index: parts, segments, map. */
static int load_index(bf_file *f, const bf_index *idx, const unsigned char *buf, size_t len,
                      int mode)
{
    bf_space *sp = f->seg.space;
    bf_named *nm = f->named;
    const bf_allocator *a = bf_file_alloc(f);
    if (idx->nparts > 0) {
        nm->parts = bf_calloc(a, idx->nparts, sizeof(*nm->parts));
        if (nm->parts == NULL)
            return bf_fail(sp, BF_ENOMEM, "open", nm->prefix, 0, "parts");
    }
    for (uint32_t i = 0; i < idx->nparts; i++) {
        bf_part *p = &nm->parts[i];
        const bf_index_part *ip = &idx->parts[i];
        /* Initialised before it counts: a failed open closes every counted part. */
        bf_seg_init(&p->seg, sp, 0, NULL);
        nm->nparts = i + 1;
        p->name = str_dup(a, ip->name, ip->name_len);
        p->prefix = join(a, nm->dir, ip->name, ip->name_len);
        if (p->name == NULL || p->prefix == NULL)
            return bf_fail(sp, BF_ENOMEM, "open", nm->prefix, 0, "parts");
        p->seg.prefix = p->prefix;
        p->seg.nsegs = ip->nsegs;
        p->bytes = ip->bytes;
        p->blk_delta = ip->blk_delta;
        memcpy(p->file_id, ip->file_id, sizeof(p->file_id));
        p->gen = ip->gen;
    }
    f->seg.nsegs = idx->nsegs;
    nm->kept_parts = nm->nparts;
    /* A writer keeps every extent of the index it starts from until a new index is durable. */
    loader l = {f, mode == BF_OPEN_READWRITE ? BF_MAP_KEPT : 0};
    if (bf_index_each(idx, buf, len, load_entry, &l) != BF_OK)
        return bf_fail(sp, BF_ENOMEM, "open", nm->prefix, 0, "block map of %u blocks",
                       idx->nblocks);
    /* The file's own segments were read to the index's end, the file's last byte. */
    int rc = BF_OK;
    for (uint32_t i = 0; rc == BF_OK && i < nm->nparts; i++)
        rc = check_segments(&nm->parts[i].seg, nm->parts[i].bytes);
    return rc;
}

/*
 * What opening a decoded index needs of the space beyond its layout: the
 * key a sealed file was sealed with (its check value tells another key
 * from an index altered, which the index's tag then tells), and the
 * caller's codec a file was written with.
 */
static int check_keys_and_codec(bf_space *sp, const char *prefix, const bf_index *idx,
                                const unsigned char *buf, size_t len, int mode)
{
    const char *why = NULL;
    int sealed = (idx->flags & BF_INDEX_SEALED) != 0, tagged = (idx->flags & BF_INDEX_TAGGED) != 0;
    if (sealed && sp->seal == NULL)
        return bf_fail(sp, BF_EKEY, "open", prefix, 0,
                       "the file is sealed and this space has no key (encrypt, with the key it "
                       "was sealed with)");
    /* A space with a key opens only what a space with its key wrote: else whoever can write
       the directory could strip a sealed file's seal, or put any file in its place. */
    if (!tagged && sp->seal != NULL)
        return bf_fail(sp, BF_EKEY, "open", prefix, 0,
                       "the file's index carries no tag: written by a space without a key (or a "
                       "sealed file stripped of its seal); a space with a key opens only files "
                       "written under its key");
    if (tagged && sp->seal == NULL && mode == BF_OPEN_READWRITE)
        return bf_fail(sp, BF_EKEY, "open", prefix, 0,
                       "the file was written under a key: rewriting it needs a space with that "
                       "key");
    if (tagged && sp->seal != NULL && memcmp(idx->kcv, bf_seal_kcv(sp->seal), BF_KCV_BYTES) != 0)
        return bf_fail(sp, BF_EKEY, "open", prefix, 0,
                       sealed ? "the file was sealed with another key"
                              : "the file was written under another key");
    if (tagged && sp->seal != NULL && bf_index_verify(sp->seal, buf, len, &why) != BF_OK)
        return bf_fail(sp, BF_ECORRUPT, "open", prefix, 0, "%s", why);
    const bf_codec_ops *ops =
        bf_codec_is_user(idx->codec) ? bf_space_codec_ops(sp, (bf_codec)idx->codec) : NULL;
    if (bf_codec_is_user(idx->codec) && ops == NULL)
        return bf_fail(sp, BF_ENOCODEC, "open", prefix, 0,
                       "the file was written with the caller's codec %s (id %d), which this "
                       "space was not given",
                       idx->codec_name, (int)idx->codec);
    /* An id names a codec only within a space: another space may give it to another one. */
    if (ops != NULL && strcmp(ops->name, idx->codec_name) != 0)
        return bf_fail(sp, BF_ENOCODEC, "open", prefix, 0,
                       "the file was written with the caller's codec %s (id %d), and this "
                       "space's codec of that id is %s",
                       idx->codec_name, (int)idx->codec, ops->name);
    return BF_OK;
}

int bf_file_open_named(bf_space *sp, const char *dir, const char *name, int mode, bf_file **out)
{
    return bf_file_open_named_opts(sp, dir, name, mode, NULL, out);
}

int bf_file_open_named_opts(bf_space *sp, const char *dir, const char *name, int mode,
                            const bf_file_options *opts, bf_file **out)
{
    *out = NULL;
    int rc = check_name(sp, "open", dir, name);
    if (rc != BF_OK)
        return rc;
    /* Only the file's allocator is the caller's to choose: the rest is the index's. */
    bf_file_options oo;
    bf_file_options_init(&oo);
    char owhy[256];
    if (opts != NULL && bf_abi_read(&oo, &bf_abi_file_options, opts, owhy, sizeof(owhy)) != BF_OK)
        return bf_fail(sp, BF_EINVAL, "open", name, 0, "%s", owhy);
    if (mode != BF_OPEN_READONLY && mode != BF_OPEN_READWRITE)
        return bf_fail(sp, BF_EINVAL, "open", name, 0, "bad mode %d", mode);
    char prefix[4000];
    if (snprintf(prefix, sizeof(prefix), "%s/%s", dir, name) >= (int)sizeof(prefix))
        return bf_fail(sp, BF_EINVAL, "open", name, 0, "path too long");
    if (mode == BF_OPEN_READWRITE && (rc = refuse_consumed(sp, "open", dir, name)) != BF_OK)
        return rc;
    /* Segment 0's descriptor, opened to read the index, goes on to the file. */
    bf_seg head;
    bf_seg_init(&head, sp, 0, prefix);
    unsigned char *buf = NULL;
    size_t len = 0;
    bf_head_slot slot;
    bf_index idx = {0};
    const char *why = NULL;
    bf_index_part *parts = NULL;
    rc = read_index(&head, &buf, &len, &slot);
    if (rc == BF_OK) {
        rc = bf_index_decode(buf, len, &idx, &why);
        if (rc == BF_OK && (idx.gen != slot.gen || idx.idx_off != slot.off)) {
            rc = BF_ECORRUPT;
            why = "index does not match the head's slot";
        }
        if (rc == BF_OK) {
            parts = bf_calloc(&sp->alloc, idx.nparts ? idx.nparts : 1, sizeof(*parts));
            idx.parts = parts;
            rc = parts ? bf_index_decode_body(buf, len, &idx, &why) : BF_ENOMEM;
        }
        if (rc == BF_ENOMEM)
            rc = bf_fail(sp, rc, "open", prefix, 0, "index parts");
        else if (rc != BF_OK)
            rc = bf_fail(sp, rc, "open", prefix, 0, "index at %llu: %s",
                         (unsigned long long)slot.off, why);
        else if (idx.segment_size != sp->segment_size)
            rc =
                bf_fail(sp, BF_EINVAL, "open", prefix, 0,
                        "file has %llu-byte segments, this space uses %llu",
                        (unsigned long long)idx.segment_size, (unsigned long long)sp->segment_size);
        else if (mode == BF_OPEN_READWRITE && idx.gen == UINT32_MAX)
            rc =
                bf_fail(sp, BF_EINVAL, "open", prefix, 0, "no generation left for another session");
        else
            rc = check_keys_and_codec(sp, prefix, &idx, buf, len, mode);
    }
    bf_file *f = NULL;
    if (rc == BF_OK) {
        bf_file_options fo;
        bf_file_options_init(&fo);
        fo.codec = (bf_codec)idx.codec;
        fo.level = idx.codec == BF_CODEC_AUTO ? BF_LEVEL_DEFAULT : idx.level;
        fo.block_size = idx.block_size;
        fo.alloc_ctx = oo.alloc_ctx;
        rc = bf_file_new(sp, &fo, &f);
    }
    if (rc == BF_OK && (rc = attach_named(f, dir, name)) == BF_OK) {
        f->sealed = (idx.flags & BF_INDEX_SEALED) != 0; /* the file's, not this space's */
        memcpy(f->named->file_id, idx.file_id, sizeof(idx.file_id));
        bf_seg_move(&f->seg, &head);
        rc = load_index(f, &idx, buf, len, mode);
    }
    uint64_t file_end = idx.idx_off + len;
    if (rc == BF_OK && mode == BF_OPEN_READWRITE && (rc = cut_to_index(f, file_end)) == BF_OK)
        rc = rebuild_free(f, idx.idx_off);
    bf_seg_close(&head);
    bf_free(&sp->alloc, parts);
    bf_free(&sp->alloc, buf);
    if (rc != BF_OK) {
        if (f != NULL) {
            /* Never persist or account a half-loaded file: it was never adopted. */
            bf_map_shrink(&f->map, bf_file_alloc(f), 0);
            f->readonly = 1;
            bf_named_close(f);
        }
        return rc;
    }
    bf_named *nm = f->named;
    nm->persisted = 1;
    nm->idx_off = idx.idx_off;
    nm->idx_len = len;
    nm->kept_extents = idx.phys_end;
    f->readonly = mode == BF_OPEN_READONLY;
    /* A writer's bytes are its space's; a reader's are not (the writer's space counted them). */
    f->counted = mode == BF_OPEN_READWRITE;
    nm->gen = f->readonly ? idx.gen : idx.gen + 1;
    nm->kept_end = f->readonly ? 0 : file_end;
    bf_file_adopt(f, idx.size, file_end, BF_HEAD_BYTES + len);
    *out = f;
    return BF_OK;
}

int bf_file_delete_named(bf_space *sp, const char *dir, const char *name)
{
    int rc = check_name(sp, "delete", dir, name);
    if (rc == BF_OK)
        rc = refuse_consumed(sp, "delete", dir, name);
    if (rc != BF_OK)
        return rc;
    char path[4096];
    int segments;
    /* Segment 0 holds the name and the head: it goes last, so a failed delete leaves a name to
       retry. */
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((rc = remove_segments(sp, path, 0, "delete", NULL, &segments)) != BF_OK)
        return rc;
    if (!segments)
        return bf_fail(sp, BF_ENOENT, "delete", name, 0, "no such file in set %s", dir);
    return BF_OK;
}

/* ---- append ------------------------------------------------------------ */

/* Whether `source` is `target`'s file, or holds it as a part: a file is (set, name). */
static int same_file(const bf_named *target, const bf_named *source)
{
    if (strcmp(target->name, source->name) == 0)
        return 1;
    for (uint32_t i = 0; i < source->nparts; i++)
        if (strcmp(target->name, source->parts[i].name) == 0)
            return 1;
    return 0;
}

/*
 * Whether the index of `name` in set `dir` is still the one of generation
 * `gen` a read-only handle was opened at (or exported as): a later
 * read-write session may have cut or reused the extents the handle maps,
 * and a target that took them as a part would lose them. An outdated
 * handle (or one whose file was deleted since) is BF_EINVAL.
 */
static int still_current(bf_space *sp, const char *dir, const char *name, uint32_t gen)
{
    char prefix[4096];
    snprintf(prefix, sizeof(prefix), "%s/%s", dir, name);
    bf_seg seg;
    bf_seg_init(&seg, sp, 0, prefix);
    unsigned char head[BF_HEAD_BYTES];
    size_t got = 0;
    bf_head_slot slot = {0};
    const char *why = NULL;
    int rc = bf_seg_read_head(&seg, head, sizeof(head), &got);
    bf_seg_close(&seg);
    if (rc == BF_OK && (rc = bf_head_decode(head, got, &slot, &why)) == BF_ECORRUPT)
        return bf_fail(sp, rc, "append", prefix, 0, "%s", why);
    if (rc == BF_ENOENT || (rc == BF_OK && slot.gen != gen))
        return bf_fail(sp, BF_EINVAL, "append", prefix, 0,
                       "the source is an outdated handle: it reads version %u of %s, which a "
                       "later read-write session replaced%s; reopen it",
                       gen, name, rc == BF_ENOENT ? " (or the file was deleted)" : "");
    return rc;
}

/* Whether two set directories are one: a file is (set, name), whatever path reaches it. */
static int same_set(bf_space *sp, const char *a, const char *b, int *same)
{
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return bf_fail(sp, BF_EIO, "append", a, errno, "examining the set directories");
    *same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return BF_OK;
}

int bf_file_append(bf_file *target, bf_file *source, uint64_t *start)
{
    bf_space *sp = target->seg.space;
    const bf_allocator *a = bf_file_alloc(target);
    bf_named *tn = target->named, *sn = source->named;
    const char *why = NULL;
    int one_set = 0;
    if (tn != NULL && sn != NULL && same_set(sp, tn->dir, sn->dir, &one_set) != BF_OK)
        return BF_EIO;
    if (tn == NULL || sn == NULL)
        why = "both files must belong to a file set";
    else if (!one_set)
        why = "the files belong to different sets";
    else if (same_file(tn, sn))
        why = "a file cannot be appended to itself (the source is, or holds, the target)";
    else if (!source->readonly)
        why = "the source must be read-only (exported or opened read-only)";
    else if (target->block_size != source->block_size)
        why = "block sizes differ";
    else if (target->sealed != source->sealed)
        why = "one file is sealed and the other is not";
    else if (target->sealed &&
             memcmp(bf_seal_kcv(sp->seal), bf_seal_kcv(source->seg.space->seal), BF_KCV_BYTES) != 0)
        why = "the files are sealed with different keys";
    else if (sp->segment_size != source->seg.space->segment_size)
        why = "segment sizes differ";
    else if ((uint64_t)tn->nparts + 1 + sn->nparts >= BF_MAP_MAX_PARTS)
        why = "too many appended parts";
    if (why != NULL)
        return bf_fail(sp, BF_EINVAL, "append", tn ? tn->prefix : NULL, 0, "%s", why);
    uint32_t bs = target->block_size;
    uint64_t start_blk = (target->size + bs - 1) / bs;
    /* The source's size, holes included, must fit: the target's index could not hold more. */
    if (start_blk + (source->size + bs - 1) / bs > (uint64_t)BF_MAP_MAX_BLOCK + 1)
        return bf_fail(sp, BF_EINVAL, "append", tn->prefix, 0,
                       "the result would exceed the largest file size");

    /* The source's version, and its parts', must be the files' current ones: asked
       before anything is written, so that a refused call is refused whatever writing
       would have met (with workers, settling the target at the temp limit returned
       BF_ELIMIT for an outdated source: the file-set model, seed 56867848 sealed). */
    int rc = still_current(sp, sn->dir, sn->name, sn->gen);
    for (uint32_t i = 0; rc == BF_OK && i < sn->nparts; i++)
        rc = still_current(sp, sn->dir, sn->parts[i].name, sn->parts[i].gen);
    if (rc != BF_OK)
        return rc;
    /* The target's blocks on workers are committed first: the parts go after its map. */
    rc = bf_file_settle(target);
    if (rc != BF_OK)
        return rc;

    /* Room first (map entries, parts), so that nothing can fail once anything changed. */
    uint32_t old_n = target->map.n;
    const bf_map_entry *e;
    for (uint64_t b = 0; (e = bf_map_next(&source->map, &b)) != NULL; b++) {
        if (bf_map_slot(&target->map, a, (uint32_t)(start_blk + b)) == NULL) {
            bf_map_shrink(&target->map, a, old_n);
            return bf_fail(sp, BF_ENOMEM, "append", tn->prefix, 0, "block map");
        }
    }
    /* The parts array moves: no descriptor of the old one may stay in the space's list. */
    for (uint32_t i = 0; i < tn->nparts; i++)
        bf_seg_close(&tn->parts[i].seg);
    uint32_t add = 1 + sn->nparts, first = tn->nparts; /* the source's own part */
    bf_part *parts = bf_realloc(a, tn->parts, (size_t)(tn->nparts + add) * sizeof(*parts));
    rc = parts != NULL ? BF_OK : BF_ENOMEM;
    if (parts != NULL)
        tn->parts = parts;
    for (uint32_t i = 0; i < add && rc == BF_OK; i++) {
        bf_part *p = &parts[first + i];
        const char *name = i == 0 ? sn->name : sn->parts[i - 1].name;
        memset(p, 0, sizeof(*p));
        p->name = str_dup(a, name, strlen(name));
        p->prefix = join(a, tn->dir, name, strlen(name));
        if (p->name == NULL || p->prefix == NULL) {
            for (uint32_t j = 0; j <= i; j++) {
                bf_free(a, parts[first + j].name);
                bf_free(a, parts[first + j].prefix);
            }
            rc = BF_ENOMEM;
        }
    }
    if (rc != BF_OK) {
        bf_map_shrink(&target->map, a, old_n);
        return bf_fail(sp, rc, "append", tn->prefix, 0, "parts");
    }
    /* A writable target persists the splice: the source's bytes are the target's from now
       on. A read-only target is a view for this handle alone. */
    if (!target->readonly &&
        (rc = mark_consumed(sp, tn->dir, parts + first, add, "append")) != BF_OK) {
        for (uint32_t j = 0; j < add; j++) {
            bf_free(a, parts[first + j].name);
            bf_free(a, parts[first + j].prefix);
        }
        bf_map_shrink(&target->map, a, old_n);
        return rc;
    }
    /* The source's own bytes are what its index counts: its live end. The handle's
       physical end can lie past that (a trim after its export that failed), and a
       rollback or a read-write open of the source cuts those bytes: a part reaching
       over them would make the target fail its segment checks at every open. */
    uint64_t src_end = bf_file_live_end(source);
    for (uint32_t i = 0; i < add; i++) {
        bf_part *p = &parts[first + i];
        bf_seg_init(&p->seg, sp, 0, p->prefix);
        p->seg.nsegs = i == 0 ? segs_for(sp, src_end) : sn->parts[i - 1].seg.nsegs;
        p->bytes = i == 0 ? src_end : sn->parts[i - 1].bytes;
        p->blk_delta = start_blk + (i == 0 ? 0 : sn->parts[i - 1].blk_delta);
        p->gen = i == 0 ? sn->gen : sn->parts[i - 1].gen;
        memcpy(p->file_id, i == 0 ? sn->file_id : sn->parts[i - 1].file_id, sizeof(p->file_id));
    }
    tn->nparts += add;
    /* Part k of the source becomes part first + 1 + k of the target (part 0 is the target's). */
    for (uint64_t b = 0; (e = bf_map_next(&source->map, &b)) != NULL; b++) {
        bf_map_entry t = {((uint64_t)(first + 1 + bf_map_part(e)) << BF_MAP_PART_SHIFT) |
                              bf_map_off(e),
                          e->len & ~BF_MAP_KEPT, /* the source's session mark, not the target's */
                          e->cap};
        bf_map_put(&target->map, (uint32_t)(start_blk + b), &t);
    }
    if (target->buf_blk != BF_NO_BLOCK && target->buf_blk >= start_blk)
        target->buf_blk = BF_NO_BLOCK; /* a clean copy of a hole, now the source's block */
    bf_file_set_logical(target, start_blk * bs + source->size);
    *start = start_blk * bs;
    return BF_OK;
}
