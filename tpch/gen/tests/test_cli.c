/* tpchgen command line: --help succeeds, every kind of bad argument exits 2
 * with exactly one line on stderr, an unwritable output exits 1, and a
 * small valid run writes just the requested tables. argv[1] is the tool. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static const char *tool;
static char errfile[4200];

/* Runs the tool with args; returns its exit status and the stderr lines. */
static int run(const char *args, int *err_lines)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", tool, args, errfile);
    int st = system(cmd);
    size_t len = 0;
    char *err = test_read_file(errfile, &len);
    *err_lines = 0;
    for (size_t i = 0; err && i < len; i++)
        *err_lines += err[i] == '\n';
    free(err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect(const char *args, int status, int lines)
{
    int n;
    int st = run(args, &n);
    CHECK(st == status && n == lines, "tpchgen %s: exit %d with %d stderr lines, want %d and %d",
          args, st, n, status, lines);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s path/to/tpchgen\n", argv[0]);
        return 2;
    }
    tool = argv[1];
    char *dir = test_mkdtemp("cli");
    snprintf(errfile, sizeof errfile, "%s/stderr.txt", dir);
    char args[8192];

    expect("--help", 0, 0);
    expect("", 2, 1);
    expect("--out=/tmp/x", 2, 1);
    expect("--sf=1", 2, 1);
    expect("--sf=0 --out=/tmp/x", 2, 1);
    expect("--sf=abc --out=/tmp/x", 2, 1);
    expect("--sf=101 --out=/tmp/x", 2, 1);
    expect("--sf=1 --out=/tmp/x --format=csv", 2, 1);
    expect("--sf=1 --out=/tmp/x --tables=part,parts", 2, 1);
    expect("--sf=1 --out=/tmp/x --threads=0", 2, 1);
    expect("--sf=1 --out=/tmp/x --threads=1.5", 2, 1);
    expect("--sf=1 --out=/tmp/x --bogus", 2, 1);
    snprintf(args, sizeof args, "--sf=0.01 --out='%s/stderr.txt/sub' --tables=region", dir);
    expect(args, 1, 1);

    snprintf(args, sizeof args, "--sf=0.01 --out='%s/out' --tables=nation,region --threads=2",
             dir);
    expect(args, 0, 0);
    const char *present[] = {"nation.tbl", "region.tbl", "meta.txt"};
    const char *absent[] = {"part.tbl", "lineitem.tbl", "orders.tbl"};
    for (int i = 0; i < 3; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/out/%s", dir, present[i]);
        CHECK(access(path, F_OK) == 0, "%s missing", path);
        snprintf(path, sizeof path, "%s/out/%s", dir, absent[i]);
        CHECK(access(path, F_OK) != 0, "%s written", path);
    }
    snprintf(args, sizeof args, "--sf=0.01 --out='%s/out' --format=bin --tables=region", dir);
    expect(args, 0, 0);
    char path[8192];
    snprintf(path, sizeof path, "%s/out/region.bin", dir);
    CHECK(access(path, F_OK) == 0, "%s missing", path);

    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup of %s", dir);
    free(dir);
    if (test_failures)
        fprintf(stderr, "%d checks failed\n", test_failures);
    return test_failures ? 1 : 0;
}
