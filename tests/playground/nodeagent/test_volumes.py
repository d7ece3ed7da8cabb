"""Pod volumes written as kubelet's volume plugins write them, from a dict of objects and a fake token issuer."""

from __future__ import annotations

import base64
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from playground.nodeagent.downward import PodContext
from playground.nodeagent.objects import IssuedToken
from playground.nodeagent.volumes import PodVolumes, VolumeError, write_atomically
from runtime.api.objects import JSON
from runtime.core import ForbiddenError

START = datetime(2025, 1, 1, tzinfo=UTC)


class FakeSource:
    """Objects by (kind, name); tokens numbered in order of issue, each living `lifetime`."""

    def __init__(
        self, objects: dict[tuple[str, str], JSON], *, lifetime: timedelta = timedelta(hours=1)
    ) -> None:
        self.objects = objects
        self.lifetime = lifetime
        self.now = START
        self.requests: list[tuple[str, int]] = []
        #: token requests refused before one is granted
        self.refusals = 0

    async def get(self, kind: str, namespace: str, name: str) -> JSON | None:
        assert namespace == "shop"
        return self.objects.get((kind, name))

    async def token(self, pod: JSON, *, audience: str, expiration_seconds: int) -> IssuedToken:
        if self.refusals:
            self.refusals -= 1
            raise ForbiddenError(
                {
                    "code": 403,
                    "reason": "Forbidden",
                    "message": "no relationship found between node 'n' and this object",
                }
            )
        self.requests.append((audience, expiration_seconds))
        return IssuedToken(
            token=f"token-{len(self.requests)}", issued=self.now, expires=self.now + self.lifetime
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def pod_with(*volumes: JSON, containers: list[JSON] | None = None) -> JSON:
    return {
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "labels": {"app": "web"}},
        "spec": {"containers": containers or [{"name": "c"}], "volumes": list(volumes)},
    }


def volumes_for(pod: JSON, source: FakeSource, directory: Path) -> PodVolumes:
    context = PodContext(pod_ip="10.0.0.7", host_ip="10.0.0.1", allocatable={"cpu": "2", "memory": "1Gi"})
    return PodVolumes(pod, directory=directory, source=source, context=context, clock=lambda: source.now)


def files(directory: Path) -> dict[str, tuple[str, int]]:
    """Visible files (through the symlinks, as a process reads them) with their content and mode."""
    found = {}
    for root, _dirs, names in os.walk(directory, followlinks=True):
        for name in names:
            path = Path(root) / name
            relative = str(path.relative_to(directory))
            if relative.startswith(".."):
                continue
            found[relative] = (path.read_text(), stat.S_IMODE(path.stat().st_mode))
    return found


SECRET = {"metadata": {"name": "creds"}, "data": {"user": _b64(b"alice"), "pass": _b64(b"s3cret")}}
CONFIGMAP = {
    "metadata": {"name": "settings"},
    "data": {"level": "debug", "app.yaml": "a: 1\n"},
    "binaryData": {"blob": _b64(b"\x00\x01")},
}


async def test_secret_volume_has_a_file_per_key_with_the_default_mode(tmp_path: Path) -> None:
    pod = pod_with({"name": "creds", "secret": {"secretName": "creds"}})
    volumes = volumes_for(pod, FakeSource({("Secret", "creds"): SECRET}), tmp_path)
    await volumes.materialise()
    assert files(volumes.path("creds")) == {"user": ("alice", 0o644), "pass": ("s3cret", 0o644)}
    assert stat.S_IMODE(volumes.path("creds").stat().st_mode) == 0o700


async def test_items_choose_keys_paths_and_modes(tmp_path: Path) -> None:
    pod = pod_with(
        {
            "name": "cfg",
            "configMap": {
                "name": "settings",
                "defaultMode": 0o440,
                "items": [
                    {"key": "app.yaml", "path": "conf/app.yaml"},
                    {"key": "level", "path": "level", "mode": 0o400},
                ],
            },
        }
    )
    volumes = volumes_for(pod, FakeSource({("ConfigMap", "settings"): CONFIGMAP}), tmp_path)
    await volumes.materialise()
    assert files(volumes.path("cfg")) == {"conf/app.yaml": ("a: 1\n", 0o440), "level": ("debug", 0o400)}


