# The metapage's fields against one another: a field rewritten to a value
# in range that disagrees with the others must not pass.  For each field
# the metapage check compares, on every kind of index (64-bit one-column
# ones of a final layout and of a grown one, bit(256) without a tail,
# bit(128) with one, a 64-bit fingerprint and a bit(128) code after a
# leading column), one scenario stops the cluster, rewrites the field in
# the index file, starts the cluster, and asserts that the plain
# simhash_perm_check(index) reports index_corrupted naming the field, and
# that a query through the index fails the same way instead of answering
# (before this check, a bit(256) index whose tail was rewritten from 0 to
# 64 passed the check and hid rows from 15 of 36 answers).  The index file
# is then put back; at the end every index passes the check again.
#
# Offsets are those of src/index/perm.h on a little-endian machine with
# 8 kB pages; the test checks them against each pristine metapage (the
# magics of its records, the width, the table count) before damaging it.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;

my $BLCKSZ = 8192;

# PermMetaPageData, at MAXALIGN(SizeOfPageHeaderData) = 24
my %META = (
	max_distance => 32,
	blocks => 34,
	ntables => 36,
	algorithm => 38,
	block_of_bit => 40,
	tables => 104);
# PermTable: bits[64], prefix_bits, root (4-aligned), root_level; 76 bytes
my %TABLE = (bits => 0, prefix_bits => 64, root => 68, root_level => 72);
# PermMetaGrowth, 8-aligned after the tables; then PermMetaCode
my %GROWTH = (magic => 0, generation => 4, layout_rows => 8, layout_start => 16, next_check => 20);
my $GROWTH_SIZE = 24;
my %CODE = (magic => 0, width => 4, radius => 6, substrings => 8, tenants => 10,
	tail => 12, extra => 14, layout_rows => 16);
my $CODE_SIZE = 24;
# PermMetaStore, after the code record of an index on bit(n) codes without
# leading columns: its code store (permstore.c)
my %STORE = (magic => 0, width => 4, entry_size => 6, first => 8, last => 12,
	null_first => 16, null_last => 20, pages => 24, null_pages => 28);
my $STORE_SIZE = 32;
my ($GROWTH_MAGIC, $CODE_MAGIC, $STORE_MAGIC) = (0x47524F57, 0x57494445, 0x53544F52);
my $INVALID = 0xFFFFFFFF;

sub table_off { my ($t, $f) = @_; return $META{tables} + 76 * $t + $TABLE{$f}; }
sub growth_base { my ($nt) = @_; my $end = $META{tables} + 76 * $nt; return ($end + 7) & ~7; }
sub growth_off { my ($m, $f) = @_; return growth_base($m->{ntables}) + $GROWTH{$f}; }
sub code_off { my ($m, $f) = @_; return growth_base($m->{ntables}) + $GROWTH_SIZE + $CODE{$f}; }
sub store_off { my ($m, $f) = @_; return growth_base($m->{ntables}) + $GROWTH_SIZE + $CODE_SIZE + $STORE{$f}; }

sub u8 { return unpack('C', substr($_[0], $_[1], 1)); }
sub u16 { return unpack('v', substr($_[0], $_[1], 2)); }
sub u32 { return unpack('V', substr($_[0], $_[1], 4)); }
sub u64 { return unpack('Q<', substr($_[0], $_[1], 8)); }

