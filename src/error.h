/*
 * error.h - recording failures in a space.
 *
 * Every failure path calls bf_fail() exactly once, at the place that knows
 * the operation, the path and errno; callers above just pass the status up.
 */
#ifndef BF_ERROR_H
#define BF_ERROR_H

#include <stddef.h>

struct bf_space;

#define BF_ERRMSG_MAX 512

/*
 * Format "op path: detail (errno text)" into the space's message buffer and
 * return `status`, so a failure site reads `return bf_fail(...)`.
 * `path` may be NULL; `errnum` 0 means no errno part.
 */
int bf_fail(struct bf_space *space, int status, const char *op, const char *path, int errnum,
            const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Map an errno from a failed write to a status (ENOSPC/EDQUOT -> BF_ENOSPC, else BF_EIO). */
int bf_status_from_errno(int errnum);

#endif
