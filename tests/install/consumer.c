/*
 * consumer.c - an executor-shaped program that only knows the installed
 * buffile.h: checks that the library it runs with is the header's version,
 * writes through options it initialised, rewinds, reads back, and exits 0
 * when the bytes and the statistics match.
 */
#include <buffile.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    if (bf_version_number() != BF_VERSION_NUMBER) {
        fprintf(stderr, "consumer: header %u, library %u\n", (unsigned)BF_VERSION_NUMBER,
                bf_version_number());
        return 1;
    }
    bf_space_options so;
    bf_space_options_init(&so);
    so.codec = BF_CODEC_ZSTD;
    bf_space *sp;
    char err[256];
    if (bf_space_create(&so, &sp, err, sizeof err) != BF_OK) {
        fprintf(stderr, "consumer: %s\n", err);
        return 1;
    }
    bf_file_options fo;
    bf_file_options_init(&fo);
    fo.block_size = 16384;
    bf_file *f;
    char got[6] = {0};
    bf_stats st;
    int ok = bf_file_create(sp, &fo, &f) == BF_OK && bf_file_write(f, "spill", 5) == BF_OK &&
             bf_file_seek(f, 0, BF_SEEK_SET) == BF_OK && bf_file_read(f, got, 5) == 5 &&
             strcmp(got, "spill") == 0 && bf_file_codec(f) == BF_CODEC_ZSTD &&
             bf_file_block_size(f) == 16384;
    bf_space_stats(sp, &st);
    ok = ok && st.files_open == 1 && st.logical_written == 5;
    bf_space_destroy(sp);
    if (!ok)
        fprintf(stderr, "consumer: the bytes or the statistics read back wrong\n");
    return ok ? 0 : 1;
}
