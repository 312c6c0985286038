"""Reading C*, the +CC view, dev split, chunking and batching: pure helpers, no model."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolformer_kit.calls import find_calls
from toolformer_kit.train import data

CSTAR = [
    "The hall seats 350 people and 40 more stood, so 390 [Calculator(350 + 40) -> 390] 390 heard the talk.",
    "Paris [QA(What is the capital of France?) -> Paris] Paris is large.",
    "No call in this one.",
]


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_read_texts_round_trips_jsonl(tmp_path):
    path = _write_jsonl(tmp_path / "c.jsonl", [{"text": t, "source": "x"} for t in CSTAR])
    assert data.read_texts(path) == CSTAR


@pytest.mark.parametrize("content, expected", [
    ('{"text": "ok"}\n{"text": 5}\n', "line 2"),
    ('{"text": "ok"}\nnot json\n', "line 2 is not JSON"),
    ('["a list"]\n', "line 1"),
    ("\n\n", "holds no texts"),
])
def test_bad_data_files_give_one_clear_error(tmp_path, content, expected):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(data.DataError, match=expected) as info:
        data.read_texts(path)
    assert str(path) in str(info.value)


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(data.DataError, match="does not exist"):
        data.read_texts(tmp_path / "nope.jsonl")
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(data.DataError, match="not UTF-8"):
        data.read_texts(binary)


def test_json_dev_files_accept_wikipedia_summary_dumps(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"A": {"title": "A", "extract": "Alpha text."}, "B": {"extract": "Beta."}}))
    assert data.read_texts(path) == ["Alpha text.", "Beta."]


def test_plain_baseline_removes_every_call_and_nothing_else():
    plain = data.training_texts(CSTAR, plain_baseline=True)
    assert not any(find_calls(t) for t in plain)
    assert plain[0] == "The hall seats 350 people and 40 more stood, so 390 390 heard the talk."
    assert plain[2] == CSTAR[2]
    assert data.training_texts(CSTAR, plain_baseline=False) == CSTAR


def test_tool_counts():
    assert data.tool_counts(CSTAR) == {"Calculator": 1, "QA": 1}


@given(n=st.integers(0, 60), fraction=st.floats(0, 0.9), dev_docs=st.integers(1, 50), seed=st.integers(0, 5))
def test_split_dev_is_a_deterministic_partition(n, fraction, dev_docs, seed):
    texts = [f"t{i}" for i in range(n)]
    train, dev = data.split_dev(texts, dev_docs, fraction, seed)
    assert sorted(train + dev) == sorted(texts)
    assert len(dev) == min(dev_docs, int(n * fraction))
    assert (train, dev) == data.split_dev(texts, dev_docs, fraction, seed)


@settings(max_examples=200)
@given(ids=st.lists(st.integers(0, 99), max_size=200), max_length=st.integers(1, 40))
def test_split_chunks_cover_the_document_in_order(ids, max_length):
    pieces = data.chunk_ids(ids, max_length, "split")
    assert all(2 <= len(p) <= max_length for p in pieces)
    joined = [i for p in pieces for i in p]
    # only a final piece of one token may be dropped
    assert ids[:len(joined)] == joined and len(ids) - len(joined) <= (1 if max_length > 1 else len(ids))
    truncated = data.chunk_ids(ids, max_length, "truncate")
    assert truncated == pieces[:1] if len(ids[:max_length]) >= 2 else truncated == []


def test_pad_batch_masks_padding_by_position_even_when_pad_is_eos():
    eos = 2
    batch = data.pad_batch([[7, 8, eos], [9, eos]], pad_id=eos)
    assert batch["labels"].tolist() == [[7, 8, eos], [9, eos, data.IGNORE]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]


def test_collator_feeds_the_trainer_shape():
    batch = data.Collator(pad_id=0)([{"input_ids": [1, 2, 3]}, {"input_ids": [4]}])
    assert set(batch) == {"input_ids", "attention_mask", "labels"}
    assert batch["input_ids"].shape == (2, 3)


@pytest.mark.real_model
def test_tokenize_and_call_mask_on_the_real_tokenizer():
    from transformers import AutoTokenizer

    from toolformer_kit.lm.embedded import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))
    text = CSTAR[0]
    (seq,) = data.tokenize(tok, [text], max_length=512)
    assert seq[-1] == tok.eos_token_id and tok.decode(seq[:-1]) == text
    long = data.tokenize(tok, [text], max_length=8)
    assert len(long) == -(-len(seq) // 8) and all(len(s) <= 8 for s in long)
    enc = tok(text, return_offsets_mapping=True)
    mask = data.call_token_mask(text, enc["offset_mapping"])
    call_text = "".join(tok.decode([i]) for i, m in zip(enc["input_ids"], mask) if m)
    assert call_text.strip() == "[Calculator(350 + 40) -> 390]"
