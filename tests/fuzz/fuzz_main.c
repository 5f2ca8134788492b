/*
 * fuzz_main.c - the plain driver of a fuzz target (no libFuzzer needed).
 *
 *   <target> FILE|DIR...             replay each file (every file of a DIR)
 *   <target> --mutate=N FILE|DIR...  also replay N seeded mutations of each
 *   <target> --write-seeds DIR       write the target's seed corpus into DIR
 *
 * Mutations are deterministic (seeded by the file's index and N), so a
 * failure in ctest replays the same way; each is printed before it runs
 * when BF_FUZZ_VERBOSE is set. Exit status 0 when every input ran, 2 on a
 * bad command line, 1 when a file cannot be read; a failed property aborts.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "support.h"

static unsigned long replayed;

static void run_one(const unsigned char *data, size_t len)
{
    /* An exact-size copy, so reading past the input is an ASan error as under libFuzzer. */
    unsigned char *copy = malloc(len ? len : 1);
    if (copy == NULL)
        fuzz_fail("out of memory");
    if (len > 0)
        memcpy(copy, data, len);
    LLVMFuzzerTestOneInput(copy, len);
    free(copy);
    replayed++;
}

/* One mutation of `in` into `out` (capacity len + 64): flips, overwrites, cuts, inserts. */
static size_t mutate(t_rng *r, const unsigned char *in, size_t len, unsigned char *out)
{
    memcpy(out, in, len);
    size_t n = len;
    int edits = 1 + (int)t_below(r, 4);
    for (int e = 0; e < edits; e++) {
        uint64_t kind = t_below(r, 5);
        if (n == 0)
            kind = 4;
        if (kind == 0) { /* one bit, anywhere */
            out[t_below(r, n)] ^= (unsigned char)(1u << t_below(r, 8));
        } else if (kind == 1) { /* a random byte, biased to headers */
            size_t at = t_below(r, 2) ? t_below(r, n < 96 ? n : 96) : t_below(r, n);
            out[at] = (unsigned char)t_next(r);
        } else if (kind == 2) { /* an interesting value at a random spot */
            static const uint32_t vals[] = {0,       1,          0x7f,       0x80, 0xff, 0xffff,
                                            0x10000, 0x7fffffff, 0xffffffff, 4096, 4097, 65536};
            size_t at = t_below(r, n);
            uint32_t v = vals[t_below(r, sizeof(vals) / sizeof(vals[0]))];
            for (size_t k = 0; k < 4 && at + k < n; k++)
                out[at + k] = (unsigned char)(v >> (8 * k));
            if (t_below(r, 2) == 0) { /* or a 64-bit one near 2^48 or 2^64: offsets, lengths */
                static const uint64_t wide[] = {UINT64_MAX,
                                                UINT64_MAX - 4095,
                                                UINT64_C(1) << 63,
                                                (UINT64_C(1) << 48) - 1,
                                                UINT64_C(1) << 48,
                                                (UINT64_C(1) << 48) + 4096};
                uint64_t w = wide[t_below(r, sizeof(wide) / sizeof(wide[0]))];
                for (size_t k = 0; k < 8 && at + k < n; k++)
                    out[at + k] = (unsigned char)(w >> (8 * k));
            }
        } else if (kind == 3) { /* cut the tail */
            n = t_below(r, n + 1);
        } else if (n < len + 48) { /* insert a few bytes */
            size_t at = t_below(r, n + 1), k = 1 + t_below(r, 16);
            memmove(out + at + k, out + at, n - at);
            for (size_t i = 0; i < k; i++)
                out[at + i] = (unsigned char)t_next(r);
            n += k;
        }
    }
    return n;
}

static int replay_file(const char *path, unsigned long mutations, unsigned long index)
{
    size_t len;
    unsigned char *data = t_read_file(path, &len);
    if (data == NULL) {
        fprintf(stderr, "fuzz: cannot read %s\n", path);
        return 1;
    }
    if (getenv("BF_FUZZ_VERBOSE"))
        fprintf(stderr, "fuzz: %s\n", path);
    run_one(data, len);
    unsigned char *m = malloc(len + 64);
    if (m == NULL)
        fuzz_fail("out of memory");
    t_rng r = {index * 1000003u + mutations};
    for (unsigned long i = 0; i < mutations; i++) {
        if (getenv("BF_FUZZ_VERBOSE"))
            fprintf(stderr, "fuzz: %s mutation %lu\n", path, i);
        run_one(m, mutate(&r, data, len, m));
    }
    free(m);
    free(data);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file of `dir`, in name order so runs are reproducible. */
static int replay_dir(const char *dir, unsigned long mutations, unsigned long *index)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "fuzz: cannot open %s\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char **nn = realloc(names, (n + 1) * sizeof(*names));
        if (nn == NULL)
            fuzz_fail("out of memory");
        names = nn;
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_names);
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        status |= replay_file(path, mutations, (*index)++);
        free(names[i]);
    }
    free(names);
    return status;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: %s [--mutate=N] FILE|DIR...   replay inputs (and N mutations of each)\n"
               "       %s --write-seeds DIR           write the seed corpus into DIR\n",
               argv[0], argv[0]);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
        return fuzz_write_seeds(argv[2]) == 0 ? 0 : 1;
    unsigned long mutations = 0, index = 0;
    int status = 0, inputs = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mutate=", 9) == 0) {
            char *end;
            mutations = strtoul(argv[i] + 9, &end, 10);
            if (*end != '\0' || argv[i][9] == '\0') {
                fprintf(stderr, "fuzz: bad --mutate value '%s'\n", argv[i] + 9);
                return 2;
            }
            continue;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "fuzz: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            status |= replay_dir(argv[i], mutations, &index);
        else
            status |= replay_file(argv[i], mutations, index++);
        inputs++;
    }
    if (inputs == 0) {
        fprintf(stderr, "fuzz: no input files or directories (see --help)\n");
        return 2;
    }
    printf("%s: %lu inputs ran, no property failed\n", argv[0], replayed);
    return status;
}
