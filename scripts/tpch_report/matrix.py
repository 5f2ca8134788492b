"""The benchmark matrix: which spillbench cells to run.

A cell is one spillbench invocation over all queries: one scale factor, codec, level, block
size and work_mem, run with --repeat. Invariants: a cell's key names every setting that can
change its numbers (so a cached file is only reused for exactly that cell), and a matrix never
holds the same configuration twice (the larger repeat wins).
"""

import json
from dataclasses import dataclass

KIB = 1024


@dataclass(frozen=True)
class Cell:
    sf: str          # scale factor as given to spillbench ("1", "0.1")
    codec: str       # none | lz4 | zstd | zlib
    level: str       # "" = the codec's default level
    block: int       # block size in bytes
    work_mem: int    # bytes
    repeat: int

    @property
    def codec_label(self) -> str:
        """Codec and level as shown in tables and legends (zstd-3, lz4, none)."""
        return f"{self.codec}-{self.level}" if self.level else self.codec

    @property
    def config(self) -> tuple:
        """Everything but the repeat count: cells with equal configs measure the same thing."""
        return (self.sf, self.codec, self.level, self.block, self.work_mem)

    @property
    def key(self) -> str:
        return (f"sf{self.sf}_{self.codec_label}_b{size_label(self.block)}"
                f"_wm{size_label(self.work_mem)}_r{self.repeat}")

    def baseline(self) -> tuple:
        """Config of the codec-none cell this one is compared with (same sf, block, work_mem)."""
        return (self.sf, "none", "", self.block, self.work_mem)


def size_label(nbytes: int) -> str:
    """8192 -> '8K', 4194304 -> '4MB' (work_mem style for >= 1 MiB)."""
    if nbytes % (KIB * KIB) == 0:
        return f"{nbytes // (KIB * KIB)}MB"
    if nbytes % KIB == 0:
        return f"{nbytes // KIB}K"
    return str(nbytes)


def parse_size(text: str) -> int:
    """'8K', '4MB', '1M', '65536' -> bytes (powers of 1024, as spillbench reads them)."""
    t = text.strip().upper()
    if t.endswith("B"):
        t = t[:-1]
    mult = {"K": KIB, "M": KIB ** 2, "G": KIB ** 3}.get(t[-1:], 1)
    digits = t[:-1] if mult != 1 else t
    if not digits.isdigit() or int(digits) <= 0:
        raise ValueError(f"bad size '{text}'")
    return int(digits) * mult


CODECS = ("none", "lz4", "zstd", "zlib")


def parse_codec(spec: str) -> tuple:
    """'zstd:3' -> ('zstd', '3'); 'lz4' -> ('lz4', '')."""
    name, _, level = spec.partition(":")
    if name not in CODECS:
        raise ValueError(f"unknown codec '{name}'")
    if level and not level.lstrip("-").isdigit():
        raise ValueError(f"bad level in '{spec}'")
    if name == "none" and level:
        raise ValueError("codec none takes no level")
    return name, level


# Built-in matrices. Groups run in this order; within a group work_mem is the outer loop and
# the codec the inner one, so a codec and its none baseline run minutes apart, not an hour.
PRESETS = {
    "sf1": {
        "sf": "1",
        "groups": [
            {"name": "codecs at 4MB", "repeat": 3, "block_size": ["8K"], "work_mem": ["4MB"],
             "codecs": ["none", "lz4", "zstd:1", "zstd:3", "zstd:9", "zlib:1", "zlib:6"]},
            {"name": "block sizes", "repeat": 3, "block_size": ["32K", "128K"],
             "work_mem": ["4MB"], "codecs": ["none", "lz4", "zstd:1"]},
            {"name": "codecs at 1MB and 64MB", "repeat": 1, "block_size": ["8K"],
             "work_mem": ["1MB", "64MB"],
             "codecs": ["none", "lz4", "zstd:1", "zstd:3", "zstd:9", "zlib:1", "zlib:6"]},
        ],
    },
    "smoke": {
        "sf": "0.1",
        "groups": [
            {"name": "codecs", "repeat": 1, "block_size": ["8K"], "work_mem": ["1MB", "4MB"],
             "codecs": ["none", "lz4", "zstd:1", "zlib:1"]},
            {"name": "block sizes", "repeat": 1, "block_size": ["32K"], "work_mem": ["1MB"],
             "codecs": ["none", "lz4"]},
        ],
    },
}


def load_spec(name_or_path: str) -> dict:
    """A preset name or a JSON file with the same shape as PRESETS' values."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    with open(name_or_path, encoding="utf-8") as f:
        return json.load(f)


def expand(spec: dict, sf_override: str = "") -> list:
    """The cells of a matrix spec, in run order, one per configuration."""
    sf = sf_override or str(spec["sf"])
    cells, index = [], {}
    for group in spec["groups"]:
        repeat = int(group.get("repeat", 1))
        if repeat < 1:
            raise ValueError("repeat must be >= 1")
        for wm in group["work_mem"]:
            for block in group["block_size"]:
                for codec_spec in group["codecs"]:
                    codec, level = parse_codec(codec_spec)
                    cell = Cell(sf, codec, level, parse_size(block), parse_size(wm), repeat)
                    if cell.config in index:
                        i = index[cell.config]
                        if cells[i].repeat < repeat:
                            cells[i] = cell
                        continue
                    index[cell.config] = len(cells)
                    cells.append(cell)
    return cells


def describe(spec: dict, sf_override: str = "") -> list:
    """One line per group, for the report and --dry-run."""
    sf = sf_override or str(spec["sf"])
    return [f"{g.get('name', 'group')}: SF {sf}; codecs {', '.join(g['codecs'])}; "
            f"block {', '.join(g['block_size'])}; work_mem {', '.join(g['work_mem'])}; "
            f"--repeat={g.get('repeat', 1)}" for g in spec["groups"]]
