# The index under debug_discard_caches = 1: every catalog lookup that
# takes a lock also throws away every cache, the relcache entries of open
# indexes included, so an index call that kept a pointer into state the
# relcache had freed (rd_amcache) reads freed memory, which a build with
# assertions wipes.  This happened: a tenant's hash function, looked up in
# the middle of an insert or a scan, let an invalidation free the index's
# state under the call (src/index/perm.c, "The per-index state and its
# lifetime"); under concurrent inserts and VACUUM it crashed a backend in
# the sanitizer run.  Here every kind of index (64-bit, tenant, bit(n))
# answers radius and nearest-neighbour queries, takes inserts (the
# tenant constraint's check included), VACUUM and simhash_perm_check with
# the caches discarded, and every answer equals the one computed before,
# with the caches kept, by a sequential scan.
#
# debug_discard_caches exists only in builds with assertions
# (--enable-cassert, as test/run_all.sh's PostgreSQL 18); elsewhere the
# test skips.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;

my $node = PostgreSQL::Test::Cluster->new('discard_caches');
$node->init;
$node->start;
my ($ret, $out, $err) = $node->psql('postgres', 'SET debug_discard_caches = 1');
if ($ret != 0)
{
	$node->stop;
	plan skip_all => 'debug_discard_caches needs a build with assertions';
}

$node->safe_psql('postgres', q{CREATE EXTENSION simhash;} . $PSEUDO_FP_SQL . q{
	CREATE TABLE fp64 (id int, fp simhash64);
	INSERT INTO fp64 SELECT g, pseudo_fp(g) FROM generate_series(1, 2000) g;
	INSERT INTO fp64 SELECT 5000 + g, (pseudo_fp(g)::bigint # (1::bigint << (g % 64)))::simhash64
	  FROM generate_series(1, 40) g;
	CREATE INDEX fp64_perm ON fp64 USING simhash_perm (fp) WITH (max_distance = 3);

	CREATE TABLE sites (id int, site int, fp simhash64,
	  CONSTRAINT sites_nc EXCLUDE USING simhash_perm (site WITH =, fp WITH ~=)
	  WITH (max_distance = 3));
	INSERT INTO sites SELECT g, g % 4, pseudo_fp(g) FROM generate_series(1, 2000) g;

	CREATE TABLE codes (id int, code bit(128));
	INSERT INTO codes SELECT g, pseudo_fp(g)::bigint::bit(64) || pseudo_fp(-g)::bigint::bit(64)
	  FROM generate_series(1, 1000) g;
	CREATE INDEX codes_perm ON codes USING simhash_perm (code) WITH (radius = 6);
	ANALYZE fp64, sites, codes;
});

# The queries, each an ordered list of ids: through the index (sequential
# scans off), and their answers with the caches kept, by sequential scans
my %queries = (
	'64-bit radius 3' => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM fp64
	  WHERE hamming_near(fp, (SELECT fp FROM fp64 WHERE id = 7), 3)},
	'64-bit LIMIT 5' => q{SELECT string_agg(d::text, ',') FROM (SELECT fp <-> (SELECT fp FROM fp64 WHERE id = 7) AS d
	  FROM fp64 ORDER BY fp <-> (SELECT fp FROM fp64 WHERE id = 7) LIMIT 5) s},
	'tenant radius 3' => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM sites
	  WHERE site = 2 AND hamming_near(fp, (SELECT fp FROM sites WHERE id = 6), 3)},
	'tenant LIMIT 5' => q{SELECT string_agg(d::text, ',') FROM (SELECT fp <-> (SELECT fp FROM sites WHERE id = 6) AS d
	  FROM sites WHERE site = 2 ORDER BY fp <-> (SELECT fp FROM sites WHERE id = 6) LIMIT 5) s},
	'bit(128) radius 40' => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM codes
	  WHERE code <@ hamming_within((SELECT code FROM codes WHERE id = 9), 40)},
	'bit(128) LIMIT 5' => q{SELECT string_agg(d::text, ',') FROM (SELECT code <-> (SELECT code FROM codes WHERE id = 9) AS d
	  FROM codes ORDER BY code <-> (SELECT code FROM codes WHERE id = 9) LIMIT 5) s},
);
my %expected;
for my $name (sort keys %queries)
{
	$expected{$name} = $node->safe_psql('postgres',
		"SET enable_indexscan = off; SET enable_bitmapscan = off; $queries{$name}");
	isnt($expected{$name}, '', "$name: the sequential scan finds rows");
}

