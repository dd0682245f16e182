"""OpenAI-compatible client for a local vLLM server, its launcher, and structured output."""
