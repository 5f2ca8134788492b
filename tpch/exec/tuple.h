/*
 * tuple.h - the executor's row format.
 *
 * A tuple is one contiguous, position-independent byte string, so it can be
 * copied into a hash table, a sort buffer or a spill file with one memcpy:
 *
 *   u32 len            total bytes, header included
 *   u16 natts          number of fields
 *   u16 end[natts]     end offset of field i in the data area; bit 15 = NULL
 *   data               field bytes, back to back, unaligned
 *
 * Field i spans data[end[i-1] .. end[i]) (end[-1] = 0). Fixed-width fields
 * are 8-byte int64 or double; strings are raw bytes. The data area is at most
 * 32767 bytes, which TPC-H rows never approach. Readers use memcpy, so no
 * alignment is assumed anywhere.
 */
#ifndef TPCH_TUPLE_H
#define TPCH_TUPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tup tup; /* opaque: always accessed through the functions below */

#define TUP_NULL_BIT 0x8000u
#define TUP_MAX_DATA 0x7fffu
#define TUP_MAX_ATTS 64

uint32_t tup_len(const tup *t);
int tup_natts(const tup *t);
bool tup_isnull(const tup *t, int i);
int64_t tup_i64(const tup *t, int i);
double tup_f64(const tup *t, int i);
/* Pointer to the bytes of field i (not NUL-terminated) and its length. */
const char *tup_str(const tup *t, int i, uint32_t *len);
/* Same as tup_str, for any field type: the raw bytes (used to hash and copy keys). */
const uint8_t *tup_field(const tup *t, int i, uint32_t *len);

/* Builder: a reusable growable buffer. Fields must be added in order. */
typedef struct tbuild {
    uint8_t *buf;
    size_t cap;
    int natts;
    int cur;
    size_t pos; /* write position in buf */
} tbuild;

void tb_init(tbuild *b);
void tb_free(tbuild *b);
void tb_begin(tbuild *b, int natts);
void tb_i64(tbuild *b, int64_t v);
void tb_f64(tbuild *b, double v);
void tb_str(tbuild *b, const char *s, uint32_t len);
void tb_cstr(tbuild *b, const char *s);
void tb_null(tbuild *b);
/* Copy field i of t (including NULL-ness). */
void tb_copy(tbuild *b, const tup *t, int i);
/* Copy fields [from, to) of t. */
void tb_copy_range(tbuild *b, const tup *t, int from, int to);
/* Finish: every declared field must have been added. Valid until the next tb_begin. */
const tup *tb_end(tbuild *b);

#endif
