"""The qdmesh Helm chart: lint, render over several values files, every manifest and CRD valid
against the Kubernetes schemas, least-privilege RBAC, and what each values file changes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from .tools import CHART, REPO, SchemaStore, helm, kubeconform, render

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("helm_available")]

VALUES = Path(__file__).parent / "values"
VALUES_FILES = sorted(VALUES.glob("*.yaml"))
PROMETHEUS_KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule")  # their CRDs' schemas are not offline


def package_version() -> str:
    text = (REPO / "pyproject.toml").read_text()
    match = re.search(r'^version = "([^"]+)"', text, re.M)
    assert match
    return match.group(1)


def by_kind(docs: List[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def env_of(deployment: Dict[str, Any]) -> Dict[str, Any]:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}


@pytest.mark.parametrize("values", [None, *VALUES_FILES], ids=lambda v: v.stem if v else "defaults")
def test_lint_is_clean(values: Path | None) -> None:
    args = ["lint", "--strict", str(CHART), "--kube-version", "1.36.0"]
    if values:
        args += ["--values", str(values)]
    result = helm(*args, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("values", [None, *VALUES_FILES], ids=lambda v: v.stem if v else "defaults")
def test_every_rendered_manifest_is_valid(values: Path | None, schema_store: SchemaStore) -> None:
    docs = render([values] if values else [])
    result = kubeconform(schema_store, docs, skip=PROMETHEUS_KINDS)
    assert result.returncode == 0, result.stdout + result.stderr
    checked = len([d for d in docs if d["kind"] not in PROMETHEUS_KINDS])
    assert f"Valid: {checked}, Invalid: 0, Errors: 0" in result.stdout


def test_kubeconform_with_these_schemas_catches_mistakes(schema_store: SchemaStore) -> None:
    docs = render([VALUES / "monitoring.yaml"])
    deployment = by_kind(docs, "Deployment")[0]
    deployment["spec"]["replicas"] = "one"
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"
    mesh = by_kind(docs, "RouterMesh")[0]
    mesh["spec"]["sise"] = 3
    result = kubeconform(schema_store, [deployment, mesh])
    assert result.returncode == 1
    assert "Invalid: 2" in result.stdout
    assert "imagePullPolice" in result.stdout and "sise" in result.stdout


def test_defaults_install_one_operator_of_the_package_version() -> None:
    version = package_version()
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == version and chart["appVersion"] == version
    docs = render()
    assert sorted(d["metadata"]["name"] for d in by_kind(docs, "CustomResourceDefinition")) == [
        "autolinks.qdmesh.io", "linkroutes.qdmesh.io", "meshaccessgrants.qdmesh.io", "meshlinks.qdmesh.io",
        "routermeshes.qdmesh.io",
        "vhostpolicies.qdmesh.io"]
    [deployment] = by_kind(docs, "Deployment")
    spec = deployment["spec"]
    # One replica, leader election on: upgrades roll, the new pod waiting for the old one's Lease.
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "RollingUpdate"}
    assert env_of(deployment)["QDMESH_LEADER_ELECTION"] == "true"
    pod = spec["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == f"qdmesh/operator:{version}"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert env_of(deployment)["QDMESH_WATCH_NAMESPACES"] == ""
    assert "QDMESH_ROUTER_IMAGE" not in env_of(deployment)  # the operator's own version
    assert not by_kind(docs, "RouterMesh") and not by_kind(docs, "ServiceMonitor")
    # Memory sized for 100 (request) and 250 (limit) meshes of three routers with TLS
    # (bench/operator_soak.py), glibc's heaps kept to two.
    assert container["resources"]["requests"]["memory"] == "256Mi"
    assert container["resources"]["requests"]["cpu"] == "100m"
    assert container["resources"]["limits"]["memory"] == "512Mi"
    assert env_of(deployment)["MALLOC_ARENA_MAX"] == "2"


def rules_of(doc: Dict[str, Any]) -> Dict[str, set]:
    """resource (group/resource) -> verbs."""
    rules: Dict[str, set] = {}
    for rule in doc["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                rules.setdefault(f"{group}/{resource}", set()).update(rule["verbs"])
    return rules


def test_rbac_is_least_privilege() -> None:
    docs = render()
    roles = {d["metadata"]["name"]: rules_of(d) for d in by_kind(docs, "ClusterRole")}
    everything = [verb for rules in roles.values() for verbs in rules.values() for verb in verbs]
    assert "*" not in everything
    assert not any("*" in resource for rules in roles.values() for resource in rules)
    main = roles["qd-qdmesh"]
    assert main["/pods"] == {"get", "list", "watch"}
    assert "/pods/exec" not in main and "/pods/portforward" not in main
    assert main["qdmesh.io/routermeshes/status"] == {"get", "patch", "update"}
    assert main["qdmesh.io/routermeshes/finalizers"] == {"update"}
    assert "create" not in main["qdmesh.io/routermeshes"]  # never creates users' resources
    assert main["apps/statefulsets"] >= {"create", "patch", "delete"}
    assert main["/events"] == {"create", "patch"}
    assert "cert-manager.io/certificates" not in main
    discovery = roles["qd-qdmesh-discovery"]
    assert set().union(*discovery.values()) == {"get", "list", "watch"}


def watch_roles(docs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The Roles that grant rights on the watched namespaces (not the Lease's nor the grant
    server's CA Secret's)."""
    return [r for r in by_kind(docs, "Role")
            if not r["metadata"]["name"].endswith(("-leader-election", "-grant-server"))]


