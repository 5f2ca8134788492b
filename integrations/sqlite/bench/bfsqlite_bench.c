/*
 * bfsqlite_bench.c - SQLite's big temp-file operations on the buffile VFS
 * against stock SQLite: time and temp bytes per codec, in paired rounds.
 *
 *   bfsqlite_bench prepare DB ROWS        build the table t (ROWS rows, about 100 bytes each)
 *   bfsqlite_bench run DB RESULTS ROUNDS [SEED] [CONFIGS]
 *   bfsqlite_bench report RESULTS         the Markdown tables of docs/results/sqlite.md
 *
 * Operations, each a statement on a connection opened for it, with SQLite's
 * defaults (cache_size -2000, temp_store from the build: file) and
 * temp_store=FILE said again:
 *   index   CREATE INDEX on t(s) (the sorter, then the index written into the
 *           database), then ROLLBACK, so every run starts from the same file
 *   orderby SELECT id, s FROM t ORDER BY s, every row read (the sorter alone)
 *   vacuum  VACUUM (the database copied into a transient temp database and back)
 * Configurations: stock (the unix VFS) and the buffile VFS with codec none,
 * lz4 and zstd (block size 4096, the default), as codec[-blocksize][+wN]:
 * "zstd-64K" names a block size, "lz4+w1" gives the VFS's space N library
 * worker threads (the shim's threads=N option). Each round runs every
 * (operation, configuration) once, in an order shuffled per round from the
 * seed (tpch/exec/paired.c), so slow spells of the shared machine hit all of
 * them alike; ratios to stock are paired within a round. Before the first
 * round, a warm-up round runs every cell once (in an order of its own) and
 * is not recorded: the first counted runs then find the database in the
 * page cache and the library's code paged in (a first CREATE INDEX right
 * after the database was made took 17.5 s against 10.3 s later). Before
 * every run, warm-up included, sync(2) writes back what earlier runs left
 * dirty (VACUUM rewrites the whole database), untimed, so that no run pays
 * for another's write-back; nothing is dropped from the page cache (that
 * needs root: every run reads the database from memory). Each run appends
 * one line to RESULTS and flushes it: a second `run` skips what is there, so
 * the benchmark resumes after an interruption. A run records its wall time,
 * CPU time of the process and of the calling thread (the one SQLite runs on:
 * with workers the codec's time leaves it but stays in the process's), the
 * load average when it started, the temp bytes the library saw
 * (logical: what SQLite wrote, the same whatever the VFS; physical: what
 * went to disk) and a checksum of its result, which must be the same for
 * every configuration.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bfsqlite.h"
#include "paired.h"

#define NOPS 3
#define MAXCONF 8
static const char *const op_names[NOPS] = {"index", "orderby", "vacuum"};

typedef struct result {
    int round, op;
    char conf[16];
    double wall, cpu, load;
    double cpu_caller; /* the calling thread's CPU; -1 in lines of earlier versions */
    uint64_t logical_written, physical_written, logical_peak, physical_peak, temp_files;
    uint64_t check;
} result;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* User and system CPU of the process (RUSAGE_SELF) or of this thread (RUSAGE_THREAD). */
static double cpu_now(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static int die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bfsqlite_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        die("%s: %s", sql, err ? err : sqlite3_errmsg(db));
}

static sqlite3 *open_db(const char *path, const char *vfs)
{
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, vfs) != SQLITE_OK)
        die("open %s: %s", path, sqlite3_errmsg(db));
    exec(db, "PRAGMA temp_store=FILE");
    return db;
}

/* ---- prepare ----------------------------------------------------------- */

