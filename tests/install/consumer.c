/*
 * consumer.c - an executor-shaped program that only knows the installed
 * buffile.h: writes, rewinds, reads back, and exits 0 when the bytes match.
 */
#include <buffile.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    bf_space *sp;
    char err[256];
    if (bf_space_create(NULL, &sp, err, sizeof err) != BF_OK) {
        fprintf(stderr, "consumer: %s\n", err);
        return 1;
    }
    bf_file *f;
    char got[6] = {0};
    int ok = bf_file_create(sp, NULL, &f) == BF_OK && bf_file_write(f, "spill", 5) == BF_OK &&
             bf_file_seek(f, 0, BF_SEEK_SET) == BF_OK && bf_file_read(f, got, 5) == 5 &&
             strcmp(got, "spill") == 0;
    bf_space_destroy(sp);
    return ok ? 0 : 1;
}
