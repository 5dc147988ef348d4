#!/usr/bin/python3
"""Bounded, seeded fuzzing of simhash's SQL functions, for test/sanitize.sh.

    sanitize_fuzz.py --seconds 90 --seed 1 --db fuzz_utf8:UTF8 --db fuzz_ascii:SQL_ASCII \
        --server-log LOG --sanitizer-dir DIR --work-dir DIR [--keep-dir DIR]

Until --seconds have passed, it generates batches of SQL statements and runs
each batch through psql (found on PATH; PGHOST, PGPORT and PGUSER come from
the environment), turn by turn in each database.  Batch b in database d is
made by random.Random(f"{seed}:{d}:{b}"): the same seed gives the same
statements, so a failing batch can be replayed (it is kept in --keep-dir).

The statements feed random and mutated values to the type inputs
(simhash_in, simhash_query_in, simhash_recv through a binary COPY), the
Hamming functions and operators, simhash() and simhash128() on texts
(random UTF-8 from many scripts; in a SQL_ASCII database also invalid byte
sequences, which reach the tokenizer unchecked), on text[] with weights and
on tsvectors, the
tokens, the feature count, simhash_jaccard, simhash_chargrams, minhash,
minhash_jaccard and minhash_bands, with random shingle arrays (NULL
elements, out-of-range values, empty, multidimensional, other lower
bounds) and random option strings.  Each batch also builds a simhash_perm
index with random options on a table of random fingerprints (duplicates,
clusters, skewed bits, NULLs) and inserts, deletes, updates, vacuums,
reindexes and checks it, querying it with random radii through index and
bitmap scans, joins and prepared statements.  Each index answer is compared
with a sequential scan's; a difference prints MISMATCH and fails the run.

SQL errors are expected and ignored, except an internal error (SQLSTATE
XX000, what elog(ERROR) raises): every error a user can reach must carry
a SQLSTATE of its own class, so such an error fails the run (psql runs
with VERBOSITY=verbose to show the codes).  The run stops and fails if psql
loses its connection (a backend died), if the server log shows a backend
terminated by a signal or exiting abnormally, an UndefinedBehaviorSanitizer
"runtime error:" or an AddressSanitizer report, or if a file appears in
--sanitizer-dir.  A MISMATCH fails the run too, but the run goes on.  Each
failing batch and its output are copied to --keep-dir.  The last line
counts the statements.
"""

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time

INT4_EDGES = [0, 1, -1, 2, 7, 8, 9, 16, 17, 63, 64, 65, 127, 128, 255, 256,
              4095, 4096, 4097, 32767, 65536, 2147483647, -2147483648]
# server log lines that fail the run: a backend that died (ASan and UBSan
# abort, so a report shows as signal 6) or a sanitizer's own output
BAD_LOG = re.compile(rb'terminated by signal|was terminated by exception|'
                     rb'server process \(PID \d+\) exited with exit code|runtime error:|'
                     rb'AddressSanitizer|UndefinedBehaviorSanitizer|PANIC:|TRAP:')

# code point ranges the text generator draws from: (weight, first, last)
RANGES = [
    (30, 0x61, 0x7a), (6, 0x41, 0x5a), (6, 0x30, 0x39),
    (6, 0x4e00, 0x9fff),     # CJK unified ideographs
    (2, 0x3400, 0x4dbf),     # extension A
    (2, 0x20000, 0x2a6df),   # extension B: 4-byte UTF-8
    (3, 0x3040, 0x309f),     # hiragana
    (3, 0x30a0, 0x30ff),     # katakana
    (1, 0xff65, 0xff9f),     # halfwidth katakana
    (1, 0x3100, 0x312f),     # bopomofo
    (2, 0xac00, 0xd7a3),     # hangul
    (1, 0x3000, 0x303f),     # CJK punctuation
    (1, 0xff01, 0xff5e),     # fullwidth ASCII
    (3, 0xc0, 0x17f),        # Latin-1, Latin extended-A
    (2, 0x391, 0x3c9),       # Greek
    (2, 0x400, 0x44f),       # Cyrillic
    (1, 0x5d0, 0x5ea),       # Hebrew
    (1, 0x621, 0x64a),       # Arabic
    (1, 0x900, 0x97f),       # Devanagari
    (1, 0xe01, 0xe5b),       # Thai
    (2, 0x300, 0x36f),       # combining marks
    (1, 0x1f300, 0x1faff),   # emoji
    (1, 0xfe00, 0xfe0f),     # variation selectors
    (1, 0xe000, 0xf8ff),     # private use
    (1, 0x80, 0x10ffff),     # anything
]
RANGE_WEIGHTS = [r[0] for r in RANGES]
SPECIAL_CHARS = ['\u0130', '\u0131', '\u00df', '\ufb01', '\u03a3', '\u03c2', '\u01c5',
                 '\u1e9e', '\u2126', '\u212a', '\u0345', '\ufeff', '\u200b', '\u200d',
                 '\u00a0', '\u3000', '\u2028', '\ufffe', '\uffff', '\U0010ffff',
                 "'", '\\', '"', '\t', '\n', '\r']
SEPARATORS = [' ', ' ', ' ', '  ', '\n', '\t', ', ', '. ', '! ', '? ', ' - ', '\u2014',
              '\u2026', '\u3002', '\uff0c', '\u3001', '/', '_', "'", '-', '']
WEIGHTINGS = ['tf', 'binary', 'log']
CJK_MODES = ['unigram', 'bigram']


def lit(b):
    """A standard SQL string literal of bytes b (NUL bytes cannot be sent)."""
    return b"'" + b.replace(b'\0', b'').replace(b"'", b"''") + b"'"


def elit(b):
    """An escape-string literal: every byte as \\xHH."""
    return b"E'" + b''.join(b'\\x%02x' % c for c in b.replace(b'\0', b'')) + b"'"


