#!/usr/bin/python3
"""Check that the documents still say what the code does.

    python3 test/docs/check_docs.py

Python's standard library only; no server, no build.  Each failure is a
line "FILE:LINE: what is wrong"; the last line counts them, and the exit
status is 1 if there is any.  The checks (docs/testing.md, "Documents that
stay true", says why each exists):

versions   every phrase of README.md, docs/, the READMEs of src/ and
           .gitignore that calls a version current ("the current version,
           X", "X is the current", "default version X", a complete script
           simhash--X.sql other than the base script) names default_version
           of simhash.control; so do CURRENT in the Makefile, the version of
           META.json and the top entry of debian/changelog.
layers     docs/architecture.md's tables "layer | folder | may call" and
           "folder | its files, from the top down", the "May call:" lines of
           the folder READMEs, the Makefile's object list and the file list
           of src/index/perm.h, against the graph of src/: a file uses
           another when it includes the other's header or names a function
           the other defines (not static).
links      every relative link of README.md and docs/ leads to a file, and
           its #anchor to a heading there; every section named in prose
           anywhere in the repository (README, README.perm or a document of
           docs/, then the heading in double quotes) is a heading of that
           file, or the start of one; every path under docs/ that a file of
           the repository names exists (released install scripts aside: they
           never change); every file under docs/ is linked from
           docs/README.md.
measured   in README.md, a link whose text is "measured" leads to a report
           under docs/ (a file of docs/reports/, or a section of a document),
           and every number of the paragraph or list item around it, outside
           code spans, is in one of the reports it links (digits and point
           as written; thousands separators do not count); every link to
           docs/reports/ is such a link; and a paragraph or list item that
           gives a quality figure (precision or recall, and a number such
           as 0.859) has such a link.
quality    in the documents of docs/ (its reports aside), a paragraph or list
           item that gives a quality figure links the report it comes from,
           or its section (down to the nearest heading above it) does.
license    LICENSE, META.json, debian/copyright and the comment line of
           simhash.control (and README.md's "License") name the PostgreSQL
           License, the same holder and the same year, with the same text.
examples   every ```sql block of README.md and docs/ carries the annotation
           test/readme/run_examples.py needs, and no other Markdown file of
           the repository has one.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []
checked = {}


def rel(path):
    return os.path.relpath(path, ROOT)


def fail(path, line, message):
    failures.append('%s:%s: %s' % (rel(path), line, message))


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def lineno(text, offset):
    return text.count('\n', 0, offset) + 1


def tracked_files():
    """The repository's files: git's list where there is one, else a walk"""
    try:
        out = subprocess.run(['git', '-C', ROOT, 'ls-files', '-z'], capture_output=True,
                             check=True).stdout.decode('utf-8')
        return [os.path.join(ROOT, p) for p in out.split('\0') if p]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for top, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith('.') and d not in
                       ('tmp_check', 'results', 'log', 'output_iso', '__pycache__')]
            found += [os.path.join(top, f) for f in files]
        return found


def markdown_files():
    """README.md and every Markdown file under docs/"""
    found = [os.path.join(ROOT, 'README.md')]
    for top, dirs, files in os.walk(os.path.join(ROOT, 'docs')):
        dirs.sort()
        found += [os.path.join(top, f) for f in sorted(files) if f.endswith('.md')]
    return found


# --------------------------------------------------------------------------
# Markdown

FENCE = re.compile(r'^\s*```')
LINK = re.compile(r'(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)')
CODE_SPAN = re.compile(r'(`+)(.+?)\1', re.S)


def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


def prose(text):
    """The text with fenced code blocks, code spans and HTML comments blanked
    out (same offsets, same lines)"""
    lines = text.split('\n')
    inside = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            lines[i] = ' ' * len(line)
            inside = not inside
        elif inside:
            lines[i] = ' ' * len(line)
    text = '\n'.join(lines)
    text = re.sub(r'<!--.*?-->', blank, text, flags=re.S)
    return CODE_SPAN.sub(blank, text)


def slug(heading):
    """GitHub's anchor of a heading"""
    s = heading.strip().lower()
    s = re.sub(r'`|\*\*|\*|_(?=\w)|(?<=\w)_', lambda m: '' if m.group(0) in ('`', '**', '*') else m.group(0), s)
    s = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', s)
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


_headings = {}


