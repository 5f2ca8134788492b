/* integrations/postgresql/extension/pg_buffile--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_buffile" to load this file. \quit

-- The counters pg_buffile keeps in shared memory (the module, preloaded,
-- counts whether or not the extension exists): a row per database and
-- method that counted anything since the last reset.
CREATE FUNCTION pg_buffile_stats(
    OUT dbid oid,
    OUT method text,
    OUT files bigint,
    OUT logical_bytes bigint,
    OUT stored_bytes bigint,
    OUT compress_time double precision,
    OUT decompress_time double precision,
    OUT stats_reset timestamp with time zone
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_buffile_stats'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_buffile_stats AS
  SELECT s.dbid AS datid, d.datname AS database, s.method, s.files,
         s.logical_bytes, s.stored_bytes, s.compress_time, s.decompress_time,
         s.stats_reset
    FROM pg_buffile_stats() s LEFT JOIN pg_catalog.pg_database d ON d.oid = s.dbid;

GRANT SELECT ON pg_buffile_stats TO PUBLIC;

CREATE FUNCTION pg_buffile_stats_reset()
RETURNS timestamp with time zone
AS 'MODULE_PATHNAME', 'pg_buffile_stats_reset'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- as pg_stat_reset(): only superusers, unless granted
REVOKE ALL ON FUNCTION pg_buffile_stats_reset() FROM PUBLIC;
