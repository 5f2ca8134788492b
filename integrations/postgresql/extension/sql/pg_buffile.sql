--
-- pg_buffile: every kind of BufFile user spills through the method the
-- server was started with (pg_buffile.method in postgresql.conf: the
-- expected output is the same for lz4, zstd and auto) and through
-- PostgreSQL's own files (off); the answers must be the same.
--
CREATE TABLE spill (a int, b int, c text);
INSERT INTO spill
  SELECT i, i % 1000, md5(i::text) FROM generate_series(1, 60000) i;
ANALYZE spill;

-- Runs a query with the server's method, then with "off"; returns whether
-- the answers are the same.
CREATE FUNCTION spill_check(query text) RETURNS bool
LANGUAGE plpgsql AS $$
DECLARE
  method text := current_setting('pg_buffile.method');
  digest_method text;
  digest_off text;
  q text := format('SELECT md5(string_agg(r::text, %L)) FROM (%s) r', E'\n', query);
BEGIN
  EXECUTE q INTO digest_method;
  PERFORM set_config('pg_buffile.method', 'off', true);
  EXECUTE q INTO digest_off;
  PERFORM set_config('pg_buffile.method', method, true);
  RETURN digest_method = digest_off;
END
$$;

SET work_mem = '64kB';
SET max_parallel_workers_per_gather = 0;

-- external sort
SELECT spill_check('SELECT c, a FROM spill ORDER BY c, a');

-- hash join in batches
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT spill_check(
  'SELECT s1.a, s2.c FROM spill s1 JOIN spill s2 ON s1.a = s2.a ORDER BY s1.a');
RESET enable_mergejoin;
RESET enable_nestloop;

-- hash aggregation that spills
SET enable_sort = off;
SELECT spill_check(
  'SELECT a % 30000 AS g, count(*), max(c) FROM spill GROUP BY 1 ORDER BY 1');
RESET enable_sort;

