-- TPC-H Q13 (customer distribution) in SQLite's dialect, from the standard text.
-- Translation: SQLite takes no column list on a derived table's alias, so the subquery
-- "(...) as c_orders (c_custkey, c_count)" becomes the CTE "with c_orders (c_custkey,
-- c_count) as (...)", which SQLite does accept with a column list.
-- columns: int int
-- order-keys: 2 1
with c_orders (c_custkey, c_count) as (
	select
		c_custkey,
		count(o_orderkey)
	from
		customer left outer join orders on
			c_custkey = o_custkey
			and o_comment not like '%special%requests%'
	group by
		c_custkey
)
select
	c_count,
	count(*) as custdist
from
	c_orders
group by
	c_count
order by
	custdist desc,
	c_count desc;
