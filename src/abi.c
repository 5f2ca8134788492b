/*
 * abi.c - what keeps callers built against other headers working: the
 * library's version and the size mechanism of the growable structs (abi.h).
 * Implements: bf_version_number (buffile.h); bf_abi_read, bf_abi_write and
 * the released sizes (abi.h).
 *
 * Why struct_size and not a version number: the size alone tells which
 * fields a caller's struct holds, because fields are only ever appended,
 * and no table of versions has to be kept in step with the header.
 */
#include "abi.h"

#include <stdio.h>
#include <string.h>

#include "buffile.h"

/*
 * Each growable struct ends exactly at its last field, so that a field
 * appended later starts at or past every older sizeof and never in an older
 * caller's tail padding, which a struct copy need not have kept at zero.
 * Appending a field: name it here (and pad the struct if it then has a tail).
 */
#define BF_ENDS_AT(type, last)                                                                     \
    _Static_assert(sizeof(type) == offsetof(type, last) + sizeof(((type *)0)->last),               \
                   #type " must end at its last field, " #last)
BF_ENDS_AT(bf_space_options, budget);
BF_ENDS_AT(bf_file_options, alloc_ctx);
BF_ENDS_AT(bf_auto_device, moved_fits);
BF_ENDS_AT(bf_stats, readahead_misses);

unsigned bf_version_number(void)
{
    return BF_VERSION_NUMBER;
}

/* Where field `f` of `type` ends: the sizeof of the release whose last field it was. */
#define BF_END(type, f) (offsetof(type, f) + sizeof(((type *)0)->f))

/*
 * The sizes of each release, ascending. A field appended in a new release
 * adds this header's sizeof at the end of its list (and 1.0.0's sizes are
 * named by their last fields, so that they hold on any ABI).
 */
const bf_abi_type bf_abi_space_options = {
    "bf_space_options", "bf_space_options_init", sizeof(bf_space_options),
    _Alignof(bf_space_options), 2,
    {BF_END(bf_space_options, auto_device) /* 1.0.0 */, sizeof(bf_space_options) /* 1.1.0 */}};
const bf_abi_type bf_abi_file_options = {
    "bf_file_options", "bf_file_options_init", sizeof(bf_file_options),
    _Alignof(bf_file_options), 2,
    {BF_END(bf_file_options, block_size) /* 1.0.0 */, sizeof(bf_file_options) /* 1.1.0 */}};
const bf_abi_type bf_abi_auto_device = {
    "auto_device",
    "bf_space_auto_device or BF_AUTO_DEVICE_INIT",
    sizeof(bf_auto_device),
    _Alignof(bf_auto_device),
    2,
    {BF_END(bf_auto_device, transfer_windows) /* 1.0.0 */, sizeof(bf_auto_device) /* 1.1.0 */}};

int bf_abi_read(void *dst, const bf_abi_type *t, const void *src, char *why, size_t whylen)
{
    uint32_t size;
    memcpy(&size, src, sizeof(size));
    int released = 0;
    for (size_t i = 0; i < t->nsizes; i++)
        released |= t->sizes[i] == size;
    int newer = size > t->known && size <= BF_ABI_SIZE_MAX && size % t->align == 0;
    if (!released && !newer) {
        snprintf(why, whylen,
                 "%s.struct_size is %u, not a size any buffile.h gives it (fill the struct "
                 "with %s)",
                 t->name, (unsigned)size, t->init);
        return BF_EINVAL;
    }
    const unsigned char *p = src;
    for (size_t i = t->known; i < size; i++)
        if (p[i] != 0) {
            snprintf(why, whylen,
                     "%s of %u bytes sets a field past the %zu bytes this library (%d.%d.%d) "
                     "knows: built against a newer buffile.h",
                     t->name, (unsigned)size, t->known, BF_VERSION_MAJOR, BF_VERSION_MINOR,
                     BF_VERSION_PATCH);
            return BF_EINVAL;
        }
    memcpy(dst, src, size < t->known ? size : t->known);
    /* The size read is the caller's; what the library holds now is its own layout. */
    uint32_t own = (uint32_t)t->known;
    memcpy(dst, &own, sizeof(own));
    return BF_OK;
}

void bf_abi_write(void *dst, size_t size, const void *src, size_t known)
{
    if (size <= known) {
        memcpy(dst, src, size);
    } else {
        memcpy(dst, src, known);
        memset((unsigned char *)dst + known, 0, size - known);
    }
}
