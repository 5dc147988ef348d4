# simhash_perm survives a crash (kill -9) in the middle of concurrent
# inserts: after restart every answer equals a sequential scan's.  An index
# on an unlogged table comes back empty and usable.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;
use IPC::Run;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 20\n");
$node->start;
$node->safe_psql('postgres', q{CREATE EXTENSION simhash;} . $PSEUDO_FP_SQL . q{
	CREATE TABLE d (id bigint, fp simhash64);
	INSERT INTO d SELECT g, pseudo_fp(g) FROM generate_series(1, 10000) g;
	CREATE INDEX d_idx ON d USING simhash_perm (fp);
	CREATE SEQUENCE s START 1000000;
	CREATE UNLOGGED TABLE u (id int, fp simhash64);
	CREATE INDEX u_idx ON u USING simhash_perm (fp);
	INSERT INTO u SELECT g, pseudo_fp(g) FROM generate_series(1, 5000) g;
	CHECKPOINT;
});

# four clients insert (one in a transaction that will never commit) while
# the server is killed
my @clients;
for my $i (1 .. 4)
{
	# clients 1-3 commit every row; client 4 commits nothing
	my $commit = $i == 4 ? '' : 'COMMIT;';
	my $sql = qq{
		DO \$\$
		BEGIN
		  FOR i IN 1 .. 100000 LOOP
		    INSERT INTO d SELECT v, pseudo_fp(v) FROM (SELECT nextval('s') AS v) x;
		    $commit
		  END LOOP;
		END \$\$;
	};
	my ($out, $err) = ('', '');
	push @clients, IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c', $sql ],
		'<', \undef, '>', \$out, '2>', \$err);
}

# let them run, with splits happening, then crash
$node->poll_query_until('postgres', "SELECT last_value > 1030000 FROM s")
  or die 'inserts did not progress';
$node->stop('immediate');
$_->kill_kill for @clients;
$node->start;

my $cmp = q{
	SELECT count(*), coalesce(sum(d.id * (k + 1)), 0)
	  FROM (SELECT fp FROM d WHERE id % 613 = 0 LIMIT 100) q, generate_series(0, 4) k, d
	 WHERE hamming_near(d.fp, q.fp, k)};
my $truth = $node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $cmp");
my $index = $node->safe_psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off; $cmp");
is($index, $truth, 'after crash recovery the index equals a sequential scan');
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM d');
cmp_ok($rows, '>', 10000, "rows inserted before the crash survived ($rows)");

# every surviving row is found through the index by its own fingerprint
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM d WHERE NOT EXISTS
	  (SELECT 1 FROM d d2 WHERE hamming_near(d2.fp, d.fp, 0) AND d2.id = d.id)}),
	'0', 'every committed row is reachable through the index');

# inserts and VACUUM work after recovery (entries of the aborted
# transaction are dead and get removed)
$node->safe_psql('postgres', q{
	INSERT INTO d SELECT g, pseudo_fp(g) FROM generate_series(2000000, 2005000) g;
	VACUUM (INDEX_CLEANUP ON) d;
});
$truth = $node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $cmp");
$index = $node->safe_psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off; $cmp");
is($index, $truth, 'after recovery, inserts and vacuum the index equals a sequential scan');
is($node->safe_psql('postgres', 'SELECT min(entries) = max(entries) AND min(entries) = (SELECT count(*) FROM d) FROM simhash_perm_info(\'d_idx\')'),
	't', 'vacuum removed the entries of rows that never committed, from every table');

# the unlogged table is empty after the crash, and its index works
is($node->safe_psql('postgres', 'SELECT count(*) FROM u'), '0', 'unlogged table is empty after crash');
$node->safe_psql('postgres', 'INSERT INTO u SELECT g, pseudo_fp(g) FROM generate_series(1, 3000) g');
is($node->safe_psql('postgres',
		"SET enable_seqscan = off; SELECT id FROM u WHERE hamming_near(fp, pseudo_fp(1234), 2)"),
	'1234', 'index on the unlogged table works after the crash');

$node->stop;
done_testing();
