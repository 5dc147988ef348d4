// The extension from Node.js, through node-postgres (npm "pg"), which sends
// its parameters separately ($1, $2) with no type: the server must resolve
// simhash($1) to simhash(text).  Run by test/clients/run.sh; each check
// prints one line, the last line counts them.
'use strict';
const { Client } = require('pg');

const pages = [
  [1, 'The quick brown fox jumps over the lazy dog near the river bank.'],
  [2, 'The quick brown fox jumps over the lazy dog near the river bank!'],
  [3, 'An entirely different page about databases and their indexes.'],
];
let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) { passed++; console.log('ok: ' + name); }
  else { failed++; console.log('FAILED: ' + name + ' ' + JSON.stringify(detail)); }
}

async function main() {
  const c = new Client();   // PGHOST, PGPORT, PGUSER, PGDATABASE
  await c.connect();
  await c.query('DROP TABLE IF EXISTS js_pages');
  await c.query('CREATE TABLE js_pages (id int PRIMARY KEY, body text, fp simhash64)');
  for (const [id, body] of pages)
    await c.query('INSERT INTO js_pages VALUES ($1, $2, simhash($2))', [id, body]);
  await c.query('CREATE INDEX js_pages_fp ON js_pages USING simhash_perm (fp)');
  await c.query('ANALYZE js_pages');

  let r = await c.query('SELECT simhash($1) = (SELECT fp FROM js_pages WHERE id = 1) AS same', [pages[0][1]]);
  check('simhash($1) computes the fingerprint', r.rows[0].same === true, r.rows);

  await c.query('SET enable_seqscan = off');
  r = await c.query('SELECT id FROM js_pages WHERE hamming_near(fp, simhash($1), 3) ORDER BY id', [pages[0][1]]);
  const ids = r.rows.map((x) => x.id);
  check('hamming_near(fp, simhash($1), 3) finds the page and its near-copy',
        JSON.stringify(ids) === '[1,2]', ids);
  r = await c.query('EXPLAIN (COSTS OFF) SELECT id FROM js_pages WHERE hamming_near(fp, simhash($1), 3)', [pages[0][1]]);
  const plan = r.rows.map((x) => x['QUERY PLAN']).join('\n');
  check('... through the index', plan.includes('js_pages_fp'), plan);
  r = await c.query('SELECT id, fp <-> simhash($1) AS d FROM js_pages ORDER BY fp <-> simhash($1) LIMIT 2', [pages[0][1]]);
  check('ORDER BY fp <-> simhash($1) LIMIT 2', r.rows[0].id === 1 && r.rows[1].id === 2 && r.rows[0].d === 0, r.rows);
  await c.query('RESET enable_seqscan');

  // a prepared statement, typed by the server
  r = await c.query({ name: 'fp_of', text: 'SELECT simhash($1)::text AS fp', values: [pages[2][1]] });
  const hex = r.rows[0].fp;
  r = await c.query({ name: 'fp_of', text: 'SELECT simhash($1)::text AS fp', values: [pages[2][1]] });
  check('a named prepared statement with simhash($1)', r.rows[0].fp === hex && /^[0-9a-f]{16}$/.test(hex), hex);
  r = await c.query('SELECT $1::simhash64 = fp AS same FROM js_pages WHERE id = 3', [hex]);
  check('a fingerprint read as text casts back to simhash64', r.rows[0].same === true, r.rows);

  try {
    await c.query('SELECT $1::simhash64', ['not a fingerprint']);
    check('a bad fingerprint is refused', false, 'no error');
  } catch (e) {
    check('a bad fingerprint is refused with SQLSTATE 22P02', e.code === '22P02', e.code);
  }
  await c.query('DROP TABLE js_pages');
  await c.end();
  console.log(`node-postgres ${require('pg/package.json').version}: ${passed} of ${passed + failed} checks passed`);
  process.exit(failed ? 1 : 0);
}
main().catch((e) => { console.log('FAILED: ' + e.stack); process.exit(1); });
