#!/usr/bin/python3
"""The extension from Python, through psycopg2 as Debian ships it.

    PGHOST=... PGPORT=... PGDATABASE=... python3 test/clients/clients.py

psycopg2 sends its parameters inside the SQL text, as quoted literals
(as Django's default cursor and Rails' bind interpolation do), so
simhash(%s) reaches the server as simhash('...'): the case that failed
while the type was also named simhash.  Each check prints one line; the
last line counts them.
"""
import psycopg2

PAGES = [
    (1, 'The quick brown fox jumps over the lazy dog near the river bank.'),
    (2, 'The quick brown fox jumps over the lazy dog near the river bank!'),
    (3, 'An entirely different page about databases and their indexes.'),
]

passed = failed = 0


def check(name, ok, detail=''):
    global passed, failed
    if ok:
        passed += 1
        print('ok: ' + name)
    else:
        failed += 1
        print('FAILED: %s %s' % (name, detail))


conn = psycopg2.connect('')
conn.autocommit = True
cur = conn.cursor()
cur.execute('DROP TABLE IF EXISTS py_pages')
cur.execute('CREATE TABLE py_pages (id int PRIMARY KEY, body text, fp simhash64)')
# the README's ingest: one statement per page, the fingerprint in the server
for pid, body in PAGES:
    cur.execute('INSERT INTO py_pages VALUES (%s, %s, simhash(%s))', (pid, body, body))
cur.execute('CREATE INDEX py_pages_fp ON py_pages USING simhash_perm (fp)')
cur.execute('ANALYZE py_pages')

# a fingerprint computed from a %s parameter equals the stored one
cur.execute('SELECT simhash(%s) = (SELECT fp FROM py_pages WHERE id = 1)', (PAGES[0][1],))
check('simhash(%s) computes the fingerprint', cur.fetchone()[0] is True)

# the README's first query: is this page a near-copy of one we have?
cur.execute('SET enable_seqscan = off')
cur.execute('SELECT id FROM py_pages WHERE hamming_near(fp, simhash(%s), 3) ORDER BY id',
            (PAGES[0][1],))
ids = [r[0] for r in cur.fetchall()]
check('hamming_near(fp, simhash(%s), 3) finds the page and its near-copy', ids == [1, 2], ids)
cur.execute('EXPLAIN (COSTS OFF) SELECT id FROM py_pages WHERE hamming_near(fp, simhash(%s), 3)',
            (PAGES[0][1],))
plan = '\n'.join(r[0] for r in cur.fetchall())
check('... through the index', 'py_pages_fp' in plan, plan)
cur.execute('SELECT id, fp <-> simhash(%s) AS d FROM py_pages ORDER BY fp <-> simhash(%s) LIMIT 2',
            (PAGES[0][1], PAGES[0][1]))
rows = cur.fetchall()
check('ORDER BY fp <-> simhash(%s) LIMIT 2', [r[0] for r in rows] == [1, 2] and rows[0][1] == 0, rows)
cur.execute('RESET enable_seqscan')

# fingerprints come back as their hexadecimal text, and go in the same way
cur.execute('SELECT fp::text FROM py_pages WHERE id = 3')
hexfp = cur.fetchone()[0]
cur.execute('SELECT %s::simhash64 = fp FROM py_pages WHERE id = 3', (hexfp,))
check('a fingerprint read as text casts back to simhash64', cur.fetchone()[0] is True, hexfp)

# COPY of hexadecimal fingerprints
import io
cur.execute('CREATE TEMP TABLE py_copy (fp simhash64)')
cur.copy_expert('COPY py_copy FROM STDIN', io.StringIO(hexfp + '\n0x0123456789ABCDEF\n'))
cur.execute("SELECT count(*) FROM py_copy WHERE fp IN (%s::simhash64, '0123456789abcdef')", (hexfp,))
check('COPY of hexadecimal fingerprints', cur.fetchone()[0] == 2)

# a bad fingerprint is a clear error with its SQLSTATE
try:
    cur.execute('SELECT %s::simhash64', ('not a fingerprint',))
    check('a bad fingerprint is refused', False, 'no error')
except psycopg2.Error as e:
    check('a bad fingerprint is refused with SQLSTATE 22P02', e.pgcode == '22P02', e.pgcode)

cur.execute('DROP TABLE py_pages')
conn.close()
print('psycopg2 %s: %d of %d checks passed' % (psycopg2.__version__.split()[0], passed, passed + failed))
raise SystemExit(1 if failed else 0)
