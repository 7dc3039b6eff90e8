"""devtools.house_sizes on a small tree written here: what it counts, and the comparison page."""

from __future__ import annotations

from pathlib import Path

from devtools.house_sizes import comparison, measure, room_of

PACKAGES = ("shop",)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def long_function(name: str, lines: int) -> str:
    return f"def {name}() -> None:\n" + "    pass\n" * (lines - 1)


def test_rooms_are_folders_two_deep() -> None:
    assert room_of("agent/leg/socket.py") == "agent/leg"
    assert room_of("tts_server/engines/onnx/split.py") == "tts_server/engines"
    assert room_of("agent/config.py") == "agent"


def test_it_counts_files_classes_methods_functions_and_arrows(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "shop/__init__.py": "",
            "shop/till/__init__.py": "",
            "shop/till/drawer.py": (
                "from shop.stock import shelf\nfrom ..stock.shelf import Shelf\n\n"
                "class Drawer:\n    def a(self) -> None:\n        def inner() -> None: ...\n\n"
                "    async def b(self) -> None: ...\n"
            ),
            "shop/stock/__init__.py": "",
            "shop/stock/shelf.py": "class Shelf: ...\n\n" + long_function("restock", 61),
        },
    )
    house = measure(root, PACKAGES)
    assert house.files["shop/stock/shelf.py"] == 63
    assert house.rooms()["shop/till"] == (2, 8)
    [drawer] = [c for c in house.classes if c.name == "Drawer"]
    assert (drawer.lines, drawer.methods) == (5, 2)  # the nested function is not a method
    assert {f.name for f in house.functions} >= {"Drawer.a", "Drawer.a.inner", "Drawer.b"}
    assert [f.name for f in house.long_functions(60)] == ["restock"]
    assert house.arrows == {("shop/till", "shop/stock"): 1}  # one arrow a file, however many names


def test_the_comparison_says_what_went_over_and_under_the_bars(tmp_path: Path) -> None:
    before = measure(write(tmp_path / "a", {"shop/x.py": long_function("big", 70)}), PACKAGES)
    after = measure(write(tmp_path / "b", {"shop/x.py": long_function("big", 30)}), PACKAGES)
    page = comparison(before, after)
    assert "| functions over 60 lines | 1 | 0 |" in page
    assert "| `big` | shop/x.py | 70 | |" in page
    assert "```mermaid" in page
