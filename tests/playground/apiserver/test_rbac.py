"""RBAC authorization, 403 wording, rules review, escalation checks and the bootstrap policy."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from playground.apiserver.identity import (
    AUTHENTICATED_GROUP,
    MASTERS_GROUP,
    UNAUTHENTICATED_GROUP,
    RequestAttributes,
    UserInfo,
    service_account_user,
)
from playground.apiserver.rbac import (
    RBAC_GROUP,
    Decision,
    admission_escalation_error,
    authorize,
    binding_error,
    bootstrap_policy,
    covers,
    escalation_error,
    forbidden_error,
    node_rules,
    reconciled,
    rules_for,
    uncovered_rules,
)

Obj = dict[str, Any]
ALICE = UserInfo("alice", (AUTHENTICATED_GROUP,))
BOB = UserInfo("bob", ("devs", AUTHENTICATED_GROUP))
ROBOT = service_account_user("default", "robot")


@dataclass
class Policy:
    """An in-memory PolicySource."""

    objects: list[Obj] = field(default_factory=list)

    def _of(self, kind: str) -> Iterable[Obj]:
        return (o for o in self.objects if o["kind"] == kind)

    def cluster_role(self, name: str) -> Obj | None:
        return next((o for o in self._of("ClusterRole") if o["metadata"]["name"] == name), None)

    def role(self, namespace: str, name: str) -> Obj | None:
        return next(
            (
                o
                for o in self._of("Role")
                if (o["metadata"]["namespace"], o["metadata"]["name"]) == (namespace, name)
            ),
            None,
        )

    def cluster_role_bindings(self) -> Iterable[Obj]:
        return self._of("ClusterRoleBinding")

    def role_bindings(self, namespace: str) -> Iterable[Obj]:
        return (o for o in self._of("RoleBinding") if o["metadata"]["namespace"] == namespace)


def rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> Obj:
    out: Obj = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        out["resourceNames"] = names
    return out


def urls(paths: list[str], verbs: list[str]) -> Obj:
    return {"nonResourceURLs": paths, "verbs": verbs}


def cluster_role(name: str, *rules: Obj) -> Obj:
    return {"kind": "ClusterRole", "metadata": {"name": name}, "rules": list(rules)}


def role(namespace: str, name: str, *rules: Obj) -> Obj:
    return {"kind": "Role", "metadata": {"namespace": namespace, "name": name}, "rules": list(rules)}


def subject(kind: str, name: str, namespace: str | None = None) -> Obj:
    out: Obj = {"kind": kind, "name": name}
    if namespace is not None:
        out["namespace"] = namespace
    return out


def crb(name: str, role_name: str, *subjects: Obj) -> Obj:
    return {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role_name},
        "subjects": list(subjects),
    }


def rb(namespace: str, name: str, ref_kind: str, role_name: str, *subjects: Obj) -> Obj:
    return {
        "kind": "RoleBinding",
        "metadata": {"namespace": namespace, "name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": ref_kind, "name": role_name},
        "subjects": list(subjects),
    }


def req(
    user: UserInfo,
    verb: str,
    resource: str,
    *,
    namespace: str = "",
    name: str = "",
    group: str = "",
    subresource: str = "",
) -> RequestAttributes:
    return RequestAttributes(
        user=user,
        verb=verb,
        api_group=group,
        api_version="v1",
        resource=resource,
        subresource=subresource,
        name=name,
        namespace=namespace,
    )


def path_req(user: UserInfo, path: str, verb: str = "get") -> RequestAttributes:
    return RequestAttributes(user=user, verb=verb, resource_request=False, path=path)


POLICY = Policy(
    [
        cluster_role("pod-reader", rule([""], ["pods"], ["get", "list", "watch"])),
        cluster_role("everything", rule(["*"], ["*"], ["*"])),
        cluster_role("deploy-scaler", rule(["apps"], ["deployments/scale"], ["update"])),
        cluster_role("any-scale", rule(["*"], ["*/scale"], ["get"])),
        cluster_role("pods-star", rule([""], ["pods/*"], ["get"])),
        cluster_role("log-reader", rule([""], ["pods/log"], ["get"])),
        cluster_role(
            "one-config", rule([""], ["configmaps"], ["get", "list", "watch", "update"], ["app-config"])
        ),
        cluster_role("metrics", urls(["/metrics", "/logs/*"], ["get"])),
        role("team", "secret-reader", rule([""], ["secrets"], ["get"])),
        role("team", "url-role", urls(["/healthz"], ["get"])),
        crb("alice-pods", "pod-reader", subject("User", "alice")),
        crb("devs-metrics", "metrics", subject("Group", "devs")),
        crb("alice-scale", "deploy-scaler", subject("User", "alice")),
        crb("robot-sa-no-ns", "everything", subject("ServiceAccount", "robot")),
        crb("dangling", "does-not-exist", subject("User", "bob")),
        rb("team", "bob-secrets", "Role", "secret-reader", subject("User", "bob")),
        rb("team", "bob-everything", "ClusterRole", "everything", subject("User", "carol")),
        rb("team", "robot-logs", "ClusterRole", "log-reader", subject("ServiceAccount", "robot", "default")),
        rb("default", "robot-config", "ClusterRole", "one-config", subject("ServiceAccount", "robot")),
        rb("team", "bob-scale", "ClusterRole", "any-scale", subject("Group", "devs")),
        rb("team", "bob-pods-star", "ClusterRole", "pods-star", subject("User", "bob")),
        rb("team", "bob-url", "Role", "url-role", subject("User", "bob")),
        rb("team", "bob-missing", "Role", "nope", subject("User", "bob")),
    ]
)
CAROL = UserInfo("carol")
ROOT = UserInfo("root", (MASTERS_GROUP,))


@pytest.mark.parametrize(
    ("attrs", "allowed"),
    [
        (req(ALICE, "get", "pods", namespace="default", name="web"), True),
        (req(ALICE, "list", "pods"), True),
        (req(ALICE, "delete", "pods", namespace="default", name="web"), False),
        (req(ALICE, "get", "pods", namespace="default", name="web", group="apps"), False),
        (req(ALICE, "get", "pods", namespace="default", name="web", subresource="log"), False),
        (
            req(ALICE, "update", "deployments", namespace="x", name="d", group="apps", subresource="scale"),
            True,
        ),
        (req(ALICE, "update", "deployments", namespace="x", name="d", group="apps"), False),
        (req(BOB, "get", "deployments", namespace="team", name="d", group="apps", subresource="scale"), True),
        (
            req(BOB, "get", "statefulsets", namespace="team", name="s", group="apps", subresource="scale"),
            True,
        ),
        (req(BOB, "get", "deployments", namespace="team", name="d", group="apps"), False),
        (
            req(BOB, "get", "deployments", namespace="other", name="d", group="apps", subresource="scale"),
            False,
        ),
        (req(BOB, "get", "pods", namespace="team", name="p", subresource="log"), False),
        (req(BOB, "get", "secrets", namespace="team", name="s"), True),
        (req(BOB, "get", "secrets", namespace="other", name="s"), False),
        (req(BOB, "get", "secrets", name="s"), False),
        (req(CAROL, "delete", "nodes", namespace="team", name="n"), True),
        (req(CAROL, "delete", "nodes", name="n"), False),
        (req(ROBOT, "get", "pods", namespace="team", name="p", subresource="log"), True),
        (req(ROBOT, "get", "pods", namespace="team", name="p"), False),
        (req(ROBOT, "get", "configmaps", namespace="default", name="app-config"), True),
        (req(ROBOT, "update", "configmaps", namespace="default", name="app-config"), True),
        (req(ROBOT, "get", "configmaps", namespace="default", name="other"), False),
        (req(ROBOT, "list", "configmaps", namespace="default"), False),
        (req(ROBOT, "create", "configmaps", namespace="default"), False),
        (req(ROBOT, "get", "configmaps", namespace="team", name="app-config"), False),
        (req(ROOT, "delete", "namespaces", name="kube-system"), True),
        (path_req(BOB, "/metrics"), True),
        (path_req(BOB, "/logs/kube-apiserver.log"), True),
        (path_req(BOB, "/logs"), False),
        (path_req(BOB, "/metrics", "post"), False),
        (path_req(ALICE, "/metrics"), False),
        (path_req(BOB, "/healthz"), False),
        (path_req(ROOT, "/anything"), True),
    ],
    ids=[
        "get-granted-verb",
        "list-cluster-wide-via-crb",
        "verb-not-granted",
        "other-api-group",
        "subresource-needs-own-grant",
        "subresource-granted",
        "subresource-grant-not-parent",
        "star-slash-subresource",
        "star-slash-subresource-any-resource",
        "star-slash-not-parent",
        "rolebinding-only-in-its-namespace",
        "pods-star-is-not-a-wildcard",
        "rolebinding-to-role",
        "role-other-namespace",
        "role-not-cluster-scope",
        "rolebinding-to-clusterrole",
        "rolebinding-clusterrole-not-cluster-wide",
        "sa-subject-with-namespace",
        "sa-subject-grants-only-role-rules",
        "sa-namespace-defaults-to-binding",
        "resource-names-allow-named-update",
        "resource-names-other-name",
        "resource-names-deny-list",
        "resource-names-deny-create",
        "resource-names-other-namespace",
        "masters-allowed-everything",
        "non-resource-exact",
        "non-resource-prefix",
        "non-resource-prefix-needs-slash",
        "non-resource-verb",
        "non-resource-not-bound",
        "non-resource-from-role-ignored",
        "masters-non-resource",
    ],
)
def test_authorize(attrs: RequestAttributes, allowed: bool) -> None:
    assert authorize(attrs, POLICY).allowed is allowed


def test_clusterrolebinding_sa_subject_needs_namespace() -> None:
    assert not authorize(req(ROBOT, "get", "nodes", name="n"), POLICY).allowed


def test_allowed_decision_names_the_binding() -> None:
    assert authorize(
        req(ROBOT, "get", "pods", namespace="team", name="p", subresource="log"), POLICY
    ) == Decision(
        True,
        'RBAC: allowed by RoleBinding "robot-logs/team" of ClusterRole "log-reader" '
        'to ServiceAccount "robot/default"',
    )
    assert authorize(req(ALICE, "list", "pods"), POLICY).reason == (
        'RBAC: allowed by ClusterRoleBinding "alice-pods" of ClusterRole "pod-reader" to User "alice"'
    )


def test_missing_roles_grant_nothing_and_explain_the_denial() -> None:
    decision = authorize(req(BOB, "delete", "pods", namespace="team", name="p"), POLICY)
    assert decision == Decision(
        False,
        'RBAC: [clusterrole.rbac.authorization.k8s.io "does-not-exist" not found, '
        'role.rbac.authorization.k8s.io "nope" not found]',
    )


@pytest.mark.parametrize(
    ("attrs", "message", "details"),
    [
        (
            req(ALICE, "get", "pods", namespace="default", name="web"),
            'pods "web" is forbidden: User "alice" cannot get resource "pods" in API group "" '
            'in the namespace "default"',
            {"kind": "pods", "name": "web"},
        ),
        (
            req(ALICE, "list", "pods"),
            'pods is forbidden: User "alice" cannot list resource "pods" in API group "" '
            "at the cluster scope",
            {"kind": "pods"},
        ),
        (
            req(ALICE, "create", "pods", namespace="default", name="web", subresource="eviction"),
            'pods "web" is forbidden: User "alice" cannot create resource "pods/eviction" in API group "" '
            'in the namespace "default"',
            {"kind": "pods", "name": "web"},
        ),
        (
            req(ALICE, "delete", "deployments", namespace="prod", name="api", group="apps"),
            'deployments.apps "api" is forbidden: User "alice" cannot delete resource "deployments" '
            'in API group "apps" in the namespace "prod"',
            {"kind": "deployments", "name": "api", "group": "apps"},
        ),
        (
            path_req(ALICE, "/metrics"),
            'forbidden: User "alice" cannot get path "/metrics"',
            {},
        ),
        (
            req(UserInfo("<b>&"), "list", "secrets"),
            'secrets is forbidden: User "&lt;b&gt;&amp;" cannot list resource "secrets" in API group "" '
            "at the cluster scope",
            {"kind": "secrets"},
        ),
    ],
    ids=["named-namespaced", "cluster-scope-list", "subresource", "api-group", "non-resource", "sanitized"],
)
def test_forbidden_error_matches_kube_apiserver(attrs: RequestAttributes, message: str, details: Obj) -> None:
    error = forbidden_error(attrs)
    assert (error.code, error.reason, error.message, error.details) == (403, "Forbidden", message, details)


def test_forbidden_error_appends_the_reason() -> None:
    error = forbidden_error(req(BOB, "list", "pods"), 'RBAC: role.rbac.authorization.k8s.io "nope" not found')
    assert error.message == (
        'pods is forbidden: User "bob" cannot list resource "pods" in API group "" at the cluster scope: '
        'RBAC: role.rbac.authorization.k8s.io "nope" not found'
    )


def test_rules_for_lists_cluster_and_namespace_rules() -> None:
    resource_rules, non_resource_rules = rules_for(BOB, "team", POLICY)
    assert resource_rules == [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]},
        {"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods/*"]},
    ]
    assert non_resource_rules == [
        {"verbs": ["get"], "nonResourceURLs": ["/metrics", "/logs/*"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
    ]
    assert rules_for(ROBOT, "default", POLICY)[0] == [
        {
            "verbs": ["get", "list", "watch", "update"],
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["app-config"],
        },
    ]


@pytest.mark.parametrize(
    ("owner", "requested", "expected"),
    [
        ([rule(["*"], ["*"], ["*"])], [rule(["apps"], ["deployments"], ["get", "delete"])], True),
        ([rule([""], ["pods"], ["get", "list"])], [rule([""], ["pods"], ["get"])], True),
        ([rule([""], ["pods"], ["get"])], [rule([""], ["pods"], ["get", "list"])], False),
        ([rule([""], ["pods"], ["*"])], [rule([""], ["pods"], ["escalate"])], True),
        ([rule(["*"], ["*/scale"], ["get"])], [rule(["apps"], ["deployments/scale"], ["get"])], True),
        ([rule([""], ["pods"], ["get"])], [rule([""], ["pods/log"], ["get"])], False),
        ([rule([""], ["pods"], ["get"])], [rule([""], ["pods"], ["get"], ["a"])], True),
        ([rule([""], ["pods"], ["get"], ["a", "b"])], [rule([""], ["pods"], ["get"], ["b"])], True),
        ([rule([""], ["pods"], ["get"], ["a"])], [rule([""], ["pods"], ["get"])], False),
        (
            [rule([""], ["pods"], ["get"]), rule([""], ["services"], ["get"])],
            [rule([""], ["pods", "services"], ["get"])],
            True,
        ),
        ([urls(["/logs/*"], ["get"])], [urls(["/logs/a", "/logs/b/c"], ["get"])], True),
        ([urls(["*"], ["*"])], [urls(["/metrics"], ["get"])], True),
        ([urls(["/metrics"], ["get"])], [urls(["/metrics/slis"], ["get"])], False),
        ([rule(["*"], ["*"], ["*"])], [urls(["/metrics"], ["get"])], False),
    ],
    ids=[
        "star-covers-all",
        "subset-verbs",
        "missing-verb",
        "star-verb",
        "star-slash-subresource",
        "parent-not-subresource",
        "unrestricted-covers-named",
        "names-subset",
        "named-not-unrestricted",
        "split-across-rules",
        "url-prefix",
        "url-star",
        "url-exact-only",
        "resources-not-urls",
    ],
)
def test_covers(owner: list[Obj], requested: list[Obj], expected: bool) -> None:
    assert covers(owner, requested) is expected


def test_uncovered_rules_are_atomic() -> None:
    missing = uncovered_rules(
        [rule([""], ["pods"], ["get"])], [rule([""], ["pods", "secrets"], ["get", "list"])]
    )
    assert missing == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]},
    ]


def _role_write(
    user: UserInfo, verb: str = "create", *, namespace: str = "team", name: str = ""
) -> RequestAttributes:
    resource = "roles" if namespace else "clusterroles"
    return req(user, verb, resource, namespace=namespace, name=name, group=RBAC_GROUP)


ESCALATION_POLICY = Policy(
    [
        cluster_role("pod-reader", rule([""], ["pods"], ["get", "list", "watch"])),
        cluster_role(
            "role-writer", rule([RBAC_GROUP], ["roles", "rolebindings", "clusterroles"], ["create", "update"])
        ),
        cluster_role("escalator", rule([RBAC_GROUP], ["roles"], ["escalate"])),
        cluster_role("binder", rule([RBAC_GROUP], ["clusterroles"], ["bind"], ["pod-reader", "admin"])),
        cluster_role("admin", rule(["*"], ["*"], ["*"])),
        cluster_role("node-admin", rule([""], ["nodes"], ["*"])),
        role("team", "pod-reader", rule([""], ["pods"], ["get"])),
        crb("alice-read", "pod-reader", subject("User", "alice")),
        crb("alice-write", "role-writer", subject("User", "alice")),
        crb("bob-write", "role-writer", subject("User", "bob")),
        rb("team", "bob-escalate", "ClusterRole", "escalator", subject("User", "bob")),
        rb("team", "bob-bind", "ClusterRole", "binder", subject("User", "bob")),
        rb("team", "alice-admin", "ClusterRole", "admin", subject("User", "alice")),
        crb("alice-missing", "gone", subject("User", "alice")),
    ]
)


def new_role(namespace: str, name: str, *rules: Obj) -> Obj:
    return {"apiVersion": f"{RBAC_GROUP}/v1", **role(namespace, name, *rules)}


def test_creating_a_role_with_held_permissions_is_allowed() -> None:
    wanted = new_role("dev", "reader", rule([""], ["pods"], ["get", "list"]))
    assert escalation_error(_role_write(ALICE, namespace="dev"), wanted, policy=ESCALATION_POLICY) is None


def test_creating_a_role_with_unheld_permissions_is_forbidden() -> None:
    wanted = new_role(
        "dev",
        "deleter",
        rule([""], ["pods"], ["get", "delete", "deletecollection"]),
        rule(["apps"], ["deployments"], ["list"], ["a", "b"]),
    )
    error = escalation_error(_role_write(ALICE, namespace="dev"), wanted, policy=ESCALATION_POLICY)
    assert error is not None
    assert (error.code, error.reason) == (403, "Forbidden")
    assert error.details == {"kind": "roles", "name": "deleter", "group": RBAC_GROUP}
    assert error.message == (
        'roles.rbac.authorization.k8s.io "deleter" is forbidden: user "alice" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete" "deletecollection"]}\n'
        '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["a"], Verbs:["list"]}\n'
        '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["b"], Verbs:["list"]}; '
        'resolution errors: [clusterroles.rbac.authorization.k8s.io "gone" not found]'
    )


def test_namespace_permissions_count_only_in_their_namespace() -> None:
    anything = new_role("team", "all", rule(["*"], ["*"], ["*"]))
    assert escalation_error(_role_write(ALICE, namespace="team"), anything, policy=ESCALATION_POLICY) is None
    elsewhere = new_role("dev", "all", rule(["*"], ["*"], ["*"]))
    assert (
        escalation_error(_role_write(ALICE, namespace="dev"), elsewhere, policy=ESCALATION_POLICY) is not None
    )


def test_escalate_verb_allows_any_role() -> None:
    anything = new_role("team", "all", rule(["*"], ["*"], ["*"]))
    assert escalation_error(_role_write(BOB, namespace="team"), anything, policy=ESCALATION_POLICY) is None
    assert escalation_error(_role_write(BOB, namespace="dev"), anything, policy=ESCALATION_POLICY) is not None


def test_masters_may_escalate() -> None:
    anything = new_role("dev", "all", rule(["*"], ["*"], ["*"]))
    assert escalation_error(_role_write(ROOT, namespace="dev"), anything, policy=Policy()) is None


def test_update_touching_only_gc_fields_skips_the_check() -> None:
    old = new_role("dev", "all", rule(["*"], ["*"], ["*"]))
    updated = {**old, "metadata": {**old["metadata"], "finalizers": ["x"], "ownerReferences": [{"uid": "1"}]}}
    attrs = _role_write(ALICE, "update", namespace="dev", name="all")
    assert escalation_error(attrs, updated, policy=ESCALATION_POLICY, old=old) is None
    relabelled = {**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}}
    assert escalation_error(attrs, relabelled, policy=ESCALATION_POLICY, old=old) is not None


def test_aggregation_rule_needs_cluster_admin() -> None:
    aggregated = {
        **cluster_role("agg", rule([""], ["pods"], ["get"])),
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]},
    }
    error = escalation_error(_role_write(ALICE, namespace=""), aggregated, policy=ESCALATION_POLICY)
    assert error is not None
    assert error.message == (
        'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: '
        "must have cluster-admin privileges to use the aggregationRule"
    )
    admin_policy = Policy(
        [*ESCALATION_POLICY.objects, crb("alice-admin-crb", "admin", subject("User", "alice"))]
    )
    assert escalation_error(_role_write(ALICE, namespace=""), aggregated, policy=admin_policy) is None


def binding(namespace: str, name: str, ref_kind: str, role_name: str) -> Obj:
    return rb(namespace, name, ref_kind, role_name, subject("User", "eve"))


def _binding_write(user: UserInfo, namespace: str) -> RequestAttributes:
    return req(user, "create", "rolebindings", namespace=namespace, group=RBAC_GROUP)


@pytest.mark.parametrize(
    ("user", "namespace", "new_binding", "allowed"),
    [
        (ALICE, "dev", binding("dev", "b", "ClusterRole", "pod-reader"), True),
        (ALICE, "team", binding("team", "b", "ClusterRole", "admin"), True),
        (ALICE, "dev", binding("dev", "b", "ClusterRole", "admin"), False),
        (BOB, "team", binding("team", "b", "ClusterRole", "admin"), True),
        (BOB, "team", binding("team", "b", "ClusterRole", "node-admin"), False),
        (BOB, "dev", binding("dev", "b", "ClusterRole", "admin"), False),
        (BOB, "team", binding("team", "b", "Role", "pod-reader"), False),
        (ROOT, "dev", binding("dev", "b", "ClusterRole", "gone"), True),
    ],
    ids=[
        "holds-all-permissions",
        "holds-them-in-namespace",
        "lacks-them-elsewhere",
        "bind-verb-on-named-role",
        "bind-verb-other-name",
        "bind-verb-other-namespace",
        "bind-verb-wrong-kind",
        "masters",
    ],
)
def test_binding_check(user: UserInfo, namespace: str, new_binding: Obj, allowed: bool) -> None:
    error = binding_error(_binding_write(user, namespace), new_binding, policy=ESCALATION_POLICY)
    assert (error is None) is allowed


def test_binding_to_missing_role_is_forbidden() -> None:
    error = binding_error(
        _binding_write(BOB, "dev"), binding("dev", "b", "ClusterRole", "gone"), policy=ESCALATION_POLICY
    )
    assert error is not None
    assert error.message == (
        'rolebindings.rbac.authorization.k8s.io "b" is forbidden: '
        'clusterroles.rbac.authorization.k8s.io "gone" not found'
    )


def test_binding_escalation_message_names_the_missing_rules() -> None:
    error = binding_error(
        _binding_write(BOB, "dev"), binding("dev", "b", "ClusterRole", "pod-reader"), policy=ESCALATION_POLICY
    )
    assert error is not None
    assert error.message == (
        'rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "bob" '
        '(groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions '
        "not currently held:\n"
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "watch"]}'
    )


BOOTSTRAP = Policy(bootstrap_policy())
ANONYMOUS = UserInfo("system:anonymous", (UNAUTHENTICATED_GROUP,))


def test_bootstrap_objects_carry_the_rbac_defaults_markers() -> None:
    objects = bootstrap_policy()
    kinds = [o["kind"] for o in objects]
    # roles come before the bindings that name them, as the bootstrap hook creates them
    assert kinds == sorted(kinds, key=["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].index)
    for obj in objects:
        assert obj["apiVersion"] == "rbac.authorization.k8s.io/v1"
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert obj["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    for role in (
        "cluster-admin",
        "system:node",
        "system:node-proxier",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:kube-dns",
        "system:public-info-viewer",
        "system:controller:deployment-controller",
        "system:controller:endpointslice-controller",
    ):
        assert ("ClusterRole", role) in names
    for binding in (o for o in objects if o["kind"].endswith("Binding")):
        ref = binding["roleRef"]
        assert (ref["kind"], ref["name"]) in names, binding["metadata"]["name"]
    assert ("Role", "extension-apiserver-authentication-reader") in names
    assert BOOTSTRAP.cluster_role("edit")["metadata"]["labels"][f"{RBAC_GROUP}/aggregate-to-admin"] == "true"  # type: ignore[index]


def test_the_node_rules_are_the_system_node_role() -> None:
    assert node_rules() == BOOTSTRAP.cluster_role("system:node")["rules"]  # type: ignore[index]


def test_bootstrap_binds_the_components_to_their_roles() -> None:
    scheduler = UserInfo("system:kube-scheduler", (AUTHENTICATED_GROUP,))
    proxy = UserInfo("system:kube-proxy", (AUTHENTICATED_GROUP,))
    assert authorize(
        req(scheduler, "create", "pods", namespace="a", name="p", subresource="binding"), BOOTSTRAP
    ).allowed
    assert not authorize(req(scheduler, "create", "pods", namespace="a"), BOOTSTRAP).allowed
    assert authorize(req(proxy, "list", "endpointslices", group="discovery.k8s.io"), BOOTSTRAP).allowed
    assert not authorize(
        req(proxy, "get", "endpointslices", group="discovery.k8s.io", name="e"), BOOTSTRAP
    ).allowed
    deployments = service_account_user("kube-system", "deployment-controller")
    assert authorize(
        req(deployments, "create", "replicasets", namespace="a", group="apps"), BOOTSTRAP
    ).allowed


def test_reconciling_a_default_adds_what_it_lacks_and_keeps_the_rest() -> None:
    default = BOOTSTRAP.cluster_role("system:node-proxier")
    assert default is not None
    stored = {
        **default,
        "rules": [*default["rules"][1:], {"apiGroups": ["x"], "resources": ["y"], "verbs": ["get"]}],
    }
    updated = reconciled(stored, default)
    assert updated is not None
    assert covers(updated["rules"], default["rules"])
    assert {"apiGroups": ["x"], "resources": ["y"], "verbs": ["get"]} in updated["rules"]
    assert reconciled(updated, default) is None
    pinned = {
        **stored,
        "metadata": {
            **stored["metadata"],
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"},
        },
    }
    assert reconciled(pinned, default) is None


def test_reconciling_a_default_binding_adds_its_subjects() -> None:
    default = next(
        o
        for o in bootstrap_policy()
        if o["kind"] == "ClusterRoleBinding" and o["metadata"]["name"] == "system:discovery"
    )
    stored = {**default, "subjects": [subject("User", "alice")]}
    updated = reconciled(stored, default)
    assert updated is not None
    assert updated["subjects"] == [subject("User", "alice"), *default["subjects"]]


def _bound(user: UserInfo, role_name: str) -> Policy:
    return Policy(
        [
            *bootstrap_policy(),
            rb("dev", f"{user.name}-{role_name}", "ClusterRole", role_name, subject("User", user.name)),
        ]
    )


@pytest.mark.parametrize(
    ("policy", "attrs", "allowed"),
    [
        (BOOTSTRAP, path_req(ANONYMOUS, "/version"), True),
        (BOOTSTRAP, path_req(ANONYMOUS, "/healthz"), True),
        (BOOTSTRAP, path_req(ANONYMOUS, "/api"), False),
        (BOOTSTRAP, path_req(ALICE, "/apis/apps/v1"), True),
        (BOOTSTRAP, path_req(ALICE, "/metrics"), False),
        (BOOTSTRAP, req(ALICE, "create", "selfsubjectaccessreviews", group="authorization.k8s.io"), True),
        (BOOTSTRAP, req(ALICE, "create", "selfsubjectrulesreviews", group="authorization.k8s.io"), True),
        (BOOTSTRAP, req(ALICE, "create", "selfsubjectreviews", group="authentication.k8s.io"), True),
        (
            BOOTSTRAP,
            req(ANONYMOUS, "create", "selfsubjectaccessreviews", group="authorization.k8s.io"),
            False,
        ),
        (BOOTSTRAP, req(ALICE, "list", "pods", namespace="dev"), False),
        (_bound(ALICE, "view"), req(ALICE, "list", "pods", namespace="dev"), True),
        (
            _bound(ALICE, "view"),
            req(ALICE, "get", "pods", namespace="dev", name="p", subresource="log"),
            True,
        ),
        (_bound(ALICE, "view"), req(ALICE, "get", "secrets", namespace="dev", name="s"), False),
        (_bound(ALICE, "view"), req(ALICE, "delete", "pods", namespace="dev", name="p"), False),
        (_bound(ALICE, "view"), req(ALICE, "list", "pods", namespace="prod"), False),
        (_bound(ALICE, "edit"), req(ALICE, "create", "deployments", namespace="dev", group="apps"), True),
        (_bound(ALICE, "edit"), req(ALICE, "get", "secrets", namespace="dev", name="s"), True),
        (_bound(ALICE, "edit"), req(ALICE, "create", "roles", namespace="dev", group=RBAC_GROUP), False),
        (_bound(ALICE, "admin"), req(ALICE, "create", "roles", namespace="dev", group=RBAC_GROUP), True),
        (_bound(ALICE, "admin"), req(ALICE, "list", "pods", namespace="dev"), True),
        (_bound(ALICE, "admin"), req(ALICE, "delete", "namespaces", name="dev"), False),
    ],
    ids=[
        "anonymous-version",
        "anonymous-healthz",
        "anonymous-no-discovery",
        "authenticated-discovery",
        "authenticated-no-metrics",
        "basic-user-ssar",
        "basic-user-ssrr",
        "basic-user-ssr",
        "anonymous-not-basic-user",
        "authenticated-no-pods",
        "view-list-pods",
        "view-pod-logs",
        "view-no-secrets",
        "view-no-delete",
        "view-only-bound-namespace",
        "edit-create-deployments",
        "edit-read-secrets",
        "edit-no-roles",
        "admin-roles",
        "admin-includes-view",
        "admin-no-namespaces",
    ],
)
def test_bootstrap_policy_grants(policy: Policy, attrs: RequestAttributes, allowed: bool) -> None:
    assert authorize(attrs, policy).allowed is allowed


def test_masters_hold_cluster_admin_rules() -> None:
    resource_rules, non_resource_rules = rules_for(ROOT, "dev", BOOTSTRAP)
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} in resource_rules
    assert {"verbs": ["*"], "nonResourceURLs": ["*"]} in non_resource_rules


def test_admin_may_create_roles_with_edit_permissions_in_its_namespace() -> None:
    policy = _bound(ALICE, "admin")
    edit_rules = BOOTSTRAP.cluster_role("edit")["rules"]  # type: ignore[index]
    assert (
        escalation_error(
            _role_write(ALICE, namespace="dev"), new_role("dev", "e", *edit_rules), policy=policy
        )
        is None
    )
    assert (
        binding_error(_binding_write(ALICE, "dev"), binding("dev", "b", "ClusterRole", "edit"), policy=policy)
        is None
    )
    assert (
        binding_error(
            _binding_write(ALICE, "dev"), binding("dev", "b", "ClusterRole", "cluster-admin"), policy=policy
        )
        is not None
    )


@pytest.mark.parametrize(
    ("kind", "obj", "allowed"),
    [
        ("Role", new_role("dev", "r", rule([""], ["pods"], ["get"])), True),
        ("Role", new_role("dev", "r", rule([""], ["pods"], ["delete"])), False),
        ("ClusterRole", cluster_role("c", rule([""], ["pods"], ["get"])), True),
        ("ClusterRole", cluster_role("c", rule(["*"], ["*"], ["*"])), False),
        ("RoleBinding", binding("dev", "b", "ClusterRole", "pod-reader"), True),
        ("RoleBinding", binding("team", "b", "ClusterRole", "node-admin"), True),
        ("ClusterRoleBinding", crb("b", "node-admin", subject("User", "eve")), False),
        ("ConfigMap", {"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "dev"}}, True),
    ],
    ids=[
        "role-held",
        "role-unheld",
        "clusterrole-held",
        "clusterrole-unheld",
        "binding-held",
        "binding-held-in-namespace",
        "clusterbinding-unheld",
        "other-kind",
    ],
)
def test_admission_escalation_error_dispatches_on_kind(kind: str, obj: Obj, allowed: bool) -> None:
    error = admission_escalation_error(ALICE, kind, obj, policy=ESCALATION_POLICY)
    assert (error is None) is allowed


def test_admission_escalation_error_names_the_kind_resource() -> None:
    error = admission_escalation_error(
        ALICE, "ClusterRoleBinding", crb("b", "node-admin", subject("User", "eve")), policy=ESCALATION_POLICY
    )
    assert error is not None
    assert error.message.startswith(
        'clusterrolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice"'
    )


def test_admission_escalation_error_lets_gc_only_updates_through() -> None:
    old = new_role("dev", "all", rule(["*"], ["*"], ["*"]))
    updated = {**old, "metadata": {**old["metadata"], "finalizers": ["x"]}}
    assert admission_escalation_error(ALICE, "Role", updated, policy=ESCALATION_POLICY, old=old) is None
    assert admission_escalation_error(ALICE, "Role", updated, policy=ESCALATION_POLICY) is not None
