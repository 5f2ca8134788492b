-- TPC-H Q20 (potential part promotion) in SQLite's dialect, from the standard text.
-- Translations: date '1994-01-01' -> '1994-01-01' (dates are TEXT YYYY-MM-DD);
-- date '1994-01-01' + interval '1' year -> date('1994-01-01', '+1 years').
-- 0.5 * sum(l_quantity) is exact in doubles (integral quantities, a power-of-two factor).
-- columns: str str
-- order-keys: 1
select
	s_name,
	s_address
from
	supplier,
	nation
where
	s_suppkey in (
		select
			ps_suppkey
		from
			partsupp
		where
			ps_partkey in (
				select
					p_partkey
				from
					part
				where
					p_name like 'forest%'
			)
			and ps_availqty > (
				select
					0.5 * sum(l_quantity)
				from
					lineitem
				where
					l_partkey = ps_partkey
					and l_suppkey = ps_suppkey
					and l_shipdate >= '1994-01-01'
					and l_shipdate < date('1994-01-01', '+1 years')
			)
	)
	and s_nationkey = n_nationkey
	and n_name = 'CANADA'
order by
	s_name;
