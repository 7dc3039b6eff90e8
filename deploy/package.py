"""The build context of ``voice-agent deploy agent --agent MODULE:FUNCTION`` (no ``--image``).

Pure: no AWS calls. The context is the project's ``Dockerfile`` verbatim with one stage
appended (``your-agent``: the ``agent`` stage plus your module, your requirements and
``VOICE_AGENT_FACTORY``), what the ``agent`` stage copies (read from the source tree beside the
imported ``agent`` package), your top-level module (a file or a package, found under
``--project``) and CodeBuild's ``buildspec.yml``. It is one zip made the same way every time
(sorted names, fixed timestamps, stored, not deflated: the bytes do not depend on the zlib at
hand), so the image tag, the first 12 hex digits of the zip's SHA-256, is the same for the
same project.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STAGE = "your-agent"  # the Dockerfile target CodeBuild builds
# The top-level packages of this project (pyproject.toml): a module of yours with one of these
# names would shadow the service's own, or be shadowed by it.
OUR_PACKAGES = frozenset(
    {"agent", "bench", "deploy", "devtools", "observability", "sagemaker_local", "tts_client",
     "tts_protocol", "tts_server", "voice_agent_cli"}
)  # fmt: skip
SERVICE_FILES = ("pyproject.toml", "README.md")  # what the Dockerfile's `agent` stage copies,
SERVICE_PACKAGES = ("agent", "tts_client", "tts_protocol", "observability")  # with these
REQUIREMENTS = "user-requirements.txt"
BUILDSPEC = "buildspec.yml"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip entry can carry
BUILDSPEC_TEXT = f"""\
version: 0.2
# voice-agent deploy agent: build the {STAGE} stage of this Dockerfile and push it to ECR.
# IMAGE (REGISTRY/REPOSITORY:TAG) and REGISTRY come from the CodeBuild project and the build.
env:
  variables:
    DOCKER_BUILDKIT: "1"
phases:
  pre_build:
    on-failure: ABORT
    commands:
      - aws ecr get-login-password --region "$AWS_REGION" | docker login --username AWS --password-stdin "$REGISTRY"
  build:
    on-failure: ABORT
    commands:
      - docker build --target {STAGE} -t "$IMAGE" .
      - docker push "$IMAGE"
"""  # noqa: E501


class PackageError(ValueError):
    """The agent module or the service's sources cannot be packaged (the reason, the fix)."""


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What CodeBuild receives: the files by name, the appended stage, the zip and its tag."""

    files: Mapping[str, bytes]
    stage: str
    archive: bytes
    tag: str

    def listing(self) -> dict[str, int]:
        """Each file's name and size in bytes, as the zip holds them."""
        return {name: len(data) for name, data in self.files.items()}

    def summary(self) -> dict[str, Any]:
        """What a dry run shows: the tag, each file's size, the stage and the buildspec."""
        return {
            "tag": self.tag,
            "files": self.listing(),
            "dockerfile_stage": self.stage.splitlines(),
            "buildspec": BUILDSPEC_TEXT.splitlines(),
        }

    def describe(self) -> str:
        """The zip in a few words (what a dry run prints in place of its bytes)."""
        digest = hashlib.sha256(self.archive).hexdigest()
        return f"<zip: {len(self.files)} files, {len(self.archive)} bytes, sha256 {digest}>"


def user_module(spec: str, project: Path) -> Path:
    """The top-level module that ``package.module:function`` imports first, a ``.py`` file or a
    package folder under ``project``; ``PackageError`` if it is not there, lies outside, or is
    named like one of the service's packages."""
    from agent.config import FACTORY_SPEC  # the factory's own syntax (lazily, as plan.py)

    if not FACTORY_SPEC.fullmatch(spec):
        raise PackageError(f"--agent {spec!r} is not package.module:function")
    parts = spec.partition(":")[0].split(".")
    if not all(parts):
        raise PackageError(f"--agent {spec!r}: {spec.partition(':')[0]!r} is not a module name")
    top = parts[0]
    if top in OUR_PACKAGES:
        raise PackageError(
            f"--agent {spec!r}: {top!r} is the name of one of the service's own packages "
            "(the image holds it already); rename your module"
        )
    if not project.is_dir():
        raise PackageError(f"--project {str(project)!r} is not a folder")
    folder, file = project / top, project / f"{top}.py"
    if (folder / "__init__.py").is_file() or (folder.is_dir() and not file.is_file()):
        found = folder  # Python imports a package before a module of the same name
    elif file.is_file():
        found = file
    else:
        raise PackageError(
            f"--agent {spec!r}: no {top}.py or {top}/ in {project} (--project: the folder "
            "that holds your module; default: the current one)"
        )
    _inside(found, project, spec)
    inner = folder.joinpath(*parts[1:])
    if len(parts) > 1 and not (inner.with_suffix(".py").is_file() or inner.is_dir()):
        raise PackageError(f"--agent {spec!r}: no {'.'.join(parts)} under {found}")
    return found


