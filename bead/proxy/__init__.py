"""The Anthropic Messages proxy: capture every turn, inject memory, keep the cache."""
