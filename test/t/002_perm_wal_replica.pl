# simhash_perm is WAL-logged: a streaming replica returns the same rows as
# the primary through build, inserts with page splits, deletes, VACUUM and
# more inserts, and redo of every generic WAL record is checked against
# the primary's page images (wal_consistency_checking = 'generic').
# Table o has an index built in the leaf format of simhash 1.3 and earlier
# (simhash.write_old_leaf_format), whose pages take the current format as
# the same changes rewrite them.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "wal_consistency_checking = 'generic'\n");
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION simhash');
# a slot, so the primary keeps the WAL until the standby has it, however
# far behind a loaded machine lets it fall
$primary->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('standby')");
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "primary_slot_name = 'standby'\n");
$standby->start;

$primary->safe_psql('postgres', $PSEUDO_FP_SQL . q{
	CREATE TABLE d (id int, fp simhash64);
	INSERT INTO d SELECT g, pseudo_fp(g) FROM generate_series(1, 20000) g;
	INSERT INTO d SELECT 100000 + g, '00000000000000ff' FROM generate_series(1, 3000) g;
	CREATE INDEX d_idx ON d USING simhash_perm (fp);
	CREATE TABLE o AS SELECT * FROM d;
	SET simhash.write_old_leaf_format = on;
	CREATE INDEX o_idx ON o USING simhash_perm (fp);
	RESET simhash.write_old_leaf_format;
	CREATE TABLE q AS SELECT fp FROM d WHERE id % 997 = 0
	  UNION ALL SELECT '00000000000001ff'::simhash64
	  UNION ALL SELECT pseudo_fp(-g) FROM generate_series(1, 5) g;
});

# one number summarising every answer for k = 0..5, through the index
sub answers
{
	my ($table, $scan) = @_;
	my $off = $scan eq 'index' ? 'enable_seqscan' : 'enable_indexscan';
	return qq{
	SET $off = off; SET enable_bitmapscan = off;
	SELECT count(*), coalesce(sum(d.id::bigint * (k + 1)), 0)
	  FROM q, generate_series(0, 5) k, $table d WHERE hamming_near(d.fp, q.fp, k)};
}

sub check_round
{
	my ($name) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	for my $table ('d', 'o')
	{
		my $expected = $primary->safe_psql('postgres', answers($table, 'seq'));
		is($primary->safe_psql('postgres', answers($table, 'index')), $expected,
			"$name: $table: primary index equals seq scan");
		is($standby->safe_psql('postgres', answers($table, 'index')), $expected,
			"$name: $table: standby index equals primary seq scan");
	}
	like($standby->safe_psql('postgres',
			"SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT * FROM d WHERE hamming_near(fp, '0123456789abcdef', 3)"),
		qr/Index Scan using d_idx/, "$name: standby uses the index");
}

check_round('after build');

# enough inserts to split leaves and internal pages, and a new root
$primary->safe_psql('postgres',
	'INSERT INTO d SELECT g, pseudo_fp(g) FROM generate_series(20001, 120000) g;
	 INSERT INTO o SELECT g, pseudo_fp(g) FROM generate_series(20001, 120000) g');
check_round('after inserts');

$primary->safe_psql('postgres', q{
	DELETE FROM d WHERE id % 3 = 0;
	VACUUM d;
	DELETE FROM o WHERE id % 3 = 0;
	VACUUM o;
});
check_round('after delete and vacuum');

$primary->safe_psql('postgres', q{
	INSERT INTO d SELECT g, pseudo_fp(g) FROM generate_series(120001, 150000) g;
	UPDATE d SET fp = pseudo_fp(id + 7) WHERE id % 11 = 0;
	INSERT INTO o SELECT g, pseudo_fp(g) FROM generate_series(120001, 150000) g;
	UPDATE o SET fp = pseudo_fp(id + 7) WHERE id % 11 = 0;
});
check_round('after reinsert and update');

# the layout function reads the same tree on both
is($standby->safe_psql('postgres', 'SELECT sum(entries), max(height) FROM simhash_perm_info(\'d_idx\')'),
	$primary->safe_psql('postgres', 'SELECT sum(entries), max(height) FROM simhash_perm_info(\'d_idx\')'),
	'standby and primary trees have the same entries and height');
ok($primary->safe_psql('postgres', 'SELECT max(height) FROM simhash_perm_info(\'d_idx\')') >= 2,
	'the trees grew internal levels');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM simhash_perm_check(\'o_idx\')'), '4',
	'the index of mixed leaf formats is sound');

# redo compared every page image: no inconsistency was reported
$standby->stop;
$primary->stop;
my $log = slurp_file($standby->logfile);
unlike($log, qr/inconsistent page found/, 'no WAL consistency failures on the standby');

done_testing();
