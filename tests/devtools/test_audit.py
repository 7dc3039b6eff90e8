"""``voice-agent audit``: floors on what is installed, fail-closed offline, the scan report."""

from __future__ import annotations

import tomllib
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from devtools import audit
from tts_client.acceptance import FAIL, PASS
from voice_agent_cli import cli


def fake_site(root: Path, versions: dict[str, str]) -> Path:
    """A site-packages directory holding only the metadata of ``versions``."""
    site = root / "site-packages"
    for name, version in versions.items():
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return site


@pytest.mark.parametrize(("version", "status"), [("2.9.1", FAIL), ("2.13.0", PASS)])
def test_the_torch_floor(tmp_path: Path, version: str, status: str) -> None:
    env = audit.environment(fake_site(tmp_path, {"torch": version, "numpy": "2.0.0"}))
    checks = {c.name: c for c in audit.check_floors(env)}
    torch = checks["floor torch>=2.10.0 [site-packages]"]
    assert torch.status == status and version in torch.detail and "PYSEC-2026-2286" in torch.detail
    assert checks["floor h11>=0.16.0 [site-packages]"].detail.startswith("not installed")
    assert all(c.status == PASS for name, c in checks.items() if "torch" not in name)


@pytest.mark.parametrize(("version", "status"), [("0.1.10", FAIL), ("1.0.0", PASS)])
def test_the_ag_ui_protocol_floor(tmp_path: Path, version: str, status: str) -> None:
    env = audit.environment(fake_site(tmp_path, {"ag_ui_protocol": version}))
    checks = {c.name: c for c in audit.check_floors(env)}
    floor = checks["floor ag-ui-protocol>=1.0.0 [site-packages]"]
    assert floor.status == status and version in floor.detail


def test_the_floors_list_and_a_direct_dependencys_floor_is_its_minimum_in_pyproject() -> None:
    assert [floor.package for floor in audit.FLOORS] == [
        "torch",
        "h11",
        "starlette",
        "urllib3",
        "ag-ui-protocol",
    ]
    project = tomllib.loads((audit.ROOT / "pyproject.toml").read_text())["project"]
    minimums: dict[str, Version] = {}
    extras = project["optional-dependencies"].values()
    for wanted in [*project["dependencies"], *(line for extra in extras for line in extra)]:
        requirement = Requirement(wanted)
        for spec in requirement.specifier:
            if spec.operator == ">=":
                minimums[canonicalize_name(requirement.name)] = Version(spec.version)
    direct = [f for f in audit.FLOORS if canonicalize_name(f.package) in minimums]
    assert {f.package for f in direct} == {"torch", "ag-ui-protocol"}
    for floor in direct:
        assert minimums[canonicalize_name(floor.package)] == Version(floor.minimum), floor


def test_names_are_compared_canonically(tmp_path: Path) -> None:
    env = audit.environment(fake_site(tmp_path, {"Starlette": "0.40.0"}))
    (starlette,) = [c for c in audit.check_floors(env) if "starlette" in c.name]
    assert starlette.status == FAIL


def run_cli(*args: str) -> int:
    try:
        cli.main(["audit", "--no-sbom", *args])
    except SystemExit as exit:
        return int(exit.code or 0)
    return 0


def test_offline_fails_closed_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(audit, "service_unreachable", lambda service: "ConnectError: no route")
    good = str(fake_site(tmp_path / "good", {"torch": "2.13.0"}))
    bad = str(fake_site(tmp_path / "bad", {"torch": "2.9.1"}))
    assert run_cli("--env", good) == 1
    out = capsys.readouterr().out
    words = " ".join(out.split())  # the report wraps long details between words
    assert "NO VULNERABILITY SCAN" in out and "pass --allow-offline" in words
    assert "FAIL  vulnerability scan" in out
    assert run_cli("--env", good, "--allow-offline") == 0
    assert "SKIP  vulnerability scan" in capsys.readouterr().out
    assert run_cli("--env", bad, "--allow-offline") == 1  # the floors still hold offline
    assert "FAIL  floor torch>=2.10.0" in capsys.readouterr().out


def probe(status: int, body: object) -> str | None:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, json=body))
    with httpx.Client(transport=transport) as client:
        return audit.service_unreachable("pypi", client)


def test_a_service_must_report_the_canary_advisories() -> None:
    assert probe(200, {"vulnerabilities": [{"id": "GHSA-9wx4-h78v-vm56"}]}) is None
    assert "HTTP 404" in str(probe(404, {"message": "Not Found"}))  # pip-audit would skip all
    assert "no advisories" in str(probe(200, {"vulnerabilities": []}))
    with httpx.Client(transport=httpx.MockTransport(refuse)) as client:
        assert "ConnectError" in str(audit.service_unreachable("osv", client))


def refuse(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("no route to host", request=request)


def test_scan_report_names_each_vulnerability_and_what_was_not_audited() -> None:
    env = audit.Environment("venv", (), None)
    result = {
        "dependencies": [
            {
                "name": "h11",
                "version": "0.14.0",
                "vulns": [{"id": "GHSA-x", "fix_versions": ["0.16.0"]}],
            },
            {"name": "torch", "version": "2.13.0+cpu", "skip_reason": "not found on PyPI"},
            {"name": "numpy", "version": "2.4.6", "vulns": []},
        ]
    }
    check = audit.scan_result(env, result)
    assert check.status == FAIL and "h11 0.14.0: GHSA-x (fix: 0.16.0)" in check.detail
    assert "not audited: torch" in check.detail
    clean = audit.scan_result(env, {"dependencies": result["dependencies"][1:]})
    assert clean.status == PASS and clean.detail.startswith("1 packages, no known")


def test_sbom_trim_keeps_identity_and_graph() -> None:
    component = {"name": "x", "version": "1", "purl": "pkg:pypi/x@1", "description": "long"}
    bom = {"components": [{**component, "externalReferences": [{"url": "u"}]}], "dependencies": []}
    assert audit.trim(bom) == {
        "components": [{"name": "x", "version": "1", "purl": "pkg:pypi/x@1"}],
        "dependencies": [],
    }
