"""Environments the policy acts in: a registry of names the operator's config chooses
(`episodes.environment`), the built-ins, and the ecosystem's (`ecosystem/`)."""
