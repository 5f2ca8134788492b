/*
 * test_seal.c - encryption of temp files (bf_space_options.encrypt).
 *
 * The wrapper against the AES-256-GCM known-answer vectors of the GCM
 * specification (McGrew and Viega, test cases 13 to 16); then what a
 * sealed space promises on disk: every single-byte change to an extent,
 * header or payload, reads as BF_ECORRUPT; an extent moved to another
 * block or copied into another file does not open; an index whose map or
 * sizes were altered (its CRC made right again) does not open; a marker
 * written through a sealed space appears nowhere in its files (and does
 * without sealing: the search can fail); spaces with another key, or none,
 * are refused with BF_EKEY; a file's options seal it or not whatever its
 * space's default; no nonce is used twice over a million extents
 * with rewrites, named files, indexes and two spaces under one key; the
 * per-file memory is the same sealed or not.
 */
#include <dirent.h>
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
#include "alloc.h"
#include "crc32c.h"
#include "extent.h"
#include "file.h"
#include "index.h"
#include "le.h"
#include "seal.h"
#include "space.h"
#include "support.h"

#define BS 4096u

T_PARENT_FIXTURE("seal")

static const unsigned char key_a[BF_KEY_BYTES] = "buffile test key A, 32 bytes...";
static const unsigned char key_b[BF_KEY_BYTES] = "buffile test key B, 32 bytes...";

static bf_space *sealed_space(const unsigned char *key, bf_codec codec)
{
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.codec = codec;
    o.encrypt = key != NULL;
    o.key = key;
    return t_space_opts(&o);
}

static size_t unhex(const char *h, unsigned char *out)
{
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++)
        sscanf(h + 2 * i, "%2hhx", &out[i]);
    return n;
}

static void test_gcm_known_answers(void **state)
{
    (void)state;
    static const char *const p15 =
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
        "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
    static const char *const c15 =
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
        "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad";
    static const struct {
        const char *key, *iv, *aad, *plain, *cipher, *tag;
        size_t len; /* of plain, in bytes */
    } tc[] = {
        {"0000000000000000000000000000000000000000000000000000000000000000",
         "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b", 0},
        {"0000000000000000000000000000000000000000000000000000000000000000",
         "000000000000000000000000", "", "00000000000000000000000000000000",
         "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919", 16},
        {"feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
         "cafebabefacedbaddecaf888", "", p15, c15, "b094dac5d93471bdec1a502270e3cc6c", 64},
        {"feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
         "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2", p15, c15,
         "76fc6ece0f4e1768cddf8853bb2d551b", 60},
    };
    for (size_t i = 0; i < sizeof(tc) / sizeof(tc[0]); i++) {
        unsigned char key[32], iv[12], aad[32], plain[64], cipher[64], tag[16], out[64], t[16];
        unhex(tc[i].key, key);
        unhex(tc[i].iv, iv);
        size_t alen = unhex(tc[i].aad, aad);
        unhex(tc[i].plain, plain);
        unhex(tc[i].cipher, cipher);
        unhex(tc[i].tag, tag);
        bf_seal *s;
        char why[128];
        assert_int_equal(bf_seal_new(&bf_default_allocator, key, &s, why, sizeof(why)), BF_OK);
        assert_int_equal(bf_seal_encrypt(s, iv, aad, alen, plain, tc[i].len, out, t), BF_OK);
        if (memcmp(out, cipher, tc[i].len) != 0 || memcmp(t, tag, 16) != 0)
            fail_msg("GCM test case %zu: ciphertext or tag differs", 13 + i);
        assert_int_equal(bf_seal_decrypt(s, iv, aad, alen, cipher, tc[i].len, out, tag), BF_OK);
        assert_memory_equal(out, plain, tc[i].len);
        tag[15] ^= 1;
        assert_int_equal(bf_seal_decrypt(s, iv, aad, alen, cipher, tc[i].len, out, tag),
                         BF_ECORRUPT);
        bf_seal_free(&bf_default_allocator, s);
    }
}

