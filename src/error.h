/*
 * error.h - recording failures: the space's last error (bf_errstate, a
 * part of the space that only error.c writes) and the status strings.
 *
 * Every failure path calls bf_fail() (space.h: bf_err_set on the space's
 * state) exactly once, at the place that knows the operation, the path and
 * errno; callers above just pass the status up.
 */
#ifndef BF_ERROR_H
#define BF_ERROR_H

#include <stddef.h>

#define BF_ERRMSG_MAX 512

/* The last failure: its message and errno (0 if it had none). */
typedef struct bf_errstate {
    int errnum;
    char msg[BF_ERRMSG_MAX];
} bf_errstate;

/*
 * Format "op path: detail (errno text)" into `e` (NULL: nowhere) and
 * return `status`, so a failure site reads `return bf_fail(...)`. `path`
 * may be NULL; `errnum` 0 means no errno part; `fmt` NULL means the
 * status's own text.
 */
int bf_err_set(bf_errstate *e, int status, const char *op, const char *path, int errnum,
               const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Map an errno from a failed write to a status (ENOSPC/EDQUOT -> BF_ENOSPC, else BF_EIO). */
int bf_status_from_errno(int errnum);

#endif
