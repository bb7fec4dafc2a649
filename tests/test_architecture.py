"""The map stays true: each third-party library has one home module, every module says its place."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mdrag"
HOMES = {
    "pymilvus": {"store.py", "schema.py", "databases.py"},
    "milvus_lite": {"lite.py"},
    "sentence_transformers": {"embedder.py"},
    "torch": {"embedder.py", "export_model.py"},
    "transformers": {"embedder.py", "export_model.py"},
    "onnxruntime": {"embedder.py", "export_model.py"},
    "tokenizers": {"embedder.py"},
    "watchdog": {"watcher.py"},
    "markdown_it": {"sections.py", "links.py"},
    "frontmatter": {"document.py"},
    "click": {"cli.py", "cli_explore.py"},
    "tqdm": {"backend.py"},
    "mcp": {"mcp_server.py"},
    "pydantic": {"mcp_server.py"},
}


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_each_third_party_library_is_imported_only_in_its_home_module():
    for module in PACKAGE.glob("*.py"):
        for library in imports(module) & HOMES.keys():
            assert module.name in HOMES[library], f"{module.name} imports {library}"


def test_every_module_opens_with_a_docstring():
    for module in PACKAGE.glob("*.py"):
        assert ast.get_docstring(ast.parse(module.read_text())), f"{module.name} has no docstring"


def test_importing_the_cli_loads_neither_torch_nor_pymilvus():
    code = "import sys, mdrag.cli, mdrag.client; print([m for m in ('torch', 'pymilvus', 'sentence_transformers', 'mcp') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_mcp_server_loads_neither_torch_nor_pymilvus():
    """`mdrag mcp` is a client of the daemon, never a second owner of the index."""
    code = "import sys, mdrag.mcp_server; print([m for m in ('torch', 'pymilvus', 'sentence_transformers') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
