"""Issue 18 campaign: hostile inputs for the Calculator and the call parser, counted.

Each target gets N seeded random inputs (a grammar of numbers, operators, brackets, Python
payloads, call syntax and odd Unicode, plus random mutations) and then N Hypothesis-drawn texts.
A crash is any exception the target lets out. "No code run" is checked two ways: an audit hook
counts every ``exec``/``os.system``/``subprocess.Popen``/``os.exec*`` event, and the payloads set
``builtins.PWNED`` if anything ever evaluates them.

    python benchmarks/campaign_fuzz.py [--n 100000] [--seed 0] [--no-hypothesis]
"""

from __future__ import annotations

import argparse
import builtins
import random
import sys
import time
import warnings

from toolformer_kit.calls import find_calls, parse_sampled, strip_calls
from toolformer_kit.tools.calculator import calculate

EVENTS = {"exec": 0, "os.system": 0, "subprocess.Popen": 0, "os.exec": 0, "os.posix_spawn": 0}
WATCH = False


def _audit(event: str, args) -> None:
    if WATCH and event in EVENTS:
        EVENTS[event] += 1


PAYLOADS = ["__import__('builtins').__setattr__('PWNED', 1)", "setattr(__builtins__, 'PWNED', 1)",
            "exec('import builtins; builtins.PWNED = 1')", "eval('1+1')", "(lambda: 1)()", "().__class__.__bases__",
            "open('/tmp/pwned', 'w')", "9**9**9", "10**100000", "2**-1", "[1]*10**9", "'a'*10**9", "1e308*10"]
ATOMS = ["1", "0", "-3", "4.5", "1,000", "12", "999999999999", "7/0", "3.", ".5", "1e5", "0x10", "1_000", "½",
         "٣", "２", "∞", "nan", "inf", "True", "None", "x", "π"]
OPS = ["+", "-", "*", "/", "//", "%", "**", "×", "÷", "−", "^", "@", "&", "|", "<<", " ", ""]
CALL_BITS = ["[", "]", "(", ")", "->", " -> ", "→", "Calculator", "WikiSearch", "QA", "MT", "Calendar", " [",
             "\\", '"', "'", "\n", "\x00", "\u202e", "\ud800", "😀", "<script>", "[[", "]]", "((", "))"]


def expression(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if roll < 0.08:
        return rng.choice(PAYLOADS)
    if depth > 4 or roll < 0.4:
        return rng.choice(ATOMS)
    if roll < 0.55:
        return "(" + expression(rng, depth + 1) + ")"
    return expression(rng, depth + 1) + rng.choice(OPS) + expression(rng, depth + 1)


def call_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 12)):
        roll = rng.random()
        if roll < 0.3:
            parts.append(f" [{rng.choice(['Calculator', 'QA', 'WikiSearch', 'X'])}({expression(rng)})"
                         + rng.choice(["", " -> ", "->"]) + rng.choice(["", "42", expression(rng)])
                         + rng.choice(["]", "", "]]"]))
        elif roll < 0.7:
            parts.append(rng.choice(CALL_BITS))
        else:
            parts.append(rng.choice(["The farm had ", "so ", " eggs. ", "text "]) + rng.choice(ATOMS))
    return "".join(parts)


def mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(0, 4)):
        i = rng.randint(0, len(chars))
        roll = rng.random()
        if roll < 0.4:
            chars.insert(i, chr(rng.choice([rng.randint(0, 127), rng.randint(128, 0x2FFF), rng.randint(0xD800, 0xDFFF)])))
        elif chars and roll < 0.7:
            del chars[min(i, len(chars) - 1)]
        else:
            chars.insert(i, rng.choice(CALL_BITS + OPS))
    return "".join(chars)


def parse_all(text: str) -> None:
    find_calls(text)
    parse_sampled(text)
    strip_calls(text)


def run(target, inputs) -> dict:
    crashes, kinds, n, t0 = 0, {}, 0, time.perf_counter()
    for text in inputs:
        n += 1
        try:
            target(text)
        except Exception as exc:  # noqa: BLE001 (counting is the point)
            crashes += 1
            kinds.setdefault(type(exc).__name__, text)
    return {"inputs": n, "crashes": crashes, "first_crash_by_type": kinds, "seconds": round(time.perf_counter() - t0, 1)}


def random_inputs(seed: int, n: int, make):
    rng = random.Random(seed)
    for _ in range(n):
        text = make(rng)
        yield mutate(rng, text) if rng.random() < 0.5 else text


def hypothesis_inputs(n: int, seed: int, kind: str) -> list[str]:
    """N texts drawn by Hypothesis (its generation phase only: no shrinking, no database)."""
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings
    from hypothesis import strategies as st

    alphabet = st.sampled_from(list("0123456789+-*/().,[]> _abcxyzCalcutor\n") + ["->", "**", "Calculator(",
                                                                                 " [", "QA(", "×", "\x00", "😀"])
    texts = st.one_of(st.text(max_size=80), st.lists(alphabet, max_size=40).map("".join))
    drawn: list[str] = []

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(texts)
    def collect(text):
        drawn.append(text)

    collect()
    return drawn


def main() -> int:
    global WATCH
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-hypothesis", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore", SyntaxWarning)  # ast.parse of "1e5x"-like inputs
    sys.addaudithook(_audit)
    results = {}
    for name, target, make in (("Calculator", calculate, expression), ("call parser", parse_all, call_text)):
        WATCH = True
        results[f"{name} (seeded random)"] = run(target, random_inputs(args.seed, args.n, make))
        WATCH = False
        if not args.no_hypothesis:
            drawn = hypothesis_inputs(args.n, args.seed, name)
            WATCH = True
            results[f"{name} (Hypothesis)"] = run(target, drawn)
            WATCH = False
    for name, r in results.items():
        print(f"{name:<32} {r['inputs']:>8} inputs  {r['crashes']} crashes  {r['seconds']:>6} s"
              + (f"  first: {r['first_crash_by_type']}" if r["crashes"] else ""))
    code_run = sum(EVENTS.values()) + hasattr(builtins, "PWNED")
    print(f"code run: {code_run} (audit events {EVENTS}, builtins.PWNED set: {hasattr(builtins, 'PWNED')})")
    return 1 if code_run or any(r["crashes"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
