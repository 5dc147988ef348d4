# A damaged key in a near-duplicate constraint's index may hide a row from
# the constraint's check, never make an innocent row conflict.
#
# One stored key of table 0 is rewritten, with the server stopped, to the
# key of a fingerprint F that lies 18 bits from the row it belongs to (and
# from every other row): its low 18 key bits flipped, so the leaf's order
# holds and no page check can see it.  The index now claims a row at
# distance 0 from F.  The constraint's check rechecks every match against
# the row's own fingerprint, so F is stored, by INSERT and by INSERT ... ON
# CONFLICT DO NOTHING; a true near-copy is still refused, the damaged row's
# own near-copy included (the other tables hold its key intact);
# simhash_perm_check with heapallindexed names the damage, and REINDEX
# heals it.  Then a flipped bit of a tenant entry's extra bits, likewise.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;

my $BLCKSZ = 8192;
my $OPAQUE = $BLCKSZ - 48;			# the special space, padded to 48 bytes
my $ENTRIES = 24;					# MAXALIGN(SizeOfPageHeaderData)
my $PERM_LEAF = 1 << 1;
my $PERM_KEY_OFFSET = 1 << 5;
my $FLIPPED = 18;

# without data checksums (PostgreSQL 18's default), which would catch the
# rewritten byte before the index could
my $node = PostgreSQL::Test::Cluster->new('exclusion_damaged_key');
my ($major) = $node->pg_version =~ /^(\d+)/;
$node->init(extra => $major >= 18 ? ['--no-data-checksums'] : []);
$node->start;
$node->safe_psql('postgres', q{CREATE EXTENSION simhash;} . $PSEUDO_FP_SQL . q{
	CREATE TABLE docs (id int, fp simhash64,
	  CONSTRAINT docs_nd EXCLUDE USING simhash_perm (fp WITH ~=) WITH (max_distance = 3));
	INSERT INTO docs SELECT g, pseudo_fp(g) FROM generate_series(1, 3000) g;
});

# Table 0's key: the blocks of tables 0, 1, 2 and 3 in turn, each from its
# high bit down (the default layout, B = K + 1: each table's prefix is one
# block).  mask: the fingerprint bits under the key's low 18 bits.
my @order = map { split /,/ } split /\n/, $node->safe_psql('postgres',
	q{SELECT prefix FROM simhash_perm_info('docs_nd') ORDER BY table_no});
is(scalar(@order), 64, 'the layout names 64 bits');
my $mask = 0;
$mask |= 1 << $order[$_] for (64 - $FLIPPED) .. 63;

my $file = $node->data_dir . '/' . $node->safe_psql('postgres',
	q{SELECT pg_relation_filepath('docs_nd')});
$node->stop;

# A leaf of table 0 in the offset format, and an entry whose key with its
# low 18 bits flipped still lies between its neighbours
open(my $fh, '+<', $file) or die "could not open $file: $!";
binmode $fh;
my $nblocks = (-s $file) / $BLCKSZ;
my ($target, $tid);
for my $blk (1 .. $nblocks - 1)
{
	my $page;
	seek($fh, $blk * $BLCKSZ, 0) or die;
	read($fh, $page, $BLCKSZ) == $BLCKSZ or die;
	my ($hikey, $lokey, $right, $flags, $table, $level, $n, $nsorted, $kb, $bb, $ob) =
	  unpack('Q< Q< V v v v v v C C C', substr($page, $OPAQUE, 35));
	next unless ($flags & $PERM_LEAF) && ($flags & $PERM_KEY_OFFSET) && $table == 0 && $nsorted >= 3;
	my $size = $kb + $bb + $ob;
	my $key = sub {
		my $raw = substr($page, $ENTRIES + $_[0] * $size, $kb) . "\0" x (8 - $kb);
		return $lokey + unpack('Q<', $raw);
	};
	for my $i (1 .. $nsorted - 2)
	{
		my $new = $key->($i) ^ ((1 << $FLIPPED) - 1);
		next unless $key->($i - 1) < $new && $new < $key->($i + 1);
		next unless $kb == 8 || ($new - $lokey) < (1 << (8 * $kb));
		my $at = $ENTRIES + $i * $size;
		my $blkno = unpack('V', substr($page, $at + $kb, $bb) . "\0" x (4 - $bb));
		my $off = unpack('v', substr($page, $at + $kb + $bb, $ob) . "\0" x (2 - $ob));
		$tid = "($blkno,$off)";
		$target = $blk * $BLCKSZ + $at;
		seek($fh, $target, 0) or die;
		print $fh substr(pack('Q<', $new - $lokey), 0, $kb);
		last;
	}
	last if defined $target;
}
close $fh or die;
ok(defined $target, "a key of table 0 rewritten in place, row $tid");