my $node = PostgreSQL::Test::Cluster->new('meta');
my ($major) = $node->pg_version =~ /^(\d+)/;
# without data checksums (PostgreSQL 18's default), which would catch the
# damage before the index's own checks could
$node->init(extra => $major >= 18 ? ['--no-data-checksums'] : []);
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION simhash');
$node->safe_psql('postgres', $PSEUDO_FP_SQL . q{
	CREATE FUNCTION code(g bigint) RETURNS bit(256) LANGUAGE sql IMMUTABLE AS
	  $$ SELECT ('x' || md5(g::text) || md5((-g)::text))::bit(256) $$;
	-- near(g, d): code(g) with d bits flipped, spread over the substrings
	CREATE FUNCTION near(g bigint, d int) RETURNS bit(256) LANGUAGE sql IMMUTABLE AS
	  $$ SELECT code(g) # ((repeat('1', d) || repeat('0', 256 - d))::bit(256) >> (g % (257 - d))::int) $$;

	-- 64-bit, a layout chosen from 70,000 rows: final
	CREATE TABLE f (id bigint, fp simhash64);
	INSERT INTO f SELECT g, pseudo_fp(g) FROM generate_series(1, 70000) g;
	INSERT INTO f SELECT 100000 + g, (pseudo_fp(g)::bigint # (7::bigint << (g % 60)))::simhash64
	  FROM generate_series(1, 200) g;
	CREATE INDEX f_idx ON f USING simhash_perm (fp);

	-- 64-bit, built empty, its layout changed by skewed inserts
	CREATE TABLE late (id bigint, fp simhash64);
	CREATE INDEX late_idx ON late USING simhash_perm (fp);
	INSERT INTO late SELECT g, ((pseudo_fp(g)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64
	  FROM generate_series(1, 20000) g;

	-- bit(256) at radius 32: keys without a tail
	CREATE TABLE w (id bigint, code bit(256));
	INSERT INTO w SELECT g, code(g) FROM generate_series(1, 5000) g;
	INSERT INTO w SELECT 100000 + g, near(g, (g % 40)::int) FROM generate_series(1, 400) g;
	CREATE INDEX w_idx ON w USING simhash_perm (code) WITH (radius = 32);

	-- bit(128) at radius 6: keys with a tail of 24 bits
	CREATE TABLE n (id bigint, code bit(128));
	INSERT INTO n SELECT id, code::bit(128) FROM w;
	CREATE INDEX n_idx ON n USING simhash_perm (code) WITH (radius = 6);

	-- a 64-bit fingerprint and a bit(128) code after a leading column
	CREATE TABLE t (id bigint, site int, fp simhash64, code bit(128));
	INSERT INTO t SELECT g, (g % 7)::int, pseudo_fp(g), code(g)::bit(128) FROM generate_series(1, 5000) g;
	INSERT INTO t SELECT 100000 + g, (g % 7)::int, (pseudo_fp(g)::bigint # (5::bigint << (g % 60)))::simhash64,
	  near(g, (g % 9)::int)::bit(128) FROM generate_series(1, 300) g;
	CREATE INDEX t_fp_idx ON t USING simhash_perm (site, fp);
	CREATE INDEX t_code_idx ON t USING simhash_perm (site, code);
});

# One query per index, through it, whose answer a damaged layout would
# change: rows within a radius of several query points
my %QUERY = (
	f_idx => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM f, generate_series(1, 200, 7) q
		WHERE hamming_near(fp, pseudo_fp(q), 3)},
	late_idx => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM late, generate_series(1, 20000, 701) q
		WHERE hamming_near(fp, ((pseudo_fp(q)::bigint) & ~x'cccccccccccccccc'::bigint)::simhash64, 2)},
	w_idx => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM w, generate_series(1, 400, 11) q
		WHERE hamming_near(code, code(q), 32)},
	n_idx => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM n, generate_series(1, 400, 11) q
		WHERE hamming_near(code, code(q)::bit(128), 6)},
	t_fp_idx => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM t, generate_series(1, 300, 7) q
		WHERE site = (q % 7)::int AND hamming_near(fp, pseudo_fp(q), 3)},
	t_code_idx => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM t, generate_series(1, 300, 7) q
		WHERE site = (q % 7)::int AND hamming_near(code, code(q)::bit(128), 6)});
my $INDEX_ONLY = 'SET enable_seqscan = off; SET enable_sort = off; ';
my $SEQ_ONLY = 'SET enable_indexscan = off; SET enable_bitmapscan = off; ';

my (%truth, %file, %pristine, %meta);
for my $idx (sort keys %QUERY)
{
	$truth{$idx} = $node->safe_psql('postgres', $SEQ_ONLY . $QUERY{$idx});
	is($node->safe_psql('postgres', $INDEX_ONLY . $QUERY{$idx}), $truth{$idx},
		"$idx: the index answers like a sequential scan");
	like($node->safe_psql('postgres', "$INDEX_ONLY EXPLAIN (COSTS OFF) " . $QUERY{$idx}),
		qr/\b$idx\b/, "$idx: the query goes through the index");
	my @ids = split /,/, $truth{$idx};
	cmp_ok(scalar(@ids), '>', 10, "$idx: the query finds rows");
	is($node->safe_psql('postgres', "SELECT count(*) > 0 FROM simhash_perm_check('$idx', true)"),
		't', "$idx: passes simhash_perm_check with heapallindexed");
	$file{$idx} = $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$idx')");
}
$node->safe_psql('postgres', 'CHECKPOINT');
$node->stop;

