"""Where models come from: local directories, GGUF files, and models that installed
packages carry. Never a hub download."""

from rlvr.models.resolve import KNOWN_PACKAGED_MODELS, ModelNotFound, import_gguf, resolve_model

__all__ = ["KNOWN_PACKAGED_MODELS", "ModelNotFound", "import_gguf", "resolve_model"]
