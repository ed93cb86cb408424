"""Pipelined encoding for GPUs: the next batches are tokenized while the GPU runs this one.

``SentenceTransformer.encode`` tokenizes each batch in the calling thread, through the Python
tokenizer wrapper, before the forward pass. On a GPU that is most of the time: on an H100,
50,000 chunks of about 160 tokens took 17.7 s to tokenize against 8.8 s of float32 forward
passes (2.2 s under float16 autocast; ``docs/benchmarks.md``). :class:`PipelinedEncoder` calls
the Rust tokenizer directly (truncation and padding done there), in a worker thread that keeps
a few batches ready, and can run the forward passes under float16 autocast on CUDA.

It serves only models it reproduces exactly: the first module must be a sentence-transformers
``Transformer`` with a fast tokenizer, and :meth:`PipelinedEncoder.for_model` checks that its
input ids, token types and attention masks equal sentence-transformers' own on a sample (the
texts' longest and shortest included); otherwise it returns None and the caller keeps
``SentenceTransformer.encode``. Texts are stripped (and lower-cased when the model asks), sorted
longest first as sentence-transformers does, and returned in their original order.
"""

from __future__ import annotations

import logging
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

PREFETCH = 3  # batches tokenized ahead of the GPU
_CHECKED: dict[int, PipelinedEncoder | None] = {}  # id(model) -> encoder, or None: unsupported


class PipelinedEncoder:
    """Encode with a sentence-transformers model, tokenizing ahead in a worker thread."""

    def __init__(self, model: Any) -> None:
        from tokenizers import Tokenizer

        first = model[0]
        tok = getattr(first, "tokenizer", None)
        backend = getattr(tok, "backend_tokenizer", None)
        if tok is None or backend is None or type(first).__name__ != "Transformer":
            raise ValueError("the first module is not a Transformer with a fast tokenizer")
        self.model = model
        self.lower = bool(getattr(first, "do_lower_case", False))
        self.names = list(getattr(tok, "model_input_names", ["input_ids", "attention_mask"]))
        rust = Tokenizer.from_str(backend.to_str())  # a copy: the wrapper's stays untouched
        rust.enable_truncation(max_length=int(model.max_seq_length))
        rust.enable_padding(pad_id=int(tok.pad_token_id or 0), pad_token=str(tok.pad_token))
        self.rust = rust

    @classmethod
    def for_model(cls, model: Any, sample: list[str]) -> PipelinedEncoder | None:
        """The encoder for ``model`` when it reproduces sentence-transformers' features on
        ``sample``, else None (checked once per model object)."""
        key = id(model)
        if key not in _CHECKED:
            enc: PipelinedEncoder | None
            try:
                enc = cls(model)
                if not enc.matches_reference(sample):
                    log.info("pipelined encoding off: its tokens differ from the model's own")
                    enc = None
            except Exception as e:  # any model it does not understand: the plain path
                log.info("pipelined encoding off: %s", e)
                enc = None
            _CHECKED[key] = enc
        return _CHECKED[key]

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

    def matches_reference(self, sample: list[str]) -> bool:
        """Whether :meth:`features` equals sentence-transformers' tokenization of ``sample``."""
        import torch

        ordered = sorted(sample, key=len)
        probe = [*ordered[:4], *ordered[-4:]] if len(ordered) > 8 else ordered
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

        from biorag.util.progress import progress_bar

        device = self.model.device
        order = np.argsort([-len(t) for t in texts], kind="stable")
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
