/* tpchgen command line: --help and --version succeed, every kind of bad
 * argument exits 2 with exactly one line on stderr (an unknown option named
 * as unknown, an out-of-range value with its range), an unwritable output
 * exits 1, a small valid run writes just the requested tables, and with
 * stderr on a terminal (a pseudo-terminal) the progress bar shows there.
 * argv[1] is the tool. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static const char *tool;
static char errfile[4200], outfile[4200];
static char last_err[4096]; /* the stderr of the last run */

/* Runs the tool with args; returns its exit status and the stderr lines. */
static int run(const char *args, int *err_lines)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", tool, args, outfile, errfile);
    int st = system(cmd);
    size_t len = 0;
    char *err = test_read_file(errfile, &len);
    *err_lines = 0;
    for (size_t i = 0; err && i < len; i++)
        *err_lines += err[i] == '\n';
    snprintf(last_err, sizeof last_err, "%s", err ? err : "");
    free(err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* args exit 2 with one line on stderr that contains `says`. */
static void refused(const char *args, const char *says)
{
    int n;
    int st = run(args, &n);
    CHECK(st == 2 && n == 1 && strstr(last_err, says) != NULL,
          "tpchgen %s: exit %d, %d lines: '%s', want 2 and one line with '%s'", args, st, n,
          last_err, says);
}

/* stderr on a pseudo-terminal: the progress bar is drawn there. */
static void check_terminal(const char *dir)
{
    int master, slave;
    CHECK(openpty(&master, &slave, NULL, NULL, NULL) == 0, "openpty");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "exec '%s' --sf=0.01 --out='%s/tty' --tables=region,nation", tool,
             dir);
    pid_t pid = fork();
    if (pid == 0) {
        close(master);
        dup2(slave, 2);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(slave);
    char text[8192];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(master, text + len, sizeof text - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    text[len] = '\0';
    close(master);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tpchgen on a terminal: status %d", st);
    CHECK(strstr(text, "100%") != NULL && strstr(text, "written to") != NULL,
          "the terminal got '%s', want the progress bar at 100%% and the summary", text);
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
    snprintf(outfile, sizeof outfile, "%s/stdout.txt", dir);
    char args[8192];

    expect("--help", 0, 0);
    expect("--version", 0, 0);
    size_t vlen = 0;
    char *version = test_read_file(outfile, &vlen);
    CHECK(version && strncmp(version, "tpchgen (buffile) ", 18) == 0, "--version printed '%s'",
          version ? version : "");
    free(version);
    refused("--bogus", "unknown option --bogus");
    refused("--verbose", "unknown option --verbose");
    refused("--sf=1 --out=/tmp/x --frob=2", "unknown option --frob");
    refused("-x", "unknown option -x");
    refused("--sf 1", "--sf needs a value");
    refused("--sf=101 --out=/tmp/x", "101 is out of range 0.01..100");
    refused("--sf=abc --out=/tmp/x", "'abc' is not a number");
    refused("--sf=1 --out=/tmp/x --threads=0", "0 is out of range 1..64");
    refused("--sf=1 --out=/tmp/x --threads=1.5", "'1.5' is not an integer");
    refused("--sf=1 --out=/tmp/x --format=csv", "'csv' is not tbl or bin");
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

    check_terminal(dir);

    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup of %s", dir);
    free(dir);
    if (test_failures)
        fprintf(stderr, "%d checks failed\n", test_failures);
    return test_failures ? 1 : 0;
}
