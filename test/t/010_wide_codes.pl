# simhash_perm on bit(n) codes keeps the promises of the 64-bit index:
# WAL-logged (a streaming replica answers like the primary, and redo of
# every generic WAL record is checked against the primary's page images),
# correct under concurrent inserts, queries and VACUUM, crash-safe,
# dumped and restored with its options, and checked: simhash_perm_check
# (heapallindexed too) finds a damaged metapage or a damaged key, queries
# on a damaged metapage fail with index_corrupted, and REINDEX heals; and
# eight kinds of damage to leaves and internal pages, and five to pages of
# the code store, end every query in an ERROR or the right answer, without
# a crash.  The code store: written by the build and inserts, replayed on
# the standby (wal_consistency_checking compares every page), recovered
# after a crash, vacuumed, checked (a code flipped in it is a row missing),
# and far queries over a damaged store page fail as index_corrupted.
#
# Answers are compared as one summary per query set: for each query and
# radius (0, 8, 31) the ids within it, and the distances of the 5 nearest
# rows; through the index, and by a sequential scan.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

# code(g): a reproducible 256-bit code; near(g, d): code(g) with d bits
# flipped (a run of d, shifted by g: the strided substrings spread it)
my $FUNCS = q{
	CREATE FUNCTION code(g bigint) RETURNS bit(256) LANGUAGE sql IMMUTABLE AS
	  $$ SELECT ('x' || md5(g::text) || md5((-g)::text))::bit(256) $$;
	CREATE FUNCTION near(g bigint, d int) RETURNS bit(256) LANGUAGE sql IMMUTABLE AS
	  $$ SELECT code(g) # ((repeat('1', d) || repeat('0', 256 - d))::bit(256) >> (g % (257 - d))::int) $$;
};

# without data checksums (PostgreSQL 18's default), which would catch the
# damage below before the index's own checks could
my $primary = PostgreSQL::Test::Cluster->new('primary');
my ($major) = $primary->pg_version =~ /^(\d+)/;
$primary->init(allows_streaming => 1,
	extra => $major >= 18 ? ['--no-data-checksums'] : []);
$primary->append_conf('postgresql.conf', qq{
wal_consistency_checking = 'generic'
autovacuum = off
});
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION simhash');
$primary->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('standby')");
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "primary_slot_name = 'standby'\n");
$standby->start;

# w: built on 20,000 codes and 400 near-copies at 0..31 bits; e: an index
# created empty on bit(128), filled by inserts
$primary->safe_psql('postgres', $FUNCS . q{
	CREATE TABLE w (id bigint, code bit(256));
	INSERT INTO w SELECT g, code(g) FROM generate_series(1, 20000) g;
	INSERT INTO w SELECT 100000 + g, near(g, (g % 32)::int) FROM generate_series(1, 400) g;
	INSERT INTO w VALUES (-1, NULL);
	CREATE INDEX w_idx ON w USING simhash_perm (code) WITH (radius = 31);
	CREATE TABLE e (id bigint, code bit(128));
	CREATE INDEX e_idx ON e USING simhash_perm (code) WITH (radius = 6, substrings = 8);
	CREATE TABLE qs AS SELECT code FROM w WHERE id % 1999 = 0 OR id IN (3, 100003, 100031)
	  UNION ALL SELECT near(-g, 0) FROM generate_series(1, 3) g;
});

# one line per query: ids within 0, 8, 31, and the 5 nearest distances
sub answers
{
	my ($node, $table, $scan, $db) = @_;
	my $set = $scan eq 'index'
	  ? 'SET enable_seqscan = off; SET enable_sort = off;'
	  : 'SET enable_indexscan = off; SET enable_bitmapscan = off;';
	my $cast = $table eq 'e' ? '::bit(128)' : '';
	return $node->safe_psql($db // 'postgres', qq{$set
	SELECT string_agg(r, E'\\n' ORDER BY r) FROM (
	  SELECT (SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM $table WHERE hamming_near(code, q.c, k))
	         || ' k=' || k AS r
	    FROM (SELECT code$cast AS c FROM qs) q, unnest('{0,8,31}'::int[]) k
	  UNION ALL
	  SELECT (SELECT string_agg(d::text, ',') FROM
	            (SELECT code <-> q.c AS d FROM $table ORDER BY code <-> q.c LIMIT 5) n) || ' knn'
	    FROM (SELECT code$cast AS c FROM qs) q) s});
}

