"""Owner references: the controller reference a controller stamps on what it creates, and who owns what.

Mirrors `metav1.NewControllerRef` / `metav1.GetControllerOf`: the one reference marked
`controller: true` names the object's managing controller, and `blockOwnerDeletion`
lets foreground deletion of the owner wait for it.
"""

from __future__ import annotations

from runtime.api.objects import JSON


def controller_ref(owner: JSON) -> JSON:
    """The controller reference to `owner` (which must carry apiVersion, kind, name and uid)."""
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: JSON) -> JSON | None:
    """The owner reference marked `controller: true`, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def is_controlled_by(obj: JSON, owner: JSON) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == (owner.get("metadata") or {}).get("uid")


def uid(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def namespace(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("namespace", ""))


def reference(obj: JSON) -> str:
    """`namespace/name`, the way log messages name an object."""
    return f"{namespace(obj)}/{name(obj)}" if namespace(obj) else name(obj)


def labels(obj: JSON) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def is_deleting(obj: JSON) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))