# The pristine metapages, and the fields the scenarios start from
for my $idx (sort keys %QUERY)
{
	open(my $fh, '<', $file{$idx}) or die "open $file{$idx}: $!";
	binmode $fh;
	local $/;
	$pristine{$idx} = <$fh>;
	close $fh;
	my $page = substr($pristine{$idx}, 0, $BLCKSZ);
	my %m = (page => $page, ntables => u16($page, $META{ntables}),
		blocks => u16($page, $META{blocks}), pd_lower => u16($page, 12));
	$m{generation} = u32($page, growth_off(\%m, 'generation'));
	$m{layout_start} = u32($page, growth_off(\%m, 'layout_start'));
	$m{next_check} = u32($page, growth_off(\%m, 'next_check'));
	$m{layout_rows} = u64($page, growth_off(\%m, 'layout_rows'));
	is(u32($page, growth_off(\%m, 'magic')), $GROWTH_MAGIC, "$idx: the growth record follows the tables");
	if ($idx =~ /^(w|n|t_fp|t_code)_idx$/)
	{
		is(u32($page, code_off(\%m, 'magic')), $CODE_MAGIC, "$idx: the code record follows it");
		$m{$_} = u16($page, code_off(\%m, $_)) for qw(width radius substrings tenants tail extra);
		is($m{substrings}, $m{ntables}, "$idx: its substrings are its tables");
	}
	else
	{
		# an index on 64-bit fingerprints leaves the code record's place zeroed
		is(u32($page, code_off(\%m, 'magic')), 0, "$idx: no code record after the growth record");
	}
	# every index built since simhash 1.6 has a store record: its codes on
	# bit(n) codes without leading columns, the rows without a code on all
	is(u32($page, store_off(\%m, 'magic')), $STORE_MAGIC, "$idx: the store record follows it");
	is($m{pd_lower}, store_off(\%m, 'magic') + $STORE_SIZE, "$idx: and ends the metapage");
	$m{"store_$_"} = u16($page, store_off(\%m, $_)) for qw(width entry_size);
	$m{"store_$_"} = u32($page, store_off(\%m, $_)) for qw(first last null_first null_last pages null_pages);
	$meta{$idx} = \%m;
}
my %expect_layout = (
	'f_idx next_check' => [ $meta{f_idx}{next_check}, $INVALID ],
	'late_idx generation' => [ $meta{late_idx}{generation} > 0 ? 1 : 0, 1 ],
	'late_idx next_check' => [ $meta{late_idx}{next_check} != $INVALID ? 1 : 0, 1 ],
	'w_idx width, radius, tail' => [ "$meta{w_idx}{width} $meta{w_idx}{radius} $meta{w_idx}{tail}", '256 32 0' ],
	'n_idx width, radius, tail' => [ "$meta{n_idx}{width} $meta{n_idx}{radius} $meta{n_idx}{tail}", '128 6 24' ],
	'w_idx store width, entry size' => [ "$meta{w_idx}{store_width} $meta{w_idx}{store_entry_size}", '256 38' ],
	'n_idx store width, entry size' => [ "$meta{n_idx}{store_width} $meta{n_idx}{store_entry_size}", '128 22' ],
	'w_idx store: one page of NULL codes' => [ "$meta{w_idx}{store_null_pages} " . ($meta{w_idx}{store_pages} > 20 ? 'many' : 'few'), '1 many' ],
	't_fp_idx width, tenants, tail, extra' => [ join(' ', @{ $meta{t_fp_idx} }{qw(width tenants tail extra)}), '64 1 48 16' ],
	't_code_idx width, tenants, tail, extra' => [ join(' ', @{ $meta{t_code_idx} }{qw(width tenants tail extra)}), '128 1 48 16' ]);
is($expect_layout{$_}[0], $expect_layout{$_}[1], "the metapage holds what the scenarios start from: $_")
  for sort keys %expect_layout;