/* The extent of block `b` of `f`: its segment file's path and where it lies in it. */
static void extent_at(bf_file *f, uint64_t b, char *path, size_t plen, uint64_t *off, uint32_t *len)
{
    const bf_map_entry *e = bf_map_get(&f->map, b);
    assert_true(bf_map_used(e));
    bf_seg_path(&f->seg, (uint32_t)(bf_map_off(e) / f->seg.space->segment_size), path, plen);
    *off = bf_map_off(e) % f->seg.space->segment_size;
    *len = bf_map_len(e);
}

static void flip(const char *path, uint64_t off, unsigned char mask)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char c;
    assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
    c ^= mask;
    assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
    close(fd);
}

/* Every byte of a sealed extent, compressed and raw, changed in turn: never other bytes. */
static void test_every_byte_change(void **state)
{
    (void)state;
    bf_space *sp = sealed_space(key_a, BF_CODEC_LZ4);
    bf_file *f;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    unsigned char blk[2][BS], got[BS];
    t_rng rng = {27};
    t_fill(&rng, T_DATA_TEXT, blk[0], BS);   /* compresses */
    t_fill(&rng, T_DATA_RANDOM, blk[1], BS); /* stored raw, sealed all the same */
    for (int b = 0; b < 2; b++)
        assert_int_equal(bf_file_write_block(f, (uint64_t)b, blk[b]), BF_OK);
    unsigned long changed = 0;
    for (int b = 0; b < 2; b++) {
        char path[4096];
        uint64_t off;
        uint32_t len;
        extent_at(f, (uint64_t)b, path, sizeof(path), &off, &len);
        for (uint32_t i = 0; i < len; i++) {
            unsigned char mask = (unsigned char)(1u << (i % 8));
            flip(path, off + i, mask);
            int rc = bf_file_read_block(f, (uint64_t)b, got);
            if (rc != BF_ECORRUPT)
                fail_msg("block %d: byte %u of its extent changed, read returned %d", b, i, rc);
            flip(path, off + i, mask);
            changed++;
        }
        assert_int_equal(bf_file_read_block(f, (uint64_t)b, got), BF_OK);
        assert_memory_equal(got, blk[b], BS);
    }
    print_message("sealed extents: %lu single-byte changes, all BF_ECORRUPT\n", changed);
    bf_file_close(f);
    bf_space_destroy(sp);
}

/* Copy `len` bytes from (path a, off a) over (path b, off b). */
static void copy_bytes(const char *pa, uint64_t oa, const char *pb, uint64_t ob, uint32_t len)
{
    unsigned char buf[BS + 256];
    int fa = open(pa, O_RDONLY), fb = open(pb, O_RDWR);
    assert_true(fa >= 0 && fb >= 0 && len <= sizeof(buf));
    assert_int_equal(pread(fa, buf, len, (off_t)oa), (ssize_t)len);
    assert_int_equal(pwrite(fb, buf, len, (off_t)ob), (ssize_t)len);
    close(fa);
    close(fb);
}

/*
 * Extents moved where their CRC still holds: one block's extent over
 * another's of the same length (its header rewritten to the other block
 * number, CRC fixed), and one file's extent copied over the same block of
 * another file. Their tags name block and file: BF_ECORRUPT both times.
 */
