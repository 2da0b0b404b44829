"""An age file with one scrypt (passphrase) stanza at a work factor of the test's choosing, in pure Python.

pyrage calibrates scrypt to about a second on the machine (and half a
gigabyte of memory), as a real vault's identity should be. The tests read a
vault's identity dozens of times, so their shared vault is made here at a
work factor of 10, in the format of the age specification (C2SP age:
scrypt stanza, header MAC, STREAM payload with ChaCha20-Poly1305). pyrage and
the age command line tool decrypt it like any other age file; the fixture
checks that with pyrage before a test uses it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct

_M = 0xFFFFFFFF


def _rotl(v: int, c: int) -> int:
    return ((v << c) & _M) | (v >> (32 - c))


def _quarter(s: list[int], a: int, b: int, c: int, d: int) -> None:
    s[a] = (s[a] + s[b]) & _M
    s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & _M
    s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & _M
    s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & _M
    s[b] = _rotl(s[b] ^ s[c], 7)


def _block(key: bytes, counter: int, nonce: bytes) -> bytes:
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *struct.unpack("<8L", key), counter, *struct.unpack("<3L", nonce)]
    w = state[:]
    for _ in range(10):
        _quarter(w, 0, 4, 8, 12)
        _quarter(w, 1, 5, 9, 13)
        _quarter(w, 2, 6, 10, 14)
        _quarter(w, 3, 7, 11, 15)
        _quarter(w, 0, 5, 10, 15)
        _quarter(w, 1, 6, 11, 12)
        _quarter(w, 2, 7, 8, 13)
        _quarter(w, 3, 4, 9, 14)
    return struct.pack("<16L", *((x + y) & _M for x, y in zip(w, state, strict=True)))


def _chacha20(key: bytes, counter: int, nonce: bytes, data: bytes) -> bytes:
    out = bytearray()
    for i in range(0, len(data), 64):
        stream = _block(key, counter + i // 64, nonce)
        out += bytes(a ^ b for a, b in zip(data[i : i + 64], stream, strict=False))
    return bytes(out)


def _poly1305(key: bytes, msg: bytes) -> bytes:
    r = int.from_bytes(key[:16], "little") & 0x0FFFFFFC0FFFFFFC0FFFFFFC0FFFFFFF
    s = int.from_bytes(key[16:], "little")
    p = (1 << 130) - 5
    acc = 0
    for i in range(0, len(msg), 16):
        acc = (acc + int.from_bytes(msg[i : i + 16] + b"\x01", "little")) * r % p
    return ((acc + s) & ((1 << 128) - 1)).to_bytes(16, "little")


def chacha20_poly1305(key: bytes, nonce: bytes, plaintext: bytes) -> bytes:
    """RFC 8439 AEAD without associated data: ciphertext and tag."""
    otk = _block(key, 0, nonce)[:32]
    ct = _chacha20(key, 1, nonce, plaintext)
    mac_data = ct + b"\x00" * (-len(ct) % 16) + struct.pack("<QQ", 0, len(ct))
    return ct + _poly1305(otk, mac_data)


def _hkdf(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    prk = hmac.new(salt or b"\x00" * 32, ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def encrypt(data: bytes, passphrase: str, work_factor: int = 10) -> bytes:
    """``data`` as an age file that only ``passphrase`` opens (scrypt, N = 2**work_factor)."""
    assert len(data) < 64 * 1024, "one STREAM chunk is all a test needs"
    file_key, salt = os.urandom(16), os.urandom(16)
    wrap_key = hashlib.scrypt(
        passphrase.encode(), salt=b"age-encryption.org/v1/scrypt" + salt, n=2**work_factor, r=8, p=1, dklen=32
    )
    body = _b64(chacha20_poly1305(wrap_key, b"\x00" * 12, file_key))
    header = f"age-encryption.org/v1\n-> scrypt {_b64(salt)} {work_factor}\n{body}\n---"
    mac = hmac.new(_hkdf(file_key, b"", b"header"), header.encode(), hashlib.sha256).digest()
    nonce = os.urandom(16)
    payload = chacha20_poly1305(_hkdf(file_key, nonce, b"payload"), b"\x00" * 11 + b"\x01", data)
    return f"{header} {_b64(mac)}\n".encode() + nonce + payload
