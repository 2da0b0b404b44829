"""What a proposed fact must pass before it is written.

The reference design's rules, in order: reject an invalid key or type, an
empty body, one over 600 characters or one the credential scan changes; skip
a tombstoned value; queue one that reads like an instruction to a model
(`suspicious`); queue one the model says replaces a fact under another key
(`key-conflict`); queue a change to a `user_stated` value
(`change-user-stated`); otherwise write it as `dream_inferred`.
"""

from __future__ import annotations

import re

MAX_CHARS = 600

# Prompt injection and exfiltration aimed at the model that will read the
# memory later. Ordinary imperative coding rules ("never push to main") are
# not instructions in this sense; tests/test_dream.py holds a corpus of both.
_INSTRUCTION = [re.compile(p, re.I | re.S) for p in (
    r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(previous|prior|above|earlier|all|any|your|the system|safety)\b.{0,25}\b(instructions?|prompts?|rules|guidelines|directions|guardrails)\b",
    r"\b(you are now|from now on,? (you|the assistant|claude)|act as an?|pretend (to be|you are)|new (system )?instructions?:)",
    r"\b(developer|jailbreak|god|dan) mode\b",
    r"\bsystem prompt\b.{0,40}\b(ignore|replace|reveal|print|leak|override)\b|\b(ignore|replace|reveal|print|leak|override)\b.{0,40}\bsystem prompt\b",
    r"\b(do not|don't|never) (tell|inform|mention|reveal|show)\b.{0,40}\b(user|human|anyone|them)\b",
    r"\bwithout (telling|asking|informing|notifying) (the )?(user|human|anyone)\b",
    r"\b(send|post|upload|forward|exfiltrate|leak|transmit|e-?mail|copy|paste|share)\b.{0,60}(\b(secrets?|credentials?|api[ _-]?keys?|tokens?|passwords?|ssh keys?|id_rsa|private keys?|cookies?|env(ironment)? var(iable)?s)\b|\.env\b).{0,80}\b(to|into|at|on)\b.{0,40}(https?://|\w+@\w+\.\w+|pastebin|webhook|gist|server|endpoint|discord|telegram)",
    r"(\b(secrets?|credentials?|api[ _-]?keys?|tokens?|passwords?|id_rsa)\b|\.env\b).{0,60}\b(to|into)\b.{0,20}(https?://|\w+@\w+\.\w+|pastebin|webhook|gist)",
    r"\b(curl|wget)\b[^|\n]{0,160}\|\s*(sudo\s+)?(ba|z|da)?sh\b",
    r"\b(include|embed|put|insert|append|add)\b.{0,40}\b(api[ _-]?keys?|tokens?|passwords?|secrets?|credentials?|id_rsa|ssh keys?)\b.{0,40}\b(in|into|to)\b.{0,30}\b(commit|messages?|urls?|requests?|logs?|comments?|output|responses?|issues?|pull requests?)\b",
    r"\brm\s+-rf\s+(~|/|\$HOME)(\s|$)",
)]


def instruction_like(text: str) -> bool:
    return any(p.search(text) for p in _INSTRUCTION)
