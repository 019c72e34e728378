"""Training on episodes: completions whose tokens interleave the model's with the
environment's (`Completion.loss_mask`). Environment tokens are context: every update
path gives the gradient of the reference step that trains on the model's tokens only
(rlvr.training.reference_step, one row at a time), the replay path refuses them, and
the loss, its KL and entropy statistics, the response lengths and the sampler/trainer
mismatch never see them."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from rlvr.algorithms import (EntropyBonus, KLPenalty, LossInputs, Objective,
                             kl_estimator, kl_reward_per_sequence, loss_aggregation,
                             mismatch_stats, policy_loss, rollout_correction,
                             sequence_log_ratio, token_logprobs_and_entropy)
from rlvr.rollout.base import Completion, EngineCapabilities, SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.batch import pack
from rlvr.training.loop import Groups, step_metrics
from rlvr.training.old_policy import old_policy
from rlvr.training.reference_step import completion_logprobs, grpo_loss, group_advantages
from rlvr.training.tiny import char_tokenizer, tiny_llama
from rlvr.update_paths import RunShape, resolve_update_path
from rlvr.verifiers.base import Verdict

SHAPE = RunShape(groups=3, group_size=3, prompt_tokens=5, completion_tokens=12)
CPU = torch.device("cpu")
PROMPTS = ("12+34=", "7+8=", "99+1=")
# Per prompt, its three episodes' loss masks (1 = the model's token, 0 = the
# environment's): holes in the middle, environment tokens right after the prompt,
# episodes ending with environment tokens, one without any, lengths 4 to 11.
MASKS = (((1, 1, 0, 0, 0, 1, 1, 0, 1), (0, 0, 1, 1, 1), (1, 1, 1, 0, 0)),
         ((1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 0), (0, 1, 1, 0), (1, 1, 1, 1)),
         ((1, 1, 0, 1, 1, 1, 0, 0, 0), (0, 0, 0, 1, 0, 1, 1), (1, 0, 0, 1)))
REWARDS = torch.tensor([[1.0, 0.0, 0.5], [0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])  # [P, G]


def _episodes(model, tokenizer, seed: int = 5) -> list[Completion]:
    """Synthetic episodes (rows prompt-major) as the runner stores them: sampler
    log-probs 0 on environment tokens; on the model's, its log-probs a little off the
    trainer's (noise 0.3), so ratios differ from 1 and some clip."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for text, masks in zip(PROMPTS, MASKS):
        prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
        for mask in masks:
            ids = torch.randint(4, len(tokenizer), (len(mask),), generator=generator).tolist()
            with torch.no_grad():
                true = completion_logprobs(model, prompt, ids)  # [T]
            noisy = true + 0.3 * torch.randn(len(ids), generator=generator)  # [T]
            logprobs = torch.where(torch.tensor(mask) == 1, noisy, torch.zeros(len(ids)))
            rows.append(Completion(prompt, ids, logprobs.tolist(), "", "eos",
                                   loss_mask=list(mask)))
    return rows


@pytest.fixture(scope="module")
def episodes():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer)
    return model, tokenizer, _episodes(model, tokenizer)


def _grads(model, loss: torch.Tensor) -> dict[str, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters()}


def _reference_grads(model, rows, loss_masks="own"):
    """The episode reference step: loss over the model's tokens (`own`), or, to show
    that the mask matters, over every token (None)."""
    masks = [c.loss_mask for c in rows] if loss_masks == "own" else None
    loss = grpo_loss(model, [c.prompt_ids for c in rows], [c.token_ids for c in rows],
                     [torch.tensor(c.logprobs) for c in rows],
                     group_advantages(REWARDS).flatten(), loss_masks=masks)
    return _grads(model, loss)


def _objective_grads(model, path, batch):
    """The trainer's computation (the loop's objective) on `path`, the loop's mask."""
    mask = batch.mask.float()  # [B, T]
    logprobs, entropy = token_logprobs_and_entropy(path.logits(model, batch),
                                                   batch.completion_ids)  # [B, T] x2
    objective = Objective(policy_loss("ppo_clip", eps_low=0.2, eps_high=0.2))
    out = objective(LossInputs(logprobs, entropy, batch.old_logprobs,
                               group_advantages(REWARDS).flatten(), mask,
                               loss_aggregation("token_mean").weights(mask)))
    assert 0 < out.stats["clip_frac"] < 1  # the clip is exercised, not idle
    return _grads(model, out.loss)


