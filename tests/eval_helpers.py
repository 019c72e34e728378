"""A rollout engine that answers from a script, for evaluation tests without a model."""

from __future__ import annotations

from rlvr.rollout.base import Completion, SamplingParams


class ScriptedEngine:
    """Greedy calls get `greedy[prompt]`; sample j of a prompt gets `samples[prompt][j]`.
    Every call is recorded so tests can check the sampling parameters."""

    def __init__(self, greedy, samples=None):
        self.greedy, self.samples, self.calls = greedy, samples or {}, []

    def generate(self, prompts, n, params: SamplingParams):
        self.calls.append((list(prompts), n, params))

        def one(text):
            return Completion([1], [2, 3], [], text, "eos")
        if params.temperature == 0:
            return [[one(self.greedy[p])] for p in prompts]
        return [[one(t) for t in self.samples[p][:n]] for p in prompts]

    def sync_weights(self, model):
        pass
