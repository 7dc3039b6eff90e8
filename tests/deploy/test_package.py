"""The build context of ``deploy agent`` without ``--image``: which files, the appended stage,
the buildspec, the refusals, and a zip (and tag) that depends only on names and contents."""

from __future__ import annotations

import io
import os
import re
import zipfile
from pathlib import Path

import pytest
import yaml

from deploy.package import (
    BUILDSPEC,
    REQUIREMENTS,
    SERVICE_FILES,
    SERVICE_PACKAGES,
    STAGE,
    PackageError,
    build_context,
    service_root,
    user_module,
)

ROOT = Path(__file__).resolve().parents[2]
SPEC = "my_agent:create_agent"
AGENT = "from strands import Agent\n\n\ndef create_agent() -> Agent:\n    return Agent()\n"


def service_names(files: dict[str, bytes]) -> set[str]:
    return {n for n in files if n.split("/")[0] in (*SERVICE_FILES, *SERVICE_PACKAGES)}


def test_a_single_file_module_goes_in_beside_the_service(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT)
    (tmp_path / "notes.txt").write_text("not imported: not packaged")
    context = build_context(SPEC, tmp_path)
    yours = set(context.files) - service_names(dict(context.files))
    assert yours == {"Dockerfile", BUILDSPEC, "my_agent.py"}
    assert context.files["my_agent.py"] == AGENT.encode()
    assert "agent/core/factory.py" in context.files and "tts_protocol/__init__.py" in context.files
    assert not [n for n in context.files if n.startswith("tts_server/") or "__pycache__" in n]
    assert context.stage == (
        f"# Your agent (voice-agent deploy agent --agent {SPEC})\n"
        f"FROM agent AS {STAGE}\n"
        "COPY --chown=agent my_agent.py ./my_agent.py\n"
        f"ENV VOICE_AGENT_FACTORY={SPEC}\n"
    )
    dockerfile = (ROOT / "Dockerfile").read_bytes()
    assert (
        context.files["Dockerfile"] == dockerfile.rstrip(b"\n") + b"\n\n" + context.stage.encode()
    )
    assert context.listing()["my_agent.py"] == len(AGENT)


def test_a_package_goes_in_whole_without_caches_and_dot_files(tmp_path: Path) -> None:
    package = tmp_path / "shop"
    (package / "data").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    (package / ".git").mkdir()
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(AGENT)
    (package / "data" / "prices.json").write_text("{}")
    (package / "data" / "old.pyc").write_bytes(b"\0")
    (package / "__pycache__" / "agent.cpython-312.pyc").write_bytes(b"\0")
    (package / ".git" / "HEAD").write_text("ref")
    (package / ".env").write_text("SECRET=1")
    (tmp_path / "shop.py").write_text("shadowed by the package, as Python imports")
    context = build_context("shop.agent:create_agent", tmp_path)
    yours = set(context.files) - service_names(dict(context.files)) - {"Dockerfile", BUILDSPEC}
    assert yours == {"shop/__init__.py", "shop/agent.py", "shop/data/prices.json"}
    assert "COPY --chown=agent shop ./shop\n" in context.stage


def test_the_example_agent_from_the_project_root() -> None:
    context = build_context("examples.clock_and_math_agent:create_agent", ROOT)
    examples = sorted(n for n in context.files if n.startswith("examples/"))
    assert examples == ["examples/__init__.py", "examples/clock_and_math_agent.py"]
    assert "COPY --chown=agent examples ./examples\n" in context.stage


def test_requirements_are_installed_as_root_before_your_module(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT)
    (tmp_path / "reqs.txt").write_text("pint>=0.24\n")
    context = build_context(SPEC, tmp_path, tmp_path / "reqs.txt")
    assert context.files[REQUIREMENTS] == b"pint>=0.24\n"
    lines = context.stage.splitlines()
    assert lines[2:6] == [
        "USER root",
        f"COPY {REQUIREMENTS} /tmp/{REQUIREMENTS}",
        f"RUN pip install -r /tmp/{REQUIREMENTS}",
        "USER agent",
    ]


