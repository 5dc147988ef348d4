# simhash_perm under concurrent inserts (page splits), queries, deletes and
# VACUUM: a query for a row that exists throughout must always find it, and
# at the end every answer equals a sequential scan's.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;

my $node = PostgreSQL::Test::Cluster->new('concurrency');
$node->init;
# no autovacuum: its snapshots would keep the final VACUUM from removing
# the last deleted rows, which the last check counts
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;
$node->safe_psql('postgres', q{CREATE EXTENSION simhash;} . $PSEUDO_FP_SQL . q{
	CREATE TABLE d (id bigint, fp simhash64);
	-- ids 1..5000 are stable: never deleted or updated
	INSERT INTO d SELECT g, pseudo_fp(g) FROM generate_series(1, 5000) g;
	-- many rows sharing one fingerprint, so splits happen inside one key
	INSERT INTO d SELECT 10000000 + g, '00000000000000ff' FROM generate_series(1, 2000) g;
	CREATE INDEX d_idx ON d USING simhash_perm (fp);
	CREATE SEQUENCE s START 100000;
});

my $dir = PostgreSQL::Test::Utils::tempdir;
my %scripts = (
	'insert.sql' => q{
		INSERT INTO d SELECT v, pseudo_fp(v) FROM (SELECT nextval('s') AS v) x;
		INSERT INTO d SELECT 20000000 + v, '00000000000000ff' FROM (SELECT nextval('s') AS v) x;
	},
	# a stable row must be found, by itself, within distance 2, and as the
	# nearest row to its fingerprint with three bits flipped (an ordered
	# scan, which reads ring 0 table after table, while pages split under
	# it, until it has seen every row within 2; another row within 3 of the
	# query has about one chance in a billion); 1/0 aborts the client (and
	# fails the test) if it is missing
	'query.sql' => q{
		\set id random(1, 5000)
		SELECT 1 / count(*) FROM d WHERE hamming_near(fp, pseudo_fp(:id), 0) AND id = :id;
		SELECT 1 / count(*) FROM d WHERE hamming_near(fp, pseudo_fp(:id), 2) AND id = :id;
		SELECT 1 / count(*) FROM (SELECT id FROM d ORDER BY fp <-> (pseudo_fp(:id)::bigint # 14)::simhash64 LIMIT 1) s WHERE id = :id;
	},
	# the 2000 stable rows of one fingerprint, among the ever more copies
	# the inserts add: hundreds of milliseconds a query, so run by the same
	# clients one time in ten (a script of its own, weighted)
	'cluster.sql' => q{
		SELECT 1 / (count(*) >= 2000)::int FROM d WHERE hamming_near(fp, '00000000000000fe', 1) AND id BETWEEN 10000001 AND 10002000;
	},
	'delete.sql' => q{
		DELETE FROM d WHERE id IN (SELECT id FROM d WHERE id >= 100000 AND id < 10000000 AND random() < 0.3 LIMIT 20);
	},
	'vacuum.sql' => q{
		VACUUM d;
		SELECT pg_sleep(0.2);
	},
);
while (my ($name, $body) = each %scripts)
{
	open my $fh, '>', "$dir/$name" or die;
	print $fh $body;
	close $fh;
}

my $connstr = $node->connstr('postgres');
# (the connection string is pgbench's last argument, its database name;
# "-d" would be --debug, whose output once filled the pipes below and
# stopped the clients for most of the run)
my @common = ('pgbench', '-n', '-T', '20');
# Each pgbench writes to files, not to pipes, which this script does not
# drain while it waits for another run.
my @names = ('inserts', 'queries', 'deletes', 'vacuum');
my %args = (
	inserts => [ '-c', '2', '-f', "$dir/insert.sql" ],
	queries => [ '-c', '2', '-M', 'prepared', '-f', "$dir/query.sql\@9", '-f', "$dir/cluster.sql\@1" ],
	deletes => [ '-c', '1', '-f', "$dir/delete.sql" ],
	vacuum  => [ '-c', '1', '-f', "$dir/vacuum.sql" ],);
my @runs;
for my $name (@names)
{
	# the queries go through the index, whatever the planner would choose
	local $ENV{PGOPTIONS} = $name eq 'queries' ? '-c enable_seqscan=off -c enable_bitmapscan=off' : '';
	push @runs, IPC::Run::start([ @common, @{ $args{$name} }, $connstr ],
		'>', "$dir/$name.out", '2>', "$dir/$name.err");
}
for my $i (0 .. $#runs)
{
	my $ok = $runs[$i]->finish;
	ok($ok, "pgbench $names[$i] ran without errors")
	  or diag(slurp_file("$dir/$names[$i].err"));
}
my $o2 = slurp_file("$dir/queries.out");
like($o2, qr/number of failed transactions: 0/, 'no query missed a stable row')
  if $o2 =~ /failed transactions/;
note("query clients:\n$o2");
my ($txns) = $o2 =~ /number of transactions actually processed: (\d+)/;
cmp_ok($txns // 0, '>', 100, 'queries ran concurrently with the writers');
# pgbench reports each script's transactions
my @per_script = $o2 =~ /^ - (\d+) transactions/mg;
cmp_ok(scalar(@per_script) == 2 ? $per_script[1] : 0, '>', 5,
	'the large cluster was searched concurrently too')
  or diag($o2);

my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM d');
cmp_ok($rows, '>', 9000, "inserts happened ($rows rows)");
cmp_ok($node->safe_psql('postgres', "SELECT max(height) FROM simhash_perm_info('d_idx')"), '>=', 2,
	'the trees split into several levels while queried');

my $cmp = q{
	SELECT count(*), coalesce(sum(d.id * (k + 1)), 0)
	  FROM (SELECT fp FROM d WHERE id % 97 = 0 LIMIT 200) q, generate_series(0, 4) k, d
	 WHERE hamming_near(d.fp, q.fp, k)};
is( $node->safe_psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off; $cmp"),
	$node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $cmp"),
	'after the concurrent run the index equals a sequential scan');
my $knn = q{
	SELECT string_agg(ARRAY(SELECT d.fp <-> q.fp FROM d ORDER BY d.fp <-> q.fp LIMIT 10)::text, ';' ORDER BY q.id)
	  FROM (SELECT id, fp FROM d WHERE id % 97 = 0 LIMIT 200) q};
is( $node->safe_psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off; $knn"),
	$node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $knn"),
	'after the concurrent run the nearest neighbours equal a sequential scan\'s');
# pgbench may exit while its last DELETE is still committing: wait for the
# other sessions to end, so VACUUM can remove every deleted row
$node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
  or die 'pgbench sessions did not end';
# INDEX_CLEANUP ON: with few dead rows VACUUM would otherwise leave the
# index alone (and the dead line pointers in the heap)
$node->safe_psql('postgres', 'VACUUM (INDEX_CLEANUP ON) d');
my $rows_now = $node->safe_psql('postgres', 'SELECT count(*) FROM d');
is($node->safe_psql('postgres',
		"SELECT min(entries), max(entries), (SELECT count(*) FROM d) FROM simhash_perm_info('d_idx')"),
	join('|', ($rows_now) x 3), 'after VACUUM every table holds exactly the live rows');

$node->stop;
done_testing();
