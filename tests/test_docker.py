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
