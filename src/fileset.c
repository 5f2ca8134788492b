/*
 * fileset.c - named files shared between spaces: create, export, open,
 * append (extent splicing), delete, and the index files behind them.
 *
 * Invariants: a named file's own segments are "<dir>/<name>.<n>"; its
 * index "<dir>/<name>.idx" is replaced atomically (write "<name>.idx.tmp",
 * rename), so an opener sees the old index or the new one, never a mix.
 * Spliced parts are only ever read: their extents are never freed into the
 * target's free list, and their segments are never truncated by it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
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

/* Give `f` its named state: set dir, name, and the segment prefix of its own part. */
static int attach_named(bf_file *f, const char *dir, const char *name)
{
    const bf_allocator *a = &f->space->alloc;
    bf_named *nm = bf_calloc(a, 1, sizeof(*nm));
    if (nm == NULL)
        return bf_fail(f->space, BF_ENOMEM, "open", name, 0, "named file state");
    nm->dir = str_dup(a, dir, strlen(dir));
    nm->name = str_dup(a, name, strlen(name));
    nm->prefix = join(a, dir, name, strlen(name));
    f->named = nm;
    if (nm->dir == NULL || nm->name == NULL || nm->prefix == NULL)
        return bf_fail(f->space, BF_ENOMEM, "open", name, 0, "named file state");
    f->seg.prefix = nm->prefix;
    return BF_OK;
}

void bf_named_release(bf_file *f)
{
    bf_named *nm = f->named;
    const bf_allocator *a = &f->space->alloc;
    bf_seg_close(&f->seg);
    for (uint32_t i = 0; nm != NULL && i < nm->nparts; i++) {
        bf_seg_close(&nm->parts[i].seg);
        bf_free(a, nm->parts[i].name);
        bf_free(a, nm->parts[i].prefix);
    }
    if (nm != NULL) {
        bf_free(a, nm->parts);
        bf_free(a, nm->dir);
        bf_free(a, nm->name);
        bf_free(a, nm->prefix);
        bf_free(a, nm);
    }
    f->named = NULL;
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
    if ((rc = attach_named(f, dir, name)) == BF_OK)
        rc = bf_seg_reserve(&f->seg); /* takes the name at once, O_EXCL */
    if (rc != BF_OK) {
        f->readonly = 1; /* nothing to persist, and never delete a name someone else holds */
        bf_file_close(f);
        return rc;
    }
    *out = f;
    return BF_OK;
}

/* ---- persisting and loading the index ---------------------------------- */

static void index_of(const bf_file *f, bf_index *idx)
{
    memset(idx, 0, sizeof(*idx));
    idx->block_size = f->block_size;
    idx->codec = f->codec;
    idx->level = f->level;
    idx->size = f->size;
    idx->segment_size = f->space->segment_size;
    idx->phys_end = f->phys_end;
    idx->nsegs = f->seg.nsegs;
    idx->nparts = f->named->nparts;
    idx->nblocks = f->map.n;
}

int bf_named_persist(bf_file *f)
{
    bf_space *sp = f->space;
    int rc = bf_file_flush(f);
    if (rc != BF_OK)
        return rc;
    bf_named *nm = f->named;
    bf_index idx;
    index_of(f, &idx);
    bf_index_part *parts = bf_calloc(&sp->alloc, nm->nparts ? nm->nparts : 1, sizeof(*parts));
    if (parts == NULL)
        return bf_fail(sp, BF_ENOMEM, "export", nm->prefix, 0, "index parts");
    for (uint32_t i = 0; i < nm->nparts; i++) {
        parts[i].name = nm->parts[i].name;
        parts[i].name_len = (uint16_t)strlen(nm->parts[i].name);
        parts[i].nsegs = nm->parts[i].seg.nsegs;
        parts[i].bytes = nm->parts[i].bytes;
        parts[i].blk_delta = nm->parts[i].blk_delta;
    }
    idx.parts = parts;
    size_t len = bf_index_size(&idx);
    unsigned char *buf = bf_malloc(&sp->alloc, len);
    if (buf == NULL) {
        bf_free(&sp->alloc, parts);
        return bf_fail(sp, BF_ENOMEM, "export", nm->prefix, 0, "index of %zu bytes", len);
    }
    bf_index_encode(&idx, f->map.e, buf);
    bf_free(&sp->alloc, parts);

    size_t pl = strlen(nm->prefix);
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof(tmp), "%.*s.idx.tmp", (int)pl, nm->prefix);
    snprintf(final, sizeof(final), "%.*s.idx", (int)pl, nm->prefix);
    /* O_EXCL: never write through something planted at that name (a link to another
       file); a stale temp index left by a crash is removed first. */
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = sp->io.open(sp->io.ctx, tmp, flags, S_IRUSR | S_IWUSR);
    if (fd < 0 && errno == EEXIST && sp->io.unlink(sp->io.ctx, tmp) == 0)
        fd = sp->io.open(sp->io.ctx, tmp, flags, S_IRUSR | S_IWUSR);
    if (fd < 0) {
        int e = errno;
        bf_free(&sp->alloc, buf);
        return bf_fail(sp, bf_status_from_errno(e), "export", tmp, e, NULL);
    }
    size_t done = 0;
    rc = BF_OK;
    while (done < len && rc == BF_OK) {
        struct iovec v = {buf + done, len - done};
        ssize_t w = sp->io.pwritev(sp->io.ctx, fd, &v, 1, (off_t)done);
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            rc = bf_fail(sp, bf_status_from_errno(e), "export", tmp, e, "writing the index");
        } else {
            done += (size_t)w;
        }
    }
    sp->io.close(sp->io.ctx, fd);
    bf_free(&sp->alloc, buf);
    if (rc == BF_OK && sp->io.rename(sp->io.ctx, tmp, final) != 0)
        rc = bf_fail(sp, BF_EIO, "export", final, errno, "renaming the index into place");
    if (rc != BF_OK)
        sp->io.unlink(sp->io.ctx, tmp);
    return rc;
}