static void test_moved_extents(void **state)
{
    (void)state;
    bf_space *sp = sealed_space(key_a, BF_CODEC_NONE); /* equal lengths: raw blocks */
    bf_file *f, *g;
    assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
    assert_int_equal(bf_file_create(sp, NULL, &g), BF_OK);
    unsigned char blk[BS], got[BS];
    memset(blk, 'f', BS);
    for (uint64_t b = 0; b < 2; b++)
        assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);
    memset(blk, 'g', BS);
    assert_int_equal(bf_file_write_block(g, 0, blk), BF_OK);
    char pf[4096], pg[4096];
    uint64_t of0, of1, og0;
    uint32_t l0, l1, lg;
    extent_at(f, 0, pf, sizeof(pf), &of0, &l0);
    extent_at(f, 1, pf, sizeof(pf), &of1, &l1);
    extent_at(g, 0, pg, sizeof(pg), &og0, &lg);
    assert_int_equal(l0, l1);

    /* f's block 0 extent as block 1, its header saying block 1 and its CRC made right. */
    unsigned char ext[BS + 256];
    int fd = open(pf, O_RDWR);
    assert_int_equal(pread(fd, ext, l0, (off_t)of0), (ssize_t)l0);
    bf_put64(ext + 16, 1);
    bf_put32(ext + 24, bf_extent_crc(ext, ext + BF_EXTENT_HDR, l0 - BF_EXTENT_HDR));
    assert_int_equal(pwrite(fd, ext, l0, (off_t)of1), (ssize_t)l0);
    close(fd);
    assert_int_equal(bf_file_read_block(f, 1, got), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), "does not open"));
    assert_int_equal(bf_file_read_block(f, 0, got), BF_OK);

    /* f's block 0 over g's block 0: header, CRC and block number all hold. */
    copy_bytes(pf, of0, pg, og0, l0);
    assert_int_equal(bf_file_read_block(g, 0, got), BF_ECORRUPT);
    assert_non_null(strstr(bf_space_errmsg(sp), "does not open"));
    bf_file_close(f);
    bf_file_close(g);
    bf_space_destroy(sp);
}

/* A named file of `n` blocks of text, closed, in set `set` of space `sp`. */
static void make_named(bf_space *sp, const char *name, uint64_t n)
{
    bf_file *f;
    assert_int_equal(bf_file_create_named(sp, set, name, NULL, &f), BF_OK);
    t_rng rng = {n};
    unsigned char blk[BS];
    for (uint64_t b = 0; b < n; b++) {
        t_fill(&rng, T_DATA_TEXT, blk, BS);
        assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);
    }
    assert_int_equal(bf_file_close(f), BF_OK);
}

