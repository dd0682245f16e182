"""OpenAI-compatible client for a local vLLM server, its launcher, and structured output.

- `ModelClient` (client.py): chat / structured / call_tool, streaming, cancel, retries; returns `ModelResult`.
- `HttpTransport` (transport.py): the real transport; `FakeTranscriptTransport` / `ScriptedModel`
  (scripted.py): replay recorded transcripts; `FakeOpenAIServer` (fake_server.py): a scripted server on a socket.
- `VllmServer` (server.py): launch / wait for / stop vLLM; `probe_endpoint` for an existing one.
"""

from tileport.local_models.client import ChatStream, ModelClient
from tileport.local_models.protocol import (
    CallRecord,
    CancelToken,
    EndpointInfo,
    FaultKind,
    ModelFault,
    ModelFaultError,
    ModelResult,
    ToolCall,
    Transport,
)
from tileport.local_models.scripted import FakeTranscriptTransport, ScriptedModel, load_transcript
from tileport.local_models.structured import ToolSpec
from tileport.local_models.transport import HttpTransport

__all__ = [
    "CallRecord", "CancelToken", "ChatStream", "EndpointInfo", "FakeTranscriptTransport", "FaultKind",
    "HttpTransport", "ModelClient", "ModelFault", "ModelFaultError", "ModelResult", "ScriptedModel", "ToolCall",
    "ToolSpec", "Transport", "load_transcript",
]
