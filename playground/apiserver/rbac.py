"""Kubernetes RBAC: who may do what, worded and decided the way kube-apiserver does.

`authorize` is the RBAC authorizer: a request is allowed when some rule of a role bound
to the user (through a ClusterRoleBinding anywhere, or a RoleBinding in the request's
namespace) matches its verb, API group, resource/subresource and name, or its
non-resource path. `forbidden_error` builds the 403 clients print. `rules_for` feeds
SelfSubjectRulesReview. `escalation_error` and `binding_error` are the privilege
escalation checks the RBAC REST storage applies to Roles, ClusterRoles and their
bindings, and `bootstrap_policy` returns the default roles a fresh cluster starts with.

Everything here is pure: the store hands the RBAC objects in through `PolicySource`.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Protocol

from .errors import APIError, forbidden
from .identity import MASTERS_GROUP, SERVICE_ACCOUNT_PREFIX, RequestAttributes, UserInfo
from .resources.base import Obj

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_API_VERSION = f"{RBAC_GROUP}/v1"
ALL = "*"


class PolicySource(Protocol):
    """Read access to the stored RBAC objects (the store implements it)."""

    def cluster_role(self, name: str) -> Obj | None: ...

    def role(self, namespace: str, name: str) -> Obj | None: ...

    def cluster_role_bindings(self) -> Iterable[Obj]: ...

    def role_bindings(self, namespace: str) -> Iterable[Obj]: ...


@dataclass(frozen=True)
class Decision:
    """An authorizer's answer; `reason` feeds SubjectAccessReview status and the 403 message."""

    allowed: bool
    reason: str = ""


# -- rule matching (pkg/apis/rbac/v1/evaluation_helpers.go) -----------------------------------------


def _quote(value: object) -> str:
    """Go's `%q` for the names that messages quote."""
    return json.dumps(value, ensure_ascii=False)


def _has(values: Iterable[str], wanted: str) -> bool:
    return any(v in (ALL, wanted) for v in values)


def _resource_matches(rule_resources: Iterable[str], resource: str, subresource: str) -> bool:
    """`*`, the exact `resource[/subresource]`, or `*/subresource` (but `pods/*` is not a wildcard)."""
    combined = f"{resource}/{subresource}" if subresource else resource
    return any(
        r in (ALL, combined) or (bool(subresource) and r == f"*/{subresource}") for r in rule_resources
    )


def _url_matches(rule_urls: Iterable[str], path: str) -> bool:
    return any(u in (ALL, path) or (u.endswith("*") and path.startswith(u.rstrip("*"))) for u in rule_urls)


def rule_allows(attrs: RequestAttributes, rule: Obj) -> bool:
    """Whether one PolicyRule allows the request.

    A rule with resourceNames only allows requests that name one of them: a list,
    watch, create or deletecollection carries no name (unless the request parser set
    it from a `metadata.name` field selector on list/watch, as kube-apiserver does).
    """
    if not _has(rule.get("verbs") or [], attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule.get("nonResourceURLs") or [], attrs.path)
    names = rule.get("resourceNames") or []
    return (
        _has(rule.get("apiGroups") or [], attrs.api_group)
        and _resource_matches(rule.get("resources") or [], attrs.resource, attrs.subresource)
        and (not names or attrs.name in names)
    )


# -- walking the bindings (pkg/registry/rbac/validation/rule.go) ------------------------------------


@dataclass(frozen=True)
class _Grant:
    """The rules one binding gives the user, and how the authorizer describes that binding."""

    source: str
    rules: tuple[Obj, ...]


@dataclass
class _Resolution:
    grants: list[_Grant] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def rules(self) -> list[Obj]:
        return [rule for grant in self.grants for rule in grant.rules]


def _subject_applies(subject: Obj, user: UserInfo, namespace: str) -> bool:
    kind, name = subject.get("kind"), str(subject.get("name", ""))
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and user.name == f"{SERVICE_ACCOUNT_PREFIX}{sa_namespace}:{name}"
    return False


