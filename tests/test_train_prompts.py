"""Prompt rendering and the warm-start's worked solutions, against hand-written text."""

from __future__ import annotations

import random

import pytest

from rlvr.data.prompts import PromptError, PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.data.worked import column_addition
from rlvr.training.tiny import char_tokenizer
from rlvr.verifiers.exact import ExactVerifier

RECORD = TaskRecord(prompt="12+34=", reference="46", verifier="exact", id="r1")
CHAT = TaskRecord(prompt=[{"role": "user", "content": "2+2?"}], reference="4",
                  verifier="exact", id="r2")
TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<assistant>{% endif %}")


def test_plain_template_with_bos_and_instruction():
    tokenizer = char_tokenizer()
    assert PromptRenderer(tokenizer).render(RECORD) == "<s>12+34="
    renderer = PromptRenderer(tokenizer, template="Q: {prompt}\n{instruction}\nA:",
                              instruction="Answer after ####.")
    assert renderer.render(RECORD) == "Q: 12+34=\nAnswer after ####.\nA:"
    assert renderer.render(CHAT) == "Q: 2+2?\nAnswer after ####.\nA:"
    # the BOS text becomes the BOS token, not five characters
    ids = tokenizer(PromptRenderer(tokenizer).render(RECORD), add_special_tokens=False)["input_ids"]
    assert ids[0] == tokenizer.bos_token_id and len(ids) == 1 + len("12+34=")


def test_chat_template_with_system_prompt_and_instruction():
    tokenizer = char_tokenizer()
    tokenizer.chat_template = TEMPLATE
    renderer = PromptRenderer(tokenizer, style="chat", system_prompt="Be brief.",
                              instruction="End with #### N.")
    assert renderer.render(RECORD) == ("<system>Be brief.\n<user>12+34=\n\nEnd with #### N.\n"
                                       "<assistant>")
    assert PromptRenderer(tokenizer, style="chat").render(CHAT) == "<user>2+2?\n<assistant>"


def test_bad_prompt_settings_are_refused():
    with pytest.raises(PromptError, match="chat template"):
        PromptRenderer(char_tokenizer(), style="chat")
    with pytest.raises(PromptError, match="question"):
        PromptRenderer(char_tokenizer(), template="{question}")


@pytest.mark.parametrize("a,b,forget,expected", [
    (347, 285, 0.0, "7+5=12;4+8+1=13;3+2+1=6;#### 632"),
    (347, 285, 1.0, "7+5=12;4+8=12;3+2=5;#### 522"),   # both carries dropped
    (95, 17, 0.0, "5+7=12;9+1+1=11;#### 112"),
    (95, 17, 1.0, "5+7=12;9+1=10;#### 102"),           # the final carry is still written
    (40, 5, 0.0, "0+5=5;4+0=4;#### 45"),
])
def test_column_addition_by_hand(a, b, forget, expected):
    text = column_addition(a, b, random.Random(0), forget)
    assert text == expected
    assert ExactVerifier().verify(text, str(a + b)).passed == (forget == 0.0)
