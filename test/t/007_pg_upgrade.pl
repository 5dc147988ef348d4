# pg_upgrade from an older PostgreSQL to the one under test keeps every
# simhash_perm index usable as it is, byte for byte: answers through the
# index equal a sequential scan's for radius and nearest-neighbour queries,
# simhash_perm_check passes, fingerprints of the same texts are the same
# bits, and ALTER EXTENSION simhash UPDATE works afterwards.
#
# The old cluster runs the installation named by SIMHASH_UPGRADE_FROM (a
# directory with bin/, e.g. /usr/lib/postgresql/15), which must have the
# extension installed; the new one the PostgreSQL under test (PATH, as
# make prove_installcheck sets it).  test/run_all.sh sets it in its
# PostgreSQL 18 stage; elsewhere the test says it is skipped.
#
# In the old cluster, at extension version 1.3 (the type still named
# simhash): an index built by CREATE INDEX and grown by inserts past page
# splits, with rows deleted and vacuumed away; an index written in the old
# leaf format (simhash.write_old_leaf_format); an expression index; and the
# fingerprints of the golden inputs (test/golden/inputs.tsv).
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use File::Temp qw(tempdir);
use Cwd qw(getcwd);

my $old_install = $ENV{SIMHASH_UPGRADE_FROM};
if (!defined $old_install || !-x "$old_install/bin/pg_ctl")
{
	plan skip_all => 'set SIMHASH_UPGRADE_FROM to an older PostgreSQL installation with the extension '
	  . '(test/run_all.sh does, in its PostgreSQL 18 stage)';
}

my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_install);
my $new = PostgreSQL::Test::Cluster->new('new');
my ($old_major) = $old->pg_version =~ /^(\d+)/;
my ($new_major) = $new->pg_version =~ /^(\d+)/;
if ($old_major >= $new_major)
{
	plan skip_all => "SIMHASH_UPGRADE_FROM is PostgreSQL $old_major, not older than $new_major";
}
note("pg_upgrade from PostgreSQL $old_major to $new_major");

$old->init;
$old->start;

# the golden inputs, as SQL rows
my @golden;
open(my $fh, '<', "$FindBin::RealBin/../golden/inputs.tsv") or die "inputs.tsv: $!";
while (my $line = <$fh>)
{
	chomp $line;
	my ($name, $shingles, $weighting, $cjk, $text) = split /\t/, $line, 5;
	next unless defined $text;
	s/'/''/g for ($name, $text);
	push @golden, "('$name', '$shingles', '$weighting', '$cjk', '$text')";
}
close $fh;

my $type = 'simhash';	# its name at 1.3
$old->safe_psql('postgres', qq{
	CREATE EXTENSION simhash VERSION '1.3';
	CREATE FUNCTION pseudo_fp(g bigint) RETURNS $type LANGUAGE sql IMMUTABLE
	  AS \$\$ SELECT ((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295))::$type \$\$;
	CREATE TABLE d (id bigint, body text, fp $type) WITH (autovacuum_enabled = off);
	INSERT INTO d SELECT g, 'document ' || g || ' of the upgrade', pseudo_fp(g) FROM generate_series(1, 20000) g;
	CREATE INDEX d_fp ON d USING simhash_perm (fp);
	-- grown past splits, near-copies and a run of one fingerprint among them
	INSERT INTO d SELECT g, 'document ' || g || ' of the upgrade', pseudo_fp(g) FROM generate_series(20001, 40000) g;
	INSERT INTO d SELECT 100000 + g, NULL, (pseudo_fp(g)::bigint # (1::bigint << (g % 64)))::$type
	  FROM generate_series(1, 2000) g;
	INSERT INTO d SELECT 200000 + g, NULL, '00000000000000ff' FROM generate_series(1, 500) g;
	DELETE FROM d WHERE id % 7 = 0;
	VACUUM d;
	CREATE INDEX d_body ON d USING simhash_perm (simhash(body));
	SET simhash.write_old_leaf_format = on;
	CREATE TABLE o AS SELECT * FROM d WHERE id % 3 = 0;
	CREATE INDEX o_fp ON o USING simhash_perm (fp);
	RESET simhash.write_old_leaf_format;
	CREATE TABLE golden (name text, shingles int[], weighting text, cjk text, body text, fp $type);
	INSERT INTO golden (name, shingles, weighting, cjk, body) VALUES } . join(",\n", @golden) . qq{;
	UPDATE golden SET fp = simhash(body, shingles, weighting, cjk);
	CREATE TABLE q AS SELECT id AS qid, fp FROM d WHERE id % 997 = 1
	  UNION ALL SELECT -g, pseudo_fp(-g) FROM generate_series(1, 20) g;
	ANALYZE;
});

# the answers, by sequential scan, for radius queries and nearest neighbours
my $radius_sql = q{
	SELECT t, q.qid, k, (SELECT string_agg(x.id::text, ',' ORDER BY x.id) FROM %s x WHERE hamming_near(x.fp, q.fp, k))
	  FROM q, (VALUES (0), (3), (6)) ks(k), (VALUES ('d'), ('o')) tb(t)
	 WHERE t = '%s' ORDER BY q.qid, k};
my $knn_sql = q{
	SELECT q.qid, (SELECT string_agg(dist::text, ',') FROM
	  (SELECT x.fp <-> q.fp AS dist FROM %s x ORDER BY x.fp <-> q.fp LIMIT 20) s)
	  FROM q ORDER BY q.qid};
my $seq = 'SET enable_indexscan = off; SET enable_bitmapscan = off;';
my $idx = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my %truth;
for my $t ('d', 'o')
{
	$truth{"radius $t"} = $old->safe_psql('postgres', $seq . sprintf($radius_sql, $t, $t));
	$truth{"knn $t"} = $old->safe_psql('postgres', $seq . sprintf($knn_sql, $t));
	is($old->safe_psql('postgres', $idx . sprintf($radius_sql, $t, $t)), $truth{"radius $t"},
		"old cluster: radius answers of $t through the index equal the sequential scan's");
}
my $body_truth = $old->safe_psql('postgres', $seq . q{
	SELECT count(*) FROM d a, d b WHERE a.id % 5000 = 1 AND hamming_near(simhash(b.body), simhash(a.body), 3)});

# This machine's PostgreSQL 15 (Debian's package as installed here) stamps
# every column with an attribute option, pg_attver, that a stock PostgreSQL
# 18 does not know, so pg_upgrade's restore of any table fails on it.  It has
# nothing to do with the extension: clear it in the old catalog first (a
# no-op where the option does not exist).
$old->safe_psql('postgres', q{
	UPDATE pg_attribute SET attoptions = NULL
	 WHERE attrelid >= 16384 AND attoptions::text LIKE '%pg_attver=%'});
$old->stop;

# pg_upgrade, run from a directory of its own (it writes its logs there)
# 18 enables data checksums by default; the clusters must agree
$new->init(extra => $new_major >= 18 ? ['--no-data-checksums'] : []);
my $workdir = tempdir(CLEANUP => 1);
my $cwd = getcwd();
chdir $workdir or die "chdir: $!";
command_ok(
	[
		'pg_upgrade', '--no-sync',
		'-b', $old->config_data('--bindir'), '-B', $new->config_data('--bindir'),
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-p', $old->port, '-P', $new->port,
		'-s', $new->host
	],
	"pg_upgrade from $old_major to $new_major");
chdir $cwd or die "chdir: $!";
$new->start;

is($new->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'simhash'}),
	'1.3', 'the extension comes over at its version');
