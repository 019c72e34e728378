"""The trainer's typed config, declared once; every field documented where declared.

`rlvr train` with no arguments runs these defaults: the embedded arithmetic demo (a tiny
Llama built locally, a short supervised warm-start, then RLVR with the "exact"
verifier). Point `model.path` and `data.path` elsewhere for real runs: a config that
names a model gets the real-model profile's defaults for the fields it leaves unset
(no warm-start, chat prompts, auto device, every core, a small lr, 512 new tokens;
rlvr.training.profile).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rlvr.config import ConfigError
from rlvr.data.loading import FieldMapping
from rlvr.models.lora import LoraConfig
from rlvr.training.config_episodes import EpisodesConfig
from rlvr.training.config_fields import _doc
from rlvr.training.config_rollout import RolloutConfig, check_async
from rlvr.training.config_sft import SFTConfig

# the sections kept in their own modules, importable from here as before
from rlvr.training.config_algorithm import AlgorithmConfig
from rlvr.training.config_reward import RewardConfig, backend_problem, check_plugin_names
from rlvr.training.config_run import (DistributedConfig, EvalConfig, LoggingConfig,
                                      WatchConfig)

__all__ = [
    "AlgorithmConfig",
    "ArithmeticConfig",
    "DataConfig",
    "DistributedConfig",
    "EpisodesConfig",
    "EvalConfig",
    "LoggingConfig",
    "ModelConfig",
    "OptimConfig",
    "PromptConfig",
    "RewardConfig",
    "SFTConfig",
    "SamplingConfig",
    "TinyModelConfig",
    "TrainConfig",
    "UpdateConfig",
    "VLLMConfig",
    "WatchConfig",
    "backend_problem",
    "check_distributed",
    "check_engine_and_path",
]


@dataclass
class TinyModelConfig:
    """Shape of the tiny Llama built when model.path is empty."""

    hidden_size: int = _doc("width of the tiny model", default=128)
    intermediate_size: int = _doc("MLP width of the tiny model", default=384)
    num_layers: int = _doc("transformer blocks", default=4)
    num_heads: int = _doc("attention heads", default=4)
    max_positions: int = _doc("longest prompt + completion, in characters", default=64)


@dataclass
class ModelConfig:
    path: str = _doc("HF model dir, .gguf file or packaged alias (see rlvr.models); empty: "
                     "build the tiny character-level Llama of `tiny`", default="")
    tiny: TinyModelConfig = _doc("tiny model shape (used when path is empty)",
                                 default_factory=TinyModelConfig)
    device: str = _doc("torch device: cpu, cuda, cuda:1 ... or auto", default="cpu")
    dtype: Literal["float32", "bfloat16", "float16"] = _doc("parameter dtype",
                                                             default="float32")
    threads: int = _doc("torch CPU threads (0 = every core this process may use). 1 "
                        "suits the tiny model: its matrices are too small to split, and "
                        "verifier workers need a core", default=1)
    retain_freed_memory: bool = _doc("keep freed memory in the process for the next step "
                                     "(glibc malloc: no mmap, no trimming) instead of "
                                     "faulting fresh pages in every step; see "
                                     "rlvr.training.memory", default=True)
    lora: LoraConfig = _doc("LoRA adapters (peft) instead of full fine-tuning; checkpoints "
                            "then hold the adapter (merge with `rlvr merge-lora`)",
                            default_factory=LoraConfig)
    gradient_checkpointing: bool = _doc("recompute activations in the backward pass (less "
                                        "memory, ~30% more update time)", default=False)


@dataclass
class ArithmeticConfig:
    """The built-in procedural task (rlvr.data.arithmetic), used when data.path is empty."""

    min_digits: int = _doc("fewest digits per operand", default=2)
    max_digits: int = _doc("most digits per operand", default=2)
    ops: tuple[str, ...] = _doc("operators drawn uniformly, from + - * (worked solutions "
                                 "exist for + only)", default=("+",))
    template: str = _doc("problem text; fields {a} {op} {b}", default="{a}{op}{b}=")
    train_size: int = _doc("distinct training problems generated", default=6000)


@dataclass
class DataConfig:
    path: str = _doc("training records (JSONL/JSON/Parquet/saved datasets dir); empty: the "
                     "arithmetic task", default="")
    eval_path: str = _doc("held-out records for before/after evaluation (empty: the "
                          "arithmetic test split, or no evaluation for file data)", default="")
    mapping: FieldMapping = _doc("which source fields hold prompt/reference/verifier/id "
                                 "(see rlvr.data.loading.FieldMapping)",
                                 default_factory=FieldMapping)
    default_verifier: str = _doc("verifier for rows that name none", default="exact")
    arithmetic: ArithmeticConfig = _doc("the built-in task",
                                        default_factory=ArithmeticConfig)
    eval_size: int = _doc("held-out problems evaluated (0 = all of eval_path)", default=200)


@dataclass
class PromptConfig:
    style: Literal["plain", "chat", "auto"] = _doc(
        "plain: fill `template`; chat: the tokenizer's chat template; auto: chat when the "
        "tokenizer has a chat template, else plain", default="plain")
    template: str = _doc("plain style: fields {bos} (tokenizer BOS text), {prompt}, "
                         "{instruction}", default="{bos}{prompt}")
    system_prompt: str = _doc("chat style: system message (empty = none)", default="")
    instruction: str = _doc("answer-format instruction appended to the problem (chat) or "
                            "put in {instruction} (plain)", default="")


@dataclass
class VLLMConfig:
    """The vLLM engine's settings (sampling.engine=vllm; rlvr.rollout.vllm.engine)."""

    mode: Literal["colocate", "server"] = _doc(
        "colocate: vllm.LLM in this process (run rlvr from the vLLM environment, "
        "`make vllm-env`); server: a vLLM server driven over HTTP (`rlvr vllm-serve`)",
        default="colocate")
    url: str = _doc("server mode: the server's address", default="http://127.0.0.1:8100")
    sync: Literal["auto", "file", "direct"] = _doc(
        "weight sync after each update: file (safetensors in a RAM-backed directory, "
        "vLLM's reload path), direct (colocated: the tensors in place, device to device "
        "on a GPU); auto = direct when colocated on a GPU, else file", default="auto")
    sync_dir: str = _doc("where file syncs write (\"\" = /dev/shm when present)", default="")
    sync_check_tolerance: float = _doc(
        "after each sync vLLM scores a probe sequence; a mean |dlogprob| against the "
        "trainer above this stops the run (stale weights); 0 = no probe", default=0.05)
    dtype: str = _doc("vLLM's dtype (\"\" = the trainer model's)", default="")
    max_model_len: int = _doc("longest prompt + completion vLLM accepts", default=2048)
    kv_cache_gb: float = _doc("CPU: memory for vLLM's KV cache", default=1.0)
    gpu_memory_utilization: float = _doc("GPU: share of device memory vLLM may hold",
                                         default=0.3)
    sleep: bool | None = _doc("free vLLM's KV cache between generations (colocated; null = "
                              "on a GPU only)", default=None)
    timeout_s: float = _doc("server mode: seconds one request may take", default=600.0)

    def validate(self) -> None:
        if self.sync == "direct" and self.mode != "colocate":
            raise ConfigError("direct needs mode=colocate (a server loads files)", "sync")
        if self.sync_check_tolerance < 0:
            raise ConfigError("must be >= 0 (0 = no probe)", "sync_check_tolerance")
        if self.kv_cache_gb <= 0 or not 0 < self.gpu_memory_utilization <= 1:
            raise ConfigError("kv_cache_gb must be > 0 and gpu_memory_utilization in (0, 1]",
                              "kv_cache_gb")
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"must be an http(s) URL, got {self.url!r}", "url")