static uint64_t rng = 20260413;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Rows like an order table's: a random key, a date, a status, a comment of words. */
static void prepare(const char *path, long rows)
{
    static const char *const words[] = {
        "carefully", "final",     "deposits", "sleep",   "quickly",  "ironic",  "packages",
        "furiously", "regular",   "accounts", "blithely", "express", "requests", "pending",
        "theodolites", "slyly",   "bold",     "even",    "special",  "instructions"};
    remove(path);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        die("create %s: %s", path, sqlite3_errmsg(db));
    exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF");
    exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, k INT, d TEXT, st TEXT, s TEXT)");
    exec(db, "BEGIN");
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK)
        die("prepare: %s", sqlite3_errmsg(db));
    for (long i = 1; i <= rows; i++) {
        char date[16], s[160];
        uint64_t r = rnd();
        snprintf(date, sizeof date, "199%d-%02d-%02d", (int)(r % 8), (int)(r / 8 % 12 + 1),
                 (int)(r / 96 % 28 + 1));
        size_t n = (size_t)snprintf(s, sizeof s, "%s", words[rnd() % 20]);
        int nw = 4 + (int)(rnd() % 6);
        for (int w = 0; w < nw; w++)
            n += (size_t)snprintf(s + n, sizeof s - n, " %s", words[rnd() % 20]);
        sqlite3_bind_int64(ins, 1, i);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)(rnd() % 100000000));
        sqlite3_bind_text(ins, 3, date, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 4, (r >> 40) % 3 == 0 ? "F" : (r >> 40) % 3 == 1 ? "O" : "P", -1,
                          SQLITE_STATIC);
        sqlite3_bind_text(ins, 5, s, (int)n, SQLITE_TRANSIENT);
        if (sqlite3_step(ins) != SQLITE_DONE)
            die("insert: %s", sqlite3_errmsg(db));
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    exec(db, "COMMIT");
    exec(db, "PRAGMA journal_mode=DELETE");
    sqlite3_close(db);
}

/* ---- run ----------------------------------------------------------------- */

/*
 * "lz4", "lz4-64K", "lz4+w1", "zstd-64K+w2": the codec, after a dash the
 * block size, after "+w" the worker threads, as the shim's options. Returns
 * -1 for a "+" not followed by w and a count (the shim checks the rest).
 */
static int config_options(const char *name, char *buf, size_t len)
{
    const char *plus = strchr(name, '+');
    int n = plus ? (int)(plus - name) : (int)strlen(name);
    const char *dash = memchr(name, '-', (size_t)n);
    int used;
    if (dash == NULL)
        used = snprintf(buf, len, "codec=%.*s", n, name);
    else
        used = snprintf(buf, len, "codec=%.*s,block_size=%.*s", (int)(dash - name), name,
                        (int)(name + n - dash - 1), dash + 1);
    if (plus == NULL)
        return 0;
    if (plus[1] != 'w' || plus[2] < '0' || plus[2] > '9' || used < 0 || (size_t)used >= len)
        return -1;
    snprintf(buf + used, len - (size_t)used, ",threads=%s", plus + 2);
    return 0;
}

typedef struct config {
    char name[16];
    int stock; /* the unix VFS; else a buffile VFS with codec=name */
} config;

static uint64_t checksum_rows(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        die("%s: %s", sql, sqlite3_errmsg(db));
    uint64_t h = 1469598103934665603ull;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        h = (h ^ (uint64_t)sqlite3_column_int64(st, 0)) * 1099511628211ull;
        for (const unsigned char *t = sqlite3_column_text(st, 1); t && *t; t++)
            h = (h ^ *t) * 1099511628211ull;
    }
    if (rc != SQLITE_DONE)
        die("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return h;
}