def test_namespace_scope_grants_roles_only_in_the_watched_namespaces() -> None:
    docs = render([VALUES / "namespace-scope.yaml"])
    roles = watch_roles(docs)
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    bindings = by_kind(docs, "RoleBinding")
    assert all(b["subjects"][0]["namespace"] == "qdmesh-system" for b in bindings)
    # Cluster-wide: only read access to CRDs and namespaces.
    [cluster_role] = by_kind(docs, "ClusterRole")
    assert set().union(*rules_of(cluster_role).values()) == {"get", "list", "watch"}
    assert env_of(by_kind(docs, "Deployment")[0])["QDMESH_WATCH_NAMESPACES"] == "team-a,team-b"


def test_namespace_scope_defaults_to_the_release_namespace() -> None:
    docs = render([], "--set", "watch.scope=namespace", namespace="messaging")
    assert [r["metadata"]["namespace"] for r in watch_roles(docs)] == ["messaging"]
    assert env_of(by_kind(docs, "Deployment")[0])["QDMESH_WATCH_NAMESPACES"] == "messaging"


def test_leader_election_has_its_lease_rights_and_lets_replicas_run() -> None:
    docs = render([], "--set", "operator.replicas=3", namespace="messaging")
    [deployment] = by_kind(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    pod_name = next(e for e in container["env"] if e["name"] == "POD_NAME")
    assert pod_name["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    [role] = [r for r in by_kind(docs, "Role") if r["metadata"]["name"] == "qd-qdmesh-leader-election"]
    assert role["metadata"]["namespace"] == "messaging"
    # Delete: a stopped leader deletes its Lease; its Deployment owns the Lease, so the garbage
    # collector deletes it on helm uninstall even when the last leader could not.
    assert rules_of(role) == {"coordination.k8s.io/leases": {"get", "create", "update", "delete"},
                              "apps/deployments": {"get"}}
    owner_rules = [r for r in role["rules"] if "deployments" in r["resources"]]
    assert [r.get("resourceNames") for r in owner_rules] == [["qd-qdmesh"]]
    assert env_of(deployment)["QDMESH_LEASE_OWNER"] == "deployment/qd-qdmesh"
    [binding] = [b for b in by_kind(docs, "RoleBinding")
                 if b["roleRef"]["name"] == "qd-qdmesh-leader-election"]
    assert binding["subjects"][0] == {"kind": "ServiceAccount", "name": "qd-qdmesh", "namespace": "messaging"}


def test_without_leader_election_one_operator_is_recreated_and_has_no_lease_rights() -> None:
    docs = render([], "--set", "operator.leaderElection=false")
    [deployment] = by_kind(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert env_of(deployment)["QDMESH_LEADER_ELECTION"] == "false"
    assert not [r for r in by_kind(docs, "Role") if "leases" in str(r["rules"])]


def test_custom_values_reach_the_deployment_and_rbac() -> None:
    docs = render([VALUES / "custom.yaml"])
    assert not by_kind(docs, "ServiceAccount")
    [deployment] = by_kind(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "platform-operator"
    container = pod["containers"][0]
    assert container["image"] == "registry.example.com/qdmesh/operator:0.1.0-patched"
    assert container["args"] == ["--verbose"]
    assert {p["containerPort"] for p in container["ports"]} == {18080, 19090, 8443}
    env = env_of(deployment)
    assert env["QDMESH_ROUTER_IMAGE"] == "registry.example.com/qdmesh/router:0.1.0-patched"
    assert env["QDMESH_LOG_LEVEL"] == "debug" and env["EXTRA"] == "1"
    main = rules_of(next(r for r in by_kind(docs, "ClusterRole") if r["metadata"]["name"] == "qd-qdmesh"))
    assert main["/secrets"] == {"get", "list", "watch"}
    assert "create" in main["cert-manager.io/certificates"]


def test_grant_server_service_rights_and_urls() -> None:
    docs = render([], "--set", "grantServer.service.type=NodePort", "--set",
                  "grantServer.service.nodePort=31443", "--set", "grantServer.host=grants.example.com",
                  namespace="messaging")
    [service] = [s for s in by_kind(docs, "Service") if s["metadata"]["name"] == "qdmesh-grant-server"]
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["ports"] == [{"name": "grants", "port": 8443, "targetPort": "grants",
                                         "protocol": "TCP", "nodePort": 31443}]
    env = env_of(by_kind(docs, "Deployment")[0])
    assert (env["QDMESH_GRANT_SERVER_PORT"], env["QDMESH_GRANT_SERVER_HOST"],
            env["QDMESH_GRANT_SERVER_ADVERTISED_PORT"]) == ("8443", "grants.example.com", "31443")
    [role] = [r for r in by_kind(docs, "Role") if r["metadata"]["name"] == "qd-qdmesh-grant-server"]
    assert role["metadata"]["namespace"] == "messaging"
    gets = [r.get("resourceNames") for r in role["rules"] if r["verbs"] == ["get"]]
    assert gets == [["qdmesh-grant-server-ca"]]
    main = rules_of(next(r for r in by_kind(docs, "ClusterRole") if r["metadata"]["name"] == "qd-qdmesh"))
    assert main["qdmesh.io/meshaccessgrants/status"] == {"get", "patch", "update"}
    assert "create" not in main["qdmesh.io/meshaccessgrants"]
    assert "create" in main["networking.k8s.io/ingresses"] and "create" in main["route.openshift.io/routes"]
    off = render([], "--set", "grantServer.enabled=false")
    assert env_of(by_kind(off, "Deployment")[0])["QDMESH_GRANT_SERVER_PORT"] == "0"
    assert not [s for s in by_kind(off, "Service") if s["metadata"]["name"] == "qdmesh-grant-server"]


def test_monitoring_and_sample_mesh() -> None:
    docs = render([VALUES / "monitoring.yaml"])
    [monitor] = by_kind(docs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert monitor["spec"]["endpoints"][0]["honorLabels"] is True  # the gauges' own namespace label
    [service] = [s for s in by_kind(docs, "Service") if s["metadata"]["name"] != "qdmesh-grant-server"]
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    [pods] = by_kind(docs, "PodMonitor")
    assert pods["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "qdmesh-router"}
    assert pods["spec"]["podMetricsEndpoints"][0]["port"] == "http"
    assert pods["spec"]["podMetricsEndpoints"][0]["path"] == "/metrics"
    # Prometheus turns the pod label into qdmesh_io_mesh, which docs/grafana's dashboard filters on.
    assert pods["spec"]["podTargetLabels"] == ["qdmesh.io/mesh", "qdmesh.io/edge-of", "qdmesh.io/edge-group"]
    [mesh] = by_kind(docs, "RouterMesh")
    assert mesh["metadata"]["name"] == "demo"
    assert mesh["spec"] == {"size": 3, "disruptionBudget": {"minAvailable": 2},
                            "maintenanceTimeWindows": ["* 0-1 * * SAT,SUN"],
                            "edgeGroups": [{"name": "apps", "size": 2}, {"name": "nodes", "perNode": True}]}


@pytest.mark.parametrize("setting, says", [
    ("watch.scope=everywhere", "at '/watch/scope': value must be one of 'cluster', 'namespace'"),
    ("operator.healthPort=70000", "at '/operator/healthPort': maximum: got 70,000, want 65,535"),
    ("sampleMesh.size=0", "at '/sampleMesh/size': minimum: got 0, want 1"),
    ("sampleMesh.edgeGroups[0].name=Apps", "at '/sampleMesh/edgeGroups/0"),
    ("sampleMesh.disruptionBudget.minAvailable=half", "at '/sampleMesh/disruptionBudget/minAvailable'"),
    ("sampleMesh.maintenanceTimeWindows[0]=sundays", "at '/sampleMesh/maintenanceTimeWindows/0'"),
    ("operator.logLevel=loud", "at '/operator/logLevel': value must be one of 'debug', 'info'"),
    ("replicas=2", "additional properties 'replicas' not allowed"),
    ("operator.replicas=0", "at '/operator/replicas': minimum: got 0, want 1"),
    ("metrics.serviceMonitor.interval=often",
     "at '/metrics/serviceMonitor/interval': 'often' does not match"),
])
def test_bad_values_are_refused_by_the_schema_naming_the_field(setting: str, says: str) -> None:
    result = helm("template", "qd", str(CHART), "--kube-version", "1.36.0", "--set", setting, check=False)
    assert result.returncode != 0
    assert "values don't meet the specifications of the schema" in result.stderr
    assert says in result.stderr, result.stderr


@pytest.mark.parametrize("setting, says", [
    ("image.tag=latest", "image.tag: 'latest' is not allowed"),
    ("routerImage=qdmesh/router:latest", 'routerImage: "qdmesh/router:latest" uses the \'latest\' tag'),
    ("routerImage=registry:5000/qdmesh/router", 'routerImage: "registry:5000/qdmesh/router" has no tag'),
    ("watch.namespaces={a}", "watch.namespaces: only used with watch.scope=namespace"),
    ("operator.replicas=2,operator.leaderElection=false",
     "operator.replicas: 2 replicas need operator.leaderElection=true"),
])
def test_values_the_schema_cannot_phrase_are_refused_by_the_chart(setting: str, says: str) -> None:
    result = helm("template", "qd", str(CHART), "--kube-version", "1.36.0", "--set", setting, check=False)
    assert result.returncode != 0
    assert says in result.stderr, result.stderr


def test_image_pull_secrets_reach_the_operator_and_the_sample_mesh(schema_store: SchemaStore) -> None:
    docs = render([], "--set", "imagePullSecrets[0].name=regcred", "--set", "sampleMesh.enabled=true")
    [deployment] = by_kind(docs, "Deployment")
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    [mesh] = by_kind(docs, "RouterMesh")
    assert mesh["spec"]["pod"] == {"imagePullSecrets": [{"name": "regcred"}]}
    result = kubeconform(schema_store, docs)  # the RouterMesh against its CRD's schema
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_pinned_router_image_on_a_registry_with_a_port_is_accepted() -> None:
    docs = render([], "--set", "routerImage=registry:5000/qdmesh/router:1.0")
    assert env_of(by_kind(docs, "Deployment")[0])["QDMESH_ROUTER_IMAGE"] == "registry:5000/qdmesh/router:1.0"


def test_crd_copies_match_the_sources() -> None:
    sources = sorted(p.name for p in (REPO / "crds").glob("qdmesh.io_*.yaml"))
    assert sources == ["qdmesh.io_autolinks.yaml", "qdmesh.io_linkroutes.yaml",
                       "qdmesh.io_meshaccessgrants.yaml", "qdmesh.io_meshlinks.yaml",
                       "qdmesh.io_routermeshes.yaml", "qdmesh.io_vhostpolicies.yaml"]
    result = subprocess.run(["bash", str(REPO / "charts" / "sync-crds.sh"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"run charts/sync-crds.sh: {result.stderr}"
    for name in sources:
        assert (CHART / "crds" / name).read_bytes() == (REPO / "crds" / name).read_bytes()


def test_alert_rules_as_a_prometheus_rule_with_their_runbook_links() -> None:
    [rule] = by_kind(render([VALUES / "monitoring.yaml"]), "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    assert "QdmeshRoutersLost" in alerts and "QdmeshRouteUnreachable" in alerts
    assert alerts["QdmeshRoutersLost"]["annotations"]["runbook_url"] == \
        "https://runbooks.example.com/qdmesh#routers-lost"
    # Prometheus' own templates reach the rule as they are, for Prometheus to fill in.
    assert "{{ $labels.mesh }}" in alerts["QdmeshRoutersLost"]["annotations"]["summary"]
    assert not by_kind(render(), "PrometheusRule")
