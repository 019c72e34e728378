"""The trainer config's `episodes` section: the environment the policy acts in and the
episode limits (rlvr.episodes; docs/contracts.md, "Episodes"). Part of TrainConfig
(rlvr.training.config), in its own module to keep that file readable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlvr.config import ConfigError
from rlvr.episodes.base import EpisodeLimits
from rlvr.errors import UserError
from rlvr.training.config_fields import _doc


@dataclass
class EpisodesConfig:
    """Every task runs as an episode; the default, single_turn, is one prompt, one
    answer, graded by the reward's verifier (the run samples what it did before)."""

    environment: str = _doc("the environment by name (rlvr.environments.registry; "
                            "the operator's choice only, never a dataset row's)",
                            default="single_turn")
    options: dict[str, Any] = _doc("the operator's keyword options for the environment",
                                   default_factory=dict)
    max_turns: int = _doc("model turns per episode", default=1)
    max_tokens: int = _doc("tokens after the first prompt, the model's and the "
                           "environment's (0 = sampling.max_new_tokens)", default=0)
    step_timeout_s: float = _doc("seconds one environment call (reset, step, close) may "
                                 "take; past it the episode ends with reward 0",
                                 default=30.0)

    def validate(self) -> None:
        from rlvr.environments.registry import check_environment

        if self.max_turns < 1:
            raise ConfigError("must be >= 1", "max_turns")
        if self.max_tokens < 0:
            raise ConfigError("must be >= 0 (0 = sampling.max_new_tokens)", "max_tokens")
        if not self.step_timeout_s > 0:
            raise ConfigError("must be > 0", "step_timeout_s")
        if not isinstance(self.options, dict):
            raise ConfigError("must be a mapping of option names to values", "options")
        try:
            check_environment(self.environment, self.options)
        except (ValueError, KeyError, UserError) as exc:
            raise ConfigError(*_message_and_field(str(exc))) from None

    def limits(self, max_new_tokens: int) -> EpisodeLimits:
        return EpisodeLimits(max_turns=self.max_turns,
                             max_tokens=self.max_tokens or max_new_tokens,
                             step_timeout_s=self.step_timeout_s)


def _message_and_field(text: str) -> tuple[str, str]:
    """An environment check's error as (message, field of this section): a message that
    names its field ("episodes.options.sandbox: ...") keeps it; else the name or the
    options are at fault."""
    head, _, rest = text.partition(": ")
    if head.startswith("episodes.") and rest:
        return rest, head.removeprefix("episodes.")
    return text, "environment" if "unknown environment" in text else "options"
