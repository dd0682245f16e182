"""The one agent loop every model-driven stage shares (aider's shape: the loop once, each agent a small subclass
whose prompt is a file under agents/prompts/).

    class KernelWriterLoop(AgentLoop):
        prompt = "kernel_writer"; verdict_schema = KernelWriterVerdict
        def tools_for(self, task): ...                  # the tools this task offers
        def user_message(self, task): ...               # within self.prompt_budget tokens
        def handle(self, call, task, room) -> str: ...  # run one tool call, return what the model reads (<= room)
        def done(self, call, output, task) -> bool: ... # enough: ask for the structured verdict

The loop: system + user message -> tool calls (tool_choice required), each executed and fed back -> when `done`
(or the turn budget is spent) one structured reply validated against `verdict_schema`, with the same tools in the
request (a prefix-caching server reuses the conversation's prefix). Every request gets `max_tokens` from the
context budget (the server's max_model_len less the estimated prompt), so no request overflows the context; when
too little is left the loop stops and says so. A model fault ends the loop with the fault as data; tokens are
summed over every request made; every request and reply is kept (`LoopResult.transcript`) as evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, ClassVar

from pydantic import BaseModel

from tileport.agents import budget as bd
from tileport.local_models.client import ModelClient
from tileport.local_models.protocol import CancelToken, FaultKind, ModelFault, ModelResult, ToolCall
from tileport.local_models.structured import ToolSpec
from tileport.records import TokenUsage

_INPUT_TOKENS = re.compile(r"has (\d+) input tokens|\((\d+) in the messages")
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


class TranscriptEntry(BaseModel):
    """One logical model call of a stage: what was asked (the conversation so far is `messages[:n_messages]` of
    the transcript) and what came back."""

    kind: str  # "tool_call" | "verdict"
    n_messages: int
    max_tokens: int | None = None
    prompt_tokens_estimate: int = 0
    text: str = ""
    tool_calls: list[dict] = []
    finish_reason: str | None = None
    usage: TokenUsage = TokenUsage()
    requests: int = 0  # HTTP requests made for it (transport and schema retries included)
    seconds: float = 0.0
    fault: str | None = None
    notes: list[str] = []


class Transcript(BaseModel):
    prompt: str
    max_model_len: int
    context: bd.ContextReport | None = None
    messages: list[dict] = []
    calls: list[TranscriptEntry] = []


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
    stop: str = ""  # why the tool loop ended
    transcript: Transcript | None = None

    @property
    def ok(self) -> bool:
        return self.fault is None and self.verdict is not None


class AgentLoop:
    prompt: ClassVar[str]
    tools: ClassVar[list[ToolSpec]] = []
    verdict_schema: ClassVar[type[BaseModel]]
    max_turns: ClassVar[int] = 8

    def __init__(self, client: ModelClient, cancel: CancelToken | None = None, limit: Any = None,
                 max_model_len: int | None = None):
        self.client = client
        self.cancel = cancel
        self.limit = limit  # a semaphore bounding concurrent model calls, or None
        self.max_model_len = max_model_len or bd.DEFAULT_CONTEXT
        self.prompt_budget = 0  # tokens the user message may take (set by run)
        self.context: bd.ContextReport | None = None  # what user_message put in, per part
        self.scale = 1.0  # the server's prompt_tokens over our estimate, once a reply has told us (>= 1)

    # subclass hooks ------------------------------------------------------------------------------
    def tools_for(self, task: Any) -> list[ToolSpec]:
        return list(self.tools)

    def user_message(self, task: Any) -> str:
        raise NotImplementedError

    def handle(self, call: ToolCall, task: Any, room: int) -> str:
        raise NotImplementedError(call.name)

    def done(self, call: ToolCall, output: str, task: Any) -> bool:
        return False

    def stop_reason(self, turns: int) -> str:
        return f"turn cap reached ({turns} turns)"

    def finish_reason(self) -> str:
        """Why `done` said enough."""
        return "done"

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

    def _room(self, messages: list[dict], tools: list[dict] | None) -> tuple[int, int]:
        """(estimated prompt tokens, max_tokens left for the reply)."""
        used = int(bd.messages_tokens(messages, tools) * self.scale)
        return used, min(bd.MAX_REPLY, self.max_model_len - used)

    def _overflowed(self, est: int, r: ModelResult) -> bool:
        """The server refused the request for its length (HTTP 400 naming the context length): learn its count of
        the prompt from the message and say so, so the caller retries once with a max_tokens that fits."""
        if r.fault is None or r.fault.kind != FaultKind.HTTP_ERROR or "context length" not in r.fault.message:
            return False
        m = _INPUT_TOKENS.search(r.fault.message)
        counted = int(m.group(1) or m.group(2)) if m else int(est * 1.3)
        self.scale = max(self.scale * 1.05, self.scale * counted / max(1, est) * 1.05)
        return True

    def _tool_turn(self, out: LoopResult, messages: list[dict], tools: list, openai_tools: list[dict] | None
                   ) -> tuple[int, ModelResult] | None:
        """One tool-call request with max_tokens from the room left: (estimated prompt tokens, result), or None
        (and `out.stop` says why) when the context has no room for a reply."""
        est, room = self._room(messages, openai_tools)
        if room < bd.MIN_REPLY:
            out.stop = f"context full: {est} of {self.max_model_len} tokens used"
            return None
        r = self._call(self.client.call_tool, messages, tools, tool_choice="required", max_tokens=room,
                       salvage_text_tool_calls=True, cancel=self.cancel)
        self._account(out, r)
        self._log(out, "tool_call", len(messages), est, room, r)
        return est, r

    def _calibrate(self, est: int, r: ModelResult) -> None:
        """Learn from the server's count: a tokenizer that packs fewer chars a token than estimated raises scale."""
        if est and r.usage.prompt_tokens and len(r.calls) == 1 and r.usage.prompt_tokens > est:
            self.scale = max(self.scale, self.scale * r.usage.prompt_tokens / est * 1.05)

    def _log(self, out: LoopResult, kind: str, n: int, est: int, max_tokens: int, r: ModelResult) -> None:
        assert out.transcript is not None
        out.transcript.calls.append(TranscriptEntry(
            kind=kind, n_messages=n, max_tokens=max_tokens, prompt_tokens_estimate=est, text=r.text,
            tool_calls=[{"id": c.id, "name": c.name, "arguments": c.arguments} for c in r.tool_calls],
            finish_reason=r.finish_reason, usage=r.usage, requests=len(r.calls),
            seconds=round(sum(c.seconds for c in r.calls), 3),
            fault=f"{r.fault.kind.value}: {r.fault.message}" if r.fault else None, notes=list(r.notes)))

    def run(self, task: Any) -> LoopResult:
        p = load_prompt(self.prompt)
        tools = self.tools_for(task)
        openai_tools = [t.to_openai() for t in tools] or None
        reserve = bd.reply_reserve(self.max_model_len)
        system = {"role": "system", "content": p.text}
        self.prompt_budget = max(0, self.max_model_len - reserve - bd.messages_tokens([system], openai_tools)
                                 - bd.MESSAGE_OVERHEAD)
        messages: list[dict] = [system, {"role": "user", "content": self.user_message(task)}]
        out = LoopResult(prompt=p.label, transcript=Transcript(prompt=p.label, max_model_len=self.max_model_len,
                                                               context=self.context))
        finished = False
        for _ in range(self.max_turns if tools else 0):
            turn = self._tool_turn(out, messages, tools, openai_tools)
            if turn is not None and self._overflowed(*turn):
                # our estimate was short of the server's count: once more, within it
                turn = self._tool_turn(out, messages, tools, openai_tools)
            if turn is None:
                break
            est, r = turn
            self._calibrate(est, r)
            if not r.ok:
                out.fault = r.fault
                out.transcript.messages = messages
                return out
            out.turns += 1
            messages.append({"role": "assistant", "content": r.text or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in r.tool_calls]})
            for c in r.tool_calls:
                _, left = self._room(messages, openai_tools)
                output = self.handle(c, task, max(0, left - bd.MIN_REPLY))
                out.tool_calls.append(c.name)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": output})
                finished |= self.done(c, output, task)
            if finished:
                break
        if not out.stop:
            out.stop = self.finish_reason() if finished else self.stop_reason(out.turns)
        est, room = self._room(messages, openai_tools)
        if room < bd.MIN_REPLY // 2:
            out.stop += "; no room left for the verdict"
            out.transcript.messages = messages
            return out
        r = self._call(self.client.structured, messages, self.verdict_schema, tools=tools, max_tokens=room,
                       cancel=self.cancel)
        self._account(out, r)
        self._log(out, "verdict", len(messages), est, room, r)
        out.transcript.messages = messages
        if not r.ok:
            out.fault = r.fault
        else:
            out.verdict = r.value
        return out
