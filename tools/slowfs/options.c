/*
 * options.c - parsing slowfs's command line.
 *
 * Every value of ours is checked here, before the backing directory is
 * opened or anything mounted, so a bad flag costs one line and exit 2.
 * libfuse's own options pass through untouched; any other "--name" is an
 * error here rather than something libfuse would report less clearly.
 */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { KEY_HELP, KEY_VERSION };

/* Raw option values as given; each is parsed and checked after fuse_opt_parse. */
typedef struct raw {
    char *rate, *read_rate, *write_rate, *latency_us, *burst_us, *resume_us, *stats_file;
} raw;

/* fuse_opt_parse hands its data pointer both to the templates and to on_arg: one struct serves. */
typedef struct parse {
    raw r;
    sf_config *cfg;
    char *err;
    size_t errlen;
    int failed;
} parse;

#define OPT(t, field)                                                                              \
    {                                                                                              \
        t, offsetof(parse, r.field), 0                                                             \
    }
static const struct fuse_opt templates[] = {
    OPT("--rate=%s", rate),
    OPT("--read-rate=%s", read_rate),
    OPT("--write-rate=%s", write_rate),
    OPT("--latency-us=%s", latency_us),
    OPT("--burst-us=%s", burst_us),
    OPT("--resume-us=%s", resume_us),
    OPT("--stats-file=%s", stats_file),
    FUSE_OPT_KEY("-h", KEY_HELP),
    FUSE_OPT_KEY("--help", KEY_HELP),
    FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION),
    FUSE_OPT_END,
};

static int fail(parse *p, const char *fmt, const char *arg)
{
    if (!p->failed)
        snprintf(p->err, p->errlen, fmt, arg);
    p->failed = 1;
    return -1;
}

static int on_arg(void *data, const char *arg, int key, struct fuse_args *out)
{
    (void)out;
    parse *p = data;
    switch (key) {
    case KEY_HELP: p->cfg->help = 1; return 0;
    case KEY_VERSION: p->cfg->version = 1; return 0;
    case FUSE_OPT_KEY_NONOPT:
        if (p->cfg->backing == NULL) {
            p->cfg->backing = strdup(arg);
            return 0; /* ours alone: libfuse sees only the mount point */
        }
        if (p->cfg->mountpoint == NULL) {
            p->cfg->mountpoint = strdup(arg);
            return 1;
        }
        return fail(p, "unexpected argument '%s' (BACKING and MOUNTPOINT are given already)", arg);
    default:
        if (strncmp(arg, "--", 2) == 0)
            return fail(p, "unknown option '%s'", arg);
        return 1;
    }
}

int sf_parse_rate(const char *s, uint64_t *out)
{
    if (strcasecmp(s, "unlimited") == 0) {
        *out = 0;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0)
        return -1;
    double mult = 1;
    const char *units = "KMG";
    const char *u = *end ? strchr(units, *end & ~0x20) : NULL;
    if (u != NULL) {
        for (const char *k = units; k <= u; k++)
            mult *= 1024;
        end++;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (strcmp(end, "/s") == 0)
        end += 2;
    if (*end != '\0' || v * mult > 4.6e18)
        return -1;
    *out = (uint64_t)(v * mult + 0.5);
    return 0;
}

/* A whole number of microseconds up to max_us, as nanoseconds. */
static int parse_us(const char *s, uint64_t max_us, uint64_t *ns)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || errno || s[0] == '-' || v > max_us)
        return -1;
    *ns = (uint64_t)v * 1000u;
    return 0;
}

static void check_values(parse *p, const raw *r)
{
    sf_model *m = &p->cfg->model;
    if (r->rate && sf_parse_rate(r->rate, &m->rate) != 0)
        fail(p, "--rate: '%s' is not a rate (e.g. 200MB, 1.5G, unlimited)", r->rate);
    if (r->read_rate && sf_parse_rate(r->read_rate, &m->dir_rate[SF_READ]) != 0)
        fail(p, "--read-rate: '%s' is not a rate (e.g. 200MB, 1.5G, unlimited)", r->read_rate);
    if (r->write_rate && sf_parse_rate(r->write_rate, &m->dir_rate[SF_WRITE]) != 0)
        fail(p, "--write-rate: '%s' is not a rate (e.g. 200MB, 1.5G, unlimited)", r->write_rate);
    if (r->latency_us && parse_us(r->latency_us, 10000000u, &m->latency_ns) != 0)
        fail(p, "--latency-us: '%s' is not a whole number of microseconds up to 10000000",
             r->latency_us);
    if (r->burst_us && parse_us(r->burst_us, 10000000u, &m->burst_ns) != 0)
        fail(p, "--burst-us: '%s' is not a whole number of microseconds up to 10000000",
             r->burst_us);
    m->resume_ns = m->burst_ns / 2;
    if (r->resume_us && parse_us(r->resume_us, 10000000u, &m->resume_ns) != 0)
        fail(p, "--resume-us: '%s' is not a whole number of microseconds up to 10000000",
             r->resume_us);
    if (m->resume_ns > m->burst_ns)
        fail(p, "--resume-us: '%s' is more than --burst-us", r->resume_us);
    if (r->stats_file && r->stats_file[0] == '\0')
        fail(p, "--stats-file: %s", "empty path");
}

