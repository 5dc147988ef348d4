# Fingerprints survive pg_dump and restore into another cluster, in text and
# custom formats, and the restored values and btree index answer the same.
# simhash_perm indexes come back too, with options altered after their build
# (ALTER INDEX ... SET), and answer as a sequential scan does; and a
# near-duplicate exclusion constraint, with its radius, enforced after; and
# after every path that retunes or rebuilds a constraint's index (ALTER
# INDEX ... SET, REINDEX, VACUUM FULL, CLUSTER), the rows keep the radius the
# definition prints, so a dump of the table restores.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $src = PostgreSQL::Test::Cluster->new('source');
$src->init;
$src->start;
$src->safe_psql('postgres', q{
	CREATE EXTENSION simhash;
	CREATE TABLE docs (id int PRIMARY KEY, body text, fp simhash64, fp_big bigint);
	INSERT INTO docs
	SELECT g, 'document ' || g || ' about ' || (g % 17) || ' 文档' || (g % 5),
	       NULL, NULL
	  FROM generate_series(1, 2000) g;
	UPDATE docs SET fp = simhash(body), fp_big = simhash(body)::bigint;
	INSERT INTO docs VALUES (0, NULL, NULL, NULL);
	CREATE INDEX docs_fp ON docs (fp);
	CREATE INDEX docs_perm ON docs USING simhash_perm (fp) WITH (max_distance = 3);
	ALTER INDEX docs_perm SET (blocks = 5);
	CREATE INDEX docs_perm_big ON docs USING simhash_perm (fp_big) WITH (max_distance = 2, blocks = 4);
	ALTER INDEX docs_perm_big RESET (blocks);
	-- a table under a near-duplicate constraint of radius 2
	CREATE TABLE kept (id int, fp simhash64,
	  CONSTRAINT kept_no_near_copies EXCLUDE USING simhash_perm (fp WITH ~=) WITH (max_distance = 2));
	INSERT INTO kept SELECT id, fp FROM docs ORDER BY id ON CONFLICT DO NOTHING;
});
my $kept_sql = q{SELECT count(*), md5(string_agg(id || ':' || coalesce(fp::text, '-'), ',' ORDER BY id)),
	pg_get_constraintdef((SELECT oid FROM pg_constraint WHERE conname = 'kept_no_near_copies'))
	FROM kept};
my $kept = $src->safe_psql('postgres', $kept_sql);
my $summary_sql = q{
	SELECT count(*), count(fp), md5(string_agg(id || ':' || coalesce(fp::text, '-'), ',' ORDER BY id)),
	       sum(hamming_distance(fp, '0000000000000000')),
	       bool_and(fp::bigint = fp_big)
	  FROM docs};
my $expected = $src->safe_psql('postgres', $summary_sql);

my $dst = PostgreSQL::Test::Cluster->new('destination');
$dst->init;
$dst->start;

