"""Several processes: ranks and collectives (context), FSDP2 sharding and checkpoints (fsdp)."""
