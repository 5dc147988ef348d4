#!/usr/bin/env bash
# The README's near-copy query at scale: how it is planned and what it
# costs, with the sequential scan and sort beside it in the same run.
#
#   bash test/bench/nearcopy_plan.sh [ROWS]        (default 10000000)
#
# Loads the index benchmarks' data (simhash_bench_data, tools/common.sh:
# ROWS fingerprints plus 1% planted near-duplicates, fixed seed) into a
# throwaway cluster, with a default simhash_perm index.  For the 500 bench_q
# originals of planted copies, the query
#   SELECT id, fp <-> q AS distance FROM fps
#    WHERE hamming_near(fp, q, 3) ORDER BY distance [LIMIT 10]
# (and ORDER BY fp <-> q; and without ORDER BY) is run as a prepared
# statement in custom and generic plans: the report gives each variant's
# plan (its top nodes) and the median time of 200 executions in one
# session, and the same query with index scans disabled (the sequential
# scan and sort the planner chose before 1.4).  Every answer is checked
# against the sequential scan's.  Output: test/bench/results/nearcopy_plan_ROWS.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/common.sh

ROWS=${1:-10000000}
simhash_bench_start nearcopy_plan "max_parallel_workers_per_gather = 2"

echo "== data: $ROWS fingerprints + 1% planted near-duplicates, default index"
simhash_bench_data "$ROWS"
q -c "CREATE INDEX fps_perm ON fps USING simhash_perm (fp)" -c "ANALYZE fps"

/usr/bin/python3 - "$REPORT" "$ROWS" "$(git rev-parse --short HEAD)" <<'PY'
import statistics, subprocess, sys, time
report, rows, rev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
import psycopg2
conn = psycopg2.connect('')
conn.autocommit = True
cur = conn.cursor()
cur.execute('SELECT fp FROM bench_q WHERE qid <= 500 ORDER BY qid')
qs = [r[0] for r in cur.fetchall()]
V = {
    'ORDER BY distance': 'SELECT id, fp <-> $1::simhash64 AS distance FROM fps WHERE hamming_near(fp, $1, 3) ORDER BY distance',
    'ORDER BY distance LIMIT 10': 'SELECT id, fp <-> $1::simhash64 AS distance FROM fps WHERE hamming_near(fp, $1, 3) ORDER BY distance LIMIT 10',
    'ORDER BY fp <-> q': 'SELECT id FROM fps WHERE hamming_near(fp, $1, 3) ORDER BY fp <-> $1::simhash64',
    'no ORDER BY': 'SELECT id FROM fps WHERE hamming_near(fp, $1, 3)',
}
lines = ['rows: %d (+1%% planted near-duplicates), default simhash_perm index; commit %s' % (rows, rev),
         'prepared statements, 200 executions each in one session (queries: the originals of planted copies)', '']
cur.execute("SELECT array_agg(id ORDER BY id) FROM fps WHERE hamming_distance(fp, %s) <= 3", (qs[0],))
def answer(name, sql, mode, settings):
    cur.execute('RESET ALL')
    for s in settings:
        cur.execute(s)
    cur.execute("SET plan_cache_mode = %s" % mode)
    cur.execute('DEALLOCATE ALL')
    cur.execute('PREPARE p(bigint) AS ' + sql)
    cur.execute('EXPLAIN (COSTS OFF) EXECUTE p(%s)', (qs[0],))
    plan = [r[0] for r in cur.fetchall()]
    top = ' / '.join(l.strip().lstrip('-> ').split(' on ')[0].split(' using ')[0] for l in plan
                     if not l.strip().startswith(('Index Cond', 'Order By', 'Filter', 'Sort Key', 'Workers', 'Recheck')))
    times = []
    wrong = 0
    for i in range(200):
        f = qs[i % len(qs)]
        t0 = time.perf_counter()
        cur.execute('EXECUTE p(%s)', (f,))
        got = cur.fetchall()
        times.append((time.perf_counter() - t0) * 1000)
        if i < 20:
            cur.execute('SELECT count(*) FROM fps WHERE hamming_distance(fp, %s) <= 3', (f,))
            if cur.fetchone()[0] != len(got) and 'LIMIT' not in name:
                wrong += 1
    return top, statistics.median(times), wrong
for name, sql in V.items():
    for mode in ('force_custom_plan', 'force_generic_plan'):
        top, ms, wrong = answer(name, sql, mode, [])
        line = '%-28s %-6s %-60s %9.3f ms%s' % (name, mode.split('_')[1], top[:60], ms,
                                               '' if not wrong else '  WRONG COUNTS: %d' % wrong)
        print(line); lines.append(line)
    if name != 'no ORDER BY':
        top, ms, wrong = answer(name, sql, 'force_custom_plan',
                                ['SET enable_indexscan = off', 'SET enable_bitmapscan = off'])
        line = '%-28s %-6s %-60s %9.3f ms' % (name, 'no idx', top[:60], ms)
        print(line); lines.append(line)
open(report, 'w').write('\n'.join(lines) + '\n')
PY
echo "report: $REPORT"
