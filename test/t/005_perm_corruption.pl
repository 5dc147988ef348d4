# simhash_perm on a damaged index: every statement ends in an ERROR or a
# correct answer.  No server crash, no hang past statement_timeout, no wrong
# answer; REINDEX heals.
#
# A table of about 4300 fingerprints (distinct ones, near variants of a few,
# a run of duplicates, NULLs, dead rows) gets a simhash_perm index whose
# tables have height 2.  The cluster is stopped and its data directory
# kept.  For each scenario the data directory is put back as it was (every
# file that differs from the kept copy, so the heap, the catalogs and the
# index's relfilenode come back too), bytes of the index file are
# overwritten (metapage fields, page headers, special space, links, heap
# TIDs of leaves, whole pages zeroed), and the server is started.  Then,
# each in a psql call of its own, the reads first (so that they see the
# damage as it was made):
# index queries for k = 0, 3, 6, 9 through an index scan and a bitmap scan,
# and nearest neighbours (ORDER BY fp <-> q with LIMIT 1, 10, 1000 and
# none), compared with the sequential scan's answers taken before any damage;
# simhash_perm_info(), compared with its output before the damage;
# simhash_perm_check() without and with heapallindexed, if installed (it
# must report the damage, but for the dead rows' TIDs that heapallindexed
# counts in a NOTICE, below); then the writes: an INSERT (its rows must then
# be found through the index); a DELETE that finds its rows through the
# index (it must delete exactly those); VACUUM; simhash_perm_info() again
# (each table must hold the live rows).  The postmaster must not have
# restarted and the log must show no crash.  Finally REINDEX, after which
# the index must answer like a sequential scan and reach every row.
#
# A statement may fail with any ERROR: the test prints the SQLSTATE, the
# message and the detail of each one (the goal is XX002, index_corrupted;
# XX001 comes from the buffer manager, 57014 means only statement_timeout
# ended a loop).  A crash, a FATAL, a psql call still running HANG_SECONDS
# after it started, a wrong answer, a damage simhash_perm_check() does not
# report, or an index that REINDEX does not heal fails the scenario.  A
# table of outcomes, scenario by operation, is printed at the end.
#
#   make prove_installcheck PROVE_TESTS=test/t/005_perm_corruption.pl PROVE_FLAGS=-v
#
# shows the table; SIMHASH_SCENARIOS=regex in the environment runs only
# the scenarios whose names match.
#
# A second cluster, with data checksums, runs a few of the scenarios: a
# damaged page then fails its checksum in the buffer manager, but a zeroed
# page passes as a new page and reaches the index code.
#
# The plain simhash_perm_check(index) must name each damage to heap TIDs
# that it can see without reading a row (check_says).  Five more scenarios
# damage the heap TIDs of codes_idx, an index of bit(64) codes with a code
# store, in the same cluster: only the checks run on them (the plain one
# must name the damage, heapallindexed must fail too), then REINDEX.
#
# Offsets are those of src/perm.h on a little-endian machine with 8 kB
# pages; the test checks them against the pristine index (magic, page_id,
# flags, levels, roots, prefixes as simhash_perm_info() reports them, and
# the bytes pageinspect reads) before damaging anything.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;
use File::Copy qw(copy);
use File::Find qw(find finddepth);
use File::Spec;
use Time::HiRes qw(time);

my $STATEMENT_TIMEOUT = 5;	# seconds, for every session of the test
my $HANG_SECONDS = 15;		# a psql call running this long is a hang

my $BLCKSZ = 8192;

# PermMetaPageData, at PageGetContents() = MAXALIGN(SizeOfPageHeaderData)
my $PERM_MAGIC = 0x53484D50;
my %META = (
	magic => 24,
	version => 28,
	max_distance => 32,
	blocks => 34,
	ntables => 36,
	algorithm => 38,
	block_of_bit => 40,
	tables => 104);
# PermTable: uint8 bits[64], uint8 prefix_bits, BlockNumber root (4-aligned),
# uint16 root_level; sizeof = 76
my $TABLE_SIZE = 76;
my %TABLE = (bits => 0, prefix_bits => 64, root => 68, root_level => 72);
sub meta_table_off { my ($t, $field) = @_; return $META{tables} + $t * $TABLE_SIZE + $TABLE{$field}; }

# Page header (PageHeaderData)
my %HDR = (pd_lower => 12, pd_upper => 14, pd_special => 16);

# PermPageOpaqueData: 42 bytes, MAXALIGNed to 48 at the end of the page.
# page_id is at special + 40; the page's last 6 bytes are padding.
my $SPECIAL = $BLCKSZ - 48;
my %OPQ = (
	hikey => 0,
	lokey => 8,
	rightlink => 16,
	flags => 20,
	table => 22,
	level => 24,
	nentries => 26,
	nsorted => 28,
	key_bytes => 30,
	block_bytes => 31,
	off_bytes => 32,
	hikey_tid => 34,
	page_id => 40);
sub opq_off { return $SPECIAL + $OPQ{ $_[0] }; }
my $PERM_PAGE_ID = 0xFF8A;
my ($PERM_META, $PERM_LEAF, $PERM_INTERNAL, $PERM_ROOT) = (1, 2, 4, 8);
my $PERM_KEY_OFFSET = 32;	# leaves: keys stored as offsets from lokey
my ($PERM_STORE, $PERM_STORE_NULLS) = (0x80, 0x100);	# pages of the code store
my $MAX_HEAP_TUPLES = 291;	# MaxHeapTuplesPerPage, 8 kB pages

# Internal pages: 18-byte downlinks (key 8, TID 6, child 4) from offset 24
my $ENTRIES = 24;
my $DOWNLINK_SIZE = 18;
sub downlink_child_off { return $ENTRIES + $_[0] * $DOWNLINK_SIZE + 14; }

my $NOT_A_BLOCK = 0xFFFFFFFF;

#
# The data and the operations
#

# The query fingerprints: distinct rows, the duplicated one (77), bases of
# near variants, a deleted row (3050) and one absent from the table.
my @QUERY_IDS = (1, 77, (map { $_ * 100 } 1 .. 12), 2500, 3050, 3999, 987654);
my $QUERIES = 'VALUES ' . join(', ', map { "($_, pseudo_fp($_))" } @QUERY_IDS);
my @KS = (0, 3, 6, 9);

my $SETUP_SQL = $PSEUDO_FP_SQL . q{
	CREATE TABLE docs (id int, fp simhash64);
	INSERT INTO docs SELECT g, pseudo_fp(g) FROM generate_series(1, 4000) g;
	-- a run of one fingerprint
	INSERT INTO docs SELECT 5000 + g, pseudo_fp(77) FROM generate_series(1, 40) g;
	-- variants of twelve bases at distance 1 .. 10, so every k has answers
	INSERT INTO docs
	SELECT 100000 + b * 100 + d,
	       (pseudo_fp(b)::bigint #
	        (SELECT bit_or(1::bigint << ((b + 23 * j) % 64)) FROM generate_series(1, d) j))::simhash64
	  FROM generate_series(100, 1200, 100) b, generate_series(1, 10) d;
	INSERT INTO docs SELECT 6000 + g, NULL FROM generate_series(1, 6) g;
	CREATE INDEX docs_idx ON docs USING simhash_perm (fp);
	-- dead rows, so that VACUUM has index entries to remove, and one
	-- without a fingerprint (6006), which has none; where they lay
	CREATE TABLE dead_tids AS
	  SELECT id, ctid::text AS tid FROM docs WHERE id BETWEEN 3001 AND 3100 OR id = 6006;
	DELETE FROM docs WHERE id BETWEEN 3001 AND 3100 OR id = 6006;
	-- bit(64) codes, whose index has a code store, and NULL codes
	CREATE TABLE codes (id int, code bit(64));
	INSERT INTO codes SELECT g, pseudo_fp(g)::bigint::bit(64) FROM generate_series(1, 2000) g;
	INSERT INTO codes SELECT 10000 + g, NULL FROM generate_series(1, 5) g;
	CREATE INDEX codes_idx ON codes USING simhash_perm (code);
};

