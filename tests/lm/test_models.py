import json
import os

import pytest

from toolformer_kit.lm import embedded as models
from toolformer_kit.lm.embedded import ModelError, is_complete, pull, pulled, resolve_model


def test_embedded_models_are_listed_with_metadata():
    names = models.EMBEDDED.names()
    assert {"smollm2-135m", "qwen2.5-coder-0.5b"} <= set(names)
    spec = models.EMBEDDED.get("qwen2.5-coder-0.5b")
    assert len(spec.packages) == 6 and len(spec.files) == 6 and len(spec.sha256) == 64


def test_unknown_name_lists_known_models():
    with pytest.raises(ModelError) as err:
        resolve_model("smollm3")
    assert "smollm2-135m" in str(err.value) and "qwen2.5-coder-0.5b" in str(err.value)


def test_folder_without_config_is_refused(tmp_path):
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(str(tmp_path))


def test_cache_dir_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLFORMER_CACHE", str(tmp_path / "a"))
    assert models.cache_dir() == tmp_path / "a"
    assert models.cache_dir(tmp_path / "b") == tmp_path / "b"
    monkeypatch.delenv("TOOLFORMER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "toolformer-kit"


def test_manifest_checks_sizes_and_hashes(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"12345")
    models._write_manifest(tmp_path, {"model": "x"})
    assert is_complete(tmp_path) and is_complete(tmp_path, verify_hashes=True)
    (tmp_path / "a.bin").write_bytes(b"12346")  # same size, other bytes
    assert is_complete(tmp_path) and not is_complete(tmp_path, verify_hashes=True)
    (tmp_path / "a.bin").write_bytes(b"123")
    assert not is_complete(tmp_path)
    (tmp_path / models.MANIFEST).write_text("{not json")
    assert not is_complete(tmp_path)


def test_assemble_checks_magic_and_digest(tmp_path):
    a, b = tmp_path / "p1", tmp_path / "p2"
    a.write_bytes(b"GGUF\x03\x00")
    b.write_bytes(b"rest")
    digest = models.assemble_gguf([a, b], tmp_path / "m.gguf", None)
    assert (tmp_path / "m.gguf").read_bytes() == b"GGUF\x03\x00rest"
    assert models.assemble_gguf([a, b], tmp_path / "m2.gguf", digest) == digest
    with pytest.raises(ModelError, match="sha256"):
        models.assemble_gguf([a, b], tmp_path / "m3.gguf", "0" * 64)
    with pytest.raises(ModelError, match="not a GGUF"):
        models.assemble_gguf([b, a], tmp_path / "m4.gguf", None)


@pytest.mark.real_model
def test_pull_is_idempotent_and_rebuilds_a_damaged_folder(tmp_path):
    folder = pull("smollm2-135m", cache=tmp_path)
    manifest = json.loads((folder / models.MANIFEST).read_text())
    assert manifest["gguf_sha256"] == models.EMBEDDED.get("smollm2-135m").sha256
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(manifest["files"])
    stamp = os.stat(folder / "model.safetensors").st_mtime_ns
    assert pull("smollm2-135m", cache=tmp_path) == folder  # second pull: nothing rebuilt
    assert os.stat(folder / "model.safetensors").st_mtime_ns == stamp
    with open(folder / "model.safetensors", "r+b") as fh:  # a half-written file
        fh.truncate(1000)
    assert not pulled("smollm2-135m", cache=tmp_path)
    pull("smollm2-135m", cache=tmp_path)
    assert is_complete(folder, verify_hashes=True)


@pytest.mark.real_model
def test_hub_id_without_network_is_a_clear_error(monkeypatch):
    from toolformer_kit.lm.hf import HFLanguageModel

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="not in the local Hugging Face cache and HF_HUB_OFFLINE is set"):
        HFLanguageModel.load("some-org/some-model-that-is-not-cached")


def test_two_processes_pulling_one_model_convert_it_once(tmp_path, monkeypatch):
    """A pipeline and a test run pulling the same model at once: the second waits for the first
    and uses its folder (it used to fail renaming onto the folder the first had just put in place)."""
    import threading
    import time
    from types import SimpleNamespace

    spec = SimpleNamespace(name="fake-model", packages=("fake-pkg",), sha256=None, gguf_name="m.gguf")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF\x03\x00")
    converted = []

    def convert(gguf_dir, gguf_name, out):
        converted.append(out)
        time.sleep(0.3)  # long enough for the other puller to arrive meanwhile
        out.mkdir()
        (out / "config.json").write_text("{}")

    monkeypatch.setattr(models.EMBEDDED, "get", lambda name: spec)
    monkeypatch.setattr(models, "source_files", lambda s: [gguf])
    monkeypatch.setattr(models, "convert_gguf", convert)
    results, errors = [], []

    def worker():
        try:
            results.append(pull("fake-model", cache=tmp_path / "cache"))
        except Exception as exc:  # pragma: no cover - what the test guards against
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(converted) == 1
    assert results[0] == results[1] and is_complete(results[0])
