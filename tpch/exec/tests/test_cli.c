/*
 * test_cli.c - spillbench's command line: --help succeeds, every kind of
 * bad flag exits with status 2 and one line on stderr, a small real run
 * writes a JSON report and a results file, a query over --temp-limit fails
 * cleanly without leaving temp files, --io-limit keeps results equal, and
 * paired mode runs every configuration of every query once per round, in a
 * permutation per round, with the same answers everywhere.
 *
 * usage: test_cli SPILLBENCH DATA_DIR WORK_DIR
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_util.h"

static const char *bench, *data, *work;

/* Run spillbench with args; return its exit status, stderr line count in *lines. */
static int run(const char *args, int *lines)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s >%s/out.txt 2>%s/err.txt", bench, args, work, work);
    int st = system(cmd);
    char path[4096];
    snprintf(path, sizeof path, "%s/err.txt", work);
    FILE *f = fopen(path, "r");
    *lines = 0;
    if (f) {
        int c;
        while ((c = fgetc(f)) != EOF)
            *lines += c == '\n';
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool file_contains(const char *name, const char *needle)
{
    char path[4096], buf[65536];
    snprintf(path, sizeof path, "%s/%s", work, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/*
 * Paired mode: 4 configurations x 3 rounds x 2 queries. Every (query,
 * configuration) runs once per round, each round's positions are a
 * permutation of 0..3, the answers are identical, and the suite has both
 * sets (Q6 never spills, Q18 does).
 */
static void check_paired(void)
{
    char args[4096], path[4096], line[4096];
    snprintf(args, sizeof args,
             "--sf=0.01 --data-dir=%s --queries=6,18 --work-mem=64K "
             "--codec=none,lz4,zstd:1,auto --rounds=3 --seed=5 --format=json --out=%s/paired.json",
             data, work);
    int lines;
    CHECK(run(args, &lines) == 0);
    snprintf(path, sizeof path, "%s/paired.json", work);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    int count[2][4] = {{0}}, seen[2][3] = {{0}}, q = -1, identical = 0, spills = 0, control = 0;
    while (fgets(line, sizeof line, f)) {
        int round, pos, conf;
        if (strstr(line, "\"query\": \"Q6\""))
            q = 0;
        else if (strstr(line, "\"query\": \"Q18\""))
            q = 1;
        identical += strstr(line, "\"answers\": \"identical\"") != NULL;
        spills += strstr(line, "\"spilling\": {\"queries\": [\"Q18\"]") != NULL;
        control += strstr(line, "\"control\": {\"queries\": [\"Q6\"]") != NULL;
        if (q >= 0 && sscanf(line, " {\"round\": %d, \"position\": %d, \"config\": %d", &round,
                             &pos, &conf) == 3) {
            CHECK(round >= 0 && round < 3 && pos >= 0 && pos < 4 && conf >= 0 && conf < 4);
            if (round >= 0 && round < 3 && pos >= 0 && pos < 4 && conf >= 0 && conf < 4) {
                count[q][conf]++;
                seen[q][round] |= 1 << pos;
            }
        }
    }
    fclose(f);
    for (int i = 0; i < 2; i++) {
        for (int c = 0; c < 4; c++)
            CHECK(count[i][c] == 3);
        for (int r = 0; r < 3; r++)
            CHECK(seen[i][r] == 15);
    }
    CHECK(identical == 2);
    CHECK(spills == 1);
    CHECK(control == 1);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_cli SPILLBENCH DATA_DIR WORK_DIR\n");
        return 2;
    }
    bench = argv[1];
    data = argv[2];
    work = argv[3];
    int lines;
    CHECK(run("--help", &lines) == 0);
    CHECK(file_contains("out.txt", "--work-mem"));
    static const char *const bad[] = {
        "--codec=snappy",
        "--work-mem=lots",
        "--work-mem=1K",
        "--block-size=3000",
        "--block-size=2M",
        "--queries=0",
        "--queries=23",
        "--queries=3,x",
        "--sf=0",
        "--sf=abc",
        "--repeat=0",
        "--format=xml",
        "--level=fast",
        "--bogus",
        "stray",
        "--codec",
        "--temp-limit=lots",
        "--temp-limit=0",
        "--io-limit=fast",
        "--io-limit=0/s",
        "--rounds=0",
        "--seed=x",
        "--codec=lz4,",
        "--codec=zstd:x",
        "--codec=lz4,zstd --repeat=2",
        "--codec=lz4,zstd --format=csv",
        "--rounds=2 --verify",
        "--work-mem=4MB,1K",
        "--encrypt=yes",
        "--encrypt=off,on,off",
        "--encrypt=off,on --verify",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run(bad[i], &lines);
        if (rc != 2 || lines != 1)
            fprintf(stderr, "'%s': status %d, %d stderr lines\n", bad[i], rc, lines);
        CHECK(rc == 2);
        CHECK(lines == 1);
    }
    char args[4096];
    snprintf(args, sizeof args,
             "--sf=0.01 --data-dir=%s --queries=6,18 --work-mem=64K --block-size=4K "
             "--codec=zstd --format=json --verify --results-dir=%s/res",
             data, work);
    CHECK(run(args, &lines) == 0);
    CHECK(file_contains("out.txt", "\"total\""));
    CHECK(file_contains("out.txt", "\"verify\": \"ok\""));
    CHECK(file_contains("res/q6.tsv", "."));

    /* A query over the temp limit fails with the limit error and leaves no temp files. */
    snprintf(args, sizeof args, "mkdir -p %s/tmp && rm -rf %s/tmp/buffile-*", work, work);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args,
             "--sf=0.01 --data-dir=%s --queries=18 --work-mem=64K --temp-limit=64K "
             "--temp-dir=%s/tmp",
             data, work);
    CHECK(run(args, &lines) == 1);
    CHECK(file_contains("err.txt", "temp file limit reached"));
    snprintf(args, sizeof args, "test -z \"$(ls %s/tmp)\"", work);
    CHECK(system(args) == 0);
    /* The modelled slow disk changes time, never results. */
    snprintf(args, sizeof args,
             "--sf=0.01 --data-dir=%s --queries=18 --work-mem=64K --io-limit=400MB/s --verify "
             "--format=json",
             data);
    CHECK(run(args, &lines) == 0);
    CHECK(file_contains("out.txt", "\"verify\": \"ok\""));
    check_paired();
    return test_failures ? 1 : 0;
}
