/*
 * sweep.h - the rules of the directories spaces keep their files in: where
 * they go, how they are named, how a space's is removed, and how those a
 * crashed process left are found and removed (bf_sweep, buffile.h).
 */
#ifndef BF_SWEEP_H
#define BF_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "buffile.h"

/* $TMPDIR, or /tmp when unset or empty. */
const char *bf_default_temp_parent(void);

/*
 * Make a space's private directory (0700) under `parent` (NULL: the
 * default), named buffile-<pid>-XXXXXX so that bf_sweep can tell a crashed
 * owner from a live one; *out is allocated with `a`. BF_OK, or a status
 * with the reason in `why`.
 */
int bf_space_dir_make(const bf_allocator *a, const char *parent, char **out, char *why,
                      size_t whylen);

/*
 * The default temp limit for a space whose directory is `dir`: 90% of the
 * bytes its file system has free for the caller now; 0 (none) when they
 * cannot be read.
 */
uint64_t bf_dir_default_limit(const char *dir);

/*
 * Remove the regular files in directory `name` (relative to `parent_fd`,
 * or absolute with AT_FDCWD), never following links, then the directory.
 * 0 on success, -1 if the directory stays (errno set).
 */
int bf_remove_space_dir(int parent_fd, const char *name);

#endif
