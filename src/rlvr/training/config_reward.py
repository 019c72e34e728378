"""The `reward` section of the trainer's config: which verifier, where it runs (worker
processes, Ray actors, `rlvr serve` servers), and reward shaping. Part of TrainConfig
(rlvr.training.config), split out to keep that file readable.

`reward.plugins` is where a run names code: each "module:Class" listed there is a
verifier name the config, the data rows and the evaluations may use; any other import
path is refused (rlvr.verifiers.registry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rlvr.config import ConfigError
from rlvr.training.config_fields import _doc


@dataclass
class RewardConfig:
    plugins: list[str] = _doc("your own verifiers, as module:Class import paths; each is "
                              "then a verifier name (that same string) for reward.verifier, "
                              "eval.verifier, composite components and data rows. No other "
                              "import path is accepted: data never names code",
                              default_factory=list)
    verifier: str = _doc("verifier for every record (a built-in name or one of "
                         "reward.plugins); empty = each record's own", default="")
    options: dict[str, Any] = _doc("options for reward.verifier, e.g. a composite's "
                                   "{components: [...]}; records' own options otherwise. "
                                   "With backend=remote only the verifier's grading "
                                   "options: the servers' operator sets the rest "
                                   "(rlvr serve --verifier-options)",
                                   default_factory=dict)
    workers: int = _doc("verifier workers: processes, or Ray actors of 1 CPU each with "
                        "backend=ray (0 = every core; with ray, the CPUs Ray has free)",
                        default=0)
    backend: Literal["process", "ray", "remote"] = _doc(
        "where verifiers run: process = worker processes on this machine; ray = Ray "
        "actors spread over a Ray cluster's CPU nodes (needs `pip install 'rlvr[ray]'`; "
        "rlvr.verifiers.ray_pool); remote = `rlvr serve` servers (reward.remote_urls; "
        "rlvr.serve.remote_pool). Same verdicts, time limits and crash handling",
        default="process")
    ray_address: str = _doc("backend=ray: the Ray cluster to join, e.g. ray://head:10001 "
                            "or auto (\"\" = RAY_ADDRESS, else a `ray start` cluster on "
                            "this machine, else a new local Ray). A process that already "
                            "called ray.init keeps its Ray", default="")
    remote_urls: list[str] = _doc("backend=remote: the `rlvr serve` servers, e.g. "
                                  "[http://cpu-1:8000, http://cpu-2:8000]; batches go to "
                                  "the least loaded", default_factory=list)
    remote_token: str = _doc("backend=remote: the servers' shared token (\"\" = "
                             "$RLVR_SERVE_TOKEN, which keeps it out of config.yaml)",
                             default="")
    timeout_s: float | None = _doc("per-item limit in seconds (null = the verifier's own)",
                                   default=None)
    overlong: Literal["none", "mask", "soft"] = _doc(
        "truncated completions: none, mask (no loss on them), soft (DAPO length penalty)",
        default="none")
    overlong_buffer: int = _doc("soft penalty: tokens before max_new_tokens where the "
                                "penalty ramps from 0 to -1", default=4)

    def validate(self) -> None:
        problem = backend_problem(self)
        if problem:
            raise ConfigError(*problem)
        install_plugins(self)
        check_plugin_names(self, self.verifier, self.options, "")
        if self.backend == "remote" and self.verifier:
            _check_sendable(self.verifier, self.options)
        # Options a verifier can check here (the code verifier's packages), before any
        # model is built. Only for workers on this machine: servers and Ray nodes have
        # their own installs, and their verdicts name what they lack.
        if self.verifier and self.backend == "process":
            from rlvr.verifiers.registry import check_options
            try:
                check_options(self.verifier, self.options)
            except ValueError as exc:
                raise ConfigError(str(exc), "options") from None


def install_plugins(reward: RewardConfig) -> None:
    """Import reward.plugins into this process (they become verifier names); a
    ConfigError naming the entry that cannot be imported."""
    from rlvr.verifiers.registry import add_plugins

    try:
        add_plugins(reward.plugins, "plugins")
    except ValueError as exc:
        raise ConfigError(str(exc), "plugins") from None


def check_plugin_names(reward: RewardConfig, verifier: str, options: dict[str, Any],
                       section: str) -> None:
    """ConfigError when `verifier` or a verifier its options nest (composite components)
    is an import path that reward.plugins does not list. `section` prefixes the field
    ("" = this reward section, else e.g. "eval.")."""
    if not verifier:
        return
    from rlvr.verifiers.registry import is_import_path
    from rlvr.verifiers.untrusted import named_verifiers

    for name, where in named_verifiers(verifier, options):
        if is_import_path(name) and name not in reward.plugins:
            raise ConfigError(f"{name!r} is an import path: list it in reward.plugins "
                              "to use your own verifier", section + where)


def _check_sendable(verifier: str, options: dict[str, Any]) -> None:
    """With backend=remote the options travel in every request, and a server refuses
    the ones only its operator sets: say so when the config loads, not at step 1."""
    from rlvr.verifiers.untrusted import OperatorPolicy, Refused

    try:
        OperatorPolicy(check_values=False).options(verifier, options, "backend=remote",
                                                   "options")
    except Refused as exc:
        raise ConfigError(f"{exc} (set it on the servers: rlvr serve --verifier-options "
                          f"{verifier}=JSON)", exc.field) from None


def backend_problem(reward: RewardConfig) -> tuple[str, str] | None:
    """Why `reward`'s verifier backend cannot run here, and the field to blame (None: it
    can). Checked when the config loads and again before a run starts, so a missing Ray
    fails before any model is built. (Whether remote servers answer is checked before
    the run starts too, in rlvr.training.rewards, not here: loading a config makes no
    network calls.)"""
    if reward.backend != "ray" and reward.ray_address:
        return "needs backend=ray", "ray_address"
    if reward.backend != "remote" and reward.remote_urls:
        return "needs backend=remote", "remote_urls"
    if reward.backend == "remote":
        return _remote_problem(reward.remote_urls)
    if reward.backend != "ray":
        return None
    from rlvr.verifiers.ray_pool import ray_import_error  # imports Ray, nothing else

    reason = ray_import_error()
    if reason is None:
        return None
    return f"ray needs Ray installed: pip install 'rlvr[ray]' ({reason})", "backend"


def _remote_problem(urls: list[str]) -> tuple[str, str] | None:
    if not urls:
        return "backend=remote needs at least one `rlvr serve` URL", "remote_urls"
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad:
        return f"{bad[0]!r} is not an http:// or https:// URL", "remote_urls"
    try:
        import httpx  # noqa: F401
    except ImportError as exc:
        return f"remote needs httpx: pip install 'rlvr[serve]' ({exc})", "backend"
    return None
