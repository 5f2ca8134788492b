# Logical replication with streaming = on of a transaction far over the
# publisher's logical_decoding_work_mem: the subscriber's apply worker
# writes the streamed changes into FileSet files until the commit arrives.
# With pg_buffile loaded on the subscriber and pg_buffile.method = lz4 those
# files are ours (log_temp_files names our file "<name>.bf" when the worker
# deletes it, pg_buffile_stats counts them), and the subscriber ends with
# the publisher's rows.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $publisher = PostgreSQL::Test::Cluster->new('publisher');
$publisher->init(allows_streaming => 'logical');
$publisher->append_conf('postgresql.conf', "logical_decoding_work_mem = '64kB'");
$publisher->start;

my $subscriber = PostgreSQL::Test::Cluster->new('subscriber');
$subscriber->init;
$subscriber->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'pg_buffile'
pg_buffile.method = 'lz4'
log_temp_files = 0
});
$subscriber->start;

my $table = 'CREATE TABLE stream_tab (a int PRIMARY KEY, b text)';
$publisher->safe_psql('postgres', $table);
$subscriber->safe_psql('postgres', $table);
$subscriber->safe_psql('postgres', 'CREATE EXTENSION pg_buffile');

my $connstr = $publisher->connstr . ' dbname=postgres';
$publisher->safe_psql('postgres', 'CREATE PUBLICATION stream_pub FOR TABLE stream_tab');
$subscriber->safe_psql('postgres',
	"CREATE SUBSCRIPTION stream_sub CONNECTION '$connstr' PUBLICATION stream_pub WITH (streaming = on)"
);
$subscriber->wait_for_subscription_sync($publisher, 'stream_sub');
$subscriber->safe_psql('postgres', 'SELECT pg_buffile_stats_reset()');

my $logpos = -s $subscriber->logfile;

# One transaction of some 20 MB of changes, against 64 kB of decoding memory:
# streamed in many chunks before its commit.
$publisher->safe_psql(
	'postgres', q{
BEGIN;
INSERT INTO stream_tab SELECT i, repeat(md5(i::text), 4) FROM generate_series(1, 100000) i;
UPDATE stream_tab SET b = md5(b) WHERE a % 3 = 0;
DELETE FROM stream_tab WHERE a % 7 = 0;
COMMIT;
});
$publisher->wait_for_catchup('stream_sub');

my $digest = 'SELECT count(*), md5(string_agg(a::text || b, \',\' ORDER BY a)) FROM stream_tab';
my $want = $publisher->safe_psql('postgres', $digest);
my $have = $subscriber->safe_psql('postgres', $digest);
like($want, qr/^85715\|/, 'the publisher has its rows');
is($have, $want, 'the subscriber ends with the publisher\'s rows');

ok( $publisher->safe_psql(
		'postgres',
		"SELECT stream_txns > 0 FROM pg_stat_replication_slots WHERE slot_name = 'stream_sub'"
	  ) eq 't',
	'the publisher streamed the transaction');

# The apply worker's changes file, in its FileSet, was ours: deleted by the
# worker after the commit, it is logged as stock logs its own, a line for
# its segment 0 (and none for anything else of ours).
ok( $subscriber->log_contains(
		qr/temporary file: path "[^"]*\.fileset\/\d+-\d+\.changes\.bf\.0", size \d+$/m,
		$logpos),
	'the streamed changes were spilled through pg_buffile (log_temp_files)');
ok( !$subscriber->log_contains(
		qr/temporary file: path "[^"]*\.fileset\/[^"]*\.bf", size/, $logpos),
	'no marker of ours is logged as a temporary file');
my $stats = $subscriber->safe_psql('postgres',
	"SELECT files > 0, stored_bytes > 0 AND stored_bytes < logical_bytes FROM pg_buffile_stats WHERE database = 'postgres' AND method = 'lz4'"
);
is($stats, 't|t', 'pg_buffile_stats counts the spilled changes, compressed');

# The worker keeps its FileSet's directory (and our space's) while it runs;
# the files of the transaction go at its commit, deleted by the worker
# between transactions.
my $tmpdir = $subscriber->data_dir . '/base/pgsql_tmp';
my @left = grep { -f $_ } glob("$tmpdir/*/*");
is(scalar(@left), 0, 'the apply worker\'s files are gone after the commit')
  or diag(join("\n", @left));
$subscriber->safe_psql('postgres', 'SELECT 1');
ok(!$subscriber->log_contains(qr/terminated by signal/, $logpos),
	'no process of the subscriber crashed');

$subscriber->stop;
$publisher->stop;
done_testing();