def headings(path):
    """[(title, anchor, line)] of a Markdown file, or of a plain-text file
    whose headings are underlined with === or ---"""
    if path in _headings:
        return _headings[path]
    text = read(path)
    found = []
    if path.endswith('.md'):
        counts = {}
        for i, line in enumerate(prose_keep_headings(text).split('\n')):
            m = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line)
            if m:
                title = m.group(2)
                anchor = slug(title)
                n = counts.get(anchor, 0)
                counts[anchor] = n + 1
                found.append((title, anchor if n == 0 else '%s-%d' % (anchor, n), i + 1))
    else:
        lines = text.split('\n')
        for i in range(len(lines) - 1):
            under = lines[i + 1].strip()
            if lines[i].strip() and len(under) >= 3 and set(under) <= set('=-') \
                    and len(set(under)) == 1 and abs(len(under) - len(lines[i].strip())) <= 2:
                found.append((lines[i].strip(), slug(lines[i]), i + 1))
    _headings[path] = found
    return found


def prose_keep_headings(text):
    """Fenced code blocks blanked out; headings and code spans kept"""
    lines = text.split('\n')
    inside = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            lines[i] = ''
            inside = not inside
        elif inside:
            lines[i] = ''
    return '\n'.join(lines)


def section(path, anchor):
    """The text of a Markdown file's section (its heading to the next heading
    of the same or a higher level), or None"""
    lines = read(path).split('\n')
    for title, a, line in headings(path):
        if a == anchor:
            level = len(lines[line - 1]) - len(lines[line - 1].lstrip('#'))
            end = line
            while end < len(lines):
                m = re.match(r'^(#{1,6})\s', lines[end])
                if m and len(m.group(1)) <= level:
                    break
                end += 1
            return '\n'.join(lines[line - 1:end])
    return None


def blocks(text):
    """(first line, text) of each paragraph, list item and table row of a
    Markdown text whose code is already blanked out"""
    out, cur, start = [], [], 0
    for i, line in enumerate(text.split('\n')):
        item = re.match(r'^\s{0,3}([-*+]|\d+\.)\s', line) or line.lstrip().startswith('|')
        if not line.strip() or item:
            if cur:
                out.append((start, '\n'.join(cur)))
            cur = []
        if line.strip():
            if not cur:
                start = i + 1
            cur.append(line)
            if line.lstrip().startswith('|'):
                out.append((start, line))
                cur = []
    if cur:
        out.append((start, '\n'.join(cur)))
    return out


# --------------------------------------------------------------------------
# versions

def control_version():
    m = re.search(r"^default_version\s*=\s*'([^']+)'", read(os.path.join(ROOT, 'simhash.control')), re.M)
    return m.group(1)


CURRENT_PHRASES = [
    re.compile(r'\bcurrent\s+version\W{0,4}(?:is\s+)?[`*]*(\d+\.\d+)\b', re.I),
    re.compile(r'\b(\d+\.\d+)[`*]*\s+is\s+the\s+current\b', re.I),
    re.compile(r'\bdefault[_ ]version\W{0,6}(\d+\.\d+)\b', re.I),
]
SCRIPT = re.compile(r'\bsimhash--(\d+\.\d+)\.sql\b')


def check_versions():
    current = control_version()
    makefile = read(os.path.join(ROOT, 'Makefile'))
    data = re.search(r'^DATA\s*=(.*)$', makefile, re.M)
    base = set(SCRIPT.findall(data.group(1))) if data else set()
    places = 0
    m = re.search(r'^CURRENT\s*=\s*(\S+)', makefile, re.M)
    if not m or m.group(1) != current:
        fail(os.path.join(ROOT, 'Makefile'), lineno(makefile, m.start()) if m else 1,
             'CURRENT is %s, simhash.control says default_version %s'
             % (m.group(1) if m else 'missing', current))
    meta_path = os.path.join(ROOT, 'META.json')
    meta = json.loads(read(meta_path))
    for where, v in (('version', meta.get('version')),
                     ('provides.simhash.version', meta.get('provides', {}).get('simhash', {}).get('version'))):
        if not v or not (v == current or v.startswith(current + '.')):
            fail(meta_path, 1, '%s is %s, simhash.control says default_version %s' % (where, v, current))
    changelog = os.path.join(ROOT, 'debian', 'changelog')
    if os.path.exists(changelog):
        m = re.match(r'\S+ \(([^)]+)\)', read(changelog))
        if not m or not (m.group(1) == current or m.group(1).startswith(current + '.')):
            fail(changelog, 1, 'the top entry is version %s, simhash.control says %s'
                 % (m.group(1) if m else '?', current))
    docs = markdown_files() + [os.path.join(ROOT, '.gitignore')]
    for top, dirs, files in os.walk(os.path.join(ROOT, 'src')):
        docs += [os.path.join(top, f) for f in sorted(files) if f.startswith('README')]
    for path in docs:
        text = read(path)
        for pattern in CURRENT_PHRASES:
            for m in pattern.finditer(text):
                places += 1
                if m.group(1) != current:
                    fail(path, lineno(text, m.start()), '"%s" calls %s current; simhash.control says %s'
                         % (' '.join(m.group(0).split()), m.group(1), current))
        for m in SCRIPT.finditer(text):
            places += 1
            if m.group(1) != current and m.group(1) not in base:
                fail(path, lineno(text, m.start()), '%s is neither the base script (%s) nor the current '
                     'version\'s (simhash--%s.sql)' % (m.group(0), ', '.join(sorted(base)), current))
    checked['versions'] = '%d places name version %s' % (places, current)


