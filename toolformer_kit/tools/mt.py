"""MT: detect the language of a phrase and translate it into English.

The paper used NLLB-600M with fastText language identification. Offline here we identify the
language with py3langid (20/20 on 14 languages in a test on this machine, no download) and, by
default, translate with the embedded Gemma 3 270M given a few worked translations (chosen by chrF
over every MLQA question: :data:`DEFAULT_TRANSLATOR`; Qwen 0.5B until December 2026). A local
NLLB or Marian folder can replace the LM (:class:`Seq2SeqTranslator`, ``translator=`` in
:func:`mt_tool`, or ``$TOOLFORMER_MT_MODEL`` pointing at such a folder).

English input gives no result: there is nothing to translate, and a "translation" that repeats
the input would teach the model useless calls. Language identification is limited to languages
with two-letter ISO 639-1 codes, because py3langid's regional varieties (Venetian, Walloon, …)
otherwise win on very short inputs ("El perro come." was read as Venetian).

>>> translation_prompt("Guten Morgen.", "de").splitlines()[-2:]
['German: Guten Morgen.', 'English:']
>>> language_name("fr"), language_name("xx")
('French', 'xx')
"""

from __future__ import annotations

import json
import logging
import os
import threading
import unicodedata
from pathlib import Path
from typing import Optional, Protocol, Sequence

from ..calls import ToolCall, format_call
from ..lm.base import LanguageModel
from .base import PAPER_CALCULATOR_MT, Tool
from .lmtool import LazyLM, first_line

log = logging.getLogger(__name__)

MODEL_ENV = "TOOLFORMER_MT_MODEL"
# Chosen by measurement (issue 47, results/ceilings/mt): on all 2,118 non-English MLQA questions,
# chrF 41.3 [40.6, 42.0] for Gemma 3 270M against 36.3 for Qwen 0.5B and 18.9 for SmolLM2; on Hindi
# 35.8 against 7.8, where Qwen wrote one of its own worked examples for 103 of 353 questions.
DEFAULT_TRANSLATOR = "gemma3-270m"

LANGUAGES = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "az": "Azerbaijani", "be": "Belarusian",
    "bg": "Bulgarian", "bn": "Bengali", "bs": "Bosnian", "ca": "Catalan", "cs": "Czech", "cy": "Welsh",
    "da": "Danish", "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish",
    "gl": "Galician", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian",
    "hy": "Armenian", "id": "Indonesian", "is": "Icelandic", "it": "Italian", "ja": "Japanese",
    "ka": "Georgian", "kk": "Kazakh", "ko": "Korean", "la": "Latin", "lt": "Lithuanian", "lv": "Latvian",
    "mk": "Macedonian", "ms": "Malay", "nl": "Dutch", "no": "Norwegian", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian",
    "sq": "Albanian", "sr": "Serbian", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "th": "Thai",
    "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}

# NLLB names its languages by code and script; the common ones, for a local NLLB folder.
NLLB_CODES = {
    "ar": "arb_Arab", "bg": "bul_Cyrl", "ca": "cat_Latn", "cs": "ces_Latn", "da": "dan_Latn",
    "de": "deu_Latn", "el": "ell_Grek", "es": "spa_Latn", "fa": "pes_Arab", "fi": "fin_Latn",
    "fr": "fra_Latn", "he": "heb_Hebr", "hi": "hin_Deva", "hu": "hun_Latn", "id": "ind_Latn",
    "it": "ita_Latn", "ja": "jpn_Jpan", "ko": "kor_Hang", "nl": "nld_Latn", "no": "nob_Latn",
    "pl": "pol_Latn", "pt": "por_Latn", "ro": "ron_Latn", "ru": "rus_Cyrl", "sv": "swe_Latn",
    "th": "tha_Thai", "tr": "tur_Latn", "uk": "ukr_Cyrl", "vi": "vie_Latn", "zh": "zho_Hans",
}

