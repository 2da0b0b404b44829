"""The indexer service: keeps index.db in step with the store's files."""