# --------------------------------------------------------------------------
# layers

def strip_c(text):
    """C text with comments and string and character literals blanked out"""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text,
                  flags=re.S)


def unit(path):
    """A source file's folder under src/ ("src/index/"), or the file itself
    for the files at the top of src/ ("src/module.c")"""
    r = rel(path)
    parts = r.split('/')
    return '/'.join(parts[:2]) + '/' if len(parts) > 2 else r


def source_graph():
    """{file: {other file: (line, why)}} over src/'s .c and .h files"""
    src = os.path.join(ROOT, 'src')
    files = []
    for top, dirs, names in os.walk(src):
        dirs.sort()
        files += [os.path.join(top, n) for n in sorted(names) if n.endswith(('.c', '.h'))]
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    code = {f: strip_c(read(f)) for f in files}
    defs = {}
    for f in files:
        if not f.endswith('.c'):
            continue
        t = code[f]
        for m in re.finditer(r'^([A-Za-z_]\w*)\s*\(', t, re.M):
            before = t[:m.start()].rstrip().rsplit('\n', 1)[-1]
            if not re.match(r'^[A-Za-z_]', before) or before.rstrip().endswith((';', ',', '{', '}')):
                continue
            depth, j = 0, m.end() - 1
            while j < len(t):
                depth += {'(': 1, ')': -1}.get(t[j], 0)
                if depth == 0:
                    break
                j += 1
            if not t[j + 1:j + 400].lstrip().startswith('{'):
                continue
            if re.search(r'\bstatic\b', before):
                continue
            defs[m.group(1)] = f
    graph = {f: {} for f in files}
    for f in files:
        raw = read(f)
        for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', raw, re.M):
            target = os.path.join(src, m.group(1))
            if not os.path.exists(target):
                found = by_name.get(os.path.basename(m.group(1)), [])
                target = found[0] if len(found) == 1 else None
            if target and target != f:
                graph[f].setdefault(target, (lineno(raw, m.start()), '#include "%s"' % m.group(1)))
        t = code[f]
        for m in re.finditer(r'\b[A-Za-z_]\w*\b', t):
            g = defs.get(m.group(0))
            if g and g != f and g not in graph[f]:
                graph[f][g] = (lineno(t, m.start()), m.group(0) + '()')
    return files, graph


SHARED = 'src/compat.h'


def markdown_table(text, header):
    """(line, [cells]) of the rows of the Markdown table whose header row
    matches the regex HEADER"""
    lines = text.split('\n')
    for i, line in enumerate(lines):
        if re.match(header, line.strip()):
            rows = []
            for j in range(i + 2, len(lines)):
                if not lines[j].strip().startswith('|'):
                    break
                rows.append((j + 1, [c.strip() for c in lines[j].strip().strip('|').split('|')]))
            return i + 1, rows
    return None, []


def folders_named(cell):
    return {x if x.endswith(('/', '.c', '.h')) else x + '/'
            for x in re.findall(r'`(src/[\w./]+)`', cell)}


