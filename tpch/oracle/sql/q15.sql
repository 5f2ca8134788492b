-- TPC-H Q15 (top supplier) in SQLite's dialect, from the standard text.
-- Translations: the view revenue0 (create view ... ; query ; drop view) becomes the CTE
-- "with revenue0 (supplier_no, total_revenue) as (...)" with the same column list, so the
-- oracle leaves no objects behind; date '1996-01-01' -> '1996-01-01' (dates are TEXT
-- YYYY-MM-DD); date '1996-01-01' + interval '3' month -> date('1996-01-01', '+3 months').
-- columns: int str str str num
-- order-keys: 1
with revenue0 (supplier_no, total_revenue) as (
	select
		l_suppkey,
		sum(l_extendedprice * (1 - l_discount))
	from
		lineitem
	where
		l_shipdate >= '1996-01-01'
		and l_shipdate < date('1996-01-01', '+3 months')
	group by
		l_suppkey
)
select
	s_suppkey,
	s_name,
	s_address,
	s_phone,
	total_revenue
from
	supplier,
	revenue0
where
	s_suppkey = supplier_no
	and total_revenue = (
		select
			max(total_revenue)
		from
			revenue0
	)
order by
	s_suppkey;
