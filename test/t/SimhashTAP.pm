# SimhashTAP.pm: SQL shared by the simhash TAP tests.
package SimhashTAP;

use strict;
use warnings FATAL => 'all';
use Exporter 'import';

our @EXPORT = qw($PSEUDO_FP_SQL);

# pseudo_fp(g): a reproducible, well-mixed fingerprint for row g, so that
# tests fill tables with fingerprints spread over all 64 bits.
our $PSEUDO_FP_SQL = q{
	CREATE FUNCTION pseudo_fp(g bigint) RETURNS simhash64 LANGUAGE sql IMMUTABLE
	  AS $$ SELECT ((hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295))::simhash64 $$;
};

1;
