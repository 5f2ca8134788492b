"""Reads and writes qN.tsv result files and compares the executor's rows with the oracle's.

The rules (docs/oracle.md, "What it checks"):
- numeric fields (kinds dec and num) agree if |got - expected| <= 0.01 + 1e-6 * |expected|;
  int and str fields must be equal as text;
- rows must come in the oracle's order, except that rows tied on every ORDER BY column (or
  all rows, for a query without ORDER BY) form a group compared as a multiset;
- under a LIMIT, the tie group that the limit cuts may be filled from any of its rows: the
  oracle passes in every row of the unlimited result so that group is known in full.
Ties are decided on the oracle's values, which are exact for ORDER BY columns (integers,
text, and sums of decimals with at most four places), with a 1e-9 relative slack for
doubles.  The comparison returns a list of readable problems; an empty list means agreement.
"""

from collections import defaultdict

NUMERIC = ("dec", "num")
TIE_RELATIVE = 1e-9
# Both sides print at most 4 places of values exact to ~1e-9 relative, so agreeing fields
# should match to the last printed digit; a larger gap is within tolerance but worth a note.
PRINTED_DIGIT = 0.0001


def read_tsv(path):
    """Rows of a result file: one row per line, fields split on '|'."""
    with open(path, encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.split("|") for line in lines]


def write_tsv(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write("|".join(row) + "\n")


def _floats(a, b):
    try:
        return float(a), float(b)
    except ValueError:
        return None


def field_equal(kind, expected, got):
    if kind in NUMERIC:
        pair = _floats(expected, got)
        if pair is not None:
            e, g = pair
            return abs(g - e) <= 0.01 + 1e-6 * abs(e)
    return expected == got


def _key_equal(kind, a, b):
    if kind in NUMERIC:
        pair = _floats(a, b)
        if pair is not None:
            return abs(pair[0] - pair[1]) <= TIE_RELATIVE * max(1.0, abs(pair[0]))
    return a == b


def tie_groups(kinds, order_keys, rows):
    """[start, end) ranges of consecutive rows equal on all order keys."""
    if not rows:
        return []
    if not order_keys:
        return [(0, len(rows))]
    groups = []
    start = 0
    for i in range(1, len(rows)):
        if not all(_key_equal(kinds[k], rows[i - 1][k], rows[i][k]) for k in order_keys):
            groups.append((start, i))
            start = i
    groups.append((start, len(rows)))
    return groups


def rows_equal(kinds, expected, got):
    return len(expected) == len(got) and all(
        field_equal(k, e, g) for k, e, g in zip(kinds, expected, got))


def match(kinds, expected, got):
    """Pairs equal rows; returns (indices of unmatched expected rows, of unmatched got rows)."""
    exact = [i for i, k in enumerate(kinds) if k not in NUMERIC]

    def bucket(row):
        if len(row) != len(kinds):
            return ("wrong width",)
        return tuple(row[i] for i in exact)

    buckets = defaultdict(list)
    for j, row in enumerate(got):
        buckets[bucket(row)].append(j)
    missing = []
    for i, row in enumerate(expected):
        candidates = buckets.get(bucket(row), [])
        for n, j in enumerate(candidates):
            if rows_equal(kinds, row, got[j]):
                del candidates[n]
                break
        else:
            missing.append(i)
    unexpected = sorted(j for js in buckets.values() for j in js)
    return missing, unexpected


def _show(row):
    return "|".join(row)


def _field_diffs(kinds, names, expected, got):
    if len(expected) != len(got):
        return "%d fields instead of %d" % (len(got), len(expected))
    return "; ".join("%s %s instead of %s" % (names[i], g, e)
                     for i, (k, e, g) in enumerate(zip(kinds, expected, got))
                     if not field_equal(k, e, g))


def _compare_group(kinds, names, start, exp_group, got_group, subset_note):
    """Compares one tie group; with subset_note, got_group need only be part of exp_group."""
    if len(exp_group) == 1 and len(got_group) == 1:
        if rows_equal(kinds, exp_group[0], got_group[0]):
            return []
        return ["row %d differs: %s\n    expected: %s\n    got:      %s"
                % (start + 1, _field_diffs(kinds, names, exp_group[0], got_group[0]),
                   _show(exp_group[0]), _show(got_group[0]))]
    missing, unexpected = match(kinds, exp_group, got_group)
    where = "rows %d-%d (tied on the ORDER BY columns%s)" % (
        start + 1, start + len(got_group), subset_note and ", " + subset_note)
    problems = ["%s: got row not in the oracle's group: %s" % (where, _show(got_group[j]))
                for j in unexpected]
    if not subset_note:
        problems += ["%s: expected row not found: %s" % (where, _show(exp_group[i]))
                     for i in missing]
    return problems


def compare(kinds, order_keys, limit, expected_all, got, names=None):
    """Problems found comparing got with the oracle's unlimited result expected_all."""
    names = names or ["column %d" % (i + 1) for i in range(len(kinds))]
    expected = expected_all if limit is None else expected_all[:limit]
    if len(got) != len(expected):
        # Positions shift after a missing or extra row, so name the rows instead.
        missing, unexpected = match(kinds, expected, got)
        return (["expected %d rows, got %d" % (len(expected), len(got))]
                + ["missing row (oracle row %d): %s" % (i + 1, _show(expected[i]))
                   for i in missing]
                + ["unexpected row (result row %d): %s" % (j + 1, _show(got[j]))
                   for j in unexpected])
    problems = []
    for start, end in tie_groups(kinds, order_keys, expected_all):
        if start >= len(expected):
            break
        cut = min(end, len(expected))
        note = ""
        if cut < end:
            note = "cut by the LIMIT: any %d of its %d rows may appear" % (cut - start, end - start)
        problems += _compare_group(kinds, names, start, expected_all[start:end],
                                   got[start:cut], note)
    if problems and match(kinds, expected, got) == ([], []):
        problems.insert(0, "the same rows are all there: only their order differs")
    return problems


def loose_fields(kinds, names, expected, got):
    """Numeric fields of agreeing results that differ by more than a printed digit:
    [(row number, column name, expected, got)], pairing rows by position and skipping
    pairs whose text fields differ (tied rows the executor put in another order)."""
    loose = []
    for n, (e_row, g_row) in enumerate(zip(expected, got)):
        if len(e_row) != len(g_row) or any(
                k not in NUMERIC and e != g for k, e, g in zip(kinds, e_row, g_row)):
            continue
        for i, (k, e, g) in enumerate(zip(kinds, e_row, g_row)):
            pair = _floats(e, g) if k in NUMERIC else None
            if pair and abs(pair[0] - pair[1]) > PRINTED_DIGIT + TIE_RELATIVE * abs(pair[0]):
                loose.append((n + 1, names[i], e, g))
    return loose
