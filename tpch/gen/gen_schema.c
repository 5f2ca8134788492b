/* Column lists of the eight tables and the scale-factor row counts. */
#include "gen_schema.h"

#include <stddef.h>

#define COLS(arr) (int)(sizeof(arr) / sizeof(arr[0])), arr

static const tpch_colspec part_cols[] = {
    {"p_partkey", TPCH_K_INT}, {"p_name", TPCH_K_STR}, {"p_mfgr", TPCH_K_STR},
    {"p_brand", TPCH_K_STR}, {"p_type", TPCH_K_STR}, {"p_size", TPCH_K_INT},
    {"p_container", TPCH_K_STR}, {"p_retailprice", TPCH_K_MONEY}, {"p_comment", TPCH_K_STR}};
static const tpch_colspec supplier_cols[] = {
    {"s_suppkey", TPCH_K_INT}, {"s_name", TPCH_K_STR}, {"s_address", TPCH_K_STR},
    {"s_nationkey", TPCH_K_INT}, {"s_phone", TPCH_K_STR}, {"s_acctbal", TPCH_K_MONEY},
    {"s_comment", TPCH_K_STR}};
static const tpch_colspec partsupp_cols[] = {
    {"ps_partkey", TPCH_K_INT}, {"ps_suppkey", TPCH_K_INT}, {"ps_availqty", TPCH_K_INT},
    {"ps_supplycost", TPCH_K_MONEY}, {"ps_comment", TPCH_K_STR}};
static const tpch_colspec customer_cols[] = {
    {"c_custkey", TPCH_K_INT}, {"c_name", TPCH_K_STR}, {"c_address", TPCH_K_STR},
    {"c_nationkey", TPCH_K_INT}, {"c_phone", TPCH_K_STR}, {"c_acctbal", TPCH_K_MONEY},
    {"c_mktsegment", TPCH_K_STR}, {"c_comment", TPCH_K_STR}};
static const tpch_colspec orders_cols[] = {
    {"o_orderkey", TPCH_K_INT}, {"o_custkey", TPCH_K_INT}, {"o_orderstatus", TPCH_K_STR},
    {"o_totalprice", TPCH_K_MONEY}, {"o_orderdate", TPCH_K_DATE},
    {"o_orderpriority", TPCH_K_STR}, {"o_clerk", TPCH_K_STR}, {"o_shippriority", TPCH_K_INT},
    {"o_comment", TPCH_K_STR}};
static const tpch_colspec lineitem_cols[] = {
    {"l_orderkey", TPCH_K_INT}, {"l_partkey", TPCH_K_INT}, {"l_suppkey", TPCH_K_INT},
    {"l_linenumber", TPCH_K_INT}, {"l_quantity", TPCH_K_QTY},
    {"l_extendedprice", TPCH_K_MONEY}, {"l_discount", TPCH_K_MONEY}, {"l_tax", TPCH_K_MONEY},
    {"l_returnflag", TPCH_K_STR}, {"l_linestatus", TPCH_K_STR}, {"l_shipdate", TPCH_K_DATE},
    {"l_commitdate", TPCH_K_DATE}, {"l_receiptdate", TPCH_K_DATE},
    {"l_shipinstruct", TPCH_K_STR}, {"l_shipmode", TPCH_K_STR}, {"l_comment", TPCH_K_STR}};
static const tpch_colspec nation_cols[] = {
    {"n_nationkey", TPCH_K_INT}, {"n_name", TPCH_K_STR}, {"n_regionkey", TPCH_K_INT},
    {"n_comment", TPCH_K_STR}};
static const tpch_colspec region_cols[] = {
    {"r_regionkey", TPCH_K_INT}, {"r_name", TPCH_K_STR}, {"r_comment", TPCH_K_STR}};

static const tpch_schema schemas[TPCH_NTABLES] = {
    [TPCH_PART] = {"part", COLS(part_cols)},
    [TPCH_SUPPLIER] = {"supplier", COLS(supplier_cols)},
    [TPCH_PARTSUPP] = {"partsupp", COLS(partsupp_cols)},
    [TPCH_CUSTOMER] = {"customer", COLS(customer_cols)},
    [TPCH_ORDERS] = {"orders", COLS(orders_cols)},
    [TPCH_LINEITEM] = {"lineitem", COLS(lineitem_cols)},
    [TPCH_NATION] = {"nation", COLS(nation_cols)},
    [TPCH_REGION] = {"region", COLS(region_cols)},
};

const tpch_schema *tpch_schema_get(tpch_table_id t)
{
    return (unsigned)t < TPCH_NTABLES ? &schemas[t] : NULL;
}

const char *tpch_table_name(tpch_table_id t)
{
    return (unsigned)t < TPCH_NTABLES ? schemas[t].name : NULL;
}

static uint64_t scaled(uint64_t base, double sf)
{
    if (sf < 1.0)
        return base * (uint64_t)(1000.0 * sf + 1e-6) / 1000;
    return (uint64_t)((double)base * sf + 1e-6);
}

void tpch_counts_init(tpch_counts *c, double sf)
{
    c->sf = sf;
    c->part = scaled(200000, sf);
    c->supplier = scaled(10000, sf);
    c->partsupp = 4 * c->part;
    c->customer = scaled(150000, sf);
    c->orders = 10 * c->customer;
    c->clerks = sf < 1.0 ? 1000 : scaled(1000, sf);
}

uint64_t tpch_counts_units(const tpch_counts *c, tpch_table_id t)
{
    switch (t) {
    case TPCH_PART: return c->part;
    case TPCH_SUPPLIER: return c->supplier;
    case TPCH_PARTSUPP: return c->partsupp;
    case TPCH_CUSTOMER: return c->customer;
    case TPCH_ORDERS:
    case TPCH_LINEITEM: return c->orders;
    case TPCH_NATION: return 25;
    case TPCH_REGION: return 5;
    default: return 0;
    }
}
