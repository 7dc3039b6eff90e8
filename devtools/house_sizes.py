"""The house's sizes from the source alone: lines per file, each class's lines and methods, the
functions, and the rooms (package folders, two deep) with the imports that run between them.

``python -m devtools.house_sizes`` prints what is over the house's bars; ``--json OUT`` writes the
whole measurement; ``--before DIR --markdown OUT`` compares another checkout (an older commit:
``git worktree add DIR COMMIT``) with this one. ``tests/test_house_rules.py`` holds the bars."""

from __future__ import annotations

import argparse
import ast
import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "agent",
    "tts_client",
    "tts_server",
    "tts_protocol",
    "observability",
    "bench",
    "devtools",
    "deploy",
    "voice_agent_cli",
    "sagemaker_local",
)
FUNCTION_BAR = 60
CLASS_LINES_BAR = 200
CLASS_METHODS_BAR = 15


@dataclass(frozen=True)
class ClassSize:
    path: str
    name: str
    lines: int
    methods: int

    @property
    def over(self) -> bool:
        return self.lines > CLASS_LINES_BAR or self.methods > CLASS_METHODS_BAR


@dataclass(frozen=True)
class FunctionSize:
    path: str
    name: str
    lines: int


@dataclass(frozen=True)
class House:
    """One checkout's measurement."""

    files: dict[str, int]
    classes: list[ClassSize]
    functions: list[FunctionSize]
    arrows: dict[tuple[str, str], int]

    def rooms(self) -> dict[str, tuple[int, int]]:
        """Each room's files and lines."""
        found: dict[str, tuple[int, int]] = {}
        for path, lines in self.files.items():
            files, total = found.get(room_of(path), (0, 0))
            found[room_of(path)] = (files + 1, total + lines)
        return dict(sorted(found.items()))

    def long_functions(self, bar: int = FUNCTION_BAR) -> list[FunctionSize]:
        """The functions over ``bar`` lines, longest first."""
        return sorted((f for f in self.functions if f.lines > bar), key=lambda f: -f.lines)

    def big_classes(self) -> list[ClassSize]:
        """The classes over the line or the method bar, longest first."""
        return sorted((c for c in self.classes if c.over), key=lambda c: -c.lines)

    def as_json(self) -> dict[str, object]:
        return {
            "files": self.files,
            "rooms": {room: {"files": f, "lines": n} for room, (f, n) in self.rooms().items()},
            "arrows": [{"from": a, "to": b, "imports": n} for (a, b), n in self.arrows.items()],
            "classes": [asdict(c) for c in self.classes],
            "functions": [asdict(f) for f in self.functions],
        }


def room_of(path: str) -> str:
    """A file's room: its folder, at most two deep (``agent/leg``, ``tts_server/engines``)."""
    return "/".join(Path(path).parent.parts[:2])


def _span(node: ast.AST) -> int:
    """Lines from the definition (its decorators included) to its last line."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])  # type: ignore[attr-defined]
    return node.end_lineno - first + 1  # type: ignore[attr-defined]


def _functions(tree: ast.AST, path: str, prefix: str = "") -> list[FunctionSize]:
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(FunctionSize(path, prefix + node.name, _span(node)))
            found += _functions(node, path, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            found += _functions(node, path, f"{prefix}{node.name}.")
    return found


def _classes(tree: ast.AST, path: str) -> list[ClassSize]:
    return [
        ClassSize(
            path,
            node.name,
            _span(node),
            sum(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in node.body),
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    ]


def _imported_rooms(tree: ast.AST, path: str, files: set[str]) -> list[str]:
    """The rooms of the house that a file's imports name (relative imports resolved)."""
    package = Path(path).parent.parts
    modules = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *([node.module] if node.module else [])])
            modules += [module] + [f"{module}.{alias.name}" for alias in node.names]
    rooms = []
    for module in modules:
        as_path = module.replace(".", "/")
        for candidate in (f"{as_path}.py", f"{as_path}/__init__.py"):
            if candidate in files:
                rooms.append(room_of(candidate))
    return rooms