def check_layers():
    arch = os.path.join(ROOT, 'docs', 'architecture.md')
    text = read(arch)
    files, graph = source_graph()
    edges = {}          # (unit, unit) -> (file, line, why, other file)
    for f in files:
        for g, (line, why) in graph[f].items():
            a, b = unit(f), unit(g)
            if a != b:
                edges.setdefault((a, b), (f, line, why, g))
    units = sorted({unit(f) for f in files})

    def calls(u):
        return {b for (a, b) in edges if a == u and b != SHARED}

    def evidence(a, b):
        f, line, why, g = edges[(a, b)]
        return '%s:%d uses %s of %s' % (rel(f), line, why, rel(g))

    head, rows = markdown_table(text, r'^\|\s*layer\s*\|\s*folder\s*\|\s*may call\s*\|$')
    if head is None:
        fail(arch, 1, 'no table "| layer | folder | may call |"')
        return
    layer, claims, where = {}, {}, {}
    for line, cells in rows:
        names = folders_named(cells[1])
        if len(cells) < 3 or len(names) != 1 or not cells[0].isdigit():
            fail(arch, line, 'a row of the layer table needs a number, one `src/...` folder and its calls')
            continue
        u = names.pop()
        layer[u], claims[u], where[u] = int(cells[0]), folders_named(cells[2]), line
    for u in units:
        if u == SHARED:
            for (a, b) in edges:
                if a == SHARED:
                    fail(arch, head, '%s is shared by every layer and must use nothing of ours, but %s'
                         % (SHARED, evidence(a, b)))
            continue
        if u not in claims:
            fail(arch, head, '%s is in src/ but not in the layer table' % u)
    for u, line in where.items():
        if u not in units:
            fail(arch, line, '%s is in the layer table but not in src/' % u)
            continue
        for b in sorted(claims[u]):
            if b in layer and layer[b] >= layer[u]:
                fail(arch, line, '%s (layer %d) may call %s, which is not below it (layer %d)'
                     % (u, layer[u], b, layer[b]))
        for b in sorted(calls(u) - claims[u]):
            fail(arch, line, '%s may not call %s, but %s' % (u, b, evidence(u, b)))
        for b in sorted(claims[u] - calls(u)):
            fail(arch, line, '%s may call %s, but uses nothing of it: the table claims more than the '
                 'code does' % (u, b))
    nedges = sum(1 for (a, b) in edges if b != SHARED)

    # the folder READMEs' "May call:"
    for u in units:
        if not u.endswith('/'):
            continue
        readme = os.path.join(ROOT, u, 'README')
        if not os.path.exists(readme):
            fail(os.path.join(ROOT, u), 1, 'no README saying what the folder may call')
            continue
        t = read(readme)
        m = re.search(r'^May call:(.*?)(?:\n\s*\n|\Z)', t, re.M | re.S)
        if not m:
            fail(readme, 1, 'no "May call:" paragraph')
            continue
        said = {x.rstrip('/') + '/' for x in re.findall(r'\bsrc/\w+', m.group(1))}
        line = lineno(t, m.start())
        for b in sorted(calls(u) - said):
            fail(readme, line, '"May call:" leaves out %s, but %s' % (b, evidence(u, b)))
        for b in sorted(said - calls(u)):
            fail(readme, line, '"May call:" names %s, which the folder does not use' % b)
        if u in claims and said != claims[u]:
            fail(readme, line, '"May call:" says %s, docs/architecture.md line %d says %s'
                 % (', '.join(sorted(said)) or 'nothing of ours', where[u],
                    ', '.join(sorted(claims[u])) or 'nothing of ours'))

    # inside a folder
    head, rows = markdown_table(text, r'^\|\s*folder\s*\|\s*its files, from the top down\s*\|$')
    if head is None:
        fail(arch, 1, 'no table "| folder | its files, from the top down |"')
        return
    orders = {}
    for line, cells in rows:
        names = folders_named(cells[0])
        if len(names) != 1:
            fail(arch, line, 'a row of the file order needs one `src/...` folder')
            continue
        u = names.pop()
        order = re.findall(r'`([\w.]+\.c)`', cells[1])
        orders[u] = order
        present = sorted(os.path.basename(f) for f in files if unit(f) == u and f.endswith('.c'))
        for name in present:
            if name not in order:
                fail(arch, line, '%s%s is not in the order of its folder' % (u, name))
        for name in order:
            if name not in present:
                fail(arch, line, '%s%s is in the order of its folder, but there is no such file'
                     % (u, name))
        for f in files:
            if unit(f) != u or not f.endswith('.c') or os.path.basename(f) not in order:
                continue
            for g, (gl, why) in sorted(graph[f].items()):
                if g.endswith('.c') and unit(g) == u and os.path.basename(g) in order and \
                        order.index(os.path.basename(g)) < order.index(os.path.basename(f)):
                    fail(arch, line, '%s calls up the order of %s: %s:%d uses %s of %s'
                         % (os.path.basename(f), u, rel(f), gl, why, os.path.basename(g)))
    for u in units:
        if u.endswith('/') and u not in orders:
            fail(arch, head, '%s has no file order' % u)

    # engines: parts of a folder that only one file may name (docs/architecture.md:
    # "The engines, `A` and `B`, are named only by `F`"): the shared files call them
    # through a table of functions, and the engines do not call each other
    m = re.search(r'^The engines, `(src/[\w/]+/)` and `(src/[\w/]+/)`, are named only by\s+'
                  r'`(src/[\w/.]+\.c)`(?:\s+and\s+`(src/[\w/.]+\.c)`)?', text, re.M)
    if m is None:
        fail(arch, 1, 'no sentence "The engines, `A/` and `B/`, are named only by `F`"')
    else:
        engines = [os.path.join(ROOT, m.group(1)), os.path.join(ROOT, m.group(2))]
        faces = {os.path.join(ROOT, x) for x in m.groups()[2:] if x}
        line = lineno(text, m.start())
        folder = os.path.commonpath(engines) + os.sep
        for e in engines:
            if not os.path.isdir(e):
                fail(arch, line, '%s is no folder' % rel(e))
        engine_of = lambda f: next((e for e in engines if f.startswith(e)), None)
        for f in files:
            if not f.endswith('.c') or f in faces or not f.startswith(folder):
                continue
            for g, (gl, why) in sorted(graph[f].items()):
                eg, ef = engine_of(g), engine_of(f)
                if eg is not None and eg != ef:
                    fail(arch, line, '%s names the engine %s: %s:%d uses %s of %s'
                         % (rel(f), rel(eg), rel(f), gl, why, rel(g)))
    inside = []
    for u in sorted(orders):
        cs = [f for f in files if unit(f) == u and f.endswith('.c')]
        calls_in = sum(1 for f in cs for g in graph[f] if g in cs)
        inside.append('%s %d files, %d calls' % (u, len(cs), calls_in))

    # a header's own list of its folder's files ("calls only go down this list")
    for f in files:
        if not f.endswith('.h'):
            continue
        lines = read(f).split('\n')
        starts = [i for i, ln in enumerate(lines) if 'calls only go down this list' in ln]
        if not starts:
            continue
        listed = []
        for ln in lines[starts[0] + 1:]:
            if not ln.lstrip().startswith('*') or ln.strip() in ('*', '*/'):
                break
            m = re.match(r'^\s*\*\s+(\w+\.c)\b', ln)
            if m:
                listed.append(m.group(1))
        u = unit(f)
        if u in orders and listed != orders[u]:
            fail(f, starts[0] + 1, 'its list of files (%s) differs from the order of %s in '
                 'docs/architecture.md (%s)' % (', '.join(listed), u, ', '.join(orders[u])))

    # the Makefile's objects: "each calls only those listed before it"
    makefile = os.path.join(ROOT, 'Makefile')
    mk = read(makefile)
    m = re.search(r'^OBJS\s*=((?:.*\\\n)*.*)', mk, re.M)
    if m and re.search(r'each calls only those listed before it', mk):
        seen = []
        for obj in re.findall(r'(src/\S+?)\.o\b', m.group(1)):
            u = unit(os.path.join(ROOT, obj + '.c'))
            if u not in seen:
                seen.append(u)
        for i, u in enumerate(seen):
            for b in sorted(calls(u)):
                if b in seen and seen.index(b) > i:
                    fail(makefile, lineno(mk, m.start()), 'OBJS lists %s before %s, which it calls (%s)'
                         % (u, b, evidence(u, b)))
    checked['layers'] = '%d folders, %d calls between them, %d ordered folders (inside: %s)' % (
        len(units), nedges, len(orders), '; '.join(inside))


