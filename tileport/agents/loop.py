"""The one agent loop every model-driven stage shares (aider's shape: the loop once, each agent a small subclass
whose prompt is a file under agents/prompts/).

    class KernelWriterLoop(AgentLoop):
        prompt = "kernel_writer"; tools = [...]; verdict_schema = KernelWriterVerdict
        def user_message(self, task): ...
        def handle(self, call, task) -> str: ...      # run one tool call, return what the model reads
        def done(self, call, output, task) -> bool: ... # enough: ask for the structured verdict

The loop: system + user message -> tool calls (tool_choice required), each executed and fed back -> when `done`
(or the turn budget is spent) one structured reply validated against `verdict_schema`. A model fault (server
down, schema never met, tool call as text) ends the loop with the fault as data; tokens are summed over every
request made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, ClassVar

from pydantic import BaseModel

from tileport.local_models.client import ModelClient
from tileport.local_models.protocol import CancelToken, ModelFault, ModelResult, ToolCall
from tileport.local_models.structured import ToolSpec
from tileport.records import TokenUsage

_VERSION_RE = re.compile(r"^<!--\s*prompt:\s*(\S+)\s+v(\d+)\s*-->\s*$", re.M)


@dataclass(frozen=True)
class Prompt:
    name: str
    version: int
    text: str

    @property
    def label(self) -> str:
        return f"{self.name}@v{self.version}"


@lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    """agents/prompts/<name>.md; its first line `<!-- prompt: NAME vN -->` versions it."""
    text = resources.files("tileport.agents.prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")
    m = _VERSION_RE.search(text.splitlines()[0] if text else "")
    if not m or m.group(1) != name:
        raise ValueError(f"prompt {name}.md must start with '<!-- prompt: {name} vN -->'")
    return Prompt(name, int(m.group(2)), text.split("\n", 1)[1].strip())


@dataclass
class LoopResult:
    verdict: BaseModel | None = None
    fault: ModelFault | None = None
    tokens: TokenUsage = field(default_factory=TokenUsage)
    model_id: str | None = None
    requests: int = 0
    turns: int = 0
    tool_calls: list[str] = field(default_factory=list)
    prompt: str = ""

    @property
    def ok(self) -> bool:
        return self.fault is None and self.verdict is not None


class AgentLoop:
    prompt: ClassVar[str]
    tools: ClassVar[list[ToolSpec]] = []
    verdict_schema: ClassVar[type[BaseModel]]
    max_turns: ClassVar[int] = 8

    def __init__(self, client: ModelClient, cancel: CancelToken | None = None, limit: Any = None):
        self.client = client
        self.cancel = cancel
        self.limit = limit  # a semaphore bounding concurrent model calls, or None

    # subclass hooks ------------------------------------------------------------------------------
    def user_message(self, task: Any) -> str:
        raise NotImplementedError

    def handle(self, call: ToolCall, task: Any) -> str:
        raise NotImplementedError(call.name)

    def done(self, call: ToolCall, output: str, task: Any) -> bool:
        return False

    # the loop ------------------------------------------------------------------------------------
    def _call(self, fn, *args, **kw) -> ModelResult:
        if self.limit is None:
            return fn(*args, **kw)
        with self.limit:
            return fn(*args, **kw)

    def _account(self, out: LoopResult, r: ModelResult) -> None:
        out.tokens = out.tokens + r.usage
        out.requests += len(r.calls)
        out.model_id = r.model_id or out.model_id

    def run(self, task: Any) -> LoopResult:
        p = load_prompt(self.prompt)
        out = LoopResult(prompt=p.label)
        messages: list[dict] = [{"role": "system", "content": p.text},
                                {"role": "user", "content": self.user_message(task)}]
        for _ in range(self.max_turns if self.tools else 0):
            r = self._call(self.client.call_tool, messages, self.tools, tool_choice="required", cancel=self.cancel)
            self._account(out, r)
            if not r.ok:
                out.fault = r.fault
                return out
            out.turns += 1
            messages.append({"role": "assistant", "content": r.text or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in r.tool_calls]})
            finished = False
            for c in r.tool_calls:
                output = self.handle(c, task)
                out.tool_calls.append(c.name)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": output})
                finished |= self.done(c, output, task)
            if finished:
                break
        r = self._call(self.client.structured, messages, self.verdict_schema, cancel=self.cancel)
        self._account(out, r)
        if not r.ok:
            out.fault = r.fault
        else:
            out.verdict = r.value
        return out
