"""``voice-agent audit``: dependency floors, a vulnerability scan and an SBOM per environment.

    voice-agent audit                   # .venv (tts, agent, dev extras) and .venv312 (sagemaker)
    voice-agent audit --allow-offline   # CI: no vulnerability service; the floors still hold
    voice-agent audit --env PATH --sbom-dir build/sbom

For each environment (a virtual environment, or a site-packages directory):

1. floors: each package of ``FLOORS`` that is installed must be at least its floor (versions
   as installed, from ``importlib.metadata``); a package that is not installed is fine;
2. vulnerability scan: ``pip-audit`` over exactly what is installed. It runs only if the
   service first answers a canary, a release with known advisories, with those advisories;
   otherwise (no network, or a proxy that answers 404, which pip-audit reads as "package not
   found" and skips) it says so and the audit fails, unless ``--allow-offline``;
3. SBOM: CycloneDX JSON (``cyclonedx-py environment``) in ``--sbom-dir``, kept small: project
   URLs and descriptions are dropped; names, versions, purls, licences and the graph stay.

The exit status is 1 if anything failed. See docs/audit.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
from packaging.utils import canonicalize_name
from packaging.version import Version

from observability.stopping import Stopped
from tts_client.acceptance import FAIL, NA, PASS, Check, report

ROOT = Path(__file__).resolve().parents[1]
SBOM_DIR = ROOT / "docs" / "sbom"
SKIP = "SKIP"
OSV_URL = "https://api.osv.dev/v1/query"
PYPI_URL = "https://pypi.org/pypi"
CANARY = ("requests", "2.31.0")  # CVE-2024-35195, fixed in 2.32.0: a service must know it
SCAN_LIMIT_S = 900


@dataclass(frozen=True, slots=True)
class Floor:
    """The lowest acceptable version of a package, and the advisory that sets it."""

    package: str
    minimum: str
    advisory: str


FLOORS = (  # why each one: docs/audit.md
    Floor("torch", "2.10.0", "PYSEC-2026-2286"),
    Floor("h11", "0.16.0", "CVE-2025-43859"),
    Floor("starlette", "0.49.1", "CVE-2025-62727, CVE-2025-54121"),
    Floor("urllib3", "2.5.0", "CVE-2025-50181"),
    Floor("ag-ui-protocol", "1.0.0", "no advisory: AG-UI 1.0's wire models (docs/agui.md)"),
)


@dataclass(frozen=True, slots=True)
class Environment:
    """Where packages are installed, and the interpreter that runs them (for the SBOM)."""

    name: str
    site_packages: tuple[Path, ...]
    python: Path | None


def environment(path: Path) -> Environment:
    """A virtual environment's directory, or a bare site-packages directory."""
    found = (*path.glob("lib/python3*/site-packages"), *path.glob("Lib/site-packages"))
    if not found:
        return Environment(path.name, (path,), None)
    pythons = [p for p in (path / "bin" / "python", path / "Scripts" / "python.exe") if p.exists()]
    return Environment(path.name, tuple(found), pythons[0] if pythons else None)


def default_environments() -> list[Environment]:
    """This interpreter's environment, and ``.venv312`` (the sagemaker extra) if there is one."""
    here = Environment(
        Path(sys.prefix).name, tuple(map(Path, site.getsitepackages())), Path(sys.executable)
    )
    other = ROOT / ".venv312"
    if other.is_dir() and other.resolve() != Path(sys.prefix).resolve():
        return [here, environment(other)]
    return [here]


def installed(env: Environment) -> dict[str, str]:
    """Canonical package name → installed version."""
    dists = metadata.distributions(path=[str(p) for p in env.site_packages])
    return {canonicalize_name(d.metadata["Name"]): d.version for d in dists if d.metadata["Name"]}


def check_floors(env: Environment, floors: tuple[Floor, ...] = FLOORS) -> list[Check]:
    """One line per floor: an installed package below it fails."""
    versions = installed(env)
    checks = []
    for floor in floors:
        name = f"floor {floor.package}>={floor.minimum} [{env.name}]"
        version = versions.get(canonicalize_name(floor.package))
        if version is None:
            checks.append(Check(name, PASS, f"not installed ({floor.advisory})"))
        elif Version(version) < Version(floor.minimum):
            checks.append(Check(name, FAIL, f"{version} is below the floor ({floor.advisory})"))
        else:
            checks.append(Check(name, PASS, f"{version} ({floor.advisory})"))
    return checks


def service_unreachable(service: str, client: httpx.Client | None = None) -> str | None:
    """None if ``service`` reports the canary's advisories; else why it cannot be used."""
    name, version = CANARY
    http = client or httpx.Client(timeout=10)
    try:
        if service == "osv":
            query = {"package": {"name": name, "ecosystem": "PyPI"}, "version": version}
            response = http.post(OSV_URL, json=query)
            key = "vulns"
        else:
            response = http.get(f"{PYPI_URL}/{name}/{version}/json")
            key = "vulnerabilities"
        found = response.json().get(key) if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        if client is None:
            http.close()
    if not found:
        return f"HTTP {response.status_code} and no advisories for {name} {version}, which has some"
    return None


