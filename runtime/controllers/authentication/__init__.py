"""Controllers of the authentication module: on a provider, the Tenant of each consumer."""
