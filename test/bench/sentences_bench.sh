#!/usr/bin/env bash
# The sentence signature's speed, beside simhash's, in one run.
#
#   bash test/bench/sentences_bench.sh [ROWS]        (default 1000000)
#
# 1. Computing: simhash_sentences(body) against simhash(body) over apt's
#    English package descriptions (about 64,000 texts, 26 MB), RUNS rounds
#    taking the two in turn, each a full pass; the ratio of the medians.
# 2. Looking up: a table of ROWS documents with a fingerprint (fixed-seed
#    pseudo-random, as the index benchmarks) and a 5-hash signature (five
#    pseudo-random hashes a document; 1% of the documents are near-copies of
#    others that share 3 of their 5 hashes and have a fingerprint 2 bits
#    away), a simhash_perm index on the fingerprint and a GIN index on the
#    signature.  pgbench -M prepared, 2 clients, medians of RUNS runs of
#    SECS seconds: "documents sharing at least 2 of 5 sentences with this
#    one" through GIN (sig && q AND simhash_sentence_overlap(sig, q) >= 2)
#    against "documents within 3 bits" through simhash_perm, for the
#    signature and fingerprint of a random stored document.  Both answers
#    are checked against a sequential scan for 50 documents first.
# Synthetic signatures are the favourable case for GIN: every hash is rare.
# A corpus whose template sentences make it into many signatures gives
# those hashes long posting lists (docs/reports/quality_sentences.md shows how
# often that happens on real text).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-1000000}
RUNS=${RUNS:-3}
SECS=${SECS:-10}

simhash_bench_start sentences "max_parallel_workers_per_gather = 0
jit = off
shared_buffers = 2GB"
exec > >(tee "$REPORT") 2>&1
echo "== sentences_bench: $ROWS rows, $RUNS rounds, $("$PG_CONFIG" --version), commit $(git rev-parse --short HEAD)"
q -c "CREATE EXTENSION simhash"

echo "== 1. computing, over apt's descriptions"
simhash_load_corpus corpus
q -At -c "SELECT count(*) || ' texts, ' || round(sum(octet_length(body)) / 1e6, 1) || ' MB' FROM corpus"
declare -A secs
for r in $(seq 1 "$RUNS"); do
	for f in "simhash(body)" "simhash_sentences(body)"; do
		a=$(date +%s.%N)
		q -At -c "SELECT count($f) FROM corpus" >/dev/null
		b=$(date +%s.%N)
		s=$(python3 -c "print(f'{$b - $a:.3f}')")
		secs[$f]="${secs[$f]:-} $s"
		echo "   round $r: $f $s s"
	done
done

echo "== 2. looking up, $ROWS documents"
q -f - <<SQL
CREATE FUNCTION h(g bigint) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS \$\$ SELECT (hashint8(g)::bigint << 32) | (hashint8(-g - 1)::bigint & 4294967295) \$\$;
CREATE TABLE docs (id bigint, fp bigint, sig bigint[]);
INSERT INTO docs
  SELECT g, h(g), ARRAY(SELECT h(g * 8 + i + 1000000000) FROM generate_series(1, 5) i ORDER BY 1)
    FROM generate_series(1, $ROWS) g;
-- 1% near-copies of rows g * 97: 3 of their 5 sentence hashes, 2 bits of the fingerprint
INSERT INTO docs
  SELECT $ROWS + g, h(g * 97) # 5,
         ARRAY(SELECT x FROM (SELECT unnest(sig) FROM docs WHERE id = g * 97 LIMIT 3) s(x)
               UNION ALL SELECT h(-g * 8 - i) FROM generate_series(1, 2) i ORDER BY 1)
    FROM generate_series(1, $ROWS / 100) g;
CREATE INDEX docs_fp ON docs USING simhash_perm (fp);
CREATE INDEX docs_sig ON docs USING gin (sig);
VACUUM ANALYZE docs;
CREATE TABLE bench_q AS SELECT row_number() OVER () AS qid, fp, sig FROM (SELECT fp, sig FROM docs ORDER BY hashint8(id) LIMIT 1000) s;
SQL
q -At -c "SELECT 'index sizes: simhash_perm ' || pg_size_pretty(pg_relation_size('docs_fp')) || ', GIN ' || pg_size_pretty(pg_relation_size('docs_sig'))"
q -At -c "SET enable_seqscan = off;
  SELECT 'answers equal a sequential scan''s: ' || bool_and(a = b) FROM (
    SELECT (SELECT array_agg(id ORDER BY id) FROM docs d WHERE d.sig && q.sig AND simhash_sentence_overlap(d.sig, q.sig) >= 2) AS a,
           (SELECT array_agg(id ORDER BY id) FROM docs d WHERE simhash_sentence_overlap(d.sig, q.sig) >= 2) AS b
      FROM bench_q q WHERE qid <= 50) x"
q -At -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE sig && '{1,2,3,4,5}'::bigint[] AND simhash_sentence_overlap(sig, '{1,2,3,4,5}') >= 2" | sed 's/^/   plan: /'
cat >"$WORK/gin.sql" <<'S'
\set qid random(1, 1000)
SELECT sig FROM bench_q WHERE qid = :qid \gset
SELECT id FROM docs WHERE sig && :sig::bigint[] AND simhash_sentence_overlap(sig, :sig::bigint[]) >= 2;
S
cat >"$WORK/perm.sql" <<'S'
\set qid random(1, 1000)
SELECT fp FROM bench_q WHERE qid = :qid \gset
SELECT id FROM docs WHERE hamming_near(fp, :fp, 3);
S
chmod 644 "$WORK"/*.sql
simhash_pgbench gin "$WORK/gin.sql" "$SECS" "$RUNS" "" "$WORK" | tee "$WORK/gin.txt"
simhash_pgbench perm "$WORK/perm.sql" "$SECS" "$RUNS" "" "$WORK" | tee "$WORK/perm.txt"

python3 - "${secs[simhash(body)]}" "${secs[simhash_sentences(body)]}" "$WORK/gin.txt" "$WORK/perm.txt" <<'PY'
import re, statistics, sys
fp, sg = ([float(x) for x in a.split()] for a in sys.argv[1:3])
tps = [float(re.search(r"tps\s+([0-9.]+)", open(f).read()).group(1)) for f in sys.argv[3:5]]
print("== medians")
print(f"  computing: simhash(body) {statistics.median(fp):.3f} s, simhash_sentences(body) {statistics.median(sg):.3f} s;"
      f" the signature takes {statistics.median(sg) / statistics.median(fp):.2f}x the fingerprint's time")
print(f"  looking up: GIN (2 of 5 sentences) {tps[0]:.0f} q/s, simhash_perm (3 bits) {tps[1]:.0f} q/s;"
      f" GIN / simhash_perm {tps[0] / tps[1]:.2f}x")
PY