/* "fsname=BACKING", escaped for -o: the backing directory names the mount in the mount table. */
static int add_fsname(struct fuse_args *args, const char *backing)
{
    char *opt = malloc(strlen(backing) + sizeof "fsname=");
    char *escaped = NULL;
    int rc = -1;
    if (opt != NULL) {
        strcpy(opt, "fsname=");
        strcat(opt, backing);
        if (fuse_opt_add_opt_escaped(&escaped, opt) == 0 && fuse_opt_add_arg(args, "-o") == 0)
            rc = fuse_opt_add_arg(args, escaped);
    }
    free(escaped);
    free(opt);
    return rc;
}

int sf_parse_args(int argc, char **argv, sf_config *cfg, struct fuse_args *fuse_args, char *err,
                  size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->model.burst_ns = SF_DEFAULT_BURST_NS;
    parse p = {{0}, cfg, err, errlen, 0};
    raw *r = &p.r;
    struct fuse_args given = FUSE_ARGS_INIT(argc, argv);
    if (fuse_opt_parse(&given, &p, templates, on_arg) != 0)
        fail(&p, "%s", "cannot parse the command line");
    if (!p.failed)
        check_values(&p, r);
    if (!p.failed && !cfg->help && !cfg->version && (!cfg->backing || !cfg->mountpoint))
        fail(&p, "%s", "usage: slowfs BACKING MOUNTPOINT [options]");
    cfg->stats_file = r->stats_file;
    free(r->rate);
    free(r->read_rate);
    free(r->write_rate);
    free(r->latency_us);
    free(r->burst_us);
    free(r->resume_us);

    /* Our defaults go first, so that a -o of the caller's overrides them. */
    *fuse_args = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
    if (!p.failed &&
        (fuse_opt_add_arg(fuse_args, argc > 0 ? argv[0] : "slowfs") != 0 ||
         fuse_opt_add_arg(fuse_args, "-o") != 0 ||
         fuse_opt_add_arg(fuse_args, "default_permissions,subtype=slowfs,max_threads=64") != 0 ||
         (cfg->backing && add_fsname(fuse_args, cfg->backing) != 0)))
        fail(&p, "%s", "out of memory");
    for (int i = 1; !p.failed && i < given.argc; i++)
        if (fuse_opt_add_arg(fuse_args, given.argv[i]) != 0)
            fail(&p, "%s", "out of memory");
    fuse_opt_free_args(&given);
    if (p.failed) {
        fuse_opt_free_args(fuse_args);
        return -1;
    }
    return 0;
}

void sf_config_free(sf_config *cfg)
{
    free(cfg->backing);
    free(cfg->mountpoint);
    free(cfg->stats_file);
    memset(cfg, 0, sizeof *cfg);
}

void sf_usage(FILE *to)
{
    fprintf(to,
            "usage: slowfs BACKING MOUNTPOINT [options]\n"
            "Mount BACKING at MOUNTPOINT (they may be the same directory) as a slow device:\n"
            "every read and write goes through a token bucket, with no page cache above it.\n"
            "\n"
            "  --rate=RATE         reads and writes together, e.g. 200MB (default unlimited)\n"
            "  --read-rate=RATE    reads alone (on top of --rate, if both are given)\n"
            "  --write-rate=RATE   writes alone (likewise)\n"
            "  --latency-us=N      added to every read and write request (default 0)\n"
            "  --burst-us=N        how far callers may run ahead of the device, in\n"
            "                      microseconds of transfer (default %u)\n"
            "  --resume-us=N       a caller held back is released this far ahead\n"
            "                      (default half of --burst-us; = --burst-us: every\n"
            "                      request waits just its own transfer)\n"
            "  --stats-file=FILE   write the stats there at unmount (default: stderr)\n"
            "  -f                  stay in the foreground\n"
            "  -o OPT[,OPT...]     mount options for libfuse, e.g. allow_other\n"
            "  -h, --help          this text;  -V, --version  the versions\n"
            "RATE: bytes per second, with K, M or G (powers of 1024), B and /s optional:\n"
            "200MB = 200MB/s = 209715200 bytes/s; 0 or 'unlimited' for no limit.\n"
            "The stats are also readable at MOUNTPOINT/" SF_CONTROL_NAME ".\n"
            "Unmount with: fusermount3 -u MOUNTPOINT\n",
            SF_DEFAULT_BURST_NS / 1000u);
}
