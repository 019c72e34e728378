"""How the graded completion is made safe to quote inside the judge's prompt.

`neutralise` turns the completion into text that no common chat template can read as
a control token and no reader can take for the end of the data block:

1. NFKC normalisation first, so compatibility forms fold onto the ASCII they imitate
   (full-width `［［`, `｜`, `＜`, `｛`, ligatures, ...) and every later rule sees them.
   It changes what the judge reads (`x²` becomes `x2`, `ﬁ` becomes `fi`): the meaning
   a grader needs survives; the lookalikes do not.
2. Every control token of the templates in `CONTROL_TOKENS`, and every `<|...|>`-shaped
   one of any template, is broken by a space after its first character (`<|im_end|>`
   -> `< |im_end| >`, `[INST]` -> `[ INST]`, `<start_of_turn>` -> `< start_of_turn>`).
   A tokenizer matches special tokens as exact strings, so the broken text tokenizes
   as ordinary text (tests/test_judge_quoting.py checks it with each tokenizer that is
   installed).
3. Every `[[` and `]]` is broken (`[ [`, `] ]`), and every closer-shaped phrase, in any
   brackets or none, has its keyword broken: `END ANSWER`, `end-of-answer`,
   `[/ANSWER]` -> `END ANS WER`, `end-of-ANS WER`, `[/ANS WER]`. So neither the block's
   markers nor text that reads like them survive inside the data.

Each break is one inserted space; `neutralise` counts them (0 for ordinary text).
"""

from __future__ import annotations

import re
import unicodedata

# The control tokens of common chat templates (as their tokenizers spell them). The
# `<|...|>` family needs no entry to be broken (rule 2 catches the shape) but is listed
# so the table says which template each token belongs to.
CONTROL_TOKENS: dict[str, tuple[str, ...]] = {
    "chatml": ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_sep|>"),
    "llama3": ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
               "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"),
    "llama2": ("<s>", "</s>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>"),
    "mistral": ("[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]",
                "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[THINK]",
                "[/THINK]"),
    "gemma": ("<bos>", "<eos>", "<pad>", "<start_of_turn>", "<end_of_turn>",
              "<start_of_image>", "<end_of_image>"),
    "deepseek": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>",
                 "<｜Assistant｜>", "<｜tool▁calls▁begin｜>", "<think>", "</think>"),
    "phi": ("<|system|>", "<|user|>", "<|assistant|>", "<|end|>"),
    "command_r": ("<BOS_TOKEN>", "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>",
                  "<|SYSTEM_TOKEN|>", "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>"),
    "glm": ("[gMASK]", "[sMASK]", "<sop>", "<eop>"),
    "harmony": ("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>",
                "<|call|>"),
    "qwen_tools": ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"),
    "starcoder_smollm": ("<repo_name>", "<reponame>", "<file_sep>", "<filename>",
                         "<gh_stars>", "<issue_start>", "<issue_comment>", "<issue_closed>",
                         "<jupyter_start>", "<jupyter_text>", "<jupyter_code>",
                         "<jupyter_output>", "<jupyter_script>", "<empty_output>",
                         "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>"),
    "generic": ("<unk>", "<mask>", "<|pad|>", "<|unk|>"),
}


def fold(text: str) -> str:
    """NFKC, the form every check and the quoting work on."""
    return unicodedata.normalize("NFKC", text)


def _table_pattern() -> re.Pattern[str]:
    tokens = {fold(t) for family in CONTROL_TOKENS.values() for t in family}
    tokens = {t for t in tokens if not t.startswith("<|")}  # the shape rule has those
    alternatives = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(f"(?:{alternatives})", re.I)


_TABLE = _table_pattern()
# Where a space goes after NFKC: inside `[[`, `]]`, `<|`, `|>`.
_SHAPES = re.compile(r"\[(?=\[)|\](?=\])|<(?=\|)|\|(?=>)")
# A closer-shaped phrase: END [OF] ANSWER joined by spaces, dashes or underscores (any
# brackets around it), or /ANSWER (a closing tag's shape). The space goes into
# "ANSWER" ("ANS WER"); "in the end, answer..." is left alone.
_CLOSER = re.compile(r"(\bend(?:[ \t_-]*of)?[ \t_-]*|/[ \t]*)ans(?=wer\b)", re.I)


def neutralise(completion: str) -> tuple[str, int]:
    """The completion as it is quoted (see the module doc), and how many spaces the
    breaks took (0 for ordinary text)."""
    text = fold(completion)
    text, table = _TABLE.subn(lambda m: m.group(0)[0] + " " + m.group(0)[1:], text)
    text, shapes = _SHAPES.subn(lambda m: m.group(0) + " ", text)
    text, closers = _CLOSER.subn(lambda m: m.group(0) + " ", text)
    return text, table + shapes + closers
