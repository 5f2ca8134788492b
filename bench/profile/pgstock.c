/*
 * pgstock.c - PostgreSQL's BufFileWrite / BufFileReadCommon per-call path
 * (src/backend/storage/file/buffile.c, master b5978350), transcribed with
 * ereport() and the fd.c layer reduced to pwrite/pread, out of line as in
 * PostgreSQL (callers are in other translation units), to count under
 * callgrind what stock's per-call path costs in instructions: the same
 * spill as bench_spill (32 files, hash order, then each file read back).
 * Build: cc -O2 -g bench/profile/pgstock.c -o pgstock
 * Run:   valgrind --tool=callgrind --toggle-collect=spill ./pgstock DIR MIB TUPLE
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLCKSZ 8192
#define MAX_PHYSICAL_FILESIZE 0x40000000

typedef struct BufFile {
    int numFiles;
    int *files;
    bool isInterXact, dirty, readOnly;
    int curFile;
    int64_t curOffset;
    int64_t pos;
    int64_t nbytes;
    union {
        char data[BLCKSZ];
        double force_align_d;
        int64_t force_align_i64;
    } buffer;
} BufFile;

static int64_t temp_blks_read, temp_blks_written; /* pgBufferUsage */

static void BufFileLoadBuffer(BufFile *file)
{
    if (file->curOffset >= MAX_PHYSICAL_FILESIZE && file->curFile + 1 < file->numFiles) {
        file->curFile++;
        file->curOffset = 0;
    }
    ssize_t rc = pread(file->files[file->curFile], file->buffer.data, sizeof(file->buffer.data),
                       file->curOffset);
    if (rc < 0)
        abort();
    file->nbytes = rc;
    if (file->nbytes > 0)
        temp_blks_read++;
}

static void BufFileDumpBuffer(BufFile *file)
{
    int64_t wpos = 0;
    while (wpos < file->nbytes) {
        if (file->curOffset >= MAX_PHYSICAL_FILESIZE)
            abort(); /* extendBufFile: not reached here */
        int64_t bytestowrite = file->nbytes - wpos;
        int64_t availbytes = MAX_PHYSICAL_FILESIZE - file->curOffset;
        if (bytestowrite > availbytes)
            bytestowrite = availbytes;
        ssize_t rc = pwrite(file->files[file->curFile], file->buffer.data + wpos,
                            (size_t)bytestowrite, file->curOffset);
        if (rc <= 0)
            abort();
        file->curOffset += rc;
        wpos += rc;
        temp_blks_written++;
    }
    file->dirty = false;
    file->curOffset -= (file->nbytes - file->pos);
    file->pos = 0;
    file->nbytes = 0;
}

static void BufFileFlush(BufFile *file)
{
    if (file->dirty)
        BufFileDumpBuffer(file);
}

__attribute__((noinline)) size_t BufFileReadCommon(BufFile *file, void *ptr, size_t size,
                                                   bool exact, bool eofOK)
{
    size_t start_size = size, nread = 0, nthistime;
    BufFileFlush(file);
    while (size > 0) {
        if (file->pos >= file->nbytes) {
            file->curOffset += file->pos;
            file->pos = 0;
            file->nbytes = 0;
            BufFileLoadBuffer(file);
            if (file->nbytes <= 0)
                break;
        }
        nthistime = (size_t)(file->nbytes - file->pos);
        if (nthistime > size)
            nthistime = size;
        memcpy(ptr, file->buffer.data + file->pos, nthistime);
        file->pos += (int64_t)nthistime;
        ptr = (char *)ptr + nthistime;
        size -= nthistime;
        nread += nthistime;
    }
    if (exact && (nread != start_size && !(nread == 0 && eofOK)))
        abort();
    return nread;
}

__attribute__((noinline)) size_t BufFileRead(BufFile *file, void *ptr, size_t size)
{
    return BufFileReadCommon(file, ptr, size, false, false);
}

__attribute__((noinline)) void BufFileWrite(BufFile *file, const void *ptr, size_t size)
{
    size_t nthistime;
    while (size > 0) {
        if (file->pos >= BLCKSZ) {
            if (file->dirty)
                BufFileDumpBuffer(file);
            else {
                file->curOffset += file->pos;
                file->pos = 0;
                file->nbytes = 0;
            }
        }
        nthistime = (size_t)(BLCKSZ - file->pos);
        if (nthistime > size)
            nthistime = size;
        memcpy(file->buffer.data + file->pos, ptr, nthistime);
        file->dirty = true;
        file->pos += (int64_t)nthistime;
        if (file->nbytes < file->pos)
            file->nbytes = file->pos;
        ptr = (const char *)ptr + nthistime;
        size -= nthistime;
    }
}

static int batch_of(uint64_t i, int files)
{
    uint64_t h = (i + 1) * UINT64_C(0x9e3779b97f4a7c15);
    h ^= h >> 29;
    return (int)(h % (uint64_t)files);
}

__attribute__((noinline)) static uint64_t spill(const char *dir, int nfiles,
                                                const unsigned char *data, size_t len, size_t tuple)
{
    BufFile **files = calloc((size_t)nfiles, sizeof(*files));
    char path[4200];
    for (int k = 0; k < nfiles; k++) {
        files[k] = calloc(1, sizeof(BufFile));
        files[k]->numFiles = 1;
        files[k]->files = malloc(sizeof(int));
        snprintf(path, sizeof(path), "%s/pgstock.%d", dir, k);
        files[k]->files[0] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    }
    for (uint64_t i = 0; i * tuple < len; i++)
        BufFileWrite(files[batch_of(i, nfiles)], data + i * tuple, tuple);
    uint64_t sum = 0;
    unsigned char t[65536];
    for (int k = 0; k < nfiles; k++) {
        BufFileFlush(files[k]);
        files[k]->curOffset = 0; /* BufFileSeek(file, 0, 0, SEEK_SET) after the flush */
        files[k]->pos = files[k]->nbytes = 0;
        while (BufFileRead(files[k], t, tuple) == tuple)
            sum += t[0];
    }
    for (int k = 0; k < nfiles; k++) {
        close(files[k]->files[0]);
        snprintf(path, sizeof(path), "%s/pgstock.%d", dir, k);
        unlink(path);
        free(files[k]->files);
        free(files[k]);
    }
    free(files);
    return sum;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    size_t mib = strtoul(argv[2], NULL, 10), tuple = strtoul(argv[3], NULL, 10);
    size_t len = (mib << 20) / tuple * tuple;
    unsigned char *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)("lineitem|text|"[i % 14]);
    uint64_t s = spill(argv[1], 32, data, len, tuple);
    printf("pgstock: %zu MiB, %zu-byte tuples, %llu blocks written, %llu read (sum %llu)\n", mib,
           tuple, (unsigned long long)temp_blks_written, (unsigned long long)temp_blks_read,
           (unsigned long long)s);
    free(data);
    return 0;
}