@dataclass
class SamplingConfig:
    prompts_per_step: int = _doc("problems per generation batch", default=32)
    group_size: int = _doc("completions sampled per problem (G)", default=8)
    max_new_tokens: int = _doc("completion length limit, in tokens", default=28)
    temperature: float = _doc("sampling temperature (> 0 for training)", default=1.0)
    top_p: float = _doc("nucleus sampling mass (1 = off)", default=1.0)
    top_k: int = _doc("keep the k most likely tokens (0 = off)", default=0)
    stop: list[str] = _doc("stop strings; the completion is cut before them",
                           default_factory=list)
    max_batch_rows: int = _doc("rows decoded together by the rollout engine", default=512)
    fast_decode: bool = _doc("on CPU, decode Llama-family models with rlvr's own forward "
                             "(fused projections, native or oneDNN decode GEMMs, "
                             "preallocated KV cache; same logits as transformers); false = "
                             "transformers' forward", default=True)
    reuse_activations: bool = _doc("with fast decode, keep every projection's output and the "
                                   "logits while sampling, so the update's first forward "
                                   "replays them instead of multiplying (exact: same "
                                   "weights; rlvr.accel.update.replay; off under DAPO dynamic "
                                   "sampling, whose groups come from several draws)",
                                   default=True)
    activation_memory_gb: float = _doc("most memory one decode call's kept activations "
                                       "may take (~0.6 MB per token for a 135M model); "
                                       "a call needing more keeps none", default=2.0)
    reuse_prefix: bool = _doc("episodes: keep each episode's keys/values from one turn to "
                              "the next, so a turn prefills only its new tokens (hf engine: "
                              "rlvr.rollout.prefix_store, exact; vllm: its automatic prefix "
                              "caching, enable_prefix_caching)", default=True)
    prefix_memory_gb: float = _doc("hf engine: most memory the keys/values kept for the next "
                                   "turn may take (~46 KB per token for a 135M model); rows "
                                   "past it prefill in full", default=2.0)
    generation_shards: int = _doc(
        "split each step's prompts into this many contiguous shards, each sampled with a "
        "seed of its own (one per rank under torchrun, which raises it to the number of "
        "ranks); a process with N shards samples what N ranks sample", default=1)
    engine: str = _doc("rollout engine by name (rlvr.rollout.factory): hf = transformers "
                       "model in this process; vllm = vLLM (sampling.vllm)", default="hf")
    vllm: VLLMConfig = _doc("the vLLM engine's settings (engine=vllm)",
                            default_factory=VLLMConfig)

    def validate(self) -> None:
        if self.temperature <= 0:
            raise ConfigError("must be > 0 for RL sampling (greedy has no log-probs)",
                              "temperature")
        if self.group_size < 2:
            raise ConfigError("needs at least 2 samples per problem for group advantages",
                              "group_size")
        if not 0 < self.top_p <= 1:
            raise ConfigError("must be in (0, 1]", "top_p")
        if self.activation_memory_gb < 0:
            raise ConfigError("must be >= 0 (0 keeps no activations)", "activation_memory_gb")
        if self.prefix_memory_gb < 0:
            raise ConfigError("must be >= 0 (0 keeps nothing)", "prefix_memory_gb")
        if self.generation_shards < 1 or self.prompts_per_step % self.generation_shards:
            raise ConfigError(f"must be >= 1 and divide prompts_per_step="
                              f"{self.prompts_per_step}", "generation_shards")
        from rlvr.rollout.factory import (
            engine_names,  # names only: no engine is imported
        )
        if self.engine not in engine_names():
            raise ConfigError(f"unknown engine {self.engine!r} (known: "
                              f"{', '.join(engine_names())})", "engine")


