"""A tiny transformer and a character-level tokenizer, built locally (no downloads).

Used by the embedded default run and by tests: a real transformers architecture
(Llama) with a few hundred thousand parameters, saved as a normal model directory so
`AutoModelForCausalLM.from_pretrained` / `AutoTokenizer.from_pretrained` load it.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
# Every printable ASCII character is one token, so any prompt template tokenizes.
CHARS = [c for c in string.printable if c not in "\t\r\x0b\x0c"]


def char_tokenizer() -> PreTrainedTokenizerFast:
    """One token per character; BOS/EOS/PAD/UNK specials. Decoding fuses characters back."""
    vocab = {token: i for i, token in enumerate([PAD, BOS, EOS, UNK] + CHARS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOS,
                                   pad_token=PAD, unk_token=UNK, padding_side="left")


@dataclass(frozen=True)
class TinyModelSpec:
    """Shape of the tiny Llama (defaults: ~0.8M parameters, fast on two CPU cores)."""

    hidden_size: int = 128
    intermediate_size: int = 384
    num_layers: int = 4
    num_heads: int = 4
    max_positions: int = 128


def tiny_llama(tokenizer: PreTrainedTokenizerFast, spec: TinyModelSpec = TinyModelSpec(),
               seed: int = 0) -> LlamaForCausalLM:
    """A freshly initialised tiny Llama for `tokenizer` (deterministic given `seed`)."""
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size, num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads, num_key_value_heads=spec.num_heads,
        max_position_embeddings=spec.max_positions, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, attention_dropout=0.0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model


def build_tiny(directory: str | Path, spec: TinyModelSpec = TinyModelSpec(), seed: int = 0) -> Path:
    """Write a fresh tiny model + tokenizer to `directory` (a normal HF model dir)."""
    directory = Path(directory)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, spec, seed)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
