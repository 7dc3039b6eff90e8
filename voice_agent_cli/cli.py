"""``voice-agent``: run the local stack, measure it, accept an endpoint, audit the environment.

    voice-agent dev [--host 127.0.0.1] [--port 8000] [--tts-url ws://...] [--model demo]
                    [--agent package.module:function]
                    [--tts-port 8080] [--engine onnx|torch] [--model-dir PATH]
                    [--allow-origin https://app.example.com ...] [--protocol http|agui]
    voice-agent bench [--quick] [--tts-url ws://...] [--agent-url URL | --agent-arn ARN]
    voice-agent acceptance (TTS-URL | --endpoint NAME --region R)
    voice-agent audit [--allow-offline] [--env PATH ...]

Without ``--tts-url``, ``dev`` starts the local TTS server (``tts-server``, embedded CPU model,
or ``--engine``/``--model-dir``) as a child process on ``--tts-port`` and waits until its
``/ping`` proves a real synthesis. Both ports are bound before the URL is printed; a port in
use, or a TTS server that does not come up, is one line on stderr and exit status 3; a model
spec that names no model, or a ``VOICE_AGENT_PROTOCOL`` that names no protocol, one line and exit
status 2, before anything starts. A dev server that does not start is one line and exit status 3
too. Ctrl+C or SIGTERM stops any command with one line (what ended, what was kept), its child
processes ended, and the process ends by the signal (a shell's status 130 or 143:
``observability.stopping``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from agent.config import AgentConfig
from agent.doors.protocols import (
    PROTOCOL_VARIABLE,
    PROTOCOLS,
    Protocol,
    ProtocolSettingError,
    protocol_from_env,
)
from observability import logs, tracing
from observability.stopping import as_stop, end_stopped, stop_line, stops_caught
from voice_agent_cli.local_tts import LocalTTSFailed, PortInUse, bind, local_sagemaker, local_tts
from voice_agent_cli.serving import BadSetting, ServerFailed, serve_dev, settings_from_env
from voice_agent_cli.stop_lines import CUT, KEPT, chosen, command_name

EXIT_NOT_STARTED = 3  # a port in use, the TTS child never healthy, the server not started
# (uvicorn's own code for a failed start)
EXIT_BAD_VALUE = 2  # a model spec or agent factory that builds nothing (argparse's status)
ENGINES = ("onnx", "torch")  # tts-server's --engine choices (tts_server.settings.EngineName)
WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # every interface: its names are the user's to list
TOOLS: tuple[tuple[str, str, str], ...] = (  # command, its module (imported when chosen), help
    (
        "bench",
        "bench.latency.agent_latency",
        "latency benchmark: first audio vs. completion, stream vs. batch",
    ),
    (
        "acceptance",
        "tts_client.acceptance",
        "acceptance test of a TTS endpoint; exit 1 on any failure",
    ),
    ("audit", "devtools.audit", "dependency floors, vulnerability scan and SBOMs"),
    (
        "chat",
        "voice_agent_cli.chat",
        "talk to the agent over its WebSocket (/ws), locally or on AgentCore",
    ),
    ("deploy", "deploy.cli", "deploy the TTS endpoint and the agent runtime to AWS (boto3)"),
)


def dev(args: argparse.Namespace) -> int:
    """Start the dev server (and the local TTS server unless ``--tts-url`` is given)."""
    from agent.core.factory import AgentFactoryError
    from agent.core.llm import ModelSpecError

    try:
        _dev(args)
    except ModelSpecError as exc:
        print(f"voice-agent dev: --model or VOICE_AGENT_MODEL: {exc}", file=sys.stderr)
        return EXIT_BAD_VALUE
    except (BadSetting, ProtocolSettingError) as exc:
        print(f"voice-agent dev: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_VALUE
    except AgentFactoryError as exc:
        print(f"voice-agent dev: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_VALUE
    except (PortInUse, LocalTTSFailed, ServerFailed) as exc:
        print(f"voice-agent dev: {exc}", file=sys.stderr, flush=True)
        return EXIT_NOT_STARTED
    return 0


def _dev(args: argparse.Namespace) -> None:
    from agent.core.factory import VoiceFactory
    from agent.core.llm import parse_model_spec
    from agent.doors.devserver import create_app

    config = settings_from_env()
    protocol = args.protocol or protocol_from_env()  # before anything starts, as the next
    if args.model:
        config = replace(config, model=args.model)
    parse_model_spec(config.model)  # before anything starts: a TTS warm-up takes seconds
    if args.agent:
        if os.getcwd() not in sys.path:  # the user's module, from their project (uvicorn's way)
            sys.path.insert(0, os.getcwd())
        if args.model:  # for a factory that reads it (make_model())
            os.environ["VOICE_AGENT_MODEL"] = args.model
        config = replace(config, agent_factory=args.agent)
    # checked before anything starts too: a factory that cannot build an Agent, status 2
    factory = VoiceFactory.check(config.agent_factory, config.model)
    config = replace(config, agent_factory=factory)
    logs.configure("INFO")  # LOG_FORMAT: text (the default here) or json
    tracing.configure("voice-agent")  # on with the OTEL_* variables
    if args.allow_origin:
        config = replace(config, allow_origins=tuple(args.allow_origin))
    config = replace(config, allow_hosts=served_hosts(config, args))
    speech = {"engine": args.engine, "model_dir": args.model_dir}
    with contextlib.ExitStack() as stack:
        listening = stack.enter_context(bind(args.host, args.port, "--port"))  # before all else
        tts_url = args.tts_url or os.environ.get("TTS_URL")
        if args.tts == "sagemaker-local":  # the production leg, locally: real SDK, emulator
            emulator = local_sagemaker(args.host, args.tts_port, 8443, **speech)
            os.environ.update(stack.enter_context(emulator))
            os.environ.setdefault("AWS_REGION", "us-east-1")
            from_env = settings_from_env()  # now naming the emulator's endpoint
            keep = {
                "model": config.model,
                "agent_factory": config.agent_factory,
                "allow_origins": config.allow_origins,
            }
            config = replace(from_env, **keep, allow_hosts=config.allow_hosts)
        elif not tts_url and not config.sagemaker_endpoint:
            tts_url = stack.enter_context(local_tts(args.host, args.tts_port, "warning", **speech))
        if tts_url:
            config = replace(config, tts_url=tts_url)
        app = create_app(config, protocol=protocol)
        print(banner(f"{args.host}:{args.port}", config, factory.name, protocol), flush=True)
        serve_dev(app, listening, args.host)


def banner(address: str, config: AgentConfig, agent: str, protocol: Protocol) -> str:
    """What the dev server at ``address`` (host:port) says it serves: the voice chat (ours), or,
    with ``--protocol agui``, AG-UI on ``/invocations`` and ``/ws`` and its client page."""
    demo = " (offline demo model, not a real LLM)" if config.model == "demo" else ""
    if protocol == "agui":
        served = (
            f"  AG-UI page:  http://{address}/\n"
            f"  AG-UI:       POST http://{address}/invocations (SSE), ws://{address}/ws "
            "(docs/agui.md)\n"
        )
    else:
        served = f"  voice chat:  http://{address}/\n"
    return (
        f"\n{served}"
        f"  model:       {config.model}{demo}\n"
        f"  agent:       {agent}\n"
        f"  speech:      {config.sagemaker_endpoint or config.tts_url}\n"
    )


def served_hosts(config: AgentConfig, args: argparse.Namespace) -> tuple[str, ...]:
    """The host names the dev server answers to: ``--allow-host`` (or the environment's), and
    the ``--host`` it binds unless that is a wildcard address."""
    hosts = tuple(args.allow_host) if args.allow_host else config.allow_hosts
    if args.host not in WILDCARD_HOSTS and args.host not in hosts:
        hosts += (args.host,)
    return hosts


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``voice-agent`` parser; of the tools, only ``command``'s module is imported."""
    parser = argparse.ArgumentParser(prog="voice-agent", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    _add_dev(commands)
    for name, module_name, summary in TOOLS:
        _add_tool(commands, name, module_name, summary, chosen=name == command)
    return parser


def _add_dev(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``voice-agent dev``: where it listens, its speech, its agent, who may use it."""
    dev_parser = commands.add_parser("dev", help="run the local dev server and voice chat")
    dev_parser.add_argument("--host", default="127.0.0.1")
    dev_parser.add_argument("--port", type=int, default=8000)
    _add_speech_arguments(dev_parser)
    dev_parser.add_argument("--model", help="demo | bedrock:<id> | openai:<base-url>#<model>")
    dev_parser.add_argument(
        "--agent",
        metavar="MODULE:FUNCTION",
        help="your agent: a function that returns a new strands Agent (docs/your_agent.md); "
        "replaces VOICE_AGENT_FACTORY",
    )
    _add_access_arguments(dev_parser)
    dev_parser.add_argument(
        "--tts",
        choices=("local", "sagemaker-local"),
        default="local",
        help="sagemaker-local: reach the local server through the SageMaker emulator (3.12)",
    )
    dev_parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        help="what /invocations and /ws speak (AG-UI: docs/agui.md); "
        f"replaces {PROTOCOL_VARIABLE} (default http, ours)",
    )
    dev_parser.set_defaults(run=dev)


def _add_speech_arguments(dev_parser: argparse.ArgumentParser) -> None:
    """A TTS server of one's own, or the local one's port, engine and model files."""
    dev_parser.add_argument("--tts-url", help="use this TTS WebSocket instead of a local server")
    dev_parser.add_argument("--tts-port", type=int, default=8080, help="port of the local server")
    dev_parser.add_argument(
        "--engine",
        choices=ENGINES,
        help="the local TTS server's engine (its --engine; default onnx, the embedded model)",
    )
    dev_parser.add_argument(
        "--model-dir",
        type=Path,
        metavar="PATH",
        help="the local TTS server's model files (its --model-dir), e.g. Kokoro-82M's weights",
    )


def _add_access_arguments(dev_parser: argparse.ArgumentParser) -> None:
    """The page origins that may use the server and the host names it answers to."""
    dev_parser.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="a page origin (scheme://host[:port], or '*') that may use the server besides its "
        "own; repeatable; replaces VOICE_AGENT_ALLOW_ORIGINS",
    )
    dev_parser.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a host name the server answers to (its Host header; '*' for any), against DNS "
        "rebinding; repeatable; replaces VOICE_AGENT_ALLOW_HOSTS (default: loopback names)",
    )


def _add_tool(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    module_name: str,
    summary: str,
    *,
    chosen: bool,
) -> None:
    """A tool's subcommand: its module's arguments and ``run`` when ``chosen``, else only its
    name and help (its module stays unimported)."""
    if not chosen:
        commands.add_parser(name, help=summary)
        return
    module = importlib.import_module(module_name)
    sub = commands.add_parser(
        name,
        help=summary,
        description=module.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module.add_arguments(sub)
    sub.set_defaults(run=module.run)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line and run the chosen command; a stop is one line (``KEPT``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = chosen(argv)
    with stops_caught():  # before the chosen tool's module is imported
        try:
            status = _run(argv, command)
        except BaseException as error:  # a stop, or an error it caused (``as_stop``)
            if (stopped := as_stop(error)) is None:
                raise
            kept = (CUT if stopped.cut else KEPT).get(command or "", "nothing was lost")
            end_stopped(stop_line(command_name(command), stopped, kept), stopped.signum)
    if status:
        raise SystemExit(status)


def _run(argv: list[str], command: str | None) -> int:
    """Build the parser (importing ``command``'s module only), parse, run."""
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if args.command == "dev" and (args.engine or args.model_dir) and args.tts_url:
        parser.error("--engine and --model-dir set up the local TTS server; not with --tts-url")
    return int(args.run(args) or 0)