# table 0's bits of f_idx: [0] and [1] lie in one block (each block's bits
# high first), so swapping them keeps a permutation and the prefix length
my @f_bits = map { u8($meta{f_idx}{page}, table_off(0, 'bits') + $_) } 0 .. 63;
my @f_blocks = map { u8($meta{f_idx}{page}, $META{block_of_bit} + $_) } 0 .. 63;
is($f_blocks[ $f_bits[0] ], $f_blocks[ $f_bits[1] ], 'f_idx: bits[0] and bits[1] of table 0 share a block');
# two bits of f_idx in different blocks, to swap their blocks
my ($b0) = grep { $f_blocks[$_] == 0 } 0 .. 63;
my ($b1) = grep { $f_blocks[$_] == 1 } 0 .. 63;

#
# Scenarios: [ index, name, [ offset, pack format, value ] ..., options ]
# with options { detail => regex the error must match, query_ok => the
# query still answers right (the damage changes nothing a query reads),
# sqlstate and message => when not XX002 and a corrupted metapage }
#
my $m = sub { $meta{ $_[0] } };
my @SCENARIOS = (
	# 64-bit, final layout: K = 3, B = 4, 4 tables
	[ 'f_idx', 'algorithm 1 -> 2', [ $META{algorithm}, 'v', 2 ],
		{ detail => qr/algorithm = 2, but/ } ],
	[ 'f_idx', 'max_distance 3 -> 2', [ $META{max_distance}, 'v', 2 ],
		{ detail => qr/ntables = 4, but blocks = 4 and max_distance = 2 imply 6/ } ],
	[ 'f_idx', 'blocks 4 -> 5', [ $META{blocks}, 'v', 5 ],
		{ detail => qr/ntables = 4, but blocks = 5 and max_distance = 3 imply 10/ } ],
	[ 'f_idx', 'blocks 4 -> 3', [ $META{blocks}, 'v', 3 ],
		{ detail => qr/blocks = 3, but max_distance = 3 takes 4 to 16 blocks/ } ],
	[ 'f_idx', 'a bit moved from block 0 to block 1', [ $META{block_of_bit} + $b0, 'C', 1 ],
		{ detail => qr/Block 0 holds 15 bits in block_of_bit, but 4 blocks of 64 bits imply 16/ } ],
	[ 'f_idx', 'two bits swap blocks', [ $META{block_of_bit} + $b0, 'C', 1 ], [ $META{block_of_bit} + $b1, 'C', 0 ],
		{ detail => qr/Table 0: bits\[\d+\] = \d+, but its blocks' layout puts bit \d+ there/ } ],
	[ 'f_idx', 'table 0: two bits of its order swapped', [ table_off(0, 'bits'), 'C', $f_bits[1] ],
		[ table_off(0, 'bits') + 1, 'C', $f_bits[0] ],
		{ detail => qr/Table 0: bits\[0\] = $f_bits[1], but its blocks' layout puts bit $f_bits[0] there/ } ],
	[ 'f_idx', 'table 1: prefix_bits 16 -> 15', [ table_off(1, 'prefix_bits'), 'C', 15 ],
		{ detail => qr/Table 1: prefix_bits = 15, but the blocks it keys on hold 16 bits/ } ],
	[ 'f_idx', 'table 2: prefix_bits 16 -> 32', [ table_off(2, 'prefix_bits'), 'C', 32 ],
		{ detail => qr/Table 2: prefix_bits = 32, but the blocks it keys on hold 16 bits/ } ],
	[ 'f_idx', 'growth: magic', [ growth_off($m->('f_idx'), 'magic'), 'V', 0x12345678 ],
		{ detail => qr/growth record's magic is 12345678/ } ],
	[ 'f_idx', 'growth: generation 0 -> 1', [ growth_off($m->('f_idx'), 'generation'), 'V', 1 ],
		{ detail => qr/layout_start = 1, but generation = 1/ } ],
	[ 'f_idx', 'growth: layout_start 1 -> 2', [ growth_off($m->('f_idx'), 'layout_start'), 'V', 2 ],
		{ detail => qr/layout_start = 2, but generation = 0/ } ],
	[ 'f_idx', 'growth: next_check of a final layout', [ growth_off($m->('f_idx'), 'next_check'), 'V', 100 ],
		{ detail => qr/next_check = 100, but layout_rows = 70200 implies none/ } ],
	[ 'f_idx', 'a code record after the growth record',
		[ code_off($m->('f_idx'), 'magic'), 'V', $CODE_MAGIC ], [ code_off($m->('f_idx'), 'width'), 'v', 64 ],
		[ 12, 'v', code_off($m->('f_idx'), 'magic') + $CODE_SIZE ],
		{ detail => qr/It holds a record of codes, but the index's column is a 64-bit fingerprint/ } ],
	[ 'f_idx', 'store record: a width on 64-bit fingerprints', [ store_off($m->('f_idx'), 'width'), 'v', 64 ],
		{ detail => qr/but an index on 64-bit fingerprints keeps no codes in its store/ } ],
	[ 'f_idx', 'store record: null_first -> the metapage', [ store_off($m->('f_idx'), 'null_first'), 'V', 0 ],
		{ detail => qr/Store record: null_first = 0, but the index has blocks 1 to/ } ],

	# 64-bit, a grown layout (generation >= 1, layout_start > 1)
	[ 'late_idx', 'table 0: root before layout_start', [ table_off(0, 'root'), 'V', 1 ],
		{ detail => qr/Table 0: root = 1, but its layout starts at block $meta{late_idx}{layout_start}/ } ],
	[ 'late_idx', 'growth: layout_start 1', [ growth_off($m->('late_idx'), 'layout_start'), 'V', 1 ],
		{ detail => qr/layout_start = 1, but generation = $meta{late_idx}{generation}/ } ],
	[ 'late_idx', 'growth: no next_check for a young layout', [ growth_off($m->('late_idx'), 'next_check'), 'V', $INVALID ],
		{ detail => qr/next_check = 4294967295, but layout_rows = $meta{late_idx}{layout_rows} implies one/ } ],
	# another parity: the metapage agrees with itself, the pages do not
	[ 'late_idx', 'growth: generation + 1', [ growth_off($m->('late_idx'), 'generation'), 'V', $meta{late_idx}{generation} + 1 ],
		{ message => qr/index "late_idx" contains a corrupted page at block \d+/,
		  detail => qr/The page is flagged for a layout of (odd|even) generation; the metapage's is (odd|even)/, query_ok => 1 } ],

	# bit(256) at radius 32, no tail
	[ 'w_idx', 'tail 0 -> 64', [ code_off($m->('w_idx'), 'tail'), 'v', 64 ],
		{ detail => qr/Code record: tail = 64, but radius 32 and 0 leading columns imply 0/ } ],
	[ 'w_idx', 'tail 0 -> 24', [ code_off($m->('w_idx'), 'tail'), 'v', 24 ],
		{ detail => qr/Code record: tail = 24, but radius 32 and 0 leading columns imply 0/ } ],
	[ 'w_idx', 'width 256 -> 255', [ code_off($m->('w_idx'), 'width'), 'v', 255 ],
		{ detail => qr/Code record: width = 255, but the index's column is bit\(256\)/ } ],
	[ 'w_idx', 'width 256 -> 5000', [ code_off($m->('w_idx'), 'width'), 'v', 5000 ],
		{ detail => qr/Code record: width = 5000, outside 1 to 4096/ } ],
	[ 'w_idx', 'radius 32 -> 31 in the code record', [ code_off($m->('w_idx'), 'radius'), 'v', 31 ],
		{ detail => qr/Code record: radius = 31, but max_distance = 32/ } ],
	[ 'w_idx', 'radius 32 -> 300', [ code_off($m->('w_idx'), 'radius'), 'v', 300 ], [ $META{max_distance}, 'v', 300 ],
		{ detail => qr/Code record: radius = 300, more than the width \(256\)/ } ],
	[ 'w_idx', 'radius 32 -> 8 (which calls for a tail)', [ code_off($m->('w_idx'), 'radius'), 'v', 8 ], [ $META{max_distance}, 'v', 8 ],
		{ detail => qr/Code record: tail = 0, but radius 8 and 0 leading columns imply 24/ } ],
	[ 'w_idx', 'substrings + 1 in the code record', [ code_off($m->('w_idx'), 'substrings'), 'v', $meta{w_idx}{substrings} + 1 ],
		{ detail => qr/Code record: substrings = \d+, but ntables = $meta{w_idx}{ntables} and blocks = $meta{w_idx}{blocks}/ } ],
	[ 'w_idx', 'blocks - 1', [ $META{blocks}, 'v', $meta{w_idx}{blocks} - 1 ],
		{ detail => qr/Code record: substrings = $meta{w_idx}{substrings}, but ntables = \d+ and blocks = \d+/ } ],
	[ 'w_idx', 'tenants 0 -> 1', [ code_off($m->('w_idx'), 'tenants'), 'v', 1 ],
		{ detail => qr/Code record: tenants = 1, but the index has 0 leading columns/ } ],
	[ 'w_idx', 'extra 0 -> 16', [ code_off($m->('w_idx'), 'extra'), 'v', 16 ],
		{ detail => qr/Code record: extra = 16, but 0 leading columns imply 0/ } ],
	[ 'w_idx', 'code record magic', [ code_off($m->('w_idx'), 'magic'), 'V', 0x12345678 ],
		{ detail => qr/The index's columns call for a record of its codes, which the metapage lacks/ } ],
	[ 'w_idx', 'growth: generation 0 -> 1', [ growth_off($m->('w_idx'), 'generation'), 'V', 1 ],
		{ detail => qr/layout_start = 1, but generation = 1/ } ],
	[ 'w_idx', 'table 2: two bits of its order swapped', [ table_off(2, 'bits'), 'C', 62 ], [ table_off(2, 'bits') + 1, 'C', 63 ],
		{ detail => qr/Table 2: bits\[0\] = 62, but a table of substrings puts bit 63 there/ } ],
	[ 'w_idx', 'table 0: prefix_bits - 1', [ table_off(0, 'prefix_bits'), 'C', u8($meta{w_idx}{page}, table_off(0, 'prefix_bits')) - 1 ],
		{ detail => qr/Table 0: prefix_bits = \d+, but substring 0 of a code of 256 bits cut in $meta{w_idx}{substrings} has \d+ bits/ } ],
	[ 'w_idx', 'block_of_bit[5] 0 -> 1', [ $META{block_of_bit} + 5, 'C', 1 ],
		{ detail => qr/Bit 5 is in block 1; an index of codes has every bit in block 0/ } ],

	# the store record of w_idx (permstore.c)
	[ 'w_idx', 'store record magic', [ store_off($m->('w_idx'), 'magic'), 'V', 0x12345678 ],
		{ detail => qr/Its store record's magic is 12345678, expected 53544F52/ } ],
	[ 'w_idx', 'store width 256 -> 128', [ store_off($m->('w_idx'), 'width'), 'v', 128 ],
		{ detail => qr/Store record: width = 128, but the code record's is 256/ } ],
	[ 'w_idx', 'store entry_size 38 -> 40', [ store_off($m->('w_idx'), 'entry_size'), 'v', 40 ],
		{ detail => qr/Store record: entry_size = 40, but codes of 256 bits take 38/ } ],
	[ 'w_idx', 'store last -> the metapage', [ store_off($m->('w_idx'), 'last'), 'V', 0 ],
		{ detail => qr/Store record: last = 0, but the index has blocks 1 to \d+/ } ],
	[ 'w_idx', 'store null_first beyond the end', [ store_off($m->('w_idx'), 'null_first'), 'V', 0x7FFFFFF0 ],
		{ detail => qr/Store record: null_first = 2147483632, but the index has blocks 1 to \d+/ } ],
	[ 'w_idx', 'store chains share a page', [ store_off($m->('w_idx'), 'null_first'), 'V', $meta{w_idx}{store_first} ],
		{ detail => qr/Store record: the chains of codes \(\d+ to \d+\) and of NULL codes \(\d+ to \d+\) share a page/ } ],
	[ 'w_idx', 'store pages 0', [ store_off($m->('w_idx'), 'pages'), 'V', 0 ],
		{ detail => qr/Store record: 0 pages of codes and 1 of NULL codes, but the index has \d+ blocks/ } ],
	# counts the metapage cannot refute: the walk of the chain does; a radius
	# query does not read the store
	[ 'w_idx', 'store pages + 1', [ store_off($m->('w_idx'), 'pages'), 'V', $meta{w_idx}{store_pages} + 1 ],
		{ detail => qr/The store record counts \d+ pages in the chain of codes, which has \d+/, query_ok => 1 } ],
	[ 'w_idx', 'store last -> first', [ store_off($m->('w_idx'), 'last'), 'V', $meta{w_idx}{store_first} ],
		{ detail => qr/The store record names block \d+ as the last page of the chain of codes, which ends at block \d+/, query_ok => 1 } ],

	# bit(128) at radius 6, a tail of 24
	[ 'n_idx', 'tail 24 -> 0', [ code_off($m->('n_idx'), 'tail'), 'v', 0 ],
		{ detail => qr/Code record: tail = 0, but radius 6 and 0 leading columns imply 24/ } ],
	[ 'n_idx', 'width 128 -> 129', [ code_off($m->('n_idx'), 'width'), 'v', 129 ],
		{ detail => qr/Code record: width = 129, but the index's column is bit\(128\)/ } ],

	# a 64-bit fingerprint after a leading column
	[ 't_fp_idx', 'tail 48 -> 24', [ code_off($m->('t_fp_idx'), 'tail'), 'v', 24 ],
		{ detail => qr/Code record: tail = 24, but radius 3 and 1 leading columns imply 48/ } ],
	[ 't_fp_idx', 'extra 16 -> 8', [ code_off($m->('t_fp_idx'), 'extra'), 'v', 8 ],
		{ detail => qr/Code record: extra = 8, but 1 leading columns imply 16/ } ],
	[ 't_fp_idx', 'radius 3 -> 13', [ code_off($m->('t_fp_idx'), 'radius'), 'v', 13 ], [ $META{max_distance}, 'v', 13 ],
		{ detail => qr/Code record: radius = 13, more than max_distance may be \(12\)/ } ],
	[ 't_fp_idx', 'width 64 -> 128', [ code_off($m->('t_fp_idx'), 'width'), 'v', 128 ],
		{ detail => qr/Code record: width = 128, but the index's column is a 64-bit fingerprint/ } ],
	[ 't_fp_idx', 'tenants 1 -> 2', [ code_off($m->('t_fp_idx'), 'tenants'), 'v', 2 ],
		{ detail => qr/Code record: tenants = 2, but the index has 1 leading columns/ } ],

	# a bit(128) code after a leading column
	[ 't_code_idx', 'tenants 1 -> 0', [ code_off($m->('t_code_idx'), 'tenants'), 'v', 0 ],
		{ detail => qr/Code record: tenants = 0, but the index has 1 leading columns/ } ],
	[ 't_code_idx', 'tail 48 -> 0', [ code_off($m->('t_code_idx'), 'tail'), 'v', 0 ],
		{ detail => qr/Code record: tail = 0, but radius \d+ and 1 leading columns imply 48/ } ],
	# extra 0 is what a development version of 1.6 wrote: its own error
	[ 't_code_idx', 'extra 16 -> 0', [ code_off($m->('t_code_idx'), 'extra'), 'v', 0 ],
		{ message => qr/index "t_code_idx" was built by a development version of simhash 1\.6/, sqlstate => '55000' } ],
);

sub restore_file
{
	my ($idx) = @_;
	open(my $fh, '>', $file{$idx}) or die "open $file{$idx}: $!";
	binmode $fh;
	print $fh $pristine{$idx};
	close $fh or die "close: $!";
	return;
}

sub patch_file
{
	my ($idx, @patches) = @_;
	open(my $fh, '+<', $file{$idx}) or die "open $file{$idx}: $!";
	binmode $fh;
	for my $p (@patches)
	{
		my ($off, $fmt, $value) = @$p;
		sysseek($fh, $off, 0) or die "seek: $!";
		my $bytes = pack($fmt, $value);
		syswrite($fh, $bytes) == length($bytes) or die "write: $!";
	}
	close $fh or die "close: $!";
	return;
}

# psql with verbose errors: the SQLSTATE, message and detail
sub try_sql
{
	my ($sql) = @_;
	my ($stdout, $stderr) = ('', '');
	my $rc = $node->psql('postgres', $sql, stdout => \$stdout, stderr => \$stderr,
		on_error_stop => 1, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return ($rc, $stdout, $stderr);
}

my %damaged_fields;
for my $sc (@SCENARIOS)
{
	my ($idx, $name, @rest) = @$sc;
	my $opts = pop @rest;
	my $what = "$idx, $name";
	patch_file($idx, @rest);
	my $log_start = -s $node->logfile;
	$node->start;

	my $state = $opts->{sqlstate} // 'XX002';
	my $message = $opts->{message} // qr/index "$idx" contains a corrupted page at block 0/;
	my ($rc, $out, $err) = try_sql("SELECT * FROM simhash_perm_check('$idx')");
	like($err, qr/ERROR:  $state: /, "$what: simhash_perm_check($idx) fails with $state");
	like($err, $message, "$what: naming the index");
	like($err, $opts->{detail}, "$what: and the field, its value and what the others imply")
	  if $opts->{detail};
	like($err, qr/HINT:  (Please )?REINDEX it\./, "$what: with the hint to REINDEX");

	($rc, $out, $err) = try_sql($INDEX_ONLY . $QUERY{$idx});
	if ($opts->{query_ok})
	{
		is($rc == 0 ? $out : $err, $truth{$idx}, "$what: the query, which does not read the field, answers right");
	}
	else
	{
		like($err, qr/ERROR:  $state: /, "$what: a query through the index fails with $state instead of answering");
	}
	unlike(slurp_file($node->logfile, $log_start), qr/terminated by signal|PANIC|server process .* exited/,
		"$what: no backend crashed");
	$node->stop;
	restore_file($idx);
	$damaged_fields{$idx}++;
}

# An index built before simhash 1.6: its metapage ends at the growth
# record (64-bit) or the code record (bit(n)), with no store record (the
# pages of the store are then reached by nothing, as an earlier version's
# index has none).  It answers what its pages hold; the planner leaves it
# out of the ordered scans that would need the list of rows without a code
# or the code store, the inspection functions say REINDEX brings them, and
# REINDEX does.
my %OLD_ORDER = (
	f_idx => q{SELECT id FROM f ORDER BY fp <-> pseudo_fp(3)},
	w_idx => q{SELECT id FROM w ORDER BY code <-> code(3) LIMIT 10});
for my $idx (sort keys %OLD_ORDER)
{
	my $end = $idx eq 'f_idx' ?
	  growth_off($meta{$idx}, 'magic') + $GROWTH_SIZE :
	  code_off($meta{$idx}, 'magic') + $CODE_SIZE;
	patch_file($idx, [ 12, 'v', $end ]);
	$node->start;
	is($node->safe_psql('postgres', $INDEX_ONLY . $QUERY{$idx}), $truth{$idx},
		"$idx as built before 1.6: its radius query answers like a sequential scan");
	unlike($node->safe_psql('postgres', "$INDEX_ONLY EXPLAIN (COSTS OFF) " . $OLD_ORDER{$idx}),
		qr/Index Scan using $idx/, "$idx as built before 1.6: not planned for ORDER BY");
	my ($rc, $out, $err) = try_sql("SELECT count(*) FROM simhash_perm_info('$idx')");
	like($err, qr/NOTICE:  00000: index "$idx" was built before simhash 1\.6/,
		"$idx as built before 1.6: simhash_perm_info says so");
	like($err, qr/HINT:  REINDEX the index\./, "$idx as built before 1.6: and that REINDEX brings it");
	($rc, $out, $err) = try_sql("SELECT count(*) FROM simhash_perm_check('$idx') WHERE table_no >= 0");
	is($rc, 0, "$idx as built before 1.6: passes the check");
	like($err, qr/was built before simhash 1\.6/, "$idx as built before 1.6: which says so too");
	$node->safe_psql('postgres', "REINDEX INDEX $idx");
	like($node->safe_psql('postgres', "$INDEX_ONLY EXPLAIN (COSTS OFF) " . $OLD_ORDER{$idx}),
		qr/Index Scan using $idx/, "$idx: after REINDEX, planned for ORDER BY again");
	$node->stop;
}

# every index is whole again, and was damaged in several ways
$node->start;
for my $idx (sort keys %QUERY)
{
	cmp_ok($damaged_fields{$idx} // 0, '>=', 2, "$idx: damaged in several scenarios");
	is($node->safe_psql('postgres', "SELECT count(*) > 0 FROM simhash_perm_check('$idx', true)"),
		't', "$idx: passes the check once its file is put back");
	is($node->safe_psql('postgres', $INDEX_ONLY . $QUERY{$idx}), $truth{$idx},
		"$idx: and answers like a sequential scan");
}
$node->stop;
done_testing();
