# simhash on a Citus cluster: a coordinator and two workers on private
# Unix sockets, Citus built from its release source by tools/build_citus.sh
# (test/run_all.sh runs it before the TAP tests; it caches the build).
# Skipped, saying so, when Citus is not installed in this PostgreSQL (no
# source at hand, or a PostgreSQL Citus 13 does not build for, such as 18).
#
# On a table hash-distributed by its tenant column into 8 shards, with a
# simhash_perm index on (site_id, fp) in every shard, against a plain
# local table holding the same rows:
#  - radius queries, nearest neighbours (merged across shards), and the
#    batch join of new rows to the table give the local table's answers;
#  - simhash_pairs and simhash_clusters find every pair, those whose rows
#    sit on different shards included, searched on the workers (the calls
#    of simhash_pairs_part in the workers' function statistics, and the
#    progress NOTICE), and on the coordinator with the setting off, inside
#    a transaction block, for a tenant column that is not the
#    distribution column, and under row-level security; the tenant form
#    with the distribution column runs the workers' own simhash_pairs on
#    each shard; keys of type text
#    and a column collation order each pair as on the local table;
#  - the README's modify recipes: the direct DELETE ... USING
#    simhash_clusters(...) fails as Citus refuses it, and the forms the
#    README gives instead (a MATERIALIZED CTE, an IN subquery; a
#    temporary table for reference tables) delete what the local table's
#    recipe deletes;
#  - the tenant constraint EXCLUDE USING simhash_perm (site_id WITH =, fp
#    WITH ~=) on the distributed table holds under concurrent inserts of
#    near-copies (pgbench, 4 clients, sites on every shard): no two rows of
#    one site within the radius, while copies in other sites stay;
#  - a reference table keeps the one-column constraint on every node.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use Time::HiRes;
use lib $FindBin::RealBin;
use SimhashTAP;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
if (!-f "$pkglibdir/citus.so")
{
	plan skip_all =>
	  "Citus is not installed in this PostgreSQL ($pkglibdir/citus.so): tools/build_citus.sh builds it where it can";
}

my $coord = PostgreSQL::Test::Cluster->new('citus_coordinator');
my @workers = map { PostgreSQL::Test::Cluster->new("citus_worker$_") } (1, 2);
for my $node ($coord, @workers)
{
	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'citus'\nmax_connections = 60\ntrack_functions = 'all'\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus;');
}
$coord->safe_psql('postgres',
	    "SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ");"
	  . join('', map { "SELECT citus_add_node('" . $_->host . "', " . $_->port . ");" } @workers));
# CREATE EXTENSION on the coordinator creates it on the workers
$coord->safe_psql('postgres', 'CREATE EXTENSION simhash;' . $PSEUDO_FP_SQL);

# 40,000 rows in 64 sites of skewed sizes; 300 clusters of near-copies,
# each within one site, and 200 copies of one fingerprint over all sites
my $rows = q{
	SELECT g::bigint AS id, (g * 7919 % 64) % (1 + g % 64) AS site_id, pseudo_fp(g)::bigint AS fp
	  FROM generate_series(1, 40000) g
	UNION ALL
	SELECT (100000 + c * 10 + j)::bigint, (c * 7919 % 64) % (1 + c % 64),
		   pseudo_fp(c)::bigint # (1::bigint << ((c * 7 + j) % 64)) # (j::bigint << 20)
	  FROM generate_series(1, 300) c, generate_series(1, 3) j
	UNION ALL
	SELECT (200000 + g)::bigint, g % 64, 4242424242 FROM generate_series(1, 200) g
};
$coord->safe_psql('postgres', qq{
	CREATE TABLE docs (id bigint, site_id int, fp bigint);
	SELECT create_distributed_table('docs', 'site_id', shard_count => 8);
	INSERT INTO docs $rows;
	CREATE INDEX docs_site_fp ON docs USING simhash_perm (site_id, fp);
	CREATE INDEX docs_fp ON docs USING simhash_perm (fp);
	CREATE TABLE local_docs AS $rows;
	SET citus.enable_ddl_propagation = off;
	CREATE INDEX ON local_docs USING simhash_perm (site_id, fp);
	CREATE INDEX ON local_docs USING simhash_perm (fp);
	ANALYZE local_docs;
});
is($coord->safe_psql('postgres',
	"SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'docs'::regclass"),
	'2', 'the table is spread over both workers');

