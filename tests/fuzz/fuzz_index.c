/*
 * fuzz_index.c - arbitrary bytes as the persisted index of a named file,
 * and as the head that names it.
 *
 * Input: a flag byte, then the bytes written where f's index lies (inside
 * its segments), and a head whose one slot names them.
 *   bits 0-1  codec (index into the codecs built in)
 *   bit 2     fix the trailing CRC (and the index's own offset) first, so
 *             forged fields get past the checksum and reach the field
 *             checks, the map and the reads
 *   bit 3     open read-write (else read-only)
 *   bits 4-6  where the read-write run writes
 *   bit 7     the first 64 bytes are the head itself (both slots), the
 *             rest the index; with bit 2 the slots' CRCs are fixed too,
 *             so forged offsets and lengths (near 2^48 and 2^64 among the
 *             seeds) reach the slot checks and the open
 * Each run builds a set: "g" (3 blocks, exported) appended onto "f"
 * (6.5 blocks), so f's index has a spliced part; f is closed, its index
 * and head replaced by the input and f opened. Properties: open succeeds or says
 * BF_ECORRUPT/BF_EINVAL with a message; the unmodified index opens and
 * reads back exactly; blocks of an accepted index read back or report
 * BF_ECORRUPT; a read-write handle can write, truncate and close, and the
 * index it persists opens again with what was written; the set is then
 * destroyed without leftovers and all memory is returned. While the forged
 * index is opened and read, the allocator refuses any request larger than
 * the set's bytes on disk, a full map leaf, or the map directory the
 * index's block count states (whichever is largest), and the run fails if
 * it was asked: no length read from disk may reach the allocator before it
 * is bounded by the file's real size.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "fuzz.h"
#include "index.h"
#include "le.h"
#include "support.h"

#define BS 4096u
#define SEG 16384u
#define F_SIZE (6 * BS + 2000)
#define G_SIZE (3 * BS)
#define START (7 * BS) /* g starts at the block boundary after f */
#define TOTAL (START + G_SIZE)
#define MAX_READ_BLOCKS 64u

static unsigned char expect[TOTAL];

static void must(bf_space *sp, int rc, const char *what)
{
    FUZZ_CHECK(rc == BF_OK, "%s: %d %s", what, rc, bf_space_errmsg(sp));
}

static bf_codec codec_of(uint8_t flags)
{
    bf_codec codecs[4];
    int n = fuzz_codecs(codecs);
    return codecs[(flags & 3) % n];
}

/* Build the set in `set` and return the bytes of f's index (malloc'ed) and where they lie. */
static unsigned char *build(bf_space *sp, const char *set, size_t *idx_len, uint64_t *idx_off)
{
    memset(expect, 0, sizeof(expect));
    fuzz_data(11, expect, F_SIZE);
    fuzz_data(12, expect + START, G_SIZE);
    must(sp, bf_fileset_create(sp, set), "fileset_create");
    bf_file *f, *g;
    must(sp, bf_file_create_named(sp, set, "g", NULL, &g), "create g");
    must(sp, bf_file_write(g, expect + START, G_SIZE), "write g");
    must(sp, bf_file_export(g), "export g");
    must(sp, bf_file_create_named(sp, set, "f", NULL, &f), "create f");
    must(sp, bf_file_write(f, expect, F_SIZE), "write f");
    uint64_t start;
    must(sp, bf_file_append(f, g, &start), "append");
    FUZZ_CHECK(start == START, "append started at %llu", (unsigned long long)start);
    /* Read it once, so that the decompressors' contexts exist before the open under test
       (which may then read blocks under the allocator's limit). */
    static unsigned char blk[BS];
    must(sp, bf_file_read_block(f, 0, blk), "read_block");
    must(sp, bf_file_close(f), "close f");
    must(sp, bf_file_close(g), "close g");
    char prefix[4096];
    snprintf(prefix, sizeof(prefix), "%s/f", set);
    unsigned char *idx = t_index_read(prefix, SEG, idx_len, idx_off);
    FUZZ_CHECK(idx != NULL, "no index in %s.0's head", prefix);
    return idx;
}