# --------------------------------------------------------------------------
# links

DOCS_PATH = re.compile(r'(?<![\w/.-])docs/[\w./-]*\w')
SECTION_REF = re.compile(r'(?<![\w/.])(README\.perm|README(?:\.md)?|docs/[\w/]+\.md)[,:]?\s+'
                         r'(?:section\s+)?("[^"\n]+"(?:\s*(?:,|and)\s*"[^"\n]+")*)')


def heading_matches(path, name):
    name = ' '.join(name.split()).lower()
    for title, anchor, line in headings(path):
        t = ' '.join(re.sub(r'[`*]', '', title).split()).lower()
        if t == name or t.startswith(name):
            return True
    return False


def check_links():
    nlinks = nrefs = npaths = 0
    for path in markdown_files():
        text = prose(read(path))
        for m in LINK.finditer(text):
            target = m.group(3)
            if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
                continue
            nlinks += 1
            file_part, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            line = lineno(text, m.start())
            if not os.path.exists(dest):
                fail(path, line, 'link to %s: no such file' % target)
            elif anchor and dest.endswith('.md') and \
                    anchor not in [a for t, a, l in headings(dest)]:
                fail(path, line, 'link to %s: %s has no heading with the anchor #%s'
                     % (target, rel(dest), anchor))
    for path in tracked_files():
        if not os.path.isfile(path) or rel(path).startswith('docs/reports/'):
            continue
        try:
            raw = read(path)
        except (UnicodeDecodeError, OSError):
            continue
        text = prose(raw) if path.endswith('.md') else raw
        if not re.match(r'^simhash--[\d.-]+\.sql$', os.path.basename(path)):
            for m in DOCS_PATH.finditer(raw):
                npaths += 1
                if not os.path.exists(os.path.join(ROOT, m.group(0))):
                    fail(path, lineno(raw, m.start()), '%s: no such file' % m.group(0))
        for m in SECTION_REF.finditer(text):
            name = m.group(1)
            if name == 'README.perm':
                dest = os.path.join(ROOT, 'src', 'index', 'README.perm')
            elif name.startswith('README'):
                dest = os.path.join(ROOT, 'README.md')
            else:
                dest = os.path.join(ROOT, name)
            line = lineno(text, m.start())
            if not os.path.exists(dest):
                fail(path, line, '%s: no such file' % name)
                continue
            for title in re.findall(r'"([^"]+)"', m.group(2)):
                nrefs += 1
                if not heading_matches(dest, title):
                    fail(path, line, '%s, "%s": %s has no such heading' % (name, title, rel(dest)))
    index = os.path.join(ROOT, 'docs', 'README.md')
    linked = set()
    if os.path.exists(index):
        t = prose(read(index))
        for m in LINK.finditer(t):
            linked.add(os.path.normpath(os.path.join(ROOT, 'docs', m.group(3).partition('#')[0])))
    for top, dirs, names in os.walk(os.path.join(ROOT, 'docs')):
        for n in names:
            p = os.path.normpath(os.path.join(top, n))
            if p != index and p not in linked:
                fail(index, 1, '%s is not linked from this index' % rel(p))
    checked['links'] = '%d links, %d named sections, %d paths under docs/' % (nlinks, nrefs, npaths)


