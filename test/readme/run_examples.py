#!/usr/bin/python3
"""Run every SQL example of the documentation, as the documents show it.

    PGHOST=... PGPORT=... PGUSER=... python3 test/readme/run_examples.py [FILE.md ...]

The examples are read from the documents themselves, so a changed example
is a changed test.  The documents are README.md and every Markdown file
under docs/ (reports included), or the files named on the command line;
test/docs/check_docs.py checks that no other Markdown file of the
repository holds an SQL example.  Each ```sql block must have, on the line
above it, a comment that says how to run it (invisible on a rendered page):

    <!-- example: setup=docs index=docs_fp_idx $1="'some words'" -->

README.md runs as a reader pastes it: its examples in reading order, in one
database, with nothing created that the README does not create (setup= and
data= are refused there).  Each example of docs/ runs in a database of its
own, with the fixtures it names:

  setup=A,B   fixtures (test/readme/fixtures.sql) run first, in order
  data=A      fixture run right after the example's last CREATE INDEX
  index=I,J   every statement that searches by distance (hamming_near, or
              ORDER BY ... <->) must be planned on one of these indexes
              (EXPLAIN), as the document says it is
  $N="SQL"    what $N stands for: a client's parameter, put in the text as a
              quoted literal, as psycopg2 sends it
  skip="why"  not run here; the reason is printed

A comment line "--  value" (two spaces) right after a statement is the
output the document shows for it: the statement must return that one value.
Statements run one at a time through psycopg2 (autocommit; BEGIN and COMMIT
in an example are its own).  Each example prints a line naming its file
and line; the last line counts the examples.
"""
import os
import re
import sys

import psycopg2

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANNOTATION = re.compile(r'^<!--\s*example:(.*?)-->\s*$')
ARG = re.compile(r'(\$\d+|\w+)=("[^"]*"|\S+)')
OUTPUT = re.compile(r'^--  (\S.*)$')
SEARCH = re.compile(r'hamming_near\s*\(|ORDER BY[^;]*<->', re.I | re.S)


def fixtures():
    found, name = {}, None
    for line in open(os.path.join(ROOT, 'test/readme/fixtures.sql'), encoding='utf-8'):
        m = re.match(r'^-- fixture: (\w+)\s*$', line)
        if m:
            name = m.group(1)
            found[name] = ''
        elif name:
            found[name] += line
    return found


def documents():
    """README.md, then every Markdown file under docs/, in name order"""
    found = [os.path.join(ROOT, 'README.md')]
    for top, dirs, files in os.walk(os.path.join(ROOT, 'docs')):
        dirs.sort()
        found += [os.path.join(top, f) for f in sorted(files) if f.endswith('.md')]
    return found


def examples(path):
    """(line number, annotation dict, SQL text) of every ```sql block"""
    lines = open(path, encoding='utf-8').read().split('\n')
    out = []
    for i, line in enumerate(lines):
        if line.strip() != '```sql':
            continue
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        m = ANNOTATION.match(lines[j].strip()) if j >= 0 else None
        args = {}
        if m:
            for k, v in ARG.findall(m.group(1)):
                args[k] = v[1:-1] if v.startswith('"') else v
        end = i + 1
        while lines[end].strip() != '```':
            end += 1
        out.append((i + 1, args if m else None, '\n'.join(lines[i + 1:end])))
    return out


def statements(sql):
    """(statement, expected output or None), split at a ; that ends a line"""
    result, cur, quote = [], [], False
    for line in sql.split('\n'):
        m = OUTPUT.match(line.strip())
        if m and not cur and result and result[-1][1] is None:
            result[-1] = (result[-1][0], m.group(1))
            continue
        if not cur and (not line.strip() or line.strip().startswith('--')):
            continue
        cur.append(line)
        quote ^= line.count("'") % 2 == 1
        code = re.sub(r"'[^']*'", "''", line)
        code = code.split('--')[0].rstrip()
        if not quote and code.endswith(';'):
            result.append(('\n'.join(cur), None))
            cur = []
    if cur:
        result.append(('\n'.join(cur), None))
    return result


def connect(db):
    conn = psycopg2.connect(dbname=db)
    conn.autocommit = True
    return conn


