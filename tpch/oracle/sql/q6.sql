-- TPC-H Q6 (forecasting revenue change) in SQLite's dialect, from the standard text.
-- Translations: date '1994-01-01' -> '1994-01-01' (dates are TEXT YYYY-MM-DD);
-- date '1994-01-01' + interval '1' year -> date('1994-01-01', '+1 years');
-- between .06 - 0.01 and .06 + 0.01 -> between 0.05 and 0.07, the values PostgreSQL's exact
-- numeric arithmetic gives: in doubles .06 + 0.01 is just below 0.07 and would drop every
-- line with l_discount = 0.07.
-- columns: num
-- order-keys:
select
	sum(l_extendedprice * l_discount) as revenue
from
	lineitem
where
	l_shipdate >= '1994-01-01'
	and l_shipdate < date('1994-01-01', '+1 years')
	and l_discount between 0.05 and 0.07
	and l_quantity < 24;