/* Keys: another key's space and a space without one are refused; the key's spaces read. */
static void test_keys(void **state)
{
    (void)state;
    bf_space *a = sealed_space(key_a, BF_CODEC_LZ4), *a2 = sealed_space(key_a, BF_CODEC_ZSTD);
    bf_space *b = sealed_space(key_b, BF_CODEC_LZ4), *plain = sealed_space(NULL, BF_CODEC_LZ4);
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.encrypt = 1; /* a random key of its own */
    bf_space *random_key = t_space_opts(&o);
    assert_int_equal(bf_fileset_create(a, set), BF_OK);
    make_named(a, "s", 5);
    make_named(random_key, "r", 3);
    bf_file *f = NULL;
    assert_int_equal(bf_file_open_named(b, set, "s", BF_OPEN_READONLY, &f), BF_EKEY);
    assert_non_null(strstr(bf_space_errmsg(b), "another key"));
    assert_int_equal(bf_file_open_named(plain, set, "s", BF_OPEN_READWRITE, &f), BF_EKEY);
    assert_non_null(strstr(bf_space_errmsg(plain), "no key"));
    assert_int_equal(bf_file_open_named(a2, set, "r", BF_OPEN_READONLY, &f), BF_EKEY);
    assert_int_equal(bf_file_open_named(a2, set, "s", BF_OPEN_READWRITE, &f), BF_OK);
    unsigned char got[BS], want[BS];
    t_rng rng = {5};
    for (uint64_t blk = 0; blk < 5; blk++) {
        t_fill(&rng, T_DATA_TEXT, want, BS);
        assert_int_equal(bf_file_read_block(f, blk, got), BF_OK);
        assert_memory_equal(got, want, BS);
    }
    assert_int_equal(bf_file_close(f), BF_OK);

    /* A file written by a space without a key: such spaces read it, a space with a key does
       not (it could not tell it from a sealed file stripped of its seal). */
    make_named(plain, "p", 2);
    assert_int_equal(bf_file_open_named(plain, set, "p", BF_OPEN_READONLY, &f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_open_named(a, set, "p", BF_OPEN_READONLY, &f), BF_EKEY);
    assert_non_null(strstr(bf_space_errmsg(a), "no tag"));
    /* One a space with a key wrote unsealed: its key's spaces read and rewrite it, and it
       stays unsealed; a space without a key reads it and may not rewrite it. */
    bf_file_options unsealed;
    bf_file_options_init(&unsealed);
    unsealed.seal = BF_SEAL_OFF;
    assert_int_equal(bf_file_create_named(a, set, "p2", &unsealed, &f), BF_OK);
    assert_int_equal(bf_file_write_block(f, 0, want), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_open_named(a2, set, "p2", BF_OPEN_READWRITE, &f), BF_OK);
    assert_int_equal(bf_file_write_block(f, 2, want), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_open_named(b, set, "p2", BF_OPEN_READONLY, &f), BF_EKEY);
    assert_non_null(strstr(bf_space_errmsg(b), "another key"));
    assert_int_equal(bf_file_open_named(plain, set, "p2", BF_OPEN_READWRITE, &f), BF_EKEY);
    assert_int_equal(bf_file_open_named(plain, set, "p2", BF_OPEN_READONLY, &f), BF_OK);
    assert_int_equal(bf_file_read_block(f, 2, got), BF_OK);
    assert_memory_equal(got, want, BS);

    /* Sealed and unsealed files are not spliced together. */
    bf_file *t, *s;
    assert_int_equal(bf_file_create_named(a, set, "t", NULL, &t), BF_OK);
    uint64_t at;
    assert_int_equal(bf_file_append(t, f, &at), BF_EINVAL);
    assert_int_equal(bf_file_open_named(a2, set, "s", BF_OPEN_READONLY, &s), BF_OK);
    assert_int_equal(bf_file_append(t, s, &at), BF_OK);
    assert_int_equal(bf_file_close(s), BF_OK);
    assert_int_equal(bf_file_close(t), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_open_named(a2, set, "t", BF_OPEN_READONLY, &t), BF_OK);
    rng = (t_rng){5};
    for (uint64_t blk = 0; blk < 5; blk++) {
        t_fill(&rng, T_DATA_TEXT, want, BS);
        assert_int_equal(bf_file_read_block(t, blk, got), BF_OK);
        assert_memory_equal(got, want, BS);
    }
    assert_int_equal(bf_file_close(t), BF_OK);
    assert_int_equal(bf_fileset_destroy(a, set), BF_OK);
    bf_space *all[] = {a, a2, b, plain, random_key};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        bf_space_destroy(all[i]);

    /* A key without encrypt: files unsealed unless their options ask, and those that ask
       sealed under that key; a space without a key cannot seal a file. */
    bf_space_options_init(&o);
    o.temp_dir = parent;
    o.block_size = BS;
    o.key = key_a;
    bf_space *keyed = t_space_opts(&o);
    bf_space *sealing = sealed_space(key_a, BF_CODEC_LZ4);
    plain = sealed_space(NULL, BF_CODEC_LZ4);
    bf_file_options fo;
    bf_file_options_init(&fo);
    assert_int_equal(bf_fileset_create(keyed, set), BF_OK);
    bf_file *u, *v;
    assert_int_equal(bf_file_create_named(keyed, set, "u", &fo, &u), BF_OK);
    fo.seal = BF_SEAL_ON;
    assert_int_equal(bf_file_create_named(keyed, set, "v", &fo, &v), BF_OK);
    assert_int_equal(bf_file_create(plain, &fo, &f), BF_EKEY);
    fo.seal = BF_SEAL_OFF;
    assert_int_equal(bf_file_create(sealing, &fo, &f), BF_OK); /* a space's default, overridden */
    assert_int_equal(bf_file_write_block(f, 0, want), BF_OK);
    bf_stats st;
    bf_space_stats(sealing, &st);
    assert_int_equal(st.blocks_sealed, 0);
    assert_int_equal(bf_file_close(f), BF_OK);
    assert_int_equal(bf_file_write_block(u, 0, want), BF_OK);
    assert_int_equal(bf_file_write_block(v, 0, want), BF_OK);
    assert_int_equal(bf_file_close(u), BF_OK);
    assert_int_equal(bf_file_close(v), BF_OK);
    bf_space_stats(keyed, &st);
    assert_int_equal(st.blocks_sealed, 1);
    assert_int_equal(bf_file_open_named(plain, set, "u", BF_OPEN_READONLY, &u), BF_OK);
    assert_int_equal(bf_file_open_named(plain, set, "v", BF_OPEN_READONLY, &v), BF_EKEY);
    assert_int_equal(bf_file_open_named(sealing, set, "v", BF_OPEN_READONLY, &v), BF_OK);
    assert_int_equal(bf_file_read_block(v, 0, got), BF_OK);
    assert_memory_equal(got, want, BS);
    assert_int_equal(bf_file_close(u), BF_OK);
    assert_int_equal(bf_file_close(v), BF_OK);
    assert_int_equal(bf_fileset_destroy(keyed, set), BF_OK);
    bf_space_destroy(keyed);
    bf_space_destroy(sealing);
    bf_space_destroy(plain);
}

/* A sealed index whose map or size was altered, its CRC fixed: the tag says so. */
static void test_altered_index(void **state)
{
    (void)state;
    bf_space *sp = sealed_space(key_a, BF_CODEC_LZ4);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    make_named(sp, "i", 4);
    char prefix[700];
    snprintf(prefix, sizeof(prefix), "%s/i", set);
    size_t len;
    uint64_t off;
    unsigned char *good = t_index_read(prefix, BF_SEGMENT_SIZE_DEFAULT, &len, &off);
    assert_non_null(good);
    static const size_t fields[] = {24, BF_INDEX_HDR + 8 + 16 + 8}; /* the size; block 1's len */
    for (size_t i = 0; i < 2; i++) {
        unsigned char *b = malloc(len);
        memcpy(b, good, len);
        b[fields[i]] ^= 1;
        bf_put32(b + len - 4, bf_crc32c(0, b, len - 4));
        assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, off, b, len), 0);
        bf_file *f = NULL;
        int rc = bf_file_open_named(sp, set, "i", BF_OPEN_READONLY, &f);
        if (rc != BF_ECORRUPT)
            fail_msg("index byte %zu altered, CRC fixed: open returned %d", fields[i], rc);
        free(b);
    }
    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, off, good, len), 0);
    bf_file *f;
    assert_int_equal(bf_file_open_named(sp, set, "i", BF_OPEN_READONLY, &f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    free(good);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
}

/*
 * Every downgrade of a sealed file's index that needs no key: the flags
 * byte (84) with its sealed and tagged bits cleared in each combination;
 * the nonce and tag kept, zeroed or dropped (the head's slot then names
 * the shorter index); the key check value and the file id kept or zeroed;
 * the map kept or emptied (its runs dropped: every block a hole). The CRC
 * and the head slot are made right each time. A space holding the key
 * must then refuse the file (BF_EKEY or BF_ECORRUPT) or read back exactly
 * what was written: never zeros or other bytes with BF_OK. A stripped
 * index made the key's space read every block as zeros.
 */
static void test_index_downgrades(void **state)
{
    (void)state;
    bf_space *sp = sealed_space(key_a, BF_CODEC_LZ4), *reader = sealed_space(key_a, BF_CODEC_ZSTD);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    enum { NBLK = 4 };
    make_named(sp, "d", NBLK);
    char prefix[700];
    snprintf(prefix, sizeof(prefix), "%s/d", set);
    size_t len;
    uint64_t off;
    unsigned char *good = t_index_read(prefix, BF_SEGMENT_SIZE_DEFAULT, &len, &off);
    assert_non_null(good);
    unsigned char head[BF_HEAD_BYTES];
    assert_int_equal(t_phys_read(prefix, BF_SEGMENT_SIZE_DEFAULT, 0, head, sizeof(head)), 0);
    uint32_t gen = bf_get32(good + 60);
    size_t body = len - 4 - BF_SEAL_BYTES; /* header and runs: what the tag covers */
    assert_true(body > BF_INDEX_HDR);
    unsigned char want[NBLK][BS];
    t_rng rng = {NBLK};
    for (int b = 0; b < NBLK; b++)
        t_fill(&rng, T_DATA_TEXT, want[b], BS);
    int refused = 0, tried = 0;
    for (int flags = 0; flags < 4; flags++)
        for (int tail = 0; tail < 3; tail++)     /* tag kept, zeroed, dropped */
            for (int zero = 0; zero < 4; zero++) /* bit 0: key check value, bit 1: file id */
                for (int empty = 0; empty < 2; empty++) {
                    if (flags == 3 && tail == 0 && zero == 0 && empty == 0)
                        continue; /* the index as written */
                    unsigned char *b = calloc(1, len);
                    size_t n = empty ? BF_INDEX_HDR : body;
                    memcpy(b, good, n);
                    /* flags: bit 0 kept when `flags` has it, bit 1 likewise (others as written) */
                    unsigned char fl = good[84];
                    if (!(flags & 1))
                        fl &= (unsigned char)~1u;
                    if (!(flags & 2))
                        fl &= (unsigned char)~2u;
                    b[84] = fl;
                    if (zero & 1)
                        memset(b + 88, 0, 8);
                    if (zero & 2)
                        memset(b + 72, 0, 12);
                    if (tail != 2) {
                        if (tail == 0)
                            memcpy(b + n, good + body, BF_SEAL_BYTES);
                        n += BF_SEAL_BYTES;
                    }
                    bf_put32(b + n, bf_crc32c(0, b, n));
                    n += 4;
                    unsigned char h[BF_HEAD_BYTES];
                    memcpy(h, head, sizeof(h));
                    bf_head_encode(&(bf_head_slot){gen, off, n}, h + bf_head_slot_at(gen));
                    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, off, b, n), 0);
                    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, 0, h, sizeof(h)),
                                     0);
                    for (int mode = 0; mode < 2; mode++) {
                        bf_file *f = NULL;
                        int rc = bf_file_open_named(reader, set, "d",
                                                    mode ? BF_OPEN_READWRITE : BF_OPEN_READONLY, &f);
                        tried++;
                        if (rc != BF_OK) {
                            if (rc != BF_EKEY && rc != BF_ECORRUPT)
                                fail_msg("downgrade %d/%d/%d/%d: open %d %s", flags, tail, zero,
                                         empty, rc, bf_space_errmsg(reader));
                            refused++;
                            continue;
                        }
                        for (uint64_t blk = 0; blk < NBLK; blk++) {
                            unsigned char got[BS];
                            rc = bf_file_read_block(f, blk, got);
                            if (rc == BF_OK && memcmp(got, want[blk], BS) != 0)
                                fail_msg("downgrade flags %d, tag %d, zeroed %d, map %s: block "
                                         "%llu read as other bytes with BF_OK",
                                         flags, tail, zero, empty ? "emptied" : "kept",
                                         (unsigned long long)blk);
                        }
                        bf_file_abort(f);
                    }
                    free(b);
                }
    print_message("index downgrades: %d opens, %d refused\n", tried, refused);
    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, off, good, len), 0);
    assert_int_equal(t_phys_write(prefix, BF_SEGMENT_SIZE_DEFAULT, 0, head, sizeof(head)), 0);
    bf_file *f;
    assert_int_equal(bf_file_open_named(reader, set, "d", BF_OPEN_READONLY, &f), BF_OK);
    assert_int_equal(bf_file_close(f), BF_OK);
    free(good);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    bf_space_destroy(reader);
}