my $discard = 'SET debug_discard_caches = 1; SET enable_seqscan = off; ';
for my $name (sort keys %queries)
{
	is($node->safe_psql('postgres', $discard . $queries{$name}), $expected{$name},
		"$name: through the index with the caches discarded");
}

# inserts: plain, the tenant constraint's check (a copy in its own site is
# skipped or refused, one in another site is stored), bit(n)
is($node->safe_psql('postgres', $discard . q{
	INSERT INTO fp64 SELECT 9000 + g, pseudo_fp(9000 + g) FROM generate_series(1, 20) g;
	INSERT INTO codes SELECT 9000 + g, pseudo_fp(9000 + g)::bigint::bit(64) || pseudo_fp(-g)::bigint::bit(64)
	  FROM generate_series(1, 20) g;
	WITH ins AS (
	  INSERT INTO sites SELECT 9000 + id, site, (fp::bigint # 1)::simhash64 FROM sites WHERE id <= 10
	  ON CONFLICT DO NOTHING RETURNING 1)
	SELECT count(*) FROM ins}), '0', 'near-copies in their own site are skipped');
is($node->safe_psql('postgres', $discard . q{
	WITH ins AS (
	  INSERT INTO sites SELECT 9000 + id, site + 10, (fp::bigint # 1)::simhash64 FROM sites WHERE id <= 10
	  ON CONFLICT DO NOTHING RETURNING 1)
	SELECT count(*) FROM ins}), '10', 'near-copies in other sites are stored');
($ret, $out, $err) = $node->psql('postgres', $discard . q{
	INSERT INTO sites SELECT 0, site, (fp::bigint # 3)::simhash64 FROM sites WHERE id = 5});
like($err, qr/conflicting key value violates exclusion constraint "sites_nc"/,
	'a near-copy without ON CONFLICT is refused');

# the new rows are found, VACUUM runs, every index checks out
is($node->safe_psql('postgres', $discard . q{
	SELECT count(*) FROM generate_series(9001, 9020) g
	 WHERE EXISTS (SELECT 1 FROM fp64 WHERE hamming_near(fp, pseudo_fp(g), 0))}), '20',
	'the inserted 64-bit rows are found');
is($node->safe_psql('postgres', $discard . q{
	SELECT count(*) FROM generate_series(1, 20) g
	 WHERE EXISTS (SELECT 1 FROM codes WHERE code <@ hamming_within(
	   pseudo_fp(9000 + g)::bigint::bit(64) || pseudo_fp(-g)::bigint::bit(64), 0))}), '20',
	'the inserted bit(128) rows are found');
$node->safe_psql('postgres', q{DELETE FROM fp64 WHERE id % 7 = 0; DELETE FROM sites WHERE id % 7 = 0;});
$node->safe_psql('postgres', 'SET debug_discard_caches = 1; VACUUM fp64, sites, codes');
for my $index (qw(fp64_perm sites_nc codes_perm))
{
	($ret, $out, $err) = $node->psql('postgres', $discard .
		"SELECT count(*) FROM simhash_perm_check('$index', heapallindexed => true) WHERE table_no >= 0");
	is($ret, 0, "$index: simhash_perm_check passes after VACUUM") or diag($err);
}

$node->stop;
done_testing();