static void run_one(const char *path, const config *c, int op, result *r)
{
    /* A VFS of its own per run: its peaks are this run's. */
    char vfs[64] = "unix";
    int shim = !c->stock;
    if (shim) {
        char opts[96], *err = NULL;
        snprintf(vfs, sizeof vfs, "bench_%s_%d_%s", c->name, r->round, op_names[op]);
        (void)config_options(c->name, opts, sizeof opts); /* checked by run() */
        if (bf_sqlite_register(vfs, "unix", 0, opts, &err) != SQLITE_OK)
            die("config %s: %s", c->name, err ? err : "cannot register");
    }
    sqlite3 *db = open_db(path, vfs);
    bf_sqlite_stats s0, s1;
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    if (shim)
        bf_sqlite_stats_get(vfs, &s0);
    r->load = loadavg();
    double t0 = now(), c0 = cpu_now(RUSAGE_SELF), t_c0 = cpu_now(RUSAGE_THREAD);
    switch (op) {
    case 0:
        exec(db, "BEGIN; CREATE INDEX t_s ON t(s)");
        break;
    case 1:
        r->check = checksum_rows(db, "SELECT id, s FROM t ORDER BY s, id");
        break;
    default:
        exec(db, "VACUUM");
        break;
    }
    r->wall = now() - t0;
    r->cpu = cpu_now(RUSAGE_SELF) - c0;
    r->cpu_caller = cpu_now(RUSAGE_THREAD) - t_c0;
    if (shim)
        bf_sqlite_stats_get(vfs, &s1);
    if (op == 0) {
        /* The index's first and last entries say it was built from the same sort. */
        r->check = checksum_rows(db, "SELECT count(*), min(s) || max(s) FROM t INDEXED BY t_s");
        exec(db, "ROLLBACK");
    } else if (op == 2) {
        r->check = checksum_rows(db, "SELECT page_count, (SELECT freelist_count FROM "
                                     "pragma_freelist_count) FROM pragma_page_count");
    }
    sqlite3_close(db);
    r->logical_written = s1.logical_written - s0.logical_written;
    r->physical_written = s1.physical_written - s0.physical_written;
    r->temp_files = s1.temp_files - s0.temp_files;
    r->logical_peak = s1.logical_peak;
    r->physical_peak = s1.physical_peak;
}

static int load_results(const char *file, result *rs, int max)
{
    FILE *f = fopen(file, "r");
    if (f == NULL)
        return 0;
    int n = 0;
    char line[512];
    while (n < max && fgets(line, sizeof line, f) != NULL) {
        result *r = &rs[n];
        char op[16];
        /* The calling thread's CPU came last, later: lines without it are whole too. */
        r->cpu_caller = -1;
        int got = sscanf(line,
                         "%d %15s %15s %lf %lf %lf %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                         " %" SCNu64 " %" SCNx64 " %lf",
                         &r->round, op, r->conf, &r->wall, &r->cpu, &r->load, &r->logical_written,
                         &r->physical_written, &r->logical_peak, &r->physical_peak, &r->temp_files,
                         &r->check, &r->cpu_caller);
        if (got < 12)
            continue; /* a line cut short by an interruption */
        if (got == 12)
            r->cpu_caller = -1;
        r->op = -1;
        for (int i = 0; i < NOPS; i++)
            if (strcmp(op, op_names[i]) == 0)
                r->op = i;
        if (r->op >= 0)
            n++;
    }
    fclose(f);
    return n;
}

static const result *find(const result *rs, int n, int round, int op, const char *conf)
{
    for (int i = 0; i < n; i++)
        if (rs[i].round == round && rs[i].op == op && strcmp(rs[i].conf, conf) == 0)
            return &rs[i];
    return NULL;
}

#define MAXRESULTS 4096

