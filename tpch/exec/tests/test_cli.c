/*
 * test_cli.c - spillbench's command line: --help and --version succeed,
 * every kind of bad flag exits with status 2 and one line on stderr that
 * names an unknown option as unknown and an out-of-range value's range, a
 * data directory that does not hold what was asked for (another scale
 * factor, tbl tables, other files) is refused and left as it was, and
 * --regenerate or spillbench's own unfinished directory is regenerated; a small real run
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* args exit 2 with one line on stderr that contains `says`. */
static void refused(const char *args, const char *says)
{
    int lines;
    int rc = run(args, &lines);
    bool ok = rc == 2 && lines == 1 && file_contains("err.txt", says);
    if (!ok)
        fprintf(stderr, "'%s': status %d, %d stderr lines, want 2, 1 line with '%s'\n", args, rc,
                lines, says);
    CHECK(ok);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", work, dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static bool exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", work, dir, name);
    return access(path, F_OK) == 0;
}

/* The number of entries of WORK/dir. */
static int entries(const char *dir)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exit $(ls -A '%s/%s' | wc -l)", work, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Data directories: the fixture (SF 0.01, bin) is refused for another --sf and
 * used without one; a tbl directory, and a directory of other files, are refused
 * and left as they were; --regenerate writes binary tables into the tbl one; a
 * directory spillbench created but did not finish (its marker, no meta.txt) is
 * generated again without asking.
 */
static void check_data_dirs(void)
{
    char args[4096], meta[4096];
    snprintf(meta, sizeof meta, "%s/meta.txt", data);
    struct stat before, after;
    CHECK(stat(meta, &before) == 0);
    snprintf(args, sizeof args, "--data-dir=%s --sf=0.02 --queries=6", data);
    refused(args, "holds SF 0.01, not the SF 0.02 asked for");
    CHECK(stat(meta, &after) == 0 && after.st_mtime == before.st_mtime &&
          after.st_size == before.st_size);
    int lines;
    snprintf(args, sizeof args, "--data-dir=%s --queries=6 --format=csv", data);
    CHECK(run(args, &lines) == 0 && lines == 0);
    CHECK(file_contains("out.txt", "\nQ6,1,"));

    snprintf(args, sizeof args, "rm -rf %s/tbl %s/other %s/own && mkdir -p %s/tbl %s/other %s/own",
             work, work, work, work, work, work);
    CHECK(system(args) == 0);
    write_file("tbl", "meta.txt", "sf=0.01\nformat=1\noutput=tbl\n");
    write_file("tbl", "region.tbl", "0|AFRICA|x|\n");
    snprintf(args, sizeof args, "--data-dir=%s/tbl --queries=6", work);
    refused(args, "tbl (text) format");
    CHECK(file_contains("err.txt", "tpchgen --sf=0.01 --format=bin"));
    CHECK(entries("tbl") == 2 && !exists("tbl", "region.bin"));

    write_file("other", "notes.txt", "mine\n");
    snprintf(args, sizeof args, "--data-dir=%s/other --queries=6", work);
    refused(args, "has no meta.txt");
    CHECK(file_contains("err.txt", "--regenerate"));
    CHECK(entries("other") == 1);

    snprintf(args, sizeof args, "--data-dir=%s/tbl --sf=0.01 --queries=6 --regenerate", work);
    CHECK(run(args, &lines) == 0 && lines == 0);
    CHECK(file_contains("tbl/meta.txt", "output=bin") && exists("tbl", "region.bin") &&
          exists("tbl", "lineitem.bin"));

    write_file("own", ".spillbench-generated", "unfinished\n");
    write_file("own", "lineitem.bin", "half a table");
    snprintf(args, sizeof args, "--data-dir=%s/own --sf=0.01 --queries=6", work);
    CHECK(run(args, &lines) == 0 && lines == 0);
    CHECK(file_contains("own/meta.txt", "sf=0.01") && exists("own", "part.bin"));
    snprintf(args, sizeof args, "rm -rf %s/tbl %s/other %s/own", work, work, work);
    CHECK(system(args) == 0);
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
    CHECK(file_contains("out.txt", "phys/log"));
    CHECK(run("--version", &lines) == 0 && lines == 0);
    CHECK(file_contains("out.txt", "spillbench (buffile) "));
    CHECK(file_contains("out.txt", "libbuffile "));
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
        "--verbose",
        "--version=2",
        "-x",
        "--level=99999999",
        "--level=99999999999",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run(bad[i], &lines);
        if (rc != 2 || lines != 1)
            fprintf(stderr, "'%s': status %d, %d stderr lines\n", bad[i], rc, lines);
        CHECK(rc == 2);
        CHECK(lines == 1);
    }
    /* What the one line says. */
    refused("--foo", "unknown option --foo");
    refused("--verbose", "unknown option --verbose");
    refused("--foo=1", "unknown option --foo");
    refused("-x", "unknown option -x");
    refused("--verify=yes", "--verify takes no value");
    refused("--codec", "--codec needs a value");
    refused("--level=99999999", "out of range 1..65537");
    refused("--codec=zstd --level=99", "out of range -7..22");
    refused("--level=99999999999", "out of range");
    refused("--level=fast", "'fast' is not an integer");
    refused("--rounds=1001", "1001 is out of range 1..1000");
    refused("--threads=65", "'65' is not a number of workers 0..64");
    refused("--threads=1,x", "'x' is not a number of workers 0..64");
    refused("--repeat=0", "0 is out of range 1..1000");
    refused("--sf=101", "101 is out of range 0.01..100");
    refused("--sf=abc", "'abc' is not a number");
    refused("--queries=23", "23 is out of range 1..22");
    refused("--block-size=2M", "2M is out of range 4K..1M");
    refused("--block-size=12K", "12K is not a power of two");
    refused("--work-mem=1K", "1K is out of range: at least 64K");
    refused("--seed=-1", "not a non-negative integer");
    check_data_dirs();

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