def test_the_service_files_are_what_the_dockerfiles_agent_stage_copies() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    stage = dockerfile[dockerfile.index(" AS agent\n") :]
    copied = {src for line in re.findall(r"^COPY (.+) \S+$", stage, re.M) for src in line.split()}
    assert copied == {*SERVICE_FILES, *SERVICE_PACKAGES}
    assert service_root() == ROOT


def test_the_buildspec_builds_the_stage_pushes_it_and_stops_at_a_failure(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT)
    spec = yaml.safe_load(build_context(SPEC, tmp_path).files[BUILDSPEC])
    phases = spec["phases"]
    assert all(phase["on-failure"] == "ABORT" for phase in phases.values())
    assert "docker login" in phases["pre_build"]["commands"][0]
    assert phases["build"]["commands"] == [
        f'docker build --target {STAGE} -t "$IMAGE" .',
        'docker push "$IMAGE"',
    ]
    assert spec["env"]["variables"] == {"DOCKER_BUILDKIT": "1"}  # never the legacy builder


def test_the_same_project_gives_the_same_zip_and_tag(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT)
    first = build_context(SPEC, tmp_path)
    os.utime(tmp_path / "my_agent.py", (0, 0))  # a touched file: same content, same tag
    (tmp_path / "my_agent.py").chmod(0o600)
    again = build_context(SPEC, tmp_path)
    assert (again.archive, again.tag) == (first.archive, first.tag)
    assert re.fullmatch(r"[0-9a-f]{12}", first.tag)
    with zipfile.ZipFile(io.BytesIO(first.archive)) as archive:
        assert archive.namelist() == sorted(first.files)
        assert {entry.date_time for entry in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert {name: archive.read(name) for name in archive.namelist()} == first.files
    (tmp_path / "my_agent.py").write_text(AGENT + "# changed\n")
    assert build_context(SPEC, tmp_path).tag != first.tag
    assert first.describe().startswith(
        f"<zip: {len(first.files)} files, {len(first.archive)} bytes"
    )


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("my_agent.py", "is not package.module:function"),
        ("my_agent..x:f", "is not a module name"),
        ("missing:create", "no missing.py or missing/ in"),
        ("agent.core.factory:load_factory", "one of the service's own packages"),
        ("tts_server:main", "one of the service's own packages"),
        ("my_agent.sub:f", "no my_agent.sub under"),
        ("shop.nope:f", "no shop.nope under"),
        ("outside:f", "leads outside the project"),
    ],
)
def test_each_module_that_cannot_be_packaged_is_named(tmp_path: Path, spec: str, says: str) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT)
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere.py"
    elsewhere.write_text(AGENT)
    (tmp_path / "outside.py").symlink_to(elsewhere)
    with pytest.raises(PackageError, match=re.escape(says)):
        user_module(spec, tmp_path)


def test_links_inside_your_package_that_lead_out_are_refused(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    elsewhere = tmp_path.parent / f"{tmp_path.name}-secrets.py"
    elsewhere.write_text("KEY = 1\n")
    (tmp_path / "shop" / "secrets.py").symlink_to(elsewhere)
    with pytest.raises(PackageError, match=r"secrets\.py leads outside the project"):
        build_context("shop:create_agent", tmp_path)
    (tmp_path / "shop" / "secrets.py").unlink()
    (tmp_path / "shop" / "lib").symlink_to(tmp_path)  # a folder: itself, or anywhere
    with pytest.raises(PackageError, match="lib is a link to a folder: copy it in"):
        build_context("shop:create_agent", tmp_path)


def test_a_project_that_is_not_a_folder_and_a_missing_requirements_file(tmp_path: Path) -> None:
    with pytest.raises(PackageError, match=r"--project .* is not a folder"):
        build_context(SPEC, tmp_path / "nowhere")
    (tmp_path / "my_agent.py").write_text(AGENT)
    with pytest.raises(PackageError, match=r"--requirements .* is not a file"):
        build_context(SPEC, tmp_path, tmp_path / "requirements.txt")


def test_a_wheel_install_has_no_sources_to_build_from(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()  # site-packages: the package, no Dockerfile, no pyproject
    with pytest.raises(PackageError) as refused:
        service_root(tmp_path)
    assert "lacks Dockerfile, pyproject.toml, README.md, tts_client" in str(refused.value)
    assert "pip install -e ." in str(refused.value)