# Answers for radius k, one line per query fingerprint
sub answers_sql
{
	my ($k) = @_;
	return qq{
	SELECT q.i, coalesce((SELECT string_agg(d.id::text, ',' ORDER BY d.id)
	                        FROM docs d WHERE hamming_near(d.fp, q.fp, $k)), '-')
	  FROM ($QUERIES) q(i, fp) ORDER BY q.i};
}
# Nearest neighbours: for LIMIT 1, 10 and 1000, and without LIMIT (which
# reads the rows without a fingerprint last) for three of the queries, one
# line per query with the distances in the order returned, recomputed from
# the rows themselves, and how many rows came more than once.  Ties make
# the ids at a LIMIT's edge arbitrary, so the ids themselves are not shown.
my @KNN_LIMITS = (1, 10, 1000, 'ALL');
my @KNN_ALL_IDS = (1, 77, 987654);
sub knn_sql
{
	my @parts;
	for my $l (@KNN_LIMITS)
	{
		my $where = $l eq 'ALL' ? 'WHERE q.i IN (' . join(', ', @KNN_ALL_IDS) . ')' : '';
		push @parts, qq{SELECT '$l' AS l, q.i, s.dists, s.dup FROM ($QUERIES) q(i, fp),
	  LATERAL (SELECT string_agg(coalesce(dist::text, 'N'), ',' ORDER BY ord) AS dists,
	                  count(*) - count(DISTINCT id) AS dup
	             FROM (SELECT id, fp <-> q.fp AS dist, row_number() OVER () AS ord
	                     FROM (SELECT id, fp FROM docs ORDER BY fp <-> q.fp LIMIT $l) x) y) s
	  $where};
	}
	return join(' UNION ALL ', @parts) . ' ORDER BY 1, 2';
}
my $KNN_SQL = knn_sql();

my $SEQSCAN = 'SET enable_indexscan = off; SET enable_bitmapscan = off;';
my $INDEXSCAN = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $BITMAPSCAN = 'SET enable_seqscan = off; SET enable_indexscan = off;';

# 31 new rows: one more of the run of pseudo_fp(77) (into the leaf that the
# scenarios damage), and 30 spread over the key space
my $NEW_ROWS = q{(SELECT 700000 AS id, pseudo_fp(77) AS fp
	 UNION ALL SELECT g, pseudo_fp(g) FROM generate_series(700001, 700030) g)};
my $INSERT_SQL = "INSERT INTO docs SELECT * FROM $NEW_ROWS n";
my $INSERT_FOUND_SQL = "$INDEXSCAN SELECT count(*) FROM $NEW_ROWS n
	WHERE EXISTS (SELECT 1 FROM docs d WHERE hamming_near(d.fp, n.fp, 0) AND d.id = n.id)";
# a DELETE that finds its rows through the index, five of them in the run
my $DELETE_SQL = "$INDEXSCAN WITH x AS (
	DELETE FROM docs d
	 USING (SELECT g AS id, pseudo_fp(g) AS fp FROM generate_series(11, 15) g
	        UNION ALL SELECT g, pseudo_fp(77) FROM generate_series(5001, 5005) g) x
	 WHERE hamming_near(d.fp, x.fp, 0) AND d.id = x.id
	 RETURNING d.id)
	SELECT string_agg(id::text, ',' ORDER BY id) FROM x";
my $DELETE_EXPECTED = '11,12,13,14,15,5001,5002,5003,5004,5005';
my $VACUUM_SQL = 'VACUUM (INDEX_CLEANUP ON) docs';
my $INFO_SQL = "SELECT * FROM simhash_perm_info('docs_idx') ORDER BY table_no";
# after the writes: the layout, and whether each table holds the live rows
my $INFO2_SQL = q{SELECT table_no, radius, prefix_bits, prefix, blocks,
	entries = (SELECT count(fp) FROM docs) FROM simhash_perm_info('docs_idx') ORDER BY table_no};
my @CHECK_SQL = (
	[ chk => "SELECT * FROM simhash_perm_check('docs_idx')" ],
	[ chkx => "SELECT * FROM simhash_perm_check('docs_idx', true)" ]);
# every row is found through the index by its own fingerprint
my $REACH_SQL = "$INDEXSCAN SELECT count(*) FILTER (WHERE NOT EXISTS
	(SELECT 1 FROM docs d2 WHERE hamming_near(d2.fp, d.fp, 0) AND d2.id = d.id))
	FROM docs d WHERE d.fp IS NOT NULL";
my $ALL_ANSWERS_SQL = join(' UNION ALL ', map { "SELECT $_, * FROM (" . answers_sql($_) . ") a$_" } @KS)
  . ' ORDER BY 1, 2';

my @COLUMNS = ((map { "i$_" } @KS), (map { "b$_" } @KS),
	qw(knn info chk chkx ins insf del vac info2 srv rdx));