sub compare
{
	my ($what) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	for my $t ('w', 'e')
	{
		my $truth = answers($primary, $t, 'seq');
		is(answers($primary, $t, 'index'), $truth, "$what: $t through the index equals a sequential scan");
		is(answers($standby, $t, 'index'), $truth, "$what: $t on the standby equals the primary");
	}
}

compare('after the build');

# inserts that split pages, deletes, VACUUM, inserts into freed space
$primary->safe_psql('postgres', q{
	INSERT INTO w SELECT g, code(g) FROM generate_series(20001, 35000) g;
	INSERT INTO e SELECT g, code(g)::bit(128) FROM generate_series(1, 12000) g;
	INSERT INTO e SELECT 50000 + g, near(g, (g % 9)::int)::bit(128) FROM generate_series(1, 300) g;
	DELETE FROM w WHERE id % 5 = 0;
	DELETE FROM e WHERE id % 3 = 0;
	VACUUM w; VACUUM e;
	INSERT INTO w SELECT 200000 + g, near(g * 7, 3) FROM generate_series(1, 2000) g;
});
compare('after inserts, deletes and VACUUM');
is($primary->safe_psql('postgres', "SELECT count(*) FROM simhash_perm_check('w_idx', true) WHERE table_no >= 0"),
	'11', 'the index passes simhash_perm_check with heapallindexed');
is($primary->safe_psql('postgres', "SELECT string_agg(entries::text, ' ' ORDER BY table_no) FROM simhash_perm_check('w_idx', true) WHERE table_no <= 0"),
	$primary->safe_psql('postgres', "SELECT count(*) FILTER (WHERE code IS NULL) || ' ' || count(code) || ' ' || count(code) FROM w"),
	'its code store holds every row, NULL codes too');

# concurrent inserts, queries and VACUUM (pgbench: 3 clients mixing them)
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $f, '>', "$dir/insert.sql") or die;
print $f "\\set g random(300000, 900000)\nINSERT INTO w SELECT g, near(g, (g % 40)::int) FROM generate_series(:g, :g + 20) g;\n";
close $f;
open($f, '>', "$dir/query.sql") or die;
print $f "\\set g random(1, 20000)\nSELECT count(*) FROM w WHERE hamming_near(code, code(:g), 31);\nSELECT id FROM w ORDER BY code <-> near(:g, 5) LIMIT 3;\n";
close $f;
open($f, '>', "$dir/vacuum.sql") or die;
print $f "\\set g random(300000, 900000)\nDELETE FROM w WHERE id BETWEEN :g AND :g + 2000;\nVACUUM w;\n";
close $f;
$primary->command_ok(
	[ 'pgbench', '-n', '-c', '3', '-j', '3', '-T', '8',
	  '-f', "$dir/insert.sql\@5", '-f', "$dir/query.sql\@4", '-f', "$dir/vacuum.sql\@1",
	  '-p', $primary->port, '-h', $primary->host, 'postgres' ],
	'concurrent inserts, queries and VACUUM');
compare('after concurrent inserts, queries and VACUUM');
$primary->safe_psql('postgres', 'VACUUM (INDEX_CLEANUP ON) w');
is($primary->safe_psql('postgres',
	"SELECT min(entries) || ' ' || max(entries) FROM simhash_perm_check('w_idx', true) WHERE table_no >= 0"),
	$primary->safe_psql('postgres', "SELECT n || ' ' || n FROM (SELECT count(*) AS n FROM w WHERE code IS NOT NULL) s"),
	'every table holds every row, and heapallindexed finds them');

