"""The auth service's pure parts: timestamp rules, request parsing, the failure limiter, command-line flags."""

from __future__ import annotations

import asyncio
import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.auth.app import parse_identity_request, parse_signed_request
from runtime.auth.errors import InvalidRequestError
from runtime.auth.main import argument_parser, host_port, options_from
from runtime.auth.ratelimit import FailureLimiter
from runtime.auth.renewal import timestamp_problem
from runtime.auth.signatures import load_public_key
from runtime.forge import credential as contract

NOW = datetime(2030, 5, 1, 10, 0, 0, tzinfo=UTC)
CLUSTER_ID = "3f2c5a8e-1b4d-4c6e-8f0a-9d7b6c5e4a32"


@pytest.mark.parametrize(
    ("offset", "last", "problem"),
    [
        (timedelta(0), None, None),
        (timedelta(minutes=-4, seconds=-59), None, None),
        (timedelta(minutes=4, seconds=59), None, None),
        (timedelta(minutes=-5, seconds=-1), None, "more than 300 s"),
        (timedelta(minutes=5, seconds=1), None, "more than 300 s"),
        (timedelta(0), NOW - timedelta(microseconds=1), None),
        (timedelta(0), NOW, "not newer"),
        (timedelta(seconds=-1), NOW, "not newer"),
    ],
    ids=["now", "4m59s-ago", "4m59s-ahead", "too-old", "too-new", "newer", "replayed", "older"],
)
def test_timestamps_must_be_in_the_window_and_newer_than_the_last(
    offset: timedelta, last: datetime | None, problem: str | None
) -> None:
    found = timestamp_problem(NOW + offset, now=NOW, last=last, window=300)
    assert (found is None) if problem is None else (problem in str(found))


def test_public_keys_are_32_raw_bytes_in_base64() -> None:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    assert load_public_key(base64.b64encode(raw).decode()).public_bytes_raw() == raw
    for bad in ("%%%", base64.b64encode(b"short").decode()):
        with pytest.raises(ValueError):
            load_public_key(bad)


def _signed(**change: Any) -> dict[str, Any]:
    key = Ed25519PrivateKey.generate()
    return {
        **contract.signed_request(contract.RENEW, cluster_id=CLUSTER_ID, timestamp=NOW, sign=key.sign),
        **change,
    }


def test_a_signed_request_keeps_the_timestamp_as_sent() -> None:
    parsed = parse_signed_request(_signed(), contract.RENEW)
    assert parsed.timestamp == NOW
    assert parsed.timestamp_text == "2030-05-01T10:00:00.000000Z"
    assert parsed.message == contract.signed_message(
        contract.RENEW, cluster_id=CLUSTER_ID, timestamp=parsed.timestamp_text
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([], "body"),
        (_signed(clusterID="3F2C5A8E-1B4D-4C6E-8F0A-9D7B6C5E4A32"), "clusterID"),
        (_signed(timestamp="2030-05-01"), "timestamp"),
        (_signed(timestamp="2030-05-01T10:00:00"), "timestamp"),
        (_signed(signature="%%%"), "signature"),
        (_signed(signature=base64.b64encode(b"x" * 63).decode()), "signature"),
        (_signed(signature=None), "signature"),
    ],
    ids=["not-object", "upper-case-id", "date-only", "no-zone", "not-base64", "short", "missing"],
)
def test_malformed_signed_requests_name_the_field(body: object, field: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        parse_signed_request(body, contract.RENEW)
    assert caught.value.field == field


def test_a_long_token_is_refused_before_it_is_hashed() -> None:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    body = contract.identity_request(
        token="0" * 257, cluster_id=CLUSTER_ID, cluster_name="milan", public_key=raw
    )
    with pytest.raises(InvalidRequestError) as caught:
        parse_identity_request(body)
    assert caught.value.field == "token"


@pytest.mark.looptime
async def test_failures_drain_a_bucket_per_address_that_refills_over_time() -> None:
    limiter = FailureLimiter(burst=3, refill_per_second=0.5)
    for _ in range(3):
        assert limiter.retry_after("10.0.0.1") == 0
        limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") == pytest.approx(2.0)
    assert limiter.retry_after("10.0.0.2") == 0
    await asyncio.sleep(1.0)
    assert limiter.retry_after("10.0.0.1") == pytest.approx(1.0)
    await asyncio.sleep(1.0)
    assert limiter.retry_after("10.0.0.1") == 0
    limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") == pytest.approx(2.0)
    await asyncio.sleep(60)
    for _ in range(3):
        assert limiter.retry_after("10.0.0.1") == 0
        limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") > 0


@pytest.mark.looptime
async def test_the_limiter_forgets_recovered_addresses_first_when_full() -> None:
    limiter = FailureLimiter(burst=1, refill_per_second=1.0, max_sources=2)
    limiter.failed("a")
    await asyncio.sleep(5)
    limiter.failed("b")
    limiter.failed("c")
    assert len(limiter) == 2
    assert limiter.retry_after("b") > 0 and limiter.retry_after("c") > 0
    limiter.failed("d")
    assert len(limiter) == 2
    assert limiter.retry_after("b") == 0 and limiter.retry_after("d") > 0


def test_flags_become_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_IP", "127.3.0.7")
    args = argument_parser().parse_args(
        [
            "--namespace=liqo-system",
            "--listen=$(POD_IP):8443",
            "--api-server-url=https://10.0.0.1:6443",
            "--health-address=[::1]:8080",
            "--token-ttl=7200",
        ]
    )
    options = options_from(args)
    assert (options.namespace, options.host, options.port) == ("liqo-system", "127.3.0.7", 8443)
    assert options.api_server_url == "https://10.0.0.1:6443"
    assert options.token_ttl == 7200
    assert options.health is not None and (options.health.host, options.health.port) == ("::1", 8080)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--listen=nowhere"], "--listen 'nowhere': expected HOST:PORT"),
        (["--listen=1.2.3.4:99999"], "--listen"),
        (["--token-ttl=60"], "--token-ttl: 60 s is below"),
        (["--advertise-url=http://auth"], "--advertise-url: "),
    ],
)
def test_bad_flags_are_named(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace("[", r"\[")):
        options_from(argument_parser().parse_args(argv))


def test_listen_defaults_to_every_address_without_a_pod_ip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_IP", raising=False)
    assert host_port("$(POD_IP):8443", flag="--listen") == ("0.0.0.0", 8443)
