/*
 * options.c - the options of a buffile VFS as text: "codec=zstd,level=3,
 * block_size=64K,temp_dir=/x,temp_limit=1G,threads=1", as bf_sqlite_register,
 * the BFSQLITE_OPTIONS variable and buffile_config() take them.
 *
 * Parsing only checks the form (a known key, a number where one is due, a
 * thread count within the library's BF_WORKERS_MAX); whether the library
 * accepts the values (a level in the codec's range, a block size it
 * supports, a temp directory it can use, the workers) is asked of the
 * library itself, by the caller, before the options are used.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfsqlite_int.h"
SQLITE_EXTENSION_INIT3

void bfs_options_default(bfs_options *o)
{
    memset(o, 0, sizeof(*o));
    o->codec = BF_CODEC_LZ4;
    o->level = BF_LEVEL_DEFAULT;
    o->block_size = 4096;
    o->temp_limit = BF_TEMP_LIMIT_AUTO; /* the library's default: 90% of the free bytes */
}

/* A byte count with an optional K, M or G suffix. */
static int parse_size(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    if (v[0] == '-' || v[0] == '\0')
        return -1;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno != 0 || end == v)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end != '\0' || (shift != 0 && n > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)n << shift;
    return 0;
}

/* A level given in the same text as a codec is that codec's, whatever the order. */
static int set_one(bfs_options *o, const char *k, const char *v, int *level_given, char *err,
                   size_t errlen)
{
    if (strcmp(k, "codec") == 0) {
        bf_codec c;
        if (bf_codec_parse(v, &c) != BF_OK) {
            snprintf(err, errlen, "unknown codec '%s' (none, lz4, zstd, zlib, auto)", v);
            return SQLITE_ERROR;
        }
        /* A level belongs to its codec: a new codec starts from its own default. */
        if (c != o->codec && !*level_given)
            o->level = BF_LEVEL_DEFAULT;
        o->codec = c;
    } else if (strcmp(k, "level") == 0) {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (strcmp(v, "default") == 0) {
            o->level = BF_LEVEL_DEFAULT;
        } else if (errno != 0 || end == v || *end != '\0' || n < -1000000 || n > 1000000) {
            snprintf(err, errlen, "bad level '%s' (a number or 'default')", v);
            return SQLITE_ERROR;
        } else {
            o->level = (int32_t)n;
        }
        *level_given = 1;
    } else if (strcmp(k, "block_size") == 0) {
        uint64_t n;
        if (parse_size(v, &n) != 0 || n > UINT32_MAX) {
            snprintf(err, errlen, "bad block_size '%s' (bytes, K or M)", v);
            return SQLITE_ERROR;
        }
        o->block_size = (uint32_t)n;
    } else if (strcmp(k, "temp_limit") == 0) {
        if (strcmp(v, "auto") == 0) {
            o->temp_limit = BF_TEMP_LIMIT_AUTO;
        } else if (parse_size(v, &o->temp_limit) != 0 || o->temp_limit == BF_TEMP_LIMIT_AUTO) {
            snprintf(err, errlen,
                     "bad temp_limit '%s' (bytes, K, M or G; 0 = none; auto = 90%% of the free "
                     "bytes)",
                     v);
            return SQLITE_ERROR;
        }
    } else if (strcmp(k, "threads") == 0) {
        /* Digits only: strtoul would take "-1" as ULONG_MAX and " 1" as 1. */
        char *end = NULL;
        unsigned long n = 0;
        int ok = v[0] >= '0' && v[0] <= '9';
        if (ok) {
            errno = 0;
            n = strtoul(v, &end, 10);
            ok = errno == 0 && *end == '\0' && n <= BF_WORKERS_MAX;
        }
        if (!ok) {
            snprintf(err, errlen,
                     "bad threads '%s' (0 = off, or 1..%d worker threads compressing the "
                     "temp files' blocks)",
                     v, BF_WORKERS_MAX);
            return SQLITE_ERROR;
        }
        o->threads = (uint32_t)n;
    } else if (strcmp(k, "temp_dir") == 0) {
        if (strlen(v) >= sizeof(o->temp_dir)) {
            snprintf(err, errlen, "temp_dir longer than %zu bytes", sizeof(o->temp_dir) - 1);
            return SQLITE_ERROR;
        }
        strcpy(o->temp_dir, v);
    } else {
        snprintf(err, errlen,
                 "unknown option '%s' (codec, level, block_size, temp_dir, temp_limit, threads)",
                 k);
        return SQLITE_ERROR;
    }
    return SQLITE_OK;
}

int bfs_options_parse(bfs_options *o, const char *text, char *err, size_t errlen)
{
    if (text == NULL)
        return SQLITE_OK;
    char item[1200];
    int level_given = 0;
    const char *p = text;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n >= sizeof(item)) {
            snprintf(err, errlen, "option too long: '%.40s...'", p);
            return SQLITE_ERROR;
        }
        memcpy(item, p, n);
        item[n] = '\0';
        p += n + (end != NULL);
        if (n == 0)
            continue;
        char *eq = strchr(item, '=');
        if (eq == NULL) {
            snprintf(err, errlen, "option '%s' has no value (key=value)", item);
            return SQLITE_ERROR;
        }
        *eq = '\0';
        if (set_one(o, item, eq + 1, &level_given, err, errlen) != SQLITE_OK)
            return SQLITE_ERROR;
    }
    return SQLITE_OK;
}

int bfs_options_set(bfs_options *o, const char *key, const char *value, char *err, size_t errlen)
{
    int level_given = 0;
    return set_one(o, key, value, &level_given, err, errlen);
}

int bfs_options_get(const bfs_options *o, const char *key, char *buf, size_t len)
{
    if (strcmp(key, "codec") == 0)
        snprintf(buf, len, "%s", bf_codec_name(o->codec));
    else if (strcmp(key, "level") == 0 && o->level == BF_LEVEL_DEFAULT)
        snprintf(buf, len, "default");
    else if (strcmp(key, "level") == 0)
        snprintf(buf, len, "%" PRId32, o->level);
    else if (strcmp(key, "block_size") == 0)
        snprintf(buf, len, "%" PRIu32, o->block_size);
    else if (strcmp(key, "temp_limit") == 0 && o->temp_limit == BF_TEMP_LIMIT_AUTO)
        snprintf(buf, len, "auto");
    else if (strcmp(key, "temp_limit") == 0)
        snprintf(buf, len, "%" PRIu64, o->temp_limit);
    else if (strcmp(key, "temp_dir") == 0)
        snprintf(buf, len, "%s", o->temp_dir);
    else if (strcmp(key, "threads") == 0)
        snprintf(buf, len, "%" PRIu32, o->threads);
    else {
        if (len > 0)
            buf[0] = '\0';
        return SQLITE_ERROR;
    }
    return SQLITE_OK;
}

void bfs_options_format(const bfs_options *o, char *buf, size_t len)
{
    static const char *const keys[] = {"codec",    "level",      "block_size",
                                       "temp_dir", "temp_limit", "threads"};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && used < len; i++) {
        char v[1100];
        bfs_options_get(o, keys[i], v, sizeof v);
        int n = snprintf(buf + used, len - used, "%s%s=%s", i ? "," : "", keys[i], v);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}
