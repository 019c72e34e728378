"""Built-in environments for episodes: a registry of names the operator's config chooses
(`episodes.environment`), each a factory of one fresh environment per episode."""
