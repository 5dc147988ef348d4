# A near-duplicate exclusion constraint under concurrent ingest: eight
# pgbench clients insert a stream of fingerprints, a fifth of them 1-bit
# copies of a few hundred others (so that sessions race to store copies of
# one page), with INSERT ... ON CONFLICT DO NOTHING, while VACUUM runs.
# Each attempt is logged, in the same statement, with whether it was
# stored.  Afterwards: no two stored rows lie within the radius
# (simhash_pairs finds no pair), every skipped attempt has a stored
# near-duplicate, every stored attempt is there, and the index passes
# simhash_perm_check.  Then the same run is killed (kill -9 of the whole
# server) in the middle, and the same holds after recovery.  All of it
# twice: for EXCLUDE (fp WITH ~=), and for the per-tenant constraint
# EXCLUDE (site WITH =, fp WITH ~=) over 8 sites, where a copy conflicts
# only within its site (the pairs within each site, and the near-duplicate
# of a skipped attempt in its own site).  Bounded by pgbench's -T: about
# two minutes in all.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use SimhashTAP;
use IPC::Run;

my $clients = 8;
my $seconds = $ENV{SIMHASH_STRESS_SECONDS} // 15;

# one run of the whole test: for the one-column constraint, or per tenant
sub run_mode
{
	my ($tenant) = @_;

	my $node = PostgreSQL::Test::Cluster->new($tenant ? 'tenant_exclusion_stress' : 'exclusion_stress');
	$node->init;
	$node->append_conf('postgresql.conf', "max_connections = 30\n");
	$node->start;
	$node->safe_psql('postgres', q{CREATE EXTENSION simhash;} . $PSEUDO_FP_SQL . q{
		CREATE TABLE docs (id bigserial, site int, fp simhash64);
		-- 20,000 stored pages to start from, in 8 sites
		INSERT INTO docs (site, fp) SELECT g % 8, pseudo_fp(g) FROM generate_series(1000001, 1020000) g;
		CREATE TABLE attempts (n bigserial, site int, fp simhash64, stored bool);
	} . ($tenant ?
		q{ALTER TABLE docs ADD CONSTRAINT docs_no_near_copies
		    EXCLUDE USING simhash_perm (site WITH =, fp WITH ~=) WITH (max_distance = 3);} :
		q{ALTER TABLE docs ADD CONSTRAINT docs_no_near_copies
		    EXCLUDE USING simhash_perm (fp WITH ~=) WITH (max_distance = 3);}));
	# a near-duplicate: in the same site, for the tenant constraint
	my $same_site = $tenant ? 'd.site = a.site AND' : '';

	my $dir = PostgreSQL::Test::Utils::tempdir;

	# One attempt: a 1-bit copy of one of 300 pages (a fifth of the time) or a
	# fresh random page; the INSERT and its log are one statement, so they
	# commit or vanish together.
	my $ingest = "$dir/ingest.sql";
	open(my $fh, '>', $ingest) or die $!;
	print $fh q{
	\set copy random(1, 100)
	\set page random(1, 300)
	\set bit random(0, 63)
	\set fresh random(1, 1000000000)
	\set site random(0, 7)
	WITH f AS (SELECT CASE WHEN :copy <= 20
	                       THEN (pseudo_fp(:page)::bigint # (1::bigint << :bit))::simhash64
	                       ELSE pseudo_fp(2000000 + :fresh) END AS fp),
	     ins AS (INSERT INTO docs (site, fp) SELECT :site, fp FROM f ON CONFLICT DO NOTHING RETURNING fp)
	INSERT INTO attempts (site, fp, stored) SELECT :site, fp, EXISTS (SELECT 1 FROM ins) FROM f;
	};
	close $fh;
	my $vacuum = "$dir/vacuum.sql";
	open($fh, '>', $vacuum) or die $!;
	print $fh "VACUUM (INDEX_CLEANUP ON) docs;\n\\sleep 300 ms\n";
	close $fh;

	# start the clients and one VACUUM loop; returns the pgbench handles
	my $start_load = sub
	{
		my ($out, $err, $vout, $verr) = ('', '', '', '');
		my @h;
		push @h, IPC::Run::start(
			[ 'pgbench', '-n', '-c', $clients, '-j', 2, '-T', $seconds, '-f', $ingest,
			  $node->connstr('postgres') ],
			'<', \undef, '>', \$out, '2>', \$err);
		push @h, IPC::Run::start(
			[ 'pgbench', '-n', '-c', 1, '-T', $seconds, '-f', $vacuum,
			  $node->connstr('postgres') ],
			'<', \undef, '>', \$vout, '2>', \$verr);
		return (\@h, \$out, \$err);
	};

	# the invariants, after a run
	my $check_invariants = sub
	{
		my ($when) = @_;
		my $pairs = $tenant ? q{simhash_pairs('docs', 'id', 'fp', 3, tenant => 'site')} :
		  q{simhash_pairs('docs', 'id', 'fp', 3)};
		is($node->safe_psql('postgres', qq{
			SELECT count(*) FROM $pairs AS p(a bigint, b bigint, d int)}),
			'0', "$when: no two stored rows lie within the radius");
		is($node->safe_psql('postgres', qq{
			SET enable_seqscan = off;
			SELECT count(*) FROM attempts a
			 WHERE NOT a.stored AND NOT EXISTS (SELECT 1 FROM docs d WHERE $same_site hamming_near(d.fp, a.fp, 3))}),
			'0', "$when: every skipped attempt has a stored near-duplicate");
		is($node->safe_psql('postgres', qq{
			SET enable_seqscan = off;
			SELECT count(*) FROM attempts a
			 WHERE a.stored AND NOT EXISTS (SELECT 1 FROM docs d WHERE $same_site hamming_near(d.fp, a.fp, 0))}),
			'0', "$when: every stored attempt is in the table");
		is($node->safe_psql('postgres', q{
			SELECT (SELECT count(*) FROM docs) - 20000 - (SELECT count(*) FROM attempts WHERE stored)}),
			'0', "$when: the table holds the starting rows and the stored attempts, nothing else");
		my ($ret, $out, $err) = $node->psql('postgres',
			q{SELECT count(*) FROM simhash_perm_check('docs_no_near_copies', heapallindexed => true) WHERE table_no >= 0});
		is($ret, 0, "$when: simhash_perm_check passes") or diag($err);
	};

	# 1. a run to its end
	my ($h, $out, $err) = $start_load->();
	$_->finish for @$h;
	like($$out, qr/number of transactions actually processed: \d+/, 'the ingest run completed')
	  or diag($$err);
	my ($attempts, $skipped, $copies) = split /\|/, $node->safe_psql('postgres', q{
		SELECT count(*), count(*) FILTER (WHERE NOT stored),
		       count(*) FILTER (WHERE NOT stored AND NOT EXISTS
		         (SELECT 1 FROM generate_series(1, 300) g WHERE hamming_near(pseudo_fp(g), a.fp, 1)))
		  FROM attempts a});
	note("run to its end: $attempts attempts, $skipped skipped ($copies of them not copies of the 300 pages)");
	cmp_ok($skipped, '>', 100, "near-copies were skipped ($skipped of $attempts)");
	$check_invariants->('after the run');

	# 2. the same run, killed in the middle
	my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM attempts');
	($h, $out, $err) = $start_load->();
	$node->poll_query_until('postgres', "SELECT count(*) > $before + 2000 FROM attempts")
	  or die 'the second run did not progress';
	$node->stop('immediate');
	$_->kill_kill for @$h;
	$node->start;
	my $after = $node->safe_psql('postgres', 'SELECT count(*) FROM attempts');
	cmp_ok($after, '>', $before, "attempts committed before the crash survived ($after - $before)");
	$check_invariants->('after a crash in the middle of the run');

	# and the table goes on refusing copies after recovery
	my ($ret) = $node->psql('postgres', q{INSERT INTO docs (site, fp) SELECT site, (fp::bigint # 1)::simhash64 FROM docs LIMIT 1});
	is($ret, 3, 'after recovery a near-copy is refused');
	is($node->safe_psql('postgres', q{
		INSERT INTO docs (site, fp) SELECT site, (fp::bigint # 3)::simhash64 FROM docs ORDER BY id DESC LIMIT 50
		ON CONFLICT DO NOTHING RETURNING id}), '', 'after recovery ON CONFLICT DO NOTHING skips copies');
	if ($tenant)
	{
		$node->safe_psql('postgres', q{
			INSERT INTO docs (site, fp) SELECT site + 100, (fp::bigint # 1)::simhash64 FROM docs ORDER BY id DESC LIMIT 50});
		is($node->safe_psql('postgres', q{SELECT count(*) FROM docs WHERE site >= 100}), '50',
			'after recovery the copies go into other sites');
	}

	$node->stop;

}

run_mode(0);
run_mode(1);
done_testing();