static void run(const char *path, const char *file, int rounds, uint64_t seed, const char *configs)
{
    config confs[MAXCONF];
    int nc = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", configs);
    for (char *tok = strtok(list, ","); tok != NULL && nc < MAXCONF; tok = strtok(NULL, ",")) {
        config *c = &confs[nc++];
        snprintf(c->name, sizeof c->name, "%s", tok);
        c->stock = strcmp(tok, "stock") == 0;
        char opts[96], *err = NULL;
        if (strlen(tok) >= sizeof c->name)
            die("configuration '%s': longer than %zu characters", tok, sizeof c->name - 1);
        if (c->stock)
            continue;
        if (config_options(tok, opts, sizeof opts) != 0)
            err = sqlite3_mprintf("after '+' comes wN, the worker threads");
        else if (bf_sqlite_register("bench_check", "unix", 0, opts, &err) == SQLITE_OK)
            continue;
        die("configuration '%s' (stock, or codec[-blocksize][+wN]: lz4, zstd-64K, lz4+w1): %s", tok,
            err ? err : "refused");
    }
    static result rs[MAXRESULTS];
    int n = load_results(file, rs, MAXRESULTS);
    FILE *out = fopen(file, "a");
    if (out == NULL)
        die("open %s: %s", file, strerror(errno));
    int cells = NOPS * nc, order[NOPS * MAXCONF];
    /* The warm-up round (header comment), when anything is left to run; its order is the
       shuffle's round -1, which no counted round uses. */
    int left = 0;
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < cells; k++)
            left += find(rs, n, round, k / nc, confs[k % nc].name) == NULL;
    if (left > 0) {
        pd_shuffle(seed, -1, cells, order);
        for (int k = 0; k < cells; k++) {
            int op = order[k] / nc;
            const config *c = &confs[order[k] % nc];
            result r;
            memset(&r, 0, sizeof r);
            r.round = -1;
            r.op = op;
            sync();
            run_one(path, c, op, &r);
            fprintf(stderr, "warm-up %-7s %-8s %7.2f s  CPU %.2f s (not counted)\n", op_names[op],
                    c->name, r.wall, r.cpu);
        }
    }
    for (int round = 0; round < rounds; round++) {
        pd_shuffle(seed, round, cells, order);
        for (int k = 0; k < cells; k++) {
            int op = order[k] / nc;
            const config *c = &confs[order[k] % nc];
            if (find(rs, n, round, op, c->name) != NULL)
                continue;
            result r;
            memset(&r, 0, sizeof r);
            r.round = round;
            r.op = op;
            snprintf(r.conf, sizeof r.conf, "%s", c->name);
            sync(); /* untimed: no run pays for an earlier one's write-back */
            run_one(path, c, op, &r);
            fprintf(out,
                    "%d %s %s %.4f %.4f %.2f %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                    " %" PRIu64 " %" PRIx64 " %.4f\n",
                    r.round, op_names[op], r.conf, r.wall, r.cpu, r.load, r.logical_written,
                    r.physical_written, r.logical_peak, r.physical_peak, r.temp_files, r.check,
                    r.cpu_caller);
            fflush(out);
            fprintf(stderr,
                    "round %d %-7s %-8s %7.2f s  CPU %.2f s (calling thread %.2f s)  "
                    "load %.2f\n",
                    round, op_names[op], c->name, r.wall, r.cpu, r.cpu_caller, r.load);
            if (n < MAXRESULTS)
                rs[n++] = r;
        }
    }
    fclose(out);
}

/* ---- report --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double mib(uint64_t b)
{
    return (double)b / (1024.0 * 1024.0);
}

/* "1.234 [1.100, 1.380]", with " ~" when the interval holds 1.0 (no measurable difference). */
static void format_ratio(pd_interval iv, char *buf, size_t len)
{
    snprintf(buf, len, "%.3f [%.3f, %.3f]%s", iv.est, iv.lo, iv.hi, pd_holds_one(&iv) ? " ~" : "");
}