@dataclass
class UpdateConfig:
    path: Literal["auto", "plain", "packed", "tree", "two_pass", "replay"] = _doc(
        "how the update computes completion logits (rlvr.update_paths): plain (full "
        "batch), packed (each group one row, 4D mask), tree (packed, only the allowed "
        "attention pairs), two_pass (prompt KV cache), replay (the sampler's kept "
        "activations; later minibatches take auto's next choice); auto = replay, else "
        "tree, else the cheapest by a FLOP estimate. Chosen once per run and recorded "
        "as update/path in metrics.jsonl", default="auto")


def check_engine_and_path(cfg: "TrainConfig") -> None:
    """Settings that contradict each other across sections, before any model is built
    (what depends on the model itself is checked when the update path is resolved)."""
    s, a, path = cfg.sampling, cfg.algorithm, cfg.update.path
    if path == "replay" and not s.reuse_activations:
        raise ConfigError("replay needs sampling.reuse_activations=true", "update.path")
    if path == "replay" and a.dynamic_sampling:
        raise ConfigError("replay cannot run under algorithm.dynamic_sampling (its groups "
                          "come from several draws)", "update.path")
    if path == "two_pass" and cfg.model.gradient_checkpointing:
        raise ConfigError("two_pass needs the KV cache, which model.gradient_checkpointing "
                          "drops", "update.path")
    if a.recompute_old_logprobs is False and a.rollout_correction.name not in ("auto",
                                                                               "none"):
        raise ConfigError("a rollout correction compares the trainer's pi_old with the "
                          "sampler's log-probs, so pi_old must be recomputed: set "
                          "algorithm.recompute_old_logprobs to true or null",
                          "algorithm.rollout_correction")
    if a.recompute_old_logprobs is False or path == "replay":
        from rlvr.rollout.factory import declared_capabilities  # imports the engine
        declared = declared_capabilities(s.engine)
        if a.recompute_old_logprobs is False and not declared.logprobs_match_trainer:
            raise ConfigError(f"engine {s.engine!r} declares log-probs that are not the "
                              "trainer's numbers, so pi_old must be recomputed: set it to "
                              "true or null", "algorithm.recompute_old_logprobs")
        if path == "replay" and not declared.keeps_activations:
            raise ConfigError(f"engine {s.engine!r} keeps no activations to replay",
                              "update.path")