def _describe_subject(subject: Obj, namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        name = f"{name}/{subject.get('namespace') or namespace}"
    return f"{kind} {_quote(name)}"


def _role_ref_rules(role_ref: Obj, namespace: str, policy: PolicySource, *, plural: bool) -> list[Obj]:
    """The rules of the referenced role; raises LookupError worded like the lookup that failed.

    The authorizer reads through informer listers (`clusterrole.rbac... not found`);
    the escalation checks read through the registry (`clusterroles.rbac... not found`).
    """
    kind, name = role_ref.get("kind"), role_ref.get("name", "")
    if kind == "ClusterRole":
        role = policy.cluster_role(name)
    elif kind == "Role":
        role = policy.role(namespace, name)
    else:
        raise LookupError(f"unsupported role reference kind: {_quote(kind)}")
    if role is None:
        resource = f"{str(kind).lower()}{'s' if plural else ''}"
        raise LookupError(f"{resource}.{RBAC_GROUP} {_quote(name)} not found")
    return list(role.get("rules") or [])


def _bindings(user: UserInfo, namespace: str, policy: PolicySource) -> Iterator[tuple[Obj, str, str]]:
    """(binding, its description, its namespace) for each binding that has the user among its subjects."""
    for binding in policy.cluster_role_bindings():
        subject = _first_subject(binding, user, "")
        if subject is not None:
            yield binding, _binding_source("ClusterRoleBinding", binding, subject, ""), ""
    if not namespace:
        return
    for binding in policy.role_bindings(namespace):
        binding_ns = (binding.get("metadata") or {}).get("namespace") or namespace
        subject = _first_subject(binding, user, binding_ns)
        if subject is not None:
            yield binding, _binding_source("RoleBinding", binding, subject, binding_ns), binding_ns


def _first_subject(binding: Obj, user: UserInfo, namespace: str) -> Obj | None:
    return next((s for s in binding.get("subjects") or [] if _subject_applies(s, user, namespace)), None)


def _binding_source(kind: str, binding: Obj, subject: Obj, namespace: str) -> str:
    name = (binding.get("metadata") or {}).get("name", "")
    if namespace:
        name = f"{name}/{namespace}"
    ref = binding.get("roleRef") or {}
    role = f"{ref.get('kind', '')} {_quote(ref.get('name', ''))}"
    return f"{kind} {_quote(name)} of {role} to {_describe_subject(subject, namespace)}"


def _resolve(user: UserInfo, namespace: str, policy: PolicySource, *, plural: bool) -> _Resolution:
    resolution = _Resolution()
    for binding, source, binding_ns in _bindings(user, namespace, policy):
        try:
            rules = _role_ref_rules(binding.get("roleRef") or {}, binding_ns, policy, plural=plural)
        except LookupError as err:
            resolution.errors.append(str(err))
            continue
        resolution.grants.append(_Grant(source, tuple(rules)))
    return resolution


def _aggregate(messages: Sequence[str]) -> str:
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# -- authorization ---------------------------------------------------------------------------------


def authorize(attrs: RequestAttributes, policy: PolicySource) -> Decision:
    """RBAC authorization, with `system:masters` allowed everything up front as kube-apiserver does."""
    if MASTERS_GROUP in attrs.user.groups:
        return Decision(True)
    resolution = _resolve(attrs.user, attrs.namespace, policy, plural=False)
    for grant in resolution.grants:
        if any(rule_allows(attrs, rule) for rule in grant.rules):
            return Decision(True, f"RBAC: allowed by {grant.source}")
    return Decision(False, f"RBAC: {_aggregate(resolution.errors)}" if resolution.errors else "")


def _sanitize(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _denial(attrs: RequestAttributes) -> str:
    user = _quote(attrs.user.name)
    if not attrs.resource_request:
        return f"User {user} cannot {attrs.verb} path {_quote(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    group = _quote(attrs.api_group)
    what = f"User {user} cannot {attrs.verb} resource {_quote(resource)} in API group {group}"
    if attrs.namespace:
        return f"{what} in the namespace {_quote(attrs.namespace)}"
    return f"{what} at the cluster scope"


def _forbidden(resource: str, name: str, group: str, why: str) -> APIError:
    """apierrors.NewForbidden: `<resource>[.<group>] ["<name>"] is forbidden: <why>`."""
    if not resource and not group:
        return forbidden(f"forbidden: {why}")
    qualified = f"{resource}.{group}" if group else resource
    subject = f"{qualified} {_quote(name)}" if name else qualified
    return forbidden(f"{subject} is forbidden: {why}", resource=resource, name=name or None, group=group)


def forbidden_error(attrs: RequestAttributes, reason: str = "") -> APIError:
    """The 403 kube-apiserver answers a denied request with; `reason` is the Decision's."""
    why = _sanitize(_denial(attrs))
    if reason:
        why = f"{why}: {reason}"
    if not attrs.resource_request:
        return forbidden(f"forbidden: {why}")
    return _forbidden(attrs.resource, attrs.name, attrs.api_group, why)


# -- SelfSubjectRulesReview ------------------------------------------------------------------------


def _rule_info(rule: Obj, keys: tuple[str, ...]) -> Obj:
    info: Obj = {"verbs": list(rule.get("verbs") or [])}
    info.update({key: list(rule[key]) for key in keys if rule.get(key)})
    return info


def rules_for(user: UserInfo, namespace: str, policy: PolicySource) -> tuple[list[Obj], list[Obj]]:
    """(resourceRules, nonResourceRules) the user holds in `namespace`, for SelfSubjectRulesReview."""
    rules = _resolve(user, namespace, policy, plural=False).rules()
    resource_rules = [
        _rule_info(r, ("apiGroups", "resources", "resourceNames")) for r in rules if r.get("resources")
    ]
    non_resource_rules = [_rule_info(r, ("nonResourceURLs",)) for r in rules if r.get("nonResourceURLs")]
    return resource_rules, non_resource_rules


# -- escalation prevention (pkg/registry/rbac/validation/policy_comparator.go) ----------------------


def _breakdown(rule: Obj) -> Iterator[Obj]:
    """Split a rule into atomic rules of one group, resource, verb and (optional) name, or URL and verb."""
    verbs, names = rule.get("verbs") or [], rule.get("resourceNames") or []
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            for verb in verbs:
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                if names:
                    yield from ({**base, "resourceNames": [name]} for name in names)
                else:
                    yield base
    for url in rule.get("nonResourceURLs") or []:
        yield from ({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)


def _all_or_each(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return ALL in owned or set(wanted) <= set(owned)


def _resources_covered(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if _all_or_each(owned, wanted):
        return True
    return all(path in owned or ("/" in path and f"*/{path.split('/', 1)[1]}" in owned) for path in wanted)


def _urls_covered(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(_url_matches(owned, path) for path in wanted)


def _rule_covers(owner: Obj, sub: Obj) -> bool:
    owner_names, sub_names = owner.get("resourceNames") or [], sub.get("resourceNames") or []
    names_ok = not owner_names or (bool(sub_names) and set(sub_names) <= set(owner_names))
    return (
        _all_or_each(owner.get("verbs") or [], sub.get("verbs") or [])
        and _all_or_each(owner.get("apiGroups") or [], sub.get("apiGroups") or [])
        and _resources_covered(owner.get("resources") or [], sub.get("resources") or [])
        and _urls_covered(owner.get("nonResourceURLs") or [], sub.get("nonResourceURLs") or [])
        and names_ok
    )


def uncovered_rules(owner_rules: Sequence[Obj], requested_rules: Sequence[Obj]) -> list[Obj]:
    """The atomic pieces of `requested_rules` that no rule in `owner_rules` covers."""
    return [
        sub
        for rule in requested_rules
        for sub in _breakdown(rule)
        if not any(_rule_covers(owner, sub) for owner in owner_rules)
    ]


def covers(owner_rules: Sequence[Obj], requested_rules: Sequence[Obj]) -> bool:
    """Whether holding `owner_rules` already grants everything in `requested_rules` (wildcards included)."""
    return not uncovered_rules(owner_rules, requested_rules)


def _compact(rules: list[Obj]) -> list[Obj]:
    """Merge atomic rules on the same group/resource/name into one rule listing all their verbs."""
    merged: dict[tuple[str, ...], Obj] = {}
    others: list[Obj] = []
    for rule in rules:
        if rule.get("nonResourceURLs"):
            others.append(rule)
            continue
        key = (rule["apiGroups"][0], rule["resources"][0], *rule.get("resourceNames", []))
        if key in merged:
            merged[key]["verbs"] = [*merged[key]["verbs"], *rule["verbs"]]
        else:
            merged[key] = copy.deepcopy(rule)
    return others + list(merged.values())


def _go_list(values: Sequence[str]) -> str:
    return "[" + " ".join(_quote(v) for v in values) + "]"


def _compact_string(rule: Obj) -> str:
    """rbacv1helpers.CompactString: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`."""
    parts = [
        f"{label}:{_go_list(rule[key])}"
        for label, key in (
            ("APIGroups", "apiGroups"),
            ("Resources", "resources"),
            ("NonResourceURLs", "nonResourceURLs"),
            ("ResourceNames", "resourceNames"),
            ("Verbs", "verbs"),
        )
        if rule.get(key)
    ]
    return "{" + ", ".join(parts) + "}"


def _escalation_message(user: UserInfo, missing: list[Obj], errors: list[str]) -> str:
    described = sorted({_compact_string(rule) for rule in _compact(missing)})
    message = (
        f"user {_quote(user.name)} (groups={_go_list(user.groups)}) is attempting to grant RBAC "
        "permissions not currently held:\n" + "\n".join(described)
    )
    if errors:
        message += f"; resolution errors: [{_aggregate(errors)}]"
    return message


def _no_escalation(user: UserInfo, namespace: str, rules: Sequence[Obj], policy: PolicySource) -> str | None:
    """ConfirmNoEscalation: None when the user holds every permission in `rules`, else why not."""
    resolution = _resolve(user, namespace, policy, plural=True)
    missing = uncovered_rules(resolution.rules(), rules)
    return _escalation_message(user, missing, resolution.errors) if missing else None


_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields")


def _only_gc_fields_changed(new: Obj, old: Obj) -> bool:
    """An update that touches only what garbage collection needs skips the escalation checks."""
    stomped = copy.deepcopy(new)
    meta, old_meta = stomped.setdefault("metadata", {}), old.get("metadata") or {}
    for key in _GC_FIELDS:
        meta.pop(key, None)
        if key in old_meta:
            meta[key] = copy.deepcopy(old_meta[key])
    return bool(stomped == old)


FULL_AUTHORITY: tuple[Obj, ...] = (
    {"verbs": [ALL], "apiGroups": [ALL], "resources": [ALL]},
    {"verbs": [ALL], "nonResourceURLs": [ALL]},
)


def _has_aggregation_rule(role: Obj | None) -> bool:
    return bool(((role or {}).get("aggregationRule") or {}).get("clusterRoleSelectors"))


def _name_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def escalation_error(
    attrs: RequestAttributes, role: Obj, *, policy: PolicySource, old: Obj | None = None
) -> APIError | None:
    """The privilege-escalation check on creating (or, with `old`, updating) a Role or ClusterRole.

    `attrs` are the write request's. It passes for `system:masters`, for an update that
    only touches garbage-collection fields, for a user allowed the `escalate` verb on the
    role, and for a user who already holds every permission the role grants. Setting an
    aggregationRule on a ClusterRole further needs full (cluster-admin) authority.
    """
    if MASTERS_GROUP in attrs.user.groups or (old is not None and _only_gc_fields_changed(role, old)):
        return None
    escalate = RequestAttributes(
        user=attrs.user,
        verb="escalate",
        api_group=attrs.api_group,
        api_version="*",
        resource=attrs.resource,
        name=attrs.name,
        namespace=attrs.namespace,
    )
    if authorize(escalate, policy).allowed:
        return None
    why = _no_escalation(attrs.user, attrs.namespace, role.get("rules") or [], policy)
    aggregates = _has_aggregation_rule(role) or _has_aggregation_rule(old)
    if why is None and aggregates and _no_escalation(attrs.user, attrs.namespace, FULL_AUTHORITY, policy):
        why = "must have cluster-admin privileges to use the aggregationRule"
    return None if why is None else _forbidden(attrs.resource, _name_of(role), RBAC_GROUP, why)


def _bind_allowed(user: UserInfo, role_ref: Obj, namespace: str, policy: PolicySource) -> bool:
    resource = {"ClusterRole": "clusterroles", "Role": "roles"}.get(str(role_ref.get("kind")))
    if resource is None:
        return False
    bind = RequestAttributes(
        user=user,
        verb="bind",
        api_group=str(role_ref.get("apiGroup", "")),
        resource=resource,
        name=str(role_ref.get("name", "")),
        namespace=namespace,
    )
    return authorize(bind, policy).allowed


def binding_error(
    attrs: RequestAttributes, binding: Obj, *, policy: PolicySource, old: Obj | None = None
) -> APIError | None:
    """The privilege-escalation check on creating (or, with `old`, updating) a (Cluster)RoleBinding.

    It passes for `system:masters`, for an update that only touches garbage-collection
    fields, for a user allowed `bind` on the referenced role (in the binding's namespace,
    or cluster-wide for a ClusterRoleBinding), and for a user who already holds every
    permission of the referenced role. A missing role is a 403 naming the lookup.
    """
    if MASTERS_GROUP in attrs.user.groups or (old is not None and _only_gc_fields_changed(binding, old)):
        return None
    role_ref = binding.get("roleRef") or {}
    if _bind_allowed(attrs.user, role_ref, attrs.namespace, policy):
        return None
    try:
        rules = _role_ref_rules(role_ref, attrs.namespace, policy, plural=True)
    except LookupError as err:
        return _forbidden(attrs.resource, _name_of(binding), RBAC_GROUP, str(err))
    why = _no_escalation(attrs.user, attrs.namespace, rules, policy)
    return None if why is None else _forbidden(attrs.resource, _name_of(binding), RBAC_GROUP, why)


_ESCALATION_CHECKS = {
    "Role": ("roles", escalation_error),
    "ClusterRole": ("clusterroles", escalation_error),
    "RoleBinding": ("rolebindings", binding_error),
    "ClusterRoleBinding": ("clusterrolebindings", binding_error),
}


def admission_escalation_error(
    user: UserInfo, kind: str, obj: Obj, *, policy: PolicySource, old: Obj | None = None
) -> APIError | None:
    """The escalation check for a write of `obj` of kind `kind`, from the object alone (None for other kinds).

    Pass the stored object as `old` on updates: it names the request (so `escalate`
    and `bind` rules restricted by resourceNames apply, as they do only on updates in
    kube-apiserver) and lets GC-only updates through.
    """
    if kind not in _ESCALATION_CHECKS:
        return None
    resource, check = _ESCALATION_CHECKS[kind]
    attrs = RequestAttributes(
        user=user,
        verb="create" if old is None else "update",
        api_group=RBAC_GROUP,
        api_version="v1",
        resource=resource,
        name="" if old is None else _name_of(old),
        namespace=str((obj.get("metadata") or {}).get("namespace") or ""),
    )
    return check(attrs, obj, policy=policy, old=old)


# -- bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) -----------------------------

BOOTSTRAP_POLICY_FILE = "bootstrap-policy.json.gz"
AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate"
#: the ClusterRole whose rules the Node authorizer applies to what it does not subdivide
NODE_ROLE = "system:node"


@functools.cache
def _bootstrap_objects() -> tuple[str, ...]:
    raw = resources.files(__package__ or __name__).joinpath("data", BOOTSTRAP_POLICY_FILE).read_bytes()
    return tuple(json.dumps(obj) for obj in json.loads(gzip.decompress(raw)))


def bootstrap_policy() -> list[Obj]:
    """The RBAC objects a fresh kube-apiserver 1.36 creates, roles before bindings.

    Read from `data/` (made by `tools/gen_bootstrap_policy.py` from a real control plane):
    the ClusterRoles and ClusterRoleBindings of users, components, nodes and every
    controller of kube-controller-manager, and the Roles and RoleBindings in kube-system
    and kube-public. `admin`, `edit` and `view` carry the rules kube-controller-manager's
    aggregation gives them.
    """
    return [json.loads(obj) for obj in _bootstrap_objects()]


def node_rules() -> list[Obj]:
    """bootstrappolicy.NodeRules: the rules of the `system:node` ClusterRole as kube-apiserver compiles them in."""
    return next(
        list(obj.get("rules") or [])
        for obj in bootstrap_policy()
        if obj["kind"] == "ClusterRole" and obj["metadata"]["name"] == NODE_ROLE
    )


def reconciled(current: Obj, wanted: Obj) -> Obj | None:
    """What the rbac/bootstrap-roles hook makes of a stored default it finds, or None to leave it.

    Unless the stored object says `autoupdate: "false"`, a role gains the rules (and
    aggregation selectors) of its default that it does not cover yet, and a binding the
    subjects it lacks; labels and annotations of the default are added. Nothing is
    taken away.
    """
    meta = current.get("metadata") or {}
    if (meta.get("annotations") or {}).get(AUTOUPDATE_ANNOTATION) == "false":
        return None
    updated = copy.deepcopy(current)
    updated_meta = updated.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        merged = {**(wanted["metadata"].get(key) or {}), **(meta.get(key) or {})}
        if merged:
            updated_meta[key] = merged
    if wanted["kind"] in ("ClusterRole", "Role"):
        missing = uncovered_rules(current.get("rules") or [], wanted.get("rules") or [])
        if missing:
            updated["rules"] = [*(current.get("rules") or []), *_compact(missing)]
        selectors = (wanted.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
        have = (current.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
        lacking = [selector for selector in selectors if selector not in have]
        if lacking:
            updated["aggregationRule"] = {"clusterRoleSelectors": [*have, *lacking]}
    else:
        subjects = current.get("subjects") or []
        lacking_subjects = [subject for subject in wanted.get("subjects") or [] if subject not in subjects]
        if lacking_subjects:
            updated["subjects"] = [*subjects, *lacking_subjects]
    return None if updated == current else updated
