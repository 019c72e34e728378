"""The transformers rollout engine: batched sampling with the KV cache.

A hand-written decoding loop rather than `model.generate`: the trainer needs, for every
sampled token, the log-probability under log_softmax(logits / temperature) *before*
top-k/top-p filtering (the distribution the trainer recomputes), plus stop strings
and finish reasons per row. The loop does one forward pass per new token for the
whole batch and keeps per-token Python work to stop-string checks on a short text tail
(only when stop strings are given). Prompts are left-padded so every row's next token
sits in the last column; position ids follow each row's real length.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from rlvr.models.families import LLAMA_FAMILY, cache_kwarg, unwrap
from rlvr.accel.decode import fast_llama
from rlvr.rollout.base import (Completion, EngineCapabilities, KeptActivations, RolloutPath,
                              SamplingParams)
from rlvr.rollout import prefix_store
from rlvr.rollout.prefix_store import PrefixStore, RowKeeper, suffix_batch, weights_token
from rlvr.rollout.sampling import filter_logits, sample_tokens


class HFRolloutEngine:
    """Samples from a transformers causal LM in this process (CPU or one GPU).

    model:          a `*ForCausalLM`; the engine shares it with the trainer, so
                    `sync_weights` only swaps the reference.
    tokenizer:      its tokenizer; prompts are tokenized without added special tokens
                    (the prompt renderer writes BOS / the chat template itself).
    max_batch_rows: rows (prompt x sample) decoded together; larger batches are split.
    activation_budget_gb: with `SamplingParams.keep_activations`, the most memory a
                    decode call's kept activations may take (rlvr.accel.decode.capture; CPU
                    fast decode only); a call that would need more keeps none.
    reuse_prefix:   with `SamplingParams.keep_prefix`, keep each row's keys/values for
                    the next call, whose prompts that continue a row prefill only their
                    new tokens (an episode's turns; rlvr.rollout.prefix_store), at most
                    `prefix_budget_gb` of them.
    """

    # At best: activations from the CPU fast decode (`capabilities` says whether for the
    # current model); log-probs from the trainer's own module and math (tests compare
    # them with the training forward's), so they are pi_old as they are.
    CAPABILITIES = EngineCapabilities(keeps_activations=True, logprobs_match_trainer=True)

    def __init__(self, model: Any, tokenizer: Any, max_batch_rows: int = 512,
                 fast_decode: bool = True, activation_budget_gb: float = 2.0,
                 reuse_prefix: bool = True, prefix_budget_gb: float = 2.0) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_rows = max_batch_rows
        self.fast_decode = fast_decode
        self.activation_budget = activation_budget_gb * 2**30
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.eos_ids = _eos_ids(model, tokenizer)
        self._fast: fast_llama.FastLlama | None = None
        self.reuse_prefix = reuse_prefix
        self.prefixes = PrefixStore(prefix_budget_gb * 2**30)

    @property
    def capabilities(self) -> EngineCapabilities:
        """For the current model: activations only from the CPU fast decode."""
        return EngineCapabilities(keeps_activations=self._fast_decodes(),
                                  logprobs_match_trainer=True)

    def sync_weights(self, model: Any, version: int | None = None) -> None:
        """The trainer changed (or swapped) the model: drop decode-time weight snapshots
        now, so they do not sit in memory through the update (rebuilt when sampling).
        `version` needs no record here: this engine samples `model` itself."""
        self.model = model
        self.prefixes.clear()  # computed by the old weights
        if self._fast is not None:
            self._fast.release()

    def generate(self, prompts: Sequence[str], n: int,
                 params: SamplingParams) -> list[list[Completion]]:
        encoded = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        return self.generate_ids(encoded, n, params)

    def generate_ids(self, prompt_ids: Sequence[list[int]], n: int,
                     params: SamplingParams) -> list[list[Completion]]:
        encoded = [list(ids) for ids in prompt_ids]
        generator = torch.Generator(device=self._device())
        generator.manual_seed(params.seed if params.seed is not None
                              else int(torch.randint(0, 2**62, (1,)).item()))
        done: list[Completion] = []
        per_batch = max(1, self.max_batch_rows // n)  # prompts whose n samples decode together
        weights = weights_token(self.model) if self.reuse_prefix else None
        hits = self.prefixes.match(encoded, weights)  # forgets rows this call does not continue
        if params.keep_activations:  # kept activations cover whole prompts
            hits = [None] * len(encoded)
        keeper = (RowKeeper(self.prefixes, weights) if self.reuse_prefix and params.keep_prefix
                  and not params.keep_activations else None)
        for start in range(0, len(encoded), per_batch):
            batch = slice(start, start + per_batch)
            done.extend(self._decode(encoded[batch], params, generator, n, hits[batch], keeper))
            hits[batch] = [None] * len(hits[batch])  # those kept rows are spent: free them
        return [done[i * n:(i + 1) * n] for i in range(len(encoded))]

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.inference_mode()
    def _decode(self, prompts: list[list[int]], params: SamplingParams,
                generator: torch.Generator, n: int = 1, hits: list | None = None,
                keeper: RowKeeper | None = None) -> list[Completion]:
        """Sample n completions of each prompt; each prompt is prefilled once (after its
        kept prefix, when `hits` has one) and its KV cache repeated n times (prompt i's
        samples are adjacent rows). keeper: takes every row's keys/values as it ends."""
        device, batch, rows = self._device(), len(prompts), [r for r in prompts for _ in range(n)]
        input_ids, mask, positions, prefix = suffix_batch(prompts, hits or [None] * batch,
                                                          self.pad_id, device)
        width = input_ids.shape[1]
        self.prefixes.stats["prefilled_tokens"] += int(mask.sum())
        self.prefixes.stats["reused_tokens"] += sum(prefix.lengths) if prefix else 0
        was_training = self.model.training
        self.model.eval()
        stepper = None
        try:
            stepper = self._stepper()
            keep = params.keep_activations and self._can_keep_activations(stepper, batch,
                                                                           width, n, params)
            tokens, logprobs, lengths, reasons = self._loop(stepper, input_ids, mask,
                                                            positions, params, generator, n,
                                                            keep, prefix, keeper)
        finally:
            if stepper is not None:
                stepper.end()  # the cache is spent: not held through the update or eval
            self.model.train(was_training)
        completions = self._completions(rows, tokens, logprobs, lengths, reasons, params)
        if keeper is not None:
            keeper.commit(rows, [c.token_ids for c in completions])
        if keep:
            capture, stepper.capture = stepper.capture, None  # the completions own it now
            for row, completion in enumerate(completions):
                completion.activations = KeptActivations(capture, row)
        return completions

    def _can_keep_activations(self, stepper: Any, prompts: int, width: int, n: int,
                              params: SamplingParams) -> bool:
        if not isinstance(stepper, fast_llama.FastLlama) or params.temperature <= 0:
            return False
        shape = stepper.capture_shape(prompts, width, n, params.max_new_tokens)
        return shape.nbytes() <= self.activation_budget

    def _loop(self, stepper: Any, input_ids: torch.Tensor, mask: torch.Tensor,
              positions: torch.Tensor, params: SamplingParams, generator: torch.Generator,
              n: int = 1, keep_activations: bool = False, prefix: Any = None,
              keeper: RowKeeper | None = None):
        logits = stepper.start(input_ids, mask, positions, n, params.max_new_tokens,
                               keep_activations, prefix)  # [B*n, V]
        batch, device, limit = logits.shape[0], input_ids.device, params.max_new_tokens
        tokens = torch.full((batch, limit), self.pad_id, dtype=torch.long, device=device)
        logprobs = torch.zeros((batch, limit), dtype=torch.float32, device=device)
        lengths, reasons = [limit] * batch, ["length"] * batch
        eos = torch.tensor(self.eos_ids, dtype=torch.long, device=device)
        stop_checker = _StopChecker(self.tokenizer, params.stop) if params.stop else None
        rows = torch.arange(batch, device=device)  # [b] original row of each live row
        finished = torch.zeros(batch, dtype=torch.bool, device=device)  # [b]
        for step in range(limit):
            token, logp = self._pick(logits.float(), params, generator)  # [b]
            token = torch.where(finished, torch.full_like(token, self.pad_id), token)
            tokens[rows, step] = token
            if logp is not None:
                logprobs[rows, step] = logp
            ended = torch.isin(token, eos) & ~finished  # [b]
            for i in ended.nonzero()[:, 0].tolist():
                lengths[rows[i]], reasons[rows[i]] = step + 1, "eos"
            if stop_checker is not None:
                for i in (~finished & ~ended).nonzero()[:, 0].tolist():
                    if stop_checker.hit(tokens[rows[i], :step + 1]):
                        lengths[rows[i]], reasons[rows[i]] = step + 1, "stop"
                        ended[i] = True
            alive = ~finished  # rows that produced a real token this step
            finished = finished | ended
            if bool(finished.all()) or step + 1 == limit:
                break
            if 4 * int(finished.sum()) >= len(rows) and stepper.can_keep:
                # Drop finished rows from the batch and the KV cache, so rows that ended
                # early stop costing compute (batched at >= 1/4 done to amortise the copy).
                keep = (~finished).nonzero()[:, 0]  # [b']
                if keeper is not None:  # the rows leaving, before their keys/values go
                    keeper.take(stepper, rows, finished)
                stepper.keep(keep)
                rows, token, alive, finished = rows[keep], token[keep], alive[keep], finished[keep]
            logits = stepper.step(token, alive)  # [b, V]
        if keeper is not None:
            keeper.take(stepper, rows, torch.ones_like(finished))
        return tokens, logprobs, lengths, reasons

    def _stepper(self) -> "_CacheStepper | fast_llama.FastLlama":
        # CPU only: off the native kernel the decode forward keeps fused copies of the
        # q|k|v and gate|up weights, which a GPU should not pay for (there, transformers'
        # forward or vLLM).
        if self._fast_decodes():
            if self._fast is None or self._fast.model is not self.model:
                self._fast = fast_llama.FastLlama(self.model)
            return self._fast
        return _CacheStepper(self.model)

    def decode_path(self) -> RolloutPath:
        """The decode forward for the current model and why no faster one runs
        (recorded once per run as rollout/path; rlvr.rollout.base.RolloutPath)."""
        if not self.fast_decode:
            return RolloutPath("hf", "fast decode off: sampling.fast_decode=false")
        device = self._device()
        if device.type != "cpu":
            return RolloutPath("hf", f"fast decode is CPU only; the model is on {device.type}")
        if not fast_llama.supports(self.model):
            kind = getattr(getattr(unwrap(self.model), "config", None), "model_type", None)
            return RolloutPath("hf", f"model family not llama: {kind!r}" if kind not in
                               LLAMA_FAMILY else f"{kind!r} with a layout fast decode does "
                               "not reproduce (rlvr.models.families.supports_fast_decode)")
        why = fast_llama.why_not_native(self.model)
        return RolloutPath("fast_llama", why) if why else RolloutPath("fast_llama+native")

    def prefix_reuse(self) -> str:
        """Recorded as rollout/path_prefix_reuse (rlvr.rollout.base.prefix_reuse)."""
        return "kept keys/values" if self.reuse_prefix else "off: sampling.reuse_prefix=false"

    def prefix_counters(self) -> dict[str, int]:
        """Counters since start (rlvr.rollout.base.prefix_counters)."""
        return dict(self.prefixes.stats)

    def _fast_decodes(self) -> bool:
        return (self.fast_decode and self._device().type == "cpu"
                and fast_llama.supports(self.model))

    @staticmethod
    def _pick(logits: torch.Tensor, params: SamplingParams,
              generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Next token per row [b] and its log-prob under log_softmax(logits / T) before
        filtering [b] (None for greedy)."""
        if params.temperature <= 0:
            return logits.argmax(-1), None
        scaled = logits if params.temperature == 1 else logits / params.temperature  # [b, V]
        probs = torch.softmax(scaled, -1)  # [b, V]
        filtered = filter_logits(scaled, params.top_k, params.top_p)
        token = sample_tokens(probs if filtered is scaled else torch.softmax(filtered, -1),
                              generator)  # [b]
        # log of the chosen probability rather than a second full-vocabulary pass
        # (log_softmax): equal to float32 rounding, and finite, since a token drawn
        # has a nonzero probability.
        return token, probs.gather(1, token[:, None])[:, 0].log()

    def _completions(self, rows, tokens, logprobs, lengths, reasons,
                     params: SamplingParams) -> list[Completion]:
        greedy = params.temperature <= 0
        token_rows, logprob_rows = tokens.tolist(), logprobs.tolist()
        result = []
        for i, prompt_ids in enumerate(rows):
            ids = token_rows[i][:lengths[i]]
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            if reasons[i] == "stop" or params.stop:
                text = _cut_at_stop(text, params.stop)
            result.append(Completion(prompt_ids=list(prompt_ids), token_ids=ids,
                                      logprobs=[] if greedy else logprob_rows[i][:lengths[i]],
                                      text=text, finish_reason=reasons[i]))
        return result


class _CacheStepper:
    """Decoding through the model's own forward and transformers' KV cache: any causal
    LM. The prompt batch is prefilled once and its cache repeated n times."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.cache_kwarg = cache_kwarg(model)
        self.cache: Any = None

    def start(self, input_ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
              n: int, max_new_tokens: int, keep_activations: bool = False,
              prefix: Any = None) -> torch.Tensor:
        if keep_activations:  # the engine asks only FastLlama (`_can_keep_activations`)
            raise ValueError("transformers' forward keeps no activations for the update")
        if prefix is not None:  # kept keys/values first, the prompts' new tokens after
            self.cache = prefix_store.transformers_cache(prefix)
            mask = torch.cat([prefix.valid.long(), mask], dim=1)  # [B, cached+P]
        out = self._forward(input_ids, mask, positions)  # prefill: one row per prompt
        self.cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        logits = out.logits[:, -1]  # [B, V]
        if n > 1:  # the n samples of a prompt share its prefill
            self.cache.batch_repeat_interleave(n)
            logits = logits.repeat_interleave(n, dim=0)  # [B*n, V]
            mask, positions = mask.repeat_interleave(n, 0), positions.repeat_interleave(n, 0)
        self.mask, self.next_pos = mask, positions[:, -1:] + 1  # [b, P], [b, 1]
        return logits

    def step(self, token: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
        self.mask = torch.cat([self.mask, alive.long()[:, None]], dim=1)  # [b, P+step+1]
        out = self._forward(token[:, None], self.mask, self.next_pos)
        self.next_pos = self.next_pos + 1
        return out.logits[:, -1]  # [b, V]

    @property
    def can_keep(self) -> bool:
        return hasattr(self.cache, "batch_select_indices")

    def end(self) -> None:
        self.cache = None

    def export(self, row: int):
        return prefix_store.transformers_cache_row(self.cache, row, self.mask[row])

    def keep(self, rows: torch.Tensor) -> None:
        self.cache.batch_select_indices(rows)
        self.mask, self.next_pos = self.mask[rows], self.next_pos[rows]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> Any:
        return self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                          use_cache=True, logits_to_keep=1, **{self.cache_kwarg: self.cache})


class _StopChecker:
    """Whether the newest token completed a stop string. Decodes only a short tail: a
    stop string completed by the newest token lies within the last len(stop) tokens
    whenever every token decodes to at least one character."""

    def __init__(self, tokenizer: Any, stops: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.stops = tuple(s for s in stops if s)
        # A few spare tokens: special tokens decode to nothing.
        self.window = max(len(s) for s in self.stops) + 8

    def hit(self, ids: torch.Tensor) -> bool:
        tail = self.tokenizer.decode(ids[-self.window:].tolist(), skip_special_tokens=True)
        return any(s in tail for s in self.stops)


def _cut_at_stop(text: str, stops: Sequence[str]) -> str:
    cuts = [text.find(s) for s in stops if s and s in text]
    return text[:min(cuts)] if cuts else text


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    ids: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(configured)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return sorted(ids)
