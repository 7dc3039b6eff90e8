# syntax=docker/dockerfile:1.7
# Kokoro-82M speech server for a SageMaker AI real-time endpoint (GPU, bidirectional streaming).
#   docker build --target tts-server -t kokoro-tts .
#   docker run --gpus all -p 8080:8080 kokoro-tts        # SageMaker runs it as: <image> serve
# The agent image (AgentCore Runtime) is the second target, `agent`, below.

ARG CUDA_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

FROM ${CUDA_IMAGE} AS tts-server
LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true
ARG TORCH_SPEC="torch>=2.10,<3"
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128
ARG KOKORO_REPO=hexgrad/Kokoro-82M
ARG KOKORO_REVISION=main
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PATH=/opt/venv/bin:$PATH \
    TTS_ENGINE=torch \
    TTS_HOST=0.0.0.0 \
    TTS_PORT=8080 \
    TTS_MODEL_DIR=/opt/ml/model \
    LOG_FORMAT=json

RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/venv

# torch first, from the CUDA index, so the project's `torch>=2.10` floor (PYSEC-2026-2286) is met
# by a CUDA build and pip never swaps it.
RUN pip install "${TORCH_SPEC}" --index-url "${TORCH_INDEX}"

WORKDIR /app
COPY pyproject.toml README.md ./
COPY tts_protocol ./tts_protocol
COPY tts_server ./tts_server
COPY observability ./observability
RUN pip install ".[tts,torch,otlp]"

# Weights are fetched at image build time into the model directory; at run time the hub is
# offline. (A ModelDataUrl on the SageMaker model mounts its own files over /opt/ml/model.)
RUN python -c "from huggingface_hub import snapshot_download; snapshot_download('${KOKORO_REPO}', revision='${KOKORO_REVISION}', local_dir='/opt/ml/model', allow_patterns=['config.json', 'kokoro-v1_0.pth', 'voices/*.pt'])"
ENV HF_HUB_OFFLINE=1

RUN useradd --system --uid 10001 --home-dir /app tts && chown -R tts /app /opt/ml/model
USER tts
EXPOSE 8080
ENTRYPOINT ["tts-server"]
CMD ["serve"]

# Voice agent for Amazon Bedrock AgentCore Runtime (ARM64, HTTP on 8080).
#   docker buildx build --platform linux/arm64 --target agent -t kokoro-voice-agent .
# Light image: no torch, no onnxruntime; speech comes from the SageMaker endpoint over its
# bidirectional stream (the `sagemaker` extra, which needs Python >= 3.12).
FROM --platform=linux/arm64 python:3.12-slim AS agent
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    VOICE_AGENT_MODEL=bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0 \
    TTS_SAGEMAKER_ENDPOINT=kokoro-tts \
    VOICE_AGENT_PROTOCOL=http \
    LOG_FORMAT=json
# VOICE_AGENT_PROTOCOL: what /invocations and /ws speak, as the runtime's server protocol says:
# http (ours) or agui (AG-UI, for a runtime created with --protocol AGUI; docs/agui.md).
WORKDIR /app
COPY pyproject.toml README.md ./
COPY agent ./agent
COPY tts_client ./tts_client
COPY tts_protocol ./tts_protocol
COPY observability ./observability
RUN pip install ".[agent,listen,sagemaker,otlp]"
# Smart Turn's model file (agent/listening/turn_model.py), as scripts/bootstrap.sh installs it:
# --no-deps, so that none of pipecat's dependencies moves ours; pipecat is never imported.
RUN pip install --no-deps "pipecat-ai==1.14.0"
RUN useradd --system --uid 10001 --home-dir /app agent
USER agent
EXPOSE 8080
CMD ["python", "-m", "agent.doors.agentcore"]
