# A table spread over two shard servers with postgres_fdw, queried from a
# coordinator as one: a partitioned table whose partitions are foreign
# tables, each shard holding its rows and its own simhash_perm index.
#
# With OPTIONS (extensions 'simhash') on the foreign servers, hamming_near
# and <-> are shipped to the shards (EXPLAIN VERBOSE shows them in the
# Remote SQL, and each shard answers the shipped query through its index),
# and the answers equal those of one server holding every row: radius
# queries, a batch of new rows joined to the sharded table, and nearest
# neighbours (ORDER BY fp <-> q LIMIT n) merged across the shards.  Without
# the option the coordinator fetches every row and filters them itself,
# with the same answers.  simhash_pairs, simhash_clusters and
# simhash_pairs_query on the partitioned parent read every shard and find
# the same pairs, across shards too, as the single server.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;

my $coord = PostgreSQL::Test::Cluster->new('coordinator');
my @shards = map { PostgreSQL::Test::Cluster->new("shard$_") } (1, 2);
for my $node ($coord, @shards)
{
	$node->init;
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION simhash;' . $PSEUDO_FP_SQL);
}

# the rows: 40,000 random fingerprints, 300 clusters of near-copies whose
# members fall on both shards, and 500 copies of one fingerprint
my $rows = q{
	SELECT g AS id, pseudo_fp(g) AS fp FROM generate_series(1, 40000) g
	UNION ALL
	SELECT 100000 + c * 10 + j, (pseudo_fp(c)::bigint # (1::bigint << ((c * 7 + j) % 64)) # (j::bigint << 20))::simhash64
	  FROM generate_series(1, 300) c, generate_series(1, 4) j
	UNION ALL
	SELECT 200000 + g, '00000000000000ff'::simhash64 FROM generate_series(1, 500) g
};

# shard n holds the ids in its range; each indexes its own rows
my @ranges = ([ 0, 70000 ], [ 70000, 1000000 ]);
for my $i (0, 1)
{
	my ($lo, $hi) = @{ $ranges[$i] };
	$shards[$i]->safe_psql(
		'postgres', qq{
		CREATE TABLE docs (id bigint PRIMARY KEY, fp simhash64);
		INSERT INTO docs SELECT * FROM ($rows) r WHERE id >= $lo AND id < $hi;
		CREATE INDEX docs_fp ON docs USING simhash_perm (fp);
		ANALYZE docs;
	});
}

# the coordinator: one server holding every row (the reference), and the
# partitioned table over the shards, through servers with and without the
# extensions option
my $setup = qq{
	CREATE EXTENSION postgres_fdw;
	CREATE TABLE single (id bigint PRIMARY KEY, fp simhash64);
	INSERT INTO single SELECT * FROM ($rows) r;
	CREATE INDEX single_fp ON single USING simhash_perm (fp);
	ANALYZE single;
	CREATE TABLE batch (id bigint, fp simhash64);
	INSERT INTO batch SELECT 900000 + id, (fp::bigint # 5)::simhash64 FROM single WHERE id % 1500 = 7;
	INSERT INTO batch SELECT 910000 + g, pseudo_fp(-g) FROM generate_series(1, 20) g;
	ANALYZE batch;
	CREATE TABLE queries AS
	  SELECT fp FROM single WHERE id % 4000 = 11 OR id IN (100011, 100022, 200001)
	  UNION ALL SELECT pseudo_fp(-g) FROM generate_series(1, 10) g;
};
# docs: the extension shipped, remote estimates on (postgres_fdw then also
# builds parameterized remote scans, for the batch join); docs_knn: the
# extension shipped, local estimates (nearest neighbours, see below);
# docs_noext: the extension not declared
for my $flavour ('', '_knn', '_noext')
{
	$setup .= "CREATE TABLE docs$flavour (id bigint, fp simhash64) PARTITION BY RANGE (id);\n";
	for my $i (0, 1)
	{
		my $n = $i + 1;
		my ($lo, $hi) = @{ $ranges[$i] };
		my $ext =
		    $flavour eq ''     ? ", extensions 'simhash', use_remote_estimate 'true'"
		  : $flavour eq '_knn' ? ", extensions 'simhash'"
		  :                      '';
		my $host = $shards[$i]->host;
		my $port = $shards[$i]->port;
		$setup .= qq{
			CREATE SERVER shard$n$flavour FOREIGN DATA WRAPPER postgres_fdw
			  OPTIONS (host '$host', port '$port', dbname 'postgres'$ext);
			CREATE USER MAPPING FOR CURRENT_USER SERVER shard$n$flavour;
			CREATE FOREIGN TABLE docs${flavour}_$n PARTITION OF docs$flavour
			  FOR VALUES FROM ($lo) TO ($hi)
			  SERVER shard$n$flavour OPTIONS (table_name 'docs');
		};
	}
}
$coord->safe_psql('postgres', $setup . 'ANALYZE docs; ANALYZE docs_knn; ANALYZE docs_noext;');

# the same answer from the sharded table as from the single server
sub same_answer
{
	my ($name, $sql, $table) = @_;
	$table //= 'docs';
	my $sharded = $coord->safe_psql('postgres', $sql =~ s/\bTBL\b/$table/gr);
	my $single = $coord->safe_psql('postgres', $sql =~ s/\bTBL\b/single/gr);
	is($sharded, $single, $name);
	return $sharded;
}

sub plan_of
{
	my ($sql) = @_;
	return $coord->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $sql");
}

# 1. radius queries: shipped, answered by the shards' indexes, exact
my $radius = q{SELECT id FROM TBL WHERE hamming_near(fp, '%s', %d) ORDER BY id};
my $plan = plan_of(sprintf($radius =~ s/TBL/docs/r, pseudo(1), 3));
like($plan, qr/Remote SQL: .*hamming_near\(fp, '[0-9a-f]{16}'::public\.simhash64, 3\)/,
	'hamming_near is shipped to the shards');
is(scalar(() = $plan =~ /Foreign Scan on public\.docs_\d/g), 2, 'both shards are asked');

# each shard answers the shipped query through its simhash_perm index
my ($remote) = $plan =~ /Remote SQL: (.*)/;
for my $i (0, 1)
{
	like($shards[$i]->safe_psql('postgres', "EXPLAIN $remote"),
		qr/(Index|Bitmap Index) Scan .*docs_fp/,
		"shard " . ($i + 1) . " answers through its index");
}

my $checks = 0;
for my $q (split /\n/, $coord->safe_psql('postgres', 'SELECT fp FROM queries'))
{
	for my $k (0, 3, 6)
	{
		same_answer("radius $k around $q", sprintf($radius, $q, $k));
		$checks++;
	}
}
ok($checks > 40, "$checks radius queries compared");

# the whole set in one statement: counts of every (query, k)
same_answer('radius queries, all at once', q{
	SELECT k, count(*), sum(t.id) FROM queries q, (VALUES (0), (2), (4), (7)) ks(k), TBL t
	 WHERE hamming_near(t.fp, q.fp, ks.k) GROUP BY k ORDER BY k});

# 2. a batch of new rows against the sharded table
my $join = q{SELECT b.id, t.id, t.fp <-> b.fp FROM batch b JOIN TBL t ON hamming_near(t.fp, b.fp, 3) ORDER BY 1, 2};
like(plan_of($join =~ s/TBL/docs/r), qr/Remote SQL: .*hamming_near/, 'the batch join ships hamming_near');
my $pairs = same_answer('batch join against the sharded table', $join);
ok(scalar(split /\n/, $pairs) >= 20, 'the batch join finds near-duplicates');

# 3. nearest neighbours, merged across the shards.  PostgreSQL 15's
# postgres_fdw does not pass a LIMIT down to the partitions, so with remote
# estimates a shard prices the whole ordering, which a sort wins, and the
# coordinator sorts every row itself; with local estimates it asks each
# shard for its rows in order (which the shard, planning a cursor, reads
# through its index) and merges them.
my $knn = q{SELECT fp <-> '%s' FROM TBL ORDER BY fp <-> '%s' LIMIT %d};
$plan = plan_of(sprintf($knn =~ s/TBL/docs_knn/r, pseudo(5), pseudo(5), 10));
like($plan, qr/Merge Append/, 'nearest neighbours: a merge of the shards\' ordered answers');
like($plan, qr/Remote SQL: .*ORDER BY \(fp OPERATOR\(public\.<->\) '[0-9a-f]{16}'(::public\.simhash64)?\)/,
	'the ordering by <-> is shipped to the shards');

# the shards answer through their indexes: their index scan counters move
sub index_scans
{
	return join ',', map {
		$_->safe_psql('postgres',
			"SELECT pg_stat_force_next_flush(); SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'docs_fp'")
	} @shards;
}
my $before = index_scans();
$coord->safe_psql('postgres', sprintf($knn =~ s/TBL/docs_knn/r, pseudo(5), pseudo(5), 10));
# (the shards' sessions report their counters when they go idle)
my $moved = 0;
for (1 .. 100)
{
	my @b = split /,/, $before;
	my @a = split /,/, index_scans();
	if ($a[0] > $b[0] && $a[1] > $b[1])
	{
		$moved = 1;
		last;
	}
	sleep 0.1;
}
ok($moved, 'each shard orders through its index');
$checks = 0;
for my $q (split /\n/, $coord->safe_psql('postgres', 'SELECT fp FROM queries'))
{
	for my $n (1, 10, 50)
	{
		same_answer("nearest $n to $q", sprintf($knn, $q, $q, $n), 'docs_knn');
		$checks++;
	}
}
ok($checks > 40, "$checks nearest-neighbour queries compared");

# 4. without the extensions option: every row comes to the coordinator,
# which filters; the answers are the same
$plan = plan_of(sprintf($radius =~ s/TBL/docs_noext/r, pseudo(1), 3));
unlike($plan, qr/Remote SQL: .*hamming_near/, 'without the option, hamming_near stays on the coordinator');
like($plan, qr/Filter: hamming_near/, 'the coordinator filters the rows itself');
like($plan, qr/Remote SQL: SELECT id, fp FROM public\.docs( ORDER BY id ASC NULLS LAST)?$/m, 'and fetches every row');
my $q = pseudo(1);
is($coord->safe_psql('postgres', sprintf($radius =~ s/TBL/docs_noext/r, $q, 3)),
	$coord->safe_psql('postgres', sprintf($radius =~ s/TBL/single/r, $q, 3)),
	'without the option the answer is the same');

# 5. whole-table deduplication of the sharded table: simhash_pairs and
# simhash_clusters on the partitioned parent read every shard's rows
# through postgres_fdw and find the pairs across shards too, as one server
# holding every row does
my $pairs_sql = q{SELECT a, b, distance FROM simhash_pairs('TBL', 'id', 'fp', 3) AS p(a bigint, b bigint, distance int) ORDER BY 1, 2};
my $all_pairs = same_answer('simhash_pairs over the shards equals one server\'s', $pairs_sql);
my $across = grep { my ($x, $y) = split /\|/; ($x < 70000) != ($y < 70000) } split /\n/, $all_pairs;
cmp_ok($across, '>', 100, "pairs across the two shards are found ($across)");
same_answer('simhash_clusters over the shards equals one server\'s',
	q{SELECT id, cluster FROM simhash_clusters('TBL', 'id', 'fp', 3, singletons => true) AS c(id bigint, cluster bigint) ORDER BY 1});
like(plan_of(q{SELECT * FROM docs_noext}), qr/Remote SQL: SELECT id, fp FROM public\.docs/,
	'(the coordinator reads a shard by a remote SELECT)');
# a query over the shards, filtered first
same_answer('simhash_pairs_query over the shards equals one server\'s',
	q{SELECT a, b FROM simhash_pairs_query('SELECT id, fp FROM TBL WHERE id % 2 = 0', 3) AS p(a bigint, b bigint, distance int) ORDER BY 1, 2});

$_->stop for ($coord, @shards);
done_testing();

# the fingerprint of pseudo_fp(-g), in hex
sub pseudo
{
	my ($g) = @_;
	return $coord->safe_psql('postgres', "SELECT pseudo_fp(-$g)");
}