def sources(packages: tuple[str, ...] = PACKAGES, root: Path = ROOT) -> list[Path]:
    """Every Python file of the packages (tests live outside them)."""
    return sorted(p for package in packages for p in (root / package).rglob("*.py"))


def measure(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> House:
    """Files, lines, classes, functions and the arrows between rooms of one checkout."""
    paths = {str(p.relative_to(root)): p for p in sources(packages, root)}
    files, classes, functions, arrows = {}, [], [], Counter[tuple[str, str]]()
    for name, path in paths.items():
        text = path.read_text()
        tree = ast.parse(text)
        files[name] = len(text.splitlines())
        classes += _classes(tree, name)
        functions += _functions(tree, name)
        for room in set(_imported_rooms(tree, name, set(paths))):
            if room != room_of(name):
                arrows[(room_of(name), room)] += 1
    return House(files, classes, functions, dict(sorted(arrows.items())))


def _mermaid(house: House) -> list[str]:
    def node(room: str) -> str:
        return room.replace("/", "_")

    lines = ["```mermaid", "flowchart TD"]
    for room, (files, total) in house.rooms().items():
        lines.append(f'  {node(room)}["{room}<br/>{files} files, {total} lines"]')
    for (a, b), n in house.arrows.items():
        lines.append(f"  {node(a)} -->|{n}| {node(b)}")
    return [*lines, "```"]


def comparison(before: House, after: House) -> str:
    """A Markdown page: what is over the bars before and after, the rooms, the drawing."""
    out = ["| | before | after |", "|---|---:|---:|"]
    out.append(f"| files | {len(before.files)} | {len(after.files)} |")
    out.append(f"| lines | {sum(before.files.values())} | {sum(after.files.values())} |")
    out.append(f"| largest file | {max(before.files.values())} | {max(after.files.values())} |")
    out.append(
        f"| functions over {FUNCTION_BAR} lines | {len(before.long_functions())} "
        f"| {len(after.long_functions())} |"
    )
    out.append(
        f"| classes over {CLASS_LINES_BAR} lines or {CLASS_METHODS_BAR} methods "
        f"| {len(before.big_classes())} | {len(after.big_classes())} |"
    )
    out.append(f"| arrows between rooms | {len(before.arrows)} | {len(after.arrows)} |")
    for title, house in (("Before", before), ("After", after)):
        out += ["", f"### {title}: over the bars", "", "| what | where | lines | methods |"]
        out.append("|---|---|---:|---:|")
        out += [
            f"| class `{c.name}` | {c.path} | {c.lines} | {c.methods} |"
            for c in house.big_classes()
        ]
        out += [f"| `{f.name}` | {f.path} | {f.lines} | |" for f in house.long_functions()]
    out += [
        "",
        "### Rooms",
        "",
        "| room | files before | lines before | files after | lines after |",
    ]
    out.append("|---|---:|---:|---:|---:|")
    old, new = before.rooms(), after.rooms()
    for room in sorted(old | new):
        (fb, lb), (fa, la) = old.get(room, (0, 0)), new.get(room, (0, 0))
        out.append(f"| {room} | {fb} | {lb} | {fa} | {la} |")
    out += ["", "### The house after (rooms, and imports between them)", "", *_mermaid(after)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, help="write this checkout's measurement here")
    parser.add_argument("--before", type=Path, help="another checkout to compare this one with")
    parser.add_argument("--markdown", type=Path, help="write the comparison here (with --before)")
    args = parser.parse_args(argv)
    house = measure()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(house.as_json(), indent=1) + "\n")
    if args.markdown:
        if args.before is None:
            parser.error("--markdown compares with another checkout: give --before DIR")
        args.markdown.write_text(comparison(measure(args.before), house))
    for f in house.long_functions():
        print(f"{f.lines:4d}  {f.path}  {f.name}")
    for c in house.big_classes():
        print(f"class {c.lines:4d} lines {c.methods:3d} methods  {c.path}  {c.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
