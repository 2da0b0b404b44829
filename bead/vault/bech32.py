"""Bech32 (BIP 173) as age uses it: no length limit, one case per string.

The vault needs it for one thing: a hybrid post-quantum identity written by
``age-keygen -pq`` (``AGE-SECRET-KEY-PQ-1...``) carries the same bytes as the
plugin identity ``AGE-PLUGIN-PQ-1...`` that age's plugin protocol (and so
pyrage) takes; only the human-readable part and the checksum differ.
"""

from __future__ import annotations

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def _polymod(values: list[int]) -> int:
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            if (top >> i) & 1:
                chk ^= _GEN[i]
    return chk


def _hrp_expand(hrp: str) -> list[int]:
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def _convert(data: list[int] | bytes, from_bits: int, to_bits: int, pad: bool) -> list[int]:
    acc = bits = 0
    out: list[int] = []
    maxv = (1 << to_bits) - 1
    for value in data:
        acc = (acc << from_bits) | value
        bits += from_bits
        while bits >= to_bits:
            bits -= to_bits
            out.append((acc >> bits) & maxv)
    if pad:
        if bits:
            out.append((acc << (to_bits - bits)) & maxv)
    elif bits >= from_bits or (acc << (to_bits - bits)) & maxv:
        raise ValueError("bech32: bad padding")
    return out


def decode(text: str) -> tuple[str, bytes]:
    """(human-readable part in lower case, data bytes); ValueError when ``text`` is not bech32."""
    if text.lower() != text and text.upper() != text:
        raise ValueError("bech32: mixed case")
    s = text.lower()
    pos = s.rfind("1")
    if pos < 1 or pos + 7 > len(s):
        raise ValueError("bech32: no separator or too short")
    hrp, rest = s[:pos], s[pos + 1 :]
    if any(c not in CHARSET for c in rest):
        raise ValueError("bech32: a character outside the alphabet")
    values = [CHARSET.index(c) for c in rest]
    if _polymod(_hrp_expand(hrp) + values) != 1:
        raise ValueError("bech32: bad checksum")
    return hrp, bytes(_convert(values[:-6], 5, 8, pad=False))


def encode(hrp: str, data: bytes) -> str:
    """Lower-case bech32 of ``data`` under ``hrp`` (age writes identities in upper case)."""
    hrp = hrp.lower()
    values = _convert(data, 8, 5, pad=True)
    pm = _polymod(_hrp_expand(hrp) + values + [0] * 6) ^ 1
    return hrp + "1" + "".join(CHARSET[v] for v in values + [(pm >> 5 * (5 - i)) & 31 for i in range(6)])
