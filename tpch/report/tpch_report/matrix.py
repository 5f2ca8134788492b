"""The benchmark matrix: which paired spillbench runs to make.

A run is one paired spillbench invocation (docs/report.md): one scale factor, work_mem,
block size (and optionally I/O limit and query list) with a list of codecs, codec `none`
first so that every ratio is against it, measured over --rounds shuffled rounds.
Invariants: a run's key names every setting that can change its numbers (so a cached file
is only reused for exactly that run); a matrix holds one run per (work_mem, block size),
with the codecs of every group naming that setting and the largest rounds.
"""

import json
from dataclasses import dataclass

KIB = 1024
DEFAULT_ROUNDS = 5


@dataclass(frozen=True)
class Run:
    sf: str          # scale factor as given to spillbench ("1", "0.1")
    work_mem: int    # bytes
    block: int       # block size in bytes
    codecs: tuple    # ((codec, level), ...), level "" = the codec's default; none first
    rounds: int
    io_limit: int = 0        # modelled temp-disk bandwidth in bytes/s; 0 = unlimited
    queries: tuple = ()      # query numbers; () = all 22

    @property
    def labels(self):
        """Codec and level as shown in tables and legends (none, lz4, zstd-3, auto)."""
        return [codec_label(c, lv) for c, lv in self.codecs]

    @property
    def key(self):
        io = f"_io{size_label(self.io_limit)}" if self.io_limit else ""
        qs = "_q" + "-".join(str(q) for q in self.queries) if self.queries else ""
        return (f"sf{self.sf}_wm{size_label(self.work_mem)}_b{size_label(self.block)}{io}{qs}"
                f"_r{self.rounds}_" + "+".join(self.labels))

    def codec_arg(self):
        return ",".join(f"{c}:{lv}" if lv else c for c, lv in self.codecs)


def codec_label(codec, level):
    return f"{codec}-{level}" if level else codec


def size_label(nbytes):
    """8192 -> '8K', 4194304 -> '4MB' (work_mem style for >= 1 MiB)."""
    if nbytes % (KIB * KIB) == 0:
        return f"{nbytes // (KIB * KIB)}MB"
    if nbytes % KIB == 0:
        return f"{nbytes // KIB}K"
    return str(nbytes)


def parse_size(text):
    """'8K', '4MB', '1M', '65536' -> bytes (powers of 1024, as spillbench reads them)."""
    t = str(text).strip().upper()
    if t.endswith("B"):
        t = t[:-1]
    mult = {"K": KIB, "M": KIB ** 2, "G": KIB ** 3}.get(t[-1:], 1)
    digits = t[:-1] if mult != 1 else t
    if not digits.isdigit() or int(digits) <= 0:
        raise ValueError(f"bad size '{text}'")
    return int(digits) * mult


CODECS = ("none", "lz4", "zstd", "zlib", "auto")


def parse_codec(spec):
    """'zstd:3' -> ('zstd', '3'); 'lz4' -> ('lz4', '')."""
    name, _, level = spec.partition(":")
    if name not in CODECS:
        raise ValueError(f"unknown codec '{name}' (known: {', '.join(CODECS)})")
    if level and not level.lstrip("-").isdigit():
        raise ValueError(f"bad level in '{spec}'")
    if name in ("none", "auto") and level:
        raise ValueError(f"codec {name} takes no level")
    return name, level


def codec_list(specs):
    """Parsed codecs, none first, each once, in the given order otherwise."""
    out = [("none", "")]
    for s in specs:
        c = parse_codec(s.strip())
        if c not in out:
            out.append(c)
    return tuple(out)


def parse_rounds(value):
    rounds = int(value)
    if rounds < 2:
        raise ValueError("rounds must be >= 2 (an interval needs two paired rounds)")
    return rounds


# Built-in matrices. Runs go in this order: the 4 MB setting the headline figures come from
# first, then the block sizes, then the other work_mem values.
ALL_CODECS = ["none", "lz4", "zstd:1", "zstd:3", "zstd:9", "zlib:1", "zlib:6", "auto"]
PRESETS = {
    "sf1": {
        "sf": "1",
        "groups": [
            {"name": "codecs at 4MB", "block_size": ["8K"], "work_mem": ["4MB"],
             "codecs": ALL_CODECS},
            {"name": "block sizes", "block_size": ["32K", "128K"], "work_mem": ["4MB"],
             "codecs": ["none", "lz4", "zstd:1"]},
            # At the other budgets the codecs that can win: the 4 MB run shows zstd above
            # level 1 and zlib-1 cost far more time for no more space.
            {"name": "codecs at 1MB and 64MB", "block_size": ["8K"], "work_mem": ["1MB", "64MB"],
             "codecs": ["none", "lz4", "zstd:1", "zlib:6", "auto"]},
        ],
    },
    "smoke": {
        "sf": "0.1",
        "groups": [
            {"name": "codecs", "rounds": 2, "block_size": ["8K"], "work_mem": ["1MB", "4MB"],
             "codecs": ["none", "lz4", "zstd:1", "auto"]},
            {"name": "block sizes", "rounds": 2, "block_size": ["32K"], "work_mem": ["1MB"],
             "codecs": ["none", "lz4"]},
        ],
    },
}

GROUP_KEYS = {"name", "rounds", "block_size", "work_mem", "codecs"}


def load_spec(name_or_path):
    """A preset name or a JSON file with the same shape as PRESETS' values."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    with open(name_or_path, encoding="utf-8") as f:
        return json.load(f)


def expand(spec, sf_override=""):
    """The runs of a matrix spec, in run order, one per (work_mem, block size)."""
    sf = sf_override or str(spec["sf"])
    runs, index = [], {}
    for group in spec["groups"]:
        unknown = set(group) - GROUP_KEYS
        if unknown:
            raise ValueError(f"unknown group field(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(GROUP_KEYS))})")
        rounds = parse_rounds(group.get("rounds", DEFAULT_ROUNDS))
        codecs = codec_list(group["codecs"])
        for wm in group["work_mem"]:
            for block in group["block_size"]:
                setting = (parse_size(wm), parse_size(block))
                if setting in index:
                    old = runs[index[setting]]
                    merged = old.codecs + tuple(c for c in codecs if c not in old.codecs)
                    runs[index[setting]] = Run(sf, old.work_mem, old.block, merged,
                                               max(rounds, old.rounds))
                    continue
                index[setting] = len(runs)
                runs.append(Run(sf, setting[0], setting[1], codecs, rounds))
    if not runs:
        raise ValueError("the matrix has no runs")
    return runs


def describe(spec, sf_override=""):
    """One line per group, for the report and --dry-run."""
    sf = sf_override or str(spec["sf"])
    return [f"{g.get('name', 'group')}: SF {sf}; codecs {', '.join(g['codecs'])}; "
            f"block {', '.join(g['block_size'])}; work_mem {', '.join(g['work_mem'])}; "
            f"--rounds={g.get('rounds', DEFAULT_ROUNDS)}" for g in spec["groups"]]