$node->start;
my $f = $node->safe_psql('postgres', qq{
	SELECT (fp::bigint # $mask)::simhash64 FROM docs WHERE ctid = '$tid'});
is($node->safe_psql('postgres', qq{
	SET enable_indexscan = off; SET enable_bitmapscan = off;
	SELECT min(hamming_distance(fp, '$f')) >= $FLIPPED FROM docs}),
	't', "F lies at least $FLIPPED bits from every row");

# the index itself now claims a row at distance 0 from F (a query's own
# recheck hides it)
is($node->safe_psql('postgres', qq{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM docs WHERE hamming_near(fp, '$f', 3)}),
	'0', 'a query near F returns no row');

my ($rc, $out, $err) = $node->psql('postgres',
	qq{INSERT INTO docs VALUES (-1, '$f')});
is($rc, 0, 'F is stored: the damaged key refuses no innocent row') or diag($err);
$node->safe_psql('postgres', q{DELETE FROM docs WHERE id = -1});
is($node->safe_psql('postgres', qq{
	INSERT INTO docs VALUES (-2, '$f') ON CONFLICT DO NOTHING RETURNING id}),
	'-2', 'ON CONFLICT DO NOTHING stores F, it does not drop it');

# true near-copies are still refused, the damaged row's own included
($rc, $out, $err) = $node->psql('postgres', qq{
	INSERT INTO docs SELECT -3, (fp::bigint # 1)::simhash64 FROM docs WHERE ctid = '$tid'});
like($err, qr/violates exclusion constraint "docs_nd"/,
	'a near-copy of the damaged row is refused (its other tables hold its key)');
($rc, $out, $err) = $node->psql('postgres', q{
	INSERT INTO docs VALUES (-4, (pseudo_fp(77)::bigint # 6)::simhash64)});
like($err, qr/violates exclusion constraint "docs_nd"/, 'a near-copy of another row is refused');

($rc, $out, $err) = $node->psql('postgres',
	q{SELECT count(*) FROM simhash_perm_check('docs_nd', true) WHERE table_no >= 0});
isnt($rc, 0, 'simhash_perm_check with heapallindexed finds the damaged key');
note($err);

$node->safe_psql('postgres', q{REINDEX INDEX docs_nd});
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM simhash_perm_check('docs_nd', true) WHERE table_no >= 0}),
	'4', 'after REINDEX the index passes the check');
($rc, $out, $err) = $node->psql('postgres', qq{
	INSERT INTO docs SELECT -5, (fp::bigint # 1)::simhash64 FROM docs WHERE ctid = '$tid'});
like($err, qr/violates exclusion constraint "docs_nd"/, 'after REINDEX, near-copies are refused');

# The same for a constraint per tenant, whose entries keep 16 bits of the
# code beside their key (the extra bits, the entry's last two bytes): one
# bit of them flipped in an entry of table 0.  heapallindexed names it, a
# near-copy of the damaged row is still refused (the other tables keep its
# code intact), and REINDEX heals.
$node->safe_psql('postgres', q{
	CREATE TABLE sites (id int, site int, fp simhash64,
	  CONSTRAINT sites_nd EXCLUDE USING simhash_perm (site WITH =, fp WITH ~=)
	  WITH (max_distance = 3));
	INSERT INTO sites SELECT g, g % 5, pseudo_fp(g) FROM generate_series(1, 3000) g;
});
$file = $node->data_dir . '/' . $node->safe_psql('postgres',
	q{SELECT pg_relation_filepath('sites_nd')});
$node->stop;

open($fh, '+<', $file) or die "could not open $file: $!";
binmode $fh;
$nblocks = (-s $file) / $BLCKSZ;
my ($extra_at, $extra_tid);
for my $blk (1 .. $nblocks - 1)
{
	my $page;
	seek($fh, $blk * $BLCKSZ, 0) or die;
	read($fh, $page, $BLCKSZ) == $BLCKSZ or die;
	my ($hikey, $lokey, $right, $flags, $table, $level, $n, $nsorted, $kb, $bb, $ob, $eb) =
	  unpack('Q< Q< V v v v v v C C C C', substr($page, $OPAQUE, 36));
	next unless ($flags & $PERM_LEAF) && $table == 0 && $n >= 1;
	is($eb, 2, 'a tenant leaf keeps two bytes of extra bits an entry');
	my $at = $ENTRIES;			# entry 0
	my $blkno = unpack('V', substr($page, $at + $kb, $bb) . "\0" x (4 - $bb));
	my $off = unpack('v', substr($page, $at + $kb + $bb, $ob) . "\0" x (2 - $ob));
	$extra_tid = "($blkno,$off)";
	$extra_at = $blk * $BLCKSZ + $at + $kb + $bb + $ob;
	my $byte = ord(substr($page, $at + $kb + $bb + $ob, 1)) ^ 1;
	seek($fh, $extra_at, 0) or die;
	print $fh chr($byte);
	last;
}
close $fh or die;
ok(defined $extra_at, "an entry's extra bits flipped in place, row $extra_tid");

$node->start;
($rc, $out, $err) = $node->psql('postgres',
	q{SELECT count(*) FROM simhash_perm_check('sites_nd', true) WHERE table_no >= 0});
like($err, qr/keeps the code bits [0-9A-F]{4} beside its key; the row's are [0-9A-F]{4}/,
	'simhash_perm_check with heapallindexed names the damaged extra bits');
($rc, $out, $err) = $node->psql('postgres', qq{
	INSERT INTO sites SELECT -1, site, (fp::bigint # 1)::simhash64 FROM sites WHERE ctid = '$extra_tid'});
like($err, qr/violates exclusion constraint "sites_nd"/,
	'a near-copy of the damaged row is refused');
$node->safe_psql('postgres', q{REINDEX INDEX sites_nd});
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM simhash_perm_check('sites_nd', true) WHERE table_no >= 0}),
	'4', 'after REINDEX the tenant index passes the check');

$node->stop;
done_testing();
