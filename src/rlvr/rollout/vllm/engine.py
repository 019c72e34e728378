"""The vLLM rollout engine (`sampling.engine: vllm`): colocated or over HTTP.

    colocate: a `vllm.LLM` in this process (rlvr run from the vLLM environment). On a
              GPU it can sleep between generations so the KV cache frees memory for the
              update (`sampling.vllm.sleep`).
    server:   a vLLM server elsewhere (`rlvr vllm-serve`, rlvr.rollout.vllm.server),
              perhaps in its own virtual environment, driven over HTTP.

vLLM runs its own kernels, so its log-probs are not the trainer's numbers: the engine
declares `logprobs_match_trainer=False`, the trainer then recomputes pi_old, logs the
sampler/trainer mismatch every step and applies the importance-sampling correction of
`algorithm.rollout_correction` (rlvr.algorithms.rollout_correction).

Weights follow the trainer through `sync_weights` after every update:
    file:   every tensor (tied ones too: vLLM's in-place reload leaves a missing
            lm_head stale) into one safetensors file in a RAM-backed directory
            (/dev/shm), loaded by vLLM's reload path; the server mode's only way.
    direct: colocated only: the tensors themselves, in place (device to device on GPU).
A sync must move vLLM's weight version, and a probe sequence scored by vLLM must match
the trainer's log-probs (`sync_check_tolerance`); otherwise `WeightSyncError` stops
the run, which never continues from stale weights (it resumes from its checkpoint).
Every generation and probe must also have used the load this engine synced last (vLLM
reports the load each call used): a server whose weights another writer replaced in
between is a `WeightSyncError` too. A sync may name the weights (`version`: the policy version);
vLLM keeps the name with them and `sampled_policy_version` is the name the last
generation sampled with (an asynchronous run's producer checks and records it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from rlvr.rollout.base import Completion, EngineCapabilities, RolloutPath, SamplingParams
from rlvr.rollout.vllm.client import VLLMClient


class WeightSyncError(RuntimeError):
    """vLLM does not hold the trainer's weights after a sync; the run must stop."""


@dataclass(frozen=True)
class VLLMSettings:
    """sampling.vllm (rlvr.training.config.VLLMConfig) as the engine reads it."""

    mode: str = "colocate"          # colocate | server
    url: str = "http://127.0.0.1:8100"
    sync: str = "auto"              # auto (direct on GPU colocated, else file) | file | direct
    sync_dir: str = ""              # "" = /dev/shm (RAM-backed) when present, else the temp dir
    sync_check_tolerance: float = 0.05  # mean |dlogprob| allowed on the probe; 0 = no probe
    dtype: str = ""                 # "" = the trainer model's dtype
    max_model_len: int = 2048
    kv_cache_gb: float = 1.0
    gpu_memory_utilization: float = 0.3
    sleep: bool | None = None       # None = on for a colocated engine on a GPU
    timeout_s: float = 600.0
    seed: int = 0
    prefix_caching: bool = True     # sampling.reuse_prefix: vLLM's automatic prefix caching