/* Bytes of every regular file under `dir` (one level of subdirectories) searched for `m`. */
static int found_in(const char *dir, const unsigned char *m, size_t mlen)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && !found) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            found = found_in(path, m, mlen);
            continue;
        }
        size_t n;
        unsigned char *b = t_read_file(path, &n);
        for (size_t i = 0; b != NULL && i + mlen <= n && !found; i++)
            found = memcmp(b + i, m, mlen) == 0;
        free(b);
    }
    closedir(d);
    return found;
}

/* What a space wrote of a marker embedded in incompressible data: found on disk or not. */
static int marker_on_disk(const unsigned char *key)
{
    static const unsigned char marker[] = "MARKER-buffile-plaintext-MARKER";
    bf_space *sp = sealed_space(key, BF_CODEC_LZ4);
    assert_int_equal(bf_fileset_create(sp, set), BF_OK);
    bf_file *anon, *named;
    assert_int_equal(bf_file_create(sp, NULL, &anon), BF_OK);
    assert_int_equal(bf_file_create_named(sp, set, "m", NULL, &named), BF_OK);
    unsigned char blk[BS];
    t_rng rng = {99};
    for (int b = 0; b < 16; b++) {
        t_fill(&rng, T_DATA_RANDOM, blk, BS);
        memcpy(blk + 100 * (size_t)b, marker, sizeof(marker));
        assert_int_equal(bf_file_write(anon, blk, BS), BF_OK);
        assert_int_equal(bf_file_write(named, blk, BS), BF_OK);
    }
    assert_int_equal(bf_file_flush(anon), BF_OK);
    assert_int_equal(bf_file_export(named), BF_OK);
    int found = found_in(parent, marker, sizeof(marker) - 1);
    bf_file_close(anon);
    bf_file_close(named);
    assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
    bf_space_destroy(sp);
    return found;
}