def _relative_errors(got, expected):
    return {key: float((got[key] - grad).norm() / grad.norm()) for key, grad in expected.items()}


def test_pack_masks_environment_tokens_out_of_the_loss_but_not_the_attention(episodes):
    _, tokenizer, rows = episodes
    batch = pack(rows, tokenizer.pad_token_id, CPU)
    for i, c in enumerate(rows):
        length = len(c.token_ids)
        assert batch.mask[i].tolist() == [*c.loss_mask, *[0] * (batch.width - length)]
        assert batch.span[i].tolist() == [1] * length + [0] * (batch.width - length)
    assert batch.has_environment_tokens
    assert batch.activations is None  # synthetic rows: nothing kept
    # a one-turn episode (every token the model's) packs exactly as a plain completion
    plain = Completion([5, 6], [7, 8, 9], [-1.0, -2.0, -3.0], "", "eos")
    one_turn = Completion([5, 6], [7, 8, 9], [-1.0, -2.0, -3.0], "", "eos", loss_mask=[1, 1, 1])
    a, b = pack([plain], 0, CPU), pack([one_turn], 0, CPU)
    assert torch.equal(a.mask, b.mask) and not b.has_environment_tokens


@pytest.mark.parametrize("bad", [[1, 0], [1, 2, 0]])
def test_pack_refuses_a_loss_mask_that_is_not_one_bit_per_token(bad):
    row = Completion([5], [7, 8, 9], [0.0] * 3, "", "eos", loss_mask=bad)
    with pytest.raises(ValueError, match=r"loss_mask must be one 0/1 per token id"):
        pack([row], 0, CPU)


@pytest.mark.parametrize("name", ["plain", "packed", "tree", "two_pass"])
def test_every_path_gives_the_episode_reference_gradient(episodes, name):
    model, tokenizer, rows = episodes
    batch = pack(rows, tokenizer.pad_token_id, CPU)
    path = resolve_update_path(name, model, SHAPE)
    expected = _reference_grads(model, rows)
    got = _objective_grads(model, path, batch)
    assert path.take_ran() == name  # the path asked for is the one that ran
    assert all(grad.norm() > 0 for grad in expected.values())
    errors = _relative_errors(got, expected)
    worst = max(errors, key=errors.__getitem__)
    assert errors[worst] < 1e-5, f"{name} {worst}: relative error {errors[worst]:.2e}"


def test_the_loss_mask_matters_to_the_reference_gradient(episodes):
    """Training on the environment's tokens too would be another gradient, so the
    comparisons above tell the two apart."""
    model, _, rows = episodes
    everything = _relative_errors(_reference_grads(model, rows, loss_masks=None),
                                  _reference_grads(model, rows))
    assert min(everything.values()) > 1e-2


def test_replay_refuses_episodes_with_environment_tokens(episodes):
    model, tokenizer, rows = episodes
    batch = pack(rows, tokenizer.pad_token_id, CPU)
    path = resolve_update_path("replay", model, SHAPE)
    with pytest.raises(ValueError, match=r"replay .*environment tokens.*no activations"):
        path.logits(model, batch)


def test_replay_still_runs_one_turn_episodes():
    """The refusal is about environment tokens, not about loss masks: one-turn episodes
    (every token sampled, activations kept) replay and give the reference gradient."""
    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer)
    engine = HFRolloutEngine(model, tokenizer)
    engine.eos_ids = sorted({*engine.eos_ids, *tokenizer.convert_tokens_to_ids(list("0123"))})
    params = SamplingParams(max_new_tokens=10, temperature=1.0, seed=3, keep_activations=True)
    rows = [c for g in engine.generate(list(PROMPTS), 3, params) for c in g]
    noise = torch.Generator().manual_seed(4)
    for c in rows:
        c.loss_mask = [1] * len(c.token_ids)
        c.logprobs = (torch.tensor(c.logprobs)
                      + 0.3 * torch.randn(len(c.logprobs), generator=noise)).tolist()
    batch = pack(rows, tokenizer.pad_token_id, CPU)
    assert batch.activations is not None and not batch.has_environment_tokens
    path = resolve_update_path("replay", model, SHAPE)
    expected = _reference_grads(model, rows)
    got = _objective_grads(model, path, batch)
    assert path.take_ran() == "replay"
    assert max(_relative_errors(got, expected).values()) < 1e-5


