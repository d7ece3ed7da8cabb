"""The authentication service (provider side): peering tokens in, least-privilege credentials out.

A consumer presents a peering token and its identity (cluster id, name, Ed25519 public
key) over HTTPS; the service checks the token against the hashes kept in Secrets,
creates the consumer's tenant namespace, Tenant, ServiceAccount and RoleBinding, and
answers with a ServiceAccount token that can touch only that namespace. Renewal and
revocation are signed with the consumer's key instead of the token.

| module | job |
| --- | --- |
| `app.py` | routes, request parsing and validation, error rendering, failure rate limiting |
| `tokens.py` | peering token verification against the token Secrets (informer) |
| `identities.py` | the consumer's objects and its credential (TokenRequest); a key change needs the old key |
| `renewal.py` | signed renew/revoke requests: timestamp window and replay protection |
| `signatures.py` | Ed25519 public keys as the contract carries them, signature checks |
| `ratelimit.py` | failures per source address (token bucket) |
| `errors.py` | typed errors carrying their HTTP status and reason |
| `endpoint.py` | the published URL derived from the `liqo-auth` Service and the Nodes (Liqo's rules) |
| `publisher.py` | keeps the published `authURL` following that Service and the Nodes |
| `options.py`, `server.py`, `main.py` | options, TLS serving and composition, the command line |
"""