my $tmp = PostgreSQL::Test::Utils::tempdir;
for my $format ('p', 'c')
{
	my $db = "restored_$format";
	my $file = "$tmp/dump.$format";
	command_ok([ 'pg_dump', '-F', $format, '-f', $file, '-d', $src->connstr('postgres') ],
		"pg_dump -F $format");
	$dst->safe_psql('postgres', "CREATE DATABASE $db");
	if ($format eq 'p')
	{
		command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $file, '-d', $dst->connstr($db) ],
			'restore plain dump');
	}
	else
	{
		command_ok([ 'pg_restore', '-d', $dst->connstr($db), $file ], 'pg_restore custom dump');
	}
	is($dst->safe_psql($db, $summary_sql), $expected, "format $format: same fingerprints after restore");
	# the values still are what the function computes
	is($dst->safe_psql($db, 'SELECT count(*) FROM docs WHERE fp IS DISTINCT FROM simhash(body)'),
		'0', "format $format: restored fingerprints equal recomputed ones");
	# the restored btree index is usable and agrees with a sequential scan
	my $probe = $dst->safe_psql($db, 'SELECT fp FROM docs WHERE id = 1234');
	is( $dst->safe_psql($db,
			"SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM docs WHERE fp = '$probe'"),
		$dst->safe_psql($db, "SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM docs WHERE fp = '$probe'"),
		"format $format: btree index agrees with a sequential scan");
	# the simhash_perm indexes are restored with their altered options,
	# built with them, and answer as a sequential scan does
	is( $dst->safe_psql($db,
			"SELECT string_agg(relname || ' ' || array_to_string(reloptions, ','), '; ' ORDER BY relname)
			   FROM pg_class WHERE relname LIKE 'docs_perm%'"),
		'docs_perm max_distance=3,blocks=5; docs_perm_big max_distance=2',
		"format $format: simhash_perm indexes restored with their altered options");
	is( $dst->safe_psql($db,
			"SELECT count(*), min(prefix_bits) FROM simhash_perm_info('docs_perm')"),
		'10|25', "format $format: docs_perm rebuilt with blocks = 5: 10 tables");
	my $near_sql = "SELECT string_agg(id::text, ',' ORDER BY id) FROM docs
		 WHERE hamming_near(fp, '$probe', 6) AND hamming_near(fp_big, '$probe'::simhash64::bigint, 6)";
	is( $dst->safe_psql($db, "SET enable_seqscan = off; $near_sql"),
		$dst->safe_psql($db, "SET enable_indexscan = off; SET enable_bitmapscan = off; $near_sql"),
		"format $format: restored simhash_perm indexes agree with a sequential scan");
	# the near-duplicate constraint comes back with its radius, and enforces it
	is($dst->safe_psql($db, $kept_sql), $kept,
		"format $format: the constrained table and its constraint's definition restored");
	my ($ret, $out, $err) = $dst->psql($db,
		q{INSERT INTO kept SELECT -1, (fp::bigint # 3)::simhash64 FROM kept WHERE fp IS NOT NULL LIMIT 1});
	like($err, qr/conflicting key value violates exclusion constraint "kept_no_near_copies"/,
		"format $format: a row 2 bits from a stored one is refused after restore");
	is($dst->safe_psql($db,
		q{INSERT INTO kept SELECT -2, (~fp::bigint)::simhash64 FROM kept WHERE fp IS NOT NULL LIMIT 1
		  ON CONFLICT DO NOTHING RETURNING id}),
		'-2', "format $format: a row far from every stored one is stored");
}

# Each path that retunes or rebuilds a constraint's index, then a dump of
# the table restored into a database of its own: the restore adds the
# constraint again, with the printed radius, and so checks the rows.
$src->safe_psql('postgres', q{
	CREATE TABLE tuned (id int, fp simhash64,
	  CONSTRAINT tuned_nd EXCLUDE USING simhash_perm (fp WITH ~=) WITH (max_distance = 3));
	INSERT INTO tuned VALUES (1, '0000000000000000'), (2, '000000000000001f'), (3, 'ffffffff00000000');
	CREATE INDEX tuned_id ON tuned (id);
});
my @paths = (
	# [ name, statements (each its own command), refused?, and for the
	#   state only a catalog write reaches: not dumped ]
	[ 'ALTER to a radius two rows break', [ 'ALTER INDEX tuned_nd SET (max_distance = 5)' ], 1 ],
	[ 'RESET to the default radius', [ 'ALTER INDEX tuned_nd RESET (max_distance)' ], 0 ],
	[ 'ALTER to a radius the rows keep, REINDEX',
		[ 'ALTER INDEX tuned_nd SET (max_distance = 4)', 'REINDEX INDEX tuned_nd' ], 0 ],
	[ 'VACUUM FULL', [ 'VACUUM FULL tuned' ], 0 ],
	[ 'CLUSTER', [ 'CLUSTER tuned USING tuned_id' ], 0 ],
	[ 'REINDEX TABLE', [ 'REINDEX TABLE tuned' ], 0 ],
	# a radius raised without a check of the rows, as simhash 1.5 allowed
	# (written to the catalog here): the rebuild refuses it, and setting
	# the radius back makes the table dumpable again
	[ 'VACUUM FULL after an unchecked radius',
		[ q{UPDATE pg_class SET reloptions = '{max_distance=5}' WHERE relname = 'tuned_nd'},
		  'VACUUM FULL tuned' ], 1, 'catalog' ],
	[ 'CLUSTER after an unchecked radius', [ 'CLUSTER tuned USING tuned_id' ], 1, 'catalog' ],
	[ 'the radius set back', [ 'ALTER INDEX tuned_nd SET (max_distance = 4)', 'VACUUM FULL tuned' ], 0 ],
	# radius, the name of the design radius on every index
	[ 'the radius under its one name',
		[ 'ALTER INDEX tuned_nd RESET (max_distance)', 'ALTER INDEX tuned_nd SET (radius = 4)',
		  'REINDEX INDEX tuned_nd' ], 0 ],
	[ 'a raised radius refused under its one name', [ 'ALTER INDEX tuned_nd SET (radius = 5)' ], 1, 'catalog' ]);
my $n = 0;
for my $path (@paths)
{
	my ($name, $stmts, $refused, $catalog) = @$path;
	my ($ret, $err) = (0, '');
	for my $sql (@$stmts)
	{
		my ($r, $o, $e) = $src->psql('postgres', $sql);
		($ret, $err) = ($r, $e) if $r != 0;
	}
	if ($refused)
	{
		like($err, qr/(cannot set radius|could not rebuild index "tuned_nd").*\n.*lie 5 bits apart/,
			"$name: refused, naming the pair");
	}
	else
	{
		is($ret, 0, "$name: done") or diag($err);
	}
	next if $catalog;
	my $db = 'tuned_' . $n++;
	my $file = "$tmp/$db.sql";
	command_ok([ 'pg_dump', '-t', 'tuned', '-f', $file, '-d', $src->connstr('postgres') ],
		"$name: pg_dump of the table");
	$dst->safe_psql('postgres', "CREATE DATABASE $db");
	$dst->safe_psql($db, 'CREATE EXTENSION simhash');
	command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $file, '-d', $dst->connstr($db) ],
		"$name: the dump restores, constraint included");
	my $def = q{SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'tuned_nd'};
	is($dst->safe_psql($db, $def), $src->safe_psql('postgres', $def),
		"$name: the restored constraint prints the source's radius");
}

$src->stop;
$dst->stop;
done_testing();
