"""Wire formats: how a model API's requests and responses look, read once and edited in place.

``anthropic`` is the Messages API. Each format parses a request body into
the typed ``bead.core.conversation.Conversation``, splices blocks into the
raw body without moving a byte, and rebuilds the assistant turn from the
response bytes.
"""
