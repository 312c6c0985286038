import pytest

from toolformer_kit.registry import Registry, UnknownNameError


def test_register_get_and_lazy_target():
    reg = Registry("thing")
    reg.add("json-dumps", "json:dumps")
    assert reg.get("json-dumps")({"a": 1}) == '{"a": 1}'
    assert "json-dumps" in reg and len(reg) == 1


def test_did_you_mean_and_known_list():
    reg = Registry("tool")
    for name in ("Calculator", "Calendar", "WikiSearch"):
        reg.add(name, name)
    with pytest.raises(UnknownNameError) as err:
        reg.get("Calculater")
    assert "did you mean 'Calculator'" in str(err.value)
    assert "Known: Calculator, Calendar, WikiSearch" in str(err.value)


def test_collision_overwrite_and_freeze():
    reg = Registry("tool")
    reg.add("a", 1)
    with pytest.raises(ValueError, match="already registered"):
        reg.add("a", 2)
    reg.add("a", 2, overwrite=True)
    assert reg.get("a") == 2
    reg.freeze()
    with pytest.raises(RuntimeError, match="frozen"):
        reg.add("b", 3)


def test_case_insensitive_registry():
    reg = Registry("model", case_sensitive=False)
    reg.add("SmolLM2-135M", 1)
    assert reg.get("smollm2-135m") == 1
