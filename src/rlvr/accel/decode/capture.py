"""What the decode forward computed, kept for the update (one policy epoch).

With a single policy epoch the update's forward recomputes, under the same weights,
every projection that sampling already computed: each prompt token once, each completion
token once. The CPU decode forward (rlvr.accel.decode.fast_llama) can keep the output of every
linear layer (per layer: fused q|k|v, o, fused gate|up, down) and the logits of every
position it scored; rlvr.accel.update.replay then runs the update's forward with those
outputs in place of its GEMMs, so only the backward's GEMMs remain.

Layout, one pool per (layer, slot): rows [0, B*P) hold the prefill (prompt b's column c
at b*P + c, prompts left-padded to P columns), then every decode step appends its live
rows. The extra last row (index `capacity`) is zeros: padding gathers it. Logits: row b
holds prompt b's last position (it predicts completion token 0), then each step's rows.

Memory: `nbytes` per prompt and token, ~0.6 MB per token for SmolLM2-135M; the engine
keeps activations only within a budget.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch

SLOTS = ("qkv", "o", "gate_up", "down")  # the decode forward's GEMMs per layer


@dataclass(frozen=True)
class CaptureShape:
    """Sizes of one decode call's capture."""
    layers: int
    widths: dict[str, int]  # slot -> output width
    vocab: int
    prompts: int            # B prompts (prefilled once each)
    prompt_width: int       # P columns (left-padded)
    samples: int            # n rows per prompt
    max_new_tokens: int

    @property
    def rows(self) -> int:
        return self.prompts * self.samples

    @property
    def capacity(self) -> int:
        """Pool rows: the prefill's plus one per (row, new token) at most."""
        return self.prompts * self.prompt_width + self.rows * self.max_new_tokens

    def nbytes(self, element_size: int = 4) -> int:
        per_row = self.layers * sum(self.widths.values())
        logits = (self.prompts + self.rows * self.max_new_tokens + 1) * self.vocab
        return element_size * ((self.capacity + 1) * per_row + logits)


class ActivationCapture:
    """Buffers the decode forward writes (`begin_prefill`, `begin_step`, `put`,
    `put_logits`, `next_logits`, `step_outputs`) and the replay reads (`outputs`,
    `logits`, `token_pool`, `token_logits`, `prompt_rows`, `prompt_logits_row`,
    `prompt_lengths`, `versions`, `made_by`)."""

    def __init__(self, shape: CaptureShape, prompt_lengths: list[int],
                 versions: tuple[int, ...], owner: Any, dtype: torch.dtype,
                 device: torch.device) -> None:
        self.shape, self.capacity = shape, shape.capacity
        self.prompt_lengths = prompt_lengths  # [B] real tokens of each prompt
        # The weights this forward used: their versions, and the model they belong to,
        # held weakly (an id() could match another object once this one is freed).
        self.versions, self._owner = versions, weakref.ref(owner)
        make = lambda width: torch.empty(self.capacity + 1, width, dtype=dtype,  # noqa: E731
                                         device=device)
        self.outputs = [{slot: make(w) for slot, w in shape.widths.items()}
                        for _ in range(shape.layers)]  # [layer][slot] -> [capacity+1, w]
        for layer in self.outputs:
            for pool in layer.values():
                pool[self.capacity].zero_()
        self.logits = torch.empty(shape.prompts + shape.rows * shape.max_new_tokens + 1,
                                  shape.vocab, dtype=dtype, device=device)  # [N, V]
        self.logits[-1].zero_()
        # Pool row of completion token j of row r (== capacity: never computed), and the
        # logits row it produced (predicting token j + 1; -1: never computed).
        self.token_pool = torch.full((shape.rows, shape.max_new_tokens), self.capacity,
                                     dtype=torch.long)  # [rows, T]
        self.token_logits = torch.full((shape.rows, shape.max_new_tokens), -1,
                                       dtype=torch.long)  # [rows, T]
        # Where each pool's row 0 is and how far apart its rows are, for a native decode
        # step that writes its GEMM outputs straight into the pools (`step_outputs`).
        self._pool_addresses = torch.tensor([[layer[slot].data_ptr() for slot in SLOTS]
                                             for layer in self.outputs])  # [layers, 4]
        self._row_bytes = torch.tensor([self.outputs[0][slot].stride(0)
                                        * self.outputs[0][slot].element_size()
                                        for slot in SLOTS])  # [4]
        self._span = (0, 0)
        self._next_pool, self._next_logit = shape.prompts * shape.prompt_width, shape.prompts
        self._prefilling = False  # the current forward is the prefill (else a decode step)

    # --- written by the decode forward ------------------------------------------------

    def begin_prefill(self) -> None:
        self._span, self._prefilling = (0, self.shape.prompts * self.shape.prompt_width), True

    def begin_step(self, rows: torch.Tensor, token: int) -> None:
        """The next forward appends completion token `token` of generation rows `rows` [b]."""
        b = rows.numel()
        start = self._next_pool
        self.token_pool[rows.cpu(), token] = torch.arange(start, start + b)
        self.token_logits[rows.cpu(), token] = torch.arange(self._next_logit,
                                                           self._next_logit + b)
        self._span, self._prefilling = (start, start + b), False
        self._next_pool += b

    def put(self, layer: int, slot: str, out: torch.Tensor) -> None:
        """A GEMM's output [b, s, w] for the rows of the current span."""
        low, high = self._span
        self.outputs[layer][slot][low:high] = out.reshape(high - low, -1)

    def step_outputs(self) -> torch.Tensor:
        """Addresses [layers, 4] (int64, in SLOTS order) of the pool rows the current
        decode step's GEMM outputs belong in: a native step writes them there directly."""
        return self._pool_addresses + self._span[0] * self._row_bytes

    def put_logits(self, logits: torch.Tensor) -> None:
        """Logits [b, V]: the prefill's (one per prompt) or the current step's."""
        if self._prefilling:
            self.logits[:self.shape.prompts] = logits
            return
        self.next_logits(logits.shape[0]).copy_(logits)

    def next_logits(self, rows: int) -> torch.Tensor:
        """The current decode step's logits rows [rows, V], to be written by the caller."""
        start = self._next_logit
        self._next_logit += rows
        return self.logits[start:start + rows]

    # --- read by the replay -----------------------------------------------------------

    def prompt_rows(self, row: int) -> torch.Tensor:
        """Pool rows [p] of generation row `row`'s real prompt tokens."""
        prompt = row // self.shape.samples
        width, length = self.shape.prompt_width, self.prompt_lengths[prompt]
        return torch.arange(prompt * width + width - length, (prompt + 1) * width)

    def prompt_logits_row(self, row: int) -> int:
        """The logits row of generation row `row`'s last prompt position."""
        return row // self.shape.samples

    def made_by(self, model: Any) -> bool:
        """This capture holds `model`'s forward (the very object, while it lives)."""
        owner = self._owner()  # None once the model was freed: then nothing matches
        return owner is not None and owner is model