/* Bytes of the regular files in `dir` (a set: its segment files). */
static uint64_t dir_bytes(const char *dir)
{
    uint64_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        char path[4400];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            n += (uint64_t)st.st_size;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/*
 * The largest allocation opening and reading the forged index may ask: the
 * set's bytes on disk (the index read whole), a full dense map leaf, or the
 * directory of leaves that `nblocks` logical blocks need (a pointer, a count
 * and a bit per 4096 blocks; taken as 16 bytes), plus a margin for structs.
 */
static uint64_t request_limit(const char *set, const unsigned char *idx, size_t len)
{
    uint64_t limit = dir_bytes(set);
    uint64_t leaf = 4096 * 16;
    limit = limit > leaf ? limit : leaf;
    if (len >= BF_INDEX_HDR) {
        uint64_t dir = ((uint64_t)bf_get32(idx + 56) + 4095) / 4096 * 16;
        limit = limit > dir ? limit : dir;
    }
    return limit + 4096;
}

/* Read the first blocks of an accepted file: data or BF_ECORRUPT/BF_EIO, exact if `exact`. */
static void read_blocks(bf_space *sp, bf_file *f, int exact)
{
    static unsigned char got[BF_BLOCK_SIZE_MAX];
    uint32_t bs = bf_file_block_size(f);
    uint64_t nblk = (bf_file_size(f) + bs - 1) / bs;
    for (uint64_t b = 0; b < nblk && b < MAX_READ_BLOCKS; b++) {
        int rc = bf_file_read_block(f, b, got);
        if (exact) {
            must(sp, rc, "read_block of the unmodified index");
            size_t n = (b + 1) * bs <= TOTAL ? bs : TOTAL - b * bs;
            FUZZ_CHECK(memcmp(got, expect + b * bs, n) == 0, "block %llu differs",
                       (unsigned long long)b);
        } else {
            FUZZ_CHECK(rc == BF_OK || rc == BF_ECORRUPT || rc == BF_EIO, "read_block: %d %s", rc,
                       bf_space_errmsg(sp));
        }
    }
}

/* Write, truncate and close a read-write handle; the result must open again. */
static void rewrite(bf_space *sp, const char *set, bf_file *f, uint8_t flags)
{
    static unsigned char data[2 * BS], got[2 * BS];
    uint32_t bs = bf_file_block_size(f);
    uint64_t size = bf_file_size(f);
    uint64_t pos = size == 0 ? 0 : (size / 16) * ((flags >> 4) & 7) % size;
    if (pos > 64ull * bs)
        pos = 64ull * bs;
    fuzz_data(flags, data, sizeof(data));
    must(sp, bf_file_seek(f, (int64_t)pos, BF_SEEK_SET), "seek");
    int rc = bf_file_write(f, data, sizeof(data));
    /* Loading the partial block around pos may meet a forged extent. */
    FUZZ_CHECK(rc == BF_OK || rc == BF_ECORRUPT || rc == BF_EIO, "write: %d %s", rc,
               bf_space_errmsg(sp));
    int wrote = rc == BF_OK;
    uint64_t end = pos + sizeof(data);
    uint64_t new_size = end > size ? end : size;
    rc = bf_file_truncate(f, new_size + (flags & 0x10 ? 0 : bs / 2));
    FUZZ_CHECK(rc == BF_OK || rc == BF_ECORRUPT || rc == BF_EIO, "truncate: %d %s", rc,
               bf_space_errmsg(sp));
    must(sp, bf_file_close(f), "close read-write");
    bf_file *again;
    must(sp, bf_file_open_named(sp, set, "f", BF_OPEN_READONLY, &again),
         "reopen what the library persisted");
    if (wrote) {
        must(sp, bf_file_seek(again, (int64_t)pos, BF_SEEK_SET), "seek");
        FUZZ_CHECK(bf_file_read(again, got, sizeof(got)) == (int64_t)sizeof(got) &&
                       memcmp(got, data, sizeof(got)) == 0,
                   "written bytes at %llu do not read back after reopen: %s",
                   (unsigned long long)pos, bf_space_errmsg(sp));
    }
    must(sp, bf_file_close(again), "close reopened");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    t_counting cnt;
    t_counting_init(&cnt);
    bf_space *sp = fuzz_space(codec_of(flags), BS, SEG, &cnt.hooks);
    char set[4096], prefix[4200];
    snprintf(set, sizeof(set), "%s/set", fuzz_parent());
    snprintf(prefix, sizeof(prefix), "%s/f", set);
    size_t orig_len;
    uint64_t off;
    unsigned char *orig = build(sp, set, &orig_len, &off);

    unsigned char head[BF_HEAD_BYTES] = {0};
    data++;
    size--;
    if ((flags & 0x80) && size >= BF_HEAD_BYTES) {
        memcpy(head, data, BF_HEAD_BYTES);
        data += BF_HEAD_BYTES;
        size -= BF_HEAD_BYTES;
    }
    size_t len = size;
    unsigned char *idx = malloc(len ? len : 1);
    FUZZ_CHECK(idx != NULL, "out of memory");
    if (len > 0)
        memcpy(idx, data, len);
    if ((flags & 4) && len >= BF_INDEX_HDR + 4)
        bf_put64(idx + 64, off); /* the index's own place too, past the head's cross-check */
    if ((flags & 4) && len >= 4)
        bf_put32(idx + len - 4, bf_crc32c(0, idx, len - 4));
    if (!(flags & 0x80)) { /* the slot of the index's own generation names the input */
        uint32_t gen = bf_get32(orig + 60);
        bf_head_encode(&(bf_head_slot){gen, off, len}, head + bf_head_slot_at(gen));
    } else if (flags & 4) { /* the input's slots, their CRCs made right */
        for (size_t at = 0; at < BF_HEAD_BYTES; at += BF_HEAD_SLOT)
            bf_put32(head + at + 28, bf_crc32c(0, head + at, 28));
    }
    int exact = len == orig_len && memcmp(idx, orig, len) == 0 && !(flags & 0x80);
    FUZZ_CHECK(t_phys_write(prefix, SEG, off, idx, len) == 0 &&
                   t_phys_write(prefix, SEG, 0, head, sizeof(head)) == 0,
               "cannot write %s", prefix);

    int mode = flags & 8 ? BF_OPEN_READWRITE : BF_OPEN_READONLY;
    bf_file *f = NULL;
    cnt.max_request = request_limit(set, idx, len);
    int rc = bf_file_open_named(sp, set, "f", mode, &f);
    if (exact)
        must(sp, rc, "open with the unmodified index");
    if (rc != BF_OK) {
        int empty_head = 1; /* a head never written is a file never persisted */
        for (size_t i = 0; i < sizeof(head); i++)
            empty_head &= head[i] == 0;
        FUZZ_CHECK(rc == BF_ECORRUPT || rc == BF_EINVAL || (rc == BF_ENOENT && empty_head),
                   "open: %d %s", rc, bf_space_errmsg(sp));
        FUZZ_CHECK(bf_space_errmsg(sp)[0] != '\0', "refusal %d without a message", rc);
        FUZZ_CHECK(f == NULL, "failed open returned a handle");
    } else {
        if (exact)
            FUZZ_CHECK(bf_file_size(f) == TOTAL, "size %llu", (unsigned long long)bf_file_size(f));
        read_blocks(sp, f, exact);
    }
    cnt.max_request = 0;
    FUZZ_CHECK(cnt.too_large == 0,
               "%llu allocations of up to %llu bytes asked while opening a forged index: a "
               "length from disk not bounded by the file's size",
               (unsigned long long)cnt.too_large, (unsigned long long)cnt.largest_refused);
    if (rc == BF_OK) {
        if (mode == BF_OPEN_READWRITE)
            rewrite(sp, set, f, flags);
        else
            must(sp, bf_file_close(f), "close read-only");
    }
    must(sp, bf_fileset_destroy(sp, set), "fileset_destroy");
    FUZZ_CHECK(t_dir_entries(set) == -1, "set directory left behind");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", bf_space_dir(sp));
    bf_space_destroy(sp);
    FUZZ_CHECK(t_dir_entries(dir) == -1, "space directory left after destroy");
    FUZZ_CHECK(cnt.live_bytes == 0, "%lld bytes not freed", (long long)cnt.live_bytes);
    free(idx);
    free(orig);
    return 0;
}

/*
 * Seeds whose head is the input (bit 7, CRCs fixed by bit 2): the real
 * index, named by a slot whose offset or length is forged near 2^48 and
 * 2^64, so that offset + length wraps or runs past every segment.
 */
static void head_seeds(const char *dir, const unsigned char *idx, size_t len, uint64_t off)
{
    static const struct {
        const char *name;
        uint64_t off, len;
    } forged[] = {
        {"wrap", 0, UINT64_MAX - 4095},         /* off + len wraps to just below off */
        {"wrap-48", 0, (UINT64_C(1) << 48) + 1}, /* past the offset mask */
        {"len-max", 0, UINT64_MAX},
        {"off-max", UINT64_MAX - 8, 0},
        {"off-48", (UINT64_C(1) << 48) - 200, 0},
        {"past-end", 0, 1u << 21},       /* 2 MiB, far past the file's end */
        {"past-end-small", 0, 1u << 19}, /* 512 KiB: still past it */
    };
    uint32_t gen = bf_get32(idx + 60);
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        size_t n = BF_HEAD_BYTES + len;
        unsigned char *body = calloc(1, n);
        FUZZ_CHECK(body != NULL, "out of memory");
        uint64_t o = forged[i].off ? forged[i].off : off;
        uint64_t l = forged[i].len ? forged[i].len : len;
        bf_head_encode(&(bf_head_slot){gen, o, l}, body + bf_head_slot_at(gen));
        memcpy(body + BF_HEAD_BYTES, idx, len);
        char name[64];
        snprintf(name, sizeof(name), "head-%s", forged[i].name);
        fuzz_seed(dir, name, 0x80 | 0x04, body, n);
        free(body);
    }
}

/* Seeds: f's real index for every codec, read-only and read-write, CRC fixing on and off. */
int fuzz_write_seeds(const char *dir)
{
    bf_codec codecs[4];
    int n = fuzz_codecs(codecs);
    char set[4096];
    snprintf(set, sizeof(set), "%s/set", fuzz_parent());
    for (int c = 0; c < n; c++) {
        bf_space *sp = fuzz_space(codecs[c], BS, SEG, NULL);
        size_t len;
        uint64_t off;
        unsigned char *idx = build(sp, set, &len, &off);
        for (int v = 0; v < 2; v++) {
            char name[64];
            snprintf(name, sizeof(name), "%s-%s", bf_codec_name(codecs[c]), v ? "rw" : "ro");
            fuzz_seed(dir, name, (uint8_t)(c | (v ? 0x08 | 0x04 | 0x70 : 0)), idx, len);
        }
        if (c == 0)
            head_seeds(dir, idx, len, off);
        free(idx);
        bf_fileset_destroy(sp, set);
        bf_space_destroy(sp);
    }
    return 0;
}
