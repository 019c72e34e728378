"""Environments from the ecosystem, in both directions (each an optional extra):
`openenv` plays any OpenEnv environment server (openenv_client); rlvr's own tasks and
verifiers are served as an OpenEnv environment (openenv_server, openenv_http); the
tasks of reasoning-gym are a data source graded by its own scorers (reasoning_gym); an
environment of the `verifiers` library is played with its dataset as the tasks and its
rubric as the reward (verifiers_env; the registry adds it itself: importing it here would
make `python -m rlvr.environments.ecosystem.verifiers_env` import it twice).

`ECOSYSTEM_ENVIRONMENTS` is what the environment registry adds: name -> factory
`factory(record, options, limits) -> Environment`, options checked by `OPTIONS[name]`
and declared by `OPTION_TYPES[name]`.
"""

from __future__ import annotations

from rlvr.environments.ecosystem import openenv_client

ECOSYSTEM_ENVIRONMENTS = {openenv_client.NAME: openenv_client.make}
# name -> the options checker the config loader calls (a UserError naming the field;
# openenv's also checks that the token variable is set)
OPTIONS = {openenv_client.NAME: openenv_client.parse_options}
# name -> the options dataclass (for the registry's EnvironmentSpec.options)
OPTION_TYPES = {openenv_client.NAME: openenv_client.OpenEnvOptions}
