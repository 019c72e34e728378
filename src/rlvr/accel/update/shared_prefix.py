"""Completion logits with each distinct prompt run once (GRPO groups share a prompt).

The update needs, for every row, the logits that predict its completion tokens. The n
rows of a group repeat one prompt; running it n times (the plain full-batch forward)
repeats its forward and backward n times. Two ways to run it once, both exact:

packed (one forward for the whole batch): each group becomes ONE sequence
    [prompt (p tokens) | completion 1 | completion 2 | ... | completion n]
with a 4D "tree" attention mask: prompt tokens are causal among themselves, each
completion token sees the whole prompt and the earlier tokens of its own completion,
never another completion. Position ids restart at p for every completion, so each
completion sees exactly what it sees in its own row. A completion of length l feeds its
first l - 1 tokens (the last one predicts nothing we need); completion token 0 of every
member is predicted by the last prompt position, token t > 0 by its own token t - 1.
Only those positions go through the lm_head (`logits_to_keep` as a [groups, L] bool
mask). Groups are rows of one batch, right-padded to a common length; pad positions
attend to themselves (never a fully masked query row, which gives NaN in SDPA) and
nothing attends to them. Every weight gets ONE gradient, and no KV cache is needed,
so it also runs under gradient checkpointing. Two ways to run its attention:
  tree (rlvr.accel.update.tree_attention, for Llama-family models on sdpa/eager): the
    prompt causal, then every completion against [its prompt | itself], batched over
    members: only ~P^2 + n*T*(P + T) pairs, P the longest prompt, T the longest
    completion (the 4D mask is never built);
  packed (the 4D mask above, any model whose attention takes a user mask): the dense
    kernel computes all (p + sum l)^2 query/key pairs, most of them masked out.

two-pass (per group): the prompt once (batch 1, with grad, use_cache=True), its KV
cache repeated n times, the n completions on top. Attention does only useful pairs,
but every weight gets two gradients per group that autograd must sum (for
SmolLM2-135M ~0.3 s of adds plus ~0.3 s of zero-fills and dense embedding backwards
per extra gradient on a CPU), and it needs the KV cache (none under checkpointing).

plain: the full batch, prompts repeated (rlvr.update_paths.paths.UpdatePath).

`choose_path` picks the cheapest by a FLOP estimate (see `path_costs`). With the tree
attention the packed row does the useful pairs of two-pass without its extra gradients,
so it wins whenever it can run. Without it, short completions (p ~ 95, n = 8, T = 32)
pack with the 4D mask; long ones (n = 16, T = 1024) make that mask's quadratic blow-up
dominate and use two-pass (or plain under checkpointing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch.nn.utils.rnn import pad_sequence

from rlvr.algorithms.row_logits import RowLogits
from rlvr.models.families import cache_kwarg, gradient_checkpointing, keeps_logits_by_mask
from rlvr.accel.update.tree_attention import (TreeLayout, build_tree_layout,
                                          supports_tree_attention, tree_attention_enabled)

PACKABLE_ATTENTION = ("sdpa", "eager")  # take a user 4D mask as is (masking_utils)
# Cost, in matmul-FLOP equivalents, of one extra full gradient per trainable parameter:
# the add autograd does to sum it, the zero-fill and the dense embedding backward that
# come with it. Measured on SmolLM2-135M fp32 CPU: ~0.57 s per extra gradient for 135M
# parameters while its matmuls run at ~140 GFLOP/s, i.e. ~590 FLOPs per parameter;
# rounded down so that packing must win clearly. Memory-bound adds cost even more
# FLOPs on an accelerator (higher FLOP/byte), so this errs towards two-pass there.
EXTRA_GRADIENT_FLOPS_PER_PARAM = 400.0
PROMPT, PAD = 0, -1  # segment ids in a packed row; completions are 1..n


@dataclass(frozen=True)
class Group:
    """Rows of the batch that share one prompt."""
    prompt: tuple[int, ...]  # real prompt token ids (left padding removed)
    rows: list[int]          # row indices in the batch, in batch order
    lengths: list[int]       # completion length of each row (right padding removed)


@dataclass(frozen=True)
class ModelShape:
    """What the cost estimate needs to know about a model."""
    token_params: int      # parameters multiplied once per token (all but the embeddings)
    attention_width: int   # layers * heads * head_dim: forward costs 4x this per q/k pair
    trainable_params: int  # parameters that receive a gradient
    attention: str         # config._attn_implementation
    no_cache: bool         # activation checkpointing drops the KV cache in this pass
    tree: bool = False     # the packed row can use rlvr.accel.update.tree_attention

    @classmethod
    def of(cls, model: Any) -> "ModelShape":
        config = model.config
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        embeddings = {id(p) for m in (model.get_input_embeddings(),
                                      model.get_output_embeddings()) if m is not None
                      for p in m.parameters()}
        params = list(model.parameters())
        return cls(token_params=sum(p.numel() for p in params if id(p) not in embeddings),
                   attention_width=config.num_hidden_layers * heads * head_dim,
                   trainable_params=sum(p.numel() for p in params if p.requires_grad),
                   attention=_attention(model),
                   no_cache=recomputes_activations(model) and torch.is_grad_enabled(),
                   tree=supports_tree_attention(model))


def shared_prompt_logits(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         completion_ids: torch.Tensor, completion_mask: torch.Tensor,
                         path: str | None = None) -> RowLogits | None:
    """Logits [B, T, V] predicting completion_ids [B, T] (as RowLogits: each distinct
    position's row once), from input_ids [B, P+T] laid out
    as rlvr.training.batch packs them (prompt left-padded to P columns, completions
    right-padded). completion_mask [B, T]: every real completion token, environment
    tokens of an episode included (PackedBatch.span: they are attended to, not a loss
    mask with holes). Real (mask = 1) positions equal the plain full-batch forward. None
    when no two rows share a prompt or when the plain forward is estimated cheapest.
    path: "tree", "packed", "two_pass" or "plain" forces one (tests, benchmarks)."""
    groups = group_rows(input_ids, attention_mask, completion_mask)
    if any(not g.prompt for g in groups):
        return None  # no prompt position to predict token 0 of a row
    if path is None:
        if all(len(g.rows) == 1 for g in groups):
            return None  # nothing shared
        width = completion_ids.shape[1]
        path = choose_path(ModelShape.of(model), groups, input_ids.shape[1] - width, width,
                           torch.is_grad_enabled())
    if path in ("tree", "packed"):
        return packed_logits(model, groups, completion_ids, tree=path == "tree")
    if path == "two_pass":
        return two_pass_logits(model, groups, completion_ids, completion_mask)
    if path == "plain":
        return None
    raise ValueError(f"shared_prompt_logits: unknown path {path!r} "
                     "(tree, packed, two_pass, plain)")


def group_rows(input_ids: torch.Tensor, attention_mask: torch.Tensor,
               completion_mask: torch.Tensor) -> list[Group]:
    """Rows grouped by their real prompt tokens, groups in order of first appearance;
    a row's length is its last real completion token's index + 1 (completion_mask: the
    attention span, PackedBatch.span)."""
    width = completion_mask.shape[1]
    prompt_width = input_ids.shape[1] - width
    last = torch.arange(1, width + 1, device=completion_mask.device) * (completion_mask != 0)
    lengths = last.amax(1).tolist()  # [B]: index of the last real token + 1
    found: dict[tuple[int, ...], Group] = {}
    for row, (ids, mask) in enumerate(zip(input_ids[:, :prompt_width].tolist(),
                                          attention_mask[:, :prompt_width].tolist())):
        prompt = tuple(i for i, m in zip(ids, mask) if m)
        group = found.setdefault(prompt, Group(prompt, [], []))
        group.rows.append(row)
        group.lengths.append(lengths[row])
    return list(found.values())


def path_costs(shape: ModelShape, groups: Sequence[Group], prompt_width: int, width: int,
               grad: bool) -> dict[str, float]:
    """Estimated cost (FLOPs) of each path that can run. Per pass: 2 * token_params per
    token of matmuls, 4 * attention_width per query/key pair the attention computes
    (masked pairs cost as much as real ones: dense kernels); backward ~2x forward. The
    two-pass path adds EXTRA_GRADIENT_FLOPS_PER_PARAM per trainable parameter for each
    gradient beyond the first (two per group). The tree path runs the packed rows but
    computes only the pairs `tree_attention` does: per group the longest prompt P
    squared, per member with tokens T (longest fed completion) x (P + T). Embedding and
    lm_head work is about the same on every path and left out."""
    passes = 3.0 if grad else 1.0

    def flops(tokens: int, pairs: int) -> float:
        return passes * (2.0 * shape.token_params * tokens + 4.0 * shape.attention_width * pairs)

    rows, row_length = sum(len(g.rows) for g in groups), prompt_width + width
    costs = {"plain": flops(rows * row_length, rows * row_length ** 2)}
    if not shape.no_cache:
        tokens = sum(len(g.prompt) + len(g.rows) * width for g in groups)
        pairs = sum(len(g.prompt) ** 2 + len(g.rows) * width * (len(g.prompt) + width)
                    for g in groups)
        extra = (2 * len(groups) - 1) * shape.trainable_params * EXTRA_GRADIENT_FLOPS_PER_PARAM
        costs["two_pass"] = flops(tokens, pairs) + (extra if grad else 0.0)
    length = max(packed_length(g) for g in groups)
    if shape.attention in PACKABLE_ATTENTION:
        costs["packed"] = flops(len(groups) * length, len(groups) * length ** 2)
    if shape.tree:
        longest_prompt = max(len(g.prompt) for g in groups)
        fed = [tokens - 1 for g in groups for tokens in g.lengths if tokens > 1]  # [M]
        longest_fed = max(fed, default=1)
        pairs = (len(groups) * longest_prompt ** 2
                 + len(fed) * longest_fed * (longest_prompt + longest_fed))
        costs["tree"] = flops(len(groups) * length, pairs)
    return costs


def choose_path(shape: ModelShape, groups: Sequence[Group], prompt_width: int, width: int,
                grad: bool) -> str:
    """The cheapest path by `path_costs` ("plain", "two_pass", "packed" or "tree")."""
    costs = path_costs(shape, groups, prompt_width, width, grad)
    return min(costs, key=costs.__getitem__)


def packed_length(group: Group) -> int:
    return len(group.prompt) + sum(max(length - 1, 0) for length in group.lengths)


# ---- packed: one forward over all groups -------------------------------------------------

@dataclass(frozen=True)
class PackedRows:
    """Every group as one row (see the module docstring), right-padded to a length L."""
    ids: torch.Tensor        # [G, L]
    positions: torch.Tensor  # [G, L] position ids
    segments: torch.Tensor   # [G, L] PROMPT, members 1..n, PAD
    keep: torch.Tensor       # [G, L] bool: positions whose logits are used

    def tree_layout(self, groups: Sequence[Group]) -> TreeLayout:
        """The rows' layout for rlvr.accel.update.tree_attention."""
        return build_tree_layout([len(g.prompt) for g in groups],
                                 [[max(n - 1, 0) for n in g.lengths] for g in groups],
                                 self.ids.shape[1], self.ids.device)


def pack_rows(groups: Sequence[Group], completion_ids: torch.Tensor) -> PackedRows:
    """Each group's packed row (`pack_group`), right-padded: pads are id 0 at position 0,
    in segment PAD, never kept."""
    rows = [pack_group(g, completion_ids) for g in groups]
    ids, positions, segments, keep = (
        pad_sequence([r[i] for r in rows], batch_first=True,
                     padding_value=PAD if i == 2 else 0) for i in range(4))
    return PackedRows(ids, positions, segments, keep)


def packed_logits(model: Any, groups: Sequence[Group], completion_ids: torch.Tensor,
                  tree: bool = False) -> RowLogits:
    """One forward over every group packed as one row (see the module docstring), its
    attention by `tree_attention` (tree) or by the model's own with the 4D mask."""
    device = completion_ids.device
    packed = pack_rows(groups, completion_ids)
    by_mask = keeps_logits_by_mask()
    inputs = dict(input_ids=packed.ids, position_ids=packed.positions, use_cache=False,
                  logits_to_keep=packed.keep if by_mask else 0)
    if tree:
        layout = packed.tree_layout(groups)
        with tree_attention_enabled(model):
            logits = model(**inputs, tree_layout=layout).logits  # [K, V], K = keep.sum()
        logits = logits if by_mask else logits[packed.keep]
        if layout.calls != model.config.num_hidden_layers:  # e.g. layers with their own config
            raise RuntimeError(f"tree attention ran in {layout.calls} of "
                               f"{model.config.num_hidden_layers} layers: this model's "
                               "attention does not follow config._attn_implementation")
    else:
        dtype = model.get_input_embeddings().weight.dtype
        mask = tree_attention_mask(packed.segments, dtype,
                                   additive=_attention(model) != "sdpa")
        logits = model(**inputs, attention_mask=mask).logits  # [K, V], K = keep.sum()
        logits = logits if by_mask else logits[packed.keep]
    return RowLogits(logits, gather_index(groups, completion_ids.shape, device))  # [K, V]


def pack_group(group: Group, completion_ids: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """ids, position ids, segment ids and keep flags [L] of one group's packed row."""
    device, p = completion_ids.device, len(group.prompt)
    ids = [torch.tensor(group.prompt, dtype=torch.long, device=device)]  # [p]
    positions = [torch.arange(p, device=device)]
    segments = [torch.full((p,), PROMPT, dtype=torch.long, device=device)]
    for member, (row, length) in enumerate(zip(group.rows, group.lengths), start=1):
        fed = max(length - 1, 0)  # the last token predicts nothing we need
        ids.append(completion_ids[row, :fed])  # [fed]
        positions.append(p + torch.arange(fed, device=device))
        segments.append(torch.full((fed,), member, dtype=torch.long, device=device))
    segment = torch.cat(segments)  # [L]
    keep = segment != PROMPT  # [L]: every completion position predicts a token ...
    keep[p - 1] = True  # ... and the last prompt position predicts token 0 of each
    return torch.cat(ids), torch.cat(positions), segment, keep


def tree_attention_mask(segments: torch.Tensor, dtype: torch.dtype, additive: bool
                        ) -> torch.Tensor:
    """[G, 1, L, L] mask from segment ids [G, L] (PROMPT, members 1..n, PAD): query q
    may see key k <= q when k is a prompt token or in q's own segment. Pads (a segment
    of their own at the end) see themselves, so no query row is fully masked. Bool
    (True = attend) for SDPA; additive (0 / dtype min) for eager, which adds it."""
    length = segments.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool, device=segments.device).tril()  # [L, L]
    same = segments[:, :, None] == segments[:, None, :]  # [G, L, L]
    allowed = causal & (same | (segments[:, None, :] == PROMPT))  # [G, L, L]
    if not additive:
        return allowed[:, None]  # [G, 1, L, L]
    zero = torch.zeros((), dtype=dtype, device=segments.device)
    return zero.masked_fill(~allowed, torch.finfo(dtype).min)[:, None]  # [G, 1, L, L]


def gather_index(groups: Sequence[Group], shape: torch.Size, device: torch.device
                 ) -> torch.Tensor:
    """[B, T] index into the kept logits [K, V] (row-major over the packed rows: a
    group's last prompt position, then its members' fed tokens in order). Token 0 and
    padding point at the last prompt position (padding logits are never used)."""
    index = torch.empty(shape, dtype=torch.long, device=device)  # [B, T]
    t = torch.arange(shape[1], device=device)  # [T]
    base = 0  # kept positions of earlier groups
    for group in groups:
        start = base + 1  # the group's first completion position among the kept ones
        for row, length in zip(group.rows, group.lengths):
            inside = (t >= 1) & (t < length)  # [T]
            index[row] = torch.where(inside, start + t - 1, base)
            start += max(length - 1, 0)
        base = start
    return index


# ---- two-pass: prompt once with a KV cache, completions on top ---------------------------

def two_pass_logits(model: Any, groups: Sequence[Group], completion_ids: torch.Tensor,
                    completion_mask: torch.Tensor) -> RowLogits:
    """Per group: the prompt (batch 1, with grad) fills a KV cache that is repeated n
    times and the n completions run on top of it (the cache copies carry the
    gradient back to the one prompt pass). completion_mask [B, T] is their attention:
    every real token, an episode's environment tokens included."""
    pieces, order = [], []
    for group in groups:
        pieces.append(_group_logits(model, group.prompt, completion_ids[group.rows],
                                    completion_mask[group.rows]))  # [n, T, V]
        order.extend(group.rows)
    inverse = torch.argsort(torch.tensor(order, device=completion_ids.device))  # [B]
    stacked = RowLogits.of(torch.cat(pieces))  # groups' rows in group order
    return RowLogits(stacked.table, stacked.index[inverse])  # the batch's row order, no copy


def _group_logits(model: Any, prompt: tuple[int, ...], completions: torch.Tensor,
                  mask: torch.Tensor) -> torch.Tensor:
    n, width = completions.shape
    device, length = completions.device, len(prompt)
    head = model(input_ids=torch.tensor([prompt], device=device),
                 position_ids=torch.arange(length, device=device)[None],
                 use_cache=True, logits_to_keep=1)
    cache = getattr(head, "cache", None) or head.past_key_values
    cache.batch_repeat_interleave(n)
    attention = torch.cat([torch.ones(n, length, dtype=mask.dtype, device=device), mask], 1)
    positions = (length + torch.arange(width, device=device)).expand(n, width)  # [n, T]
    tail = model(input_ids=completions, attention_mask=attention, position_ids=positions,
                 use_cache=True, logits_to_keep=width, **{cache_kwarg(model): cache})
    first = head.logits.expand(n, 1, -1)  # [n, 1, V]: predicts completion token 0
    return torch.cat([first, tail.logits[:, :-1]], dim=1)  # [n, T, V]


def _attention(model: Any) -> str:
    return str(getattr(model.config, "_attn_implementation", None))


def recomputes_activations(model: Any) -> bool:
    """Activation checkpointing is on; in training mode with grad it drops the KV cache."""
    return gradient_checkpointing(model) and bool(getattr(model, "training", True))