# --------------------------------------------------------------------------
# measured figures

NUMBER = re.compile(r'\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?')
QUALITY_WORD = re.compile(r'\b(precision|recall)\b', re.I)
QUALITY_FIGURE = re.compile(r'(?<![\d.])[01]\.\d{2,3}(?![\d.])')


def numbers(text, glued=True):
    """the numbers of a text, thousands separators dropped; with glued
    false, not those that are part of a word (p50, XXH3, 64MB, 4e472fc)"""
    out = []
    for m in NUMBER.finditer(text):
        before = text[m.start() - 1] if m.start() else ' '
        after = text[m.end()] if m.end() < len(text) else ' '
        if not glued and (before.isalnum() or before in '_.' or after.isalpha() or after == '_'):
            continue
        out.append(m.group(0).replace(',', ''))
    return out


def check_measured():
    readme = os.path.join(ROOT, 'README.md')
    text = prose(read(readme))
    nblocks = nnumbers = 0
    for start, block in blocks(text):
        reports = []
        for m in LINK.finditer(block):
            label, target = m.group(2).strip(), m.group(3)
            line = start + block.count('\n', 0, m.start())
            if label.lower() != 'measured':
                if target.startswith('docs/reports/'):
                    fail(readme, line, 'link to the report %s: a figure\'s link to its report reads '
                         '[measured], so that its figures are checked' % target)
                continue
            file_part, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(ROOT, file_part))
            if not file_part.startswith('docs/') or not os.path.isfile(dest):
                fail(readme, line, '[measured] leads to %s, not to a report under docs/' % target)
                continue
            if not file_part.startswith('docs/reports/') and not anchor:
                fail(readme, line, '[measured](%s) names a document, not a section of it: add the '
                     '#anchor of the section that holds the figures' % target)
                continue
            body = section(dest, anchor) if anchor and dest.endswith('.md') else read(dest)
            if body is None:
                fail(readme, line, '[measured](%s): no such section' % target)
                continue
            reports.append((target, set(numbers(body))))
        if not reports:
            words = LINK.sub(lambda m: m.group(2), block)
            if QUALITY_WORD.search(words) and QUALITY_FIGURE.search(words):
                fail(readme, start, 'a quality figure (%s) without its report: link the report '
                     'it was measured in as [measured]' % QUALITY_FIGURE.search(words).group(0))
            continue
        nblocks += 1
        words = LINK.sub(lambda m: m.group(2), block)
        for n in numbers(words, glued=False):
            nnumbers += 1
            if not any(n in found for t, found in reports):
                fail(readme, start, '%s is not in %s, which this figure\'s [measured] link names'
                     % (n, ' or '.join(t for t, found in reports)))
    checked['measured'] = '%d figures in %d paragraphs or items' % (nnumbers, nblocks)


