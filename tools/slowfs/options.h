/*
 * options.h - slowfs's command line: its own options, checked before
 * anything is mounted, and what it hands on to libfuse.
 */
#ifndef SLOWFS_OPTIONS_H
#define SLOWFS_OPTIONS_H

#define FUSE_USE_VERSION 314
#include <fuse.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "device.h"

/* How a stats file at the mount's root is named; it is not listed in readdir. */
#define SF_CONTROL_NAME ".slowfs-stats"

/* How far callers may run ahead of the device by default (--burst-us; --resume-us is half). */
#define SF_DEFAULT_BURST_NS 4000000u

typedef struct sf_config {
    char *backing;    /* the backing directory, as given */
    char *mountpoint; /* as given; also left in the arguments for libfuse */
    char *stats_file; /* where the stats go at unmount (NULL: stderr) */
    sf_model model;
    int help, version;
} sf_config;

/*
 * Parse argv. On success returns 0, fills *cfg and leaves in *fuse_args
 * (free with fuse_opt_free_args) what libfuse is to see: the mount point,
 * -f/-d/-s, the -o options, and slowfs's own defaults before them
 * (default_permissions, fsname, subtype, max_threads). On a bad option
 * returns -1 with one line (no newline) in err; *fuse_args is then freed.
 * Free *cfg with sf_config_free either way.
 */
int sf_parse_args(int argc, char **argv, sf_config *cfg, struct fuse_args *fuse_args, char *err,
                  size_t errlen);
void sf_config_free(sf_config *cfg);

/*
 * A rate: a number with an optional K, M or G (powers of 1024, as
 * spillbench's --io-limit), an optional B and an optional "/s", e.g. 200MB,
 * 1.5G, 400MB/s; "0" or "unlimited" is 0 (no limit). Returns 0, or -1 when
 * s is not a rate or exceeds 2^62 bytes/s.
 */
int sf_parse_rate(const char *s, uint64_t *out);

/* The usage text. */
void sf_usage(FILE *to);

#endif