# the same query on the distributed and the local table
sub same_answer
{
	my ($sql, $name) = @_;
	(my $local = $sql) =~ s/\b(t?docs)\b/local_$1/g;
	my $d = $coord->safe_psql('postgres', $sql);
	my $l = $coord->safe_psql('postgres', $local);
	ok($d ne '' && $d eq $l, $name) or diag("distributed:\n$d\nlocal:\n$l");
}

same_answer(q{SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d, generate_series(1, 300, 7) c
	 WHERE hamming_near(d.fp, pseudo_fp(c)::bigint, 3)},
	'radius queries equal one table\'s');
same_answer(q{SELECT string_agg(id::text, ',' ORDER BY id) FROM docs d, generate_series(1, 300, 7) c
	 WHERE d.site_id = (c * 7919 % 64) % (1 + c % 64) AND hamming_near(d.fp, pseudo_fp(c)::bigint, 3)},
	'radius queries within a tenant equal one table\'s');
# (one query per center: Citus does not push such a LATERAL down)
same_answer(join('', map { "SELECT fp <-> pseudo_fp($_ * 13) FROM docs ORDER BY fp <-> pseudo_fp($_ * 13) LIMIT 5;\n" } (1 .. 40)),
	'nearest neighbours merged across shards equal one table\'s');
same_answer(join('', map { "SELECT fp <-> pseudo_fp($_) FROM docs WHERE site_id = " . ($_ % 64)
	  . " ORDER BY fp <-> pseudo_fp($_) LIMIT 5;\n" } (1 .. 40)),
	'nearest neighbours within a tenant equal one table\'s');
