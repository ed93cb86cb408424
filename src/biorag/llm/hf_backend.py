"""A local transformers causal LM run in-process (torch and transformers imported lazily).

The model directory is loaded on the first request. Prompts go through the tokenizer's chat
template (a plain ``role: content`` join when it has none; the system message is folded into
the first user message when the template refuses a system role). Decoding is greedy
(``do_sample=False``; ``temperature`` is ignored), generation runs in a worker thread under a
lock (one generation at a time), and stop strings cut the text like the OpenAI API does.
4-bit loading uses bitsandbytes when ``load_in_4bit`` is "yes", or "auto" with bitsandbytes and
CUDA present and a model of at least a billion parameters (:mod:`biorag.llm.model_size`).

A reasoning model's ``</think>`` survives decoding even where its tokenizer counts it a special
token, so :func:`~biorag.llm.base.attach_parsed` can move the thinking to ``reasoning``. The
cache knows the model by :meth:`HFBackend.cache_identity` (its directory's content and how it
is loaded), not by the directory name that responses show.

``path`` may also be a ``.gguf`` file (llama.cpp's format; transformers reads it with the
``gguf`` and ``accelerate`` packages, ``pip install 'biorag[gguf]'``). On first use the file
is dequantized by transformers and saved once, model and tokenizer with the chat template the
GGUF carries, into ``<gguf_cache_dir>/<first 16 hex digits of the file's sha256>/`` (written
to a temporary directory, then renamed into place); later loads read that directory. The cache
identity of a GGUF model is its file's sha256, so a renamed or moved file keeps its cached answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import json
import threading
import time
from pathlib import Path
from typing import Any

from biorag.errors import ConfigError, LLMError
from biorag.llm import model_size
from biorag.llm.base import THINK_CLOSE, attach_parsed, with_schema_instruction
from biorag.llm.hf_stopping import EarlyStop
from biorag.llm.model_size import parameter_count
from biorag.llm.repetition import WATCH_MIN_TOKENS
from biorag.llm.types import ChatRequest, ChatResponse, TokenLogprob
from biorag.util.files import write_dir_atomically
from biorag.util.fingerprint import model_fingerprint

GGUF_MARKER = "biorag_gguf.json"  # written last into a converted directory: it is complete


def file_sha256(path: Path) -> str:
    """The sha256 of a file's content, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _plain_prompt(messages: list[dict[str, str]]) -> str:
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"


def _fold_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if system:
        for m in rest:
            if m["role"] == "user":
                m["content"] = f"{system}\n\n{m['content']}"
                break
        else:
            rest.insert(0, {"role": "user", "content": system})
    return rest


