"""Language-server features, one module each, registered by `register(ls)` in build_server."""
