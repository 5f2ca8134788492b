/* Table layouts (standard TPC-H column names and order) and row counts per
 * scale factor. The column enums index tpch_row values and the columns of
 * both output formats. */
#ifndef TPCH_GEN_SCHEMA_H
#define TPCH_GEN_SCHEMA_H

#include <stdint.h>

#include "tpch_gen.h"

#define TPCH_MAXCOLS 16

/* How a value is stored in a row and printed in .tbl. MONEY and QTY hold
 * hundredths (.bin stores them as is); .tbl prints MONEY as "123.40" and
 * QTY as a whole number ("17"), as dbgen does. */
typedef enum { TPCH_K_INT, TPCH_K_MONEY, TPCH_K_QTY, TPCH_K_DATE, TPCH_K_STR } tpch_kind;

typedef struct {
    const char *name;
    tpch_kind kind;
} tpch_colspec;

typedef struct {
    const char *name;
    int ncols;
    const tpch_colspec *cols;
} tpch_schema;

const tpch_schema *tpch_schema_get(tpch_table_id t);

enum { COL_P_PARTKEY, COL_P_NAME, COL_P_MFGR, COL_P_BRAND, COL_P_TYPE, COL_P_SIZE,
       COL_P_CONTAINER, COL_P_RETAILPRICE, COL_P_COMMENT };
enum { COL_S_SUPPKEY, COL_S_NAME, COL_S_ADDRESS, COL_S_NATIONKEY, COL_S_PHONE,
       COL_S_ACCTBAL, COL_S_COMMENT };
enum { COL_PS_PARTKEY, COL_PS_SUPPKEY, COL_PS_AVAILQTY, COL_PS_SUPPLYCOST, COL_PS_COMMENT };
enum { COL_C_CUSTKEY, COL_C_NAME, COL_C_ADDRESS, COL_C_NATIONKEY, COL_C_PHONE,
       COL_C_ACCTBAL, COL_C_MKTSEGMENT, COL_C_COMMENT };
enum { COL_O_ORDERKEY, COL_O_CUSTKEY, COL_O_ORDERSTATUS, COL_O_TOTALPRICE, COL_O_ORDERDATE,
       COL_O_ORDERPRIORITY, COL_O_CLERK, COL_O_SHIPPRIORITY, COL_O_COMMENT };
enum { COL_L_ORDERKEY, COL_L_PARTKEY, COL_L_SUPPKEY, COL_L_LINENUMBER, COL_L_QUANTITY,
       COL_L_EXTENDEDPRICE, COL_L_DISCOUNT, COL_L_TAX, COL_L_RETURNFLAG, COL_L_LINESTATUS,
       COL_L_SHIPDATE, COL_L_COMMITDATE, COL_L_RECEIPTDATE, COL_L_SHIPINSTRUCT,
       COL_L_SHIPMODE, COL_L_COMMENT };
enum { COL_N_NATIONKEY, COL_N_NAME, COL_N_REGIONKEY, COL_N_COMMENT };
enum { COL_R_REGIONKEY, COL_R_NAME, COL_R_COMMENT };

/* Row counts for a scale factor. Below SF 1 the bases are scaled by
 * int(1000*sf)/1000, as the reference does. Lineitem has no fixed count. */
typedef struct {
    double sf;
    uint64_t part, supplier, partsupp, customer, orders, clerks;
} tpch_counts;

void tpch_counts_init(tpch_counts *c, double sf);
/* Rows of table t; for TPCH_LINEITEM the number of orders (its unit of work). */
uint64_t tpch_counts_units(const tpch_counts *c, tpch_table_id t);

/* Sparse order key of 0-based order index k: of every 32 keys only the
 * first 8 are used (1..7, 32..39, 64..71, ...). */
static inline int64_t tpch_orderkey(uint64_t k)
{
    uint64_t i = k + 1;
    return (int64_t)(((i >> 3) << 5) | (i & 7));
}

/* Supplier of part p (1-based) for partsupp slot i in 0..3, S suppliers. */
static inline int64_t tpch_partsupp_suppkey(int64_t p, int64_t i, int64_t S)
{
    return (p + i * (S / 4 + (p - 1) / S)) % S + 1;
}

/* Retail price of part p in cents. */
static inline int64_t tpch_retailprice(int64_t p)
{
    return 90000 + (p / 10) % 20001 + 100 * (p % 1000);
}

#endif
