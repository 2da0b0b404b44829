"""The sealed vault: secrets kept only as age-encrypted files, never indexed, injected or sent to a model.

- ``keys``    the key pair (``bead vault init``), the passphrase, age through pyrage
- ``sealed``  the sealed versions, ``vault/sealed/<key>/v<N>.md.age``
- ``ops``     seal, unseal, a secret write, reading a sealed value: what the CLI calls
"""
