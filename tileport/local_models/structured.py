"""Structured output and tool calls: schemas from pydantic, validation, feedback, text tool calls.

vLLM honours `response_format={"type": "json_schema", ...}` (xgrammar); the old `guided_json`
fields are silently ignored, so they are never sent. A reply is data only after it validates.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from pydantic import BaseModel, ValidationError

from tileport.local_models.protocol import ToolCall

MAX_ERRORS_FED_BACK = 8


def schema_name(model: type[BaseModel], name: str | None = None) -> str:
    raw = name or model.__name__
    return re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:64]


def response_format_for(model: type[BaseModel], name: str | None = None) -> dict:
    return {
        "type": "json_schema",
        "json_schema": {"name": schema_name(model, name), "schema": model.model_json_schema(), "strict": True},
    }


@dataclass
class ToolSpec:
    """A tool the model may call; `parameters` is a pydantic model (validated) or a raw JSON schema."""

    name: str
    description: str
    parameters: type[BaseModel] | dict

    def schema(self) -> dict:
        if isinstance(self.parameters, dict):
            return self.parameters
        return self.parameters.model_json_schema()

    def to_openai(self) -> dict:
        # "strict": vLLM 0.32 pins the arguments to the schema only for strict tools; without it
        # tool_choice "required"/named constrains the call envelope but not the arguments.
        return {
            "type": "function",
            "function": {
                "name": self.name, "description": self.description, "parameters": self.schema(), "strict": True,
            },
        }

    def validate_arguments(self, arguments: dict) -> tuple[dict | None, str | None]:
        """(arguments, None) if they fit, else (None, error text for the model)."""
        if isinstance(self.parameters, dict):
            return arguments, None
        try:
            return self.parameters.model_validate(arguments).model_dump(mode="json"), None
        except ValidationError as e:
            return None, describe_validation_error(e)


def _strip_fence(text: str) -> str:
    t = text.strip()
    m = re.fullmatch(r"```(?:json)?\s*\n?(.*?)\n?```", t, flags=re.S)
    return m.group(1).strip() if m else t


def describe_validation_error(e: ValidationError) -> str:
    lines = []
    for err in e.errors()[:MAX_ERRORS_FED_BACK]:
        loc = ".".join(str(p) for p in err["loc"]) or "(the whole object)"
        lines.append(f"{loc}: {err['msg']}")
    extra = len(e.errors()) - MAX_ERRORS_FED_BACK
    if extra > 0:
        lines.append(f"... and {extra} more")
    return "; ".join(lines)


def parse_structured(model: type[BaseModel], text: str) -> tuple[BaseModel | None, str | None]:
    """(instance, None) if `text` is JSON that validates against `model`, else (None, error text)."""
    body = _strip_fence(text)
    if not body:
        return None, "the reply was empty; a JSON object was expected"
    try:
        data = json.loads(body)
    except ValueError as e:
        return None, f"the reply is not valid JSON ({e})"
    try:
        return model.model_validate(data), None
    except ValidationError as e:
        return None, describe_validation_error(e)


def schema_feedback(error: str, name: str, truncated: bool) -> str:
    cut = " Your reply was cut off at the token limit: keep it shorter." if truncated else ""
    return (
        f"Your previous reply was rejected because it does not match the JSON schema '{name}': {error}.{cut} "
        "Reply again with only one JSON object that matches the schema."
    )


def tool_feedback(error: str) -> str:
    return f"Tool call rejected: the arguments do not match the tool's parameters: {error}. Call the tool again."


def decode_arguments(raw: Any) -> tuple[dict | None, str | None]:
    if isinstance(raw, dict):
        return raw, None
    if raw is None or raw == "":
        return {}, None
    try:
        val = json.loads(raw)
    except (TypeError, ValueError) as e:
        val = _repaired(raw)
        if val is None:
            return None, f"arguments are not valid JSON ({e})"
    if not isinstance(val, dict):
        return None, "arguments must be a JSON object"
    return val, None


def _repaired(raw: Any) -> dict | None:
    """One repair of arguments small models garble: a code fence around them, or text after the object."""
    if not isinstance(raw, str):
        return None
    body = _strip_fence(raw)
    start = body.find("{")
    if start < 0:
        return None
    try:
        val, _ = json.JSONDecoder().raw_decode(body, start)
    except ValueError:
        return None
    return val if isinstance(val, dict) else None


# --------------------------------------------------------------------------------------------
# Tool calls that came back as plain text


def _json_objects(text: str) -> list[Any]:
    """Every top-level JSON value that starts with `{` or `[` in `text` (tags and fences ignored)."""
    dec = json.JSONDecoder()
    found: list[Any] = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                val, end = dec.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            found.append(val)
            i = end
        else:
            i += 1
    return found


def _as_call(obj: Any, tool_names: Sequence[str]) -> tuple[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI-shaped {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str):
        return None
    args_key = next((k for k in ("arguments", "parameters", "args") if k in obj), None)
    if name in tool_names or (args_key is not None and set(obj) <= {"name", args_key, "id", "type"}):
        return name, obj.get(args_key) if args_key else {}
    return None


def find_text_tool_calls(text: str, tool_names: Sequence[str]) -> list[ToolCall]:
    """Tool calls written into the content instead of `tool_calls` (a tool-call parser problem).

    Recognises `{"name": ..., "arguments": ...}` (also "parameters"), a list of them, the
    OpenAI `{"function": {...}}` shape, bare or inside ``` fences or <tool_call> tags.
    """
    calls: list[ToolCall] = []
    for val in _json_objects(text):
        for obj in val if isinstance(val, list) else [val]:
            hit = _as_call(obj, tool_names)
            if hit is None:
                continue
            name, raw = hit
            args, _ = decode_arguments(raw)
            calls.append(
                ToolCall(
                    id=f"text-call-{len(calls)}",
                    name=name,
                    arguments=args or {},
                    raw_arguments=raw if isinstance(raw, str) else json.dumps(raw),
                )
            )
    return calls


TOOL_CALL_AS_TEXT_MESSAGE = (
    "the server returned a tool call as plain text instead of in `tool_calls`: its tool-call parser is "
    "missing or does not fit the model. Start vLLM with --enable-auto-tool-choice --tool-call-parser hermes "
    "(Qwen coder models), or call with tool_choice='required'"
)
