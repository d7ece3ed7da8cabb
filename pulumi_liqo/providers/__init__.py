"""The components' dynamic providers: what Pulumi's Kubernetes provider cannot express (discovery, token
issue, the bounded waits, unpeer), as `pulumi.dynamic` resources whose create/read/diff/update/delete call
`runtime.operations`.

Each resource carries its cluster's kubeconfig (secret) and its operations' bounds
(`timeouts`, from the component's customTimeouts: the dynamic provider server passes
no timeout of its own), so its provider, which runs in another process, has all it needs.
"""
