"""tools/images/lock.py: the lock's format and the platform pip is asked to resolve for."""

from __future__ import annotations

from tools.images import lock


def test_a_wheel_file_name_gives_its_normalised_project_and_version() -> None:
    assert lock.wheel_pin("prometheus_client-0.26.0-py3-none-any.whl") == ("prometheus-client", "0.26.0")
    assert lock.wheel_pin("PyYAML-6.0.4-cp311-cp311-manylinux2014_x86_64.whl") == ("pyyaml", "6.0.4")


def test_the_lock_lists_each_pin_once_with_every_hash_sorted() -> None:
    text = lock.render({("yarl", "1.25.1"): ["bb", "aa", "bb"], ("attrs", "26.1.0"): ["cc"]})
    assert text.startswith(lock.HEADER)
    assert text.endswith(
        "attrs==26.1.0 \\\n    --hash=sha256:cc\n"
        "yarl==1.25.1 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n"
    )


def test_pip_resolves_for_bookworms_python_and_glibc() -> None:
    flags = lock.platform_flags("aarch64")
    assert flags[:5] == ["--python-version", "3.11", "--implementation", "cp", "--only-binary=:all:"]
    assert "manylinux_2_36_aarch64" in flags and "manylinux2014_aarch64" in flags
    assert flags[-2:] == ["--platform", "any"]


def test_the_lock_is_made_from_the_runtime_distributions_dependencies() -> None:
    assert lock.dependencies() == [
        "aiohttp>=3.9",
        "cryptography>=42",
        "PyYAML>=6.0",
        "prometheus_client>=0.20",
    ]