def scan_result(env: Environment, result: dict[str, Any]) -> Check:
    """The line for one pip-audit JSON report."""
    name = f"vulnerability scan [{env.name}]"
    dependencies = result.get("dependencies", [])
    found = [
        f"{d['name']} {d['version']}: {v['id']} (fix: {' or '.join(v.get('fix_versions') or '?')})"
        for d in dependencies
        for v in d.get("vulns", [])
    ]
    skipped = sorted(d["name"] for d in dependencies if d.get("skip_reason"))
    not_audited = f"; not audited: {', '.join(skipped)}" if skipped else ""
    if found:
        return Check(name, FAIL, "; ".join(found) + not_audited)
    audited = len(dependencies) - len(skipped)
    return Check(name, PASS, f"{audited} packages, no known vulnerabilities{not_audited}")


def run_tool(
    what: str, command: list[str], timeout_s: float | None = None
) -> subprocess.CompletedProcess[str]:
    """``command`` run to its end, its output captured; a stop (Ctrl+C, SIGTERM) meanwhile ends
    it (``subprocess.run`` kills and reaps it) and names it, as ``what``, in the stop's line."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except Stopped as stopped:
        stopped.ended.append(what)
        raise


def scan(env: Environment, service: str) -> Check:
    """``pip-audit`` over what ``env`` has installed."""
    if importlib.util.find_spec("pip_audit") is None:
        return Check(f"vulnerability scan [{env.name}]", FAIL, "pip-audit is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "pip-audit.json"
        command = [sys.executable, "-m", "pip_audit", "--vulnerability-service", service]
        command += ["--format", "json", "--output", str(output), "--progress-spinner", "off"]
        for path in env.site_packages:
            command += ["--path", str(path)]
        done = run_tool(f"pip-audit (the scan of {env.name})", command, SCAN_LIMIT_S)
        if not output.exists():
            detail = f"pip-audit failed ({done.returncode}): {done.stderr.strip()[-300:]}"
            return Check(f"vulnerability scan [{env.name}]", FAIL, detail)
        return scan_result(env, json.loads(output.read_text()))


def trim(bom: dict[str, Any]) -> dict[str, Any]:
    """``bom`` without its components' project URLs and descriptions."""
    for component in bom.get("components", []):
        component.pop("externalReferences", None)
        component.pop("description", None)
    return bom


def sbom(env: Environment, out_dir: Path) -> Check:
    """A CycloneDX JSON SBOM of ``env`` in ``out_dir``."""
    name = f"sbom [{env.name}]"
    if env.python is None:
        return Check(name, NA, "no interpreter in this environment")
    if importlib.util.find_spec("cyclonedx_py") is None:
        return Check(name, FAIL, "cyclonedx-bom is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "sbom.json"
        command = [sys.executable, "-m", "cyclonedx_py", "environment", "--output-reproducible"]
        command += ["--of", "JSON", "-o", str(output), "--pyproject", str(ROOT / "pyproject.toml")]
        done = run_tool(f"cyclonedx-py (the SBOM of {env.name})", [*command, str(env.python)])
        if done.returncode:
            return Check(name, FAIL, f"cyclonedx-py failed: {done.stderr.strip()[-300:]}")
        bom = trim(json.loads(output.read_text()))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{env.name.lstrip('.')}.cdx.json"
    path.write_text(json.dumps(bom, indent=1) + "\n")
    return Check(name, PASS, f"{path} ({len(bom.get('components', []))} components)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``voice-agent audit`` flags."""
    parser.add_argument(
        "--allow-offline",
        action="store_true",
        help="pass without a vulnerability scan when no service is reachable (floors still hold)",
    )
    parser.add_argument(
        "--env",
        type=Path,
        action="append",
        help="a virtual environment or site-packages directory (repeatable; default: this "
        "interpreter's environment and .venv312)",
    )
    parser.add_argument("--service", choices=["osv", "pypi"], default="osv")
    parser.add_argument("--sbom-dir", type=Path, default=SBOM_DIR, help="where SBOMs are written")
    parser.add_argument("--no-sbom", action="store_true", help="write no SBOM")


def run(args: argparse.Namespace) -> int:
    """Floors, then the scan (or why not), then the SBOMs; 1 if anything failed."""
    envs = [environment(path) for path in args.env] if args.env else default_environments()
    checks = [check for env in envs for check in check_floors(env)]
    reason = service_unreachable(args.service)
    if reason is None:
        checks += [scan(env, args.service) for env in envs]
    else:
        print(f"audit: NO VULNERABILITY SCAN: the {args.service} service is unreachable ({reason})")
        detail = f"not run: {args.service} is unreachable; " + (
            "allowed by --allow-offline: only the floors were checked"
            if args.allow_offline
            else "failing closed (pass --allow-offline to accept the floor check alone)"
        )
        checks.append(Check("vulnerability scan", SKIP if args.allow_offline else FAIL, detail))
    if not args.no_sbom:
        checks += [sbom(env, args.sbom_dir) for env in envs]
    text, status = report(checks, "audit")
    print(text)
    return status
