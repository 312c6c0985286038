"""Annotating the same small corpus with the fake LM gives the same files as the code wrote before
the package layout changed (tests/annotate/golden/, written at cb6ca05): a move or a refactor that
changes what is sampled, scored, kept or written shows up here first.

The comparison is byte for byte except in the last digits of floating-point numbers: numpy's dot
product rounds differently on CPUs with different vector units (an AVX2 and an AVX-512 EPYC gave
0.5364040699193803 and ...802 for the same loss), so every float literal is compared to 12
significant digits. Everything else (keys, their order, texts, counts, decisions) must be identical.

To rewrite the golden files after an *intended* change of output:
``TOOLFORMER_REGOLDEN=1 pytest tests/annotate/test_golden.py``.
"""

import os
import re
import shutil
from pathlib import Path

from .test_runner import make

GOLDEN = Path(__file__).parent / "golden"
FILES = ("candidates.jsonl", "corpus.jsonl", "documents.jsonl", "shards/shard-00000.jsonl",
         "shards/shard-00001.jsonl", "shards/shard-00002.jsonl")
FLOAT = re.compile(rb"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def canonical(data: bytes) -> bytes:
    """The file with each float literal rounded to 12 significant digits.

    >>> canonical(b'{"L": 0.5364040699193803, "n": 3, "t": "x 1.5"}')
    b'{"L": 0.536404069919, "n": 3, "t": "x 1.5"}'
    """
    return FLOAT.sub(lambda m: b"%.12g" % float(m.group()), data)


def test_canonical_still_tells_a_changed_value_apart():
    assert canonical(b"0.5364040699193803") == canonical(b"0.5364040699193802")
    assert canonical(b"0.5364040699193803") != canonical(b"0.5364040699")


def test_annotation_output_is_identical_to_the_golden_files(tmp_path):
    make(tmp_path).run()
    out = tmp_path / "out"
    if os.environ.get("TOOLFORMER_REGOLDEN"):
        for name in FILES:
            (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / name, GOLDEN / name)
    for name in FILES:
        assert canonical((out / name).read_bytes()) == canonical((GOLDEN / name).read_bytes()), name
