"""Command-line interface: `rlvr <command>`; one module per command."""