# --------------------------------------------------------------------------
# license

def check_quality_docs():
    """A quality figure in docs/ links its report, in its paragraph or its
    section (the text from the nearest heading above it)"""
    nfigures = 0
    docs = os.path.join(ROOT, 'docs')
    for name in sorted(os.listdir(docs)):
        path = os.path.join(docs, name)
        if not name.endswith('.md') or name == 'README.md':
            continue
        text = prose(read(path))
        lines = text.split('\n')
        for start, block in blocks(text):
            words = LINK.sub(lambda m: m.group(2), block)
            if not (QUALITY_WORD.search(words) and QUALITY_FIGURE.search(words)):
                continue
            nfigures += 1
            if any(m.group(3).startswith('reports/') for m in LINK.finditer(block)):
                continue
            top = start - 1
            while top > 0 and not re.match(r'^#{1,6}\s', lines[top - 1]):
                top -= 1
            sect = '\n'.join(lines[max(top - 1, 0):start])
            if not any(m.group(3).startswith('reports/') for m in LINK.finditer(sect)):
                fail(path, start, 'a quality figure (%s) whose paragraph and section link no '
                     'report under docs/reports/' % QUALITY_FIGURE.search(words).group(0))
    checked['quality'] = '%d paragraphs with quality figures in docs/' % nfigures


# --------------------------------------------------------------------------
# license

def check_license():
    lic_path = os.path.join(ROOT, 'LICENSE')
    if not os.path.exists(lic_path):
        fail(lic_path, 1, 'no LICENSE')
        return
    lic = read(lic_path)
    m = re.search(r'^Copyright \(c\) (\d{4}), (.+?)\s*$', lic, re.M)
    if 'PostgreSQL License' not in lic.split('\n', 1)[0] or not m:
        fail(lic_path, 1, 'LICENSE must open with "The PostgreSQL License" and have a line '
             '"Copyright (c) YEAR, HOLDER"')
        return
    year, holder = m.group(1), m.group(2)
    body = ' '.join(lic[m.end():].split())
    meta_path = os.path.join(ROOT, 'META.json')
    if json.loads(read(meta_path)).get('license') != 'postgresql':
        fail(meta_path, 1, 'license is %r, not "postgresql" (LICENSE: the PostgreSQL License)'
             % json.loads(read(meta_path)).get('license'))
    deb = os.path.join(ROOT, 'debian', 'copyright')
    if os.path.exists(deb):
        d = read(deb)
        stanza = re.search(r'^Files: \*\n((?:\S.*\n|[ \t].*\n)*)', d, re.M)
        if not stanza or 'License: PostgreSQL' not in stanza.group(1) or \
                ('Copyright: %s %s' % (year, holder)) not in stanza.group(1):
            fail(deb, lineno(d, stanza.start()) if stanza else 1,
                 'the "Files: *" stanza must say "Copyright: %s %s" and "License: PostgreSQL"'
                 % (year, holder))
        text = re.search(r'^License: PostgreSQL\n((?:[ \t].*\n?)+)', d, re.M)
        if not text:
            fail(deb, 1, 'no "License: PostgreSQL" stanza with the licence\'s text')
        else:
            lines = [ln[1:] if ln.startswith(' ') else ln for ln in text.group(1).split('\n')]
            deb_body = ' '.join(' '.join('' if ln.strip() == '.' else ln for ln in lines).split())
            if deb_body != body:
                fail(deb, lineno(d, text.start()), 'the licence text differs from LICENSE\'s')
    control = os.path.join(ROOT, 'simhash.control')
    first = read(control).split('\n', 1)[0]
    if not first.startswith('#') or 'PostgreSQL License' not in first or \
            'Copyright (c) %s, %s' % (year, holder) not in first:
        fail(control, 1, 'the comment line must name the PostgreSQL License and "Copyright (c) %s, %s"'
             % (year, holder))
    readme = os.path.join(ROOT, 'README.md')
    r = read(readme)
    lic_section = section(readme, 'license')
    if lic_section is None or 'PostgreSQL License' not in lic_section or \
            ' '.join(('Copyright (c) %s, %s' % (year, holder)).split()) not in ' '.join(lic_section.split()):
        fail(readme, lineno(r, r.find('## License')) if '## License' in r else 1,
             'the "License" section must name the PostgreSQL License and "Copyright (c) %s, %s"'
             % (year, holder))
    checked['license'] = 'the PostgreSQL License, %s %s, in 5 places' % (year, holder)


