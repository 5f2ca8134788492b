# Parallel query through pg_buffile: a parallel hash join in batches (the
# FileSet files the leader and its workers share) and a parallel sort whose
# workers spill (Gather Merge over their sorts), with pg_buffile.method =
# lz4, give the answers they give with PostgreSQL's own files (off); the
# workers' files are ours (their private files' log_temp_files lines say
# "method lz4"; the FileSet's are logged as stock logs its own, at their
# deletion, once each: segment 0 of our file "<name>.bf"); pg_buffile_stats
# counts them all; no temporary file stays behind once the queries are done.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('parallel');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'pg_buffile'
pg_buffile.method = 'lz4'
log_temp_files = 0
log_line_prefix = '%m [%p] '
max_worker_processes = 8
max_parallel_workers = 4
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pg_buffile;
CREATE TABLE spill (a int, b int, c text);
INSERT INTO spill SELECT i, i % 1000, md5(i::text) FROM generate_series(1, 200000) i;
ANALYZE spill;
ALTER TABLE spill SET (parallel_workers = 2);
SELECT pg_buffile_stats_reset();
});
my $startpos = -s $node->logfile;

my $parallel = q{
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET enable_parallel_hash = on;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET hash_mem_multiplier = 1.0;
SET work_mem = '256kB';
};

# Each query: its plan has the parallel node and it spills; with lz4 its
# answer is the one off gives; workers wrote files of ours.
my @queries = (
	[
		'parallel hash join', 'Parallel Hash Join',
		'SELECT s1.a, s1.b, s2.c FROM spill s1 JOIN spill s2 ON s1.a = s2.a'
	],
	[
		'parallel sort', 'Gather Merge',
		'SELECT c, a FROM spill ORDER BY c, a'
	]);

foreach my $q (@queries)
{
	my ($name, $node_name, $query) = @$q;
	my $digest = "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM ($query) r";

	my $plan = $node->safe_psql('postgres',
		"$parallel EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $query");
	like($plan, qr/$node_name/, "$name: the plan is parallel");
	like($plan, qr/Workers Launched: 2/, "$name: two workers launched");
	like($plan, qr/Batches: (?!1 )\d+|Sort Method: external/,
		"$name: it spills");

	my $logpos = -s $node->logfile;
	my $lz4 = $node->safe_psql('postgres',
		"$parallel SET pg_buffile.method = lz4; SELECT pg_backend_pid(); $digest");
	my ($leader, $lz4_digest) = split /\n/, $lz4;
	my $off_digest = $node->safe_psql('postgres',
		"$parallel SET pg_buffile.method = off; $digest");
	is($lz4_digest, $off_digest, "$name: lz4's answer is off's");

	# the lines of the lz4 run: off's private files are logged without a
	# method, its FileSet files as "<name>.<segment>"
	my $log = slurp_file($node->logfile, $logpos);
	my (%pids, $fileset_files);
	while ($log =~
		/\[(\d+)\] LOG:  temporary file: path "([^"]*)", size \d+(, logical size \d+, method lz4)?$/mg
	  )
	{
		my ($pid, $path, $ours) = ($1, $2, $3);

		if (defined $ours)
		{
			$pids{$pid}++ if $pid != $leader;
		}
		elsif ($path =~ /\.fileset\/[^\/]+\.p[1-9]\d*\.bf\.0$/)
		{
			# a FileSet file a worker (participant 1 and up) wrote
			$fileset_files++;
		}
	}
	cmp_ok(scalar(keys %pids) + ($fileset_files // 0),
		'>=', 1, "$name: parallel workers wrote files of ours with lz4");
}

# The view counts every process's files, the workers' too: as many as
# log_temp_files logged with lz4 since the reset, the private files with
# their method and the FileSet files by stock's code at their deletion,
# one line each (no file here is written twice, nor reaches a second
# segment).
my $since = slurp_file($node->logfile, $startpos);
my $logged = () = $since =~ /temporary file: [^\n]*, method lz4|temporary file: path "[^"]*\.bf\.0", size \d+$/mg;
my $files = $node->safe_psql('postgres',
	"SELECT files FROM pg_buffile_stats WHERE database = 'postgres' AND method = 'lz4'");
cmp_ok($logged, '>', 0, 'files of ours were logged');
is($files, $logged, 'pg_buffile_stats counts every process\'s files, the workers\' too');

# Nothing stays: no file and no directory in the temporary directory once
# the sessions are gone (FileSet directories are removed with their DSM
# segment, our space's directory at the end of the transaction).
my $tmpdir = $node->data_dir . '/base/pgsql_tmp';
my @left = -d $tmpdir ? glob("$tmpdir/*") : ();
is(scalar(@left), 0, 'no temporary file or directory left')
  or diag(join("\n", @left));

$node->stop;
done_testing();
