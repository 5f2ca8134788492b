# Cancel: statement_timeout fires during a sort that spills through
# pg_buffile (pg_buffile.method = lz4).  The error is the usual one, the
# session's files go with the aborted query (nothing left in pgsql_tmp
# while the session is still connected, nothing of ours in its memory),
# and the same session spills again and answers right.  Then a backend
# terminated inside a transaction whose cursor holds open files (as a
# parallel worker is when its leader's query is cancelled): it exits
# without a crash, and leaves nothing behind.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('cancel');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'pg_buffile'
pg_buffile.method = 'lz4'
log_temp_files = 0
});
$node->start;

my $tmpdir = $node->data_dir . '/base/pgsql_tmp';
my $session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe("SET work_mem = '64kB'");
$session->query_safe('SET max_parallel_workers_per_gather = 0');
my $pid = $session->query_safe('SELECT pg_backend_pid()');

# Far more than a second's sorting, so that the timeout comes while the
# sort writes its runs.
my $logpos = -s $node->logfile;
$session->{stderr} = '';
my ($out, $failed) = $session->query(
	q{SET statement_timeout = '1s';
SELECT count(*) FROM (SELECT md5(i::text) c FROM generate_series(1, 50000000) i ORDER BY c) s;
});
ok($failed, 'the spilling sort failed');
like(
	$session->{stderr},
	qr/canceling statement due to statement timeout/,
	'with the statement timeout\'s error');
$session->{stderr} = '';
$session->query_safe('RESET statement_timeout');
# the aborted query's file, dropped at abort, is logged with its method
ok( $node->log_contains(
		qr/\[$pid\] .*LOG:  temporary file: path "[^"]*", size [1-9]\d*, logical size \d+, method lz4/,
		$logpos),
	'it was spilling through pg_buffile when canceled');

my @left = -d $tmpdir ? glob("$tmpdir/*") : ();
is(scalar(@left), 0, 'nothing left in pgsql_tmp while the session is still connected')
  or diag(join("\n", @left));
is( $session->query_safe(
		"SELECT coalesce(max(total_bytes), 0) <= 8192 FROM pg_backend_memory_contexts WHERE name = 'pg_buffile'"
	),
	't',
	'nothing of ours left in the session\'s memory');

# The session spills again, through the extension, and answers right.
$logpos = -s $node->logfile;
my $result = $session->query_safe(
	q{SELECT count(*), md5(string_agg(c, ',' ORDER BY c))
  = (SELECT md5(string_agg(md5(i::text), ',' ORDER BY md5(i::text) COLLATE "C")) FROM generate_series(1, 100000) i)
  FROM (SELECT md5(i::text) COLLATE "C" c FROM generate_series(1, 100000) i ORDER BY c) s});
is($result, '100000|t', 'the session works after the cancel');
ok($node->log_contains(qr/temporary file: .*method lz4/, $logpos),
	'and spills through pg_buffile');

$session->quit;

# pg_buffile's exit callback runs before the transaction is aborted: it must
# not leave the files to the cursor's resource owner as well.
my $victim = $node->background_psql('postgres', on_error_stop => 0);
$victim->query_safe("SET work_mem = '64kB'");
$victim->query_safe('SET max_parallel_workers_per_gather = 0');
my $vpid = $victim->query_safe('SELECT pg_backend_pid()');
$victim->query_safe('BEGIN');
$victim->query_safe(
	q{DECLARE c CURSOR FOR SELECT md5(i::text) FROM generate_series(1, 200000) i ORDER BY 1});
$victim->query_safe('FETCH 1 FROM c');
my @open = glob("$tmpdir/*");
ok(scalar(@open) > 0, 'the cursor holds its sort\'s files');
$logpos = -s $node->logfile;
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($vpid, 60000)"),
	't', 'the backend holding them is terminated');
$victim->quit;
ok(!$node->log_contains(qr/terminated by signal|TRAP|PANIC/, $logpos),
	'it exits without a crash');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server answers');
@left = -d $tmpdir ? glob("$tmpdir/*") : ();
is(scalar(@left), 0, 'nothing left in pgsql_tmp after its exit')
  or diag(join("\n", @left));

$node->stop;
done_testing();
