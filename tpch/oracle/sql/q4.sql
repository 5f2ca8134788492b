-- TPC-H Q4 (order priority checking) in SQLite's dialect, from the standard text.
-- Translations: date '1993-07-01' -> '1993-07-01' (dates are TEXT YYYY-MM-DD);
-- date '1993-07-01' + interval '3' month -> date('1993-07-01', '+3 months').
-- columns: str int
-- order-keys: 1
select
	o_orderpriority,
	count(*) as order_count
from
	orders
where
	o_orderdate >= '1993-07-01'
	and o_orderdate < date('1993-07-01', '+3 months')
	and exists (
		select
			*
		from
			lineitem
		where
			l_orderkey = o_orderkey
			and l_commitdate < l_receiptdate
	)
group by
	o_orderpriority
order by
	o_orderpriority;