static void test_marker_nowhere(void **state)
{
    (void)state;
    assert_true(marker_on_disk(NULL));   /* unsealed: the marker is on disk in clear */
    assert_false(marker_on_disk(key_a)); /* sealed: nowhere */
}

/* ---- nonces: a recording I/O table around the POSIX one ---------------- */

typedef struct nonces {
    unsigned char (*n)[BF_NONCE_BYTES];
    size_t count, cap;
} nonces;

static nonces seen;

static void note_nonce(const unsigned char *nonce)
{
    if (seen.count == seen.cap) {
        seen.cap = seen.cap ? 2 * seen.cap : 1 << 16;
        seen.n = realloc(seen.n, seen.cap * BF_NONCE_BYTES);
        assert_non_null(seen.n);
    }
    memcpy(seen.n[seen.count++], nonce, BF_NONCE_BYTES);
}

/* The nonces in one write: sealed extents back to back, or a sealed index. */
static ssize_t recording_pwritev(void *ctx, int fd, const struct iovec *iov, int n, off_t off)
{
    (void)ctx;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    unsigned char *b = malloc(total ? total : 1);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(b + at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    if (total >= 8 && memcmp(b, "BFINDEX1", 8) == 0 && (b[84] & BF_INDEX_SEALED))
        note_nonce(b + total - 4 - BF_SEAL_BYTES);
    for (size_t p = 0; p + BF_EXTENT_HDR <= total && memcmp(b + p, "BFX", 3) == 0;) {
        assert_true(b[p + 5] & BF_EXTENT_FLAG_SEALED);
        note_nonce(b + p + BF_EXTENT_HDR);
        p += BF_EXTENT_HDR + bf_get32(b + p + 8);
    }
    free(b);
    return bf_posix_io.pwritev(NULL, fd, iov, n, off);
}

static int cmp_nonce(const void *a, const void *b)
{
    return memcmp(a, b, BF_NONCE_BYTES);
}

/*
 * A million extents and more, every nonce recorded: an anonymous file whose
 * 1000 blocks are each rewritten 600 times, named files written, closed,
 * reopened read-write and rewritten by two spaces under one key (their
 * indexes sealed too). No nonce twice.
 */
static void test_nonces_unique(void **state)
{
    (void)state;
    bf_space *a = sealed_space(key_a, BF_CODEC_LZ4), *b = sealed_space(key_a, BF_CODEC_LZ4);
    bf_io io = bf_posix_io;
    io.pwritev = recording_pwritev;
    bf_space_set_io(a, &io);
    bf_space_set_io(b, &io);
    assert_int_equal(bf_fileset_create(a, set), BF_OK);
    unsigned char blk[BS];
    memset(blk, 'n', BS);
    bf_file *f;
    assert_int_equal(bf_file_create(a, NULL, &f), BF_OK);
    for (uint32_t round = 0; round < 600; round++) {
        for (uint64_t blkno = 0; blkno < 1000; blkno++) {
            bf_put32(blk, round);
            assert_int_equal(bf_file_write_block(f, blkno, blk), BF_OK);
        }
    }
    assert_int_equal(bf_file_close(f), BF_OK);
    for (int sess = 0; sess < 40; sess++) {
        for (int s = 0; s < 2; s++) {
            bf_space *sp = s ? b : a;
            char name[32];
            snprintf(name, sizeof(name), "n%d", s);
            if (sess == 0)
                assert_int_equal(bf_file_create_named(sp, set, name, NULL, &f), BF_OK);
            else
                assert_int_equal(bf_file_open_named(sp, set, name, BF_OPEN_READWRITE, &f), BF_OK);
            for (uint64_t blkno = 0; blkno < 5000; blkno++) {
                bf_put32(blk, (uint32_t)sess);
                assert_int_equal(bf_file_write_block(f, blkno, blk), BF_OK);
            }
            assert_int_equal(bf_file_close(f), BF_OK);
        }
    }
    assert_true(seen.count >= 1000000);
    qsort(seen.n, seen.count, BF_NONCE_BYTES, cmp_nonce);
    for (size_t i = 1; i < seen.count; i++)
        if (memcmp(seen.n[i - 1], seen.n[i], BF_NONCE_BYTES) == 0)
            fail_msg("a nonce was used twice (of %zu recorded)", seen.count);
    print_message("%zu nonces recorded (extents and indexes, two spaces, one key): no repeat\n",
                  seen.count);
    free(seen.n);
    seen = (nonces){0};
    assert_int_equal(bf_fileset_destroy(a, set), BF_OK);
    bf_space_destroy(a);
    bf_space_destroy(b);
}

/* The cipher contexts are the space's: a file costs the same sealed or not. */
static void test_per_file_memory(void **state)
{
    (void)state;
    uint64_t mem[2];
    for (int sealed = 0; sealed < 2; sealed++) {
        bf_space *sp = sealed_space(sealed ? key_a : NULL, BF_CODEC_LZ4);
        assert_int_equal(bf_fileset_create(sp, set), BF_OK);
        bf_file *f, *g;
        assert_int_equal(bf_file_create(sp, NULL, &f), BF_OK);
        assert_int_equal(bf_file_create_named(sp, set, "m", NULL, &g), BF_OK);
        unsigned char blk[BS];
        memset(blk, 'm', BS);
        for (uint64_t b = 0; b < 64; b++) {
            assert_int_equal(bf_file_write_block(f, b, blk), BF_OK);
            assert_int_equal(bf_file_write_block(g, b, blk), BF_OK);
        }
        bf_stats sf, sg;
        bf_file_stats(f, &sf);
        bf_file_stats(g, &sg);
        mem[sealed] = sf.memory_bytes + sg.memory_bytes;
        bf_file_close(f);
        bf_file_close(g);
        assert_int_equal(bf_fileset_destroy(sp, set), BF_OK);
        bf_space_destroy(sp);
    }
    assert_int_equal(mem[0], mem[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gcm_known_answers), cmocka_unit_test(test_every_byte_change),
        cmocka_unit_test(test_moved_extents),     cmocka_unit_test(test_keys),
        cmocka_unit_test(test_altered_index),
        cmocka_unit_test(test_index_downgrades),     cmocka_unit_test(test_marker_nowhere),
        cmocka_unit_test(test_nonces_unique),     cmocka_unit_test(test_per_file_memory),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