async def test_configmap_binary_data_is_decoded(tmp_path: Path) -> None:
    pod = pod_with({"name": "cfg", "configMap": {"name": "settings"}})
    volumes = volumes_for(pod, FakeSource({("ConfigMap", "settings"): CONFIGMAP}), tmp_path)
    await volumes.materialise()
    assert (volumes.path("cfg") / "blob").read_bytes() == b"\x00\x01"


@pytest.mark.parametrize(
    ("volume", "message"),
    [
        ({"secret": {"secretName": "nope"}}, 'secret "nope" not found'),
        ({"configMap": {"name": "nope"}}, 'configmap "nope" not found'),
        (
            {"secret": {"secretName": "creds", "items": [{"key": "token", "path": "t"}]}},
            "references non-existent secret key: token",
        ),
        (
            {"configMap": {"name": "settings", "items": [{"key": "k", "path": "k"}]}},
            "configmap references non-existent config key: k",
        ),
        (
            {"configMap": {"name": "settings", "items": [{"key": "level", "path": "../escape"}]}},
            "invalid path '../escape': must be relative and may not contain '..'",
        ),
        (
            {"persistentVolumeClaim": {"claimName": "data"}},
            "playground: volume type persistentVolumeClaim is not supported",
        ),
    ],
    ids=["secret", "configmap", "secret-key", "configmap-key", "escaping-path", "unsupported"],
)
async def test_a_volume_that_cannot_be_set_up_is_a_failed_mount(
    tmp_path: Path, volume: JSON, message: str
) -> None:
    source = FakeSource({("Secret", "creds"): SECRET, ("ConfigMap", "settings"): CONFIGMAP})
    volumes = volumes_for(pod_with({"name": "v", **volume}), source, tmp_path)
    with pytest.raises(VolumeError) as err:
        await volumes.materialise()
    assert str(err.value) == f'MountVolume.SetUp failed for volume "v" : {message}'


async def test_optional_missing_sources_give_empty_volumes(tmp_path: Path) -> None:
    pod = pod_with(
        {"name": "s", "secret": {"secretName": "nope", "optional": True}},
        {"name": "c", "configMap": {"name": "nope", "optional": True}},
    )
    volumes = volumes_for(pod, FakeSource({}), tmp_path)
    await volumes.materialise()
    assert files(volumes.path("s")) == {}
    assert files(volumes.path("c")) == {}


async def test_downward_api_volume(tmp_path: Path) -> None:
    pod = pod_with(
        {
            "name": "info",
            "downwardAPI": {
                "items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                    {
                        "path": "mem",
                        "resourceFieldRef": {
                            "containerName": "c",
                            "resource": "limits.memory",
                            "divisor": "1Mi",
                        },
                    },
                ]
            },
        }
    )
    volumes = volumes_for(pod, FakeSource({}), tmp_path)
    await volumes.materialise()
    assert files(volumes.path("info")) == {
        "labels": ('app="web"', 0o644),
        "name": ("web", 0o644),
        "mem": ("1024", 0o644),
    }