class VLLMEngine:
    """Samples with vLLM; follows the trainer's weights through `sync_weights`."""

    CAPABILITIES = EngineCapabilities(keeps_activations=False, logprobs_match_trainer=False)
    capabilities = CAPABILITIES

    @classmethod
    def from_options(cls, model: Any, tokenizer: Any, options: Any) -> "VLLMEngine":
        """options.vllm: VLLMSettings, or its fields as a dict (sampling.vllm + seed)."""
        settings = options.vllm or VLLMSettings()
        if isinstance(settings, dict):
            settings = VLLMSettings(**settings)
        return cls(model, tokenizer, settings)

    def __init__(self, model: Any, tokenizer: Any, settings: VLLMSettings) -> None:
        _check_syncable(model)
        self.tokenizer, self.settings = tokenizer, settings
        self.device = next(model.parameters()).device
        self.sync_mode = _sync_mode(settings, self.device)
        self.workdir = Path(tempfile.mkdtemp(prefix="rlvr-vllm-", dir=_sync_root(settings)))
        self._probe: list[int] | None = None
        # the name of the weights vLLM sampled the last generation with (sync_weights'
        # `version`; None when the sync did not name them)
        self.sampled_policy_version: int | None = None
        self.last_sync_seconds = 0.0
        # the last sync's parts, logged by the trainer: write (file), load (vLLM), check
        self.sync_stats: dict[str, float] = {}
        try:
            self._start(model, tokenizer, settings)
        except BaseException:  # a snapshot in /dev/shm must not outlive a failed start
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise

    def _start(self, model: Any, tokenizer: Any, settings: VLLMSettings) -> None:
        if settings.mode == "colocate":
            self.backend = _colocated(model, tokenizer, settings, self.workdir, self.device)
            self.version = self.backend.version
        elif settings.mode == "server":
            self.backend = VLLMClient(settings.url, settings.timeout_s)
            _check_served_model(self.backend.health(), model, settings.url)
            self.version = self.backend.health()["version"]
            self.sync_weights(model)  # the server may hold other weights (base, a resume)
        else:
            raise ValueError(f"sampling.vllm.mode must be colocate or server, got "
                             f"{settings.mode!r}")

    def decode_path(self) -> RolloutPath:
        """vLLM samples (its own kernels); recorded as rollout/path."""
        return RolloutPath("vllm")

    def prefix_reuse(self) -> str:
        """Recorded as rollout/path_prefix_reuse (rlvr.rollout.base.prefix_reuse)."""
        return ("vllm prefix caching" if self.settings.prefix_caching
                else "off: sampling.reuse_prefix=false")

    # -- sampling ---------------------------------------------------------------------
    def generate(self, prompts: Sequence[str], n: int,
                 params: SamplingParams) -> list[list[Completion]]:
        encoded = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        return self.generate_ids(encoded, n, params)

    def generate_ids(self, prompt_ids: Sequence[list[int]], n: int,
                     params: SamplingParams) -> list[list[Completion]]:
        """Token ids go to vLLM as they are (its client and server take ids)."""
        encoded = [list(ids) for ids in prompt_ids]
        wire = {"max_new_tokens": params.max_new_tokens, "temperature": params.temperature,
                "top_p": params.top_p, "top_k": params.top_k, "stop": list(params.stop),
                "seed": params.seed}
        samples = self.backend.generate(encoded, n, wire)
        held = self._served_load("generation")
        self.sampled_policy_version = None if held is None else held["policy_version"]
        result = [[self._completion(ids, s, params.stop) for s in group]
                  for ids, group in zip(encoded, samples)]
        if result and result[0]:
            first = result[0][0]
            self._probe = (first.prompt_ids + first.token_ids)[:96]
        return result

    def _completion(self, prompt_ids: list[int], sample: dict[str, Any],
                    stops: Sequence[str]) -> Completion:
        text = self.tokenizer.decode(sample["token_ids"], skip_special_tokens=True)
        cuts = [text.find(s) for s in stops if s and s in text]
        return Completion(prompt_ids=list(prompt_ids), token_ids=list(sample["token_ids"]),
                          logprobs=list(sample["logprobs"]),
                          text=text[:min(cuts)] if cuts else text,
                          finish_reason=sample["finish_reason"])

    def _served_load(self, call: str) -> dict[str, Any] | None:
        """The weights vLLM's last call used ({version, policy_version}; None from a
        server that does not say), which must be the load this engine synced last, or
        WeightSyncError: another writer loaded other weights since."""
        held = getattr(self.backend, "last_weights", None)
        if held is not None and held["version"] != self.version:
            raise WeightSyncError(f"vLLM's {call} used weight load {held['version']} "
                                  f"(policy version {held['policy_version']}), but this "
                                  f"engine's last sync was load {self.version}: another "
                                  "writer replaced the weights (a second trainer or "
                                  "producer sharing this server?)")
        return held

    def score(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        """vLLM's log-softmax(logits) of each sequence's tokens from starts[i] on."""
        return self.backend.score(sequences, starts)

    # -- weights ----------------------------------------------------------------------
    def sync_weights(self, model: Any, version: int | None = None) -> None:
        """Copy `model`'s weights into vLLM and check they arrived (WeightSyncError);
        `version` names them there (the policy version; None: unnamed)."""
        began = time.perf_counter()
        try:
            if self.sync_mode == "direct":
                answer = self.backend.load_tensors(_named_tensors(model, clone=False),
                                                   version)
            else:
                path = _write_weights(model, self.workdir)
                written = time.perf_counter()
                answer = self.backend.reload_from(path, version)
                self.sync_stats["sync/write_s"] = written - began
        except Exception as exc:
            raise WeightSyncError(f"weight sync to vLLM failed ({self.sync_mode}): "
                                  f"{type(exc).__name__}: {exc}; the run stops rather "
                                  "than sample from stale weights") from exc
        if answer["version"] != self.version + 1:
            raise WeightSyncError(f"vLLM's weight version went {self.version} -> "
                                  f"{answer['version']} on one sync: another writer loaded "
                                  "weights (a second trainer or producer sharing this "
                                  "server?)")
        self.version = answer["version"]
        self.sync_stats["sync/load_s"] = float(answer["seconds"])
        checked = time.perf_counter()
        self._check_probe(model)
        self.sync_stats["sync/check_s"] = time.perf_counter() - checked
        self.last_sync_seconds = time.perf_counter() - began

    def _check_probe(self, model: Any) -> None:
        tolerance = self.settings.sync_check_tolerance
        if tolerance <= 0:
            return
        probe = self._probe or self.tokenizer("The answer is 42.",
                                              add_special_tokens=False)["input_ids"]
        if len(probe) < 2:
            return
        served = torch.tensor(self.backend.score([probe], [1])[0])
        self._served_load("probe")  # a load by another writer since the sync: say so
        ours = trainer_logprobs(model, probe, 1)
        gap = float((served - ours).abs().mean())
        if gap > tolerance:
            raise WeightSyncError(f"after the sync vLLM's log-probs differ from the "
                                  f"trainer's by {gap:.4f} per token on a probe "
                                  f"(tolerance sampling.vllm.sync_check_tolerance="
                                  f"{tolerance}): vLLM does not hold the new weights")

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()


def trainer_logprobs(model: Any, sequence: list[int], start: int) -> torch.Tensor:
    """The trainer's log-softmax(logits) of sequence[start:] ([len - start] float32)."""
    device = next(model.parameters()).device
    ids = torch.tensor([sequence], device=device)  # [1, L]
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, start - 1:-1].float()  # [L - start, V]
    picked = torch.log_softmax(logits, dim=-1).gather(1, ids[0, start:, None])[:, 0]
    return picked.cpu()


