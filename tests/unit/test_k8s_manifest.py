"""deploy/k8s.yaml against the Kubernetes API schema and what a pod needs to start.

Every object is validated by the model of its kind in the pinned `kubernetes` client
(deps/test.txt: its models are the API's OpenAPI schema as pydantic classes that forbid unknown
fields and check each field's type), then held to explicit rules: a startupProbe before
liveness, readiness on /health, liveness on /health?live=1, the model and cache volumes, the
profile, requests and limits, a non-root read-only securityContext, and the image tag
deploy/build_image.sh produces. And who may reach it: the API key from a Secret (created by the
command the file gives, never shipped in it: the commented example is validated too), vLLM's
key left to serve.sh (fresh at each container start, so never stored), no service-account token
in the pod, and a NetworkPolicy that lets only the ingress namespace or
labelled client pods reach the port and the pod only DNS and public HTTPS. Needs PyYAML and
kubernetes (the venv); skipped under the machine's python3 -S, a failure anywhere else without
them.
"""
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "k8s.yaml"
try:
    import yaml
    from kubernetes.client import models
except ImportError as e:  # python3 -S: no site-packages
    yaml = models = None
    MISSING = str(e)

KINDS = {("apps/v1", "Deployment"): "V1Deployment", ("v1", "Service"): "V1Service",
         ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim", ("v1", "Secret"): "V1Secret",
         ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy"}
PRIVATE = {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"}


def schema_errors(doc: dict) -> list[str]:
    """The kind's model validating the object: [] or the schema's complaints."""
    name = KINDS.get((doc.get("apiVersion"), doc.get("kind")))
    if name is None:
        return [f"no schema model here for {doc.get('apiVersion')} {doc.get('kind')}"]
    try:
        getattr(models, name).model_validate(doc)
    except Exception as e:  # pydantic's ValidationError lists every field
        return [f"{doc['kind']}: {e}"]
    return []


def pod_problems(deployment: dict) -> list[str]:
    """What would keep a pod from starting, or restart it while it starts."""
    spec = deployment["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    sec, pod_sec = c.get("securityContext", {}), spec.get("securityContext", {})
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"] for v in spec.get("volumes", [])}
    tag = subprocess.run(["bash", str(ROOT / "deploy" / "build_image.sh"), "--print-tag",
                          "--target", "gpu"], capture_output=True, text=True).stdout.strip()
    startup, live = c.get("startupProbe"), c.get("livenessProbe", {})
    rules = {
        "a startupProbe on /health?live=1": startup and startup["httpGet"]["path"] == "/health?live=1",
        "the startupProbe allows at least 5 minutes": startup and
            startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3) >= 300,
        "readiness on /health": c.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/health",
        "liveness on /health?live=1": live.get("httpGet", {}).get("path") == "/health?live=1",
        "ONEPASS_PROFILE set": bool(env.get("ONEPASS_PROFILE")),
        "ONEPASS_MODEL under the model volume": (env.get("ONEPASS_MODEL") or "").startswith(
            next((p for p, n in mounts.items() if n == "models"), "?")),
        "volumes for the model, home (logs, caches) and /tmp": {"/models", "/home/onepass",
                                                                 "/tmp"} <= set(mounts),
        "every mount has a volume": set(mounts.values()) <= volumes,
        # serve.sh's default for the GPU's compiled graphs is in the image, read-only here
        "vLLM's compile cache (VLLM_CACHE_ROOT) on a writable volume": any(
            (env.get("VLLM_CACHE_ROOT") or "").startswith(m["mountPath"] + "/")
            and not m.get("readOnly") for m in c.get("volumeMounts", [])),
        "the processes' logs on stdout (ONEPASS_LOG_STDOUT=1)": env.get("ONEPASS_LOG_STDOUT") == "1",
        "cpu and memory requests": {"cpu", "memory"} <= set(c.get("resources", {}).get("requests", {})),
        "a memory limit": "memory" in c.get("resources", {}).get("limits", {}),
        "runAsNonRoot": sec.get("runAsNonRoot", pod_sec.get("runAsNonRoot")) is True,
        "readOnlyRootFilesystem": sec.get("readOnlyRootFilesystem") is True,
        "no privilege escalation": sec.get("allowPrivilegeEscalation") is False,
        "capabilities dropped": "ALL" in sec.get("capabilities", {}).get("drop", []),
        f"the image tag build_image.sh makes ({tag})": bool(tag) and c["image"].endswith("/" + tag),
    }
    return [rule for rule, ok in rules.items() if not ok]


def secret_example(text: str) -> dict | None:
    """The Secret the file shows in comments (its `#| ` lines), or None."""
    lines = [line[3:] for line in text.splitlines() if line.startswith("#| ")]
    return yaml.safe_load("\n".join(lines)) if lines else None


def access_problems(docs: list[dict], text: str) -> list[str]:
    """What would leave the server reachable, or the pod able to reach, more than it needs."""
    spec = docs[0]["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    env = {e["name"]: e for e in c.get("env", [])}
    ref = env.get("ONEPASS_API_KEY", {}).get("valueFrom", {}).get("secretKeyRef") or {}
    example = secret_example(text) or {}
    labels = docs[0]["spec"]["template"]["metadata"]["labels"]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    policy = policies[0]["spec"] if policies else {}
    selected = policy.get("podSelector", {}).get("matchLabels", {})
    ingress, egress = policy.get("ingress", []), policy.get("egress", [])
    ports = [p.get("port") for rule in ingress for p in rule.get("ports", [])]
    peers = [peer for rule in ingress for peer in rule.get("from", [])]
    public = [b["ipBlock"] for rule in egress for b in rule.get("to", []) if "ipBlock" in b]
    rules = {
        "ONEPASS_API_KEY from a Secret": bool(ref.get("name")) and "value" not in env.get(
            "ONEPASS_API_KEY", {}) and not ref.get("optional"),
        "no Secret shipped in the manifest": all(d["kind"] != "Secret" for d in docs),
        "vLLM's key made fresh at each start": "ONEPASS_VLLM_KEY" not in env,
        "the Secret example matches the reference": example.get("kind") == "Secret" and
            example.get("metadata", {}).get("name") == ref.get("name") and
            ref.get("key") in example.get("stringData", {}),
        "the command that creates the Secret": bool(ref) and
            f"kubectl create secret generic {ref.get('name')} --from-literal={ref.get('key')}="
            in text,
        "no service-account token": spec.get("automountServiceAccountToken") is False,
        "a NetworkPolicy for the pods": bool(selected) and selected.items() <= labels.items(),
        "ingress and egress both restricted": {"Ingress", "Egress"} <= set(
            policy.get("policyTypes", [])),
        "ingress only to the port": bool(ports) and set(ports) <= {8741, "http"} and
            all(rule.get("ports") for rule in ingress),
        "ingress only from named namespaces or labelled pods": bool(peers) and all(
            set(peer) <= {"namespaceSelector", "podSelector"} and any(
                sel.get("matchLabels") for sel in peer.values()) for peer in peers),
        "egress only to named peers and ports": bool(egress) and all(
            rule.get("ports") and rule.get("to") for rule in egress),
        "egress ports: DNS and HTTPS": bool(egress) and {
            p.get("port") for rule in egress for p in rule.get("ports", [])} <= {53, 443},
        "public addresses only": all(PRIVATE <= set(b.get("except", [])) for b in public),
    }
    return [rule for rule, ok in rules.items() if not ok]


class TestManifest(unittest.TestCase):
    def setUp(self):
        if models is None:  # skipped only where site-packages are off on purpose
            message = f"needs PyYAML and kubernetes (deps/test.txt): {MISSING}"
            if not sys.flags.no_site:
                self.fail(message)
            self.skipTest(message)
        self.text = MANIFEST.read_text()
        self.docs = list(yaml.safe_load_all(self.text))

    def test_every_object_matches_the_api_schema(self):
        self.assertEqual([d["kind"] for d in self.docs],
                         ["Deployment", "PersistentVolumeClaim", "Service", "NetworkPolicy"])
        self.assertEqual([e for d in self.docs for e in schema_errors(d)], [])
        self.assertEqual(schema_errors(secret_example(self.text) or {}), [])

    def test_only_what_needs_it_reaches_the_server(self):
        self.assertEqual(access_problems(self.docs, self.text), [])

    def test_the_access_checks_can_fail(self):
        """The manifest as it was (the key unset, the token mounted, no policy) fails each rule;
        so do a literal key, a policy open to every peer and egress to private addresses."""
        old = [d for d in self.docs if d["kind"] != "NetworkPolicy"]
        spec = old[0]["spec"]["template"]["spec"]
        del spec["automountServiceAccountToken"]
        env = spec["containers"][0]["env"]
        env[:] = [e for e in env if e["name"] != "ONEPASS_API_KEY"]
        problems = access_problems(old, "")
        for rule in ("ONEPASS_API_KEY from a Secret", "no service-account token",
                     "a NetworkPolicy for the pods", "the command that creates the Secret",
                     "ingress and egress both restricted"):
            self.assertIn(rule, problems)
        env.append({"name": "ONEPASS_API_KEY", "value": "k"})
        env.append({"name": "ONEPASS_VLLM_KEY", "value": "stored"})
        problems = access_problems(old, self.text)
        self.assertIn("ONEPASS_API_KEY from a Secret", problems)
        self.assertIn("vLLM's key made fresh at each start", problems)
        policy = next(d for d in self.docs if d["kind"] == "NetworkPolicy")
        policy["spec"]["ingress"][0]["from"].append({})
        policy["spec"]["egress"][-1]["to"][0]["ipBlock"]["except"] = []
        problems = access_problems(self.docs, self.text)
        self.assertIn("ingress only from named namespaces or labelled pods", problems)
        self.assertIn("public addresses only", problems)

    def test_the_pod_can_start(self):
        self.assertEqual(pod_problems(self.docs[0]), [])

    def test_a_compile_cache_in_the_image_and_no_logs_on_stdout_fail(self):
        """serve.sh's default compile cache, $ONEPASS_CACHE/vllm, is in the read-only image."""
        pod = yaml.safe_load(MANIFEST.read_text().split("\n---")[0])
        c = pod["spec"]["template"]["spec"]["containers"][0]
        c["env"] = [e for e in c["env"] if e["name"] != "ONEPASS_LOG_STDOUT"]
        next(e for e in c["env"] if e["name"] == "VLLM_CACHE_ROOT")["value"] = \
            "/opt/onepass/cache/vllm"
        self.assertEqual(pod_problems(pod), [
            "vLLM's compile cache (VLLM_CACHE_ROOT) on a writable volume",
            "the processes' logs on stdout (ONEPASS_LOG_STDOUT=1)"])

    def test_the_checks_can_fail(self):
        """The manifest before issue 26 (no startupProbe, securityContext, volumes, profile,
        requests; :latest) fails the rules, and a misspelt field or a wrong type fails the schema."""
        old = yaml.safe_load(MANIFEST.read_text().split("\n---")[0])
        c = old["spec"]["template"]["spec"]["containers"][0]
        for key in ("startupProbe", "securityContext", "volumeMounts"):
            del c[key]
        del old["spec"]["template"]["spec"]["securityContext"]
        c["image"] = "registry.example.com/onepass:latest"
        c["env"] = [e for e in c["env"] if e["name"] != "ONEPASS_PROFILE"]
        problems = pod_problems(old)
        for rule in ("a startupProbe on /health?live=1", "runAsNonRoot", "readOnlyRootFilesystem",
                     "ONEPASS_PROFILE set", "volumes for the model, home (logs, caches) and /tmp"):
            self.assertIn(rule, problems)
        self.assertTrue(any(p.startswith("the image tag") for p in problems))
        c["readinessProbe"]["periodSecond"] = 2
        self.assertTrue(schema_errors(old))
        del c["readinessProbe"]["periodSecond"]
        c["resources"]["limits"]["memory"] = 24
        self.assertTrue(schema_errors(old))


if __name__ == "__main__":
    unittest.main()
