"""A tool defined here, outside the package, goes through the same paths as the built-ins:
registry, annotation prompt, engine, CLI, and a real model's call-start probabilities."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolformer_kit.commands import cli
from toolformer_kit.calls import ToolCall, find_calls, format_call
from toolformer_kit.tools import AnnotationSettings, get_tool, load_tools_file, register_tool, tool_names
from toolformer_kit.tools.engine import ToolEngine
from toolformer_kit.tools.user import ToolDefinitionError, make_tool

HERE = Path(__file__).parent


@register_tool(
    "ReverseWords",
    demonstrations=[
        "Read backwards, 'red green blue' is [ReverseWords(red green blue)] 'blue green red'.",
        "The list one two three reversed gives [ReverseWords(one two three)] three two one.",
        ("Flip 'up and away' to get 'away and up'.",
         "Flip 'up and away' to get [ReverseWords(up and away)] 'away and up'."),
    ],
    settings=AnnotationSettings(tau_s=0.2, k=4, m=3, tau_f=1.5),
)
def reverse_words(text: str) -> str:
    """Reverses the order of the words in a phrase."""
    return " ".join(reversed(text.split()))


def test_decorated_tool_is_registered_like_a_builtin():
    tool = get_tool("ReverseWords")
    assert tool is reverse_words and "ReverseWords" in tool_names()
    assert tool.settings == AnnotationSettings(tau_s=0.2, k=4, m=3, tau_f=1.5)
    assert tool("a b c") == "c b a"
    with pytest.raises(Exception, match="did you mean 'ReverseWords'"):
        get_tool("ReverseWord")


def test_prompt_is_built_by_the_same_code():
    tool = get_tool("ReverseWords")
    prompt = tool.prompt_prefix() + tool.prompt_context("Say it backwards: left right.")
    assert prompt.startswith("Your task is to add calls to a ReverseWords API")
    assert "Reverses the order of the words" in prompt
    assert prompt.count("Input: ") == 4 and prompt.endswith("Input: Say it backwards: left right.\nOutput:")
    for x, y in tool.demonstrations:
        (parsed,) = find_calls(y)
        assert format_call(parsed.call) in y and parsed.call.tool == "ReverseWords"


def test_engine_runs_user_and_builtin_tools_together(tmp_path):
    engine = ToolEngine(cache_path=str(tmp_path / "c.sqlite"))
    out = engine.run([ToolCall("ReverseWords", "x y"), ToolCall("Calculator", "2 * 21"), ToolCall("ReverseWords", "")])
    assert [r.result for r in out] == ["y x", "42", None] and "empty input" in out[2].error
    assert engine.run([ToolCall("ReverseWords", "x y")])[0].cached


def test_config_file_tools(capsys):
    names = load_tools_file(HERE / "user_tools_example.yaml", trust_code=True)
    assert names == ["VowelCount", "Lucky"]
    vowels, lucky = get_tool("VowelCount"), get_tool("Lucky")
    assert vowels("education") == "5" and vowels.timeout == 2 and vowels.settings.k == 20
    assert lucky("") == "7" and not lucky.takes_input and lucky.settings.tau_f == 2.0
    assert "Always seven." in lucky.prompt_prefix()  # default instruction from the docstring
    assert load_tools_file(HERE / "user_tools_example.yaml", trust_code=True) == ["VowelCount", "Lucky"]  # reloading is harmless


def test_cli_runs_a_user_tool_from_a_file(capsys):
    assert cli.main(["tools", "--tools", str(HERE / "user_tools_example.yaml"), "--trust-tool-code", "run",
                     "VowelCount", "queue"]) == 0
    assert capsys.readouterr().out.strip() == "4"
    assert cli.main(["tools", "run", "ReverseWords", "one two"]) == 0
    assert capsys.readouterr().out.strip() == "two one"
    assert cli.main(["tools", "list"]) == 0
    assert "ReverseWords" in capsys.readouterr().out


def test_env_var_loads_tools_on_first_lookup(tmp_path, monkeypatch):
    module = tmp_path / "env_tools.py"
    module.write_text(
        "from toolformer_kit.tools import register_tool\n\n"
        "@register_tool(demonstrations=['A [Shout(a)] A.', 'B [Shout(b)] B.', 'C [Shout(c)] C.'])\n"
        "def Shout(text: str) -> str:\n"
        "    return text.upper()\n")
    monkeypatch.setenv("TOOLFORMER_TOOLS", str(module))
    monkeypatch.setenv("TOOLFORMER_TRUST_TOOL_CODE", "1")
    assert get_tool("Shout")("hey") == "HEY"


def test_a_tool_file_is_code_and_runs_only_when_trusted(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("TOOLFORMER_TRUST_TOOL_CODE", raising=False)
    marker = tmp_path / "ran"
    module = tmp_path / "evil.py"
    module.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    shell = tmp_path / "shell.yaml"
    shell.write_text("tools:\n  - function: subprocess:getoutput\n    name: Sh\n"
                     "    demonstrations: ['a [Sh(ls)] b', 'c [Sh(pwd)] d', 'e [Sh(id)] f']\n")
    for path in (module, shell):
        with pytest.raises(ToolDefinitionError, match="--trust-tool-code"):
            load_tools_file(path)
    assert cli.main(["tools", "--tools", str(module), "list"]) == 2
    assert "loading it runs that code" in capsys.readouterr().err
    monkeypatch.setenv("TOOLFORMER_TOOLS", str(module))
    for _ in range(2):  # refused on every lookup, not once
        with pytest.raises(ToolDefinitionError, match="TOOLFORMER_TRUST_TOOL_CODE=1"):
            tool_names()
    monkeypatch.delenv("TOOLFORMER_TOOLS")
    assert not marker.exists() and "Sh" not in tool_names()


@pytest.mark.parametrize("kwargs, message", [
    (dict(demonstrations=[]), "needs demonstrations"),
    (dict(demonstrations=["no call here"]), "has no call to Bad"),
    (dict(demonstrations=[("plain text", "changed [Bad(x)] text")]), "must be the input with calls inserted"),
    (dict(demonstrations=["a [Bad(x)] b"], settings={"tau": 1}), "use tau_s, k, m and tau_f"),
])
def test_bad_definitions_are_refused_clearly(kwargs, message):
    with pytest.raises(ToolDefinitionError, match=message):
        make_tool(lambda text: text, "Bad", **kwargs)


def test_non_text_signatures_are_refused():
    def add(a: int, b: int) -> int:
        return a + b

    def square(x: int) -> int:
        return x * x

    with pytest.raises(ToolDefinitionError, match="takes 2 arguments"):
        make_tool(add, demonstrations=["a [add(1)] b"])
    with pytest.raises(ToolDefinitionError, match="annotate it 'str'"):
        make_tool(square, demonstrations=["a [square(1)] b"])


@pytest.mark.real_model
def test_user_tool_prompt_scores_positions_on_a_real_model(smollm2):
    """The annotation entry point (call-start probabilities over the tool's prompt) accepts it."""
    tool = get_tool("ReverseWords")
    text = " Backwards, 'sun moon star' reads 'star moon sun'."
    (res,) = smollm2.call_start_logprobs(tool.prompt_prefix(), [text], contexts=[tool.prompt_context(text.strip())])
    assert len(res.logprobs) == len(res.token_ids) > 5
    assert (res.logprobs <= 0).all() and res.probs.max() > 0.01


def test_name_clash_and_malformed_file_are_clear(tmp_path):
    with pytest.raises(ToolDefinitionError, match="'Calculator' is already registered"):
        register_tool("Calculator", demonstrations=["a [Calculator(1)] b"])(lambda text: text)
    bad = tmp_path / "bad.yaml"
    bad.write_text("tools:\n  - just a string\n", encoding="utf-8")
    with pytest.raises(ToolDefinitionError, match="must be a mapping"):
        load_tools_file(bad)
    assert cli.main(["tools", "--tools", str(tmp_path / "missing.yaml"), "list"]) == 2