int bf_file_export(bf_file *f)
{
    if (f->named == NULL)
        return bf_fail(f->space, BF_EINVAL, "export", NULL, 0,
                       "only files of a file set can be exported");
    int rc = f->readonly ? BF_OK : bf_named_persist(f);
    if (rc == BF_OK)
        f->readonly = 1;
    return rc;
}

/* Read the whole index file of `prefix` into an allocated buffer. */
static int read_index(bf_space *sp, const char *prefix, unsigned char **out, size_t *len)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s.idx", prefix) >= (int)sizeof(path))
        return bf_fail(sp, BF_EINVAL, "open", prefix, 0, "path too long");
    int fd = sp->io.open(sp->io.ctx, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        return bf_fail(sp, e == ENOENT ? BF_ENOENT : BF_EIO, "open", path, e,
                       e == ENOENT ? "no index: the file was never exported or closed" : NULL);
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = bf_malloc(&sp->alloc, cap);
    int rc = buf ? BF_OK : bf_fail(sp, BF_ENOMEM, "open", path, 0, "index buffer");
    while (rc == BF_OK) {
        if (n == cap) {
            unsigned char *b = bf_realloc(&sp->alloc, buf, cap * 2);
            if (b == NULL) {
                rc = bf_fail(sp, BF_ENOMEM, "open", path, 0, "index buffer");
                break;
            }
            buf = b;
            cap *= 2;
        }
        ssize_t r = sp->io.pread(sp->io.ctx, fd, buf + n, cap - n, (off_t)n);
        if (r < 0)
            rc = bf_fail(sp, BF_EIO, "open", path, errno, "reading the index");
        else if (r == 0)
            break;
        else
            n += (size_t)r;
    }
    sp->io.close(sp->io.ctx, fd);
    if (rc != BF_OK) {
        bf_free(&sp->alloc, buf);
        return rc;
    }
    *out = buf;
    *len = n;
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
    uint32_t b;
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
    while (it->b < it->map->n) {
        const bf_map_entry *e = &it->map->e[it->b++];
        if (e->cap != 0 && bf_map_part(e) == 0) {
            *out = (bf_chunk){bf_map_off(e), e->cap};
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
    bf_space *sp = f->space;
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
    uint64_t pos = 0;
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
            bf_free_put(&f->free, &sp->alloc, sp->segment_size, pos, (uint32_t)(end - pos));
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
 * A writer creates the segment after the last one the index counts: it
 * must not exist already (O_EXCL would refuse it on the first write that
 * needs it, long after the open said all was well).
 */
static int check_no_segment_beyond(bf_file *f)
{
    bf_space *sp = f->space;
    char path[4096];
    bf_seg_path(&f->seg, f->seg.nsegs, path, sizeof(path));
    int fd = sp->io.open(sp->io.ctx, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return errno == ENOENT ? BF_OK : bf_fail(sp, BF_EIO, "open", path, errno, NULL);
    sp->io.close(sp->io.ctx, fd);
    return bf_fail(sp, BF_ECORRUPT, "open", path, 0,
                   "segment files do not match the index (one more than it counts)");
}

/* Fill an opened file from a decoded index: parts, segments, map. */
static int load_index(bf_file *f, const bf_index *idx)
{
    bf_space *sp = f->space;
    bf_named *nm = f->named;
    const bf_allocator *a = &sp->alloc;
    if (idx->nparts > 0) {
        nm->parts = bf_calloc(a, idx->nparts, sizeof(*nm->parts));
        if (nm->parts == NULL)
            return bf_fail(sp, BF_ENOMEM, "open", nm->prefix, 0, "parts");
    }
    for (uint32_t i = 0; i < idx->nparts; i++) {
        bf_part *p = &nm->parts[i];
        const bf_index_part *ip = &idx->parts[i];
        p->name = str_dup(a, ip->name, ip->name_len);
        p->prefix = join(a, nm->dir, ip->name, ip->name_len);
        nm->nparts = i + 1;
        if (p->name == NULL || p->prefix == NULL)
            return bf_fail(sp, BF_ENOMEM, "open", nm->prefix, 0, "parts");
        bf_seg_init(&p->seg, sp, 0, p->prefix);
        p->seg.nsegs = ip->nsegs;
        p->bytes = ip->bytes;
        p->blk_delta = ip->blk_delta;
    }
    f->seg.nsegs = idx->nsegs;
    if (idx->nblocks > 0 && bf_map_ensure(&f->map, a, idx->nblocks - 1) != BF_OK)
        return bf_fail(sp, BF_ENOMEM, "open", nm->prefix, 0, "block map of %u blocks",
                       idx->nblocks);
    for (uint32_t b = 0; b < idx->nblocks; b++)
        bf_index_entry(idx, b, &f->map.e[b]);
    int rc = check_segments(&f->seg, idx->phys_end);
    for (uint32_t i = 0; rc == BF_OK && i < nm->nparts; i++)
        rc = check_segments(&nm->parts[i].seg, nm->parts[i].bytes);
    return rc;
}

int bf_file_open_named(bf_space *sp, const char *dir, const char *name, int mode, bf_file **out)
{
    *out = NULL;
    int rc = check_name(sp, "open", dir, name);
    if (rc != BF_OK)
        return rc;
    if (mode != BF_OPEN_READONLY && mode != BF_OPEN_READWRITE)
        return bf_fail(sp, BF_EINVAL, "open", name, 0, "bad mode %d", mode);
    char prefix[4000];
    if (snprintf(prefix, sizeof(prefix), "%s/%s", dir, name) >= (int)sizeof(prefix))
        return bf_fail(sp, BF_EINVAL, "open", name, 0, "path too long");
    unsigned char *buf = NULL;
    size_t len = 0;
    if ((rc = read_index(sp, prefix, &buf, &len)) != BF_OK)
        return rc;
    bf_index idx = {0};
    const char *why = NULL;
    bf_index_part *parts = NULL;
    rc = bf_index_decode(buf, len, &idx, &why);
    if (rc == BF_OK) {
        parts = bf_calloc(&sp->alloc, idx.nparts ? idx.nparts : 1, sizeof(*parts));
        idx.parts = parts;
        rc = parts ? bf_index_decode_body(buf, len, &idx, &why) : BF_ENOMEM;
    }
    bf_file *f = NULL;
    if (rc == BF_OK && idx.segment_size != sp->segment_size)
        rc = bf_fail(sp, BF_EINVAL, "open", prefix, 0,
                     "file has %llu-byte segments, this space uses %llu",
                     (unsigned long long)idx.segment_size, (unsigned long long)sp->segment_size);
    else if (rc == BF_ENOMEM)
        rc = bf_fail(sp, rc, "open", prefix, 0, "index parts");
    else if (rc != BF_OK)
        rc = bf_fail(sp, rc, "open", prefix, 0, "%s.idx: %s", name, why);
    if (rc == BF_OK) {
        bf_file_options fo = {(bf_codec)idx.codec, idx.level, idx.block_size};
        rc = bf_file_create(sp, &fo, &f);
    }
    if (rc == BF_OK && (rc = attach_named(f, dir, name)) == BF_OK)
        rc = load_index(f, &idx);
    if (rc == BF_OK && mode == BF_OPEN_READWRITE && (rc = check_no_segment_beyond(f)) == BF_OK)
        rc = rebuild_free(f, idx.phys_end);
    bf_free(&sp->alloc, parts);
    bf_free(&sp->alloc, buf);
    if (rc != BF_OK) {
        if (f != NULL) {
            /* Never persist or account a half-loaded file: it was never adopted. */
            bf_map_shrink(&f->map, &sp->alloc, 0);
            f->readonly = 1;
            bf_file_close(f);
        }
        return rc;
    }
    bf_file_adopt(f, idx.size, idx.phys_end);
    f->readonly = mode == BF_OPEN_READONLY;
    *out = f;
    return BF_OK;
}

int bf_file_delete_named(bf_space *sp, const char *dir, const char *name)
{
    int rc = check_name(sp, "delete", dir, name);
    if (rc != BF_OK)
        return rc;
    char path[4096];
    int found = 0;
    snprintf(path, sizeof(path), "%s/%s.idx", dir, name);
    if (sp->io.unlink(sp->io.ctx, path) == 0)
        found = 1;
    else if (errno != ENOENT)
        return bf_fail(sp, BF_EIO, "delete", path, errno, NULL);
    for (uint32_t segno = 0;; segno++) {
        snprintf(path, sizeof(path), "%s/%s.%u", dir, name, segno);
        if (sp->io.unlink(sp->io.ctx, path) != 0) {
            if (errno != ENOENT)
                return bf_fail(sp, BF_EIO, "delete", path, errno, NULL);
            break;
        }
        found = 1;
    }
    if (!found)
        return bf_fail(sp, BF_ENOENT, "delete", name, 0, "no such file in set %s", dir);
    return BF_OK;
}

/* ---- append ------------------------------------------------------------ */

int bf_file_append(bf_file *target, bf_file *source, uint64_t *start)
{
    bf_space *sp = target->space;
    const bf_allocator *a = &sp->alloc;
    const char *why = NULL;
    if (target->named == NULL || source->named == NULL)
        why = "both files must belong to a file set";
    else if (strcmp(target->named->dir, source->named->dir) != 0)
        why = "the files belong to different sets";
    else if (target == source)
        why = "a file cannot be appended to itself";
    else if (!source->readonly)
        why = "the source must be read-only (exported or opened read-only)";
    else if (target->readonly)
        why = "the target is read-only";
    else if (target->block_size != source->block_size)
        why = "block sizes differ";
    else if (sp->segment_size != source->space->segment_size)
        why = "segment sizes differ";
    else if ((uint64_t)target->named->nparts + 1 + source->named->nparts >= BF_MAP_MAX_PARTS)
        why = "too many appended parts";
    if (why != NULL)
        return bf_fail(sp, target->readonly ? BF_EREADONLY : BF_EINVAL, "append",
                       target->named ? target->named->prefix : NULL, 0, "%s", why);
    uint32_t bs = target->block_size;
    uint64_t start_blk = (target->size + bs - 1) / bs;
    uint64_t nblk = source->map.n;
    if (start_blk + nblk > (uint64_t)BF_MAP_MAX_BLOCK + 1)
        return bf_fail(sp, BF_EINVAL, "append", target->named->prefix, 0,
                       "the result would exceed the largest file size");
    if (nblk > 0 && bf_map_ensure(&target->map, a, (uint32_t)(start_blk + nblk - 1)) != BF_OK)
        return bf_fail(sp, BF_ENOMEM, "append", target->named->prefix, 0, "block map");

    bf_named *tn = target->named, *sn = source->named;
    uint32_t add = 1 + sn->nparts;
    bf_part *parts = bf_realloc(a, tn->parts, (size_t)(tn->nparts + add) * sizeof(*parts));
    if (parts == NULL)
        return bf_fail(sp, BF_ENOMEM, "append", tn->prefix, 0, "parts");
    tn->parts = parts;
    uint32_t first = tn->nparts; /* index in parts[] of the source's own part */
    for (uint32_t i = 0; i < add; i++) {
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
            return bf_fail(sp, BF_ENOMEM, "append", tn->prefix, 0, "parts");
        }
        bf_seg_init(&p->seg, sp, 0, p->prefix);
        p->seg.nsegs = i == 0 ? source->seg.nsegs : sn->parts[i - 1].seg.nsegs;
        p->bytes = i == 0 ? source->phys_end : sn->parts[i - 1].bytes;
        p->blk_delta = start_blk + (i == 0 ? 0 : sn->parts[i - 1].blk_delta);
    }
    tn->nparts += add;
    /* Part k of the source becomes part first + 1 + k of the target (part 0 is the target's). */
    for (uint64_t b = 0; b < nblk; b++) {
        bf_map_entry e = source->map.e[b];
        if (e.cap != 0)
            e.off = ((uint64_t)(first + 1 + bf_map_part(&e)) << BF_MAP_PART_SHIFT) | bf_map_off(&e);
        target->map.e[start_blk + b] = e;
    }
    bf_file_set_logical(target, start_blk * bs + source->size);
    *start = start_blk * bs;
    return BF_OK;
}
