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

import inspect
from typing import Any, Sequence

import torch

from rlvr.rollout.base import Completion, SamplingParams
from rlvr.rollout.sampling import filter_logits


class HFRolloutEngine:
    """Samples from a transformers causal LM in this process (CPU or one GPU).

    model:          a `*ForCausalLM`; the engine shares it with the trainer, so
                    `sync_weights` only swaps the reference.
    tokenizer:      its tokenizer; prompts are tokenized without added special tokens
                    (the prompt renderer writes BOS / the chat template itself).
    max_batch_rows: rows (prompt x sample) decoded together; larger batches are split.
    """

    def __init__(self, model: Any, tokenizer: Any, max_batch_rows: int = 512) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_rows = max_batch_rows
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.eos_ids = _eos_ids(model, tokenizer)
        self._cache_kwarg = ("cache" if "cache" in inspect.signature(model.forward).parameters
                             else "past_key_values")

    def sync_weights(self, model: Any) -> None:
        self.model = model

    def generate(self, prompts: Sequence[str], n: int,
                 params: SamplingParams) -> list[list[Completion]]:
        encoded = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        generator = torch.Generator(device=self._device())
        generator.manual_seed(params.seed if params.seed is not None
                              else int(torch.randint(0, 2**62, (1,)).item()))
        done: list[Completion] = []
        per_batch = max(1, self.max_batch_rows // n)  # prompts whose n samples decode together
        for start in range(0, len(encoded), per_batch):
            done.extend(self._decode(encoded[start:start + per_batch], params, generator, n))
        return [done[i * n:(i + 1) * n] for i in range(len(prompts))]

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.inference_mode()
    def _decode(self, prompts: list[list[int]], params: SamplingParams,
                generator: torch.Generator, n: int = 1) -> list[Completion]:
        """Sample n completions of each prompt; each prompt is prefilled once and its KV
        cache repeated n times (prompt i's samples are adjacent rows)."""
        device, batch, rows = self._device(), len(prompts), [r for r in prompts for _ in range(n)]
        width = max(len(r) for r in rows)
        input_ids = torch.full((batch, width), self.pad_id, dtype=torch.long, device=device)
        mask = torch.zeros((batch, width), dtype=torch.long, device=device)
        for i, r in enumerate(prompts):  # left padding: the next token is always the last column
            input_ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # [B, P]
        was_training = self.model.training
        self.model.eval()
        try:
            tokens, logprobs, lengths, reasons = self._loop(input_ids, mask, positions, params,
                                                            generator, n)
        finally:
            self.model.train(was_training)
        return self._completions(rows, tokens, logprobs, lengths, reasons, params)

    def _loop(self, input_ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
              params: SamplingParams, generator: torch.Generator, n: int = 1):
        out = self._forward(input_ids, mask, positions, None)  # prefill: one row per prompt
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        if n > 1:  # the n samples of a prompt share its prefill
            cache.batch_repeat_interleave(n)
            out.logits = out.logits.repeat_interleave(n, dim=0)  # [B*n, 1, V]
            mask, positions = mask.repeat_interleave(n, 0), positions.repeat_interleave(n, 0)
        batch, device, limit = mask.shape[0], input_ids.device, params.max_new_tokens
        tokens = torch.full((batch, limit), self.pad_id, dtype=torch.long, device=device)
        logprobs = torch.zeros((batch, limit), dtype=torch.float32, device=device)
        lengths, reasons = [limit] * batch, ["length"] * batch
        eos = torch.tensor(self.eos_ids, dtype=torch.long, device=device)
        stop_checker = _StopChecker(self.tokenizer, params.stop) if params.stop else None
        rows = torch.arange(batch, device=device)  # [b] original row of each live row
        finished = torch.zeros(batch, dtype=torch.bool, device=device)  # [b]
        next_pos = positions[:, -1:] + 1  # [b, 1]
        for step in range(limit):
            token, logp = self._pick(out.logits[:, -1, :].float(), params, generator)  # [b]
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
            if 4 * int(finished.sum()) >= len(rows) and hasattr(cache, "batch_select_indices"):
                # Drop finished rows from the batch and the KV cache, so rows that ended
                # early stop costing compute (batched at >= 1/4 done to amortise the copy).
                keep = (~finished).nonzero()[:, 0]  # [b']
                cache.batch_select_indices(keep)
                rows, mask, next_pos, token = rows[keep], mask[keep], next_pos[keep], token[keep]
                alive, finished = alive[keep], finished[keep]
            mask = torch.cat([mask, alive.long()[:, None]], dim=1)  # [b, P+step+1]
            out = self._forward(token[:, None], mask, next_pos, cache)
            next_pos = next_pos + 1
        return tokens, logprobs, lengths, reasons

    @staticmethod
    def _pick(logits: torch.Tensor, params: SamplingParams,
              generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Next token per row [b] and its log-prob under log_softmax(logits / T) before
        filtering [b] (None for greedy)."""
        if params.temperature <= 0:
            return logits.argmax(-1), None
        scaled = logits / params.temperature  # [b, V]
        filtered = filter_logits(scaled, params.top_k, params.top_p)
        token = torch.multinomial(torch.softmax(filtered, -1), 1, generator=generator)[:, 0]
        return token, torch.log_softmax(scaled, -1).gather(1, token[:, None])[:, 0]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
                 cache: Any) -> Any:
        return self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                          use_cache=True, logits_to_keep=1, **{self._cache_kwarg: cache})

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