same_answer(q{WITH batch AS (SELECT g AS bid, (pseudo_fp(g)::bigint # 5) AS fp FROM generate_series(1, 400, 3) g)
	SELECT string_agg(bid || '-' || d.id, ',' ORDER BY bid, d.id) FROM batch b JOIN docs d ON hamming_near(d.fp, b.fp, 3)},
	'the batch join equals one table\'s');

# pairs and clusters over the whole distributed table
my $pairs = q{SELECT count(*) || ' ' || coalesce(sum(a + b), 0) FROM simhash_pairs('docs', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int)};
same_answer($pairs, 'simhash_pairs finds the pairs one table has');
same_answer(q{SELECT count(*) || ' ' || sum(id - cluster) FROM simhash_clusters('docs', 'id', 'fp', 3) AS c(id bigint, cluster bigint)},
	'simhash_clusters finds the clusters one table has');
same_answer(q{SELECT count(*) || ' ' || sum(id - cluster) FROM simhash_clusters('docs', 'id', 'fp', 3, singletons => true) AS c(id bigint, cluster bigint)},
	'simhash_clusters with singletons gives every row one table gives');

# the calls of a function on each worker, from its statistics (flushed when
# the connections that made them end)
sub worker_calls
{
	my ($func) = @_;
	return join(' ', map {
		$_->safe_psql('postgres', qq{SELECT pg_stat_force_next_flush();
			SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = '$func'})
	} @workers);
}
sub worker_calls_grew
{
	my ($func, $before, $name) = @_;
	my @b = split / /, $before;
	my @now;
	for (1 .. 100)
	{
		@now = split / /, worker_calls($func);
		last if $now[0] > $b[0] && $now[1] > $b[1];
		Time::HiRes::sleep(0.1);
	}
	ok($now[0] > $b[0] && $now[1] > $b[1], $name) or diag("calls of $func before: $before, after: @now");
}

# the search ran on the workers: each ran a part, and the coordinator says so
my $parts_before = worker_calls('simhash_pairs_part');
my ($ret, $out, $err) = $coord->psql('postgres',
	q{SELECT count(*) FROM simhash_pairs('docs', 'id', 'fp', 3, progress => true) AS p(a bigint, b bigint, distance int)});
like($err, qr/searching public\.docs on Citus's workers: 2 parts at once/, 'the coordinator searches on the workers, in two parts');
like($err, qr/received \d+ pairs from Citus's workers/, 'and receives only pairs');
worker_calls_grew('simhash_pairs_part', $parts_before, 'each worker ran a part of the search');

# the coordinator's own search gives the same answers: with the setting
# off, and inside a transaction block (the parts could not see its writes)
(my $pairs_off = $pairs) =~ s/^/SET simhash.pairs_on_workers = off; /;
is($coord->safe_psql('postgres', $pairs_off), $coord->safe_psql('postgres', $pairs),
	'the coordinator\'s own search finds the pairs the workers find');
$parts_before = worker_calls('simhash_pairs_part');
is($coord->safe_psql('postgres', "BEGIN; $pairs; COMMIT;"),
	$coord->safe_psql('postgres', $pairs =~ s/\bdocs\b/local_docs/r),
	'inside a transaction block the coordinator searches, and finds the same pairs');
sleep 1;
is(worker_calls('simhash_pairs_part'), $parts_before, 'and no part ran on the workers');

# pairs within tenants: the distribution column, each shard on its worker
my $tenant_before = worker_calls('simhash_pairs');
same_answer(q{SELECT count(*) || ' ' || coalesce(sum(a + b), 0) FROM simhash_pairs('docs', 'id', 'fp', 3, tenant => 'site_id') AS p(a bigint, b bigint, distance int)},
	'pairs within tenants (the distribution column) equal one table\'s');
worker_calls_grew('simhash_pairs', $tenant_before, 'each worker searched its shards\' tenants');
same_answer(q{SELECT count(*) || ' ' || sum(id - cluster) FROM simhash_clusters('docs', 'id', 'fp', 3, tenant => 'site_id', singletons => true) AS c(id bigint, cluster bigint)},
	'clusters within tenants equal one table\'s');
# a tenant column that is not the distribution column: the coordinator's search
$coord->safe_psql('postgres', q{ALTER TABLE docs ADD COLUMN lang int; UPDATE docs SET lang = id % 3;
	ALTER TABLE local_docs ADD COLUMN lang int; UPDATE local_docs SET lang = id % 3;});
same_answer(q{SELECT count(*) || ' ' || coalesce(sum(a + b), 0) FROM simhash_pairs('docs', 'id', 'fp', 3, tenant => 'lang') AS p(a bigint, b bigint, distance int)},
	'pairs within another tenant column equal one table\'s');

# keys of type text, under a collation (ICU's root) that orders them otherwise
# than C ("doc 10" before "Doc 11")
$coord->safe_psql('postgres', q{
	CREATE TABLE tdocs (id text COLLATE "und-x-icu", site_id int, fp bigint);
	SELECT create_distributed_table('tdocs', 'site_id', shard_count => 4);
	INSERT INTO tdocs SELECT CASE WHEN id % 2 = 0 THEN 'Doc ' ELSE 'doc ' END || id, site_id, fp FROM local_docs;
	SET citus.enable_ddl_propagation = off;
	CREATE TABLE local_tdocs AS SELECT * FROM tdocs;
});
same_answer(q{SELECT md5(string_agg(a || ' ' || b || ' ' || distance, ',' ORDER BY a, b)) FROM simhash_pairs('tdocs', 'id', 'fp', 3) AS p(a text, b text, distance int)},
	'pairs of text keys equal one table\'s, each pair ordered by the column\'s collation');
same_answer(q{SELECT md5(string_agg(id || ' ' || cluster, ',' ORDER BY id)) FROM simhash_clusters('tdocs', 'id', 'fp', 3) AS c(id text, cluster text)},
	'clusters of text keys equal one table\'s');

# row-level security: a role whose policy shows it the odd ids gets the
# pairs among those, searched by the coordinator (the shards carry the
# policies only where Citus propagated them), and no part runs
$coord->safe_psql('postgres', q{
	CREATE ROLE reader LOGIN;
	GRANT SELECT ON docs TO reader;
	ALTER TABLE docs ENABLE ROW LEVEL SECURITY;
	CREATE POLICY odd_ids ON docs FOR SELECT TO reader USING (id % 2 = 1);
});
$parts_before = worker_calls('simhash_pairs_part');
is($coord->safe_psql('postgres', q{SET ROLE reader; SELECT count(*) || ' ' || coalesce(sum(a + b), 0)
	FROM simhash_pairs('docs', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int)}),
	$coord->safe_psql('postgres', q{SELECT count(*) || ' ' || coalesce(sum(a + b), 0)
	FROM simhash_pairs_query('SELECT id, fp FROM local_docs WHERE id % 2 = 1', 3) AS p(a bigint, b bigint, distance int)}),
	'under row-level security the pairs are those among the rows the policy shows');
sleep 1;
is(worker_calls('simhash_pairs_part'), $parts_before, 'and the coordinator searched them');
$coord->safe_psql('postgres', q{ALTER TABLE docs DISABLE ROW LEVEL SECURITY});

my $cross = $coord->safe_psql('postgres', q{
	CREATE TEMP TABLE p AS SELECT * FROM simhash_pairs('docs', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int);
	CREATE TEMP TABLE s AS SELECT id, get_shard_id_for_distribution_column('docs', site_id) AS shard FROM docs;
	SELECT count(*) FROM p JOIN s x ON x.id = p.a JOIN s y ON y.id = p.b WHERE x.shard <> y.shard});
cmp_ok($cross, '>', 1000, "pairs whose rows sit on different shards are found ($cross)");

# the README's modify recipes
($ret, $out, $err) = $coord->psql('postgres', q{
	DELETE FROM docs USING simhash_clusters('docs', 'id', 'fp', 3) AS c(id bigint, cluster bigint)
	 WHERE docs.id = c.id AND c.id <> c.cluster});
like($err, qr/cannot execute a distributed query from a query on a shard/,
	'the direct DELETE ... USING simhash_clusters() is refused by Citus');
$coord->safe_psql('postgres', q{
	CREATE TABLE docs2 AS SELECT * FROM docs;
	SELECT create_distributed_table('docs2', 'site_id', shard_count => 8);
	CREATE TABLE local_docs2 AS SELECT * FROM local_docs;
	DELETE FROM local_docs USING simhash_clusters('local_docs', 'id', 'fp', 3) AS c(id bigint, cluster bigint)
	 WHERE local_docs.id = c.id AND c.id <> c.cluster;
	WITH c AS MATERIALIZED (SELECT * FROM simhash_clusters('docs', 'id', 'fp', 3) AS c(id bigint, cluster bigint))
	DELETE FROM docs USING c WHERE docs.id = c.id AND c.id <> c.cluster;
	DELETE FROM docs2 WHERE id IN (SELECT c.id FROM simhash_clusters('docs2', 'id', 'fp', 3) AS c(id bigint, cluster bigint)
									WHERE c.id <> c.cluster);
});
same_answer(q{SELECT count(*) || ' ' || sum(id) FROM docs},
	'DELETE with the clusters in a MATERIALIZED CTE keeps what the local recipe keeps');
is($coord->safe_psql('postgres', q{SELECT count(*) || ' ' || sum(id) FROM docs2}),
	$coord->safe_psql('postgres', q{SELECT count(*) || ' ' || sum(id) FROM local_docs}),
	'DELETE ... WHERE id IN (SELECT ... FROM simhash_clusters(...)) keeps the same rows');
is($coord->safe_psql('postgres', $pairs), '0 0', 'no near-duplicate pairs are left');

# a reference table: the one-column constraint on every node, and the
# cleanup through a temporary table
$coord->safe_psql('postgres', q{
	CREATE TABLE ref (id bigint, fp bigint);
	SELECT create_reference_table('ref');
	INSERT INTO ref SELECT id, fp FROM local_docs2 WHERE id % 4 = 0 OR id > 100000;
	CREATE TEMP TABLE dups AS
	  SELECT c.id FROM simhash_clusters('ref', 'id', 'fp', 3) AS c(id bigint, cluster bigint) WHERE c.id <> c.cluster;
	DELETE FROM ref WHERE id IN (SELECT id FROM dups);
	ALTER TABLE ref ADD CONSTRAINT ref_no_near_copies EXCLUDE USING simhash_perm (fp WITH ~=) WITH (max_distance = 3);
});
($ret, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO ref SELECT 999999, fp # 1 FROM ref ORDER BY id LIMIT 1});
like($err, qr/violates exclusion constraint/, 'the reference table refuses a near-copy');
is($coord->safe_psql('postgres',
	q{INSERT INTO ref SELECT 999998, fp # 1 FROM ref ORDER BY id LIMIT 1 ON CONFLICT DO NOTHING RETURNING id}),
	'', 'and skips it with ON CONFLICT DO NOTHING');
for my $w (@workers)
{
	cmp_ok($w->safe_psql('postgres',
		q{SELECT count(*) FROM pg_constraint WHERE conname LIKE 'ref_no_near_copies_%' AND contype = 'x'}),
		'>=', 1, 'the reference table\'s shard has the constraint on worker ' . $w->port);
}

# the tenant constraint on the distributed table, under concurrent inserts
# of near-copies: 32 sites (on every shard) of 40 base fingerprints each,
# 4 clients inserting copies 0-2 bits away with ON CONFLICT DO NOTHING
$coord->safe_psql('postgres', q{
	CREATE TABLE posts (id bigserial, site_id int, fp bigint);
	SELECT create_distributed_table('posts', 'site_id', shard_count => 8);
	ALTER TABLE posts ADD CONSTRAINT posts_no_near_copies
	  EXCLUDE USING simhash_perm (site_id WITH =, fp WITH ~=) WITH (max_distance = 3);
});
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $f, '>', "$dir/insert.sql") or die;
print $f "\\set s random(1, 32)\n\\set b random(1, 40)\n\\set x random(0, 63)\n\\set y random(0, 63)\n"
  . "INSERT INTO posts (site_id, fp) VALUES (:s, pseudo_fp(:b)::bigint # (1::bigint << :x) # (1::bigint << :y)) ON CONFLICT DO NOTHING;\n";
close $f;
$coord->command_ok(
	[ 'pgbench', '-n', '-c', '4', '-j', '4', '-t', '400', '-f', "$dir/insert.sql",
	  '-p', $coord->port, '-h', $coord->host, 'postgres' ],
	'4 clients insert near-copies concurrently into sites on every shard');
my $stats = $coord->safe_psql('postgres', q{
	SELECT count(*) || ' ' || count(DISTINCT site_id) FROM posts});
my ($kept, $sites) = split / /, $stats;
cmp_ok($kept, '<', 1600, "near-copies were refused: $kept of 1600 rows kept");
cmp_ok($sites, '==', 32, 'every site received rows');
is($coord->safe_psql('postgres', q{
	SELECT count(*) FROM posts a JOIN posts b ON a.site_id = b.site_id AND a.id < b.id
	 WHERE hamming_near(a.fp, b.fp, 3)}),
	'0', 'no two rows of one site lie within the radius');
cmp_ok($coord->safe_psql('postgres', q{
	CREATE TEMP TABLE pp AS SELECT * FROM posts;
	SELECT count(*) FROM pp a JOIN pp b ON a.site_id < b.site_id AND hamming_near(a.fp, b.fp, 3)}),
	'>', 0, 'near-copies in different sites were all kept');

$coord->stop;
$_->stop for @workers;
done_testing();
