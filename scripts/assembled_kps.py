"""The assembled kube-prometheus-stack that scripts/bench-vs-helm renders.

The corpus copy of kube-prometheus-stack lacks its vendored subcharts, so
both tools fail on it as shipped. The assembled copy adds the corpus's own
kube-state-metrics, prometheus-node-exporter and grafana charts under
charts/, and a minimal prometheus-windows-exporter 0.12.8 chart (disabled by
default).
"""
import os
import shutil


def assemble(charts, dest):
    """Builds the assembled chart at `dest` from the corpus under `charts`
    (../shared/conformance/charts); returns `dest`."""
    shutil.copytree(os.path.join(charts, "prom-kube-prometheus-stack", "chart"), dest)
    for src, name in (("prom-kube-state-metrics", "kube-state-metrics"),
                      ("prom-node-exporter", "prometheus-node-exporter"),
                      ("grafana", "grafana")):
        shutil.copytree(os.path.join(charts, src, "chart"), os.path.join(dest, "charts", name))
    win = os.path.join(dest, "charts", "prometheus-windows-exporter")
    os.makedirs(win)
    with open(os.path.join(win, "Chart.yaml"), "w") as f:
        f.write("apiVersion: v2\nname: prometheus-windows-exporter\nversion: 0.12.8\n")
    # The corpus is read-only; the copy must be writable and removable.
    for dirpath, _, files in os.walk(dest):
        os.chmod(dirpath, 0o755)
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return dest