@dataclass
class OptimConfig:
    lr: float = _doc("peak learning rate (AdamW)", default=5e-4)
    weight_decay: float = _doc("AdamW weight decay", default=0.0)
    betas: tuple[float, float] = _doc("AdamW betas", default=(0.9, 0.99))
    warmup_steps: int = _doc("optimizer steps of linear warmup", default=5)
    schedule: Literal["constant", "cosine", "linear"] = _doc(
        "learning-rate decay after warmup", default="constant")
    min_lr_ratio: float = _doc("cosine/linear: final lr as a fraction of lr", default=0.1)
    grad_clip: float = _doc("max global grad norm (0 = no clipping)", default=1.0)


@dataclass
class TrainConfig:
    name: str = _doc("run name (the default run dir is runs/NAME-TIMESTAMP)", default="arith")
    profile: Literal["auto", "demo", "real_model"] = _doc(
        "defaults for the fields you leave unset: demo (these), real_model (no warm-start, "
        "chat prompts, auto device, every core, small lr, 512 new tokens; see "
        "rlvr.training.profile); auto: real_model when model.path is set", default="auto")
    seed: int = _doc("seed for init, data order, sampling", default=0)
    steps: int = _doc("RL steps (generation batches)", default=100)
    checkpoint_every: int = _doc("save a checkpoint every N steps (0 = only at the end)",
                                 default=25)
    keep_checkpoints: int = _doc("newest checkpoints kept on disk (0 = all)", default=2)
    max_seconds: float = _doc("stop RL once the training clock (wall time less the "
                              "held-out evaluations) reaches S seconds, then evaluate and "
                              "checkpoint as at the last step (0 = run every step)",
                              default=0.0)
    log_rollouts: bool = _doc("write every attempt to rollouts.jsonl", default=True)
    log_every: int = _doc("progress when stderr is not a terminal (a log file, CI, nohup): "
                          "one line every N RL or warm-start steps, and for the first and "
                          "last (a terminal gets a live bar instead; --log-every N sets it)",
                          default=5)
    audit_every: int = _doc("every N steps, check the last N steps' passed attempts for "
                            "reward-hack patterns (rlvr.audit: answers copied from the "
                            "prompt, unevaluated expressions, ...) and warn in the log; "
                            "a few regexes per attempt, no model call (0 = off; needs "
                            "log_rollouts)", default=10)
    model: ModelConfig = _doc("policy model", default_factory=ModelConfig)
    data: DataConfig = _doc("training and held-out data", default_factory=DataConfig)
    prompt: PromptConfig = _doc("prompt rendering", default_factory=PromptConfig)
    sampling: SamplingConfig = _doc("rollouts", default_factory=SamplingConfig)
    episodes: EpisodesConfig = _doc("the environment every task runs in, turn by turn, "
                                    "and the episode limits",
                                    default_factory=EpisodesConfig)
    reward: RewardConfig = _doc("verifiers and reward shaping", default_factory=RewardConfig)
    algorithm: AlgorithmConfig = _doc("advantages, policy loss, KL, entropy",
                                      default_factory=AlgorithmConfig)
    optim: OptimConfig = _doc("optimizer and schedule", default_factory=OptimConfig)
    sft: SFTConfig = _doc("supervised warm-start", default_factory=SFTConfig)
    update: UpdateConfig = _doc("the update's forward", default_factory=UpdateConfig)
    eval: EvalConfig = _doc("held-out evaluations during RL (before/after always run "
                            "when there is held-out data)", default_factory=EvalConfig)
    watch: WatchConfig = _doc("the collapse watch: entropy, uniform groups, held-out drop",
                              default_factory=WatchConfig)
    distributed: DistributedConfig = _doc("several processes under torchrun (FSDP2)",
                                          default_factory=DistributedConfig)
    rollout: RolloutConfig = _doc("asynchronous rollouts: a producer process sampling "
                                  "ahead of the update", default_factory=RolloutConfig)
    logging: LoggingConfig = _doc("experiment trackers (TensorBoard, W&B, MLflow, trackio)",
                                  default_factory=LoggingConfig)

    @staticmethod
    def upgrade_data(data: dict[str, Any]) -> dict[str, Any]:
        """The loader's hook for configs written by older versions (a run directory's
        config.yaml, so old runs still resume): `algorithm.eps_low/eps_high/dual_clip`
        were handed to every policy loss; they are now the loss's own options.
        `eval_every` is now `eval.every`."""
        if "eval_every" in data:
            data = dict(data)
            section = dict(data.get("eval") or {})
            section["every"] = data.pop("eval_every")
            data["eval"] = section
        algorithm = data.get("algorithm")
        legacy = [k for k in ("eps_low", "eps_high", "dual_clip")
                  if isinstance(algorithm, dict) and k in algorithm]
        if not legacy:
            return data
        algorithm = dict(algorithm)
        loss = algorithm.get("policy_loss", "ppo_clip")
        loss = {"name": loss} if isinstance(loss, str) else dict(loss)
        for key in legacy:
            value = algorithm.pop(key)
            if value is not None:
                loss.setdefault(key, value)
        return {**data, "algorithm": {**algorithm, "policy_loss": loss}}

    @staticmethod
    def profile_defaults(data: dict[str, Any]) -> dict[str, Any]:
        """The loader's hook: defaults of the profile that `data` (what the user wrote)
        selects, for the fields it leaves unset (rlvr.training.profile)."""
        from rlvr.training.profile import profile_defaults

        return profile_defaults(data)

    def validate(self) -> None:
        if self.steps < 0:
            raise ConfigError("must be >= 0", "steps")
        if self.max_seconds < 0:
            raise ConfigError("must be >= 0 (0 = no limit)", "max_seconds")
        if self.log_every < 1:
            raise ConfigError("must be >= 1", "log_every")
        if self.audit_every < 0:
            raise ConfigError("must be >= 0 (0 = off)", "audit_every")
        if self.sft.followup_template and self.sft.prompt != "episode":
            raise ConfigError("a second turn follows an episode's first: set sft.prompt: "
                              "episode", "sft.followup_template")
        if self.sampling.prompts_per_step % self.algorithm.minibatches:
            raise ConfigError("sampling.prompts_per_step must be divisible by "
                              "algorithm.minibatches", "algorithm.minibatches")
        check_engine_and_path(self)
        check_async(self)  # rollout.max_staleness >= 1 with what it cannot run with yet
        check_plugin_names(self.reward, self.eval.verifier, self.eval.options, "eval.")
        check_plugin_names(self.reward, self.data.default_verifier, {}, "data.default_")
        if self.sampling.generation_shards > 1 and self.algorithm.dynamic_sampling:
            raise ConfigError("dynamic sampling draws again per step: one shard only",
                              "sampling.generation_shards")


