/*
 * test_options.c - slowfs's command line: rates and their units, what is
 * handed on to libfuse, and one clear message for each kind of bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "options.h"

#define MIB (1024ull * 1024ull)

static void test_rates(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } good[] = {
        {"200MB", 200 * MIB}, {"200MB/s", 200 * MIB},
        {"200M", 200 * MIB},  {"200mb", 200 * MIB},
        {"1.5G", 1536 * MIB}, {"64K", 65536},
        {"64KB/s", 65536},    {"100", 100},
        {"100B", 100},        {"0", 0},
        {"unlimited", 0},     {"UNLIMITED", 0},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 12345;
        assert_int_equal(sf_parse_rate(good[i].s, &v), 0);
        assert_true(v == good[i].v);
    }
    static const char *const bad[] = {"",   "abc",  "-1",  "5X",  "5MBs", "5 MB",
                                      "MB", "1e30", "nan", "inf", "5/s/s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 12345;
        assert_int_equal(sf_parse_rate(bad[i], &v), -1);
        assert_true(v == 12345);
    }
}

/* Parse a NULL-terminated command line; returns sf_parse_args's result. */
static int parse(char **argv, sf_config *cfg, struct fuse_args *fa, char *err, size_t len)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    err[0] = '\0';
    return sf_parse_args(argc, argv, cfg, fa, err, len);
}

static int has_arg(const struct fuse_args *fa, const char *arg)
{
    for (int i = 0; i < fa->argc; i++)
        if (strcmp(fa->argv[i], arg) == 0)
            return 1;
    return 0;
}

/* Whether "-o OPT" is among the arguments. */
static int has_opt(const struct fuse_args *fa, const char *opt)
{
    for (int i = 1; i < fa->argc; i++)
        if (strcmp(fa->argv[i - 1], "-o") == 0 && strcmp(fa->argv[i], opt) == 0)
            return 1;
    return 0;
}

static void test_full_line(void **state)
{
    (void)state;
    char *argv[] = {"slowfs",
                    "/data/back,ing",
                    "/mnt/slow",
                    "--rate=200MB",
                    "--read-rate=1G",
                    "--write-rate=50MB/s",
                    "--latency-us=150",
                    "--burst-us=0",
                    "--resume-us=0",
                    "-f",
                    "-o",
                    "allow_other",
                    "--stats-file=/tmp/s",
                    NULL};
    sf_config cfg;
    struct fuse_args fa;
    char err[256];
    assert_int_equal(parse(argv, &cfg, &fa, err, sizeof err), 0);
    assert_string_equal(cfg.backing, "/data/back,ing");
    assert_string_equal(cfg.mountpoint, "/mnt/slow");
    assert_string_equal(cfg.stats_file, "/tmp/s");
    assert_true(cfg.model.rate == 200 * MIB);
    assert_true(cfg.model.dir_rate[SF_READ] == 1024 * MIB);
    assert_true(cfg.model.dir_rate[SF_WRITE] == 50 * MIB);
    assert_true(cfg.model.latency_ns == 150000);
    assert_true(cfg.model.burst_ns == 0);
    assert_true(cfg.model.resume_ns == 0);
    /* libfuse sees the mount point and its own options, never the backing directory or ours. */
    assert_true(has_arg(&fa, "/mnt/slow"));
    assert_true(has_arg(&fa, "-f"));
    assert_true(has_opt(&fa, "allow_other"));
    assert_true(has_opt(&fa, "default_permissions,subtype=slowfs,max_threads=64"));
    assert_true(has_opt(&fa, "fsname=/data/back\\,ing"));
    for (int i = 0; i < fa.argc; i++) {
        assert_null(strstr(fa.argv[i], "--"));
        assert_null(strstr(fa.argv[i], "/data/back,ing"));
    }
    fuse_opt_free_args(&fa);
    sf_config_free(&cfg);
}

static void test_defaults(void **state)
{
    (void)state;
    char *argv[] = {"slowfs", "b", "m", NULL};
    sf_config cfg;
    struct fuse_args fa;
    char err[256];
    assert_int_equal(parse(argv, &cfg, &fa, err, sizeof err), 0);
    assert_true(cfg.model.rate == 0 && cfg.model.dir_rate[0] == 0 && cfg.model.dir_rate[1] == 0);
    assert_true(cfg.model.latency_ns == 0);
    assert_true(cfg.model.burst_ns == SF_DEFAULT_BURST_NS);
    assert_true(cfg.model.resume_ns == SF_DEFAULT_BURST_NS / 2);
    assert_null(cfg.stats_file);
    assert_false(cfg.help || cfg.version);
    fuse_opt_free_args(&fa);
    sf_config_free(&cfg);

    char *help[] = {"slowfs", "--help", NULL};
    assert_int_equal(parse(help, &cfg, &fa, err, sizeof err), 0);
    assert_true(cfg.help);
    fuse_opt_free_args(&fa);
    sf_config_free(&cfg);
}

static void test_bad_lines(void **state)
{
    (void)state;
    static const struct {
        const char *arg; /* added to "slowfs b m", or NULL for "slowfs b" */
        const char *says;
    } bad[] = {
        {"--rate=fast", "--rate: 'fast' is not a rate"},
        {"--read-rate=-3M", "--read-rate: '-3M' is not a rate"},
        {"--write-rate=", "--write-rate: '' is not a rate"},
        {"--latency-us=1.5", "--latency-us: '1.5' is not a whole number"},
        {"--latency-us=-1", "--latency-us: '-1' is not a whole number"},
        {"--burst-us=20000000", "--burst-us: '20000000' is not a whole number"},
        {"--resume-us=5000", "--resume-us: '5000' is more than --burst-us"},
        {"--resume-us=x", "--resume-us: 'x' is not a whole number"},
        {"--stats-file=", "--stats-file: empty path"},
        {"--rates=1M", "unknown option '--rates=1M'"},
        {"--rate", "unknown option '--rate'"},
        {"extra", "unexpected argument 'extra'"},
        {NULL, "usage: slowfs BACKING MOUNTPOINT"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = {"slowfs", "b", bad[i].arg ? "m" : NULL, (char *)bad[i].arg, NULL};
        sf_config cfg;
        struct fuse_args fa;
        char err[256];
        assert_int_equal(parse(argv, &cfg, &fa, err, sizeof err), -1);
        if (strstr(err, bad[i].says) != err) {
            print_error("case %zu: got '%s'\n", i, err);
            fail();
        }
        assert_null(strchr(err, '\n'));
        assert_int_equal(fa.argc, 0);
        sf_config_free(&cfg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_full_line),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_bad_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
