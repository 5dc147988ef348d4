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
use IPC::Run;

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
is($primary->safe_psql('postgres', 'SELECT count(*) FROM simhash_perm_check(\'o_idx\') WHERE table_no >= 0'), '4',
	'the index of mixed leaf formats is sound');

# A young index changes its layout as skewed rows arrive (permgrow.c): an
# index created on an empty table, then rows whose bits 63, 59, .., 3 and
# 62, 58, .., 2 (two blocks of the uniform layout) are zero.  The new trees,
# logged page by page, and the metapage's switch replay on the standby, and
# a standby session that read the index before the change, and so cached
# the old layout, drops it: the change's invalidation is logged.
$primary->safe_psql('postgres', q{
	CREATE TABLE g (id int, fp simhash64);
	CREATE INDEX g_idx ON g USING simhash_perm (fp);
	INSERT INTO g SELECT i, ((pseudo_fp(i)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64
	  FROM generate_series(1, 3000) i;
	CREATE TABLE gq AS SELECT fp FROM g WHERE id % 97 = 0;
});
my $prefix_sql = q{SELECT string_agg(prefix, ';' ORDER BY table_no) FROM simhash_perm_info('g_idx')};
my $uniform = $primary->safe_psql('postgres', $prefix_sql);
my $g_sql = q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) || ':' || coalesce(sum(g.id), 0) FROM gq, g WHERE hamming_near(g.fp, gq.fp, 4);
};
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
my ($in, $out, $err) = ('', '', '');
my $session = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-d', $standby->connstr('postgres') ],
	\$in, \$out, \$err);
sub session_query
{
	my ($sql) = @_;
	my $timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
	$out = '';
	$in .= $sql;
	$timer->start;
	$session->pump until $out =~ /^(\d+:\d+)$/m || $timer->is_expired;
	return $1 // "no answer: $err";
}
is(session_query($g_sql), $primary->safe_psql('postgres', $g_sql),
	'young index: a standby session reads it before the change of layout');

$primary->safe_psql('postgres', q{
	INSERT INTO g SELECT i, ((pseudo_fp(i)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64
	  FROM generate_series(3001, 40000) i;
});
isnt($primary->safe_psql('postgres', $prefix_sql), $uniform,
	'young index: the layout changed as the skewed rows came');
ok($primary->safe_psql('postgres', q{SELECT max(largest_bucket) FROM simhash_perm_info('g_idx')}) < 1000,
	'young index: no prefix holds the rows any more');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
my $g_seq = $primary->safe_psql('postgres', $g_sql =~ s/enable_seqscan = off; SET enable_bitmapscan/enable_indexscan = off; SET enable_bitmapscan/r);
is($primary->safe_psql('postgres', $g_sql), $g_seq, 'young index: primary index equals seq scan after the change');
is(session_query($g_sql), $g_seq,
	'young index: the standby session that cached the old layout answers as the primary');
is($standby->safe_psql('postgres', $prefix_sql), $primary->safe_psql('postgres', $prefix_sql),
	'young index: the standby reads the new layout');
is($primary->safe_psql('postgres', q{SELECT count(*) FROM simhash_perm_check('g_idx', true) WHERE table_no >= 0}), '4',
	'young index: sound after the change');
$in .= "\\q\n";
$session->finish;

# redo compared every page image: no inconsistency was reported
$standby->stop;
$primary->stop;
my $log = slurp_file($standby->logfile);
unlike($log, qr/inconsistent page found/, 'no WAL consistency failures on the standby');

done_testing();