# --------------------------------------------------------------------------
# SQL examples

def check_examples():
    ours = set(markdown_files())
    n = 0
    for path in tracked_files():
        if not path.endswith('.md') or not os.path.isfile(path):
            continue
        lines = read(path).split('\n')
        for i, line in enumerate(lines):
            if line.strip() != '```sql':
                continue
            n += 1
            if path not in ours:
                fail(path, i + 1, 'an SQL example outside README.md and docs/: '
                     'test/readme/run_examples.py does not run it')
                continue
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j < 0 or not re.match(r'^<!--\s*example:.*-->\s*$', lines[j].strip()):
                fail(path, i + 1, 'an SQL example without an "<!-- example: ... -->" line above it '
                     '(test/readme/run_examples.py)')
    checked['examples'] = '%d SQL examples' % n


# --------------------------------------------------------------------------
# Figures stated in more than one place: one value
#
# Each phrase below names one figure; wherever README.md, CHANGELOG.md or a
# document of docs/ (not its reports, which keep what a run printed) states
# it, the value must be the same.  Where a figure cannot be read from the
# code, this is what keeps its copies together.

FIGURES = [
    ('kinds of index damage', re.compile(r'\b(\d[\d,]*) kinds of index damage\b')),
    ('metapage fields rewritten', re.compile(r'\b(\d+) metapage fields\b')),
    ('a test run', re.compile(r'run_all\.sh`? takes about (\d+) minutes')),
    ('the demo', re.compile(r'\bdemo (?:takes|took) about (\d+) s\b')),
    ('noise between runs', re.compile(r'\bmoves? by (\d+ ?(?:-|to) ?\d+) ?% between runs')),
    ('pages of apt descriptions', re.compile(r"\bapt's ([\d,]+) distinct English package descriptions")),
]


def check_figures():
    found = {}
    paths = markdown_files() + [os.path.join(ROOT, 'CHANGELOG.md')]
    for path in paths:
        if os.sep + 'reports' + os.sep in path:
            continue
        text = prose(read(path)) if path.endswith('.md') else read(path)
        text = re.sub(r'\s+', ' ', text)
        for name, pattern in FIGURES:
            for m in pattern.finditer(text):
                value = re.sub(r'\s', '', m.group(1)).replace('to', '-')
                found.setdefault(name, []).append((value, rel(path)))
    stated = 0
    for name, places in found.items():
        stated += len(places)
        values = sorted(set(v for v, _ in places))
        if len(values) > 1:
            fail(places[0][1], 1, '%s is stated as %s in %s: one figure, one value'
                 % (name, ' and '.join(values), ', '.join(sorted(set(p for _, p in places)))))
    checked['figures'] = '%d figures stated %d times, each with one value' % (len(found), stated)
    # the version's state: the CHANGELOG's top entry and debian/changelog agree
    changelog = read(os.path.join(ROOT, 'CHANGELOG.md'))
    top = re.search(r'^## (\S+)(?: \(([^)]*)\))?', changelog, re.M)
    deb_path = os.path.join(ROOT, 'debian', 'changelog')
    if top and os.path.exists(deb_path):
        deb = re.match(r'\S+ \(([^)]+)\) (\S+);', read(deb_path))
        if deb and (deb.group(1) != top.group(1) or
                    (deb.group(2) == 'UNRELEASED') != (top.group(2) == 'unreleased')):
            fail('CHANGELOG.md', lineno(changelog, top.start()),
                 'the top entry is %s%s, debian/changelog says %s %s'
                 % (top.group(1), ' (%s)' % top.group(2) if top.group(2) else '',
                    deb.group(1), deb.group(2)))


# --------------------------------------------------------------------------
# The README's length: a user reads it in ten minutes

README_MAX_LINES = 800


def check_readme_length():
    n = read('README.md').count('\n')
    if n > README_MAX_LINES:
        fail('README.md', n, 'the README has %d lines, more than %d: what a maintainer needs '
             'belongs in docs/' % (n, README_MAX_LINES))
    checked['length'] = 'README.md has %d lines (at most %d)' % (n, README_MAX_LINES)


def main():
    for check in (check_versions, check_layers, check_links, check_measured,
                  check_quality_docs, check_license,
                  check_examples, check_figures, check_readme_length):
        check()
    for f in failures:
        print('FAILED: ' + f)
    for name, what in checked.items():
        print('checked %-9s %s' % (name + ':', what))
    print('documents against the code: %d problem%s' % (len(failures), '' if len(failures) == 1 else 's'))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