# pg_dump and restore: the index and its options come back
my $dump = "$dir/dump.sql";
$primary->command_ok([ 'pg_dump', '-p', $primary->port, '-h', $primary->host, '-f', $dump, 'postgres' ], 'pg_dump');
$primary->safe_psql('postgres', 'CREATE DATABASE restored');
$primary->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-p', $primary->port, '-h', $primary->host,
	'-f', $dump, 'restored' ], 'restore');
is($primary->safe_psql('restored', "SELECT pg_get_indexdef('e_idx'::regclass)"),
	"CREATE INDEX e_idx ON public.e USING simhash_perm (code) WITH (radius='6', substrings='8')",
	'the restored index keeps its options');
is($primary->safe_psql('restored', "SELECT count(*) FROM simhash_perm_info('e_idx')"), '8',
	'and its layout');
is(answers($primary, 'w', 'index', 'restored'), answers($primary, 'w', 'seq'),
	'the restored index answers like the original table');
$standby->stop;

# a crash in the middle of inserts: recovery leaves an index that answers
# like a sequential scan and passes the check
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '2', '-j', '2', '-T', '30', '-f', "$dir/insert.sql",
	  '-p', $primary->port, '-h', $primary->host, 'postgres' ],
	'>', \$out, '2>', \$err);
sleep 3;
$primary->stop('immediate');
$h->finish;
$primary->start;
is(answers($primary, 'w', 'index'), answers($primary, 'w', 'seq'),
	'after crash recovery the index equals a sequential scan');
# an insert cut short leaves entries in some tables only, until VACUUM
$primary->safe_psql('postgres', 'VACUUM (INDEX_CLEANUP ON) w');
is($primary->safe_psql('postgres', "SELECT count(*) FROM simhash_perm_check('w_idx', true) WHERE table_no >= 0"),
	'11', 'and, VACUUMed, passes simhash_perm_check with heapallindexed');
is($primary->safe_psql('postgres',
	"SELECT min(entries) || ' ' || max(entries) || ' ' || (SELECT count(*) FROM w WHERE code IS NOT NULL) FROM simhash_perm_info('w_idx')"),
	$primary->safe_psql('postgres', "SELECT n || ' ' || n || ' ' || n FROM (SELECT count(*) AS n FROM w WHERE code IS NOT NULL) s"), 'VACUUM after recovery leaves every table with exactly the live rows');

# damage: the metapage's code record, then one stored key
my $path = $primary->data_dir . '/' . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('w_idx')");
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->stop;
open(my $fh, '+<', $path) or die "open $path: $!";
binmode $fh;
sysseek($fh, 0, 0);
sysread($fh, my $meta, 8192) == 8192 or die;
my $pd_lower = unpack('v', substr($meta, 12, 2));
# the store record (32 bytes) ends at pd_lower, after the code record (24
# bytes): magic, then the width
is(unpack('V', substr($meta, $pd_lower - 32, 4)), 0x53544F52, 'the store record ends the metapage');
is(unpack('V', substr($meta, $pd_lower - 56, 4)), 0x57494445, 'after the code record');
is(unpack('v', substr($meta, $pd_lower - 52, 2)), 256, 'which holds the width');
sysseek($fh, $pd_lower - 52, 0);
syswrite($fh, pack('v', 100), 2) == 2 or die;
close $fh;
$primary->start;
my ($rc, $stdout, $stderr) = $primary->psql('postgres',
	"SET enable_seqscan = off; SELECT count(*) FROM w WHERE hamming_near(code, code(3), 31)");
like($stderr, qr/index "w_idx" contains a corrupted page at block 0/,
	'a query on a metapage whose width disagrees with its tables fails as corruption');
($rc, $stdout, $stderr) = $primary->psql('postgres', "SELECT * FROM simhash_perm_check('w_idx', false)");
like($stderr, qr/index "w_idx" contains a corrupted page at block 0/, 'simhash_perm_check reports it');
$primary->safe_psql('postgres', 'REINDEX INDEX w_idx');
is(answers($primary, 'w', 'index'), answers($primary, 'w', 'seq'), 'REINDEX heals it');

