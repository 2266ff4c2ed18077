"""The processes Weaver runs as: daemon, serve, HTTP readers, the job worker."""