class HFBackend:
    """Greedy generation with a local transformers model directory or ``.gguf`` file.

    ``model`` (default: the directory's name, or the GGUF file's name without ``.gguf``) is the
    readable name responses and accounting show; the cache key uses :meth:`cache_identity`
    instead. ``gguf_cache_dir`` holds the directories converted from GGUF files (default
    ``.biorag/hf_from_gguf``; :func:`~biorag.llm.factory.make_backend` passes
    ``<home>/hf_from_gguf``).
    """

    name = "hf"

    def __init__(
        self,
        path: str | Path,
        model: str | None = None,
        load_in_4bit: str = "auto",
        device: str | None = None,
        gguf_cache_dir: str | Path | None = None,
        stop_loops: bool = True,
    ) -> None:
        self.path = Path(path)
        #: stop generating at the onset of a loop (``llm.stop_loops`` not ``off``)
        self.stop_loops = stop_loops
        self.is_gguf = self.path.suffix.lower() == ".gguf"
        self.model = model or (self.path.stem if self.is_gguf else self.path.name)
        self.load_in_4bit = load_in_4bit
        self.device = device
        self.gguf_cache_dir = Path(gguf_cache_dir or Path(".biorag") / "hf_from_gguf")
        # Seconds the GGUF conversion took in this process; None when none ran here.
        self.conversion_s: float | None = None
        self._lock = threading.Lock()
        self._tok: Any = None
        self._lm: Any = None
        self._identity: str | None = None
        self._gguf_sha: str | None = None
        self._params: int | bool | None = False  # parameter_count(path), read once

    def __repr__(self) -> str:
        return f"HFBackend(path={str(self.path)!r}, model={self.model!r})"

    def _use_4bit(self, torch: Any) -> bool:
        has_bnb = importlib.util.find_spec("bitsandbytes") is not None
        if self.load_in_4bit == "yes":
            if not has_bnb:
                raise ConfigError(
                    "llm.load_in_4bit = 'yes' needs bitsandbytes: pip install 'biorag[gpu]'"
                )
            return True
        if not (self.load_in_4bit == "auto" and has_bnb and torch.cuda.is_available()):
            return False
        # "auto" quantizes only a model big enough for nf4 to pay (an unreadable size counts big)
        if self._params is False:
            self._params = parameter_count(self.path)
        return self._params is None or self._params >= model_size.AUTO_4BIT_MIN_PARAMS

    def _device(self, torch: Any) -> str:
        return self.device or ("cuda" if torch.cuda.is_available() else "cpu")

    def _precision(self, torch: Any) -> str:
        """How the weights load here: "nf4" (4-bit), "bfloat16" (CUDA) or "float32"."""
        if self._use_4bit(torch):
            return "nf4"
        return "bfloat16" if self._device(torch).startswith("cuda") else "float32"

    def _check_path(self) -> None:
        if self.is_gguf:
            if not self.path.is_file():
                raise ConfigError(f"llm.hf_path {self.path} is not a file")
        elif not self.path.is_dir():
            raise ConfigError(
                f"llm.hf_path {self.path} is not a model directory (nor a .gguf file)"
            )

    def _gguf_digest(self) -> str:
        """The GGUF file's sha256 (read once)."""
        if self._gguf_sha is None:
            self._gguf_sha = file_sha256(self.path)
        return self._gguf_sha

    def converted_dir(self) -> Path:
        """Where the GGUF file's transformers conversion lives (whether or not it exists)."""
        return self.gguf_cache_dir / self._gguf_digest()[:16]

    def _ensure_converted(self) -> Path:
        """The converted directory of the GGUF file, converting it first when absent."""
        target = self.converted_dir()
        if (target / GGUF_MARKER).is_file():
            return target
        missing = [m for m in ("gguf", "accelerate") if importlib.util.find_spec(m) is None]
        if missing:
            raise ConfigError(
                f"llm.hf_path {self.path} is a GGUF file: reading it needs "
                f"{' and '.join(missing)} (pip install 'biorag[gguf]')"
            )
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        start = time.perf_counter()
        folder, name = str(self.path.parent), self.path.name
        kwargs: dict[str, Any] = {"gguf_file": name, "dtype": torch.float32}
        try:  # transformers >= 5 may keep GGUF blocks packed; ask for dense weights
            from transformers import GgufConfig

            kwargs["quantization_config"] = GgufConfig(dequantize=True)
        except ImportError:  # older transformers always dequantize
            pass
        try:
            tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
            # Any: the GGUF quantization attributes are cleared below, which the stubs refuse
            lm: Any = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            raise LLMError(f"cannot convert the GGUF file llm.hf_path {self.path}: {e}") from e
        # The weights are plain dense tensors now: drop the GGUF "quantization" so that
        # save_pretrained writes an ordinary checkpoint.
        if getattr(lm, "hf_quantizer", None) is not None:
            lm.hf_quantizer = None
        if getattr(lm, "is_quantized", False):  # an attribute in transformers 4
            with contextlib.suppress(AttributeError):
                lm.is_quantized = False
        if getattr(lm.config, "quantization_config", None) is not None:
            del lm.config.quantization_config
        if not getattr(tok, "chat_template", None):
            raise ConfigError(
                f"llm.hf_path {self.path}: the GGUF file carries no chat template; set "
                "llm.hf_path to a transformers model directory whose tokenizer has one"
            )

        def write(tmp: Path) -> None:
            lm.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            marker = {
                "gguf": name,
                "sha256": self._gguf_digest(),
                "convert_s": round(time.perf_counter() - start, 2),
            }
            (tmp / GGUF_MARKER).write_text(json.dumps(marker, indent=2) + "\n")

        write_dir_atomically(target, write)
        self.conversion_s = time.perf_counter() - start
        return target

    def cache_identity(self) -> str:
        """The model as the cache key names it: ``model@<fingerprint>:<precision>``.

        The fingerprint (:func:`~biorag.util.fingerprint.model_fingerprint`) covers the model
        directory's files (configs and tokenizer in full, weights by size and samples of their
        bytes), so two checkpoints in folders of one name (``run1/final``, ``run2/final``) do
        not share cached answers, nor does one checkpoint loaded in 4 bits and in bfloat16. A
        GGUF file's fingerprint is ``gguf-`` and the start of its sha256.
        Computed once (it reads the directory and imports torch); blocking, so async callers
        run it in a thread.
        """
        if self._identity is None:
            self._check_path()
            import torch

            if self.is_gguf:
                fingerprint = f"gguf-{self._gguf_digest()[:16]}"
            else:
                fingerprint = model_fingerprint(self.path)
            self._identity = f"{self.model}@{fingerprint}:{self._precision(torch)}"
        return self._identity

    def _load(self) -> None:
        """Load tokenizer and model (called under the lock, in the worker thread)."""
        if self._lm is not None:
            return
        self._check_path()
        model_dir = self._ensure_converted() if self.is_gguf else self.path
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = self._device(torch)
        kwargs: dict[str, Any] = {}
        if self._precision(torch) == "nf4":
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_compute_dtype=torch.bfloat16,
            )
            kwargs["device_map"] = "auto"
        else:
            kwargs["dtype"] = torch.bfloat16 if device.startswith("cuda") else torch.float32
        try:
            tok = AutoTokenizer.from_pretrained(str(model_dir))
            # Any: transformers' stubs type .to() as taking a model, not a device string
            lm: Any = AutoModelForCausalLM.from_pretrained(str(model_dir), **kwargs)
        except (OSError, ValueError) as e:
            raise LLMError(f"cannot load the transformers model at {model_dir}: {e}") from e
        if "device_map" not in kwargs:
            lm = lm.to(device)
        lm.eval()
        self._tok, self._lm = tok, lm

    def _prompt(self, messages: list[dict[str, str]]) -> tuple[str, bool]:
        """The prompt text, and whether the tokenizer should add special tokens itself."""
        tok = self._tok
        if not getattr(tok, "chat_template", None):
            return _plain_prompt(messages), True
        try:
            text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except Exception:
            # Templates such as Gemma's refuse a system role: fold it into the user turn.
            text = tok.apply_chat_template(
                _fold_system(messages), add_generation_prompt=True, tokenize=False
            )
        return str(text), False

    def _generate(self, req: ChatRequest) -> ChatResponse:
        """Blocking generation (worker thread)."""
        with self._lock:
            self._load()
            import torch

            tok, lm = self._tok, self._lm
            messages = req.messages
            if req.json_schema is not None:
                messages = with_schema_instruction(messages, req.json_schema)
            prompt, add_special = self._prompt(messages)
            enc = tok(prompt, return_tensors="pt", add_special_tokens=add_special)
            enc = {k: v.to(lm.device) for k, v in enc.items()}
            n_prompt = int(enc["input_ids"].shape[1])
            want_lp = req.logprobs
            gen_kwargs: dict[str, Any] = {
                "max_new_tokens": req.max_tokens or 512,
                "do_sample": False,
                "temperature": None,
                "top_p": None,
                "top_k": None,
                "return_dict_in_generate": True,
                "output_logits": want_lp,
                "pad_token_id": tok.pad_token_id
                if tok.pad_token_id is not None
                else tok.eos_token_id,
            }
            watch = self.stop_loops and (req.max_tokens or 512) >= WATCH_MIN_TOKENS
            early = EarlyStop(tok, n_prompt, list(req.stop or []), watch_loops=watch)
            if req.stop or watch:
                gen_kwargs["stopping_criteria"] = early.criteria()
            start = time.perf_counter()
            with torch.inference_mode():
                out = lm.generate(**enc, **gen_kwargs)
            latency = time.perf_counter() - start
            new_ids = out.sequences[0, n_prompt:].tolist()
            logprobs = None
            if want_lp and out.logits is not None:
                logprobs = self._logprobs(new_ids, out.logits, req.top_logprobs)
        text = self._decode(new_ids)
        finish = "length" if len(new_ids) >= gen_kwargs["max_new_tokens"] else "stop"
        if early.looped:
            finish = "loop"
        for s in req.stop or []:
            cut = text.find(s)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        resp = ChatResponse(
            text=text,
            prompt_tokens=n_prompt,
            completion_tokens=len(new_ids),
            latency_s=latency,
            logprobs=logprobs,
            model=self.model,
            backend=self.name,
            finish_reason=finish,
        )
        return attach_parsed(req, resp)

    def _decode(self, ids: list[int]) -> str:
        """The generated text without special tokens, but with a reasoning model's
        ``</think>`` token kept as text even where its tokenizer counts it special (skipping it
        would glue the thinking to the answer)."""
        tok = self._tok
        end = tok.convert_tokens_to_ids(THINK_CLOSE)
        if (
            isinstance(end, int)
            and end in ids
            and tok.convert_ids_to_tokens(end) == THINK_CLOSE  # not the unknown token
        ):
            cut = ids.index(end)
            head = tok.decode(ids[:cut], skip_special_tokens=True)
            tail = tok.decode(ids[cut + 1 :], skip_special_tokens=True)
            return f"{head}{THINK_CLOSE}{tail}"
        return str(tok.decode(ids, skip_special_tokens=True))

    def _logprobs(self, ids: list[int], logits: Any, top_n: int) -> list[TokenLogprob]:
        """Per generated token: its log-probability and the ``top_n`` best alternatives."""
        import torch

        tok = self._tok
        out: list[TokenLogprob] = []
        for step, token_id in enumerate(ids[: len(logits)]):
            lp = torch.log_softmax(logits[step][0].float(), dim=-1)
            top: dict[str, float] = {}
            if top_n:
                values, indices = torch.topk(lp, k=min(top_n, lp.shape[-1]))
                for v, i in zip(values.tolist(), indices.tolist(), strict=True):
                    s = tok.decode([i])
                    top[s] = max(v, top.get(s, float("-inf")))
            out.append(
                TokenLogprob(token=tok.decode([token_id]), logprob=float(lp[token_id]), top=top)
            )
        return out

    async def chat(self, req: ChatRequest) -> ChatResponse:
        """Generate in a worker thread; errors from torch become :class:`LLMError`."""
        try:
            return await asyncio.to_thread(self._generate, req)
        except (LLMError, ConfigError):
            raise
        except RuntimeError as e:  # e.g. CUDA out of memory
            raise LLMError(f"local model {self.model!r} failed to generate: {e}") from e