# a key whose bits were flipped: the structure holds, heapallindexed sees
# the row missing from that table
$path = $primary->data_dir . '/' . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('w_idx')");
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->stop;
open($fh, '+<', $path) or die "open $path: $!";
binmode $fh;
# the first leaf (special space: the last 48 bytes; flags at 20, nentries
# at 26) with entries: its first entry's key bytes follow the 24-byte
# page header
my $leaf;
for (my $blk = 1; !defined $leaf; $blk++)
{
	sysseek($fh, $blk * 8192, 0) or die;
	sysread($fh, my $page, 8192) == 8192 or die 'no leaf found';
	$leaf = $blk
	  if (unpack('v', substr($page, 8144 + 20, 2)) & 2) && unpack('v', substr($page, 8144 + 26, 2)) > 2;
}
sysseek($fh, $leaf * 8192 + 24, 0);
sysread($fh, my $byte, 1);
sysseek($fh, $leaf * 8192 + 24, 0);
syswrite($fh, pack('C', unpack('C', $byte) ^ 0x01), 1) == 1 or die;
close $fh;
$primary->start;
($rc, $stdout, $stderr) = $primary->psql('postgres', "SELECT * FROM simhash_perm_check('w_idx', true)");
like($stderr, qr/index "w_idx" (contains a corrupted page|lacks the row)/, 'simhash_perm_check with heapallindexed reports a flipped key');
$primary->safe_psql('postgres', 'REINDEX INDEX w_idx');
is($primary->safe_psql('postgres', "SELECT count(*) FROM simhash_perm_check('w_idx', true) WHERE table_no >= 0"), '11',
	'REINDEX heals it');

# a code in the store whose bits were flipped: the structure holds,
# heapallindexed finds the row missing from the store; and a store page
# whose entry count is damaged ends a far query in index_corrupted (XX002)
my $sp = 8192 - 48;			# PermPageOpaqueData
sub store_page
{
	my ($fh) = @_;
	for (my $blk = 1;; $blk++)
	{
		sysseek($fh, $blk * 8192, 0) or die;
		sysread($fh, my $page, 8192) == 8192 or die 'no store page found';
		return $blk
		  if (unpack('v', substr($page, $sp + 20, 2)) & 0x80) && unpack('v', substr($page, $sp + 26, 2)) > 2;
	}
}
$path = $primary->data_dir . '/' . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('w_idx')");
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->stop;
open($fh, '+<', $path) or die "open $path: $!";
binmode $fh;
my $store = store_page($fh);
sysseek($fh, $store * 8192 + 24 + 3, 0);
sysread($fh, $byte, 1);
sysseek($fh, $store * 8192 + 24 + 3, 0);
syswrite($fh, pack('C', unpack('C', $byte) ^ 0x10), 1) == 1 or die;
close $fh;
$primary->start;
($rc, $stdout, $stderr) = $primary->psql('postgres', "SELECT * FROM simhash_perm_check('w_idx', true)");
like($stderr, qr/index "w_idx" lacks the row at \(\d+,\d+\) in its code store/,
	'simhash_perm_check with heapallindexed reports a code flipped in the store');
