-- TPC-H Q17 (small-quantity-order revenue) in SQLite's dialect, from the standard text.
-- Translation: none needed.  0.2 * avg(l_quantity) in doubles decides ties as exact
-- arithmetic does: quantities are integral, so a tie needs avg = 5q exactly, and
-- 0.2 * (5q) rounds to exactly q for every q in 1..50.
-- columns: num
-- order-keys:
select
	sum(l_extendedprice) / 7.0 as avg_yearly
from
	lineitem,
	part
where
	p_partkey = l_partkey
	and p_brand = 'Brand#23'
	and p_container = 'MED BOX'
	and l_quantity < (
		select
			0.2 * avg(l_quantity)
		from
			lineitem
		where
			l_partkey = p_partkey
	);
