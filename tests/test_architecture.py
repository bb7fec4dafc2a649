"""The map stays true: each third-party library has one home module, every module says its place."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mdrag"
HOMES = {
    "pymilvus": {
        "milvus/store.py",
        "milvus/calls.py",
        "milvus/schema.py",
        "milvus/databases.py",
        "milvus/hits.py",
        "milvus/layout.py",
        "milvus/loading.py",
        "milvus/vectorreads.py",
    },
    "scipy": {"milvus/hits.py"},  # only to load it whole before pymilvus does (see there)
    "milvus_lite": {"milvus/lite.py"},
    "sentence_transformers": {"embedding/runners.py"},
    "torch": {"embedding/export_model.py"},
    "transformers": {"embedding/runners.py", "embedding/export_model.py"},
    "onnxruntime": {"embedding/runners.py", "embedding/export_model.py"},
    "tokenizers": {"embedding/embedder.py", "embedding/runners.py"},
    "watchdog": {"index/watcher.py"},
    "markdown_it": {"notes/sections.py", "notes/blocks.py", "notes/links.py", "ui/render.py"},
    "frontmatter": {"notes/frontblock.py"},
    "click": {"cli/main.py", "cli/explore.py", "cli/output.py", "cli/options.py"},
    "tqdm": {"cli/command.py"},
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
    "PendingKeywords",
    "Store",
    "clip_bytes",
    "pack_vector",
    "MAX_TAGS",
    "note_scope",
    "NoteScope",
    "quote",
    "start_early",
    "index_exists",
    "index_held",
    "database_files",
    "KeywordRow",
    "MetadataRow",
    "Shown",
    "ShownRow",
    "VectorKey",
    "VectorRow",
    "WindowRow",
}
# The wings, by folder: the base modules at the top of the package, then each sub-package.
# The composition root (service.py) builds the service from the wings below it.
BASE = "base"
# Folders of the base: the answers' shapes, the requests' params and the files kept on disk.
BASE_FOLDERS = {"answers", "files", "params", "text"}
ROOT = "service"
LOWER = {"notes", "embedding", "milvus"}  # what notes, models and the engine are: import only the base
# What each wing may never import (beyond the rules for every wing below).
NEVER = {
    BASE: {"notes", "embedding", "milvus", "index", "retrieval", "serve", "client", "cli", "ui", ROOT},
    "retrieval": {
        "index",
        "serve",
        "client",
        "cli",
        "ui",
        ROOT,
    },  # read features never import the writer's side
    "index": {"retrieval", "serve", "client", "cli", "ui", ROOT},
    "serve": {"client", "cli", "ui"},
    # Under the fronts, what they share: it reaches the daemon, or opens the index in this process.
    "client": {"serve", "cli", "ui"},
    "cli": {"serve"},  # a front reaches the daemon over its socket; only `serve` starts one (below)
    # The page is a client of the daemon, and a front beside the CLI: it shares `client`, never `cli`.
    "ui": {"serve", "index", "milvus", "embedding", "cli", ROOT},
}
# Only the daemon and the client wing speak the socket protocol; the core takes `params`.
WIRE_WINGS = {"serve", "client"}
# The one place a front starts the daemon itself: `mdrag serve` (lazily, inside the command).
STARTS_THE_DAEMON = {"cli/main.py"}


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


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)


def test_a_script_runs_its_main_only_after_everything_it_defines():
    """`python -m bench.query` once died at its growth step: a helper defined below the
    `if __name__ == "__main__"` block did not exist yet when main() ran (imported, it did)."""
    scripts = [*modules(), *sorted((PACKAGE.parent / "bench").rglob("*.py"))]
    for script in scripts:
        body = ast.parse(script.read_text()).body
        guards = [i for i, node in enumerate(body) if _is_main_guard(node)]
        assert not guards or guards == [len(body) - 1], f"{script} defines things after its main guard"


def wing(module: Path) -> str:
    """The wing a module belongs to: its folder under the package, or the base (or root) at the top."""
    parts = module.relative_to(PACKAGE).parts
    if len(parts) > 1:
        return BASE if parts[0] in BASE_FOLDERS else parts[0]
    return ROOT if parts[0] == "service.py" else BASE


def wing_of(imported: str) -> str | None:
    """The wing of an imported `mdrag.…` module, or None for anything else."""
    parts = imported.split(".")
    if parts[0] != "mdrag" or len(parts) == 1:
        return None
    if (PACKAGE / parts[1]).is_dir():
        return BASE if parts[1] in BASE_FOLDERS else parts[1]
    return ROOT if parts[1] == "service" else BASE


def wings_imported(module: Path) -> set[str]:
    return {w for w in map(wing_of, imported_modules(module)) if w is not None}


def test_the_lower_wings_import_only_the_base_and_themselves():
    for module in modules():
        if wing(module) in LOWER:
            above = wings_imported(module) - {BASE, wing(module)}
            assert not above, f"{name(module)} imports {sorted(above)}"


def test_no_wing_imports_what_lies_above_it():
    for module in modules():
        forbidden = wings_imported(module) & NEVER.get(wing(module), set())
        if name(module) in STARTS_THE_DAEMON:
            forbidden -= {"serve"}
        assert not forbidden, f"{name(module)} imports {sorted(forbidden)}"


def test_only_the_daemon_and_the_client_wing_import_the_protocol():
    for module in modules():
        if wing(module) not in WIRE_WINGS and name(module) != "protocol.py":
            assert "mdrag.protocol" not in imported_modules(module), f"{name(module)} imports the wire module"


def test_the_rules_see_every_module():
    """A rule by folder holds only if the folders are the wings it names: a new folder joins a rule."""
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert folders == LOWER | BASE_FOLDERS | {"index", "retrieval", "serve", "client", "cli", "ui"}


def test_nothing_outside_the_milvus_wing_imports_its_internals():
    for module in modules():
        if not name(module).startswith("milvus/"):
            inside = {m for m in imported_modules(module) if m.startswith("mdrag.milvus.")}
            internals = {m for m in inside if m.removeprefix("mdrag.milvus.") not in PUBLIC_MILVUS}
            assert not internals, f"{name(module)} imports {sorted(internals)}"


def test_importing_the_cli_loads_only_what_a_client_needs():
    """Every `mdrag search` process pays its imports (~0.1 s of it): no model, engine or MCP SDK,
    none of the daemon's scoring, none of the index's own code, and no YAML parser until a config
    file is read."""
    heavy = (
        "torch",
        "pymilvus",
        "sentence_transformers",
        "mcp",
        "yaml",
        "mdrag.retrieval.relevance",
        "mdrag.retrieval.search",
        # the wire's shapes: for the type checker (~3 ms to build)
        "mdrag.answers.search",
        "mdrag.answers.status",
        "mdrag.answers.notes",
        # the index's own: a search through the daemon never opens it
        "mdrag.milvus.lite",
        "mdrag.files.indexlock",
        "mdrag.files.indexfiles",
    )
    code = f"import sys, mdrag.cli.main, mdrag.client.connection; print([m for m in {heavy!r} if m in sys.modules])"
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


DESIGN_PAGE_LINES = 250  # a design page is read at one sitting


def test_the_design_is_split_into_pages_short_enough_to_read_and_the_index_names_each():
    docs = PACKAGE.parent / "docs"
    index = (docs / "design.md").read_text()
    pages = sorted((docs / "design").glob("*.md"))
    assert pages
    for page in [docs / "design.md", *pages]:
        lines = page.read_text().count("\n")
        assert lines <= DESIGN_PAGE_LINES, f"{page.name}: {lines} lines (at most {DESIGN_PAGE_LINES})"
    for page in pages:
        assert f"(design/{page.name})" in index, f"docs/design.md does not link {page.name}"


# The budgets that keep the map readable: a module a person reads in one sitting, a base small
# enough to hold in mind, and a README that is a user's guide (figures live in docs/benchmarks.md).
MODULE_LINES = 400
TOP_MODULES = 12
README_LINES = 350


def test_every_module_is_within_its_line_budget():
    """mdrag's modules and the bench tools alike: a measurement is read as often as the code."""
    tools = sorted((PACKAGE.parent / "bench").rglob("*.py"))
    over = {
        m.relative_to(PACKAGE.parent).as_posix(): n
        for m in [*modules(), *tools]
        if (n := m.read_text().count("\n")) > MODULE_LINES
    }
    assert not over, f"over {MODULE_LINES} lines: {over}"