def _named_tensors(model: Any, clone: bool) -> list[tuple[str, torch.Tensor]]:
    """Every state-dict entry, tied ones included (a file needs its own copy of each)."""
    return [(name, t.detach().clone() if clone else t.detach())
            for name, t in model.state_dict().items()]


def _write_weights(model: Any, workdir: Path) -> str:
    """One safetensors file in a fresh directory; the previous sync's file is deleted
    first, never overwritten (vLLM may still map it: truncating a mapped tmpfs file in
    place cost up to ~1.9 s here against ~0.2 s for a new one)."""
    from safetensors.torch import save_file

    for old in workdir.glob("weights-*"):
        shutil.rmtree(old, ignore_errors=True)
    target = workdir / f"weights-{time.monotonic_ns()}"
    target.mkdir()
    tensors = dict(_named_tensors(model, clone=False))
    seen: set[int] = set()
    for name, tensor in tensors.items():  # tied tensors share storage: give each its own
        key = tensor.untyped_storage().data_ptr()
        if key in seen:
            tensors[name] = tensor.clone()
        seen.add(key)
    save_file({k: v.contiguous().cpu() for k, v in tensors.items()},
              str(target / "model.safetensors"))
    return str(target)


def _colocated(model: Any, tokenizer: Any, settings: VLLMSettings, workdir: Path,
               device: torch.device) -> Any:
    """A VLLMRunner in this process, started from the trainer's current weights."""
    from rlvr.rollout.vllm.env import BUILD_COMMAND, vllm_importable

    if not vllm_importable():
        raise RuntimeError("sampling.vllm.mode=colocate needs vllm in this Python; run "
                           f"rlvr from the vLLM environment (`{BUILD_COMMAND}`, then "
                           ".venv-vllm/bin/rlvr), or use sampling.vllm.mode=server")
    from rlvr.rollout.vllm.runner import RunnerSettings, VLLMRunner

    snapshot = workdir / "model"
    model.save_pretrained(snapshot, safe_serialization=True)
    tokenizer.save_pretrained(snapshot)
    dtype = settings.dtype or str(next(model.parameters()).dtype).removeprefix("torch.")
    sleep = settings.sleep if settings.sleep is not None else device.type == "cuda"
    return VLLMRunner(RunnerSettings(
        model=str(snapshot), dtype=dtype, max_model_len=settings.max_model_len,
        seed=settings.seed, kv_cache_gb=settings.kv_cache_gb,
        gpu_memory_utilization=settings.gpu_memory_utilization, sleep=sleep,
        prefix_caching=settings.prefix_caching))


def _sync_mode(settings: VLLMSettings, device: torch.device) -> str:
    if settings.sync not in ("auto", "file", "direct"):
        raise ValueError(f"sampling.vllm.sync must be auto, file or direct, got "
                         f"{settings.sync!r}")
    if settings.sync == "direct" and settings.mode != "colocate":
        raise ValueError("sampling.vllm.sync=direct needs mode=colocate (a server "
                         "loads weights from files)")
    if settings.sync != "auto":
        return settings.sync
    return "direct" if settings.mode == "colocate" and device.type == "cuda" else "file"


def _sync_root(settings: VLLMSettings) -> str | None:
    if settings.sync_dir:
        os.makedirs(settings.sync_dir, exist_ok=True)
        return settings.sync_dir
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _check_syncable(model: Any) -> None:
    if hasattr(model, "peft_config"):
        raise ValueError("sampling.engine=vllm does not take LoRA models yet (vLLM would "
                         "need the merged weights every step); use engine=hf or a full "
                         "fine-tune")


def _check_served_model(health: dict[str, Any], model: Any, url: str) -> None:
    """The server's model must be the trainer's architecture and vocabulary."""
    ours = model.config
    if health.get("vocab_size") not in (None, ours.vocab_size):
        raise ValueError(f"the vLLM server at {url} serves {health.get('model')} with a "
                         f"vocabulary of {health['vocab_size']}, the trainer's model has "
                         f"{ours.vocab_size}: start it with the trainer's model")
    theirs = set(health.get("architectures") or [])
    # a model built in memory (the tiny Llama) names no architectures: its class does
    mine = set(ours.architectures or [type(model).__name__])
    if theirs and not theirs & mine:
        raise ValueError(f"the vLLM server at {url} serves {sorted(theirs)}, the trainer's "
                         f"model is {sorted(mine)}")
