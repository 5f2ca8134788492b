/*
 * buffile-sweep - list the temp directories buffile spaces keep under a
 * temp parent, and remove those whose process is gone (a crash, a kill -9:
 * a space's directory goes only with bf_space_destroy).
 *
 *   buffile-sweep [--dir=PARENT]            list: path, owner pid, state, bytes, files, age
 *   buffile-sweep [--dir=PARENT] --remove   remove the dead owners' directories
 *
 * PARENT defaults to $TMPDIR, else /tmp, as the library's default. Only
 * the calling user's directories are listed or removed, never a live
 * process's, and nothing is followed out of a directory (bf_sweep).
 * Exit status 0, 1 when the parent cannot be read, 2 on a bad command line.
 */
#include <buffile.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *prog = "buffile-sweep";

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: %s [--dir=PARENT] [--remove]\n"
            "List the temp directories buffile spaces keep under PARENT, and remove those\n"
            "whose process is gone (left by a crash or a kill).\n"
            "\n"
            "  --dir=PARENT  the temp parent to look in (default: $TMPDIR, else /tmp)\n"
            "  --remove      remove the directories of owners that no longer run\n"
            "  --version     print its version and the running library's, and exit\n"
            "  --help        print this help and exit\n"
            "\n"
            "Columns of the list:\n"
            "  directory  the space's directory (buffile-<pid>-<random>)\n"
            "  pid        the process that made it\n"
            "  state      running (in use: never removed) or dead (a leftover)\n"
            "  bytes      bytes of its files (its spilled data)\n"
            "  files      how many files it holds\n"
            "  age        time since it last changed\n"
            "\n"
            "Exit status: 0 done, 1 PARENT cannot be read, 2 bad command line.\n",
            prog);
}

static void human_age(int64_t s, char *buf, size_t len)
{
    if (s < 120)
        snprintf(buf, len, "%" PRId64 "s", s);
    else if (s < 7200)
        snprintf(buf, len, "%" PRId64 "m", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%" PRId64 "h", s / 3600);
    else
        snprintf(buf, len, "%" PRId64 "d", s / 86400);
}

typedef struct tally {
    int dead;
    uint64_t dead_bytes;
} tally;

static int show(void *ctx, const bf_leftover *d)
{
    tally *t = ctx;
    char age[32];
    human_age(d->age_seconds, age, sizeof(age));
    printf("%s\t%" PRId64 "\t%s\t%" PRIu64 "\t%" PRIu64 "\t%s\n", d->path, d->pid,
           d->alive ? "running" : "dead", d->bytes, d->files, age);
    if (!d->alive) {
        t->dead++;
        t->dead_bytes += d->bytes;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    int remove = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            unsigned v = bf_version_number();
            printf("%s (buffile) %d.%d.%d\nlibbuffile %u.%u.%u\n", prog, BF_VERSION_MAJOR,
                   BF_VERSION_MINOR, BF_VERSION_PATCH, v / 10000, v / 100 % 100, v % 100);
            return 0;
        } else if (strcmp(a, "--remove") == 0) {
            remove = 1;
        } else if (strncmp(a, "--dir=", 6) == 0 && a[6] != '\0') {
            dir = a + 6;
        } else if (strcmp(a, "--dir") == 0 || strcmp(a, "--dir=") == 0) {
            fprintf(stderr, "%s: --dir needs a directory: --dir=PARENT\n", prog);
            return 2;
        } else {
            fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, a);
            return 2;
        }
    }
    const char *where = dir != NULL ? dir : getenv("TMPDIR");
    if (where == NULL || where[0] == '\0')
        where = "/tmp";
    if (remove) {
        int n = bf_sweep(dir);
        if (n < 0) {
            fprintf(stderr, "%s: cannot read %s: %s\n", prog, where, bf_strerror(n));
            return 1;
        }
        printf("removed %d director%s of processes that no longer run under %s\n", n,
               n == 1 ? "y" : "ies", where);
        return 0;
    }
    tally t = {0};
    printf("directory\tpid\tstate\tbytes\tfiles\tage\n");
    int n = bf_sweep_list(dir, show, &t);
    if (n < 0) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, where, bf_strerror(n));
        return 1;
    }
    fprintf(stderr,
            "%d space director%s under %s; %d of processes that no longer run (%" PRIu64
            " bytes)%s\n",
            n, n == 1 ? "y" : "ies", where, t.dead, t.dead_bytes,
            t.dead > 0 ? ": --remove removes them" : "");
    return 0;
}
