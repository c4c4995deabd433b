"""Turning an observation text into prompt token ids, one way for every tokenizer-based backend."""

from __future__ import annotations

from typing import Any


def chat_prompt_ids(tokenizer: Any, text: str, system_prompt: str | None = None, use_chat_template: bool = True
               ) -> list[int]:
    """The prompt token ids for an observation text: the tokenizer's chat template (user message = ``text``, an
    optional system message first, the generation prompt appended) when it has one and ``use_chat_template``;
    otherwise the plain text, with the system prompt as a first paragraph."""
    if use_chat_template and getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages.append({"role": "user", "content": text})
        rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return list(tokenizer(rendered, add_special_tokens=False)["input_ids"])
    if system_prompt:
        text = f"{system_prompt}\n\n{text}"
    return list(tokenizer(text)["input_ids"])
