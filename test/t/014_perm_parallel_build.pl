# CREATE INDEX with parallel workers (src/index/build/permbuildparallel.c):
#  - a crash (kill -9 of the building backend) while the workers read the
#    table, during CREATE INDEX and CREATE INDEX CONCURRENTLY: after
#    recovery the first index is gone, the second is left invalid, and a
#    new parallel build succeeds and is sound;
#  - CREATE INDEX CONCURRENTLY with parallel workers while four clients
#    insert: every row, those inserted during the build included, is in
#    the index, and its answers equal a sequential scan's;
#  - the same for bit(256) codes, whose index keeps a code store that the
#    workers spool their shares of: both chains pass the check, far
#    nearest neighbours (read from the store) equal a sequential scan's,
#    and an ordered scan of the whole index hands out every row.
# The builds are made slow by an index expression that sleeps now and then
# (PARALLEL SAFE, so the workers run it).
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;
use IPC::Run;

my @clients;

my $node = PostgreSQL::Test::Cluster->new('parallel_build');
$node->init;
$node->append_conf('postgresql.conf', qq{
max_connections = 20
max_parallel_maintenance_workers = 2
maintenance_work_mem = 128MB
min_parallel_table_scan_size = 0
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION simhash;
	CREATE FUNCTION fast_fp(g bigint) RETURNS public.simhash64
	  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT ((pg_catalog.hashint8(g)::bigint << 32) |
			(pg_catalog.hashint8(-g - 1)::bigint & 4294967295))::public.simhash64 $$;
	-- the same, but every 500th row sleeps 20 ms: about 4 s of sleep in
	-- 100,000 rows
	CREATE FUNCTION slow_fp(g bigint) RETURNS public.simhash64
	  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
	BEGIN
		IF g % 500 = 0 THEN
			PERFORM pg_catalog.pg_sleep(0.02);
		END IF;
		RETURN public.fast_fp(g);
	END $$;
	CREATE TABLE d (id bigint, fp simhash64);
	INSERT INTO d SELECT g, fast_fp(g) FROM generate_series(1, 100000) g;
	ANALYZE d;
	CHECKPOINT;
});

# Start a build in the background, wait until both its workers are reading
# the table, and kill its backend
sub crash_during
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c', $sql ],
		'<', \undef, '>', \$out, '2>', \$err);
	$node->poll_query_until('postgres', q{
		SELECT count(*) = 2 FROM pg_stat_activity
		 WHERE backend_type = 'parallel worker' AND query LIKE '%slow_fp%'})
	  or die 'the build did not start its workers';
	my $pid = $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_progress_create_index WHERE relid = 'd'::regclass});
	ok($pid =~ /^\d+$/, "the building backend is $pid");
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	$h->finish;
	# psql ends as soon as its backend dies, before the postmaster has
	# noticed: a query now could still reach the old server and the next
	# one fail during recovery.  Wait for the restart to finish.
	$node->wait_for_log(
		qr/all server processes terminated; reinitializing.*database system is ready to accept connections/s,
		$offset);
	$node->poll_query_until('postgres', 'SELECT true')
	  or die 'the server did not come back';
}

crash_during('CREATE INDEX d_crash ON d USING simhash_perm (slow_fp(id))');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'd_crash'}),
	'0', 'after a crash during CREATE INDEX the index is gone');

crash_during('CREATE INDEX CONCURRENTLY d_crash ON d USING simhash_perm (slow_fp(id))');
is($node->safe_psql('postgres', q{
	SELECT indisvalid FROM pg_index WHERE indexrelid = 'd_crash'::regclass}),
	'f', 'after a crash during CREATE INDEX CONCURRENTLY the index is invalid');
$node->safe_psql('postgres', 'DROP INDEX d_crash');

# a parallel build after the crashes succeeds and is sound
my ($stdout, $stderr);
$node->psql('postgres', q{
	SET simhash.report_build_workers = on;
	CREATE INDEX d_idx ON d USING simhash_perm (slow_fp(id));
}, stdout => \$stdout, stderr => \$stderr);
like($stderr, qr/was read by 2 parallel workers and the leader/,
	'the build after recovery is parallel');
is($node->safe_psql('postgres', q{SELECT count(*) FROM simhash_perm_check('d_idx', true) WHERE table_no >= 0}),
	'4', 'it passes simhash_perm_check with every row');
$node->safe_psql('postgres', 'DROP INDEX d_idx');

# Start n clients that insert into table, each row's code from function(id),
# committing every row and pausing 2 ms after it
sub start_inserters
{
	my ($n, $table, $function) = @_;
	@clients = ();
	for my $i (1 .. $n)
	{
		my ($out, $err) = ('', '');
		push @clients, IPC::Run::start(
			[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c', qq{
				DO \$\$
				BEGIN
				  FOR i IN 1 .. 1000000 LOOP
				    INSERT INTO $table SELECT v, $function(v) FROM (SELECT nextval('s') AS v) x;
				    COMMIT;
				    PERFORM pg_sleep(0.002);
				  END LOOP;
				END \$\$;} ],
			'<', \undef, '>', \$out, '2>', \$err);
	}
}

# Stop the clients that insert: their backends too, which would run their
# loop on without them
sub stop_clients
{
	$_->kill_kill for @clients;
	$node->safe_psql('postgres', q{
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		 WHERE query LIKE '%nextval%' AND pid <> pg_backend_pid()});
	$node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM pg_stat_activity
		 WHERE query LIKE '%nextval%' AND pid <> pg_backend_pid()})
	  or die 'the clients did not stop';
}

# CREATE INDEX CONCURRENTLY with workers while four clients insert, each
# committing every row
$node->safe_psql('postgres', 'CREATE SEQUENCE s START 1000000');
start_inserters(4, 'd', 'fast_fp');
$node->poll_query_until('postgres', 'SELECT last_value > 1000200 FROM s')
  or die 'inserts did not start';
