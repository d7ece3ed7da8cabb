"""ControllerRevisions: the template history of DaemonSets and StatefulSets (`pkg/controller/history`).

A revision stores a strategic-merge patch that restores the owner's pod template
(`{"spec": {"template": {..., "$patch": "replace"}}}`), a revision number, the
template's labels and the hash label; two revisions are the same revision when their
data are equal. Writes (create with collision handling) are the controllers' own.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from runtime.api.objects import JSON

from .ordering import created
from .ownership import controller_ref, name

#: kube truncates the owner's name so `<name>-<hash>` stays a valid name
_MAX_PREFIX = 223


def revision_data(owner: JSON) -> JSON:
    """The patch a revision of `owner` stores (`getPatch`)."""
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def template_of(revision: JSON) -> JSON:
    """The pod template a revision restores (`ApplyRevision` for the template)."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def number(revision: JSON) -> int:
    return int(revision.get("revision") or 0)


def sort_revisions(revisions: Iterable[JSON]) -> list[JSON]:
    """Oldest revision first, ties by creation time then name (`SortControllerRevisions`)."""

    def key(revision: JSON) -> tuple[int, float, str]:
        moment = created(revision)
        return number(revision), moment.timestamp() if moment is not None else 0.0, name(revision)

    return sorted(revisions, key=key)


def next_number(revisions: list[JSON]) -> int:
    """One past the highest revision (1 for an empty history)."""
    return max((number(revision) for revision in revisions), default=0) + 1


def revision_name(owner_name: str, revision_hash: str) -> str:
    return f"{owner_name[:_MAX_PREFIX]}-{revision_hash}"


def new_revision(owner: JSON, *, data: JSON, number: int, revision_hash: str, hash_label: str) -> JSON:
    """A ControllerRevision of `owner` (`NewControllerRevision`): template labels plus `hash_label`,
    owner annotations (DaemonSets label the hash `controller-revision-hash`, StatefulSets
    `controller.kubernetes.io/hash`)."""
    meta = owner.get("metadata") or {}
    template_labels = (((owner.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "labels"
    ) or {}
    body: JSON = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(str(meta["name"]), revision_hash),
            "namespace": meta.get("namespace"),
            "labels": {**template_labels, hash_label: revision_hash},
            "ownerReferences": [controller_ref(owner)],
        },
        "data": data,
        "revision": number,
    }
    if meta.get("annotations"):
        body["metadata"]["annotations"] = dict(meta["annotations"])
    return body