def _inside(path: Path, project: Path, spec: str) -> None:
    """``PackageError`` unless ``path`` (links followed) lies under ``project``."""
    if not path.resolve().is_relative_to(project.resolve()):
        raise PackageError(
            f"--agent {spec!r}: {path} leads outside the project {project} "
            f"(to {path.resolve()}): copy it in"
        )


def tree(path: Path, base: Path) -> dict[str, Path]:
    """The files of ``path`` (a file or a folder) by their name relative to ``base``, without
    ``__pycache__``, ``*.pyc`` and anything whose name starts with a dot; ``PackageError`` at a
    link to a folder (what it holds could lie anywhere, itself included)."""
    if path.is_file():
        return {path.relative_to(base).as_posix(): path}
    found: dict[str, Path] = {}
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
        if links := [d for d in dirs if (Path(folder) / d).is_symlink()]:
            raise PackageError(f"{Path(folder) / links[0]} is a link to a folder: copy it in")
        for name in files:
            if not name.startswith(".") and not name.endswith(".pyc"):
                file = Path(folder) / name
                found[file.relative_to(base).as_posix()] = file
    return found


def service_root(root: Path | None = None) -> Path:
    """The source tree the running ``agent`` package was imported from (``root``: another);
    ``PackageError`` when it is not a source checkout (a wheel install has no Dockerfile)."""
    import agent

    root = root or Path(agent.__file__).resolve().parent.parent
    missing = [
        name
        for name in ("Dockerfile", *SERVICE_FILES, *SERVICE_PACKAGES)
        if not (root / name).exists()
    ]
    if missing:
        raise PackageError(
            f"the service's sources are not beside its `agent` package ({root} lacks "
            f"{', '.join(missing)}): building an image needs a source checkout; clone the "
            "project and `pip install -e .` from it"
        )
    return root


def dockerfile_stage(module: str, spec: str, requirements: bool) -> str:
    """The stage appended to the Dockerfile: the ``agent`` image, your requirements, your
    module in ``/app`` (the working directory, on the import path) and your factory."""
    lines = [f"# Your agent (voice-agent deploy agent --agent {spec})", f"FROM agent AS {STAGE}"]
    if requirements:
        lines += [
            "USER root",
            f"COPY {REQUIREMENTS} /tmp/{REQUIREMENTS}",
            f"RUN pip install -r /tmp/{REQUIREMENTS}",
            "USER agent",
        ]
    lines += [f"COPY --chown=agent {module} ./{module}", f"ENV VOICE_AGENT_FACTORY={spec}"]
    return "\n".join(lines) + "\n"


def deterministic_zip(files: Mapping[str, bytes]) -> bytes:
    """``files`` as a zip whose bytes depend only on the names and contents."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(files):
            entry = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            entry.external_attr = 0o644 << 16  # -rw-r--r--, whatever the local mode
            archive.writestr(entry, files[name])
    return buffer.getvalue()


def build_context(
    spec: str, project: Path, requirements: Path | None = None, source: Path | None = None
) -> BuildContext:
    """The context that builds the image of your agent ``spec`` from ``project``."""
    module = user_module(spec, project)
    root = service_root(source)
    if requirements is not None and not requirements.is_file():
        raise PackageError(f"--requirements {str(requirements)!r} is not a file")
    paths: dict[str, Path] = {}
    for name in (*SERVICE_FILES, *SERVICE_PACKAGES):
        paths |= tree(root / name, root)
    yours = tree(module, project)
    for name, path in yours.items():
        _inside(path, project, spec)
        if name in paths:
            raise PackageError(f"--agent {spec!r}: {name} would replace the service's own file")
    files = {name: path.read_bytes() for name, path in (paths | yours).items()}
    stage = dockerfile_stage(module.name, spec, requirements is not None)
    files["Dockerfile"] = (root / "Dockerfile").read_bytes().rstrip(b"\n") + b"\n\n"
    files["Dockerfile"] += stage.encode()
    files[BUILDSPEC] = BUILDSPEC_TEXT.encode()
    if requirements is not None:
        files[REQUIREMENTS] = requirements.read_bytes()
    files = dict(sorted(files.items()))
    archive = deterministic_zip(files)
    return BuildContext(files, stage, archive, hashlib.sha256(archive).hexdigest()[:12])