-- tuplestores: a window frame seeking backwards, a materialized CTE read twice
SELECT spill_check(
  'SELECT a, sum(a) OVER (ORDER BY a ROWS BETWEEN 100 PRECEDING AND 100 FOLLOWING)
     FROM spill');
SELECT spill_check(
  'WITH m AS MATERIALIZED (SELECT a, c FROM spill)
   SELECT (SELECT count(*) FROM m), (SELECT max(c) FROM m)');

-- a holdable cursor keeps its tuplestore across transactions (interXact):
-- with a method other than off it is one of ours, a named file of the
-- library whose segments are "pgsql_tmp<pid>.<n>.<segment>"
BEGIN;
DECLARE held CURSOR WITH HOLD FOR SELECT a, c FROM spill ORDER BY a DESC;
COMMIT;
SELECT (current_setting('pg_buffile.method') <> 'off') =
       (count(*) > 0) AS ours_when_on
  FROM pg_ls_tmpdir()
  WHERE name ~ ('^pgsql_tmp' || pg_backend_pid() || '\.[0-9]+\.[0-9]+$');
MOVE FORWARD 59990 IN held;
FETCH 3 FROM held;
FETCH BACKWARD 2 FROM held;
CLOSE held;

-- parallel hash join in batches: FileSet files the processes share
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET enable_parallel_hash = on;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET work_mem = '192kB';
SET hash_mem_multiplier = 1.0;
SELECT spill_check(
  'SELECT count(*), sum(s1.b), max(s2.c) FROM spill s1 JOIN spill s2 ON s1.a = s2.a');
RESET enable_mergejoin;
RESET enable_nestloop;
RESET work_mem;
RESET hash_mem_multiplier;

-- parallel index build: the leader opens the workers' files and appends them
SET work_mem = '64kB';
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '128MB';
ALTER TABLE spill SET (parallel_workers = 2);
CREATE INDEX spill_c ON spill (c);
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT c FROM spill WHERE c > '8' ORDER BY c) s;
RESET enable_seqscan;
SELECT count(*) FROM spill WHERE c > '8';
RESET max_parallel_workers_per_gather;

-- each method, level and encryption, against off (sorts the index on c
-- cannot serve)
SET pg_buffile.method = 'zstd';
SET pg_buffile.level = 5;
SELECT spill_check('SELECT c, a FROM spill ORDER BY b, c, a');
SET pg_buffile.method = 'gzip';
SET pg_buffile.level = 1;
SELECT spill_check('SELECT c, a FROM spill ORDER BY b, c, a');
SET pg_buffile.method = 'none';
RESET pg_buffile.level;
SET pg_buffile.encryption = on;
SELECT spill_check('SELECT c, a FROM spill ORDER BY b, c, a');
SET pg_buffile.method = 'lz4';
SELECT spill_check('SELECT c, a FROM spill ORDER BY b, c, a');
RESET pg_buffile.encryption;

-- temp_file_limit: the same error as with PostgreSQL's own files
SET max_parallel_workers_per_gather = 0;
SET temp_file_limit = '200kB';
SELECT count(*) FROM (SELECT c FROM spill ORDER BY b, c) s;
SET pg_buffile.method = 'off';
SELECT count(*) FROM (SELECT c FROM spill ORDER BY b, c) s;
SET pg_buffile.method = 'lz4';
RESET temp_file_limit;
RESET max_parallel_workers_per_gather;

-- settings that are refused (a serial plan: the leader, not a worker,
-- meets the level first, so the error has no worker's CONTEXT)
SET max_parallel_workers_per_gather = 0;
SET pg_buffile.method = 'zlib';
SET pg_buffile.method = 'lz4:1';
SET pg_buffile.level = 23;
SET pg_buffile.level = 3;
SELECT count(*) FROM (SELECT c FROM spill ORDER BY b, c) s;
RESET pg_buffile.method;
RESET pg_buffile.level;
RESET max_parallel_workers_per_gather;

-- EXPLAIN (ANALYZE, TEMP_COMPRESSION): in the structured formats, every
-- method with the fixed keys Written and Stored; the server's method wrote
-- something.  Without the option, nothing of ours.
SET max_parallel_workers_per_gather = 0;
CREATE FUNCTION explain_compression(query text) RETURNS TABLE (method text, keys text, wrote bool)
LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, TEMP_COMPRESSION, FORMAT JSON) ' || query INTO plan;
  RETURN QUERY
    SELECT m.key, (SELECT string_agg(k, ',') FROM json_object_keys(m.value) k),
           (m.value->>'Written')::bigint > 0
      FROM json_each(plan->0->'Temp Compression') m;
END
$$;
SELECT method, keys, wrote = (method = current_setting('pg_buffile.method')) AS as_expected
  FROM explain_compression('SELECT count(*) FROM (SELECT c FROM spill ORDER BY b, c) s');
DO $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM (SELECT c FROM spill ORDER BY b, c) s' INTO plan;
  RAISE NOTICE 'without the option: %', (plan->0->'Temp Compression') IS NULL;
END
$$;
RESET max_parallel_workers_per_gather;

-- the cumulative view pg_buffile_stats (the extension's SQL objects): per
-- database and method, from counters in shared memory
CREATE EXTENSION pg_buffile;
SET max_parallel_workers_per_gather = 0;
SELECT pg_buffile_stats_reset() <= now() + interval '1 minute' AS reset;
SELECT count(*) AS rows_after_reset FROM pg_buffile_stats
  WHERE database = current_database();
-- a spill with lz4 of compressible data: files, fewer bytes stored than
-- written, codec time
SET pg_buffile.method = 'lz4';
SELECT count(*) FROM (SELECT c FROM spill ORDER BY b, c) s;
CREATE TEMP TABLE stats_lz4 AS
  SELECT * FROM pg_buffile_stats WHERE database = current_database();
SELECT method, files > 0 AS files, logical_bytes > 1000000 AS logical,
       stored_bytes > 0 AND stored_bytes < logical_bytes AS stored_less,
       compress_time > 0 AS compress_time, decompress_time > 0 AS decompress_time
  FROM stats_lz4;
-- PostgreSQL's own files (off) count nothing
SET pg_buffile.method = 'off';
SELECT count(*) FROM (SELECT c FROM spill ORDER BY b, c) s;
SELECT (SELECT array_agg(row(method, files, logical_bytes, stored_bytes)::text)
          FROM pg_buffile_stats WHERE database = current_database()) =
       (SELECT array_agg(row(method, files, logical_bytes, stored_bytes)::text)
          FROM stats_lz4) AS unchanged_by_off;
-- a second method has a row of its own; lz4's is unchanged by it
SET pg_buffile.method = 'zstd';
SELECT count(*) FROM (SELECT c FROM spill ORDER BY b, c) s;
SELECT s.method, s.files > 0 AS files, s.stored_bytes < s.logical_bytes AS stored_less,
       s.method <> 'lz4' OR (s.files, s.logical_bytes) = (l.files, l.logical_bytes) AS lz4_same
  FROM pg_buffile_stats s LEFT JOIN stats_lz4 l USING (method)
  WHERE s.database = current_database() ORDER BY s.method;
SELECT pg_buffile_stats_reset() IS NOT NULL AS reset;
SELECT count(*) AS rows_after_reset FROM pg_buffile_stats;
DROP TABLE stats_lz4;
RESET pg_buffile.method;
RESET max_parallel_workers_per_gather;

-- Memory: a file's memory is under the context stock's BufFile would be in
-- (in its child "pg_buffile files"), not in ours.  A hash join in batches
-- under a cursor, its files open between fetches: its spill context holds
-- them with the server's method as it holds stock's (off); the pg_buffile
-- context (the space's codec contexts and scratch) grows by no file's
-- memory from a sort's single file to the join's many (ORDER BY b, c: the
-- index on c must not spare the sort).
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE mem (method text, spill bigint, files bigint, ours_one bigint,
  ours_many bigint);
-- the bytes of a context and its descendants, or of its children named child
CREATE FUNCTION context_bytes(context text, child text DEFAULT NULL)
RETURNS bigint LANGUAGE sql AS $$
  WITH c AS MATERIALIZED (SELECT * FROM pg_backend_memory_contexts)
  SELECT coalesce(sum(d.total_bytes), 0)::bigint
    FROM c p JOIN c d ON d.path[p.level] = p.path[p.level]
    WHERE p.name = context
      AND (child IS NULL OR (d.name = child AND d.level = p.level + 1))
$$;
BEGIN;
DECLARE one CURSOR FOR SELECT c FROM spill ORDER BY b, c;
MOVE 1 IN one;
INSERT INTO mem (method, ours_one) VALUES
  (current_setting('pg_buffile.method'), context_bytes('pg_buffile'));
DECLARE many CURSOR FOR SELECT s1.a, s2.c FROM spill s1 JOIN spill s2 ON s1.a = s2.a;
MOVE 1 IN many;
UPDATE mem SET spill = context_bytes('HashSpillContext'),
  files = context_bytes('HashSpillContext', 'pg_buffile files'),
  ours_many = context_bytes('pg_buffile');
COMMIT;
SET pg_buffile.method = 'off';
BEGIN;
DECLARE many CURSOR FOR SELECT s1.a, s2.c FROM spill s1 JOIN spill s2 ON s1.a = s2.a;
MOVE 1 IN many;
INSERT INTO mem (method, spill) VALUES ('off', context_bytes('HashSpillContext'));
COMMIT;
RESET pg_buffile.method;
SELECT o.spill > 100000 AS stock_spills,
       m.spill >= 0.9 * o.spill AS spill_context_holds_ours,
       m.files > 0.5 * m.spill AS in_a_child_of_it,
       m.ours_many - m.ours_one < 0.1 * m.spill AS ours_holds_no_file
  FROM mem m, mem o WHERE m.method <> 'off' AND o.method = 'off';
-- an error in the middle of a spill: the files go with the executor's
-- memory (AtAbort_Portals deletes it before the resource owners are
-- released), none is left behind
SELECT count(*) FROM spill s1 JOIN spill s2 ON s1.a = s2.a
  WHERE s1.a / (s2.a - 40000) IS NOT NULL;
SELECT count(*) AS files_left_after_error FROM pg_ls_tmpdir()
  WHERE name ~ ('^pgsql_tmp' || pg_backend_pid() || '\.');
-- a cancel in the middle of a spill, likewise
SET statement_timeout = '500ms';
SELECT count(*) FROM (SELECT c FROM spill ORDER BY c) s WHERE pg_sleep(0.001) IS NULL;
RESET statement_timeout;
SELECT count(*) AS files_left_after_cancel FROM pg_ls_tmpdir()
  WHERE name ~ ('^pgsql_tmp' || pg_backend_pid() || '\.');
DROP TABLE mem;
DROP FUNCTION context_bytes(text, text);
RESET enable_mergejoin;
RESET enable_nestloop;
RESET max_parallel_workers_per_gather;

-- nothing of ours stays in memory after the queries: the context is back
-- to its first block
SELECT coalesce(max(total_bytes), 0) <= 8192 AS nothing_left
  FROM pg_backend_memory_contexts WHERE name = 'pg_buffile';

DROP TABLE spill;
DROP FUNCTION spill_check(text);
DROP FUNCTION explain_compression(text);
DROP EXTENSION pg_buffile;
