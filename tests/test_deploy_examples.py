"""The container and Kubernetes examples (examples/deploy/) are not run here (no container
runtime or cluster on this machine), so they are checked against the code instead: they parse,
their config validates, every port is the gateway's, every ``PEGBOARD_*`` variable is one
pegboard reads, each replica names the team store, and the serve command's options exist.
A renamed setting or option fails this test rather than drifting silently."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import yaml

from pegboard.config import load as config_load
from pegboard.config.model import GatewayConfig, PegboardConfig
from pegboard.postgres.connect import REPLICA_ENV
from tests.gateway.harness import PEGBOARD
from tests.pg.balancer import require_haproxy

DEPLOY = Path(__file__).resolve().parents[1] / "examples" / "deploy"
PORT = GatewayConfig().port
KNOWN_ENV = {
    config_load.CONFIG_ENV,
    config_load.DATA_DIR_ENV,
    config_load.TOKEN_ENV,
    config_load.STORE_URL_ENV,
    REPLICA_ENV,
}
SERVE = ["pegboard", "serve", "--http", "--host", "0.0.0.0", "--port", str(PORT)]


def _text(name: str) -> str:
    return (DEPLOY / name).read_text(encoding="utf-8")


def _kubernetes() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(_text("kubernetes.yaml"))}


def test_every_pegboard_variable_the_examples_set_is_one_pegboard_reads() -> None:
    for name in ("Dockerfile", "compose.yaml", "kubernetes.yaml", "config.toml"):
        named = set(re.findall(r"\bPEGBOARD_[A-Z_]+", _text(name)))
        assert named <= KNOWN_ENV, (name, named - KNOWN_ENV)


def test_both_configs_validate_and_serve_on_the_gateway_port() -> None:
    configmap = _kubernetes()["ConfigMap"]["data"]["config.toml"]
    for text in (_text("config.toml"), configmap):
        config = PegboardConfig.model_validate(tomllib.loads(text))
        assert config.gateway.port == PORT
        assert config.store.url is None  # the URL (with its password) comes from the env


def test_the_image_runs_the_real_serve_command_on_the_gateway_port() -> None:
    dockerfile = _text("Dockerfile")
    [cmd] = re.findall(r"^CMD (\[.*\])$", dockerfile, re.M)
    assert yaml.safe_load(cmd) == SERVE
    assert f"EXPOSE {PORT}" in dockerfile
    assert "'.[postgres]'" in dockerfile  # the team store's extra
    [container] = _kubernetes()["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert container["args"] == SERVE
    helped = subprocess.run([PEGBOARD, "serve", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0, helped.stderr
    for option in (a for a in SERVE if a.startswith("--")):
        assert option in helped.stdout, option


def test_compose_runs_three_named_replicas_on_one_store_behind_haproxy() -> None:
    compose = yaml.safe_load(_text("compose.yaml"))
    services = compose["services"]
    replicas = {k: v for k, v in services.items() if k.startswith("pegboard-")}
    assert len(replicas) == 3
    names = set()
    for service in replicas.values():
        env = service["environment"]
        assert env[config_load.STORE_URL_ENV].startswith("postgresql://")
        assert "@postgres:5432/" in env[config_load.STORE_URL_ENV]
        assert config_load.TOKEN_ENV in env  # a non-loopback bind needs it
        assert env[config_load.CONFIG_ENV] == "/etc/pegboard/config.toml"
        assert any(v.endswith(":/etc/pegboard/config.toml:ro") for v in service["volumes"])
        names.add(env[REPLICA_ENV])
    assert names == set(replicas)
    assert services["haproxy"]["ports"] == [f"127.0.0.1:{PORT}:{PORT}"]
    cfg = _text("haproxy.cfg")
    assert f"bind :{PORT}" in cfg
    assert sorted(re.findall(r"server (pegboard-\d) \1:(\d+)", cfg)) == [
        (name, str(PORT)) for name in sorted(replicas)
    ]
    assert "balance roundrobin" in cfg
    directives = [line.split()[0] for line in cfg.splitlines() if line.strip()[:1] not in "#"]
    assert not {"stick", "stick-table", "cookie", "hash-type"} & set(directives)  # none needed


def test_the_haproxy_config_is_valid_for_haproxy() -> None:
    binary = require_haproxy()  # skips without it, fails under CI=true
    checked = subprocess.run(
        [binary, "-c", "-f", str(DEPLOY / "haproxy.cfg")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_kubernetes_runs_three_replicas_named_by_pod_behind_a_plain_service() -> None:
    docs = _kubernetes()
    assert set(docs) == {"ConfigMap", "Secret", "Deployment", "Service"}
    deployment, service = docs["Deployment"], docs["Service"]
    assert deployment["spec"]["replicas"] == 3
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert set(env) <= KNOWN_ENV
    secret_key = env[config_load.STORE_URL_ENV]["valueFrom"]["secretKeyRef"]["key"]
    assert secret_key in docs["Secret"]["stringData"]
    assert env[REPLICA_ENV]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    config_dir = str(Path(env[config_load.CONFIG_ENV]["value"]).parent)
    assert {"name": "config", "mountPath": config_dir, "readOnly": True} in container[
        "volumeMounts"
    ]
    assert container["ports"] == [{"name": "mcp", "containerPort": PORT}]
    assert service["spec"]["ports"] == [{"name": "mcp", "port": PORT, "targetPort": "mcp"}]
    assert "sessionAffinity" not in service["spec"]
