"""Typed configuration: dataclasses declared once, filled from YAML and `a.b=value`
overrides, validated with errors that name the field."""

from rlvr.config.loader import (ConfigError, Named, config_to_dict, describe_config,
                                load_config, read_config_data, save_config)

__all__ = ["ConfigError", "Named", "config_to_dict", "describe_config", "load_config",
           "read_config_data", "save_config"]
