"""Authorization as kube-apiserver runs it with `--authorization-mode=Node,RBAC` (kubeadm's and kind's).

The authorizers are asked in order and the first that allows decides; a request none
allows is refused with every reason given, one per line (the union authorizer's
wording). `system:masters` is allowed everything before either is asked. The Node
authorizer has an opinion only on nodes' requests (`node_authorizer.py`); RBAC on
everyone's (`rbac.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import rbac
from .identity import RequestAttributes, UserInfo
from .node_authorizer import NodeAuthorizer, node_name
from .rbac import Decision, PolicySource
from .resources.base import Obj

#: the Node authorizer's answer to a rules review of a node (its rules depend on the node's pods)
NODE_RULES_UNSUPPORTED = "node authorizer does not support user rule resolution"


@dataclass(frozen=True)
class Rules:
    """What a SelfSubjectRulesReview reports: the rules found, and whether they are the whole story."""

    resource_rules: list[Obj]
    non_resource_rules: list[Obj]
    incomplete: bool = False
    evaluation_error: str = ""


class Authorizer:
    def __init__(self, *, node: NodeAuthorizer, policy: PolicySource) -> None:
        self._node = node
        self._policy = policy

    def authorize(self, attrs: RequestAttributes) -> Decision:
        reasons: list[str] = []
        node = self._node.authorize(attrs)
        if node is not None:
            if node.allowed:
                return node
            if node.reason:
                reasons.append(node.reason)
        decision = rbac.authorize(attrs, self._policy)
        if decision.allowed:
            return decision
        if decision.reason:
            reasons.append(decision.reason)
        return Decision(False, "\n".join(reasons))

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        resource_rules, non_resource_rules = rbac.rules_for(user, namespace, self._policy)
        if node_name(user.name, user.groups) is not None:
            return Rules(
                resource_rules, non_resource_rules, incomplete=True, evaluation_error=NODE_RULES_UNSUPPORTED
            )
        return Rules(resource_rules, non_resource_rules)
