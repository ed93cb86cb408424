"""Pipelined encoding for GPUs: the next batches are tokenized while the GPU runs this one.

``SentenceTransformer.encode`` tokenizes each batch in the calling thread, through the Python
tokenizer wrapper, before the forward pass. On a GPU that is most of the time: on an H100,
50,000 chunks of about 160 tokens took 17.7 s to tokenize against 8.8 s of float32 forward
passes (2.2 s under float16 autocast; ``docs/benchmarks.md``). :class:`PipelinedEncoder` calls
the Rust tokenizer directly (truncation and padding done there), in a worker thread that keeps
a few batches ready, and can run the forward passes under float16 autocast on CUDA.

It serves only models it reproduces exactly: the first module must be a sentence-transformers
``Transformer`` with a fast tokenizer, the model must have no default prompt (``encode``
prepends the prompt named by ``default_prompt_name`` to every text; this encoder does not, so
such models keep ``SentenceTransformer.encode``), and :meth:`PipelinedEncoder.for_model`
checks that its input ids, token types and attention masks equal sentence-transformers' own on
a probe: the sample's shortest and longest texts, plus a one-word text and a text longer than
``max_seq_length`` tokens, so padding and truncation (and their side, left or right, taken from
the tokenizer) are always exercised. Otherwise it returns None and the caller keeps
``SentenceTransformer.encode``. The verdict is kept on the model object (attribute
``_biorag_pipeline``), decided once under a lock. Texts are stripped (and lower-cased when the
model asks), sorted longest first and batched exactly as sentence-transformers does, and returned
in their original order.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext, suppress
from typing import Any

import numpy as np

from biorag.util.progress import progress_bar

log = logging.getLogger(__name__)

PREFETCH = 3  # batches tokenized ahead of the GPU
VERDICT_ATTR = "_biorag_pipeline"  # on a model: its PipelinedEncoder, or None (unsupported)
_UNCHECKED = object()
_CHECK_LOCK = threading.Lock()


class PipelinedEncoder:
    """Encode with a sentence-transformers model, tokenizing ahead in a worker thread."""

    def __init__(self, model: Any) -> None:
        from tokenizers import Tokenizer

        first = model[0]
        tok = getattr(first, "tokenizer", None)
        backend = getattr(tok, "backend_tokenizer", None)
        if tok is None or backend is None or type(first).__name__ != "Transformer":
            raise ValueError("the first module is not a Transformer with a fast tokenizer")
        if getattr(model, "default_prompt_name", None) is not None:
            raise ValueError(
                f"the model has a default prompt ({model.default_prompt_name!r}), "
                "which this encoder does not prepend"
            )
        self.model = model
        self.max_len = int(model.max_seq_length)
        self.lower = bool(getattr(first, "do_lower_case", False))
        self.names = list(getattr(tok, "model_input_names", ["input_ids", "attention_mask"]))
        rust = Tokenizer.from_str(backend.to_str())  # a copy: the wrapper's stays untouched
        rust.enable_truncation(
            max_length=self.max_len, direction=str(getattr(tok, "truncation_side", "right"))
        )
        rust.enable_padding(
            direction=str(getattr(tok, "padding_side", "right")),
            pad_id=int(tok.pad_token_id or 0),
            pad_type_id=int(getattr(tok, "pad_token_type_id", 0) or 0),
            pad_token=str(tok.pad_token),
        )
        self.rust = rust

    @classmethod
    def for_model(cls, model: Any, sample: list[str]) -> PipelinedEncoder | None:
        """The encoder for ``model`` when it reproduces sentence-transformers' features (see
        the module docstring; ``sample`` is a few of the texts to encode), else None.

        Decided once per model object, under a lock; the verdict is stored on the model (a
        model that takes no attributes is checked on every call)."""
        with _CHECK_LOCK:
            verdict = getattr(model, VERDICT_ATTR, _UNCHECKED)
            if verdict is None or isinstance(verdict, PipelinedEncoder):
                return verdict
            enc: PipelinedEncoder | None
            try:
                enc = cls(model)
                if not enc.matches_reference(sample):
                    log.info("pipelined encoding off: its tokens differ from the model's own")
                    enc = None
            except Exception as e:  # any model it does not understand: the plain path
                log.info("pipelined encoding off: %s", e)
                enc = None
            with suppress(AttributeError, TypeError):
                setattr(model, VERDICT_ATTR, enc)
            return enc

    def features(self, texts: list[str]) -> dict[str, Any]:
        """The model inputs of one batch, as CPU tensors."""
        import torch

        clean = [t.strip().lower() if self.lower else t.strip() for t in texts]
        encs = self.rust.encode_batch(clean)
        out = {
            "input_ids": torch.from_numpy(np.array([e.ids for e in encs], dtype=np.int64)),
            "attention_mask": torch.from_numpy(
                np.array([e.attention_mask for e in encs], dtype=np.int64)
            ),
        }
        if "token_type_ids" in self.names:
            out["token_type_ids"] = torch.from_numpy(
                np.array([e.type_ids for e in encs], dtype=np.int64)
            )
        return out

    def probe(self, sample: list[str]) -> list[str]:
        """The texts the reference check tokenizes: ``sample``'s four shortest and four
        longest, a one-word text (padded in any batch) and one of more than ``max_seq_length``
        words (truncated), both made of ``sample``'s words."""
        ordered = sorted(sample, key=len)
        picked = [*ordered[:4], *ordered[-4:]] if len(ordered) > 8 else ordered
        words = " ".join(picked).split() or ["metformin"]
        long = " ".join(words[i % len(words)] for i in range(2 * self.max_len + 8))
        return [words[0], *picked, long]

    def matches_reference(self, sample: list[str]) -> bool:
        """Whether :meth:`features` equals sentence-transformers' tokenization of ``sample``."""
        import torch

        probe = self.probe(sample)
        preprocess = getattr(self.model, "preprocess", None) or self.model.tokenize
        ref = preprocess(probe)
        mine = self.features(probe)
        return all(
            isinstance(ref.get(k), torch.Tensor) and torch.equal(ref[k].cpu(), v)
            for k, v in mine.items()
        )

    def encode(
        self, texts: list[str], batch_size: int, half: bool = False, progress: bool = False
    ) -> np.ndarray:
        """Float32 embeddings (not normalized) of ``texts``, in their order; ``progress``
        shows a bar over the texts on stderr."""
        import torch

        device = self.model.device
        # The very call sentence-transformers makes (its default, unstable sort): texts of
        # equal length land in the same batches, which matters to a left-padding model.
        order = np.argsort([-len(t) for t in texts])
        batches = [
            [texts[i] for i in order[s : s + batch_size]] for s in range(0, len(texts), batch_size)
        ]
        use_half = half and device.type == "cuda"
        outs: list[Any] = []
        bar = progress_bar(len(texts), "embed", unit="text") if progress else None
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize") as pool:
            ahead: deque[Future[dict[str, Any]]] = deque(
                pool.submit(self.features, b) for b in batches[:PREFETCH]
            )
            for i in range(len(batches)):
                feats = ahead.popleft().result()
                if i + PREFETCH < len(batches):
                    ahead.append(pool.submit(self.features, batches[i + PREFETCH]))
                feats = {k: v.to(device, non_blocking=True) for k, v in feats.items()}
                cast = torch.autocast("cuda", dtype=torch.float16) if use_half else nullcontext()
                with torch.inference_mode(), cast:
                    emb = self.model(feats)["sentence_embedding"]
                outs.append(emb.float())
                if bar is not None:
                    bar.update(len(batches[i]))
        if bar is not None:
            bar.close()
        vectors = torch.cat(outs).cpu().numpy()
        result = np.empty_like(vectors)
        result[order] = vectors
        return result