$node->psql('postgres', q{
	SET simhash.report_build_workers = on;
	CREATE INDEX CONCURRENTLY d_conc ON d USING simhash_perm (slow_fp(id));
}, stdout => \$stdout, stderr => \$stderr);
like($stderr, qr/was read by 2 parallel workers and the leader/,
	'CREATE INDEX CONCURRENTLY ran with two workers');
my $during = $node->safe_psql('postgres', 'SELECT last_value FROM s');
# a few more rows through the finished index, then stop the clients
$node->poll_query_until('postgres', "SELECT last_value > $during + 200 FROM s")
  or die 'inserts stopped';
stop_clients();

is($node->safe_psql('postgres', q{
	SELECT indisvalid FROM pg_index WHERE indexrelid = 'd_conc'::regclass}),
	't', 'the concurrent build is valid');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM d WHERE id >= 1000000'), '>', 400,
	'rows were inserted during and after the build');
is($node->safe_psql('postgres', q{SELECT count(*) FROM simhash_perm_check('d_conc', true) WHERE table_no >= 0}),
	'4', 'every row, those inserted during the build included, is in the index');
# the fingerprints the index holds are those of column fp, which the
# sequential scan reads without sleeping
my $queries = q{
	(SELECT fp FROM d WHERE id % 4999 = 0 OR id > 1000000 AND id % 41 = 0 LIMIT 40) q,
	generate_series(0, 4, 2) k, d};
my $truth = $node->safe_psql('postgres', qq{
	SET enable_indexscan = off; SET enable_bitmapscan = off;
	SELECT count(*), coalesce(sum(d.id * (k + 1)), 0) FROM $queries
	 WHERE hamming_near(d.fp, q.fp, k)});
my $index = $node->safe_psql('postgres', qq{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*), coalesce(sum(d.id * (k + 1)), 0) FROM $queries
	 WHERE hamming_near(slow_fp(d.id), q.fp, k)});
is($index, $truth, 'its answers equal a sequential scan');

# The same for bit(256) codes, whose index keeps a code store: each worker
# spools its share's whole codes and NULL rows for the leader
$node->safe_psql('postgres', q{
	CREATE FUNCTION fast_code(g bigint) RETURNS bit(256)
	  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN g % 97 <> 0 THEN
		('x' || pg_catalog.md5(g::text) || pg_catalog.md5((-g)::text))::bit(256) END $$;
	CREATE FUNCTION slow_code(g bigint) RETURNS bit(256)
	  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
	BEGIN
		IF g % 500 = 0 THEN
			PERFORM pg_catalog.pg_sleep(0.02);
		END IF;
		RETURN public.fast_code(g);
	END $$;
	CREATE TABLE w (id bigint, code bit(256));
	INSERT INTO w SELECT g, fast_code(g) FROM generate_series(1, 100000) g;
	ANALYZE w;
});
start_inserters(2, 'w', 'fast_code');
my $before = $node->safe_psql('postgres', 'SELECT last_value FROM s');
$node->poll_query_until('postgres', "SELECT last_value > $before + 200 FROM s")
  or die 'inserts did not start';
$node->psql('postgres', q{
	SET simhash.report_build_workers = on;
	CREATE INDEX CONCURRENTLY w_conc ON w USING simhash_perm (slow_code(id))
	  WITH (width = 256);
}, stdout => \$stdout, stderr => \$stderr);
like($stderr, qr/was read by 2 parallel workers and the leader/,
	'CREATE INDEX CONCURRENTLY of bit(256) codes with a code store ran with two workers');
$during = $node->safe_psql('postgres', 'SELECT last_value FROM s');
$node->poll_query_until('postgres', "SELECT last_value > $during + 200 FROM s")
  or die 'inserts stopped';
stop_clients();

is($node->safe_psql('postgres', q{
	SELECT indisvalid FROM pg_index WHERE indexrelid = 'w_conc'::regclass}),
	't', 'the concurrent build of bit(256) codes is valid');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE table_no < 0) FROM simhash_perm_check('w_conc', true)}),
	'2', 'both chains of the code store pass the check with every row looked up');
# far neighbours come from the store: the ten nearest of codes not in the
# table, each as the list of distances
$queries = q{(SELECT ('x' || pg_catalog.md5('q' || g) || pg_catalog.md5('r' || g))::bit(256) AS c
	FROM generate_series(1, 6) g) q};
my $knn = sub {
	my ($expr, $settings) = @_;
	return $node->safe_psql('postgres', qq{
		$settings
		SELECT string_agg(l, ';' ORDER BY c) FROM $queries, LATERAL (
		  SELECT string_agg((w.code <-> q.c)::text, ',') AS l FROM (
		    SELECT code FROM w WHERE code IS NOT NULL ORDER BY $expr <-> q.c LIMIT 10) w) x});
};
is($knn->('slow_code(id)', 'SET enable_seqscan = off; SET enable_bitmapscan = off;'),
	$knn->('code', 'SET enable_indexscan = off; SET enable_bitmapscan = off;'),
	'far nearest neighbours through the store equal a sequential scan');
# every row, in order of distance, NULL codes last: the whole store
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) || ' ' || count(*) FILTER (WHERE code IS NULL) FROM (
	  SELECT code FROM w ORDER BY slow_code(id) <-> B'1'::bit(256) LIMIT 10000000) x}),
	$node->safe_psql('postgres', q{
	SELECT count(*) || ' ' || count(*) FILTER (WHERE code IS NULL) FROM w}),
	'an ordered scan of the whole index hands out every row, NULL codes included');

$node->stop;
done_testing();
