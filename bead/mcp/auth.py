"""Signed-JWT checks for the team host: every request to /mcp carries a token the identity provider signed.

The signature is checked against the provider's key set (``mcp.jwks_url``,
fetched and cached by PyJWT's JWKS client), and so are the issuer, the
audience and the expiry, every time. Only asymmetric algorithms are accepted,
and only the one the matching key is for: ``alg: none``, an HMAC token made
with the public key as its secret, or a token whose key id the set does not
hold are all refused (401). A key set that cannot be fetched or read is the
provider's failure, not the token's: 503, so a client retries rather than
asking for a new token.

The member is the actor claim (``mcp.actor_claim``, default ``email``) only
when the token says the provider verified it (``mcp.verified_claim``,
default ``email_verified``, is true): anyone can put another member's
address in an account's email at many providers. Otherwise (not verified,
missing or empty) the member is the token's subject under its issuer,
``<sub>@<issuer>``: never a member's address (an issuer is a URL, which no
mailbox domain is), so it reaches no member's facts unless ``mcp.projects``
lists it. ``verified_claim: null`` trusts the actor claim as signed, for a
claim only the provider sets. Their writes carry the member as ``owner``.
"""

from __future__ import annotations

import json
import threading
import time
import unicodedata
from typing import Any

import jwt
from jwt import PyJWK, PyJWKClient
from jwt.exceptions import PyJWKClientError, PyJWKError, PyJWKSetError, PyJWTError

from ..config import McpSettings
from .listen import configured

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
LEEWAY_S = 30  # clock skew allowed on exp / nbf / iat
REFRESH_COOLDOWN_S = 30  # an unknown key id refetches the set at most this often
FAILED_WAIT_S = 5  # after a failed fetch, a request that would fetch again is refused (503) this long without one
MAX_ACTOR_CHARS = 256
MAX_TOKEN_CHARS = 16384


class AuthFailed(Exception):
    """The request is refused before any tool runs: 401 (the token) or 503 (the key set)."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason  # a kind, for the log: never the token or a claim


class JwtAuth:
    def __init__(self, settings: McpSettings):
        if not configured(settings):
            raise ValueError("JWT authentication needs mcp.jwks_url, mcp.issuer and mcp.audience")
        assert settings.jwks_url is not None
        self.settings = settings
        self.client = PyJWKClient(
            settings.jwks_url, cache_jwk_set=True, lifespan=300, timeout=settings.jwks_timeout_s, cooldown_duration=0
        )
        self._refreshed = 0.0
        self._failed: float = -float(FAILED_WAIT_S)  # when a fetch last failed (time.monotonic())
        self._lock = threading.Lock()
        self._fetching = threading.Lock()  # held by the one request that fetches the key set

    def _keys(self, refresh: bool = False) -> list[PyJWK]:
        """The key set's signing keys, cached; fetched when the cache is empty or old, or on ``refresh``. Right after a
        failed fetch no request fetches again for FAILED_WAIT_S: with the provider down, each anonymous request
        (a token of any key id) fetched once more, up to the timeout each, holding a thread (an adversarial pass)."""
        cache = self.client.jwk_set_cache
        if not (refresh or cache is None or cache.get() is None):
            return self._signing(refresh=False)
        # One fetch at a time: a burst of requests with the cache empty each fetched, each holding a thread for the
        # timeout (a review). The others wait for it, then use what it cached or its failure.
        with self._fetching:
            if not refresh and cache is not None and cache.get() is not None:
                return self._signing(refresh=False)
            if time.monotonic() - self._failed < FAILED_WAIT_S:
                raise AuthFailed(503, "jwks:recently_failed")
            try:
                return self._signing(refresh=refresh)
            except AuthFailed:
                self._failed = time.monotonic()
                raise

    def _signing(self, refresh: bool) -> list[PyJWK]:
        try:
            keys = self.client.get_signing_keys(refresh=refresh)
        except (PyJWKClientError, PyJWKSetError, PyJWKError, json.JSONDecodeError, OSError, ValueError) as exc:
            raise AuthFailed(503, f"jwks:{type(exc).__name__}") from None
        return [k for k in keys if k.algorithm_name in ALGORITHMS]

    def _key(self, kid: str) -> PyJWK:
        found = next((k for k in self._keys() if k.key_id == kid), None)
        if found is None:
            # A rotated key: fetch the set again, but not for every unknown id an attacker sends.
            with self._lock:
                due = time.monotonic() - self._refreshed >= REFRESH_COOLDOWN_S
                if due:
                    self._refreshed = time.monotonic()
            if due:
                found = next((k for k in self._keys(refresh=True) if k.key_id == kid), None)
        if found is None:
            raise AuthFailed(401, "unknown_key")
        return found

    def verify(self, token: str) -> str:
        """The actor the token names, or AuthFailed. Blocking (it may fetch the key set): run it off the loop."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise AuthFailed(401, "malformed")
        try:
            header = jwt.get_unverified_header(token)
        except PyJWTError:
            raise AuthFailed(401, "malformed") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            raise AuthFailed(401, "algorithm")
        if not isinstance(kid, str) or not kid:
            raise AuthFailed(401, "no_key_id")
        key = self._key(kid)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[key.algorithm_name],
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud"], "verify_signature": True},
            )
        except jwt.ExpiredSignatureError:
            raise AuthFailed(401, "expired") from None
        except jwt.InvalidAudienceError:
            raise AuthFailed(401, "audience") from None
        except jwt.InvalidIssuerError:
            raise AuthFailed(401, "issuer") from None
        except PyJWTError as exc:
            raise AuthFailed(401, f"invalid:{type(exc).__name__}") from None
        return actor_of(claims, self.settings)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _true(value: Any) -> bool:
    """A verification claim that says yes: JSON true (or the string "true", as some providers write it)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _checked(actor: Any) -> str:
    if (
        not isinstance(actor, str)
        or not actor.strip()
        or len(actor) > MAX_ACTOR_CHARS
        or any(unicodedata.category(c)[0] == "C" for c in actor)
    ):
        raise AuthFailed(401, "no_actor")
    return actor.strip()


def actor_of(claims: dict[str, Any], settings: McpSettings) -> str:
    """The member a verified token's claims name: the actor claim when the provider verified it, else
    ``<sub>@<issuer>`` (401 when neither is there, or the one chosen is not a plain line of text)."""
    named = claims.get(settings.actor_claim)
    verified = settings.verified_claim is None or _true(claims.get(settings.verified_claim))
    if verified and not _blank(named):
        return _checked(named)
    subject = _checked(claims.get("sub"))
    return f"{subject}@{settings.issuer}"
