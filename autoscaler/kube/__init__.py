"""The Kubernetes side of the service: clients, watch caches, records, scale access, Events."""