def create_database(db):
    admin = connect('postgres')
    acur = admin.cursor()
    acur.execute('SET client_min_messages = warning')
    acur.execute('DROP DATABASE IF EXISTS %s' % db)
    acur.execute('CREATE DATABASE %s' % db)
    admin.close()


def drop_database(db):
    admin = connect('postgres')
    acur = admin.cursor()
    acur.execute('SET client_min_messages = warning')
    acur.execute('DROP DATABASE IF EXISTS %s' % db)
    admin.close()


def run_example(conn, where, args, sql, fx):
    """Run one example on the connection; True when it ran as shown"""
    cur = conn.cursor()
    checked_plans = checked_outputs = 0
    try:
        for name in filter(None, args.get('setup', '').split(',')):
            cur.execute(fx[name])
        stmts = statements(sql)
        for k, v in args.items():
            if k.startswith('$'):
                stmts = [(re.sub(re.escape(k) + r'\b', lambda _: v, s), o) for s, o in stmts]
        last_index = max([i for i, (s, _) in enumerate(stmts)
                          if re.match(r'\s*CREATE\s+INDEX', s, re.I)] or [-1])
        if 'data' in args and last_index < 0:
            cur.execute(fx[args['data']])
        indexes = [x for x in args.get('index', '').split(',') if x]
        for i, (stmt, expect) in enumerate(stmts):
            if indexes and SEARCH.search(stmt) and \
                    re.match(r'\s*(SELECT|DELETE|UPDATE|INSERT|CREATE\s+TEMP\s+TABLE)', stmt, re.I):
                explain = re.sub(r'^\s*CREATE\s+TEMP\s+TABLE\s+\w+\s+AS\s+', '', stmt, flags=re.I)
                cur.execute('EXPLAIN (COSTS OFF) ' + explain.rstrip().rstrip(';'))
                plan = '\n'.join(r[0] for r in cur.fetchall())
                if not any(re.search(r'\b%s\b' % re.escape(x), plan) for x in indexes):
                    raise AssertionError('not planned on %s:\n%s\n%s' % (' or '.join(indexes), stmt, plan))
                checked_plans += 1
            cur.execute(stmt)
            if expect is not None:
                got = cur.fetchall()
                if len(got) != 1 or len(got[0]) != 1 or str(got[0][0]) != expect:
                    raise AssertionError('%s\nreturned %r, the document shows %r' % (stmt, got, expect))
                checked_outputs += 1
            if i == last_index and 'data' in args:
                cur.execute(fx[args['data']])
        print('ok: %s: %d statements, %d plans and %d outputs checked'
              % (where, len(stmts), checked_plans, checked_outputs))
        return True
    except (psycopg2.Error, AssertionError) as e:
        print('FAILED: %s: %s' % (where, str(e).strip()))
        return False


def main():
    paths = sys.argv[1:] or documents()
    fx = fixtures()
    passed = failed = skipped = 0
    n = 0
    for path in paths:
        name = os.path.relpath(os.path.abspath(path), ROOT)
        # README.md: one database, in reading order, as a reader pastes it
        whole = (name == 'README.md')
        conn = None
        if whole:
            db = 'readme_example_%d' % n
            create_database(db)
            conn = connect(db)
        for line, args, sql in examples(path):
            where = '%s:%d' % (name, line)
            if args is None:
                print('FAILED: %s: an SQL example without an "<!-- example: ... -->" comment' % where)
                failed += 1
            elif 'skip' in args:
                print('skipped: %s: %s' % (where, args['skip']))
                skipped += 1
            elif whole and ('setup' in args or 'data' in args):
                print('FAILED: %s: README.md creates what its examples use (no setup= or data=)' % where)
                failed += 1
            elif whole:
                if run_example(conn, where, args, sql, fx):
                    passed += 1
                else:
                    failed += 1
            else:
                db = 'readme_example_%d' % n
                create_database(db)
                one = connect(db)
                try:
                    ok = run_example(one, where, args, sql, fx)
                finally:
                    one.close()
                    drop_database(db)
                if ok:
                    passed += 1
                else:
                    failed += 1
            n += 1
        if whole:
            conn.close()
            drop_database(db)
    print('SQL examples of %d documents: %d of %d ran as shown, %d skipped with a reason'
          % (len(paths), passed, passed + failed + skipped, skipped))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
