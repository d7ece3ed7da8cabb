"""tools/realk8s/build.py: the pins, the version flags, and a cache folder that is complete or absent.

No Go build here (minutes); `make real-k8s` and the real leg run it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "realk8s" / "build.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("realk8s_build", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load()


def test_the_pins_are_kubernetes_v1_36_3_etcd_v3_6_13_and_coredns_v1_15_0() -> None:
    expected = build.expected_manifest()
    assert {key: expected[key] for key in ("kubernetes", "etcd", "coredns")} == {
        "kubernetes": "v1.36.3",
        "etcd": "v3.6.13",
        "coredns": "v1.15.0",
    }
    assert re.fullmatch(r"[0-9a-f]{16}", expected[build.IMAGE_RECIPES])
    assert {"kubelet", "kube-proxy", "kubectl", "coredns"} <= set(build.BINARIES)


def test_every_staging_module_is_replaced_by_the_release_of_the_same_patch() -> None:
    go_mod = (ROOT / "tools" / "realk8s" / "kubernetes" / "go.mod").read_text()
    replaced = dict(re.findall(r"^\s*(k8s\.io/\S+) => k8s\.io/\S+ (v\S+)$", go_mod, re.MULTILINE))
    staging = "v0." + build.KUBERNETES.version().removeprefix("v1.")
    assert len(replaced) >= 30, replaced
    assert {module: staging for module in replaced} == replaced
    # each module required at the placeholder v0.0.0 is one the replace block pins
    placeholders = re.findall(r"^\s*(k8s\.io/\S+) v0\.0\.0 // indirect$", go_mod, re.MULTILINE)
    assert set(placeholders) <= set(replaced)


def test_the_version_flags_are_those_hack_lib_version_sh_sets() -> None:
    flags = build.kubernetes_ldflags("v1.36.3", "2026-07-22T18:07:38Z")
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {package}.gitVersion=v1.36.3" in flags
        assert f"-X {package}.gitMajor=1" in flags
        assert f"-X {package}.gitMinor=36" in flags
        assert f"-X {package}.buildDate=2026-07-22T18:07:38Z" in flags
        assert f"-X {package}.gitTreeState=archive" in flags


def _folder(path: Path, manifest: dict[str, Any], binaries: tuple[str, ...], *, images: bool = True) -> Path:
    path.mkdir(parents=True)
    for name in binaries:
        (path / name).write_text("#!/bin/sh\n")
        (path / name).chmod(0o755)
    if images:
        (path / "images").mkdir()
        manifest = {**manifest, "images": {}}
        for image in build.IMAGES:
            (path / "images" / f"{image}.tar").write_bytes(b"")
            manifest["images"][image] = {"archive": f"images/{image}.tar", "name": f"example.org/{image}:1"}
    (path / build.MANIFEST).write_text(json.dumps(manifest))
    return path


def test_a_folder_is_complete_only_with_every_binary_and_image_of_the_pinned_versions(tmp_path: Path) -> None:
    expected = build.expected_manifest()
    assert build.is_complete(_folder(tmp_path / "ok", expected, build.BINARIES), expected)
    assert not build.is_complete(_folder(tmp_path / "missing", expected, build.BINARIES[:-1]), expected)
    assert not build.is_complete(
        _folder(tmp_path / "no-images", expected, build.BINARIES, images=False), expected
    )
    stale = {**expected, "etcd": "v3.6.12"}
    assert not build.is_complete(_folder(tmp_path / "stale", stale, build.BINARIES), expected)
    recipe = {**expected, build.IMAGE_RECIPES: "0" * 16}
    assert not build.is_complete(_folder(tmp_path / "old-recipe", recipe, build.BINARIES), expected)
    assert not build.is_complete(tmp_path / "absent", expected)
    # a folder of the control plane alone, as built before real nodes, is not complete
    control_plane = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
    before = {"kubernetes": "v1.36.3", "etcd": "v3.6.13"}
    assert not build.is_complete(_folder(tmp_path / "before", before, control_plane, images=False), expected)


def test_a_complete_folder_is_used_without_go(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "v1.36.3", build.expected_manifest(), build.BINARIES)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--cache-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/nonexistent"},
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, f"{folder}\n"), result.stderr


#: a stand-in for `go`: `go build -o OUT PKG` writes a program that prints the version its name
#: should, and logs the build; `go list -m -json` answers a release time
FAKE_GO = """#!/bin/sh
if [ "$1" = list ]; then echo '{"Time": "2026-07-22T18:07:38Z"}'; exit 0; fi
while [ "$1" != -o ]; do shift; done
out=$2; name=$(basename "$out"); echo "$name" >> "$GO_BUILT"
case $name in
  etcd) line="etcd Version: 3.6.13" ;;
  kubectl) line="Client Version: v1.36.3" ;;
  coredns) line="CoreDNS-1.15.0" ;;
  *) line="Kubernetes v1.36.3" ;;