#
# Scenarios: [ name, [ block, offset, pack format, value ] ... ] or
# [ name, 'zero', block ].  Blocks: meta, root (table 0's root, an internal
# page), leaf (the leaf of table 0 holding the run of pseudo_fp(77)), left
# (its left sibling), t1root (table 1's root), t1leaf (a leaf of table 1);
# nblocks is the length of the index.  A value may be a code reference,
# called with the page map.
#
my @SCENARIOS = (
	# metapage
	[ meta_magic => [ 'meta', $META{magic}, 'V', 0xDEADBEEF ] ],
	[ meta_version_2 => [ 'meta', $META{version}, 'V', 2 ] ],
	[ meta_ntables_0 => [ 'meta', $META{ntables}, 'v', 0 ] ],
	[ meta_ntables_65 => [ 'meta', $META{ntables}, 'v', 65 ] ],
	[ meta_ntables_65535 => [ 'meta', $META{ntables}, 'v', 65535 ] ],
	[ meta_blocks_0 => [ 'meta', $META{blocks}, 'v', 0 ] ],
	[ meta_blocks_1 => [ 'meta', $META{blocks}, 'v', 1 ] ],
	[ meta_blocks_200 => [ 'meta', $META{blocks}, 'v', 200 ] ],
	[ meta_max_distance_99 => [ 'meta', $META{max_distance}, 'v', 99 ] ],
	[ meta_root_beyond_end => [ 'meta', meta_table_off(0, 'root'), 'V', sub { $_[0]{nblocks} } ] ],
	[ meta_root_0 => [ 'meta', meta_table_off(0, 'root'), 'V', 0 ] ],
	[ meta_root_other_table => [ 'meta', meta_table_off(0, 'root'), 'V', sub { $_[0]{t1root} } ] ],
	[ meta_root_level_1000 => [ 'meta', meta_table_off(0, 'root_level'), 'v', 1000 ] ],
	[ meta_prefix_bits_65 => [ 'meta', meta_table_off(0, 'prefix_bits'), 'C', 65 ] ],
	[ meta_bit_order_64 => [ 'meta', meta_table_off(0, 'bits'), 'C', 64 ] ],
	# bits[] no longer a permutation: bits[1] = bits[0]
	[ meta_bit_order_dup => [ 'meta', meta_table_off(0, 'bits') + 1, 'C', sub { $_[0]{t0bits}[0] } ] ],
	[ meta_block_of_bit_99 => [ 'meta', $META{block_of_bit}, 'C', 99 ] ],

	# page headers.  pd_lower > pd_upper fails PageIsVerified() (XX001 in
	# the buffer manager); pd_special = 8152 passes it and shrinks the
	# special space by 8 bytes; a short pd_lower passes it and disagrees
	# with nentries.
	[ leaf_pd_lower_past_upper => [ 'leaf', $HDR{pd_lower}, 'v', $SPECIAL + 16 ] ],
	[ leaf_pd_lower_short => [ 'leaf', $HDR{pd_lower}, 'v', $ENTRIES + 100 ] ],
	[ leaf_pd_lower_past_page => [ 'leaf', $HDR{pd_lower}, 'v', 9000 ] ],
	[ leaf_pd_special_8152 => [ 'leaf', $HDR{pd_special}, 'v', $SPECIAL + 8 ] ],
	[ leaf_page_id => [ 'leaf', opq_off('page_id'), 'v', 0x1234 ] ],
	[ internal_pd_lower_past_upper => [ 'root', $HDR{pd_lower}, 'v', $SPECIAL + 16 ] ],
	[ internal_pd_lower_short => [ 'root', $HDR{pd_lower}, 'v', $ENTRIES + 2 * $DOWNLINK_SIZE ] ],
	[ internal_pd_lower_past_page => [ 'root', $HDR{pd_lower}, 'v', 9000 ] ],
	[ internal_pd_special_8152 => [ 'root', $HDR{pd_special}, 'v', $SPECIAL + 8 ] ],
	[ internal_page_id => [ 'root', opq_off('page_id'), 'v', 0x1234 ] ],

	# special space
	[ leaf_flags_internal => [ 'leaf', opq_off('flags'), 'v', $PERM_INTERNAL ] ],
	[ leaf_flags_0 => [ 'leaf', opq_off('flags'), 'v', 0 ] ],
	[ internal_flags_leaf => [ 'root', opq_off('flags'), 'v', $PERM_LEAF | $PERM_ROOT ] ],
	[ internal_flags_key_offset => [ 'root', opq_off('flags'), 'v', $PERM_INTERNAL | $PERM_ROOT | $PERM_KEY_OFFSET ] ],
	[ leaf_level_1 => [ 'leaf', opq_off('level'), 'v', 1 ] ],
	[ internal_level_7 => [ 'root', opq_off('level'), 'v', 7 ] ],
	[ leaf_table_2 => [ 'leaf', opq_off('table'), 'v', 2 ] ],
	[ leaf_nentries_ffff => [ 'leaf', opq_off('nentries'), 'v', 0xFFFF ] ],
	[ internal_nentries_ffff => [ 'root', opq_off('nentries'), 'v', 0xFFFF ] ],
	[ leaf_nsorted_gt_nentries => [ 'leaf', opq_off('nsorted'), 'v', sub { $_[0]{leaf_nentries} + 10 } ] ],
	[ leaf_key_bytes_9 => [ 'leaf', opq_off('key_bytes'), 'C', 9 ] ],
	[ leaf_block_bytes_0 => [ 'leaf', opq_off('block_bytes'), 'C', 0 ] ],
	[ leaf_block_bytes_7 => [ 'leaf', opq_off('block_bytes'), 'C', 7 ] ],
	[ leaf_off_bytes_3 => [ 'leaf', opq_off('off_bytes'), 'C', 3 ] ],
	[ leaf_hikey_0 => [ 'leaf', opq_off('hikey'), 'Q<', 0 ] ],
	[ leaf_lokey_max => [ 'leaf', opq_off('lokey'), 'Q<', ~0 ] ],

	# links
	[ leaf_rightlink_self => [ 'leaf', opq_off('rightlink'), 'V', sub { $_[0]{leaf} } ] ],
	[ leaf_rightlink_backwards => [ 'leaf', opq_off('rightlink'), 'V', sub { $_[0]{left} } ] ],
	[ leaf_rightlink_beyond_end => [ 'leaf', opq_off('rightlink'), 'V', sub { $_[0]{nblocks} } ] ],
	[ leaf_rightlink_0 => [ 'leaf', opq_off('rightlink'), 'V', 0 ] ],
	[ internal_downlink_self => [ 'root', sub { downlink_child_off($_[0]{leaf_slot}) }, 'V', sub { $_[0]{root} } ] ],
	[ internal_downlink_0 => [ 'root', sub { downlink_child_off($_[0]{leaf_slot}) }, 'V', 0 ] ],
	[ internal_downlink_beyond_end => [ 'root', sub { downlink_child_off($_[0]{leaf_slot}) }, 'V', sub { $_[0]{nblocks} } ] ],
	# to table 1's root: level 1 where a leaf (level 0) is expected
	[ internal_downlink_wrong_level => [ 'root', sub { downlink_child_off($_[0]{leaf_slot}) }, 'V', sub { $_[0]{t1root} } ] ],
	# to a leaf of table 1: the right level, the wrong table
	[ internal_downlink_other_table => [ 'root', sub { downlink_child_off($_[0]{leaf_slot}) }, 'V', sub { $_[0]{t1leaf} } ] ],

	# every downlink of table 0's root leads to one leaf: a descent for a
	# key left of it lands to its right, and must not miss what lies between
	[ internal_downlinks_all_one => 'patches', sub {
		my ($ctx) = @_;
		return map { [ 'root', downlink_child_off($_), 'V', $ctx->{leaf} ] } 0 .. $ctx->{root_nentries} - 1;
	} ],

	# one bit of a stored key flipped (the lowest bit of the first entry of
	# the leaf): no page check can see it.  The rows a scan returns are
	# rechecked against their own fingerprints, so the damaged entry can
	# hide its row (only simhash_perm_check with heapallindexed notices),
	# but never return a wrong row, a wrong distance or a row twice.
	[ leaf_key_bit_flip => 'patches', sub {
		my ($ctx) = @_;
		return ([ 'leaf', $ENTRIES, 'C', $ctx->{leaf_first_key_byte} ^ 1 ]);
	}, { hides_rows => 1 } ],

	# heap TIDs that the plain simhash_perm_check(index) finds wrong without
	# reading a row (check_says: the message it must give, as XX002):
	# a live row's TID in table 0 pointing past the table's end (index
	# scans fail to read the block; a bitmap scan skips blocks past the
	# end, which hides the row); a dead row's TID copied over another dead
	# row's in table 0 (a TID twice in one table); a dead row's entry
	# removed from table 1 (one entry fewer than table 0); a dead row's TID
	# in table 1 replaced by that of a dead row without a fingerprint
	# (table 1 holds a TID that table 0 lacks, with as many entries).  Dead
	# rows keep every answer right, and VACUUM removes them everywhere.
	# prepare() finds the entries and says what it writes.
	[ leaf_tid_past_heap_end => 'patches', sub { @{ $_[0]{patch_past_end} } },
	  { hides_rows => 1, check_says => qr/Table 0: Entry \d+ points to heap TID \(\d+,\d+\), past the end of table "docs" \(\d+ blocks\)/ } ],
	[ leaf_tid_twice => 'patches', sub { @{ $_[0]{patch_twice} } },
	  { check_says => qr/holds heap TID \(\d+,\d+\) twice in table 0 \(Leaf entries: block \d+ entry \d+, block \d+ entry \d+\.\)/ } ],
	#
	# The last two touch only dead rows' entries, which is also what an
	# insert that failed part-way or a VACUUM that stopped leaves: the check
	# with heapallindexed, which finds every row in every table, passes and
	# counts the TIDs in some tables only in a NOTICE (partial_notice).
	[ t1leaf_entry_removed => 'patches', sub { @{ $_[0]{patch_removed} } },
	  { info_counts => 1, check_says => qr/holds \d+ entries in table 1 but \d+ in table 0/,
	    partial_notice => qr/NOTICE:\s+\d+: index "docs_idx" holds 1 heap TID in some of its tables only/ } ],
	[ t1leaf_tid_not_in_t0 => 'patches', sub { @{ $_[0]{patch_not_in_t0} } },
	  { check_says => qr/holds heap TID \(\d+,\d+\) in table (?:1 but not in table 0|0 but not in table 1)/,
	    partial_notice => qr/NOTICE:\s+\d+: index "docs_idx" holds 2 heap TIDs in some of its tables only/ } ],

	# zeroed pages
	[ zero_leaf => 'zero', 'leaf' ],
	[ zero_internal => 'zero', 'root' ],
	[ zero_meta => 'zero', 'meta' ]);

# with data checksums
my @CHECKSUM_SCENARIOS = qw(zero_leaf zero_internal zero_meta leaf_nentries_ffff
  leaf_rightlink_self internal_downlink_self meta_ntables_65535);

