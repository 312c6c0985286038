"""train/shadow.py: a bare folder on sys.path no longer passes for a library during one import."""

import importlib.util
import sys

from toolformer_kit.train.shadow import without_namespace


def test_a_bare_folder_is_hidden_for_one_import_and_restored(tmp_path, monkeypatch):
    (tmp_path / "shadow_probe_pkg").mkdir()  # no __init__.py: a namespace package
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert importlib.util.find_spec("shadow_probe_pkg") is not None
    before = list(sys.path)
    with without_namespace("shadow_probe_pkg"):
        assert importlib.util.find_spec("shadow_probe_pkg") is None
    assert sys.path == before


def test_a_real_package_is_left_alone():
    before = list(sys.path)
    with without_namespace("json"):
        assert importlib.util.find_spec("json") is not None and sys.path == before