TRANSLATION_EXAMPLES = [  # written for this project
    ("de", "Die Bibliothek bleibt am Sonntag geschlossen.", "The library stays closed on Sunday."),
    ("fr", "Nous avons pris le train de nuit pour Marseille.", "We took the night train to Marseille."),
    ("es", "Mi hermana trabaja en un hospital cerca del puerto.", "My sister works at a hospital near the harbour."),
    ("zh", "这座桥建于十九世纪。", "This bridge was built in the nineteenth century."),
    ("it", "Il museo apre alle nove.", "The museum opens at nine."),
]

_IDENTIFIER = None
_ID_LOCK = threading.Lock()


def language_name(code: str) -> str:
    return LANGUAGES.get(code, code)


def _identifier():
    global _IDENTIFIER
    with _ID_LOCK:
        if _IDENTIFIER is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier  # lazy: loads a language-ID model

            ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            ident.set_languages([c for c in ident.nb_classes if len(c) == 2 and c in LANGUAGES])
            _IDENTIFIER = ident
        return _IDENTIFIER


def detect_language(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) of the text's language."""
    code, prob = _identifier().classify(text)
    return code, float(prob)


def translation_head() -> str:
    """The start every translation prompt shares: the instruction and the worked translations."""
    blocks = ["Translate each text into English."]
    blocks += [f"{language_name(c)}: {src}\nEnglish: {tgt}" for c, src, tgt in TRANSLATION_EXAMPLES]
    return "\n\n".join(blocks) + "\n\n"


def translation_prompt(text: str, lang: str) -> str:
    """Worked translations, then the text labelled with its detected language."""
    return f"{translation_head()}{language_name(lang)}: {' '.join(text.split())}\nEnglish:"


class Translator(Protocol):
    name: str

    def translate(self, text: str, lang: str) -> Optional[str]: ...


class LMTranslator:
    """Translation by prompting a causal LM with worked examples."""

    def __init__(self, model: str | None = None, lm: LanguageModel | None = None):
        self.lm = LazyLM(model or (None if lm is not None else os.environ.get(MODEL_ENV) or DEFAULT_TRANSLATOR),
                         MODEL_ENV, lm)
        self.name = self.lm.describe()

    def translate(self, text: str, lang: str) -> Optional[str]:
        return first_line(self.lm.complete(translation_prompt(text, lang), _budget(text))) or None

    def translate_many(self, texts: Sequence[str], langs: Sequence[str]) -> list[Optional[str]]:
        """:meth:`translate` for many texts in one generation pass (the worked examples run once)."""
        prompts = [translation_prompt(t, lang) for t, lang in zip(texts, langs)]
        budget = max((_budget(t) for t in texts), default=8)
        outs = self.lm.complete_many(prompts, budget, shared=translation_head())
        return [first_line(o) or None for o in outs]

    def prepare(self) -> None:
        self.lm.get()