static void report(const char *file)
{
    static result rs[MAXRESULTS];
    int n = load_results(file, rs, MAXRESULTS);
    if (n == 0)
        die("no results in %s", file);
    char confs[MAXCONF][16];
    int nc = 0, rounds = 0;
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int c = 0; c < nc; c++)
            known |= strcmp(confs[c], rs[i].conf) == 0;
        if (!known && nc < MAXCONF)
            snprintf(confs[nc++], sizeof confs[0], "%s", rs[i].conf);
        if (rs[i].round + 1 > rounds)
            rounds = rs[i].round + 1;
    }
    int stock = -1;
    for (int c = 0; c < nc; c++)
        if (strcmp(confs[c], "stock") == 0)
            stock = c;
    if (stock < 0)
        die("no stock runs in %s", file);
    double loads[MAXRESULTS];
    for (int i = 0; i < n; i++)
        loads[i] = rs[i].load;
    double lmed = median(loads, n);
    printf("%d runs in %d rounds; load average at the start of a run: median %.2f, "
           "from %.2f to %.2f.\n\n",
           n, rounds, lmed, loads[0], loads[n - 1]);
    int bad = 0;
    for (int op = 0; op < NOPS; op++) {
        printf("### %s\n\n", op_names[op]);
        printf(
            "| config | runs | median s | time / stock [95%% CI] | CPU s | CPU / stock [95%% CI] "
            "| CPU s, calling thread | temp files | written MiB (SQLite) | written MiB (disk) | "
            "peak MiB (SQLite) | peak MiB (disk) | fewer bytes |\n");
        printf("|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
        const result *ref = NULL;
        for (int i = 0; i < n && ref == NULL; i++)
            if (rs[i].op == op && strcmp(rs[i].conf, "stock") == 0)
                ref = &rs[i];
        for (int c = 0; c < nc; c++) {
            double wall[256], cpu[256], caller[256], num[256], den[256], cnum[256], cden[256];
            int k = 0, m = 0, kc = 0;
            const result *last = NULL;
            for (int round = 0; round < rounds && k < 256; round++) {
                const result *r = find(rs, n, round, op, confs[c]);
                if (r == NULL)
                    continue;
                wall[k] = r->wall;
                cpu[k++] = r->cpu;
                if (r->cpu_caller >= 0)
                    caller[kc++] = r->cpu_caller;
                last = r;
                if (ref != NULL && r->check != ref->check) {
                    fprintf(stderr, "bfsqlite_bench: %s %s round %d: result %" PRIx64
                                    " differs from stock's %" PRIx64 "\n",
                            op_names[op], confs[c], round, r->check, ref->check);
                    bad = 1;
                }
                const result *s = find(rs, n, round, op, "stock");
                if (s != NULL) {
                    num[m] = r->wall;
                    den[m] = s->wall;
                    cnum[m] = r->cpu;
                    cden[m++] = s->cpu;
                }
            }
            if (last == NULL)
                continue;
            char ratio[64] = "reference", cratio[64] = "reference";
            if (c != stock) {
                format_ratio(pd_ratio(num, den, m), ratio, sizeof ratio);
                format_ratio(pd_ratio(cnum, cden, m), cratio, sizeof cratio);
            }
            double med = median(wall, k), cmed = median(cpu, k);
            /* Medians of the runs that recorded it (none before it was recorded). */
            char caller_s[32] = "";
            if (kc > 0)
                snprintf(caller_s, sizeof caller_s, "%.2f", median(caller, kc));
            if (c == stock) {
                printf("| stock | %d | %.2f | %s | %.2f | %s | %s | | | | | | |\n", k, med, ratio,
                       cmed, cratio, caller_s);
                continue;
            }
            printf("| %s | %d | %.2f | %s | %.2f | %s | %s | %" PRIu64
                   " | %.1f | %.1f | %.1f | %.1f | %.2fx |\n",
                   confs[c], k, med, ratio, cmed, cratio, caller_s, last->temp_files,
                   mib(last->logical_written), mib(last->physical_written), mib(last->logical_peak),
                   mib(last->physical_peak),
                   last->physical_written
                       ? (double)last->logical_written / (double)last->physical_written
                       : 0.0);
        }
        printf("\n");
    }
    if (bad)
        exit(1);
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "prepare") == 0) {
        char *end;
        long rows = strtol(argv[3], &end, 10);
        if (*end == 'M')
            rows *= 1000000, end++;
        if (*end != '\0' || rows <= 0)
            die("prepare: bad row count '%s'", argv[3]);
        prepare(argv[2], rows);
    } else if (argc >= 5 && strcmp(argv[1], "run") == 0) {
        int rounds = atoi(argv[4]);
        if (rounds <= 0 || rounds > 100)
            die("run: bad round count '%s'", argv[4]);
        uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 20260413;
        run(argv[2], argv[3], rounds, seed, argc > 6 ? argv[6] : "stock,none,lz4,zstd");
    } else if (argc >= 3 && strcmp(argv[1], "report") == 0) {
        report(argv[2]);
    } else {
        fprintf(stderr, "usage: bfsqlite_bench prepare DB ROWS | run DB RESULTS ROUNDS [SEED "
                        "[CONFIGS]] | report RESULTS\n");
        return 2;
    }
    return 0;
}
