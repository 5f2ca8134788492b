-- SQLite schema the oracle loads the generator's .tbl files into.
--
-- Decimals (prices, quantities, discounts, taxes, balances, costs) are REAL: the standard
-- query texts then run unchanged on them, and each value is the double nearest to its
-- 2-digit text, so a literal such as 0.05 compares equal to a stored 0.05.  Results are
-- compared with a tolerance (0.01 + 1e-6 of the value, docs/oracle.md), far above double
-- rounding at the scale factors the oracle is run at.  Keys and other integers are INTEGER, so integer
-- results (counts, keys, sizes) are exact.  Dates are TEXT 'YYYY-MM-DD': lexicographic
-- order is date order, and date()/strftime() read them.
--
-- Every table ends with tbl_end: the generator writes a '|' after every field, so .import
-- sees one extra, empty field per line.  The loader checks that tbl_end is '' on every
-- row (which proves each line had exactly the standard number of fields) and then drops it.
-- Primary keys make the load fail on a duplicate key; the other indexes only make the
-- correlated subqueries (Q2, Q17, Q20, Q21, Q22) fast and do not change any result.

create table region (
  r_regionkey integer primary key,
  r_name text not null,
  r_comment text not null,
  tbl_end text
);

create table nation (
  n_nationkey integer primary key,
  n_name text not null,
  n_regionkey integer not null,
  n_comment text not null,
  tbl_end text
);

create table part (
  p_partkey integer primary key,
  p_name text not null,
  p_mfgr text not null,
  p_brand text not null,
  p_type text not null,
  p_size integer not null,
  p_container text not null,
  p_retailprice real not null,
  p_comment text not null,
  tbl_end text
);

create table supplier (
  s_suppkey integer primary key,
  s_name text not null,
  s_address text not null,
  s_nationkey integer not null,
  s_phone text not null,
  s_acctbal real not null,
  s_comment text not null,
  tbl_end text
);

create table partsupp (
  ps_partkey integer not null,
  ps_suppkey integer not null,
  ps_availqty integer not null,
  ps_supplycost real not null,
  ps_comment text not null,
  tbl_end text,
  primary key (ps_partkey, ps_suppkey)
);

create table customer (
  c_custkey integer primary key,
  c_name text not null,
  c_address text not null,
  c_nationkey integer not null,
  c_phone text not null,
  c_acctbal real not null,
  c_mktsegment text not null,
  c_comment text not null,
  tbl_end text
);

create table orders (
  o_orderkey integer primary key,
  o_custkey integer not null,
  o_orderstatus text not null,
  o_totalprice real not null,
  o_orderdate text not null,
  o_orderpriority text not null,
  o_clerk text not null,
  o_shippriority integer not null,
  o_comment text not null,
  tbl_end text
);

create table lineitem (
  l_orderkey integer not null,
  l_partkey integer not null,
  l_suppkey integer not null,
  l_linenumber integer not null,
  l_quantity real not null,
  l_extendedprice real not null,
  l_discount real not null,
  l_tax real not null,
  l_returnflag text not null,
  l_linestatus text not null,
  l_shipdate text not null,
  l_commitdate text not null,
  l_receiptdate text not null,
  l_shipinstruct text not null,
  l_shipmode text not null,
  l_comment text not null,
  tbl_end text,
  primary key (l_orderkey, l_linenumber)
);

create index lineitem_part_supp on lineitem (l_partkey, l_suppkey);
create index lineitem_supp on lineitem (l_suppkey);
create index orders_cust on orders (o_custkey);
create index partsupp_supp on partsupp (ps_suppkey);
create index supplier_nation on supplier (s_nationkey);
create index customer_nation on customer (c_nationkey);