def check_distributed(cfg: TrainConfig, world: int, resume: bool = False) -> None:
    """What a run over `world` ranks (FSDP2) cannot do yet, before any model is built
    (a resumed run's warm-start is behind it: `sft.steps` then does not matter)."""
    s, a = cfg.sampling, cfg.algorithm
    if world <= 1:
        return
    if s.prompts_per_step % world or max(s.generation_shards, world) % world:
        raise ConfigError(f"prompts_per_step and generation_shards must be multiples of "
                          f"the {world} ranks", "sampling.prompts_per_step")
    if s.prompts_per_step % max(s.generation_shards, world):
        raise ConfigError("must be a multiple of the shards", "sampling.prompts_per_step")
    refusals = {
        "algorithm.dynamic_sampling": a.dynamic_sampling,
        "algorithm.minibatches": a.minibatches > 1,
        "algorithm.micro_batch_tokens": a.micro_batch_tokens > 0,
        "update.path": cfg.update.path not in ("auto", "plain"),
        "sampling.engine": s.engine != "hf",
        "model.gradient_checkpointing": cfg.model.gradient_checkpointing,
        "sft.steps": cfg.sft.steps > 0 and not resume,
        "rollout.max_staleness": cfg.rollout.max_staleness > 0,
    }
    for field_name, refused in refusals.items():
        if refused:
            raise ConfigError(f"not supported under torchrun ({world} ranks) yet: the FSDP2 "
                              "path runs the plain update, one minibatch, the hf engine",
                              field_name)
