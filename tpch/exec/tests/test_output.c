/*
 * test_output.c - where spillbench's output goes and when: with stderr on a
 * terminal (a pseudo-terminal here), a progress line there shows the data
 * generation, query i of n, round r of R and an ETA, and stdout gets none of
 * it; with stderr not a terminal, no progress at all; with stdout a pipe,
 * each row arrives when its query finishes, not at exit (the last query is
 * held back by --io-limit, so the first row must come before the total).
 *
 * usage: test_output SPILLBENCH DATA_DIR WORK_DIR
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static const char *bench, *data, *work;

/* Append what fd has until EOF (or EIO: the terminal's other side closed) to *buf. */
static void drain(int fd, char **buf, size_t *len)
{
    char chunk[4096];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        *buf = realloc(*buf, *len + (size_t)n + 1);
        memcpy(*buf + *len, chunk, (size_t)n);
        *len += (size_t)n;
        (*buf)[*len] = '\0';
    }
}

/* Run "spillbench args" with stdout to out_fd and stderr to err_fd; the child's pid. */
static pid_t spawn(const char *args, int out_fd, int err_fd, int close_fd)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s %s", bench, args);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        if (close_fd >= 0)
            close(close_fd);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int status_of(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *read_path(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", work, name);
    int fd = open(path, O_RDONLY);
    char *buf = calloc(1, 1);
    size_t len = 0;
    if (fd >= 0) {
        drain(fd, &buf, &len);
        close(fd);
    }
    return buf;
}

static int open_out(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", work, name);
    return open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
}

/* stderr on a pseudo-terminal: the progress line; stdout (a file) stays clean. */
static void check_terminal(void)
{
    int master, slave;
    CHECK(openpty(&master, &slave, NULL, NULL, NULL) == 0);
    char args[4096];
    snprintf(args, sizeof args,
             "--data-dir=%s/fresh --sf=0.01 --queries=6,18 --work-mem=64K --codec=none,lz4 "
             "--rounds=2 --seed=1",
             work);
    int out = open_out("tty-out.txt");
    pid_t pid = spawn(args, out, slave, master);
    close(slave);
    close(out);
    char *tty = calloc(1, 1);
    size_t len = 0;
    drain(master, &tty, &len);
    close(master);
    CHECK(status_of(pid) == 0);
    static const char *const shown[] = {
        "generating the tables (SF 0.01) into", "query 1 of 2 (Q6), warm-up",
        "query 2 of 2 (Q18), round 2 of 2", "elapsed, ETA ", "\r\033[K"};
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        if (!strstr(tty, shown[i]))
            fprintf(stderr, "the terminal did not show '%s'; it got:\n%s\n", shown[i], tty);
        CHECK(strstr(tty, shown[i]) != NULL);
    }
    char *report = read_path("tty-out.txt");
    CHECK(strstr(report, "Q18 spills") != NULL);
    CHECK(strchr(report, '\r') == NULL && strchr(report, '\033') == NULL);
    free(report);
    free(tty);
}

/* stderr a file: no progress, no control characters. */
static void check_no_terminal(void)
{
    char args[4096];
    snprintf(args, sizeof args, "--data-dir=%s --queries=6,18 --work-mem=64K", data);
    int out = open_out("plain-out.txt"), err = open_out("plain-err.txt");
    pid_t pid = spawn(args, out, err, -1);
    close(out);
    close(err);
    CHECK(status_of(pid) == 0);
    char *text = read_path("plain-err.txt");
    CHECK(text[0] == '\0');
    free(text);
}

/* stdout a pipe: the row of Q6 (fast) arrives while Q18 (slowed to 4 MB/s) still runs. */
static void check_pipe(const char *format, const char *first, const char *last)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    char args[4096];
    snprintf(args, sizeof args,
             "--data-dir=%s --queries=6,18 --work-mem=64K --codec=none --io-limit=4MB/s "
             "--format=%s",
             data, format);
    int err = open("/dev/null", O_WRONLY);
    pid_t pid = spawn(args, fds[1], err, fds[0]);
    close(fds[1]);
    close(err);
    char *buf = calloc(1, 1), chunk[4096];
    size_t len = 0;
    int early = 0;
    for (;;) {
        ssize_t n = read(fds[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        buf = realloc(buf, len + (size_t)n + 1);
        memcpy(buf + len, chunk, (size_t)n);
        len += (size_t)n;
        buf[len] = '\0';
        if (!early && strstr(buf, first))
            early = strstr(buf, last) == NULL ? 1 : -1;
    }
    close(fds[0]);
    CHECK(status_of(pid) == 0);
    if (early != 1)
        fprintf(stderr, "--format=%s to a pipe: '%s' %s\n", format, first,
                early ? "came with the last line, at exit" : "never came");
    CHECK(early == 1);
    CHECK(strstr(buf, last) != NULL);
    free(buf);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_output SPILLBENCH DATA_DIR WORK_DIR\n");
        return 2;
    }
    bench = argv[1];
    data = argv[2];
    work = argv[3];
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/fresh'", work);
    CHECK(system(cmd) == 0);
    check_terminal();
    check_no_terminal();
    check_pipe("table", "\nQ6 ", "\ntotal ");
    check_pipe("csv", "\nQ6,", "\ntotal,");
    CHECK(system(cmd) == 0);
    return test_failures ? 1 : 0;
}
