/* buffile_memory: see buffile_memory.c */
CREATE FUNCTION buffile_memory_open(n int, bytes int, piece int DEFAULT 0) RETURNS void
  AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
CREATE FUNCTION buffile_memory_close() RETURNS void
  AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