def _budget(text: str) -> int:
    return min(8 + 2 * len(text.split()) + len(text) // 4, 160)  # CJK has no spaces


class Seq2SeqTranslator:
    """A local NLLB or Marian folder through transformers (``AutoModelForSeq2SeqLM``)."""

    def __init__(self, folder: str | os.PathLike, device: str | None = None, max_new_tokens: int = 200):
        self.folder = Path(folder).expanduser()
        if not (self.folder / "config.json").is_file():
            raise ValueError(f"{self.folder} is not a Hugging Face model folder (no config.json); "
                             "give a local NLLB or Marian (opus-mt-*-en) folder")
        self.name = self.folder.name
        self.device = device
        self.max_new_tokens = max_new_tokens
        self._loaded = None
        self._lock = threading.Lock()

    def prepare(self):
        with self._lock:
            if self._loaded is None:
                from transformers import AutoModelForSeq2SeqLM, AutoTokenizer  # lazy: heavy

                tok = AutoTokenizer.from_pretrained(self.folder)
                model = AutoModelForSeq2SeqLM.from_pretrained(self.folder).eval()
                self._loaded = (tok, model.to(self.device) if self.device else model)
        return self._loaded

    def translate(self, text: str, lang: str) -> Optional[str]:
        import torch  # lazy: heavy

        tok, model = self.prepare()
        kwargs = {}
        if hasattr(tok, "src_lang") and "eng_Latn" in tok.get_vocab():  # NLLB: source and target tags
            if lang not in NLLB_CODES:
                log.warning("no NLLB code for language %r; not translating", lang)
                return None
            tok.src_lang = NLLB_CODES[lang]
            kwargs["forced_bos_token_id"] = tok.convert_tokens_to_ids("eng_Latn")
        with self._lock, torch.no_grad():
            batch = tok([text], return_tensors="pt", truncation=True, max_length=512).to(model.device)
            out = model.generate(**batch, max_new_tokens=self.max_new_tokens, num_beams=1,
                                 do_sample=False, **kwargs)
        return first_line(tok.decode(out[0], skip_special_tokens=True)) or None


# The scripts a language is written in (a letter's Unicode name starts with one); LATIN otherwise.
SCRIPTS = {"am": {"ETHIOPIC"}, "ar": {"ARABIC"}, "fa": {"ARABIC"}, "ur": {"ARABIC"}, "be": {"CYRILLIC"},
           "bg": {"CYRILLIC"}, "kk": {"CYRILLIC"}, "mk": {"CYRILLIC"}, "ru": {"CYRILLIC"}, "uk": {"CYRILLIC"},
           "sr": {"CYRILLIC", "LATIN"}, "bn": {"BENGALI"}, "el": {"GREEK"}, "he": {"HEBREW"}, "hi": {"DEVANAGARI"},
           "hy": {"ARMENIAN"}, "ka": {"GEORGIAN"}, "ta": {"TAMIL"}, "th": {"THAI"}, "zh": {"CJK"},
           "ja": {"CJK", "HIRAGANA", "KATAKANA"}, "ko": {"HANGUL", "CJK"}}
REVISION = 2  # 2: no result for text that is no language, or for a demonstration echoed (issue 44)
UNSURE = 0.3  # below this, 3+ words are no language py3langid knows (2 of 1,800 MLQA questions fall below)


def identified(text: str, lang: str, prob: float) -> bool:
    """Whether ``text`` reads as ``lang``: most of its letters in that language's script (runes are
    no Amharic, whatever the identifier says), and for 3+ words an identification better than
    :data:`UNSURE` (letters typed at random spread their probability over many languages).

    >>> identified("Die Katze schläft.", "de", 0.99), identified("ᚠᛇᚻ᛫ᛒᛦᚦ", "am", 0.98)
    (True, False)
    >>> identified("xqzv brrrpt klmnq wxyz", "cs", 0.11), identified("gato", "it", 0.04)
    (False, True)
    """
    letters = [ch for ch in text if ch.isalpha()]
    scripts = SCRIPTS.get(lang, {"LATIN"})
    inside = sum(unicodedata.name(ch, "").split(" ")[0] in scripts for ch in letters)
    if not letters or inside < 0.5 * len(letters):
        return False
    return prob >= UNSURE or len(text.split()) < 3


def screen(text: str) -> tuple[Optional[str], str]:
    """(language code, "") for a text worth translating; (None, why) for English or no language."""
    lang, prob = detect_language(text)
    log.debug("MT input language %s (p=%.2f)", lang, prob)
    if lang == "en":
        return None, "english"
    if not identified(text, lang, prob):
        return None, "no-language"
    return lang, ""


def vet(text: str, result: Optional[str]) -> tuple[Optional[str], str]:
    """(result, "") for an output that may be this text's translation; (None, why) for none, an
    echo of the input, or one of the prompt's worked translations given for another text."""
    if not result:
        return None, "empty"
    if _same(result, text):
        return None, "echo"  # an echo is not a translation
    if any(_same(result, tgt) and not _same(text, src) for _, src, tgt in TRANSLATION_EXAMPLES):
        return None, "example"  # the prompt's own example, not this text's translation
    return result, ""


def translate(text: str, translator: Translator) -> Optional[str]:
    """English for a non-English ``text``; None for English, for text that is no language
    (:func:`identified`), and for an output that only repeats the input or one of the prompt's
    worked translations."""
    lang, _ = screen(text)
    if lang is None:
        return None
    return vet(text, translator.translate(text, lang))[0]


def translate_all(texts: Sequence[str], translator: Translator, batch: int = 16) -> list[dict]:
    """:func:`translate` for many texts, with what happened to each: ``lang``, the translator's
    ``raw`` line, the ``result`` kept and, where none is, ``why`` (english, no-language, empty,
    echo, example). A translator with ``translate_many`` gets ``batch`` texts at a time."""
    rows = []
    for text in texts:
        lang, why = screen(text)
        rows.append({"text": text, "lang": lang, "raw": None, "result": None, "why": why})
    todo = [r for r in rows if r["lang"] is not None]
    many = getattr(translator, "translate_many", None)
    for start in range(0, len(todo), batch):
        part = todo[start:start + batch]
        raws = (many([r["text"] for r in part], [r["lang"] for r in part]) if many
                else [translator.translate(r["text"], r["lang"]) for r in part])
        for r, raw in zip(part, raws):
            r["raw"] = raw
            r["result"], r["why"] = vet(r["text"], raw)
    return rows


def is_worked_example(text: Optional[str]) -> bool:
    """Whether ``text`` is the English side of one of the prompt's worked translations.

    >>> is_worked_example("The museum opens at nine."), is_worked_example("The museum opens at ten.")
    (True, False)
    """
    return bool(text) and any(_same(text, tgt) for _, _, tgt in TRANSLATION_EXAMPLES)


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold().rstrip(".") == " ".join(b.split()).casefold().rstrip(".")


def _demo(before: str, phrase: str, after: str) -> tuple[str, str]:
    return before + after, before + format_call(ToolCall("MT", phrase)) + after


INSTRUCTION = (
    "Your task is to add calls to a Machine Translation API to a piece of text. A call looks like "
    "[MT(text in another language)] and returns its English translation. Put a call right after a "
    "phrase that is not in English, where the text goes on to say what it means. "
    "Here are some examples:"
)

DEMONSTRATIONS = [
    _demo("Above the door of the old inn is carved the line « Ici on mange bien »,", "Ici on mange bien",
          " which promises that guests eat well here."),
    _demo("The family motto, Immer vorwärts,", "Immer vorwärts", " means always forwards."),
    _demo("The sign at the trailhead read \"Prohibido encender fuego\",", "Prohibido encender fuego",
          " so no one lit a fire that night."),
    _demo("Locals call the festival 灯笼节,", "灯笼节", " the Lantern Festival."),
    _demo("Her grandmother always said \"Chi va piano va sano\",", "Chi va piano va sano",
          " meaning that whoever goes slowly goes safely."),
]


def _default_translator(model: str | None) -> Translator:
    name = model or os.environ.get(MODEL_ENV)
    if name and Path(name).expanduser().is_dir():
        try:
            kind = json.loads((Path(name).expanduser() / "config.json").read_text()).get("is_encoder_decoder")
        except (OSError, ValueError):
            kind = False
        if kind:
            return Seq2SeqTranslator(name)
    return LMTranslator(name)


def mt_tool(model: str | None = None, lm: LanguageModel | None = None,
            translator: Translator | None = None, name: str = "MT") -> Tool:
    """An MT tool; the translator is ``translator``, else ``lm``, else the model or folder named
    by ``model`` / ``$TOOLFORMER_MT_MODEL``, else the embedded Gemma 3 270M."""
    chosen = translator or (LMTranslator(lm=lm) if lm is not None else _default_translator(model))

    def prepare() -> None:
        _identifier()
        getattr(chosen, "prepare", lambda: None)()

    return Tool(
        name=name,
        fn=lambda text: translate(text, chosen),
        # a translator that writes many at once (the LM one: the worked examples run once per batch)
        # answers the engine's pending calls in one generation pass, as the QA reader does
        batch_fn=(lambda texts: [r["result"] for r in translate_all(texts, chosen)])
        if hasattr(chosen, "translate_many") else None,
        instruction=INSTRUCTION,
        demonstrations=DEMONSTRATIONS,
        settings=PAPER_CALCULATOR_MT,
        description="language ID (py3langid) + translation into English (default: Gemma 3 270M)",
        version=f"translator={chosen.name}|rev{REVISION}",
        timeout=60.0,
        concurrency=1,
        prepare=prepare,
        max_input_chars=500,
        example_input="Immer vorwärts",
        no_result_hint="the input is English or has no words, so there is nothing to translate",
    )


MT = mt_tool()
