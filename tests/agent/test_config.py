"""Agent settings from the environment, and the transport they choose."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest

from agent.config import DEFAULT_TTS_URL, AgentConfig, ListeningConfig
from tts_client import TransportUnavailable, WebSocketTransport


def test_defaults_are_the_offline_local_stack() -> None:
    config = AgentConfig.from_env({})
    assert config == AgentConfig(model="demo", tts_url=DEFAULT_TTS_URL)
    transport = config.transport()
    assert isinstance(transport, WebSocketTransport) and transport.url == DEFAULT_TTS_URL


def test_environment_names_model_speech_and_region() -> None:
    env = {
        "VOICE_AGENT_MODEL": "bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0",
        "TTS_URL": "ws://10.0.0.5:8080/ws",
        "TTS_SAGEMAKER_ENDPOINT": "kokoro-tts",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    config = AgentConfig.from_env(env)
    assert config.model.startswith("bedrock:") and config.tts_url.endswith("/ws")
    assert (config.sagemaker_endpoint, config.region) == ("kokoro-tts", "eu-west-1")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="on 3.12 the SDK may be installed")
def test_sagemaker_endpoint_needs_the_312_sdk_here() -> None:
    config = AgentConfig(sagemaker_endpoint="kokoro-tts", region="us-east-1")
    with pytest.raises(TransportUnavailable, match=r"3\.12"):
        config.transport()


def test_environment_names_allowed_origins_and_the_idle_time() -> None:
    env = {
        "VOICE_AGENT_ALLOW_ORIGINS": " https://app.example.com, ,http://localhost:5173 ",
        "VOICE_AGENT_WS_IDLE_S": "42.5",
    }
    config = AgentConfig.from_env(env)
    assert config.allow_origins == ("https://app.example.com", "http://localhost:5173")
    assert config.ws_idle_s == 42.5
    assert AgentConfig.from_env({}).allow_origins == ()  # same origin only


def test_environment_names_the_hosts_served_loopback_by_default() -> None:
    config = AgentConfig.from_env({"VOICE_AGENT_ALLOW_HOSTS": "voice.lan, 10.0.0.5"})
    assert config.allow_hosts == ("voice.lan", "10.0.0.5")
    assert AgentConfig.from_env({}).allow_hosts == ("localhost", "127.0.0.1", "::1")


@pytest.mark.parametrize("idle", ["soon", "0", "-1", "nan"])
def test_a_bad_idle_time_fails_at_start_with_its_name(idle: str) -> None:
    with pytest.raises(ValueError, match="VOICE_AGENT_WS_IDLE_S must be a positive"):
        AgentConfig.from_env({"VOICE_AGENT_WS_IDLE_S": idle})


def test_listening_defaults_and_the_environment_that_changes_them() -> None:
    assert AgentConfig.from_env({}).listening == ListeningConfig()
    defaults = ListeningConfig()
    assert (defaults.silence_ms, defaults.barge_in_ms, defaults.max_utterance_s) == (500, 200, 20)
    assert (defaults.interrupt_ms, defaults.resume_ms) == (1000, 1500)
    assert {"mm", "mhm", "mmm", "ooh", "okay", "uh-uh", "i see"} <= set(defaults.backchannels)
    env = {
        "VOICE_AGENT_VAD_THRESHOLD": "0.6",
        "VOICE_AGENT_LISTEN_ONSET_MS": "96",
        "VOICE_AGENT_LISTEN_SILENCE_MS": "700",
        "VOICE_AGENT_BARGE_IN_MS": "300",
        "VOICE_AGENT_LISTEN_PREROLL_MS": "256",
        "VOICE_AGENT_LISTEN_MAX_S": "12.5",
        "VOICE_AGENT_LISTEN_BURST_S": "1",
        "VOICE_AGENT_ASR_MODEL": "/models/whisper-base",
        "VOICE_AGENT_ASR_THREADS": "4",
        "VOICE_AGENT_ASR_CONCURRENCY": "2",
        "VOICE_AGENT_ASR_MAX_QUEUE": "3",
        "VOICE_AGENT_ENDPOINTING": "silence",
        "VOICE_AGENT_TURN_PAUSE_MS": "160",
        "VOICE_AGENT_TURN_WAIT_MS": "1200",
        "VOICE_AGENT_TURN_THRESHOLD": "0.7",
        "VOICE_AGENT_TURN_RECHECK_MS": "0",
        "VOICE_AGENT_TURN_RECHECK_THRESHOLD": "0.9",
        "VOICE_AGENT_ASR_CONTEXT_S": "0.0",
        "VOICE_AGENT_ASR_PHASES": "1",
        "VOICE_AGENT_ASR_FIRST": "3",
        "VOICE_AGENT_ASR_SURE": "0.9",
        "VOICE_AGENT_ASR_MURMURS": "off",
        "VOICE_AGENT_EAGER_ASR": "off",
        "VOICE_AGENT_EAGER_START": "off",
        "VOICE_AGENT_INTERRUPT_MS": "800",
        "VOICE_AGENT_RESUME_MS": "2000",
        "VOICE_AGENT_BACKCHANNELS": "Mm-hm, I  see,yeah",
    }
    assert AgentConfig.from_env(env).listening == ListeningConfig(
        vad_threshold=0.6,
        onset_ms=96,
        silence_ms=700,
        barge_in_ms=300,
        preroll_ms=256,
        max_utterance_s=12.5,
        burst_s=1.0,
        asr_model="/models/whisper-base",
        asr_threads=4,
        asr_phases=1,
        asr_first=3,
        asr_sure=0.9,
        asr_murmurs=False,
        asr_concurrency=2,
        asr_max_queue=3,
        endpointing="silence",
        pause_ms=160,
        turn_wait_ms=1200,
        turn_threshold=0.7,
        turn_recheck_ms=0,
        turn_recheck_threshold=0.9,
        asr_context_s=0.0,
        eager_asr=False,
        eager_start=False,
        interrupt_ms=800,
        resume_ms=2000,
        backchannels=("mm-hm", "i see", "yeah"),
    )


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("VOICE_AGENT_LISTEN_SILENCE_MS", "soon", "must be a positive number"),
        ("VOICE_AGENT_BARGE_IN_MS", "-5", "must be a positive number"),
        ("VOICE_AGENT_LISTEN_MAX_S", "inf", "must be a finite positive number, not 'inf'"),
        ("VOICE_AGENT_VAD_THRESHOLD", "1.5", r"must be in \(0, 1\)"),
        ("VOICE_AGENT_ENDPOINTING", "vad", "must be one of silence, turn_model, not 'vad'"),
        ("VOICE_AGENT_TURN_THRESHOLD", "0", "must be a positive number"),
        ("VOICE_AGENT_TURN_RECHECK_MS", "-160", "must be a positive number"),
        ("VOICE_AGENT_TURN_RECHECK_THRESHOLD", "1", r"must be in \(0, 1\)"),
        ("VOICE_AGENT_ASR_CONTEXT_S", "none", "must be a positive number"),
        ("VOICE_AGENT_ASR_PHASES", "0", "must be a positive"),
        ("VOICE_AGENT_ASR_FIRST", "0", "must be a positive"),
        ("VOICE_AGENT_ASR_FIRST", "-1", "must be a positive"),
        ("VOICE_AGENT_EAGER_ASR", "yes", "must be on or off, not 'yes'"),
        ("VOICE_AGENT_EAGER_START", "1", "must be on or off, not '1'"),
        ("VOICE_AGENT_ASR_MURMURS", "yes", "must be on or off, not 'yes'"),
        ("VOICE_AGENT_INTERRUPT_MS", "0", "must be a positive number"),
        ("VOICE_AGENT_INTERRUPT_MS", "inf", "must be a finite positive number, not 'inf'"),
        ("VOICE_AGENT_RESUME_MS", "nan", "must be a positive number, not 'nan'"),
        ("VOICE_AGENT_RESUME_MS", "-1500", "must be a positive number"),
        ("VOICE_AGENT_BACKCHANNELS", "yeah,,okay", "must be comma-separated words .*, not ''"),
        ("VOICE_AGENT_BACKCHANNELS", "yeah, mm.", "must be comma-separated words .*, not 'mm.'"),
    ],
)
def test_a_bad_listening_knob_fails_at_start_with_its_name(
    name: str, value: str, says: str
) -> None:
    with pytest.raises(ValueError, match=f"{name} {says}"):
        AgentConfig.from_env({name: value})


@pytest.mark.parametrize("text", ["1", "1.0", "-0.1", "nan", "inf", "often", "70%"])
def test_the_asr_bar_is_refused_in_words_outside_0_to_1(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        AgentConfig.from_env({"VOICE_AGENT_ASR_SURE": text})
    assert str(refused.value) == (
        f"VOICE_AGENT_ASR_SURE must be 0 (off) or a number in (0, 1), not {text!r}"
    )


@pytest.mark.parametrize(
    ("text", "bar"), [("0", 0.0), ("0.0", 0.0), ("0.5", 0.5), ("0.999", 0.999)]
)
def test_the_asr_bar_takes_0_for_off_and_anything_under_1(text: str, bar: float) -> None:
    assert AgentConfig.from_env({"VOICE_AGENT_ASR_SURE": text}).listening.asr_sure == bar


LARGEST = repr(sys.float_info.max)  # "1.7976931348623157e+308": the most a knob accepts


@pytest.mark.parametrize("name", ["VOICE_AGENT_LISTEN_MAX_S", "VOICE_AGENT_LISTEN_SILENCE_MS"])
def test_a_listening_knob_takes_the_largest_float_and_refuses_anything_past_it(name: str) -> None:
    """The bound is inclusive: the largest float is a number; past it is ``inf`` (``1e309``
    reads as it) and is refused in words, as ``nan`` is."""
    listening = AgentConfig.from_env({name: LARGEST}).listening
    assert sys.float_info.max in (listening.max_utterance_s, float(listening.silence_ms))
    for text in ("1e309", "inf", "+Infinity"):
        with pytest.raises(ValueError) as refused:
            AgentConfig.from_env({name: text})
        assert str(refused.value) == f"{name} must be a finite positive number, not {text!r}"
    with pytest.raises(ValueError) as refused:
        AgentConfig.from_env({name: "nan"})
    assert str(refused.value) == f"{name} must be a positive number, not 'nan'"


def test_a_timeout_in_seconds_takes_inf_for_never_and_refuses_nan() -> None:
    """``_seconds``' bound is ``inf`` itself, inclusive: never time out."""
    config = AgentConfig.from_env({"VOICE_AGENT_WS_IDLE_S": "inf"})
    assert config.ws_idle_s == math.inf
    assert AgentConfig.from_env({"VOICE_AGENT_WS_IDLE_S": LARGEST}).ws_idle_s == sys.float_info.max
    with pytest.raises(ValueError, match="VOICE_AGENT_WS_IDLE_S must be a positive number of"):
        AgentConfig.from_env({"VOICE_AGENT_WS_IDLE_S": "nan"})


def test_each_setting_declares_its_variable_and_help_once_and_the_docs_name_it() -> None:
    root = Path(__file__).resolve().parents[2]
    docs = "".join((root / "docs" / name).read_text() for name in ("agent.md", "listening.md"))
    names: list[str] = []
    for cls in (AgentConfig, ListeningConfig):
        for spec in dataclasses.fields(cls):
            if "env" in spec.metadata:
                assert spec.metadata["help"], spec.name
                names += spec.metadata["env"]
    assert len(names) == len(set(names)) == 38
    assert [name for name in names if f"`{name}`" not in docs] == []