$path = $primary->data_dir . '/' . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('w_idx')");
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->stop;
open($fh, '+<', $path) or die "open $path: $!";
binmode $fh;
$store = store_page($fh);
sysseek($fh, $store * 8192 + $sp + 26, 0);
syswrite($fh, pack('v', 900), 2) == 2 or die;
close $fh;
$primary->start;
($rc, $stdout, $stderr) = $primary->psql('postgres', "\\set VERBOSITY verbose
	SET enable_seqscan = off; SET enable_sort = off;
	SELECT id FROM w ORDER BY code <-> code(-77) LIMIT 10");
like($stderr, qr/ERROR:  XX002: index "w_idx" contains a corrupted page at block $store/,
	'a far query over a damaged store page fails as index_corrupted');
$primary->safe_psql('postgres', 'REINDEX INDEX w_idx');
is($primary->safe_psql('postgres', "SELECT count(*) FROM simhash_perm_check('w_idx', true)"), '13',
	'REINDEX heals it: 11 tables and the store\'s two chains');

# more damage, each to a pristine build: a leaf's special space (page
# identifier, level, entry count, key width, right link), the same fields
# of an internal page, and a whole leaf zeroed.  Every statement ends in an
# ERROR or a correct answer, the server does not crash, the check reports
# the damage, and REINDEX heals.  (test/t/005_perm_corruption.pl damages
# 64-bit indexes in 56 ways; these are the page kinds a bit(n) index reads
# through the same code.)
my $truth = answers($primary, 'w', 'seq');
my @damages = (
	[ 'page id of a leaf', 2, $sp + 40, pack('v', 0x1234) ],
	[ 'level of a leaf', 2, $sp + 24, pack('v', 7) ],
	[ 'entry count of a leaf', 2, $sp + 26, pack('v', 60000) ],
	[ 'key width of a leaf', 2, $sp + 30, pack('C', 9) ],
	[ 'right link of a leaf', 2, $sp + 16, pack('V', 0x7FFFFFF0) ],
	[ 'entry count of an internal page', 4, $sp + 26, pack('v', 9999) ],
	[ 'right link of an internal page', 4, $sp + 16, pack('V', 0x7FFFFFF0) ],
	[ 'a zeroed leaf', 2, 0, "\0" x 8192 ],
	[ 'page id of a store page', 0x80, $sp + 40, pack('v', 0x1234) ],
	[ 'flags of a store page', 0x80, $sp + 20, pack('v', 0x82) ],
	[ 'entry count of a store page', 0x80, $sp + 26, pack('v', 60000) ],
	[ 'right link of a store page', 0x80, $sp + 16, pack('V', 0x7FFFFFF0) ],
	[ 'a zeroed store page', 0x80, 0, "\0" x 8192 ]);
for my $d (@damages)
{
	my ($name, $kind, $off, $bytes) = @$d;
	$path = $primary->data_dir . '/' . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('w_idx')");
	$primary->safe_psql('postgres', 'CHECKPOINT');
	$primary->stop;
	open($fh, '+<', $path) or die "open $path: $!";
	binmode $fh;
	# the first page of the kind (flags: 2 leaf, 4 internal, 0x80 store)
	# with entries
	my $target;
	for (my $blk = 1; !defined $target; $blk++)
	{
		sysseek($fh, $blk * 8192, 0) or die;
		sysread($fh, my $page, 8192) == 8192 or die "no page for $name";
		$target = $blk
		  if (unpack('v', substr($page, $sp + 20, 2)) & $kind) && unpack('v', substr($page, $sp + 26, 2)) > 2;
	}
	sysseek($fh, $target * 8192 + $off, 0);
	syswrite($fh, $bytes) == length($bytes) or die;
	close $fh;
	my $log_start = -s $primary->logfile;
	$primary->start;
	my ($rc, $out, $err) = $primary->psql('postgres', "SET statement_timeout = '20s';
		SET enable_seqscan = off; SET enable_sort = off;
		SELECT string_agg(r, E'\\n' ORDER BY r) FROM (
		  SELECT (SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM w WHERE hamming_near(code, q.code, k))
		         || ' k=' || k AS r
		    FROM qs q, unnest('{0,8,31}'::int[]) k
		  UNION ALL
		  SELECT (SELECT string_agg(d::text, ',') FROM
		            (SELECT code <-> q.code AS d FROM w ORDER BY code <-> q.code LIMIT 5) n) || ' knn'
		    FROM qs q) s");
	ok(($rc == 0 && $out eq $truth) || $err =~ /ERROR/,
		"$name: queries end in an ERROR or the right answer") or diag("rc $rc: $err");
	($rc, $out, $err) = $primary->psql('postgres', "SELECT * FROM simhash_perm_check('w_idx', true)");
	like($err, qr/ERROR/, "$name: simhash_perm_check reports it");
	my $log = slurp_file($primary->logfile, $log_start);
	unlike($log, qr/terminated by signal|PANIC|server process .* exited/, "$name: no backend crashed");
	$primary->safe_psql('postgres', 'REINDEX INDEX w_idx');
	is(answers($primary, 'w', 'index'), $truth, "$name: REINDEX heals it");
}

$primary->stop;
done_testing();
