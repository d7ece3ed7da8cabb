"""Point the webhook configurations (validating and mutating) at this webhook: its CA always, its URL in URL mode.

The install manifests cannot know the CA (the first webhook to start makes it, see
`certs.py`) nor, in URL mode, the address the webhook listens on (the pod IP on the
playground), so the webhook writes both into its own configurations at start-up, as
Liqo's webhook does for the CA. Each write is a full replace conditional on the
resourceVersion, so an edit made meanwhile is never lost (a conflict reads again).
Until the configurations exist (install applies them after the Deployment) it keeps
trying with backoff; the webhook reports ready only once every one is patched.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import logging
from collections.abc import Sequence
from typing import Literal
from urllib.parse import urlsplit

from runtime.api.constants import FIELD_MANAGER_WEBHOOK
from runtime.api.kinds import MUTATINGWEBHOOKS, VALIDATINGWEBHOOKS
from runtime.api.objects import JSON, nested
from runtime.api.resource import Resource
from runtime.core import APIError, Client, ConflictError, NotFoundError

logger = logging.getLogger(__name__)

Mode = Literal["service", "url"]
#: first delay between attempts while a configuration is missing or the API fails; doubles up to the max
RETRY_DELAY = 0.5
RETRY_DELAY_MAX = 10.0


def configured(configuration: JSON, *, ca_bundle: bytes, mode: Mode, base_url: str) -> JSON:
    """`configuration` with every webhook trusting `ca_bundle` and, in URL mode, calling `base_url` + its path.

    The path is the one the configuration names already (its URL's or its Service's), so the
    routing table stays in the install manifests.
    """
    updated = copy.deepcopy(configuration)
    encoded = base64.b64encode(ca_bundle).decode("ascii")
    for webhook in updated.get("webhooks") or []:
        client_config: JSON = webhook.setdefault("clientConfig", {})
        client_config["caBundle"] = encoded
        if mode == "url":
            path = _path(client_config)
            client_config.pop("service", None)
            client_config["url"] = base_url + path
    return updated


def _path(client_config: JSON) -> str:
    if "url" in client_config:
        parts = urlsplit(str(client_config["url"]))
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return str(nested(client_config, "service", "path") or "/")


#: (kind of configuration, name)
Target = tuple[Resource, str]


def targets(*, validating: Sequence[str], mutating: Sequence[str]) -> list[Target]:
    return [(VALIDATINGWEBHOOKS, name) for name in validating] + [
        (MUTATINGWEBHOOKS, name) for name in mutating
    ]


async def patch_configuration(
    client: Client, target: Target, *, ca_bundle: bytes, mode: Mode, base_url: str
) -> None:
    """Write CA (and URL) into the webhook configuration `target`, once it exists; retries until done."""
    resource, name = target
    delay = RETRY_DELAY
    while True:
        try:
            current = await client.get(resource, name)
            desired = configured(current, ca_bundle=ca_bundle, mode=mode, base_url=base_url)
            if desired != current:
                await client.replace(resource, desired, field_manager=FIELD_MANAGER_WEBHOOK)
            logger.info(
                "%s: %d webhooks now trust this webhook's CA%s",
                name,
                len(desired.get("webhooks") or []),
                f" and call {base_url}" if mode == "url" else "",
            )
            return
        except ConflictError:
            logger.info("%s: changed while being patched; reading it again", name)
            continue
        except NotFoundError:
            logger.warning(
                "%s: the %s does not exist (yet); is the runtime installed? retrying in %.3g s",
                name,
                resource.kind,
                delay,
            )
        except APIError as exc:
            logger.warning(
                "%s: could not patch the webhook configuration (%s); retrying in %.3g s", name, exc, delay
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_DELAY_MAX)


async def patch_configurations(
    client: Client, configurations: Sequence[Target], *, ca_bundle: bytes, mode: Mode, base_url: str
) -> None:
    async with asyncio.TaskGroup() as group:
        for target in configurations:
            group.create_task(
                patch_configuration(client, target, ca_bundle=ca_bundle, mode=mode, base_url=base_url),
                name=f"patch webhook configuration {target[1]}",
            )
