"""The judge verifier's options (the item's or the config's `options`), checked up front
with errors that name the option. Secrets never sit in options: `api_key_env` names the
environment variable that holds the key."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from rlvr.verifiers.judge.client import Endpoint

URL_ENV, MODEL_ENV, KEY_ENV = "RLVR_JUDGE_URL", "RLVR_JUDGE_MODEL", "RLVR_JUDGE_API_KEY"
INJECTION_POLICIES = ("zero", "flag")


@dataclass(frozen=True)
class JudgeOptions:
    endpoint: Endpoint
    model: str
    temperature: float
    max_tokens: int
    scale: int
    price_prompt: float       # per 1K prompt tokens (any currency; the counter says "cost")
    price_completion: float   # per 1K completion tokens
    cache_size: int
    cache_dir: str | None
    injection: str            # "zero": a flagged completion scores 0 unasked; "flag": note only
    structured: bool          # send response_format (a json_schema of the verdict)


def _number(name: str, value: Any, low: float, integer: bool = False) -> Any:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low or (integer and int(value) != value):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"judge: option {name!r} must be {kind} >= {low:g}, got {value!r}")
    return int(value) if integer else float(value)


def _prices(value: Any) -> tuple[float, float]:
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"prompt", "completion"})
        if unknown:
            raise ValueError(f"judge: option 'price_per_1k_tokens' has unknown key(s) {unknown}"
                             " (known: prompt, completion)")
        return (_number("price_per_1k_tokens.prompt", value.get("prompt", 0.0), 0),
                _number("price_per_1k_tokens.completion", value.get("completion", 0.0), 0))
    price = _number("price_per_1k_tokens", value, 0)
    return price, price


def _api_key(api_key_env: str | None) -> str | None:
    if api_key_env is None:  # the default variable, when it is set
        return os.environ.get(KEY_ENV) or None
    if not isinstance(api_key_env, str) or not api_key_env:
        raise ValueError("judge: option 'api_key_env' must name an environment variable")
    key = os.environ.get(api_key_env)
    if not key:
        raise ValueError(f"judge: option 'api_key_env' names ${api_key_env}, which is not set")
    return key


def _required_text(name: str, value: Any, env: str) -> str:
    value = os.environ.get(env) if value is None else value
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"judge: option {name!r} is required (or set ${env})")
    return value.strip()


def parse_options(base_url: str | None = None, model: str | None = None,
                  api_key_env: str | None = None, timeout_s: float = 30.0,
                  total_timeout_s: float = 100.0, retries: int = 3, backoff_s: float = 0.5,
                  max_backoff_s: float = 8.0, max_concurrency: int = 4,
                  temperature: float = 0.0, max_tokens: int = 256, scale: int = 10,
                  price_per_1k_tokens: Any = 0.0, cache_size: int = 4096,
                  cache_dir: str | None = None, injection: str = "zero",
                  structured: bool = False, **unknown: Any) -> JudgeOptions:
    if "api_key" in unknown:
        raise ValueError("judge: never put the key in options; set an environment variable "
                         "and name it with 'api_key_env'")
    if unknown:
        raise ValueError(f"judge: unknown option(s) {', '.join(sorted(unknown))}")
    url = _required_text("base_url", base_url, URL_ENV)
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"judge: option 'base_url' must be an http(s) URL, got {url!r}")
    if injection not in INJECTION_POLICIES:
        raise ValueError(f"judge: option 'injection' must be one of {INJECTION_POLICIES}, "
                         f"got {injection!r}")
    if not isinstance(structured, bool):
        raise ValueError("judge: option 'structured' must be true or false")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ValueError("judge: option 'cache_dir' must be a path string")
    endpoint = Endpoint(url, _api_key(api_key_env), _number("timeout_s", timeout_s, 0.001),
                        _number("total_timeout_s", total_timeout_s, 0.001),
                        _number("retries", retries, 0, integer=True),
                        _number("backoff_s", backoff_s, 0), _number("max_backoff_s",
                                                                   max_backoff_s, 0),
                        _number("max_concurrency", max_concurrency, 1, integer=True))
    prompt_price, completion_price = _prices(price_per_1k_tokens)
    return JudgeOptions(endpoint, _required_text("model", model, MODEL_ENV),
                        _number("temperature", temperature, 0),
                        _number("max_tokens", max_tokens, 1, integer=True),
                        _number("scale", scale, 1, integer=True), prompt_price,
                        completion_price, _number("cache_size", cache_size, 0, integer=True),
                        cache_dir, injection, structured)
