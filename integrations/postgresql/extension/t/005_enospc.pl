# ENOSPC: temp_tablespaces on a file system too small for a sort's runs.
# The directory comes from the environment, PG_BUFFILE_ENOSPC_DIR: an empty
# directory the test's user owns, on a small file system of its own (a few
# MB; pg-hook.sh's tap part mounts a tmpfs).  Without it the test fails:
# skipping would hide that the case is not tested.
#
# With pg_buffile.method = lz4, as with PostgreSQL's own files (off), the
# sort fails with a "could not write" error of SQLSTATE 53100 (disk_full)
# naming "No space left on device"; the server keeps running; nothing is
# left in the tablespace's temporary directory; the session then sorts
# elsewhere.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $fs = $ENV{PG_BUFFILE_ENOSPC_DIR};
die "PG_BUFFILE_ENOSPC_DIR is not set: the ENOSPC test needs a directory on a small file system"
  unless defined $fs && $fs ne '';
die "PG_BUFFILE_ENOSPC_DIR ($fs) is not a directory" unless -d $fs;
my $avail = `df -Pk "$fs" | tail -1 | awk '{print \$4}'`;
chomp $avail;
cmp_ok($avail, '<=', 64 * 1024,
	"PG_BUFFILE_ENOSPC_DIR is on a small file system ($avail kB free)");

my $node = PostgreSQL::Test::Cluster->new('enospc');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'pg_buffile'
pg_buffile.method = 'lz4'
log_temp_files = 0
});
$node->start;

# A tablespace of its own in the directory, for this run.
my $location = "$fs/ts_" . $$;
mkdir $location or die "could not create $location: $!";
$node->safe_psql('postgres', "CREATE TABLESPACE tiny LOCATION '$location'");
my $ts_oid = $node->safe_psql('postgres',
	"SELECT oid FROM pg_tablespace WHERE spcname = 'tiny'");

my $session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe("SET work_mem = '64kB'");
$session->query_safe('SET max_parallel_workers_per_gather = 0');
$session->query_safe('SET temp_tablespaces = tiny');
$session->query_safe('\set VERBOSITY verbose');

# Far more than the file system holds, even compressed.
my $rows = int($avail / 1024 * 50000) + 200000;
my $sort = "SELECT count(*) FROM (SELECT md5(i::text) c FROM generate_series(1, $rows) i ORDER BY c) s";

sub tmp_files
{
	my @found;
	foreach my $dir (glob("$location/*/pgsql_tmp"),
		$node->data_dir . '/base/pgsql_tmp')
	{
		push @found, glob("$dir/*") if -d $dir;
	}
	return @found;
}

foreach my $method ('lz4', 'off')
{
	$session->query_safe("SET pg_buffile.method = $method");
	$session->{stderr} = '';
	my ($out, $failed) = $session->query($sort);
	my $err = $session->{stderr};
	$session->{stderr} = '';
	ok($failed, "$method: the sort fails on the full file system");
	like(
		$err,
		qr/ERROR:  53100: could not (write|extend|create)[^\n]*"pg_tblspc\/$ts_oid\/[^"]*": No space left on device/,
		"$method: with a \"could not write\" error of SQLSTATE 53100 in the temp tablespace"
	) or diag($err);

	is($node->safe_psql('postgres', 'SELECT 1'), '1',
		"$method: the server keeps running");
	my @left = tmp_files();
	is(scalar(@left), 0, "$method: nothing left behind")
	  or diag(join("\n", @left));
}

# The session works, its sorts in the database's tablespace.
$session->query_safe('RESET temp_tablespaces');
$session->query_safe('SET pg_buffile.method = lz4');
is($session->query_safe($sort), $rows, 'the session sorts again elsewhere');
ok($node->log_contains(qr/temporary file: .*method lz4/),
	'through pg_buffile');
$session->quit;

$node->safe_psql('postgres', 'DROP TABLESPACE tiny');
$node->stop;
rmdir $location;
done_testing();
