/* Public interface of the TPC-H-style data generator (library tpchgen_lib).
 * Output is deterministic: the same sf gives the same bytes whatever the
 * thread count. Data "derived from TPC-H"; not comparable to published results. */
#ifndef TPCH_GEN_H
#define TPCH_GEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tables, in this order. */
typedef enum { TPCH_PART, TPCH_SUPPLIER, TPCH_PARTSUPP, TPCH_CUSTOMER, TPCH_ORDERS,
               TPCH_LINEITEM, TPCH_NATION, TPCH_REGION, TPCH_NTABLES } tpch_table_id;

/* "part", "lineitem", ...; NULL for an id out of range. */
const char *tpch_table_name(tpch_table_id t);

typedef enum { TPCH_FMT_TBL = 1, TPCH_FMT_BIN = 2 } tpch_format;

/* Generate the tables in `tables_mask` (bit (1u<<id); 0 = all) at scale factor sf
 * (0.01..100) into directory outdir (created if missing) as outdir/<name>.tbl or
 * outdir/<name>.bin, using `threads` threads (0 = number of CPUs). progress may be NULL;
 * it is called with (done, total) work units from the calling thread.
 * Writes outdir/meta.txt ("sf=<value>", "format=1") last.
 * Returns 0, or -1 with a one-line message in err. */
int tpch_generate(double sf, const char *outdir, tpch_format fmt, unsigned tables_mask,
                  int threads, void (*progress)(void *ctx, uint64_t done, uint64_t total),
                  void *progress_ctx, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