# Damage to heap TIDs of codes_idx, an index of bit(64) codes with a code
# store, seen by the checker alone (its queries' reads of the store are
# tested by 010_wide_codes.pl): [ name, page, code returning the offset in
# the page and the bytes to write there, what simhash_perm_check(index)
# must say ].  Pages: store_codes, store_nulls (the first page of each
# chain of the store), codes_leaf (a leaf of table 0).  A TID in the store
# is the entry's last 6 bytes: block high and low halves, offset.
my @STORE_SCENARIOS = (
	[ store_tid_past_heap_end => 'store_codes',
	  sub { ($_[0]{store_tid_at}->(1), pack('vvv', 1, 0, 1)) },
	  qr/Entry 1 of the code store's chain of codes points to heap TID \(65536,1\), past the end of table "codes"/ ],
	[ store_tid_offset_300 => 'store_codes',
	  sub { ($_[0]{store_tid_at}->(1) + 4, pack('v', 300)) },
	  qr/Entry 1 of the code store's chain of codes points to heap TID \(\d+,300\), past the $MAX_HEAP_TUPLES line pointers a heap page can have/ ],
	# a row both with a code and with a NULL code
	[ store_null_tid_twice => 'store_nulls',
	  sub { (24, $_[0]{store_tid0}) },
	  qr/holds heap TID \(\d+,\d+\) twice in its code store \(Entries: block \d+ entry 0 \(codes\), block \d+ entry 0 \(NULL codes\)\.\)/ ],
	# a TID of no row, within the table
	[ store_tid_not_in_t0 => 'store_codes',
	  sub { ($_[0]{store_tid_at}->(1), pack('vvv', 0, 0, 250)) },
	  qr/holds heap TID \(\d+,\d+\) in (?:its code store but not in table 0|table 0 but not in its code store)/ ],
	# the page's range of TIDs (lokey, hikey: the first 16 bytes of the
	# special space, the last 48 bytes of the page), by which a TID's code
	# is found: a range that no longer holds the page's entries
	[ store_range_shrunk => 'store_codes',
	  sub { (8192 - 48, pack('V', 1) . pack('V', 0)) },
	  qr/Entry \d+ of the code store holds heap TID \(\d+,\d+\), outside the page's range of TIDs/ ],
	[ codes_leaf_tid_offset_0 => 'codes_leaf',
	  sub { @{ $_[0]{codes_leaf_off0} } },
	  qr/Table 0: Entry 1 points to heap TID \(\d+,0\), whose offset 0 is no row's/ ]);

# SIMHASH_SCENARIOS=regex runs only the scenarios whose name matches
if (defined $ENV{SIMHASH_SCENARIOS})
{
	@SCENARIOS = grep { $_->[0] =~ /$ENV{SIMHASH_SCENARIOS}/ } @SCENARIOS;
	@CHECKSUM_SCENARIOS = grep { /$ENV{SIMHASH_SCENARIOS}/ } @CHECKSUM_SCENARIOS;
	@STORE_SCENARIOS = grep { $_->[0] =~ /$ENV{SIMHASH_SCENARIOS}/ } @STORE_SCENARIOS;
}

#
# Files
#

sub read_block
{
	my ($file, $blkno) = @_;
	open(my $fh, '<', $file) or die "could not open $file: $!";
	binmode $fh;
	sysseek($fh, $blkno * $BLCKSZ, 0) or die "seek: $!";
	my $n = sysread($fh, my $page, $BLCKSZ);
	die "short read of block $blkno of $file" unless defined $n && $n == $BLCKSZ;
	close $fh;
	return $page;
}

sub u8 { return unpack('C', substr($_[0], $_[1], 1)); }
sub u16 { return unpack('v', substr($_[0], $_[1], 2)); }
sub u32 { return unpack('V', substr($_[0], $_[1], 4)); }
sub u64 { return unpack('Q<', substr($_[0], $_[1], 8)); }

# an unsigned little-endian number of 1 to 8 bytes, and back
sub le_value { return unpack('Q<', $_[0] . ("\0" x (8 - length($_[0])))); }
sub le_bytes { return substr(pack('Q<', $_[0]), 0, $_[1]); }

# The entries of a leaf (permleaf.h): for each, its key as stored, its heap
# TID, and where its TID lies in the page, in the page's format
sub leaf_entries
{
	my ($page) = @_;
	my ($kb, $bb, $ob, $eb) = map { u8($page, opq_off('key_bytes') + $_) } 0 .. 3;
	my $esize = $kb + $bb + $ob + $eb;
	my @e;
	for my $i (0 .. u16($page, opq_off('nentries')) - 1)
	{
		my $p = $ENTRIES + $i * $esize;
		push @e, {
			i => $i, pos => $p, esize => $esize, key => le_value(substr($page, $p, $kb)),
			blk => le_value(substr($page, $p + $kb, $bb)),
			off => le_value(substr($page, $p + $kb + $bb, $ob)),
			tidpos => $p + $kb, bb => $bb, ob => $ob };
	}
	return @e;
}

# Entries of a list of leaves whose TID may change without breaking the
# order of (key, TID): not first or last in a sorted leaf, between
# neighbours of other keys; and of those, the ones $want accepts
sub movable_entries
{
	my ($file, $blocks, $want) = @_;
	my @found;
	for my $blk (@$blocks)
	{
		my $page = read_block($file, $blk);
		next unless u16($page, opq_off('nsorted')) == u16($page, opq_off('nentries'));
		my @e = leaf_entries($page);
		for my $i (1 .. $#e - 1)
		{
			next unless $e[ $i - 1 ]{key} < $e[$i]{key} && $e[$i]{key} < $e[ $i + 1 ]{key};
			push @found, { %{ $e[$i] }, blkno => $blk } if $want->($e[$i]);
		}
	}
	return @found;
}

sub write_bytes
{
	my ($file, $pos, $bytes) = @_;
	open(my $fh, '+<', $file) or die "could not open $file: $!";
	binmode $fh;
	seek($fh, $pos, 0) or die "seek: $!";
	my $n = syswrite($fh, $bytes);
	die "short write to $file" unless defined $n && $n == length($bytes);
	close $fh or die "close: $!";
	return;
}

# Make the directory $to equal to $from: copy every file whose contents
# differ, remove what $from does not have.  (Comparing contents, not
# modification times: a file the server rewrote within the same second
# would otherwise be missed.)
sub sync_tree
{
	my ($from, $to) = @_;
	my %keep;
	find(
		{
			no_chdir => 1,
			wanted => sub {
				my $src = $File::Find::name;
				my $rel = File::Spec->abs2rel($src, $from);
				my $dst = "$to/$rel";
				$keep{$rel} = 1;
				my $mode = (stat $src)[2] & 07777;
				if (-d $src)
				{
					mkdir($dst, $mode) or die "mkdir $dst: $!" unless -d $dst;
					return;
				}
				return
				  if -f $dst
				  && -s $dst == -s $src
				  && slurp_file($dst) eq slurp_file($src);
				copy($src, $dst) or die "copy $src: $!";
				chmod($mode, $dst);
			}
		},
		$from);
	finddepth(
		{
			no_chdir => 1,
			wanted => sub {
				my $rel = File::Spec->abs2rel($File::Find::name, $to);
				return if $rel eq '.' || $keep{$rel};
				if (-d $File::Find::name) { rmdir($File::Find::name) or die "rmdir: $!"; }
				else { unlink($File::Find::name) or die "unlink: $!"; }
			}
		},
		$to);
	return;
}

#
# Running statements
#

# Run one psql call; classify its end: ok, WRONG (a result other than
# $expect), ERROR (with sqlstate and message), FATAL, CRASH, HANG.  $r->{detail}
# says what went wrong in one line.
sub run_op
{
	my ($node, $sql, $expect) = @_;
	my ($stdout, $stderr, $timed_out) = ('', '', 0);
	my $logpos = -s $node->logfile;
	my $t0 = time;
	my $ret = $node->psql(
		'postgres', $sql,
		stdout => \$stdout,
		stderr => \$stderr,
		timeout => $HANG_SECONDS,
		timed_out => \$timed_out,
		on_error_stop => 1,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	my %r = (seconds => time - $t0, out => $stdout, err => $stderr);
	if ($timed_out)
	{
		$r{kind} = 'HANG';
		$r{detail} = sprintf('still running after %.0f s', $r{seconds});
	}
	elsif ($stderr =~ /server closed the connection unexpectedly|connection to server was lost|\bPANIC:/)
	{
		$r{kind} = 'CRASH';
		# the postmaster logs the death of a backend after its client
		# has seen the connection close
		my @why;
		for (1 .. 50)
		{
			my $log = slurp_file($node->logfile, $logpos);
			@why = ($log =~ /\b(PANIC:.*|TRAP:.*|terminated by signal.*)/g);
			last if @why;
			Time::HiRes::sleep(0.1);
		}
		$r{detail} = @why ? join('; ', @why) : first_line($stderr);
		if ($stderr =~ /\bFATAL:\s+([0-9A-Z]{5}):\s*(.*)/ && !@why)
		{
			# the backend ended its session itself: no crash, but no ERROR
			$r{kind} = 'FATAL';
			$r{detail} = "$1 $2";
		}
	}
	elsif ($stderr =~ /\bERROR:\s+([0-9A-Z]{5}):\s*(.*)/)
	{
		$r{kind} = 'ERROR';
		($r{code}, $r{msg}) = ($1, $2);
		$r{detail} = "$1 $2";
		$r{detail} .= " ($1)" if $stderr =~ /^DETAIL:\s+(.*)/m;
	}
	elsif ($ret != 0)
	{
		$r{kind} = 'FAILED';
		$r{detail} = "psql exit code $ret: " . first_line($stderr);
	}
	elsif (defined $expect && $stdout ne $expect)
	{
		$r{kind} = 'WRONG';
		$r{detail} = difference($stdout, $expect);
	}
	else
	{
		$r{kind} = 'ok';
	}
	return \%r;
}

sub first_line
{
	my ($s) = @_;
	$s =~ s/\n.*//s;
	return length($s) > 160 ? substr($s, 0, 160) . '...' : $s;
}

# which lines of two outputs differ, shortly
sub difference
{
	my ($got, $expected) = @_;
	my @g = split /\n/, $got, -1;
	my @e = split /\n/, $expected, -1;
	my $n = @g > @e ? scalar(@g) : scalar(@e);
	my @d = grep { ($g[$_] // '(none)') ne ($e[$_] // '(none)') } 0 .. $n - 1;
	return 'output differs' unless @d;
	my ($g, $e) = ($g[ $d[0] ] // '(none)', $e[ $d[0] ] // '(none)');
	# from a little before the first character that differs
	my $p = 0;
	$p++ while $p < length($g) && $p < length($e) && substr($g, $p, 1) eq substr($e, $p, 1);
	my $from = $p > 20 ? $p - 20 : 0;
	my $cut = sub {
		my ($t) = @_;
		return ($from ? '...' : '') . substr($t, $from, 60) . (length($t) > $from + 60 ? '...' : '');
	};
	return sprintf('%d of %d lines differ; first: got "%s", expected "%s"',
		scalar(@d), scalar(@e), $cut->($g), $cut->($e));
}

# Is a radius answer ("query|ids" lines) the truth less some rows?
sub radius_hides_only
{
	my ($got, $truth) = @_;
	my @g = split /\n/, $got;
	my @t = split /\n/, $truth;
	return 0 unless @g == @t;
	for my $i (0 .. $#t)
	{
		my ($gq, $gids) = split /\|/, $g[$i];
		my ($tq, $tids) = split /\|/, $t[$i];
		return 0 unless $gq eq $tq;
		my %want = map { $_ => 1 } split /,/, $tids;
		return 0 if grep { $_ ne '-' && !$want{$_} } split /,/, $gids;
	}
	return 1;
}

# Is a nearest-neighbour answer ("limit|query|distances|repeats" lines) the
# truth less some rows?  Then no row comes twice, the distances (recomputed
# from the rows) come in order, there are no more of them than the truth
# has, and each is at least the truth's at its place: a hidden row only
# moves the rows after it forward.
sub knn_hides_only
{
	my ($got, $truth) = @_;
	my @g = split /\n/, $got;
	my @t = split /\n/, $truth;
	return 0 unless @g == @t;
	my $num = sub { $_[0] eq 'N' ? 1e9 : $_[0] };
	for my $i (0 .. $#t)
	{
		my ($gl, $gq, $gd, $gdup) = split /\|/, $g[$i], -1;
		my ($tl, $tq, $td) = split /\|/, $t[$i], -1;
		return 0 unless $gl eq $tl && $gq eq $tq && $gdup eq '0';
		my @gd = map { $num->($_) } split /,/, $gd;
		my @td = map { $num->($_) } split /,/, $td;
		return 0 if @gd > @td;
		for my $j (0 .. $#gd)
		{
			return 0 if $gd[$j] < $td[$j] || ($j > 0 && $gd[$j] < $gd[ $j - 1 ]);
		}
	}
	return 1;
}

# Do two outputs of $INFO_SQL show the same layout (table, radius,
# prefix, blocks), whatever the counts?
sub same_layout
{
	my $layout = sub {
		return join("\n", map { my @f = split /\|/; join('|', @f[ 0 .. 3, 9 ]) } split /\n/, $_[0]);
	};
	return $layout->($_[0]) eq $layout->($_[1]);
}

sub label
{
	my ($r) = @_;
	return $r->{kind} eq 'ERROR' ? $r->{code} : $r->{kind};
}

# stop whatever is left of the server (immediate mode kills a backend stuck
# in a loop), and start it again
sub restart_node
{
	my ($node) = @_;
	$node->stop('immediate', fail_ok => 1)
	  or $node->kill9;
	$node->start;
	return;
}

#
# A cluster with the table and its index, and what the damage is computed
# from
#

sub prepare
{
	my ($name, @init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(@init);
	$node->append_conf('postgresql.conf', qq{
autovacuum = off
statement_timeout = '${STATEMENT_TIMEOUT}s'
lock_timeout = '${STATEMENT_TIMEOUT}s'
restart_after_crash = on
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION simhash');
	$node->safe_psql('postgres', $SETUP_SQL);
	my %ctx = (node => $node, name => $name, meta => 0);

	my @info = map { [ split /\|/ ] } split /\n/,
	  $node->safe_psql('postgres', $INFO_SQL);
	$ctx{info} = $node->safe_psql('postgres', $INFO_SQL);
	my $height = $info[0][4];
	cmp_ok($height, '>=', 2, "$name: the index's tables have height $height (>= 2)");
	$ctx{truth}{$_} = $node->safe_psql('postgres', $SEQSCAN . answers_sql($_)) for @KS;
	$ctx{knn_truth} = $node->safe_psql('postgres', $SEQSCAN . $KNN_SQL);
	my $found = () = $ctx{truth}{9} =~ /,/g;
	cmp_ok($found, '>', 100, "$name: the queries have answers");

	# the operations' plans use the index
	like($node->safe_psql('postgres', "$INDEXSCAN EXPLAIN (COSTS OFF) " . answers_sql(3)),
		qr/Index Scan using docs_idx/, "$name: queries use an index scan");
	like($node->safe_psql('postgres', "$BITMAPSCAN EXPLAIN (COSTS OFF) " . answers_sql(3)),
		qr/Bitmap Index Scan on docs_idx/, "$name: and a bitmap scan");
	(my $explain_delete = $DELETE_SQL) =~ s/WITH x AS/EXPLAIN (COSTS OFF) WITH x AS/;
	like($node->safe_psql('postgres', $explain_delete),
		qr/Index Scan using docs_idx/, "$name: the DELETE finds its rows through the index");

	# the undamaged index is right
	for my $k (@KS)
	{
		is(run_op($node, $INDEXSCAN . answers_sql($k), $ctx{truth}{$k})->{kind}, 'ok',
			"$name: index scan, k = $k, equals the sequential scan");
		is(run_op($node, $BITMAPSCAN . answers_sql($k), $ctx{truth}{$k})->{kind}, 'ok',
			"$name: bitmap scan, k = $k, equals the sequential scan");
	}
	like($node->safe_psql('postgres', "$INDEXSCAN EXPLAIN (COSTS OFF) $KNN_SQL"),
		qr/Index Scan using docs_idx on docs\n\s*Order By: \(fp <-> /, "$name: nearest neighbours use an ordered index scan");
	is(run_op($node, $INDEXSCAN . $KNN_SQL, $ctx{knn_truth})->{kind}, 'ok',
		"$name: nearest neighbours through the index equal the sequential scan's");
	is($node->safe_psql('postgres', $REACH_SQL), '0', "$name: every row is reachable through the index");

	# simhash_perm_check(), where installed, passes on the undamaged index
	$ctx{checks} = [];
	my $has_check = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_proc WHERE proname = 'simhash_perm_check'");
	for my $c (@CHECK_SQL)
	{
		next unless $has_check;
		my $r = run_op($node, $c->[1], undef);
		if ($r->{kind} eq 'ERROR' && $r->{code} eq '42883')
		{
			note("$name: $c->[1] does not exist: skipped");
			next;
		}
		is($r->{kind}, 'ok', "$name: $c->[1] passes on the undamaged index")
		  or diag($r->{err});
		push @{ $ctx{checks} }, $c;
	}
	note("$name: simhash_perm_check() is not installed: its operations are skipped")
	  unless $has_check;

	# the index's pages as the file holds them
	my $pgdata = $node->data_dir;
	$ctx{relpath} = $node->safe_psql('postgres', "SELECT pg_relation_filepath('docs_idx')");
	my $has_pageinspect = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_available_extensions WHERE name = 'pageinspect'");
	$node->safe_psql('postgres', 'CREATE EXTENSION pageinspect') if $has_pageinspect;
	my $fp77 = $node->safe_psql('postgres', 'SELECT pseudo_fp(77)::bigint');

	# heap TIDs ("block,offset"): the live rows' and the dead rows' ids, the
	# table's length; codes_idx, with its code store, passes the check
	my $tids = sub {
		return map { my ($t, $id) = split /\|/; $t =~ tr/()//d; ($t => $id) }
		  split /\n/, $node->safe_psql('postgres', $_[0]);
	};
	my %live = $tids->('SELECT ctid, id FROM docs');
	my %dead = $tids->('SELECT tid, id FROM dead_tids');
	my $heap_blocks = $node->safe_psql('postgres', "SELECT pg_relation_size('docs') / $BLCKSZ");
	$ctx{codes_relpath} = $node->safe_psql('postgres', "SELECT pg_relation_filepath('codes_idx')");
	$ctx{codes_check} = $node->safe_psql('postgres', "SELECT count(*) FROM simhash_perm_check('codes_idx', true)");
	is($node->safe_psql('postgres', "SELECT string_agg(entries::text, ' ' ORDER BY table_no)
		FROM simhash_perm_check('codes_idx') WHERE table_no < 0"), '5 2000',
		"$name: codes_idx has a code store of 2000 codes and 5 NULL codes");
	$node->safe_psql('postgres', 'CHECKPOINT');
	my $file = "$pgdata/$ctx{relpath}";
	if ($has_pageinspect)
	{
		my $raw = $node->safe_psql('postgres',
			"SELECT encode(get_raw_page('docs_idx', 0), 'hex') || encode(get_raw_page('docs_idx', 1), 'hex')");
		# with checksums, pd_checksum is set as the page is written
		my $fromfile = unpack('H*', read_block($file, 0) . read_block($file, 1));
		substr($raw, $_ * 2 * $BLCKSZ + 16, 4, '') for (1, 0);
		substr($fromfile, $_ * 2 * $BLCKSZ + 16, 4, '') for (1, 0);
		is($fromfile, $raw, "$name: the file holds the pages pageinspect reads");
	}
	$node->stop;
	# the extension and pageinspect stay; the pristine state is this stopped
	# data directory
	$ctx{pristine} = PostgreSQL::Test::Utils::tempdir . '/pristine';
	mkdir $ctx{pristine} or die;
	sync_tree($pgdata, $ctx{pristine});

	my $nblocks = (-s $file) / $BLCKSZ;
	$ctx{nblocks} = $nblocks;
	my $meta = read_block($file, 0);
	my @layout_ok = (
		[ 'magic', u32($meta, $META{magic}), $PERM_MAGIC ],
		[ 'version', u32($meta, $META{version}), 1 ],
		[ 'max_distance', u16($meta, $META{max_distance}), $info[0][1] ],
		[ 'blocks', u16($meta, $META{blocks}), $info[0][9] ],
		[ 'ntables', u16($meta, $META{ntables}), scalar(@info) ],
		[ 'meta pd_special', u16($meta, $HDR{pd_special}), $SPECIAL ],
		[ 'meta page_id', u16($meta, opq_off('page_id')), $PERM_PAGE_ID ],
		[ 'meta flags', u16($meta, opq_off('flags')), $PERM_META ]);
	for my $t (0 .. $#info)
	{
		my $p = u8($meta, meta_table_off($t, 'prefix_bits'));
		my @bits = map { u8($meta, meta_table_off($t, 'bits') + $_) } 0 .. 63;
		push @layout_ok, [ "table $t prefix_bits", $p, $info[$t][2] ],
		  [ "table $t prefix", join(',', @bits[ 0 .. $p - 1 ]), $info[$t][3] ],
		  [ "table $t root_level", u16($meta, meta_table_off($t, 'root_level')), $info[$t][4] - 1 ];
		$ctx{t0bits} = \@bits if $t == 0;
	}
	$ctx{root} = u32($meta, meta_table_off(0, 'root'));
	$ctx{t1root} = u32($meta, meta_table_off(1, 'root'));

	# the leaves of tables 0 and 1, from their leftmost, and table 0's root
	my %leaves;
	for my $t (0, 1)
	{
		my $blk = u32($meta, meta_table_off($t, 'root'));
		my $page = read_block($file, $blk);
		push @layout_ok,
		  [ "table $t root flags", u16($page, opq_off('flags')), $PERM_INTERNAL | $PERM_ROOT ],
		  [ "table $t root page_id", u16($page, opq_off('page_id')), $PERM_PAGE_ID ],
		  [ "table $t root pd_lower", u16($page, $HDR{pd_lower}),
			$ENTRIES + u16($page, opq_off('nentries')) * $DOWNLINK_SIZE ];
		while (u16($page, opq_off('level')) > 0)
		{
			$blk = u32($page, downlink_child_off(0));
			$page = read_block($file, $blk);
		}
		while ($blk != $NOT_A_BLOCK)
		{
			$page = read_block($file, $blk);
			push @layout_ok,
			  [ "leaf $blk flags", u16($page, opq_off('flags')) & ~$PERM_ROOT, $PERM_LEAF | $PERM_KEY_OFFSET ],
			  [ "leaf $blk table", u16($page, opq_off('table')), $t ],
			  [ "leaf $blk page_id", u16($page, opq_off('page_id')), $PERM_PAGE_ID ];
			push @{ $leaves{$t} }, { blk => $blk, hikey => u64($page, opq_off('hikey')) };
			$blk = u32($page, opq_off('rightlink'));
		}
	}
	push @layout_ok, [ 'table 0 leaves', scalar(@{ $leaves{0} }), $info[0][5] ];
	my @bad = grep { $_->[1] ne $_->[2] } @layout_ok;
	is(scalar(@bad), 0, "$name: the page layout is the one this test's offsets assume")
	  or diag(join("\n", map { "$_->[0]: $_->[1], expected $_->[2]" } @bad));
	BAIL_OUT('the page layout differs from the offsets in this test') if @bad;

	# the leaf of table 0 that holds pseudo_fp(77): its key in table 0
	my $fp = unpack('Q', pack('q', $fp77));	# as unsigned
	my $key = 0;
	$key |= (($fp >> $ctx{t0bits}[$_]) & 1) << (63 - $_) for 0 .. 63;
	my @l0 = @{ $leaves{0} };
	cmp_ok(scalar(@l0), '>=', 3, "$name: table 0 has at least 3 leaves");
	my ($i) = grep { $_ == $#l0 || $key < $l0[$_]{hikey} } 0 .. $#l0;
	if ($i == 0 || $i == $#l0)
	{
		# the damaged leaf needs neighbours on both sides
		note("$name: the run of pseudo_fp(77) is in leaf $i of table 0, at an end: damaging the middle leaf");
		$i = int(@l0 / 2);
	}
	$ctx{leaf} = $l0[$i]{blk};
	$ctx{left} = $l0[ $i - 1 ]{blk};
	$ctx{t1leaf} = $leaves{1}[1]{blk};
	my $leafpage = read_block($file, $ctx{leaf});
	$ctx{leaf_nentries} = u16($leafpage, opq_off('nentries'));
	$ctx{leaf_first_key_byte} = u8($leafpage, $ENTRIES);
	my $rootpage = read_block($file, $ctx{root});
	$ctx{root_nentries} = u16($rootpage, opq_off('nentries'));
	($ctx{leaf_slot}) = grep { u32($rootpage, downlink_child_off($_)) == $ctx{leaf} }
	  0 .. u16($rootpage, opq_off('nentries')) - 1;
	note(sprintf('%s: index of %d blocks; table 0: root %d, leaves %s; damaged leaf %d '
		  . '(downlink %d of the root, left sibling %d, %d entries); table 1: root %d, a leaf %d',
		$name, $nblocks, $ctx{root}, join(',', map { $_->{blk} } @l0), $ctx{leaf},
		$ctx{leaf_slot}, $ctx{left}, $ctx{leaf_nentries}, $ctx{t1root}, $ctx{t1leaf}));

	# The entries whose heap TIDs the TID scenarios damage (see @SCENARIOS)
	my %deleted = map { $_ => 1 } split /,/, $DELETE_EXPECTED;
	my $tid_of = sub { return "$_[0]{blk},$_[0]{off}"; };
	my $is_dead = sub { return defined $dead{ $tid_of->($_[0]) }; };
	my @t0 = map { $_->{blk} } @{ $leaves{0} };
	my @t1 = map { $_->{blk} } @{ $leaves{1} };
	# past the end: row 77's entry in the damaged leaf, or a live row's
	# that the DELETE leaves; its block becomes the largest the leaf's
	# format holds
	my @cand = leaf_entries($leafpage);
	my ($past) = grep { ($live{ $tid_of->($_) } // '') eq '77' } @cand;
	($past) = grep { my $id = $live{ $tid_of->($_) }; defined $id && !$deleted{$id} } @cand unless $past;
	cmp_ok(256**$past->{bb} - 1, '>=', $heap_blocks, "$name: a leaf's TID can point past the table's $heap_blocks blocks");
	$ctx{patch_past_end} = [ [ 'leaf', $past->{tidpos}, 'a*', "\xFF" x $past->{bb} ] ];
	# twice: a dead row's TID over another dead row's, in table 0
	my ($to) = movable_entries($file, \@t0, $is_dead);
	my ($from) = grep { $tid_of->($_) ne $tid_of->($to) && $_->{blk} < 256**$to->{bb} && $_->{off} < 256**$to->{ob} }
	  movable_entries($file, \@t0, $is_dead);
	$ctx{twiceleaf} = $to->{blkno};
	$ctx{patch_twice} = [ [ 'twiceleaf', $to->{tidpos}, 'a*', le_bytes($from->{blk}, $to->{bb}) . le_bytes($from->{off}, $to->{ob}) ] ];
	# removed: a dead row's entry from a leaf of table 1, the entries after
	# it moved down (and the freed bytes zeroed), the counts one less
	my ($rm) = movable_entries($file, \@t1, $is_dead);
	my $rmpage = read_block($file, $rm->{blkno});
	my $n = u16($rmpage, opq_off('nentries'));
	$ctx{rmleaf} = $rm->{blkno};
	$ctx{patch_removed} = [
		[ 'rmleaf', $rm->{pos}, 'a*', substr($rmpage, $rm->{pos} + $rm->{esize}, ($n - 1 - $rm->{i}) * $rm->{esize}) . ("\0" x $rm->{esize}) ],
		[ 'rmleaf', $HDR{pd_lower}, 'v', u16($rmpage, $HDR{pd_lower}) - $rm->{esize} ],
		[ 'rmleaf', opq_off('nentries'), 'v', $n - 1 ],
		[ 'rmleaf', opq_off('nsorted'), 'v', $n - 1 ] ];
	# not in table 0: a dead row's TID in table 1 becomes row 6006's (dead,
	# with no fingerprint: in no table)
	my ($t6006) = grep { $dead{$_} == 6006 } keys %dead;
	my ($b6006, $o6006) = split /,/, $t6006;
	my ($other) = grep { $b6006 < 256**$_->{bb} && $o6006 < 256**$_->{ob} }
	  movable_entries($file, \@t1, $is_dead);
	$ctx{t1tidleaf} = $other->{blkno};
	$ctx{patch_not_in_t0} = [ [ 't1tidleaf', $other->{tidpos}, 'a*', le_bytes($b6006, $other->{bb}) . le_bytes($o6006, $other->{ob}) ] ];
	note(sprintf('%s: TIDs damaged: past the end (%s) in leaf %d; twice: (%s) over (%s) in leaf %d; '
		  . 'removed from table 1: (%s) in leaf %d; not in table 0: (%s) over (%s) in leaf %d',
		$name, $tid_of->($past), $ctx{leaf}, $tid_of->($from), $tid_of->($to), $ctx{twiceleaf},
		$tid_of->($rm), $ctx{rmleaf}, $t6006, $tid_of->($other), $ctx{t1tidleaf}));

	# codes_idx: the first page of each chain of its code store, a leaf of
	# table 0, and where a TID lies in the store's entries of codes
	my $cfile = "$pgdata/$ctx{codes_relpath}";
	for my $blk (1 .. (-s $cfile) / $BLCKSZ - 1)
	{
		my $page = read_block($cfile, $blk);
		my $flags = u16($page, opq_off('flags'));
		my $nent = u16($page, opq_off('nentries'));
		next unless u16($page, opq_off('page_id')) == $PERM_PAGE_ID && $nent > 2;
		if ($flags == $PERM_STORE && !defined $ctx{store_codes})
		{
			$ctx{store_codes} = $blk;
			my $esize = (u16($page, $HDR{pd_lower}) - $ENTRIES) / $nent;
			$ctx{store_tid_at} = sub { return $ENTRIES + ($_[0] + 1) * $esize - 6; };
			$ctx{store_tid0} = substr($page, $ctx{store_tid_at}->(0), 6);
		}
		elsif ($flags == ($PERM_STORE | $PERM_STORE_NULLS) && !defined $ctx{store_nulls})
		{
			$ctx{store_nulls} = $blk;
		}
		elsif (($flags & $PERM_LEAF) && u16($page, opq_off('table')) == 0 && !defined $ctx{codes_leaf})
		{
			my @e = leaf_entries($page);
			$ctx{codes_leaf} = $blk;
			$ctx{codes_leaf_off0} = [ $e[1]{tidpos} + $e[1]{bb}, "\0" x $e[1]{ob} ];
		}
	}
	ok(defined $ctx{store_codes} && defined $ctx{store_nulls} && defined $ctx{codes_leaf},
		"$name: codes_idx has pages of codes, of NULL codes and a leaf of table 0");
	return \%ctx;
}

#
# One scenario
#

sub apply_damage
{
	my ($ctx, $sc) = @_;
	my ($name, @spec) = @$sc;
	my $file = $ctx->{node}->data_dir . "/$ctx->{relpath}";
	my $val = sub { ref $_[0] eq 'CODE' ? $_[0]->($ctx) : $_[0] };
	my @where;
	if ($spec[0] eq 'zero')
	{
		my $blk = $ctx->{ $spec[1] };
		write_bytes($file, $blk * $BLCKSZ, "\0" x $BLCKSZ);
		push @where, "block $blk zeroed";
	}
	else
	{
		@spec = $spec[1]->($ctx) if $spec[0] eq 'patches';
		for my $d (@spec)
		{
			my ($blkname, $off, $fmt, $value) = @$d;
			my $blk = $blkname eq 'meta' ? 0 : $ctx->{$blkname};
			$off = $val->($off);
			$value = $val->($value);
			write_bytes($file, $blk * $BLCKSZ + $off, pack($fmt, $value));
			push @where, sprintf('block %d (%s) offset %d: %s %s', $blk, $blkname, $off, $fmt,
				$fmt ne 'a*' ? $value : length($value) <= 8 ? unpack('H*', $value) : length($value) . ' bytes');
		}
	}
	return join('; ', @where);
}

sub run_scenario
{
	my ($ctx, $sc) = @_;
	my $node = $ctx->{node};
	my $name = $sc->[0];
	my $opts = ref $sc->[-1] eq 'HASH' ? $sc->[-1] : {};
	my $t0 = time;

	sync_tree($ctx->{pristine}, $node->data_dir);
	my $where = apply_damage($ctx, $sc);
	$node->start;
	my $pm_start = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
	my $logpos = -s $node->logfile;

	my (%res, @fail, @events);
	my $restarted = 0;
	my $op = sub {
		my ($col, $sql, $expect, $hidden_ok) = @_;
		my $r = run_op($node, $sql, $expect);
		$res{$col} = label($r);
		return $r if $r->{kind} eq 'ok';
		# a damaged key may hide its row, and no more
		if ($r->{kind} eq 'WRONG' && $opts->{hides_rows} && $hidden_ok
			&& $hidden_ok->($r->{out}, $expect))
		{
			$res{$col} = 'hid';
			push @events, "$col: rows hidden, none wrong ($r->{detail})";
			return $r;
		}
		# an entry removed from a table: simhash_perm_info counts what the
		# table holds, in the same layout
		if ($r->{kind} eq 'WRONG' && $col eq 'info' && $opts->{info_counts}
			&& same_layout($r->{out}, $expect))
		{
			$res{$col} = 'counts';
			push @events, "$col: counts what the damaged table holds ($r->{detail})";
			return $r;
		}
		push @events, "$col: " . ($r->{kind} eq 'ERROR' ? $r->{detail} : "$r->{kind} $r->{detail}");
		if ($r->{kind} ne 'ERROR')
		{
			push @fail, "$col: $r->{kind} $r->{detail}";
			if ($r->{kind} eq 'CRASH' || $r->{kind} eq 'HANG' || $r->{kind} eq 'FAILED')
			{
				restart_node($node);
				$restarted = 1;
			}
		}
		return $r;
	};

	# read-only: the damaged index as it is
	for my $k (@KS)
	{
		$op->("i$k", $INDEXSCAN . answers_sql($k), $ctx->{truth}{$k}, \&radius_hides_only);
	}
	for my $k (@KS)
	{
		$op->("b$k", $BITMAPSCAN . answers_sql($k), $ctx->{truth}{$k}, \&radius_hides_only);
	}
	$op->('knn', $INDEXSCAN . $KNN_SQL, $ctx->{knn_truth}, \&knn_hides_only);
	# a flipped key is what the index now holds: its statistics may show it
	$op->('info', $INFO_SQL, $ctx->{info}, sub { 1 });
	for my $c (@{ $ctx->{checks} })
	{
		# the index is damaged: a check must not pass (a flipped key in
		# order within its page is seen only by heapallindexed)
		my $r = $op->($c->[0], $c->[1], undef);
		# a damage the plain check must name, even where rows hide
		if ($opts->{check_says} && $c->[0] eq 'chk')
		{
			next if $r->{kind} eq 'ERROR' && $r->{code} eq 'XX002' && $r->{detail} =~ $opts->{check_says};
			$res{chk} = 'MISSED' if $r->{kind} eq 'ok';
			push @fail, "chk: does not report the damage as $opts->{check_says}: " . ($r->{detail} // $r->{kind});
			push @events, $fail[-1];
			next;
		}
		next if $r->{kind} eq 'ok' && $opts->{hides_rows} && $c->[0] eq 'chk';
		# dead rows' TIDs in some tables only: heapallindexed counts them
		if ($opts->{partial_notice} && $c->[0] eq 'chkx')
		{
			if ($r->{kind} eq 'ok' && $r->{err} =~ $opts->{partial_notice})
			{
				$res{chkx} = 'notice';
				next;
			}
			push @fail, "chkx: does not pass with a NOTICE like $opts->{partial_notice}: "
			  . ($r->{kind} eq 'ok' ? first_line($r->{err}) : $r->{detail});
			push @events, $fail[-1];
			next;
		}
		if ($r->{kind} eq 'ok')
		{
			$res{ $c->[0] } = 'MISSED';
			my $rows = () = $r->{out} =~ /^/mg;
			push @fail, "$c->[0]: MISSED the damage ($rows rows)";
			push @events, $fail[-1];
		}
	}

	# writes
	my $ins = $op->('ins', $INSERT_SQL, '');
	if ($ins->{kind} eq 'ok')
	{
		$op->('insf', $INSERT_FOUND_SQL, '31', sub { $_[0] =~ /^(\d+)\n?$/ && $1 <= 31 });
	}
	my $del = $op->('del', $DELETE_SQL, $DELETE_EXPECTED, sub {
		my %want = map { $_ => 1 } split /,/, $_[1];
		return !grep { !$want{$_} } split /,/, ($_[0] =~ s/\n//r);
	});
	my $vac = $op->('vac', $VACUUM_SQL, '');
	my $layout = join("\n", map { my @f = split /\|/; join('|', @f[ 0 .. 3, 9 ]) } split /\n/, $ctx->{info});
	if ($vac->{kind} eq 'ok')
	{
		(my $expect = $layout) =~ s/$/|t/mg;
		$op->('info2', $INFO2_SQL, $expect);
	}
	else
	{
		(my $sql = $INFO2_SQL) =~ s/,\s*entries = \(SELECT count\(fp\) FROM docs\)//;
		$op->('info2', $sql, $layout);
	}

	# the server did not crash
	if (!$restarted)
	{
		my $log = slurp_file($node->logfile, $logpos);
		my @crash = $log =~ /^.*(?:terminated by signal|server process .* was terminated|PANIC:|all server processes terminated).*$/mg;
		my $r = run_op($node, 'SELECT pg_postmaster_start_time()', $pm_start);
		if (@crash || $r->{kind} ne 'ok')
		{
			$res{srv} = 'CRASH';
			push @fail, 'srv: CRASH the server restarted: ' . join('; ', @crash, $r->{kind});
			push @events, $fail[-1];
			restart_node($node);
		}
		else
		{
			$res{srv} = 'ok';
		}
	}
	else
	{
		$res{srv} = 'RESTART';
	}

	# REINDEX heals: answers equal a sequential scan's as the table is now
	my $rdx = $op->('rdx', 'REINDEX INDEX docs_idx', '');
	if ($rdx->{kind} eq 'ERROR')
	{
		push @fail, "rdx: REINDEX failed: $rdx->{detail}";
	}
	elsif ($rdx->{kind} eq 'ok')
	{
		my $truth = run_op($node, $SEQSCAN . $ALL_ANSWERS_SQL, undef);
		my $knn_truth = run_op($node, $SEQSCAN . $KNN_SQL, undef);
		for my $check ([ 'index scan', $INDEXSCAN . $ALL_ANSWERS_SQL, $truth->{out} ],
			[ 'bitmap scan', $BITMAPSCAN . $ALL_ANSWERS_SQL, $truth->{out} ],
			[ 'nearest neighbours', $INDEXSCAN . $KNN_SQL, $knn_truth->{out} ],
			[ 'reach', $REACH_SQL, '0' ])
		{
			my $r = run_op($node, $check->[1], $check->[2]);
			next if $r->{kind} eq 'ok' && $truth->{kind} eq 'ok' && $knn_truth->{kind} eq 'ok';
			$res{rdx} = $r->{kind} eq 'ok' ? 'WRONG' : label($r);
			push @fail, "rdx: after REINDEX, $check->[0]: " . label($r) . ' ' . ($r->{detail} // $truth->{detail});
			push @events, $fail[-1];
			last;
		}
	}
	$node->stop('immediate');

	my $seconds = time - $t0;
	ok(!@fail, "$name: every statement ERRORs or answers right, no crash or hang, REINDEX heals")
	  or diag("$name ($where):\n" . join("\n", @fail));
	return { name => $name, where => $where, res => \%res, events => \@events, fail => scalar(@fail), seconds => $seconds };
}

# A damage to codes_idx's TIDs: the plain check must name it, the check
# with heapallindexed must fail too, and REINDEX heals
sub run_store_scenario
{
	my ($ctx, $sc) = @_;
	my ($name, $blkname, $patch, $says) = @$sc;
	my $node = $ctx->{node};
	my $file = $node->data_dir . "/$ctx->{codes_relpath}";

	sync_tree($ctx->{pristine}, $node->data_dir);
	my ($off, $bytes) = $patch->($ctx);
	my $blk = $ctx->{$blkname};
	write_bytes($file, $blk * $BLCKSZ + $off, $bytes);
	$node->start;
	my $logpos = -s $node->logfile;
	my $r = run_op($node, "SELECT * FROM simhash_perm_check('codes_idx')", undef);
	ok($r->{kind} eq 'ERROR' && $r->{code} eq 'XX002' && $r->{detail} =~ $says,
		"$name: simhash_perm_check(codes_idx) reports it")
	  or diag(sprintf("block %d (%s) offset %d: %s\n%s", $blk, $blkname, $off, unpack('H*', $bytes),
		  $r->{detail} // $r->{kind}));
	is(label(run_op($node, "SELECT * FROM simhash_perm_check('codes_idx', true)", undef)), 'XX002',
		"$name: with heapallindexed too");
	is(run_op($node, 'REINDEX INDEX codes_idx', '')->{kind}, 'ok', "$name: REINDEX");
	is(run_op($node, "SELECT count(*) FROM simhash_perm_check('codes_idx', true)", $ctx->{codes_check})->{kind},
		'ok', "$name: REINDEX heals it");
	unlike(slurp_file($node->logfile, $logpos), qr/terminated by signal|PANIC:/, "$name: no backend crashed");
	note(sprintf('%s: block %d (%s) offset %d: %s: %s', $name, $blk, $blkname, $off, unpack('H*', $bytes),
		$r->{detail} // $r->{kind}));
	$node->stop('immediate');
	return;
}

sub report
{
	my ($title, $results) = @_;
	my $w = 8;
	my $nw = 30;
	my @lines = ("$title", sprintf("%-${nw}s", 'scenario') . join('', map { sprintf("%-${w}s", $_) } @COLUMNS) . 'secs');
	for my $r (@$results)
	{
		push @lines, sprintf("%-${nw}s", $r->{name})
		  . join('', map { sprintf("%-${w}s", $r->{res}{$_} // '-') } @COLUMNS)
		  . sprintf('%.1f', $r->{seconds});
	}
	push @lines, '',
	  'i<k>, b<k>: index scan, bitmap scan at radius k; info: simhash_perm_info(); chk, chkx:',
	  'simhash_perm_check(), without and with heapallindexed; ins: INSERT, insf: its rows found;',
	  'del: DELETE through the index; vac: VACUUM; info2: simhash_perm_info() after them;',
	  'srv: the server did not restart; rdx: REINDEX, then answers as a sequential scan\'s.',
	  'knn: ORDER BY fp <-> q, LIMIT 1, 10, 1000 and none;',
	  'ok: right answer; hid: rows hidden by a damaged key, none wrong (allowed only where a',
	  'scenario says so); counts: simhash_perm_info counts the entry a table lost, in the same',
	  'layout (where a scenario removes one); notice: chkx passes, counting dead rows\' TIDs in',
	  'some tables only in a NOTICE (where a scenario says so); a SQLSTATE: an ERROR (57014: only',
	  'statement_timeout ended it);',
	  '-: not run (chk/chkx: not installed; insf: the INSERT failed); RESTART: the server was',
	  'restarted after a crash or hang.  Failures: CRASH, HANG, WRONG, FATAL, MISSED (the',
	  'check passed on the damaged index), FAILED (psql could not run).', '',
	  'damage (offsets from the start of the block):';
	push @lines, map { sprintf("  %-${nw}s %s", $_->{name}, $_->{where}) } @$results;
	push @lines, '', 'what did not answer right (operation: SQLSTATE and message, or failure):';
	for my $r (@$results)
	{
		next unless @{ $r->{events} };
		# group the operations that ended with the same message
		my (%by, @order);
		for my $e (@{ $r->{events} })
		{
			my ($col, $msg) = $e =~ /^(\S+): (.*)$/s;
			push @order, $msg unless $by{$msg};
			push @{ $by{$msg} }, $col;
		}
		push @lines, "  $r->{name}:";
		push @lines, map { '    ' . join(',', @{ $by{$_} }) . ": $_" } @order;
	}
	my @failed = map { $_->{name} } grep { $_->{fail} } @$results;
	push @lines, '', sprintf('%d of %d scenarios failed%s', scalar(@failed), scalar(@$results),
		@failed ? ': ' . join(' ', @failed) : '');
	note(join("\n", @lines));
	return;
}

#
# The run
#

my $t_start = time;
my %by_name = map { $_->[0] => $_ } @SCENARIOS;

# without data checksums, which PostgreSQL 18's initdb turns on by default
# (no_data_checksums is its Cluster.pm's; older ones ignore it and have
# them off): a damaged page must reach the index's own checks
my $plain = prepare('corrupt', no_data_checksums => 1);
my @results = map { run_scenario($plain, $_) } @SCENARIOS;
ok(scalar(@results) >= 20, scalar(@results) . ' scenarios ran without data checksums')
  unless defined $ENV{SIMHASH_SCENARIOS};
run_store_scenario($plain, $_) for @STORE_SCENARIOS;

my $sums = prepare('corrupt_checksums', extra => ['--data-checksums']);
my @results_sums = map { run_scenario($sums, $by_name{$_}) } @CHECKSUM_SCENARIOS;

report('without data checksums:', \@results);
report('with data checksums:', \@results_sums);
note(sprintf('total time %.0f s', time - $t_start));

done_testing();
