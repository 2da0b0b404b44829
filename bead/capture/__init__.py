"""Capture: secret scan and redaction before any text reaches disk."""