def service_account_volume() -> JSON:
    """What the API server's ServiceAccount admission adds to every pod."""
    return {
        "name": "kube-api-access-abcde",
        "projected": {
            "defaultMode": 0o644,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    }


async def test_projected_service_account_volume(tmp_path: Path) -> None:
    source = FakeSource({("ConfigMap", "kube-root-ca.crt"): {"data": {"ca.crt": "PEM"}}})
    volumes = volumes_for(pod_with(service_account_volume()), source, tmp_path)
    await volumes.materialise()
    assert files(volumes.path("kube-api-access-abcde")) == {
        "token": ("token-1", 0o644),
        "ca.crt": ("PEM", 0o644),
        "namespace": ("shop", 0o644),
    }
    assert source.requests == [("", 3607)]
    assert volumes.is_read_only("kube-api-access-abcde")


async def test_projected_volume_waits_for_the_root_ca_configmap(tmp_path: Path) -> None:
    volumes = volumes_for(pod_with(service_account_volume()), FakeSource({}), tmp_path)
    with pytest.raises(VolumeError) as err:
        await volumes.materialise()
    assert str(err.value).endswith(': configmap "kube-root-ca.crt" not found')


async def test_token_is_refreshed_after_80_percent_of_its_lifetime(tmp_path: Path) -> None:
    source = FakeSource({}, lifetime=timedelta(seconds=1000))
    pod = pod_with(
        {
            "name": "tok",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 1000, "path": "t"}}
                ]
            },
        }
    )
    volumes = volumes_for(pod, source, tmp_path)
    assert await volumes.materialise() == 800.0
    token = volumes.path("tok") / "t"
    assert token.read_text() == "token-1"
    source.now = START + timedelta(seconds=799)
    assert await volumes.materialise() == 1.0
    assert token.read_text() == "token-1"
    source.now = START + timedelta(seconds=800)
    await volumes.materialise()
    assert token.read_text() == "token-2"
    assert source.requests == [("vault", 1000), ("vault", 1000)]


async def test_a_refused_token_request_fails_the_mount_for_a_retry(tmp_path: Path) -> None:
    """The Node authorizer refuses a node's token request until it has seen the pod bound to the node."""
    source = FakeSource({})
    source.refusals = 1
    pod = pod_with({"name": "tok", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}})
    volumes = volumes_for(pod, source, tmp_path)
    with pytest.raises(VolumeError, match=r'volume "tok" : failed to fetch token: .*no relationship found'):
        await volumes.materialise()
    await volumes.materialise()
    assert (volumes.path("tok") / "t").read_text() == "token-1"


async def test_long_lived_tokens_are_refreshed_after_a_day(tmp_path: Path) -> None:
    source = FakeSource({}, lifetime=timedelta(days=365))
    pod = pod_with({"name": "tok", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}})
    assert await volumes_for(pod, source, tmp_path).materialise() == 24 * 3600


async def test_updates_swap_all_files_at_once_and_drop_removed_keys(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert write_atomically(target, {"a": (b"1", 0o644), "dir/b": (b"2", 0o644)})
    first = os.readlink(target / "..data")
    assert os.readlink(target / "a") == "..data/a"
    assert not write_atomically(target, {"a": (b"1", 0o644), "dir/b": (b"2", 0o644)})
    assert write_atomically(target, {"a": (b"3", 0o644)})
    assert os.readlink(target / "..data") != first
    assert not (target / first).exists()
    assert sorted(p.name for p in target.iterdir() if not p.name.startswith("..")) == ["a"]
    assert (target / "a").read_text() == "3"


async def test_empty_dir_and_host_path(tmp_path: Path) -> None:
    host = tmp_path / "host" / "data"
    pod = pod_with(
        {"name": "scratch", "emptyDir": {}},
        {"name": "host", "hostPath": {"path": str(host), "type": "DirectoryOrCreate"}},
    )
    volumes = volumes_for(pod, FakeSource({}), tmp_path / "volumes")
    await volumes.materialise()
    assert volumes.path("scratch").is_dir()
    assert volumes.path("host") == host
    assert host.is_dir()
    assert not volumes.is_read_only("scratch")


async def test_a_secret_the_node_authorizer_does_not_relate_yet_fails_the_mount_so_it_is_retried(
    tmp_path: Path,
) -> None:
    """Right after a pod is bound, the Node authorizer may not relate its node to the pod's Secret yet: the
    kubelet's mount fails and is retried, it does not give the pod up."""

    class Unrelated(FakeSource):
        async def get(self, kind: str, namespace: str, name: str) -> JSON | None:
            raise ForbiddenError(
                {
                    "code": 403,
                    "reason": "Forbidden",
                    "message": "no relationship found between node 'n' and this object",
                }
            )

    pod = pod_with({"name": "keys", "secret": {"secretName": "gw-milan"}})
    with pytest.raises(VolumeError, match=r'volume "keys" : .*no relationship found'):
        await volumes_for(pod, Unrelated({}), tmp_path).materialise()
