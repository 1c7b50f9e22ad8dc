"""The repository's shape: import layers, the layout the docs describe, test-helper imports, self-containment."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PKG = SRC / "slidewise"
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _contract(kind: str) -> dict:
    (contract,) = (c for c in CONFIG["tool"]["importlinter"]["contracts"] if c["type"] == kind)
    return contract


def _code_block(text: str, after: str) -> list[str]:
    """The lines of the first fenced block after the heading ``after``."""
    body = text[text.index(after) :]
    start = body.index("```\n") + 4
    return body[start : body.index("```", start)].splitlines()


def _packages() -> set[str]:
    """Every package under src/slidewise, as a path relative to it (``operators/joins/``)."""
    return {f"{p.parent.relative_to(PKG).as_posix()}/" for p in PKG.rglob("__init__.py") if p.parent != PKG}


def test_import_contracts_are_kept(capsys):
    """import-linter over the whole package: the layers of docs/architecture.md, no core import of bench."""
    from importlinter.cli import lint_imports

    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


def test_layers_cover_every_package():
    """Each top-level package and module is in exactly one layer, and the layers name only existing ones."""
    named = [m.strip().removeprefix("slidewise.") for layer in _contract("layers")["layers"] for m in layer.split("|")]
    modules = {p.stem for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert sorted(named) == sorted({p.split("/")[0] for p in _packages()} | modules)


def test_architecture_lists_the_layers_of_the_contract():
    """docs/architecture.md shows the contract's layers, top to bottom."""
    lines = _code_block((ROOT / "docs" / "architecture.md").read_text(), "## Paths and layers")
    documented = [re.split(r"\s{2,}", line.strip())[0] for line in lines if line.strip()]
    contract = [" | ".join(m.strip().removeprefix("slidewise.") for m in layer.split("|")) for layer in _contract("layers")["layers"]]
    assert documented == contract


def test_readme_layout_matches_the_tree():
    """Every path README's Layout names exists, and every package and top-level module is named."""
    named = set()
    base = ROOT
    for line in _code_block((ROOT / "README.md").read_text(), "## Layout"):
        indent = len(line) - len(line.lstrip())
        words = line.split()
        if not words:
            continue
        if indent == 0:  # a root: src/slidewise/, tests/
            root = ROOT / words[0]
            base = root
        elif indent == 2:  # an entry of the root
            entry = root / words[0]
            named.add(entry)
            base = entry if words[0].endswith("/") else root
        paths = re.findall(r"(?<![\w/.-])([\w.]+(?:/[\w.]+)*(?:/|\.py|\.lark|\.md))(?![\w/])", line)
        for path in paths[1:] if indent <= 2 else paths:
            named.add(base / path)
    missing = sorted(str(p.relative_to(ROOT)) for p in named if not p.exists())
    assert not missing, f"README's layout names paths that do not exist: {missing}"
    tree = {PKG / p for p in _packages()} | {p for p in PKG.iterdir() if p.name not in ("__init__.py", "__pycache__")}
    assert not tree - named, f"not in README's layout: {sorted(str(p.relative_to(ROOT)) for p in tree - named)}"


@pytest.mark.parametrize("doc", ["README.md", *(f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))), "src/slidewise/operators/joins/README.md"])
def test_paths_in_docs_exist(doc):
    """A `path/like.py` or `dir/` in the docs names a file of the repository (renames leave none stale)."""
    stale = []
    for token in re.findall(r"`([\w./-]+)`", (ROOT / doc).read_text()):
        if not re.search(r"\.(py|md|lark)$|/$", token) or token == "batch-NNNNNN/":
            continue
        if "/" in token.rstrip("/"):
            found = any((d / token).exists() for d in (ROOT, PKG, (ROOT / doc).parent))
        else:  # a bare file name: in a directory the sentence names
            found = any(ROOT.glob(f"src/**/{token}")) or any(ROOT.glob(f"tests/**/{token}")) or (ROOT / token).exists()
        if not found:
            stale.append(token)
    assert not stale, f"{doc} names missing files: {stale}"


def _dotted_references() -> dict[str, str]:
    found: dict[str, str] = {}
    files = [*PKG.rglob("*.py"), *PKG.rglob("*.md"), *PKG.rglob("*.lark"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    for path in files:
        for ref in re.findall(r"(?<![\w.])slidewise(?:\.[A-Za-z_]\w*)+", path.read_text()):
            found.setdefault(ref, str(path.relative_to(ROOT)))
    return found


# Spark settings, a checkpoint file and a placeholder that read like module paths
NOT_MODULES = {"slidewise.buckets", "slidewise.maxFilesPerTrigger", "slidewise.json", "slidewise.errors.X"}


def test_dotted_references_resolve():
    """Every dotted ``slidewise.<module>[.<name>]`` in code, docstrings and docs names a module or an attribute that exists."""
    import importlib

    stale = []
    for ref, where in sorted(_dotted_references().items()):
        if ref in NOT_MODULES:
            continue
        parts = ref.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ModuleNotFoundError:
                continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                stale.append(f"{ref} ({where})")
                break
            obj = getattr(obj, name)
    assert not stale, stale


def test_core_modules_import_without_bench():
    """Importing every module but bench's (the CLI's included) loads no bench module: the CLI reaches it lazily."""
    modules = sorted(
        ".".join(p.with_suffix("").relative_to(SRC).parts).removesuffix(".__init__") for p in PKG.rglob("*.py") if "bench" not in p.parts and p.name != "__main__.py"
    )
    code = f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\nprint(sorted(m for m in sys.modules if m.startswith('slidewise.bench')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(SRC), "PATH": ""}).stdout
    assert out.strip() == "[]"


def test_test_helpers_are_imported_as_tests_modules():
    """One import style for test helpers: ``from tests.oracle import ...``, never ``from oracle import ...``."""
    local = {p.stem for p in (ROOT / "tests").rglob("*.py")} - {"__init__"}
    bare = []
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            bare += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in local]
    assert not bare, bare


def test_every_test_directory_is_a_package():
    """tests/ and its subdirectories are packages: conftest.py files of two directories never clash."""
    for directory in {p.parent for p in (ROOT / "tests").rglob("*.py")}:
        assert (directory / "__init__.py").exists(), directory


def test_repository_stands_alone():
    """No code, test or doc refers to material outside the repository or to tracker numbers."""
    pattern = re.compile("|".join(["shared" + "/", "DESIGN" + " §", "seed" + r" 00[0-4]", "issue" + r" [0-9]"]))
    hits = []
    for path in [*PKG.rglob("*"), *(ROOT / "tests").rglob("*"), *(ROOT / "docs").rglob("*"), ROOT / "README.md"]:
        if path.is_file() and path.suffix in (".py", ".md", ".lark", ".toml", ".txt", ".json", ".csv", ""):
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if pattern.search(line):
                    hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, hits


def test_no_private_names_across_packages():
    """A package uses another package's public names only (``_name`` stays inside its package)."""
    found = set()
    for path in PKG.rglob("*.py"):
        module = ".".join(path.with_suffix("").relative_to(SRC).parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("slidewise."):
                if node.module.split(".")[:2] != module.split(".")[:2]:
                    found |= {f"{module} -> {node.module}.{a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")}
    assert not found, sorted(found)
