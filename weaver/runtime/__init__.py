"""A running Weaver, below the edges that serve it: the App, its state and health, the lifespan
that keeps the cache fresh, and the serving of HTTP. docs/architecture.md lists the modules."""
