#!/usr/bin/env bash
# The Kubernetes examples in docker/kubernetes/: parsed as YAML (python3-yaml)
# and checked for the wiring that makes injection work: the init container
# installs into an emptyDir that the application mounts read-only at the
# directory LD_PRELOAD points into; DD_* from the downward API with labels
# that exist; the agent variant takes the node IP, the air-gapped one writes
# to a volume and names no agent; every container is non-root with a
# read-only root filesystem; every DD_*/STOWAWAY_* name is one the library
# reads (src/config/config.c).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
exec python3 - "$ROOT" <<'EOF'
import glob, os, re, sys

root = sys.argv[1]
failed = 0


def report(name, ok, detail=""):
    global failed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok or not detail else ": " + detail))
    failed += 0 if ok else 1


try:
    import yaml
except ImportError:
    report("python3_yaml_available", False, "install python3-yaml (tests/deps/containers.txt)")
    sys.exit(1)

config_src = open(os.path.join(root, "src/config/config.c")).read()
known_env = set(re.findall(r'"((?:DD|STOWAWAY)_[A-Z0-9_]+)"', config_src))
report("config_env_names_found", len(known_env) > 10, str(sorted(known_env)))

files = sorted(glob.glob(os.path.join(root, "docker/kubernetes/*.yaml")))
report("manifests_present", len(files) == 2, str(files))


def env_map(container):
    return {e["name"]: e for e in container.get("env", [])}


def field_ref(env, name):
    e = env.get(name, {})
    return e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")


for path in files:
    tag = os.path.basename(path).replace(".yaml", "").replace("-", "_")
    try:
        docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    except yaml.YAMLError as e:
        report(tag + "_parses", False, str(e).replace("\n", " "))
        continue
    report(tag + "_parses", True)
    deps = [d for d in docs if d.get("kind") == "Deployment" and d.get("apiVersion") == "apps/v1"]
    report(tag + "_one_deployment", len(deps) == 1)
    if len(deps) != 1:
        continue
    dep = deps[0]
    tmpl = dep["spec"]["template"]
    spec = tmpl["spec"]
    labels = tmpl["metadata"].get("labels", {})
    report(tag + "_selector_matches_labels",
           all(labels.get(k) == v for k, v in dep["spec"]["selector"]["matchLabels"].items()))
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    inits = spec.get("initContainers", [])
    apps = spec.get("containers", [])
    report(tag + "_one_init_one_app", len(inits) == 1 and len(apps) == 1)
    if len(inits) != 1 or len(apps) != 1:
        continue
    init, app = inits[0], apps[0]

    # Init container -> emptyDir at /target (the image's `stowaway install /target`).
    init_mounts = {m["mountPath"]: m for m in init.get("volumeMounts", [])}
    target = init_mounts.get("/target", {})
    vol = volumes.get(target.get("name"), {})
    report(tag + "_init_installs_into_emptydir",
           "stowaway-init" in init.get("image", "") and "emptyDir" in vol
           and not target.get("readOnly", False) and "command" not in init and "args" not in init)

    # App mounts the same volume read-only where LD_PRELOAD points.
    env = env_map(app)
    preload = env.get("LD_PRELOAD", {}).get("value", "")
    app_mount = [m for m in app.get("volumeMounts", []) if m["name"] == target.get("name")]
    report(tag + "_app_preloads_from_volume",
           len(app_mount) == 1 and app_mount[0].get("readOnly") is True
           and preload == app_mount[0]["mountPath"].rstrip("/") + "/libstowaway.so", preload)
    report(tag + "_profiling_enabled", env.get("DD_PROFILING_ENABLED", {}).get("value") == "true")

    # Unified service tags from the pod's own labels.
    for var, label in (("DD_SERVICE", "service"), ("DD_ENV", "env"), ("DD_VERSION", "version")):
        key = "tags.datadoghq.com/" + label
        report("%s_%s_from_label" % (tag, var.lower()),
               field_ref(env, var) == "metadata.labels['%s']" % key and key in labels
               and labels[key] == dep["metadata"]["labels"].get(key))
    for var in env:
        if var.startswith("DD_") or var.startswith("STOWAWAY_"):
            report("%s_env_%s_known" % (tag, var.lower()), var in known_env)

    if "airgapped" in tag:
        out = env.get("STOWAWAY_OUTPUT_DIR", {}).get("value", "")
        out_mount = [m for m in app.get("volumeMounts", []) if m["mountPath"] == out]
        out_vol = volumes.get(out_mount[0]["name"], {}) if out_mount else {}
        claim = out_vol.get("persistentVolumeClaim", {}).get("claimName")
        pvcs = [d["metadata"]["name"] for d in docs if d.get("kind") == "PersistentVolumeClaim"]
        report(tag + "_writes_to_persistent_volume",
               bool(out) and not out_mount[0].get("readOnly", False) and claim in pvcs)
        sub = out_mount[0].get("subPathExpr", "") if out_mount else ""
        names = re.findall(r"\$\(([A-Z_]+)\)", sub)
        report(tag + "_per_pod_subdirectory",
               names == ["POD_NAME"] and field_ref(env, "POD_NAME") == "metadata.name")
        report(tag + "_no_network_sink",
               not any(v in env for v in ("DD_AGENT_HOST", "DD_TRACE_AGENT_URL", "DD_API_KEY",
                                          "STOWAWAY_PYROSCOPE_URL")))
    else:
        report(tag + "_agent_host_is_node_ip", field_ref(env, "DD_AGENT_HOST") == "status.hostIP")

    # Non-root, read-only root filesystem, nothing extra allowed.
    psc = spec.get("securityContext", {})
    report(tag + "_pod_runs_as_non_root",
           psc.get("runAsNonRoot") is True and int(psc.get("runAsUser", 0)) != 0
           and psc.get("seccompProfile", {}).get("type") == "RuntimeDefault")
    for c in (init, app):
        sc = c.get("securityContext", {})
        report("%s_%s_hardened" % (tag, c["name"].replace("-", "_")),
               sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
               and sc.get("capabilities", {}).get("drop") == ["ALL"] and sc.get("runAsUser", 1) != 0)

sys.exit(1 if failed else 0)
EOF