class Gen:
    def __init__(self, rng, encoding, copy_file):
        self.r = rng
        self.enc = encoding
        self.copy_file = copy_file      # absolute: COPY TO refuses relative paths
        # which characters the database can hold; the client sends UTF-8
        # except to SQL_ASCII, which gets raw bytes
        self.codec = {'LATIN1': 'latin-1', 'EUC_JP': 'euc_jp'}.get(encoding)

    # ---- values
    def int4(self, lo=-5, hi=70):
        r = self.r.random()
        if r < 0.75:
            return self.r.randint(lo, hi)
        return self.r.choice(INT4_EDGES)

    def fp_hex(self):
        return '%016x' % self.r.getrandbits(64)

    def fp_lit(self):
        """A valid simhash literal, usually."""
        return b"'" + self.fp_hex().encode() + b"'::simhash64"

    def int8(self):
        v = self.r.getrandbits(64)
        return v - (1 << 64) if v >= 1 << 63 else v

    def int8_lit(self):
        return b'(%d)::bigint' % self.int8()

    def fp_input(self):
        """Random and mutated text for simhash_in."""
        r = self.r
        s = self.fp_hex()
        k = r.randrange(14)
        if k == 0:
            s = s.upper()
        elif k == 1:
            s = r.choice(['0x', '0X', 'x', '0x0x', '#', '\\x', '+', '-', ' ', '0']) + s
        elif k == 2:
            s = s[:r.randrange(17)]
        elif k == 3:
            s = s + r.choice(['0', 'f', ' ', '\n', 'g', '00', 'ffffffff', '\u00e9'])
        elif k == 4:
            i = r.randrange(16)
            s = s[:i] + r.choice('ghxzGXZ -+.,/\\\'"\t\u00e9\u4e2d\U0001f600') + s[i + 1:]
        elif k == 5:
            s = ''.join(r.choice('0123456789abcdefABCDEFxX') for _ in range(r.randrange(40)))
        elif k == 6:
            s = '0x' + s[:r.randrange(17)]
        elif k == 7:
            s = ' ' * r.randrange(3) + s + ' ' * r.randrange(3)
        elif k == 8:
            s = self.text(r.randrange(30))
        elif k == 9:
            s = s * r.randint(2, 300)
        elif k == 10:
            s = r.choice(['', '0', '0x', 'x', '-0', 'NaN', '18446744073709551615',
                          '-1', '0xffffffffffffffff', '0x10000000000000000'])
        return s

    def query_input(self):
        """Random and mutated text for simhash_query_in ('fp/radius')."""
        r = self.r
        fp = self.fp_input() if r.random() < 0.3 else self.fp_hex()
        k = r.randrange(10)
        if k < 5:
            return '%s/%d' % (fp, self.int4(-3, 70))
        radius = r.choice(['', '+3', '-0', '3x', ' 3', '3 ', '03', '0x3', '3.0', '1e1',
                           '99999999999999999999', '2147483648', '-2147483649',
                           '\u0663', 'three'])
        sep = r.choice(['/', '//', ' / ', '\\', '', '/3/'])
        return fp + sep + radius

    def shingles(self):
        r = self.r
        k = r.randrange(20)
        if k < 9:
            n = r.randint(1, 8)
            vals = r.sample(range(1, 9), n)
            return ('ARRAY[%s]::int4[]' % ','.join(map(str, vals))).encode()
        if k == 9:
            return b"'{}'::int4[]"
        if k == 10:
            return b'NULL::int4[]'
        if k == 11:
            return r.choice([b"'{{1,2},{3,4}}'::int4[]", b"'[0:1]={1,3}'::int4[]",
                             b"'[-5:-4]={2,4}'::int4[]", b"'{{{3}}}'::int4[]",
                             b"'{{1},{NULL}}'::int4[]"])
        vals = []
        for _ in range(r.randint(1, 12)):
            if r.random() < 0.15:
                vals.append('NULL')
            else:
                vals.append(str(self.int4(-2, 12)))
        return ('ARRAY[%s]::int4[]' % ','.join(vals)).encode()

    def option(self, valid):
        r = self.r
        if r.random() < 0.95:
            return lit(r.choice(valid).encode())
        s = r.choice(['', 'TF', 'idf', 'log ', ' binary', 'trigram', 'Unigram', 'none',
                      'tf\ttf', 'x' * r.randint(1, 200)] + [self.text(r.randrange(10))])
        return lit(self.enc_text(s))

    # ---- texts
    def char(self):
        r = self.r
        if r.random() < 0.03:
            return r.choice(SPECIAL_CHARS)
        _, lo, hi = r.choices(RANGES, RANGE_WEIGHTS)[0]
        while True:
            c = r.randint(lo, hi)
            if not 0xd800 <= c <= 0xdfff:
                return chr(c)

    def word(self):
        r = self.r
        k = r.random()
        if k < 0.01:
            return r.choice('aZ\u4e2d') * r.randint(100, 3000)
        n = r.choice([1, 1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 20])
        return ''.join(self.char() for _ in range(n))

    def text(self, approx_len):
        r = self.r
        parts = []
        length = 0
        vocab = [self.word() for _ in range(r.randint(1, 12))]
        while length < approx_len:
            w = r.choice(vocab) if r.random() < 0.5 else self.word()
            parts.append(w)
            parts.append(r.choice(SEPARATORS))
            length += len(w) + 1
        return ''.join(parts)

    def enc_text(self, s):
        """s as the bytes the client sends to this database."""
        if self.codec:
            s = ''.join(c for c in s if self._encodable(c))
        return s.encode('utf-8')

    def _encodable(self, c):
        try:
            c.encode(self.codec)
            return True
        except UnicodeEncodeError:
            return False

    def doc_len(self):
        r = self.r.random()
        if r < 0.1:
            return 0
        if r < 0.65:
            return self.r.randint(1, 80)
        if r < 0.97:
            return self.r.randint(80, 1500)
        return self.r.randint(8000, 40000)

    def invalid_bytes(self):
        return self.r.choice([
            b'\x80', b'\xbf', b'\xc0\x80', b'\xc1\xbf', b'\xc3', b'\xe3\x81', b'\xe4',
            b'\xe0\x80\x80', b'\xed\xa0\x80', b'\xed\xbf\xbf', b'\xef\xbf\xbe',
            b'\xf0\x80\x80\x80', b'\xf0\x9f', b'\xf4\x90\x80\x80', b'\xf5\x80\x80\x80',
            b'\xf8\x88\x80\x80\x80', b'\xfc\x84\x80\x80\x80\x80', b'\xfe', b'\xff',
            bytes(self.r.randint(0x80, 0xff) for _ in range(self.r.randint(1, 6)))])

    def doc_bytes(self, length=None):
        """A document as the client sends it; in SQL_ASCII also invalid UTF-8."""
        r = self.r
        b = self.enc_text(self.text(self.doc_len() if length is None else length))
        if self.enc == 'SQL_ASCII' and r.random() < 0.6:
            pieces = bytearray(b)
            for _ in range(r.randint(1, 8)):
                pos = r.randint(0, len(pieces))
                pieces[pos:pos] = self.invalid_bytes()
            if r.random() < 0.3:       # a sequence cut off at the very end
                pieces += r.choice([b'\xe4\xb8', b'\xf0\x9f\x98', b'\xc3', b'\xe3'])
            b = bytes(pieces)
        # Large texts get their own malloc'd block from palloc, so a read
        # past their end reaches AddressSanitizer's redzone when no
        # alignment padding hides it: make the varlena's size (4-byte
        # header + bytes) a multiple of 8 half the time.
        if len(b) > 8192 and r.random() < 0.5:
            b += b'a' * ((4 - len(b)) % 8)
        return b

    def doc(self, length=None):
        """A text-typed SQL expression holding a document."""
        b = self.doc_bytes(length)
        r = self.r.random()
        if self.enc == 'SQL_ASCII' and r < 0.15:
            return elit(b) + b'::text'
        if r < 0.05 and len(b) < 2000:
            return b'repeat(' + lit(b) + b', %d)' % self.r.randint(0, 50)
        return lit(b) + b'::text'

    def mutate_doc(self, b):
        r = self.r
        b = bytearray(b)
        for _ in range(r.randint(0, 5)):
            if not b:
                break
            i = r.randrange(len(b))
            op = r.randrange(3)
            if op == 0:
                del b[i:i + r.randint(1, 10)]
            elif op == 1:
                b[i:i] = self.enc_text(self.word() + ' ')
            else:
                j = r.randrange(len(b))
                b[i:i] = b[j:j + r.randint(1, 20)]
        return bytes(b)

    # ---- statements
    def st_type_input(self):
        r = self.r
        s = lit(self.enc_text(self.fp_input()))
        k = r.randrange(4)
        if k == 0:
            return [b'SELECT ' + s + b'::simhash64;']
        if k == 1:
            return [b'SELECT ' + s + b'::text::simhash64;']
        if k == 2:
            return [b'SELECT simhash_in(' + s + b'::cstring);']
        return [b'SELECT ' + s + b'::simhash64::text::simhash64::bigint;']

    def st_query_input(self):
        s = lit(self.enc_text(self.query_input()))
        if self.r.random() < 0.5:
            return [b'SELECT ' + s + b'::simhash_query;']
        return [b'SELECT ' + self.fp_lit() + b' <@ ' + s + b'::simhash_query, '
                + self.int8_lit() + b' <@ ' + s + b'::simhash_query;']

    def st_hamming(self):
        r = self.r
        a, b = self.fp_lit(), self.fp_lit()
        k = str(self.int4(-3, 70)).encode()
        x, y = self.int8_lit(), self.int8_lit()
        return r.choice([
            [b'SELECT hamming_distance(%s, %s), %s <-> %s, hamming_near(%s, %s, %s);'
             % (a, b, a, b, a, b, k)],
            [b'SELECT hamming_distance(%s, %s), hamming_near(%s, %s, %s);'
             % (x, y, x, y, k)],
            [b'SELECT %s <@ simhash_within(%s, %s), simhash_within(%s, %s)::text;' % (a, b, k, b, k)],
            [b'SELECT %s <@ simhash_within(%s, %s);' % (x, b, k)],
            [b'SELECT %s < %s, %s <= %s, %s = %s, %s <> %s, %s >= %s, %s > %s, simhash_cmp(%s, %s);'
             % (a, b, a, b, a, b, a, b, a, b, a, b, a, b)],
            [b'SELECT simhash_hash(%s), simhash_hash_extended(%s, %s);' % (a, a, x)],
            [b'SELECT %s::bit(64), %s::bytea, %s::bigint, %s::simhash64;' % (a, a, a, x)],
            [b'SELECT array_agg(v ORDER BY v), count(DISTINCT v) FROM (VALUES %s) t(v);'
             % b', '.join(b'(%s)' % self.fp_lit() for _ in range(r.randint(1, 40)))],
            [b'SELECT v, count(*) FROM (VALUES %s) t(v) GROUP BY v ORDER BY 2 DESC LIMIT 3;'
             % b', '.join(b'(%s)' % r.choice([a, b, self.fp_lit()]) for _ in range(r.randint(1, 40)))],
        ])

    def st_recv(self):
        """simhash_recv through a binary COPY of a bytea of random length."""
        r = self.r
        n = r.choice([8, 8, 8, 0, 1, 7, 9, 16, r.randint(0, 40)])
        data = bytes(r.getrandbits(8) for _ in range(n))
        f = lit(self.copy_file.encode())
        return [b"COPY (SELECT '\\x" + data.hex().encode() + b"'::bytea) TO " + f + b' (FORMAT binary);',
                b'CREATE TEMP TABLE IF NOT EXISTS fz_recv (fp simhash64);',
                b'COPY fz_recv FROM ' + f + b' (FORMAT binary);',
                b'SELECT fp, fp::bigint FROM fz_recv;',
                b'TRUNCATE fz_recv;']

    def st_simhash_text(self):
        r = self.r
        d = self.doc()
        k = r.randrange(8)
        if k == 0:
            return [b'SELECT simhash(%s);' % d]
        if k == 1:
            return [b'SELECT simhash(%s::varchar, %s, %s, %s);'
                    % (d, self.shingles(), self.option(WEIGHTINGS), self.option(CJK_MODES))]
        if k == 2:
            return [b'SELECT simhash(%s, shingles => %s);' % (d, self.shingles())]
        if k == 3:
            return [b'SELECT simhash(%s, weighting => %s, cjk => %s);'
                    % (d, self.option(WEIGHTINGS), self.option(CJK_MODES))]
        if k == 4:
            return [b'SELECT simhash_feature_count(%s, %s, %s, %s);'
                    % (d, self.shingles(), self.option(WEIGHTINGS), self.option(CJK_MODES))]
        if k == 5:
            mf = str(r.choice([0, 1, 64, -1, 10 ** 12, -9223372036854775808,
                               9223372036854775807, r.randint(0, 300)])).encode()
            return [b'SELECT simhash_is_reliable(%s, %s, %s, %s, %s);'
                    % (d, mf, self.shingles(), self.option(WEIGHTINGS), self.option(CJK_MODES))]
        if k == 6:
            # the 128-bit fingerprint: 128 bits, the leftmost 64 simhash()'s
            opts = (self.shingles(), self.option(WEIGHTINGS), self.option(CJK_MODES))
            return [b"SELECT 'MISMATCH simhash128' AS x WHERE (SELECT length(f) <> 128 "
                    b"OR f::bit(64) <> simhash(%s, %s, %s, %s)::bit(64) "
                    b"FROM simhash128(%s, %s, %s, %s) f);" % ((d,) + opts + (d,) + opts)]
        return [b'SELECT simhash(%s, %s, %s, %s);'
                % (d, self.shingles(), self.option(WEIGHTINGS), self.option(CJK_MODES))]

    def st_sentences(self):
        """The sentence signature of random (and invalid) text, with random
        k: each hash once, sorted, at most k, and overlapping itself fully."""
        r = self.r
        d = self.doc()
        k = r.choice([1, 2, 3, 5, 8, 1000]) if r.random() < 0.9 else self.int4(-3, 1003)
        return [b"SELECT 'MISMATCH sentences' AS x WHERE (SELECT cardinality(s) > %d "
                b"OR simhash_sentence_overlap(s, s) <> cardinality(s) "
                b"OR s <> ARRAY(SELECT DISTINCT unnest(s) ORDER BY 1) "
                b"FROM simhash_sentences(%s, %d) s);" % (k, d, k)]

    def st_tokens(self):
        d = self.doc()
        return [b'SELECT cardinality(t), md5(t::text) FROM simhash_tokens(%s, %s) t;'
                % (d, self.option(CJK_MODES))]

    def text_array(self):
        r = self.r
        k = r.randrange(12)
        if k == 0:
            return b"'{}'::text[]", 0
        if k == 1:
            return b"'{{a,b},{c,NULL}}'::text[]", 4
        if k == 2:
            return b"'[3:4]={x,y}'::text[]", 2
        els = []
        for _ in range(r.choice([1, 2, 3, 5, 10, 50, r.randint(0, 3000)])):
            if r.random() < 0.08:
                els.append(b'NULL')
            else:
                els.append(lit(self.enc_text(self.word() if r.random() < 0.9 else '')))
        if not els:
            return b"'{}'::text[]", 0
        return b'ARRAY[' + b','.join(els) + b']::text[]', len(els)

    def real_array(self, n):
        r = self.r
        els = []
        for _ in range(n):
            x = r.random()
            if x < 0.05:
                els.append(b'NULL')
            elif x < 0.1:
                els.append(r.choice([b"'NaN'", b"'Infinity'", b"'-Infinity'", b'3.4e38',
                                     b'-3.4e38', b'1e-45', b'-0', b'0']))
            else:
                els.append(b'%.4g' % r.uniform(-10, 10))
        return b'ARRAY[' + b','.join(els) + b']::real[]' if els else b"'{}'::real[]"

    def st_features(self):
        r = self.r
        a, n = self.text_array()
        if r.random() < 0.5:
            return [b'SELECT simhash(%s);' % a]
        if r.random() < 0.2:
            n += r.choice([-1, 1, 5])
        return [b'SELECT simhash(%s, %s);' % (a, self.real_array(max(n, 0)))]

    def st_tsvector(self):
        r = self.r
        k = r.randrange(4)
        if k == 0:
            return [b"SELECT simhash(to_tsvector('simple', %s));" % self.doc()]
        if k == 1:
            return [b"SELECT simhash(strip(to_tsvector('english', %s)));" % self.doc()]
        if k == 2:
            return [b"SELECT simhash(setweight(to_tsvector('simple', %s), 'A'));" % self.doc()]
        lexemes = []
        for _ in range(r.randint(0, 30)):
            w = self.word().replace("'", '').replace('\\', '').replace(' ', '').replace(':', '')
            if not w:
                continue
            pos = ','.join('%d%s' % (r.choice([1, 2, 3, 16383, r.randint(1, 100)]),
                                     r.choice(['', 'A', 'B', 'C', 'D']))
                           for _ in range(r.randint(0, 4)))
            lexemes.append("'" + w + "'" + (':' + pos if pos else ''))
        return [b'SELECT simhash(%s::tsvector);' % lit(self.enc_text(' '.join(lexemes)))]

    def st_jaccard(self):
        r = self.r
        a = self.doc_bytes()
        b = self.mutate_doc(a) if r.random() < 0.7 else self.doc_bytes()
        return [b'SELECT simhash_jaccard(%s::text, %s::text, %s, %s);'
                % (lit(a), lit(b), self.shingles(), self.option(CJK_MODES))]

    def st_chargrams(self):
        n = str(self.int4(-3, 20)).encode()
        return [b'SELECT simhash_chargrams(%s, %s, %s);' % (self.doc(), n, self.option(WEIGHTINGS))]

    def minhash_n(self):
        r = self.r
        return str(r.choice([1, 2, 16, 64, 128, 128, 256, r.randint(1, 300), 4096, 4097, 0, -1,
                             2147483647, -2147483648])).encode()

    def int8_array(self):
        r = self.r
        k = r.randrange(10)
        if k == 0:
            return b"'{}'::int8[]"
        if k == 1:
            return r.choice([b"'{{1,2},{3,4}}'::int8[]", b"'[0:2]={1,2,3}'::int8[]",
                             b"'{1,NULL,3}'::int8[]", b'NULL::int8[]'])
        if k < 5:
            return b'minhash(%s, %s)' % (self.doc(), self.minhash_n())
        n = r.choice([1, 2, 4, 8, 16, 128, r.randint(1, 500)])
        els = [b'NULL' if r.random() < 0.02 else b'%d' % self.int8() for _ in range(n)]
        return b'ARRAY[' + b','.join(els) + b']::int8[]'

    def st_minhash(self):
        r = self.r
        k = r.randrange(4)
        if k == 0:
            return [b'SELECT md5(minhash(%s, %s, %s, %s)::text);'
                    % (self.doc(), self.minhash_n(), self.shingles(), self.option(CJK_MODES))]
        if k == 1:
            a = self.doc_bytes()
            b = self.mutate_doc(a)
            n = self.minhash_n()
            return [b'SELECT minhash_jaccard(minhash(%s::text, %s), minhash(%s::text, %s));'
                    % (lit(a), n, lit(b), n if r.random() < 0.8 else self.minhash_n())]
        if k == 2:
            return [b'SELECT minhash_jaccard(%s, %s);' % (self.int8_array(), self.int8_array())]
        bands = str(r.choice([1, 2, 4, 8, 16, 3, 5, 0, -1, 128, 129, 2147483647,
                              r.randint(-2, 300)])).encode()
        return [b'SELECT md5(minhash_bands(%s, %s)::text);' % (self.int8_array(), bands)]

    # ---- the index
    def fp_expr(self):
        """A SQL expression of g giving well-mixed, duplicate, clustered or
        skewed fingerprints, or NULL."""
        r = self.r
        seed = r.randrange(1 << 30)
        mixed = ('((hashint8(g + %d)::bigint << 32) | (hashint8(-g - %d)::bigint & 4294967295))'
                 % (seed, seed))
        center = ('((hashint8(g / %d + %d)::bigint << 32) | (hashint8(-(g / %d) - %d)::bigint & 4294967295))'
                  % (r.randint(2, 200), seed, r.randint(2, 200), seed))
        k = r.randrange(6)
        if k == 0:
            e = mixed
        elif k == 1:        # clusters: a few bits flipped around shared centers
            e = '(%s # (1::bigint << (hashint8(g) & 63)::int) # (1::bigint << (g %% 64)::int))' % center
        elif k == 2:        # skewed: only some bits vary
            e = '(%s & (%d)::bigint)' % (mixed, self.int8())
        elif k == 3:        # long runs of one value
            e = 'CASE WHEN g %% %d < %d THEN (%d)::bigint ELSE %s END' % (
                r.randint(2, 10), r.randint(1, 9), self.int8(), mixed)
        elif k == 4:        # a handful of distinct values
            e = '(%s %% %d)' % (mixed, r.randint(1, 20))
        else:
            e = 'CASE g %% 3 WHEN 0 THEN %s WHEN 1 THEN %s ELSE (%s << %d) END' % (
                mixed, center, mixed, r.randint(0, 63))
        nulls = r.choice([0, 0, 0, 10, 50])
        if nulls:
            e = 'CASE WHEN g %% %d = 0 THEN NULL ELSE %s END' % (nulls, e)
        return e

    def index_options(self):
        r = self.r
        if r.random() < 0.25:
            return ''
        k = r.choice([0, 1, 2, 3, 3, 3, 4, 5, 6, 8, 12, -1, 13])
        opts = ['%s = %d' % (r.choice(['max_distance', 'radius']), k)]
        if r.random() < 0.6:
            opts.append('blocks = %d' % r.choice([k + 1, k + 2, k + 3, max(k, 0) + r.randint(0, 6), 16, 17, 1]))
        return ' WITH (%s)' % ', '.join(opts)

    def probe(self, table):
        """One index query with a random radius, checked against a seqscan."""
        r = self.r
        q = self.fp_lit() if r.random() < 0.4 else \
            b'(SELECT fp FROM %s WHERE fp IS NOT NULL OFFSET %d LIMIT 1)' % (table, r.randint(0, 50))
        k = self.int4(-1, 66) if r.random() < 0.1 else r.choice([0, 1, 2, 3, 3, 4, 5, 6, 8, 10, 13, 20, 32, 64])
        k = str(k).encode()
        truth = b'(SELECT count(*) FROM %s WHERE hamming_distance(fp, %s) <= %s)' % (table, q, k)
        pred = r.choice([
            b'hamming_near(fp, %s, %s)' % (q, k),
            b'hamming_near(%s, fp, %s)' % (q, k),
            b'fp <@ simhash_within(%s, %s)' % (q, k),
            b'b <@ simhash_within(%s, %s)' % (q, k),
            b'hamming_near(b, %s::bigint, %s)' % (q, k),
        ])
        scan = r.choice([[b'SET enable_bitmapscan = off;'], [b'SET enable_indexscan = off;'],
                         [b'RESET enable_bitmapscan;', b'RESET enable_indexscan;']])
        return scan + [b"SELECT 'MISMATCH index' AS x, %s, %s WHERE (SELECT count(*) FROM %s WHERE %s) "
                      b"IS DISTINCT FROM %s;" % (q, k, table, pred, truth)]

    def knn(self, table):
        """A nearest-neighbour query through the index, checked against a
        sort of the whole table: the same distances, position by position."""
        r = self.r
        q = self.fp_lit() if r.random() < 0.6 else \
            b'(SELECT fp FROM %s WHERE fp IS NOT NULL OFFSET %d LIMIT 1)' % (table, r.randint(0, 50))
        n = r.choice([b'1', b'3', b'10', b'100', b'ALL'])
        col, cast = r.choice([(b'fp', b''), (b'b', b'::simhash64')])
        cond = b''
        if r.random() < 0.3:
            cond = b'WHERE hamming_near(fp, %s, %d)' % (self.fp_lit() if r.random() < 0.5 else q, r.randint(0, 20))
        order = b'%s <-> %s%s' % (col, q, cast)
        truth = b'ARRAY(SELECT hamming_distance(%s%s, %s) AS d FROM %s %s ORDER BY 1 LIMIT %s)' % (
            col, b'::simhash64' if col == b'b' else b'', q, table, cond, n)
        return [b'SET enable_seqscan = off;', b'SET enable_sort = off;',
                b"SELECT 'MISMATCH knn' AS x, %s, '%s' WHERE ARRAY(SELECT %s FROM %s %s ORDER BY %s LIMIT %s) "
                b"IS DISTINCT FROM %s;" % (q, n, order, table, cond, order, n, truth),
                b'RESET enable_sort;']

    def pairs(self, table):
        """simhash_pairs() and simhash_clusters() against the self-join."""
        r = self.r
        k = r.choice([0, 1, 2, 3, 4, 6, 9, 12]) if r.random() < 0.95 else self.int4(-2, 14)
        wm = r.choice([b'64kB', b'1MB', b'64MB'])
        # on at most 600 rows, so that the self-join stays quick under ASan
        # the rows from the heap, through the executor (a view, a query),
        # or with text keys (kept in the key spool)
        source, a, b = r.choice([
            (b"simhash_pairs('fz_s', 'id', 'fp', %d) AS p(a int, b int, d int)", b'a', b'b'),
            (b"simhash_pairs('fz_sv', 'id', 'fp', %d) AS p(a int, b int, d int)", b'a', b'b'),
            (b"simhash_pairs_query('SELECT id, fp FROM fz_s', %d) AS p(a int, b int, d int)", b'a', b'b'),
            (b"simhash_pairs_query('SELECT lpad(id::text, 6, ''0''), fp FROM fz_s', %d) "
             b"AS p(a text, b text, d int)", b'a::int', b'b::int'),
        ])
        clusters = r.choice([
            b"simhash_clusters('fz_s', 'id', 'fp', %d, singletons => %s) AS c(id int, cluster int)",
            b"simhash_clusters_query('SELECT id, fp FROM fz_s', %d, singletons => %s) AS c(id int, cluster int)",
        ])
        return [b'DROP VIEW IF EXISTS fz_sv;', b'DROP TABLE IF EXISTS fz_s;',
                b'CREATE TABLE fz_s AS SELECT row_number() OVER (ORDER BY id, ctid)::int AS id, fp FROM %s LIMIT 600;' % table,
                b'CREATE VIEW fz_sv AS SELECT * FROM fz_s;',
                b"SET work_mem = '%s';" % wm,
                b"SELECT 'MISMATCH pairs' AS x, %d WHERE (SELECT array_agg((%s, %s, d) ORDER BY %s, %s) "
                b"FROM %s) IS DISTINCT FROM "
                b"(SELECT array_agg((x.id, y.id, hamming_distance(x.fp, y.fp)) ORDER BY x.id, y.id) "
                b"FROM %s x JOIN %s y ON x.id < y.id AND hamming_distance(x.fp, y.fp) <= %d);"
                % (k, a, b, a, b, source % k, b'fz_s', b'fz_s', k),
                b"SELECT count(*), count(DISTINCT cluster) FROM %s;"
                % (clusters % (k, r.choice([b'true', b'false']))),
                b'RESET work_mem;']

    def st_wide_pairs(self):
        """simhash_pairs() and simhash_clusters() on bit(n) codes against the
        self-join: random widths, radii (some out of range), copies and
        near-copies, NULLs, a second width among the codes now and then."""
        r = self.r
        w = r.choice([1, 7, 63, 64, 65, 128, 256, 1024])
        n = r.choice([0, 1, 2, 30, 200, 400])
        k = r.choice([0, 1, 2, w // 8, w // 4, w // 2, w]) if r.random() < 0.9 else self.int4(-2, w + 2)
        wm = r.choice([b'1MB', b'64MB'])
        code = b"(SELECT string_agg(CASE WHEN random() < 0.5 THEN '1' ELSE '0' END, '') " \
               b"FROM generate_series(1, %d) WHERE g > 0)::varbit" % w
        st = [b'DROP TABLE IF EXISTS fz_w;',
              b'CREATE TABLE fz_w (id int, code varbit);',
              b'INSERT INTO fz_w SELECT g, %s FROM generate_series(1, %d) g;' % (code, n),
              # near-copies (a few bits flipped), exact copies, NULLs
              b"INSERT INTO fz_w SELECT id + 1000, code # (SELECT string_agg(CASE WHEN random() < %f "
              b"THEN '1' ELSE '0' END, '') FROM generate_series(1, %d) WHERE id > 0)::varbit "
              b"FROM fz_w WHERE id %% %d = 0;" % (r.choice([0.0, 0.01, 0.05, 0.2]), w, r.randint(1, 5)),
              b'INSERT INTO fz_w SELECT id + 2000, code FROM fz_w WHERE id %% %d = 0;' % r.randint(1, 9),
              b'INSERT INTO fz_w VALUES (-1, NULL);']
        if r.random() < 0.05:
            st.append(b"INSERT INTO fz_w VALUES (-2, B'1%s');" % (b'0' * (w - 1 + r.choice([0, 1]))))
        source = r.choice([b"simhash_pairs('fz_w', 'id', 'code', %d)",
                           b"simhash_pairs_query('SELECT id, code FROM fz_w', %d)"]) % k
        st += [b"SET maintenance_work_mem = '%s';" % wm,
               b"SELECT 'MISMATCH wide pairs' AS x, %d, %d WHERE (SELECT array_agg((a, b, d) ORDER BY a, b, d) "
               b"FROM %s AS p(a int, b int, d int)) IS DISTINCT FROM "
               b"(SELECT array_agg((x.id, y.id, bit_count(x.code # y.code)::int) ORDER BY x.id, y.id) "
               b"FROM fz_w x JOIN fz_w y ON x.id < y.id AND bit_count(x.code # y.code) <= %d);"
               % (w, k, source, k),
               b"SELECT count(*), count(DISTINCT cluster) FROM simhash_clusters('fz_w', 'id', 'code', %d, "
               b"singletons => %s) AS c(id int, cluster int);" % (k, r.choice([b'true', b'false'])),
               b'RESET maintenance_work_mem;',
               b'DROP TABLE fz_w;']
        return st

    def st_exclusion(self):
        """A near-duplicate exclusion constraint: random rows go in with ON
        CONFLICT DO NOTHING, plain INSERT, UPDATE and VACUUM; no two stored
        rows may then lie within the radius."""
        r = self.r
        k = r.choice([0, 1, 2, 3, 4, 5, 6]) if r.random() < 0.9 else self.int4(-1, 13)
        blocks = r.choice([b'', b', blocks = %d' % self.int4(k, k + 6)])
        st = [b'DROP TABLE IF EXISTS fz_x;',
              b'CREATE TABLE fz_x (id int, fp simhash64, EXCLUDE USING simhash_perm (fp WITH ~=) '
              b'WITH (%s = %d%s));' % (r.choice([b'max_distance', b'radius']), k, blocks)]
        for _ in range(r.randint(2, 8)):
            x = r.randrange(5)
            n = r.choice([1, 10, 100, 500])
            if x < 2:
                st.append(b'INSERT INTO fz_x SELECT g, (%s)::simhash64 FROM generate_series(1, %d) g ON CONFLICT DO NOTHING;'
                          % (self.fp_expr().encode(), n))
            elif x == 2:
                st.append(b'INSERT INTO fz_x VALUES (0, %s);' % self.fp_lit())
            elif x == 3:
                st.append(b'UPDATE fz_x SET fp = (fp::bigint # %d)::simhash64 WHERE id %% %d = 0;'
                          % (1 << r.randrange(63), r.randint(1, 20)))
            else:
                st.append(r.choice([b'DELETE FROM fz_x WHERE id % 3 = 0;', b'VACUUM fz_x;']))
        st += [b"SELECT 'MISMATCH exclusion' AS x WHERE EXISTS (SELECT 1 FROM fz_x a JOIN fz_x b "
               b"ON a.ctid < b.ctid AND hamming_distance(a.fp, b.fp) <= "
               b"(SELECT min(radius) FROM simhash_perm_info('fz_x_fp_excl')));",
               b'SELECT fp ~= fp FROM fz_x LIMIT 1;',
               b'DROP TABLE fz_x;']
        return st

    def st_index(self):
        r = self.r
        t = b'fz_t'
        unlogged = b'UNLOGGED ' if r.random() < 0.2 else b''
        n = r.choice([0, 1, 10, 100, 1000, 3000, r.randint(0, 6000)])
        st = [b'DROP TABLE IF EXISTS fz_t, fz_q;',
              b'CREATE %sTABLE fz_t (id int, fp simhash64, b bigint) WITH (autovacuum_enabled = off);' % unlogged,
              b'INSERT INTO fz_t SELECT g, v::simhash64, v FROM (SELECT g, %s AS v FROM generate_series(1, %d) g) s;'
              % (self.fp_expr().encode(), n)]
        if r.random() < 0.7:
            st.append(b'CREATE INDEX fz_i ON fz_t USING simhash_perm (fp)%s;' % self.index_options().encode())
        else:   # build on an empty table, fill by inserts
            st += [b'TRUNCATE fz_t;',
                   b'CREATE INDEX fz_i ON fz_t USING simhash_perm (fp)%s;' % self.index_options().encode(),
                   b'INSERT INTO fz_t SELECT g, v::simhash64, v FROM (SELECT g, %s AS v FROM generate_series(1, %d) g) s;'
                   % (self.fp_expr().encode(), n)]
        if r.random() < 0.5:
            st.append(b'CREATE INDEX fz_ib ON fz_t USING simhash_perm (b)%s;' % self.index_options().encode())
        st += [b'SET enable_seqscan = off;', b'SELECT count(*) FROM simhash_perm_info(\'fz_i\');']
        for _ in range(r.randint(8, 25)):
            x = r.randrange(14)
            if x < 4:
                st += self.probe(t)
            elif x < 6:
                st += self.knn(t) if r.random() < 0.7 else self.pairs(t)
            elif x == 6:
                first = r.randint(0, 10 ** 6)
                st.append(b'INSERT INTO fz_t SELECT g, v::simhash64, v FROM (SELECT g, %s AS v FROM generate_series(%d, %d) g) s;'
                          % (self.fp_expr().encode(), first, first + r.choice([1, 10, 100, 1000, 2000, r.randint(0, 3000)])))
            elif x == 7:
                st.append(b'DELETE FROM fz_t WHERE id %% %d = %d;' % (r.randint(1, 10), r.randint(0, 9)))
            elif x == 8:
                x = 1 << r.randrange(63)
                st.append(b'UPDATE fz_t SET fp = (fp::bigint # %d)::simhash64, b = b # %d WHERE id %% %d = 0;'
                          % (x, x, r.randint(1, 20)))
            elif x == 9:
                st.append(r.choice([b'VACUUM fz_t;', b'VACUUM (INDEX_CLEANUP on) fz_t;',
                                    b'VACUUM FULL fz_t;', b'ANALYZE fz_t;']))
            elif x == 10:
                st.append(b"SELECT table_no, levels, pages, entries, incomplete_splits FROM simhash_perm_check('fz_i', %s);"
                          % r.choice([b'true', b'false']))
            elif x == 11:
                st.append(r.choice([b'REINDEX INDEX fz_i;',
                                    b'ALTER INDEX fz_i SET (%s = %d);' % (r.choice([b'max_distance', b'radius']), self.int4(-1, 13)),
                                    b'ALTER INDEX fz_i SET (blocks = %d);' % self.int4(0, 17),
                                    b'ALTER INDEX fz_i RESET (blocks);']))
            elif x == 12:
                vals = b', '.join(b'(%s, %d)' % (self.fp_lit(), self.int4(-1, 66) if r.random() < 0.1 else r.randint(0, 12))
                                  for _ in range(r.randint(1, 6)))
                st += [b'SET enable_hashjoin = off;', b'SET enable_mergejoin = off;',
                       b"SELECT 'MISMATCH join' AS x WHERE (SELECT count(*) FROM (VALUES %s) v(q, k) "
                       b"JOIN fz_t ON hamming_near(fz_t.fp, v.q, v.k)) IS DISTINCT FROM "
                       b"(SELECT count(*) FROM (VALUES %s) v(q, k) JOIN fz_t ON hamming_distance(fz_t.fp, v.q) <= v.k);"
                       % (vals, vals),
                       b'RESET enable_hashjoin;', b'RESET enable_mergejoin;']
            else:
                st.append(b'PREPARE fz_p(simhash64, int) AS SELECT count(*) FROM fz_t WHERE hamming_near(fp, $1, $2);')
                for _ in range(7):
                    st.append(b'EXECUTE fz_p(%s, %d);' % (self.fp_lit(), r.choice([0, 3, 5, 9, 64])))
                st.append(b'DEALLOCATE fz_p;')
        st += [b'RESET enable_seqscan;', b'RESET enable_bitmapscan;', b'RESET enable_indexscan;',
               b"SELECT count(*) FROM simhash_perm_check('fz_i', true);",
               b'DROP TABLE fz_t;']
        return st

    KINDS = [
        (10, 'st_type_input'), (6, 'st_query_input'), (8, 'st_hamming'), (2, 'st_recv'),
        (20, 'st_simhash_text'), (5, 'st_tokens'), (6, 'st_features'), (4, 'st_tsvector'),
        (6, 'st_jaccard'), (6, 'st_chargrams'), (8, 'st_minhash'), (2, 'st_exclusion'),
        (6, 'st_sentences'), (2, 'st_wide_pairs'),
    ]

    def batch_sql(self, n):
        r = self.r
        names = [k[1] for k in self.KINDS]
        weights = [k[0] for k in self.KINDS]
        stmts = [b"SET statement_timeout = '10s';"]
        index_at = r.randrange(n)
        for i in range(n):
            if i == index_at:
                stmts += self.st_index()
            stmts += getattr(self, r.choices(names, weights)[0])()
        return stmts


def new_log_text(path, offset):
    with open(path, 'rb') as f:
        f.seek(offset)
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=90)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--batch-size', type=int, default=150,
                    help='random statements per batch, besides the index scenario')
    ap.add_argument('--db', action='append', required=True, metavar='NAME:ENCODING')
    ap.add_argument('--server-log', required=True)
    ap.add_argument('--sanitizer-dir', required=True)
    ap.add_argument('--work-dir', required=True)
    ap.add_argument('--keep-dir', help='where a failing batch and its output are copied')
    args = ap.parse_args()

    dbs = [d.split(':', 1) for d in args.db]
    deadline = time.monotonic() + args.seconds
    log_offset = os.path.getsize(args.server_log)
    statements = batches = errors = 0
    crashed = False
    failed = []         # (database, batch, reasons) of every failing batch
    b = 0
    while time.monotonic() < deadline and not crashed:
        for name, enc in dbs:
            if time.monotonic() >= deadline:
                break
            gen = Gen(random.Random('%d:%s:%d' % (args.seed, name, b)), enc,
                      os.path.abspath(os.path.join(args.work_dir, 'recv.bin')))
            stmts = gen.batch_sql(args.batch_size)
            path = os.path.join(args.work_dir, 'batch_%s_%d.sql' % (name, b))
            with open(path, 'wb') as f:
                f.write(b'\n'.join(stmts) + b'\n')
            env = dict(os.environ, PGCLIENTENCODING='SQL_ASCII' if enc == 'SQL_ASCII' else 'UTF8')
            p = subprocess.run(['psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=0',
                                '-v', 'VERBOSITY=verbose', '-d', name, '-f', path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            statements += len(stmts)
            batches += 1
            errors += p.stderr.count(b'ERROR:')
            log = new_log_text(args.server_log, log_offset)
            log_offset += len(log)
            # a crash or a sanitizer report ends the run: the first report
            # is the one to read
            why = []
            if p.returncode not in (0, 1):
                why.append('psql exited with status %d: %s' % (
                    p.returncode, p.stderr.decode('utf-8', 'replace')[-500:]))
            why += ['server log: ' + m.decode('utf-8', 'replace')
                    for m in re.findall(rb'^.*(?:' + BAD_LOG.pattern + rb').*$', log, re.M)]
            if os.listdir(args.sanitizer_dir):
                why.append('sanitizer reports: ' + ', '.join(sorted(os.listdir(args.sanitizer_dir))))
            crashed = bool(why)
            # a wrong answer does not stop the run, which goes on looking
            # for memory errors
            why += ['wrong answer: ' + line.decode('utf-8', 'replace')[:300]
                    for line in p.stdout.splitlines() if line.startswith(b'MISMATCH')]
            # every error a user can reach has a SQLSTATE of its own class,
            # not XX000 (internal_error, what elog(ERROR) gives)
            why += ['internal error: ' + line.decode('utf-8', 'replace')[:300]
                    for line in p.stderr.splitlines() if re.search(rb'ERROR:\s+XX000:', line)]
            if why:
                failed.append((name, b, why))
                if args.keep_dir:
                    os.makedirs(args.keep_dir, exist_ok=True)
                    shutil.copy(path, args.keep_dir)
                    with open(os.path.join(args.keep_dir, os.path.basename(path) + '.out'), 'wb') as f:
                        f.write(p.stdout + b'\n---- stderr\n' + p.stderr)
            os.unlink(path)
            if crashed:
                break
        b += 1

    for name, b, why in failed:
        print('fuzz: FAILED in batch %d of database %s (seed %d):' % (b, name, args.seed))
        for w in why[:20]:
            print('  ' + w)
    if failed and args.keep_dir:
        print('fuzz: the failing batches and their output are in %s' % args.keep_dir)
    print('fuzz: %d statements in %d batches (seed %d, %d ended in an SQL error), %d failed'
          % (statements, batches, args.seed, errors, len(failed)))
    print('FUZZ_STATEMENTS=%d' % statements)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
