#!/bin/bash
# runop.sh EXT OP DB [OPTIONS]: one SQLite operation in a sqlite3 process, temp files in ./tmp;
# EXT empty: stock SQLite, else the path of bfsqlite.so without its suffix (.load).
EXT=$1 OP=$2 DB=$3 OPTS=${4:-codec=lz4,threads=1}
case $OP in
 index) SQL='PRAGMA temp_store=FILE; BEGIN; CREATE INDEX t_s ON t(s); ROLLBACK;';;
 orderby) SQL='PRAGMA temp_store=FILE; SELECT count(*) FROM (SELECT id, s FROM t ORDER BY s, id);';;
 vacuum) SQL='PRAGMA temp_store=FILE; VACUUM;';;
esac
mkdir -p tmp
{ [ -n "$EXT" ] && echo ".load $EXT"; echo ".open $DB"; echo "$SQL"; } |
  BFSQLITE_OPTIONS=$OPTS SQLITE_TMPDIR=tmp sqlite3
