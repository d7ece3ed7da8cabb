"""tools/images/oci.py: layers and archives are deterministic, complete and named as importers read them."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tools.images import oci


def _archive_members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {
            member.name: (tar.extractfile(member) or io.BytesIO()).read() for member in tar if member.isfile()
        }


def _index(archive: Path) -> dict[str, Any]:
    index: dict[str, Any] = json.loads(_archive_members(archive)["index.json"])
    return index


def _blob(members: dict[str, bytes], digest: str) -> bytes:
    return members[f"blobs/sha256/{digest.removeprefix('sha256:')}"]


def _layer_tar(archive: Path, position: int = 0) -> tarfile.TarFile:
    members = _archive_members(archive)
    manifest = json.loads(_blob(members, _index(archive)["manifests"][0]["digest"]))
    data = gzip.decompress(_blob(members, manifest["layers"][position]["digest"]))
    return tarfile.open(fileobj=io.BytesIO(data))


def _tree(root: Path) -> Path:
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "tool").write_bytes(b"#!/bin/sh\necho tool\n")
    (root / "usr" / "bin" / "tool").chmod(0o755)
    (root / "etc").mkdir()
    (root / "etc" / "config").write_text("key=value\n")
    (root / "etc" / "link").symlink_to("config")
    # hard links, the first of them in path order is a later directory entry than the second
    (root / "z-original").write_text("same inode\n")
    os.link(root / "z-original", root / "a-link")
    return root


def _image(
    tmp_path: Path, source: Path, out: str, *, names: tuple[str, ...] = ("example.org/tool:1.0",)
) -> Path:
    contents = oci.LayerContents()
    contents.add_tree(source)
    return oci.write_image(
        tmp_path / out / "image.tar",
        names=names,
        layers=[contents],
        config=oci.ImageConfig(entrypoint=("/usr/bin/tool",), user="65532:65532"),
        architecture="amd64",
    ).archive


def test_the_same_inputs_give_the_same_archive_byte_for_byte(tmp_path: Path) -> None:
    source = _tree(tmp_path / "tree")
    first = _image(tmp_path, source, "one")
    os.utime(source / "etc" / "config", (1_000_000, 1_000_000))
    second = _image(tmp_path, source, "two")
    assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()


def test_layer_entries_are_sorted_with_fixed_times_and_root_owners(tmp_path: Path) -> None:
    archive = _image(tmp_path, _tree(tmp_path / "tree"), "out")
    with _layer_tar(archive) as layer:
        members = layer.getmembers()
    names = [member.name for member in members]
    assert names == [
        "a-link",
        "etc",
        "etc/config",
        "etc/link",
        "usr",
        "usr/bin",
        "usr/bin/tool",
        "z-original",
    ]
    assert {(member.mtime, member.uid, member.gid, member.uname, member.gname) for member in members} == {
        (oci.FIXED_MTIME, 0, 0, "", "")
    }
    by_name = {member.name: member for member in members}
    assert by_name["usr/bin/tool"].mode == 0o755
    assert by_name["etc/link"].issym() and by_name["etc/link"].linkname == "config"


def test_hard_links_point_at_the_first_of_their_paths(tmp_path: Path) -> None:
    archive = _image(tmp_path, _tree(tmp_path / "tree"), "out")
    with _layer_tar(archive) as layer:
        first, second = layer.getmember("a-link"), layer.getmember("z-original")
        assert first.isreg() and (layer.extractfile(first) or io.BytesIO()).read() == b"same inode\n"
        assert second.islnk() and second.linkname == "a-link"


def test_the_index_names_the_image_for_containerd_and_for_oci_tools(tmp_path: Path) -> None:
    names = ("docker.io/library/nginx:latest", "docker.io/library/nginx:1.27")
    archive = _image(tmp_path, _tree(tmp_path / "tree"), "out", names=names)
    index = _index(archive)
    assert [entry["annotations"] for entry in index["manifests"]] == [
        {oci.ANNOTATION_CONTAINERD_NAME: name, oci.ANNOTATION_REF_NAME: name} for name in names
    ]
    assert len({entry["digest"] for entry in index["manifests"]}) == 1
    assert index["manifests"][0]["platform"] == {"architecture": "amd64", "os": "linux"}
    assert json.loads(_archive_members(archive)["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}


def test_every_digest_matches_its_blob_and_the_config_lists_the_uncompressed_layer(tmp_path: Path) -> None:
    archive = _image(tmp_path, _tree(tmp_path / "tree"), "out")
    members = _archive_members(archive)
    for name, data in members.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    manifest = json.loads(_blob(members, _index(archive)["manifests"][0]["digest"]))
    config = json.loads(_blob(members, manifest["config"]["digest"]))
    layer = _blob(members, manifest["layers"][0]["digest"])
    assert manifest["layers"][0]["size"] == len(layer)
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(gzip.decompress(layer)).hexdigest()}"]
    assert config["config"]["Entrypoint"] == ["/usr/bin/tool"]
    assert config["config"]["User"] == "65532:65532"
    assert (config["os"], config["architecture"]) == ("linux", "amd64")


def test_the_layer_gzip_has_no_timestamp_or_file_name(tmp_path: Path) -> None:
    archive = _image(tmp_path, _tree(tmp_path / "tree"), "out")
    members = _archive_members(archive)
    manifest = json.loads(_blob(members, _index(archive)["manifests"][0]["digest"]))
    header = _blob(members, manifest["layers"][0]["digest"])[:10]
    flags, mtime = header[3], int.from_bytes(header[4:8], "little")
    assert (flags & 0x08, mtime) == (0, 0)


def test_extended_attributes_travel_in_pax_records(tmp_path: Path) -> None:
    capability = bytes([1, 0, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    contents = oci.LayerContents()
    contents.add_file("bin", b"\x7fELF", mode=0o755, xattrs={"security.capability": capability})
    archive = oci.write_image(
        tmp_path / "image.tar",
        names=["example.org/x:1"],
        layers=[contents],
        config=oci.ImageConfig(),
        architecture="amd64",
    ).archive
    with _layer_tar(archive) as layer:
        record = layer.getmember("bin").pax_headers["SCHILY.xattr.security.capability"]
    assert record.encode("utf-8", "surrogateescape") == capability


def test_a_tar_source_keeps_its_hard_links_whatever_their_order(tmp_path: Path) -> None:
    source = tmp_path / "source.tar"
    with tarfile.open(source, "w") as tar:
        data = b"payload\n"
        original = tarfile.TarInfo("./b/original")
        original.size = len(data)
        tar.addfile(original, io.BytesIO(data))
        link = tarfile.TarInfo("./a/link")
        link.type, link.linkname = tarfile.LNKTYPE, "./b/original"
        tar.addfile(link)
        device = tarfile.TarInfo("./dev/null")
        device.type = tarfile.CHRTYPE
        tar.addfile(device)
    contents = oci.LayerContents()
    contents.add_tar(source, exclude=lambda name: name.startswith("dev/"))
    archive = oci.write_image(
        tmp_path / "image.tar",
        names=["example.org/x:1"],
        layers=[contents],
        config=oci.ImageConfig(),
        architecture="amd64",
    ).archive
    with _layer_tar(archive) as layer:
        assert layer.getnames() == ["a/link", "b/original"]
        assert (layer.extractfile("a/link") or io.BytesIO()).read() == b"payload\n"
        assert layer.getmember("b/original").linkname == "a/link"


@pytest.mark.parametrize(
    "name", ["example.org/tool", "tool", "localhost:5000/tool"], ids=["registry", "bare", "port"]
)
def test_a_name_without_a_tag_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(oci.ImageError, match="needs its tag"):
        oci.write_image(
            tmp_path / "image.tar", names=[name], layers=[], config=oci.ImageConfig(), architecture="amd64"
        )


@pytest.mark.parametrize("name", ["../escape", "/", "a/../../b"])
def test_a_path_outside_the_layer_is_refused(name: str) -> None:
    with pytest.raises(oci.ImageError, match="is not a path inside a layer"):
        oci.LayerContents().add_file(name, b"")
