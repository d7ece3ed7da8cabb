"""The core module's controller: ForeignCluster, the consumer's side of a peering.

| module | job |
| --- | --- |
| `foreigncluster.py` | the reconciler and `setup`: walks the peering's steps, writes the status |
| `peering.py` | the validated spec, this cluster's identity, the caches, `Blocked` |
| `authenticate.py` | tenant namespace, key pair, token -> credential and Identity |
| `authclient.py` | the HTTP calls to a provider's auth service, failures classified |
| `negotiate.py` | the ResourceSlice on the provider and its answer |
| `unpeer.py` | the finalizer: bounded teardown on both sides |
| `status.py` | the status (phases, conditions) as a pure function |
| `keys.py`, `objects.py`, `credentials.py` | key pair Secret; credential Secret and Identity; storing a credential |
"""
