"""Plain functions that tests/tools/user_tools_example.yaml turns into tools (no package import)."""


def count_vowels(text: str) -> str:
    """Counts the vowels in a word."""
    return str(sum(ch in "aeiouAEIOU" for ch in text))


def lucky_number() -> int:
    """Always seven."""
    return 7
