"""The writer's context budget: what a request may hold, given the server's `max_model_len`.

Parts are filled by priority (the task and its holes, then what to fix, then the API entries in play, then worked
examples); a part that does not fit is left out whole (a list part item by item), never cut mid-text. The reply
gets `max_tokens` from what is left, so a request never exceeds the context (a server would reject it with a 400).
Tokens are estimated (no tokenizer on the client): ceil(chars / CHARS_PER_TOKEN), deliberately pessimistic for code.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

CHARS_PER_TOKEN = 3.0  # code and JSON tokenize at 3-4 chars a token with BPE vocabularies; 3 errs on the safe side
MESSAGE_OVERHEAD = 8  # chat-template tokens per message
DEFAULT_CONTEXT = 8192  # when the server does not say (a scripted model, an old server)
MIN_REPLY = 256  # below this a reply cannot hold a tool call worth making
REPLY_SHARE = 0.25  # the reply's reserve out of the context
MAX_REPLY = 4096


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def messages_tokens(messages: list[dict], tools: list[dict] | None = None) -> int:
    n = sum(MESSAGE_OVERHEAD + estimate_tokens(m.get("content") or "")
            + estimate_tokens(json.dumps(m["tool_calls"]) if m.get("tool_calls") else "") for m in messages)
    return n + (estimate_tokens(json.dumps(tools)) if tools else 0)


@dataclass
class Part:
    """One section of a prompt. `items` parts are filled item by item; a plain part is taken whole or left out."""

    name: str
    priority: int  # lower first; priority 0 is required (the task itself)
    title: str
    text: str = ""
    items: list[str] = field(default_factory=list)


class ContextReport(BaseModel):
    """What the stage record says about a prompt: the budget and the tokens each part took."""

    max_model_len: int
    reply_reserve: int
    prompt_budget: int
    parts: dict[str, int] = Field(default_factory=dict)  # name -> estimated tokens included
    dropped: dict[str, int] = Field(default_factory=dict)  # name -> items (or 1 for a whole part) left out
    estimated: bool = True


def reply_reserve(max_model_len: int) -> int:
    return max(MIN_REPLY, min(MAX_REPLY, int(max_model_len * REPLY_SHARE)))


def fill(parts: list[Part], budget: int) -> tuple[str, dict[str, int], dict[str, int]]:
    """The message text of the parts that fit in `budget` tokens, in priority order, and per part the tokens taken
    and what was left out. Required parts (priority 0) are always taken."""
    used, taken, dropped = 0, {}, {}
    chosen: dict[str, str] = {}
    for p in sorted(parts, key=lambda p: p.priority):
        head = f"## {p.title}\n" if p.title else ""
        if p.items:
            keep, n = [], estimate_tokens(head)
            for it in p.items:
                t = estimate_tokens(it + "\n")
                if used + n + t <= budget or p.priority == 0:
                    keep.append(it)
                    n += t
                else:
                    dropped[p.name] = dropped.get(p.name, 0) + 1
            if keep:
                chosen[p.name] = head + "\n".join(keep)
                taken[p.name] = n
                used += n
            continue
        if not p.text.strip():
            continue
        t = estimate_tokens(head + p.text)
        if used + t <= budget or p.priority == 0:
            chosen[p.name] = head + p.text
            taken[p.name] = t
            used += t
        else:
            dropped[p.name] = 1
    order = [p.name for p in parts if p.name in chosen]  # the reading order is the order given, not the priority
    return "\n\n".join(chosen[n] for n in order), taken, dropped
