# Crash restart with pg_buffile: a backend killed with SIGKILL while it
# spills through the extension (pg_buffile.method = lz4) makes the
# postmaster reinitialize; after that the temporary directory holds none of
# our files (remove_temp_files_after_crash removes what is named like
# PostgreSQL's own temporary files, as ours are), and a new query that
# spills works and answers right.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'pg_buffile'
pg_buffile.method = 'lz4'
restart_after_crash = on
remove_temp_files_after_crash = on
log_temp_files = 0
});
$node->start;

my $tmpdir = $node->data_dir . '/base/pgsql_tmp';

# The temporary files of process "pid" (ours: pgsql_tmp<pid>.<n> and its
# segments, and the space's directory pgsql_tmp<pid>.buffile).
sub files_of
{
	my ($pid) = @_;
	return -d $tmpdir ? glob("$tmpdir/pgsql_tmp$pid.*") : ();
}

my $session = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_safe("SET work_mem = '64kB'");

# A sort long enough to be killed while it writes its runs.
$session->query_until(
	qr/spilling/, q{
\echo spilling
SELECT count(*) FROM (SELECT md5(i::text) c FROM generate_series(1, 20000000) i ORDER BY c) s;
});

# Wait until the backend has files of ours that hold data.
my $spilling = 0;
foreach my $i (1 .. $PostgreSQL::Test::Utils::timeout_default * 10)
{
	if (grep { -f $_ && -s $_ > 0 } files_of($pid))
	{
		$spilling = 1;
		last;
	}
	usleep(100_000);
}
ok($spilling, 'the backend spills through pg_buffile before it is killed');
my @before = files_of($pid);
ok((grep { /\.buffile$/ } @before), 'its files are ours (the space\'s directory exists)')
  or diag(join("\n", @before));

my $logpos = -s $node->logfile;
kill 'KILL', $pid;
$session->quit;

# The postmaster restarts the cluster.
ok( $node->poll_query_until('postgres', 'SELECT 1', '1'),
	'the server accepts connections after the crash restart');
ok( $node->log_contains(
		qr/\(PID $pid\) was terminated by signal 9/, $logpos),
	'the killed backend caused the restart');
ok($node->log_contains(qr/all server processes terminated; reinitializing/, $logpos),
	'the postmaster reinitialized');

my @left = -d $tmpdir ? glob("$tmpdir/*") : ();
is(scalar(@left), 0, 'none of our files is left in the temporary directory')
  or diag(join("\n", @left));

# A new query that spills through the extension works.
my $result = $node->safe_psql(
	'postgres', q{
SET work_mem = '64kB';
SET pg_buffile.method = lz4;
SELECT count(*), md5(string_agg(c, ',' ORDER BY c))
  = (SELECT md5(string_agg(md5(i::text), ',' ORDER BY md5(i::text) COLLATE "C")) FROM generate_series(1, 100000) i)
  FROM (SELECT md5(i::text) COLLATE "C" c FROM generate_series(1, 100000) i ORDER BY c) s;
});
is($result, '100000|t', 'a new spilling query works after the restart');
ok( $node->log_contains(qr/temporary file: path "[^"]*", size \d+, logical size \d+, method lz4/, $logpos),
	'and it spilled through pg_buffile');

$node->stop;
done_testing();
