#!/usr/bin/env bash
# pg-hook.sh's part tpch:
#
# TPC-H SF 0.01 from our generator (tpch/gen) loaded into PostgreSQL with the hook and
# pg_buffile (lib.sh) and into stock PostgreSQL of the same source (PG_STOCK_BIN:
# pg-hook.sh passes pg-hook-pristine.sh's build of the tree's "pristine" tag; without
# it, the hook's build without the module); the 22 queries of ../shared/tpch/queries
# (or $TPCH_QUERIES) at work_mem = 64kB (hash_mem_multiplier 1) with
# max_parallel_workers_per_gather 0 and 2 (parallel plans forced cheap), under every
# value pg_buffile has (off, none, lz4, zstd, zlib as gzip, auto; no pglz): all answers
# byte-identical to stock's; the log shows private and FileSet files through
# pg_buffile, and pg_stat_database counts the files and bytes its lines do.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
# The values TPC-H runs under, each against stock's answers.
TPCH_VALUES=""
for v in off none lz4 zstd zlib pglz auto; do has_value $v && TPCH_VALUES+="${TPCH_VALUES:+ }$v"; done
data=$PGROOT/tpch-sf0.01 out=$RUN/tpch
q=$(tpch_queries) || { echo "no TPC-H queries found (set TPCH_QUERIES)"; exit 1; }
bash "$TOP/scripts/install-deps.sh"
tools_build tpchgen || exit 1
if [ ! -f "$data/lineitem.tbl" ]; then
  "$PGROOT/tpch-build/tpch/gen/tpchgen" --sf=0.01 --out="$data.tmp" > /dev/null || exit 1
  mv "$data.tmp" "$data"
fi
chmod -R a+rX "$data"
out_dir tpch

start_server tpch-patched "$PATCHED" $PORT_PATCHED || exit 1
start_server tpch-stock "$STOCK" $PORT_STOCK || exit 1
for port in $PORT_PATCHED $PORT_STOCK; do
  psql_at $port -f "$TOP/integrations/postgresql/tpch/schema.sql" || exit 1
  for t in region nation part supplier partsupp customer orders lineitem; do
    sed 's/|$//' "$data/$t.tbl" | psql_at $port -c "\\copy $t from stdin with (delimiter '|')" || exit 1
  done
  # A sample of the whole tables: both servers get the same statistics.
  psql_at $port -c "set default_statistics_target = 1000" -c "analyze" || exit 1
done
echo "loaded SF 0.01 ($(psql_at $PORT_STOCK -At -c 'select count(*) from lineitem') lineitem rows) into both servers"
if [ "$STOCK" = "$PATCHED" ]; then
  echo "stock: $STOCK without pg_buffile (the hook unset; PG_STOCK_BIN names a pristine build)"
else
  echo "stock: $STOCK"
fi

# run_queries PORT LABEL PGOPTIONS: the 22 answers into $out/LABEL/
run_queries() {
  local port=$1 label=$2 opts=$3 n
  mkdir -p "$out/$label"; chown "$PG_USER": "$out/$label"
  for n in $(seq 1 22); do
    PGOPTIONS="$opts" psql_at "$port" -A -t -F '|' -f "$q/$n.sql" > "$out/$label/q$n.out" 2> "$out/$label/q$n.err" \
      || { echo "$label: Q$n failed: $(head -3 "$out/$label/q$n.err")"; return 1; }
  done
}
# (hash_mem_multiplier 1: at this scale 18 would keep its parallel hash
# joins in one batch at the default 2, and write no FileSet file)
base="-c work_mem=64kB -c hash_mem_multiplier=1"
par0="-c max_parallel_workers_per_gather=0"
par2="-c max_parallel_workers_per_gather=2 -c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0 -c min_parallel_index_scan_size=0"
bad=0
for w in 0 2; do
  [ $w = 0 ] && popts=$par0 || popts=$par2
  run_queries $PORT_STOCK "stock-w$w" "$base $popts" || exit 1
  # An empty answer compares nothing: say which, and refuse more than one
  # (Q21 names no supplier at SF 0.01 with our generator's data).
  empty=$(cd "$out/stock-w$w" && find . -name 'q*.out' -empty | sed 's|^\./||; s|\.out$||' | sort | tr '\n' ' ')
  [ -z "$empty" ] || echo "stock, workers $w: empty answers: $empty"
  [ "$(echo $empty | wc -w)" -le 1 ] || exit 1
  for codec in $TPCH_VALUES; do
    run_queries $PORT_PATCHED "$codec-w$w" "$base $popts $(gucs $codec)" || exit 1
    for n in $(seq 1 22); do
      if ! cmp -s "$out/stock-w$w/q$n.out" "$out/$codec-w$w/q$n.out"; then
        echo "DIFF Q$n $codec workers=$w: diff $out/stock-w$w/q$n.out $out/$codec-w$w/q$n.out"
        bad=$((bad + 1))
      fi
    done
    echo "codec $codec, max_parallel_workers_per_gather $w: 22 queries compared"
  done
done
templog count "$RUN/tpch-patched.log"
# pg_stat_database counts what the log lines say (ours and, under off,
# stock's), once every backend and worker has flushed its statistics at
# exit. A backend flushes them as it exits, which may be just after psql
# returns: wait up to 10 s.
statok=1
want=$(templog pgstat "$RUN/tpch-patched.log")
for i in $(seq 1 20); do
  stat=$(psql_at $PORT_PATCHED -At -F ' ' -c "select sum(temp_files), sum(temp_bytes) from pg_stat_database")
  [ "$stat" = "$want" ] && break
  sleep 0.5
done
echo "pg_stat_database: temp_files, temp_bytes = $stat; the log: $want (files, bytes)"
[ "$stat" = "$want" ] || { echo "pg_stat_database does not match the log"; statok=0; }
srv_stop_all
[ $bad -eq 0 ] || { echo "$bad answers differ from stock PostgreSQL's"; exit 1; }
[ $statok = 1 ] || exit 1
templog check --both "$RUN/tpch-patched.log" > /dev/null \
  || { echo "TPC-H did not spill both kinds of temp files"; exit 1; }
echo "all 22 answers identical to stock for $(echo $TPCH_VALUES | wc -w) values ($TPCH_VALUES) x 2 parallel settings"
