--
-- temp_file_compression: values are checked when they are set, and the
-- temporary files of every method are seen as stock ones are: the same
-- answers, the same temp block counts in EXPLAIN, listed by pg_ls_tmpdir(),
-- placed in temp_tablespaces.
--
-- (Assumes a build with lz4 and zstd.  The server's temp_file_encryption
-- is set aside: it would send "off" files through the library.)
SET temp_file_encryption = off;
SET temp_file_compression = off;
SHOW temp_file_compression;
SET temp_file_compression = 'zstd:level=3';
SHOW temp_file_compression;
SET temp_file_compression = 'zstd:3';
SET temp_file_compression = 'lz4';
SET temp_file_compression = 'none';
SET temp_file_compression = 'auto';
SET temp_file_compression = 'pglz';
-- refused at once, leaving the value as it was
SET temp_file_compression = 'zstd:level=23';
SET temp_file_compression = 'zlib:22';
SET temp_file_compression = 'lz4:level=0';
SET temp_file_compression = 'zstd:level=';
SET temp_file_compression = 'zstd:level=x';
SET temp_file_compression = 'auto:3';
SET temp_file_compression = 'none:1';
SET temp_file_compression = 'pglz:1';
SET temp_file_compression = 'brotli';
SET temp_file_compression = '';
SHOW temp_file_compression;
-- temp_file_encryption is for superusers (and roles granted SET on it)
CREATE ROLE regress_tfc_user;
SET ROLE regress_tfc_user;
SET temp_file_encryption = on;
RESET ROLE;
DROP ROLE regress_tfc_user;

CREATE TEMP TABLE tfc AS
  SELECT g, md5(g::text) AS m FROM generate_series(1, 20000) g;
ANALYZE tfc;
SET work_mem = '64kB';
SET max_parallel_workers_per_gather = 0;

-- the temp blocks a query read and wrote, and what it answered
CREATE FUNCTION tfc_run(query text, OUT blocks text, OUT answer text)
LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON) ' || query
    INTO plan;
  blocks := (plan->0->'Plan'->>'Temp Read Blocks') || ' read, ' ||
            (plan->0->'Plan'->>'Temp Written Blocks') || ' written';
  EXECUTE 'SELECT md5(string_agg(t::text, '','')) FROM (' || query || ') t' INTO answer;
END $$;

CREATE TEMP TABLE tfc_runs (method text, what text, blocks text, answer text);
DO $$
DECLARE
  method text;
BEGIN
  -- "+encrypted": temp_file_encryption on as well (with off: sealed, not
  -- compressed)
  FOREACH method IN ARRAY ARRAY['off', 'none', 'lz4', 'zstd:level=3', 'zlib', 'auto', 'pglz',
                                'off+encrypted', 'lz4+encrypted'] LOOP
    PERFORM set_config('temp_file_compression', split_part(method, '+', 1), true);
    PERFORM set_config('temp_file_encryption', (method LIKE '%+encrypted')::text, true);
    INSERT INTO tfc_runs
      SELECT method, 'sort', r.* FROM tfc_run('SELECT m FROM tfc ORDER BY m') r;
    INSERT INTO tfc_runs
      SELECT method, 'hash join', r.* FROM tfc_run(
        'SELECT count(*), sum(a.g) FROM tfc a JOIN tfc b USING (m)') r;
    INSERT INTO tfc_runs
      SELECT method, 'group by', r.* FROM tfc_run(
        'SELECT m, count(*) FROM tfc GROUP BY m ORDER BY m DESC LIMIT 5') r;
  END LOOP;
END $$;
-- every method: the answers and the block counts of off, which spilled
SELECT what, count(DISTINCT answer) AS answers, count(DISTINCT blocks) AS counts,
       bool_and(blocks NOT LIKE '0 read%') AS spilled, count(*) AS methods
FROM tfc_runs GROUP BY what ORDER BY what;

-- EXPLAIN (ANALYZE, BUFFERS): a node that wrote compressed temporary files
-- says with which method, and how many bytes were written against how many
-- went to disk, in every format.  The byte counts depend on the codec's
-- output: they are shown as N, with whether the disk got fewer.
CREATE FUNCTION tfc_explain(fmt text, query text, compare bool DEFAULT true)
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  plan text := '';
  ln text;
  in_methods boolean := false;
  n bigint[];
