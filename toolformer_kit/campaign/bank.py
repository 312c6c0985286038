"""A campaign's bank: the committed shard files, and the pure helpers that read C* and its study
numbers out of them (see :mod:`.campaign` for why a bank, and its layout)."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from ..annotate import records as R
from ..annotate.merge import best_per_position
from ..annotate.refilter import redecide
from ..config import ConfigError
from ..files import DamagedFileError, read_json, write_atomic

FORMAT = "toolformer-kit campaign v1"
BIN = 0.1  # nats: width of the score histogram's bins
RANKS = ((1, 1), (2, 5), (6, 10), (11, 20))
SHARD_KEYS = ("windows", "dtype", "stats", "score_histogram", "scored", "positions")  # what bank_record writes
# Each campaign recipe's tools: the one table the runner, the re-execution and the card read.
RECIPES = {"math": ["Calculator"], "search": ["WikiSearch", "QA"], "calendar": ["Calendar"], "mt": ["MT"]}


def recipe_tools(cfg) -> list[str]:
    """A campaign's tools (a config written before recipes existed is the maths campaign's).

    >>> from types import SimpleNamespace
    >>> recipe_tools(SimpleNamespace(recipe="mt")), recipe_tools(SimpleNamespace())
    (['MT'], ['Calculator'])
    """
    return list(RECIPES[getattr(cfg, "recipe", "math")])


def histogram(scores: Iterable[float], width: float = BIN) -> dict[str, int]:
    """Counts per bin of ``width`` nats, keyed by the bin's lower edge.

    >>> histogram([-0.05, 0.0, 0.04, 0.31, 1.0])
    {'-0.1': 1, '0.0': 2, '0.3': 1, '1.0': 1}
    """
    out: Counter = Counter()
    for s in scores:
        out[round(width * math.floor(round(s / width, 9)), 1) + 0.0] += 1
    return {str(k): v for k, v in sorted(out.items())}


def position_ranks(positions: dict[str, list]) -> dict[tuple[str, int], int]:
    """(doc, position) → its rank by p_i within the document (1 = likeliest).

    >>> position_ranks({"d": [[4, 0.2], [9, 0.7]]})
    {('d', 9): 1, ('d', 4): 2}
    """
    out = {}
    for doc, rows in positions.items():
        for rank, (pos, _) in enumerate(sorted(rows, key=lambda r: (-r[1], r[0])), start=1):
            out[(doc, pos)] = rank
    return out


def merged(cands: Sequence[R.Candidate], tau_f: float) -> list[R.Candidate]:
    """The calls C* holds at ``tau_f``: kept ones, one per position (the best)."""
    return best_per_position(c for c in redecide(cands, tau_f) if c.kept)


def rank_bucket(rank: int) -> str:
    """The bucket of a position's rank in the kept-by-rank table.

    >>> rank_bucket(1), rank_bucket(7), rank_bucket(40)
    ('1', '6-10', '>20')
    """
    for lo, hi in RANKS:
        if lo <= rank <= hi:
            return str(lo) if lo == hi else f"{lo}-{hi}"
    return f">{RANKS[-1][1]}"


def kept_by_rank(calls: Sequence[R.Candidate], ranks: dict) -> dict[str, int]:
    out = Counter(rank_bucket(ranks.get((c.doc_id, c.position), 99)) for c in calls)
    return {b: out.get(b, 0) for b in [rank_bucket(lo) for lo, _ in RANKS] + [f">{RANKS[-1][1]}"] if out.get(b, 0) or b != ">20"}


def _compact(c: R.Candidate) -> R.Candidate:
    """Floats rounded to 5 decimals (10 µnats: far below the bf16 tolerance) to keep the bank small."""
    for name in ("p_i", "L_eps", "L_call_noresult", "L_plus", "L_minus", "score"):
        v = getattr(c, name)
        if isinstance(v, float):
            setattr(c, name, round(v, 5))
    return c


def bank_record(cands: Sequence[R.Candidate], stats: dict, windows: Sequence[str], dtype: str) -> tuple[list, dict]:
    """(banked candidates, shard JSON) of one annotated shard."""
    positions: dict[str, dict] = {}
    for c in cands:
        positions.setdefault(c.doc_id, {})[c.position] = round(c.p_i, 5)
    scores = [c.score for c in cands if c.score is not None]
    keep = [_compact(c) for c in cands if c.score is not None and c.score >= 0]
    info = {"windows": list(windows), "dtype": dtype, "stats": stats, "score_histogram": histogram(scores),
            "scored": len(scores), "positions": {d: sorted([p, v] for p, v in ps.items()) for d, ps in positions.items()}}
    return keep, info


# ------------------------------------------------------------------ the bank
class Bank:
    """The committed shard files of a campaign: read, checked against the settings, appended."""

    def __init__(self, out: str | Path):
        self.dir = Path(out) / "bank"

    def shard(self, n: int, suffix: str = ".jsonl") -> Path:
        return self.dir / f"shard-{n:05d}{suffix}"

    def open(self, wanted: dict) -> None:
        """Create the bank, or check that it holds this campaign (one error naming the fix)."""
        head = self.dir / "campaign.json"
        if head.exists():
            have = read_json(head, f"restore it (git checkout -- {head}) or pass a new --out")
            if not isinstance(have, dict) or not isinstance(have.get("settings"), dict):
                raise DamagedFileError(f"{head} is damaged (not a campaign's head: no settings); restore it "
                                       f"(git checkout -- {head}) or pass a new --out")
            keys = ("format", "settings", "corpus", "windows")
            if any(have.get(k) != wanted.get(k) for k in keys):
                diff = sorted(k for k in set(have.get("settings", {})) | set(wanted["settings"])
                              if have.get("settings", {}).get(k) != wanted["settings"].get(k))
                what = f"settings differ: {', '.join(diff)}" if diff else "the selected corpus differs"
                raise ConfigError(f"{self.dir} holds another campaign ({what}); rerun with its settings "
                                  "(bank/campaign.json) or pass a new --out")
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        write_atomic(head, json.dumps(wanted, indent=1, ensure_ascii=False))

    def done(self, n: int, windows: Sequence[str] | None = None) -> tuple[list[R.Candidate], dict] | None:
        """Shard ``n``'s candidates and record, None if it is not banked yet, or a
        :class:`~toolformer_kit.files.DamagedFileError` naming the file when it cannot be what a
        campaign wrote (cut, edited, or holding other ``windows`` than the campaign's shard n)."""
        path, head = self.shard(n), self.shard(n, ".json")
        if not path.exists():
            return None
        fix = (f"restore the bank (git checkout -- {self.dir}), or delete {path.name} and {head.name} "
               "to annotate that shard again")
        if not head.is_file():
            raise DamagedFileError(f"{head} is missing (it is written before {path.name}); {fix}")
        cands = R.read_jsonl(path, fix)
        info = read_json(head, fix)
        missing = [k for k in SHARD_KEYS if not isinstance(info, dict) or k not in info]
        if missing:
            raise DamagedFileError(f"{head} is damaged (no {', '.join(missing)}); {fix}")
        if windows is not None and info["windows"] != list(windows):
            raise DamagedFileError(f"{head} holds other windows than the campaign's shard {n} "
                                   f"({len(info['windows'])} vs {len(windows)}); {fix}")
        if any(c.doc_id not in info["windows"] for c in cands):
            raise DamagedFileError(f"{path} holds a candidate of a window outside its shard; {fix}")
        return cands, info

    def write(self, n: int, keep: Sequence[R.Candidate], info: dict) -> None:
        write_atomic(self.shard(n, ".json"), json.dumps(info, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
        write_atomic(self.shard(n), "".join(c.to_json() + "\n" for c in keep))


@dataclass
class Progress:
    """What the bank holds so far, kept up to date shard by shard (the stop rule reads it)."""

    shards: list = field(default_factory=list)  # (n, candidates, info)

    def add(self, n: int, cands, info) -> None:
        self.shards.append((n, cands, info))

    @property
    def candidates(self) -> list[R.Candidate]:
        return [c for _, cs, _ in self.shards for c in cs]

    def merged_calls(self, tau_f: float) -> int:
        return len(merged(self.candidates, tau_f))