def test_environment_tokens_values_change_nothing_in_the_loss(episodes):
    """An environment token's sampler log-prob, its (per-token) advantage and its
    reference log-prob may be anything: loss, statistics and gradient are unchanged."""
    model, tokenizer, rows = episodes
    packed = pack(rows, tokenizer.pad_token_id, CPU)
    env = packed.span.bool() & ~packed.mask.bool()  # [B, T] the environment's tokens
    shifted = [Completion(c.prompt_ids, c.token_ids,
                          [lp if m else -30.0 + 7 * k for k, (lp, m) in
                           enumerate(zip(c.logprobs, c.loss_mask))], "", "eos",
                          loss_mask=c.loss_mask) for c in rows]
    objective = Objective(policy_loss("ppo_clip"),
                          (KLPenalty(beta=0.1), EntropyBonus(weight=0.01)), kl_estimator("k3"))
    advantages = group_advantages(REWARDS).flatten()[:, None].expand(-1, env.shape[1])  # [B, T]
    reference = torch.full(env.shape, -2.0)  # [B, T]
    outputs = []
    for completions, wild in ((rows, 0.0), (shifted, 1.0)):
        batch = pack(completions, tokenizer.pad_token_id, CPU)
        mask = batch.mask.float()  # [B, T]
        logprobs, entropy = token_logprobs_and_entropy(
            resolve_update_path("plain", model, SHAPE).logits(model, batch),
            batch.completion_ids)  # [B, T] x2
        values = torch.where(env, torch.full_like(reference, 50.0 * wild), reference)
        out = objective(LossInputs(logprobs, entropy, batch.old_logprobs,
                                   torch.where(env, advantages + 9.0 * wild, advantages),
                                   mask, loss_aggregation("token_mean").weights(mask),
                                   ref_logprobs=values))
        outputs.append((out.stats, _grads(model, out.loss)))
    (stats, grads), (wild_stats, wild_grads) = outputs
    assert not torch.equal(packed.old_logprobs, pack(shifted, 0, CPU).old_logprobs)
    assert stats == wild_stats
    assert all(torch.equal(grads[key], wild_grads[key]) for key in grads)


def _two_episodes():
    """Row 0: model, env, env, model (4 tokens); row 1: env, model, model (3 tokens)."""
    return pack([Completion([5, 6], [7, 8, 9, 10], [-0.5, 0.0, 0.0, -1.5], "", "eos",
                            loss_mask=[1, 0, 0, 1]),
                 Completion([5], [11, 12, 13], [0.0, -1.0, -2.0], "", "length",
                            loss_mask=[0, 1, 1])], 0, CPU)


def test_kl_and_entropy_statistics_count_only_the_models_tokens():
    batch = _two_episodes()
    mask = batch.mask.float()  # [[1, 0, 0, 1], [0, 1, 1, 0]]
    # log pi - log pi_ref: 0.2, 0.4 / 0.6, 0.8 on the model's tokens; 50 on the others
    logprobs = torch.tensor([[-1.0, -1.0, -1.0, -1.0], [-1.0, -1.0, -1.0, -1.0]])
    reference = logprobs - torch.tensor([[0.2, 50.0, 50.0, 0.4], [50.0, 0.6, 0.8, 50.0]])
    entropy = torch.tensor([[0.5, 9.0, 9.0, 1.5], [9.0, 2.0, 3.0, 9.0]])
    objective = Objective(policy_loss("ppo_clip"), kl=kl_estimator("k1"))
    out = objective(LossInputs(logprobs, entropy, logprobs, torch.zeros(2), mask,
                               loss_aggregation("token_mean").weights(mask),
                               ref_logprobs=reference))
    assert out.stats["kl"] == pytest.approx((0.2 + 0.4 + 0.6 + 0.8) / 4)
    assert out.stats["entropy"] == pytest.approx((0.5 + 1.5 + 2.0 + 3.0) / 4)
    per_row = kl_reward_per_sequence(logprobs - reference, mask, beta=0.5)  # [B]
    assert per_row.tolist() == pytest.approx([0.5 * 0.6, 0.5 * 1.4])


