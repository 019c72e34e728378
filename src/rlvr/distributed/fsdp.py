"""FSDP2 for the policy and the reference: shard, gather a full copy, save/load the
optimizer with torch's distributed checkpointing (loads on any number of ranks).

    fully_shard(each decoder layer), then fully_shard(the whole model)

FSDP2 averages gradients over ranks (gloo has no pre-scaled sum, so the factor stays).
The trainer weights every rank's loss by the whole step's normaliser divided by the
number of ranks (rlvr.training.loop.minibatch_step): the average is then the sum of the
ranks' shares, the one-process gradient.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def decoder_layers(model: Any) -> list[torch.nn.Module]:
    """The transformer blocks (any family: *DecoderLayer / *Block), under LoRA too."""
    return [m for m in model.modules()
            if type(m).__name__.endswith(("DecoderLayer", "Block"))]


def shard(model: Any, device_type: str, world: int) -> Any:
    """Shard `model` in place over `world` ranks (one mesh dimension); returns it."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device_type, (world,))
    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def full_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """Every parameter and buffer, unsharded, on every rank (a collective: every rank
    calls it). Not `cpu_offload`: with it only rank 0 receives the tensors and the other
    ranks' samplers would silently keep their old weights."""
    from torch.distributed.checkpoint.state_dict import (StateDictOptions,
                                                         get_model_state_dict)

    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    if not state:
        raise RuntimeError("FSDP gave this rank an empty state dict")
    return state


def load_full_into(target: Any, state: dict[str, torch.Tensor]) -> None:
    """Copy a full state dict into an unsharded module (the sampler's copy), in place."""
    with torch.no_grad():
        own = target.state_dict()
        for name, tensor in state.items():
            own[name].copy_(tensor)


def save_optimizer(model: Any, optimizer: torch.optim.Optimizer, directory: Path) -> None:
    """Each rank writes its shards of the AdamW state (torch.distributed.checkpoint)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    dcp.save({"optimizer": get_optimizer_state_dict(model, optimizer)},
             checkpoint_id=str(directory))


def load_optimizer(model: Any, optimizer: torch.optim.Optimizer, directory: Path) -> None:
    """Load what `save_optimizer` wrote, resharded to this run's ranks."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import (get_optimizer_state_dict,
                                                         set_optimizer_state_dict)

    state = {"optimizer": get_optimizer_state_dict(model, optimizer)}
    dcp.load(state, checkpoint_id=str(directory))
    set_optimizer_state_dict(model, optimizer, state["optimizer"])


def grad_norm(norm: torch.Tensor) -> torch.Tensor:
    """A total norm over DTensor gradients is a DTensor: its full value."""
    full = getattr(norm, "full_tensor", None)
    return full() if full is not None else norm


def load_plain_optimizer(model: Any, names: list[str], optimizer: torch.optim.Optimizer,
                         state: dict[str, Any]) -> None:
    """A one-process run's `optimizer.state_dict()` (parameters by index, in the order of
    `names`: the trainable parameters' names) loaded onto the sharded `model`'s optimizer:
    a run checkpointed by one process resumes on several ranks."""
    from torch.distributed.checkpoint.state_dict import (StateDictOptions,
                                                         set_optimizer_state_dict)

    by_name = {"state": {names[i]: s for i, s in state["state"].items()},
               "param_groups": [{**group, "params": [names[i] for i in group["params"]]}
                                for group in state["param_groups"]]}
    set_optimizer_state_dict(model, optimizer, by_name,
                             options=StateDictOptions(full_state_dict=True))