esac
printf '#!/bin/sh\necho "%s"\n' "$line" > "$out"; chmod +x "$out"
"""

#: a stand-in for tools/images/build.py IMAGE [--binary B] --out DIR: an OCI archive with an index
FAKE_IMAGES = """import io, json, sys, tarfile
from pathlib import Path
image, out = sys.argv[1], Path(sys.argv[sys.argv.index("--out") + 1])
out.mkdir(parents=True, exist_ok=True)
index = {"manifests": [{"annotations": {"io.containerd.image.name": f"example.org/{image}:1"}}]}
data = json.dumps(index).encode()
with tarfile.open(out / f"{image}.tar", "w") as tar:
    info = tarfile.TarInfo("index.json"); info.size = len(data); tar.addfile(info, io.BytesIO(data))
print(out / f"{image}.tar")
"""


def test_a_folder_built_before_kubelet_is_completed_keeping_what_it_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "go").write_text(FAKE_GO)
    (tools / "go").chmod(0o755)
    (tools / "images").mkdir()
    (tools / "images" / "build.py").write_text(FAKE_IMAGES)
    monkeypatch.setattr(build, "IMAGES_TOOL", tools / "images" / "build.py")
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("GO_BUILT", str(tmp_path / "built"))
    root = tmp_path / "cache"
    # what the lead built today: the control plane, the manifest of its two modules
    old = _folder(
        root / "v1.36.3",
        {"kubernetes": "v1.36.3", "etcd": "v3.6.13"},
        ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"),
        images=False,
    )
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        line = "etcd Version: 3.6.13" if name == "etcd" else "Kubernetes v1.36.3"
        (old / name).write_text(f'#!/bin/sh\necho "{line}"\n')
    kept = (old / "etcd").stat().st_ino
    folder = build.build(root, os.environ)
    assert folder == root / "v1.36.3"
    assert sorted((tmp_path / "built").read_text().split()) == ["coredns", "kube-proxy", "kubectl", "kubelet"]
    assert (folder / "etcd").stat().st_ino == kept
    manifest = json.loads((folder / build.MANIFEST).read_text())
    assert manifest["images"] == {
        "pause": {"archive": "images/pause.tar", "name": "example.org/pause:1"},
        "coredns": {"archive": "images/coredns.tar", "name": "example.org/coredns:1"},
    }
    assert build.is_complete(folder, build.expected_manifest())
    assert sorted(path.name for path in root.iterdir()) == [".v1.36.3.lock", "v1.36.3"]
    # complete now: nothing is built again
    (tmp_path / "built").unlink()
    assert build.build(root, os.environ) == folder and not (tmp_path / "built").exists()


def test_a_new_folder_takes_the_old_ones_place_in_one_step(tmp_path: Path) -> None:
    target, staging = tmp_path / "v1", tmp_path / ".v1.tmp"
    for folder, content in ((target, "old"), (staging, "new")):
        folder.mkdir()
        (folder / "file").write_text(content)
    build.swap_into_place(staging, target)
    assert (target / "file").read_text() == "new" and not staging.exists()
    build.swap_into_place(tmp_path / "v1", tmp_path / "v2")
    assert (tmp_path / "v2" / "file").read_text() == "new"


@pytest.mark.parametrize(("flag", "code"), [("--skip-without-go", 0), (None, 1)])
def test_without_go_the_build_says_so_in_one_line(tmp_path: Path, flag: str | None, code: int) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--cache-dir", str(tmp_path), *([flag] if flag else [])],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/nonexistent"},
        check=False,
    )
    assert (result.returncode, result.stdout) == (code, "")
    assert len(result.stderr.splitlines()) == 1 and "no `go` on PATH" in result.stderr, result.stderr
    assert not any(tmp_path.iterdir()), "nothing is left in the cache"