def test_aggregations_and_sequence_ratios_count_only_the_models_tokens():
    batch = _two_episodes()
    mask = batch.mask.float()  # [[1, 0, 0, 1], [0, 1, 1, 0]]
    assert float(loss_aggregation("token_mean").normalizer(mask)) == 4.0
    # sequence mean: each row has 2 of the model's tokens, 2 rows: 1 / (2 * 2) each
    assert loss_aggregation("sequence_mean").weights(mask).tolist() == [
        [0.25, 0.0, 0.0, 0.25], [0.0, 0.25, 0.25, 0.0]]
    log_ratio = torch.tensor([[0.2, 50.0, 50.0, 0.4], [50.0, 0.6, 0.8, 50.0]])
    assert sequence_log_ratio(log_ratio, torch.zeros(2, 4), mask).tolist() == pytest.approx(
        [0.3, 0.7])  # GSPO's per-sequence mean log-ratio


def test_response_length_counts_only_the_models_tokens():
    batch = _two_episodes()  # 2 and 2 model tokens of 4 and 3
    t = SimpleNamespace(scheduler=SimpleNamespace(get_last_lr=lambda: [0.1]))
    groups = Groups([], [], [[Verdict.correct(), Verdict.wrong()]], torch.zeros(1, 2), {})
    metrics = step_metrics(t, 1, groups, batch, batch.mask.float(), torch.tensor([[1.0, 0.0]]),
                           {}, {"generate": 1.0}, gen_tokens=7)
    assert metrics["response_length/mean"] == 2.0 and metrics["response_length/max"] == 2.0
    assert metrics["truncation_rate"] == 0.5


def test_mismatch_statistics_count_only_the_models_tokens_by_hand():
    batch = _two_episodes()  # sampler log-probs 0 on the environment's tokens
    # the trainer's ratios to the sampler: 2, 1 / 0.5, 4 on the model's tokens; far off
    # (e^-7) on the environment's, which the sampler stores as 0
    trainer = batch.old_logprobs + torch.tensor([[math.log(2), -7.0, -7.0, 0.0],
                                                 [-7.0, -math.log(2), math.log(4), 0.0]])
    stats = mismatch_stats(trainer, batch.old_logprobs, batch.mask)
    k3 = [r - 1 - math.log(r) for r in (2.0, 1.0, 0.5, 4.0)]
    assert stats["mismatch/kl"] == pytest.approx(sum(k3) / 4)
    assert stats["mismatch/ratio_min"] == pytest.approx(0.5)
    assert stats["mismatch/ratio_mean"] == pytest.approx(7.5 / 4)


def test_agreeing_sampler_on_episodes_shows_no_mismatch(episodes):
    """The loop's pi_old recompute (`old_policy`) on episodes whose sampler log-probs are
    the trainer's own numbers on the model's tokens and 0 on the environment's: no
    mismatch, no correction. Counting the environment's tokens would show a large one."""
    model, tokenizer, rows = episodes
    path = resolve_update_path("plain", model, SHAPE)
    batch = pack(rows, tokenizer.pad_token_id, CPU)
    with torch.no_grad():
        trainer, _ = token_logprobs_and_entropy(path.logits(model, batch),
                                                batch.completion_ids)  # [B, T]
    batch.old_logprobs = torch.where(batch.mask.bool(), trainer, torch.zeros_like(trainer))
    t = SimpleNamespace(
        cfg=SimpleNamespace(algorithm=SimpleNamespace(recompute_old_logprobs=True,
                                                          old_logprobs_from_update=False),
                            sampling=SimpleNamespace(temperature=1.0)),
        algo=SimpleNamespace(correction=rollout_correction("tis")), model=model, update=path,
        engine=SimpleNamespace(capabilities=EngineCapabilities(False, False)), producer=None)
    _, weights, metrics = old_policy(t, batch, batch.mask.float())
    assert metrics["mismatch/kl"] == pytest.approx(0.0, abs=1e-7)
    assert metrics["mismatch/ratio_min"] == pytest.approx(1.0, abs=1e-6)
    assert metrics["mismatch/ratio_max"] == pytest.approx(1.0, abs=1e-6)
    assert metrics["correction/clipped_frac"] == 0.0
    assert torch.equal(weights == 0, batch.mask == 0)  # weights only on the model's tokens
    assert mismatch_stats(trainer, batch.old_logprobs, batch.span)["mismatch/kl"] > 0.5