def test_the_top_of_the_package_holds_few_modules():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_MODULES, f"{len(top)} modules at the top of mdrag/: {top}"


def test_the_readme_is_within_its_budget():
    lines = (PACKAGE.parent / "README.md").read_text().count("\n")
    assert lines <= README_LINES, f"README.md: {lines} lines (at most {README_LINES})"


def module_name(module: Path) -> str:
    parts = module.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph() -> dict[str, set[str]]:
    """Each mdrag module and the mdrag modules it imports, type-checking imports included.
    `from mdrag.milvus import lite` imports the module `lite`, not the package's own code."""
    known = {module_name(m): m for m in modules()}
    graph: dict[str, set[str]] = {}
    for name_, path in known.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known.keys()
                targets.update(submodules)
                if len(submodules) < len(node.names):
                    targets.add(node.module)
        graph[name_] = {t for t in targets if t in known and t != name_}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan): each holds a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_and_no_wing_imports_itself_back_through_others():
    graph = module_graph()
    assert not circles(graph), f"modules in a circle: {circles(graph)}"
    wings: dict[str, set[str]] = {}
    for source, targets in graph.items():
        here = wing_of(source) or BASE
        wings.setdefault(here, set()).update(w for t in targets if (w := wing_of(t) or BASE) != here)
    assert not circles(wings), f"wings in a circle: {circles(wings)}"
