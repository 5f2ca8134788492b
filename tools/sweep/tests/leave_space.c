/*
 * leave_space.c - a process that spills and dies: it makes a space under
 * argv[1], writes argv[2] bytes into a temp file, prints the space's
 * directory and its bytes on disk, and kills itself with SIGKILL, leaving the directory behind as
 * a crash would (the test of buffile-sweep).
 */
#include <buffile.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: leave_space PARENT BYTES\n");
        return 2;
    }
    bf_space_options o;
    bf_space_options_init(&o);
    o.temp_dir = argv[1];
    o.codec = BF_CODEC_NONE;
    bf_space *sp;
    char err[256];
    if (bf_space_create(&o, &sp, err, sizeof(err)) != BF_OK) {
        fprintf(stderr, "leave_space: %s\n", err);
        return 1;
    }
    bf_file *f;
    static unsigned char buf[65536];
    memset(buf, 'x', sizeof(buf));
    long left = atol(argv[2]);
    if (bf_file_create(sp, NULL, &f) != BF_OK)
        return 1;
    while (left > 0) {
        size_t n = left < (long)sizeof(buf) ? (size_t)left : sizeof(buf);
        if (bf_file_write(f, buf, n) != BF_OK || bf_file_flush(f) != BF_OK)
            return 1;
        left -= (long)n;
    }
    bf_stats st;
    bf_space_stats(sp, &st);
    printf("%s %llu\n", bf_space_dir(sp), (unsigned long long)st.physical_bytes);
    fflush(stdout);
    raise(SIGKILL);
    return 1;
}
