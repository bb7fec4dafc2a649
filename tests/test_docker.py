"""The Milvus server deployment: the compose file validates with a real compose tool and the README matches it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker" / "docker-compose.yml"


@pytest.fixture(scope="module")
def resolved() -> dict:
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.fail(
            "docker-compose is not installed: `apt-get install docker-compose` (make test does it as root)"
        )
    result = subprocess.run(
        [tool, "-f", str(COMPOSE), "config"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NOTES": str(ROOT / "examples" / "notes")},
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_compose_file_validates_and_runs_milvus_standalone_with_etcd_and_object_storage(resolved):
    services = resolved["services"]
    assert {"etcd", "minio", "milvus", "mdrag"} <= set(services)
    assert re.match(r"milvusdb/milvus:v2\.[56]\.", services["milvus"]["image"])
    assert services["milvus"]["command"] == ["milvus", "run", "standalone"]


def test_the_mdrag_service_watches_the_notes_and_shares_its_socket(resolved):
    mdrag = resolved["services"]["mdrag"]
    env = mdrag["environment"]
    assert env["MDRAG_MILVUS_URI"] == "http://milvus:19530"
    assert env["MDRAG_ROOTS"] == "/notes"
    socket_dir = os.path.dirname(env["MDRAG_SERVER_SOCKET_PATH"])
    assert any(
        str(volume).endswith(f":{socket_dir}:rw") or str(volume).endswith(f":{socket_dir}")
        for volume in mdrag["volumes"]
    )
    assert (ROOT / "docker" / "Dockerfile").is_file()


def test_readme_explains_moving_to_a_server_as_the_compose_file_does():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## When you outgrow Milvus Lite", 1)[1].split("\n## ", 1)[0]
    image = re.search(r"milvusdb/milvus:(v[\d.]+)", COMPOSE.read_text()).group(1)
    assert image in section
    for needle in (
        "milvus.uri: http://",
        "milvus.token",
        "TLS",
        "docker-compose -f docker/docker-compose.yml",
        "https://milvus.io/docs",
    ):
        assert needle in section, needle


def test_mdrag_waits_for_a_healthy_milvus_whose_ports_only_this_machine_reaches(resolved):
    services = resolved["services"]
    assert services["mdrag"]["depends_on"]["milvus"]["condition"] == "service_healthy"
    assert services["milvus"]["healthcheck"]["test"]
    published = [str(port) for port in services["milvus"]["ports"]]
    assert published and all(port.startswith("127.0.0.1:") for port in published), published


def test_the_image_is_usable_by_any_uid_and_reports_its_health():
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    env = dict(re.findall(r"\b(HOME|XDG_\w+_HOME)=(\S+)", dockerfile))
    assert env["HOME"] != "/" and set(env) >= {"HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"}
    # The ONNX export happens at build time, into the cache the running daemon reads.
    assert re.search(r"RUN python -c .*Embedder\(\)\.load\(\)", dockerfile)
    assert "HEALTHCHECK" in dockerfile and "mdrag status" in dockerfile.split("HEALTHCHECK", 1)[1]


def test_the_build_context_holds_only_what_the_image_copies():
    lines = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"  # everything out (the 2 GB .venv, .git, .run), then what COPY needs back
    copied = re.findall(r"^COPY (.+) \S+$", (ROOT / "docker" / "Dockerfile").read_text(), re.MULTILINE)
    for source in " ".join(copied).split():
        assert f"!{source.rstrip('/')}" in [line.rstrip("/") for line in lines], source
    assert not any(line.startswith("!.venv") or line.startswith("!.git") for line in lines)
