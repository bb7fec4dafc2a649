"""The map stays true: each third-party library has one home module, every module says its place."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mdrag"
HOMES = {
    "pymilvus": {"milvus/store.py", "milvus/schema.py", "milvus/databases.py"},
    "scipy": {"milvus/store.py"},  # only to load it whole before pymilvus does (see there)
    "milvus_lite": {"milvus/lite.py"},
    "sentence_transformers": {"embedding/runners.py"},
    "torch": {"embedding/export_model.py"},
    "transformers": {"embedding/runners.py", "embedding/export_model.py"},
    "onnxruntime": {"embedding/runners.py", "embedding/export_model.py"},
    "tokenizers": {"embedding/embedder.py", "embedding/runners.py"},
    "watchdog": {"index/watcher.py"},
    "markdown_it": {"notes/sections.py", "notes/links.py", "ui/render.py"},
    "frontmatter": {"notes/document.py"},
    "click": {"cli/main.py", "cli/explore.py"},
    "tqdm": {"cli/route.py"},
    "pathspec": {"notes/scanner.py"},
    "mcp": {"cli/mcp_server.py"},
    "pydantic": {"cli/mcp_server.py"},
    "starlette": {"ui/app.py", "ui/guard.py"},
    "uvicorn": {"ui/serve.py"},
    "jinja2": {"ui/app.py"},
    "markupsafe": {"ui/app.py"},
}


# What `mdrag.milvus` offers (its __init__ loads each on first use).
PUBLIC_MILVUS = {
    "CarriedVectors",
    "Store",
    "doc_id",
    "clip_bytes",
    "MAX_TAGS",
    "quote",
    "start_early",
    "index_exists",
    "index_held",
    "database_files",
}
# Only the modules that speak the socket protocol may import it; the core takes `params`.
WIRE = {
    "protocol.py",
    "serve/server.py",
    "serve/lobby.py",
    "cli/client.py",
    "serve/daemon.py",
    "cli/route.py",
    "cli/main.py",
    "cli/explore.py",
    "cli/mcp_server.py",
}
# Read features answer from the index; they never import the writer's modules.
READ_FEATURES = {
    "retrieval/search.py",
    "retrieval/similarity.py",
    "retrieval/related.py",
    "retrieval/context.py",
    "retrieval/gaps.py",
    "retrieval/notetext.py",
}
WRITER = {
    "mdrag.index.indexer",
    "mdrag.index.rows",
    "mdrag.carried",
    "mdrag.index.readahead",
    "mdrag.index.workqueue",
    "mdrag.index.watcher",
    "mdrag.serve.writer",
}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def name(module: Path) -> str:
    return module.relative_to(PACKAGE).as_posix()


def imported_modules(path: Path) -> set[str]:
    """Every module an import statement names, in full (`from a.b import c` names a.b and a.b.c)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def imports(path: Path) -> set[str]:
    return {module.split(".")[0] for module in imported_modules(path)}


def test_each_third_party_library_is_imported_only_in_its_home_module():
    for module in modules():
        for library in imports(module) & HOMES.keys():
            assert name(module) in HOMES[library], f"{name(module)} imports {library}"


def test_every_module_opens_with_a_docstring():
    for module in modules():
        assert ast.get_docstring(ast.parse(module.read_text())), f"{name(module)} has no docstring"


def test_only_the_wire_modules_import_the_protocol():
    for module in modules():
        if name(module) not in WIRE:
            assert "mdrag.protocol" not in imported_modules(module), f"{name(module)} imports the wire module"


def test_read_features_never_import_the_writer():
    for module in modules():
        if name(module) in READ_FEATURES:
            assert not imported_modules(module) & WRITER, f"{name(module)} imports the writer"


def test_nothing_outside_the_milvus_wing_imports_its_internals():
    for module in modules():
        if not name(module).startswith("milvus/"):
            inside = {m for m in imported_modules(module) if m.startswith("mdrag.milvus.")}
            internals = {m for m in inside if m.removeprefix("mdrag.milvus.") not in PUBLIC_MILVUS}
            assert not internals, f"{name(module)} imports {sorted(internals)}"


def test_importing_the_cli_loads_neither_torch_nor_pymilvus():
    code = "import sys, mdrag.cli.main, mdrag.cli.client; print([m for m in ('torch', 'pymilvus', 'sentence_transformers', 'mcp') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_mcp_server_loads_neither_torch_nor_pymilvus():
    """`mdrag mcp` is a client of the daemon, never a second owner of the index."""
    code = "import sys, mdrag.cli.mcp_server; print([m for m in ('torch', 'pymilvus', 'sentence_transformers') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_page_is_its_own_process_the_daemon_and_cli_never_load_the_web_framework():
    """`mdrag ui` talks to the daemon over its socket: the daemon imports no web code, and the CLI
    (a search, a status) loads Starlette and uvicorn only when the `ui` command runs."""
    code = "import sys, mdrag.cli.main, mdrag.serve.daemon; print([m for m in ('starlette', 'uvicorn', 'jinja2', 'mdrag.ui') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for module in modules():
        if not name(module).startswith("ui/") and name(module) != "cli/main.py":  # the `ui` command, lazily
            assert not {m for m in imported_modules(module) if m.startswith("mdrag.ui")}, name(module)


def test_the_page_loads_neither_torch_nor_pymilvus():
    code = "import sys, mdrag.ui.serve; print([m for m in ('torch', 'pymilvus', 'sentence_transformers', 'onnxruntime') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_milvus_public_face_is_what_the_architecture_allows():
    import mdrag.milvus

    assert set(mdrag.milvus.__all__) == PUBLIC_MILVUS
    assert all(getattr(mdrag.milvus, public) for public in PUBLIC_MILVUS)