BEGIN
  FOR ln IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT '
    || fmt || ') ' || query LOOP
    plan := plan || ln || E'\n';
  END LOOP;
  IF fmt = 'json' THEN
    -- the top node is the one that spilled
    RETURN NEXT 'methods ' || (plan::json->0->'Plan'->'Temp Compression Methods')::text;
    n := ARRAY[(plan::json->0->'Plan'->>'Temp Written Logical')::bigint,
               (plan::json->0->'Plan'->>'Temp Written Physical')::bigint];
  ELSE
    -- our lines, the byte counts as N (in YAML, the methods' list items too)
    FOR ln IN SELECT btrim(regexp_split_to_table(plan, E'\n')) LOOP
      in_methods := (in_methods AND ln LIKE '- %') OR ln = 'Temp Compression Methods:';
      CONTINUE WHEN NOT in_methods AND
        ln !~ '^(Temp Compression|Temp Written (Logical|Physical))';
      RETURN NEXT regexp_replace(ln, '[0-9]+(kB)?($| )', 'N\1\2', 'g');
      IF ln ~ '^Temp Compression: ' THEN
        n := regexp_match(ln, 'written ([0-9]+)kB -> ([0-9]+)kB')::bigint[];
      ELSIF ln ~ '^Temp Written (Logical|Physical)' THEN
        n := n || substring(ln from '[0-9]+')::bigint;
      END IF;
    END LOOP;
  END IF;
  IF compare THEN
    RETURN NEXT 'smaller on disk: ' || coalesce((n[2] < n[1])::text, 'none shown');
  END IF;
END $$;
SET temp_file_compression = lz4;
SELECT tfc_explain('text', 'SELECT m FROM tfc ORDER BY m');
SELECT tfc_explain('json', 'SELECT m FROM tfc ORDER BY m');
SELECT tfc_explain('yaml', 'SELECT m FROM tfc ORDER BY m');
-- (auto may well store the blocks uncompressed on a fast device)
SET temp_file_compression = 'auto';
SELECT tfc_explain('text', 'SELECT m FROM tfc ORDER BY m', false);
-- PostgreSQL's own pglz, a codec the server gives the library
SET temp_file_compression = 'pglz';
SELECT tfc_explain('text', 'SELECT m FROM tfc ORDER BY m', false);
-- a hash join's batches: the Hash node and the join above it
SET temp_file_compression = 'zstd';
SET enable_mergejoin = off;
SELECT tfc_explain('text', 'SELECT count(*) FROM tfc a JOIN tfc b USING (m)');
RESET enable_mergejoin;
-- stock files: nothing of it
SET temp_file_compression = off;
SELECT tfc_explain('text', 'SELECT m FROM tfc ORDER BY m');
DROP FUNCTION tfc_explain(text, text, bool);

-- a held cursor's tuplestore: a file pg_ls_tmpdir() lists, gone at close
SET temp_file_compression = lz4;
BEGIN;
DECLARE tfc_cur CURSOR WITH HOLD FOR SELECT * FROM tfc;
COMMIT;
SELECT count(*) > 0 AS listed
FROM pg_ls_tmpdir() WHERE name LIKE 'pgsql_tmp' || pg_backend_pid() || '.%';
FETCH 2 FROM tfc_cur;
CLOSE tfc_cur;
SELECT count(*) AS left_over
FROM pg_ls_tmpdir() WHERE name LIKE 'pgsql_tmp' || pg_backend_pid() || '.%';

-- temp_tablespaces: a sort's files go there
SET allow_in_place_tablespaces = true;
CREATE TABLESPACE regress_tfc_space LOCATION '';
SET temp_tablespaces = regress_tfc_space;
BEGIN;
DECLARE tfc_sorted CURSOR FOR SELECT m FROM tfc ORDER BY m;
FETCH 1 FROM tfc_sorted;
SELECT count(*) > 0 AS in_tablespace
FROM pg_ls_tmpdir((SELECT oid FROM pg_tablespace WHERE spcname = 'regress_tfc_space'));
COMMIT;
RESET temp_tablespaces;
DROP TABLESPACE regress_tfc_space;

DROP FUNCTION tfc_run(text);
RESET work_mem;
RESET max_parallel_workers_per_gather;
RESET temp_file_compression;
RESET temp_file_encryption;