for my $t ('d', 'o')
{
	is($new->safe_psql('postgres', $idx . sprintf($radius_sql, $t, $t)), $truth{"radius $t"},
		"after pg_upgrade: radius answers of $t through the index equal the old sequential scan's");
	is($new->safe_psql('postgres', $idx . sprintf($knn_sql, $t)), $truth{"knn $t"},
		"after pg_upgrade: nearest neighbours of $t through the index equal the old sequential scan's");
	like($new->safe_psql('postgres', "$idx EXPLAIN (COSTS OFF) " . sprintf($knn_sql, $t)),
		qr/Index Scan using ${t}_fp/, "after pg_upgrade: nearest neighbours of $t use the index");
}
for my $i ('d_fp', 'o_fp', 'd_body')
{
	my ($ret, $out, $err) = $new->psql('postgres',
		"SELECT count(*) FROM simhash_perm_check('$i', heapallindexed => true) WHERE table_no >= 0");
	is($ret, 0, "after pg_upgrade: simhash_perm_check($i, heapallindexed) passes")
	  or diag($err);
}
is($new->safe_psql('postgres', $idx . q{
	SELECT count(*) FROM d a, d b WHERE a.id % 5000 = 1 AND hamming_near(simhash(b.body), simhash(a.body), 3)}),
	$body_truth, 'after pg_upgrade: the expression index answers as before');
is($new->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE fp = simhash(body, shingles, weighting, cjk)) || ' of ' || count(*) FROM golden}),
	scalar(@golden) . ' of ' . scalar(@golden),
	'after pg_upgrade: the golden inputs fingerprint to the same bits');

# the update after the upgrade renames the type, and the index still answers
$new->safe_psql('postgres', 'ALTER EXTENSION simhash UPDATE');
is($new->safe_psql('postgres', q{SELECT extversion || ' ' || format_type(atttypid, atttypmod)
	FROM pg_extension, pg_attribute WHERE extname = 'simhash' AND attrelid = 'd'::regclass AND attname = 'fp'}),
	'1.6 simhash64', 'ALTER EXTENSION simhash UPDATE after pg_upgrade: 1.6, the column is simhash64');
is($new->safe_psql('postgres', $idx . sprintf($radius_sql, 'd', 'd')), $truth{'radius d'},
	'after the update: radius answers through the index are unchanged');
# (pseudo_fp's body names the type as simhash: a function written against
# 1.3 that names the type must be rewritten after the update, as the
# CHANGELOG says)
$new->safe_psql('postgres', q{INSERT INTO d SELECT 900000 + g, NULL,
	((hashint8(-g)::bigint << 32) | (hashint8(g - 1)::bigint & 4294967295))::simhash64
	FROM generate_series(1, 2000) g});
my ($ret, $out, $err) = $new->psql('postgres', "SELECT count(*) FROM simhash_perm_check('d_fp', true) WHERE table_no >= 0");
is($ret, 0, 'inserts after the upgrade: simhash_perm_check passes') or diag($err);

$new->stop;
done_testing();
