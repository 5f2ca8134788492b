/*
 * error.c - status strings and the last-error message.
 * Implements: bf_strerror (buffile.h); bf_err_set, bf_status_from_errno
 * (error.h).
 *
 * The message is formatted into a fixed buffer inside the space, so
 * reporting an error never allocates (it must work when memory is short).
 */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "buffile.h"

const char *bf_strerror(int status)
{
    switch (status) {
    case BF_OK: return "success";
    case BF_EINVAL: return "invalid argument";
    case BF_ENOMEM: return "out of memory";
    case BF_EIO: return "I/O error";
    case BF_ENOSPC: return "no space left on device";
    case BF_ELIMIT: return "temp file limit reached";
    case BF_ECORRUPT: return "corrupt temp file";
    case BF_ENOCODEC: return "codec not built into this library or not given to the space";
    case BF_ECODEC: return "codec failure";
    case BF_EREADONLY: return "file is read-only";
    case BF_ENOENT: return "no such file";
    case BF_EEXIST: return "file exists";
    case BF_EBUSY: return "file is part of another file";
    case BF_EKEY: return "wrong or missing encryption key";
    default: return "unknown error";
    }
}

int bf_status_from_errno(int errnum)
{
    return (errnum == ENOSPC || errnum == EDQUOT) ? BF_ENOSPC : BF_EIO;
}

int bf_err_set(bf_errstate *e, int status, const char *op, const char *path, int errnum,
               const char *fmt, ...)
{
    if (e == NULL)
        return status;
    e->errnum = errnum;
    char *msg = e->msg;
    size_t cap = sizeof(e->msg);
    int n = snprintf(msg, cap, "%s%s%s: ", op, path ? " " : "", path ? path : "");
    size_t used = n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
    if (fmt != NULL && used < cap) {
        va_list ap;
        va_start(ap, fmt);
        n = vsnprintf(msg + used, cap - used, fmt, ap);
        va_end(ap);
        used += n < 0 ? 0 : ((size_t)n < cap - used ? (size_t)n : cap - used - 1);
    } else if (used < cap) {
        n = snprintf(msg + used, cap - used, "%s", bf_strerror(status));
        used += n < 0 ? 0 : ((size_t)n < cap - used ? (size_t)n : cap - used - 1);
    }
    if (errnum != 0 && used < cap)
        snprintf(msg + used, cap - used, " (%s)", strerror(errnum));
    return status;
}
