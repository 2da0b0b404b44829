"""Features for evals/learned_gate.py (an exploration; the proxy does not import this)."""

import math
import re
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
from bead.evals import suite as S
from bead.evals.suite import temp_memory
from bead.index.query import terms
from bead.recall import gate
from bead.recall.cues import extract
from bead.wire.formats import by_name

ERR = re.compile(r"(?i)\b(error|traceback|exception|failed|fail|denied|refused|cannot|can't|not found|warning)\b")
ACK = re.compile(r"(?i)^\s*(thanks?|thank you|ok(ay)?|great|nice|lgtm|cool|perfect|looks good|good)[\s!.,]*\w{0,12}[\s!.]*$")


def turn_features(msgs, rows, stats, project="invoicing"):
    cues = extract(by_name("anthropic").read({"messages": msgs})[0])
    by_src = {}
    for c in cues:
        for t in terms(c.text):
            by_src.setdefault(t, set()).add(c.source)
    w = gate.cue_weights(cues, project)
    user_text = " ".join(c.text for c in cues if c.source == "user")
    tool_out = " ".join(c.text for c in cues if c.source == "tool_output")
    has_err = 1.0 if ERR.search(tool_out) else 0.0
    is_ack = 1.0 if user_text and ACK.match(user_text) else 0.0
    has_user = 1.0 if user_text else 0.0
    cands = []
    for key, body, ftype in rows:
        ev, shared = gate.evidence(w, stats, key, body)
        fterms = set(gate.fact_terms(key, body))
        spec = [t for t in fterms if stats.weight(t) >= 0.6 and t not in gate.GENERIC]
        sh_spec = [t for t in shared if stats.weight(t) >= 0.6 and t not in gate.GENERIC]
        mx = {"user": 0.0, "assistant": 0.0, "tool_input": 0.0, "tool_output": 0.0}
        for t in shared:
            for src in by_src.get(t, ()):
                g = 0.2 if t in gate.GENERIC else 1.0
                mx[src] = max(mx[src], stats.weight(t) * g)
        cands.append(
            dict(
                key=key,
                ev=ev,
                n_spec=len(sh_spec),
                cov=len(sh_spec) / max(len(spec), 1),
                u=mx["user"],
                a=max(mx["assistant"], mx["tool_input"]),
                o=mx["tool_output"],
                sum_spec=sum(stats.weight(t) for t in sh_spec),
                fb=1.0 if ftype == "feedback" else 0.0,
                us=1.0 if ftype == "user" else 0.0,
                ref=1.0 if ftype == "reference" else 0.0,
            )
        )
    cands.sort(key=lambda c: -c["ev"])
    top = cands[0]["ev"] if cands else 0
    for i, c in enumerate(cands):
        c["rank1"] = 1.0 if i == 0 else 0.0
        c["rank"] = i
        c["margin"] = c["ev"] - (cands[1]["ev"] if i == 0 and len(cands) > 1 else top)
        c["rel"] = c["ev"] / top if top else 0
        c["err"] = has_err
        c["ack"] = is_ack
        c["has_user"] = has_user
    return cands


FEATS = ["ev", "n_spec", "cov", "u", "a", "o", "sum_spec", "fb", "us", "ref", "rank1", "margin", "rel", "err", "ack", "has_user"]


def load():
    s = S.load(str(__import__("pathlib").Path(__file__).resolve().parent / "injection.yaml"))
    data = []
    with temp_memory() as mem:
        for f in s["facts"]:
            mem.write(f["key"], f["body"], f["type"], trust=f.get("trust", "user_stated"))
        rows = [(k, b, t) for k, b, t in {f["key"]: (f["key"], f["body"], f["type"]) for f in s["facts"]}.values()]
        stats = gate.FactStats([(k, b) for k, b, _ in rows])
        for t in s["turns"]:
            cands = turn_features(t["messages"], rows, stats)
            data.append((t["id"], t.get("split", "dev"), set(t["needs"]), cands))
    return data


def vec(c):
    return [1.0] + [c[f] for f in FEATS]


def train(X, y, l2=0.1, epochs=400, lr=0.1, pos_w=1.0):
    w = [0.0] * len(X[0])
    # standardize
    n = len(X[0])
    mu = [sum(x[j] for x in X) / len(X) for j in range(n)]
    sd = [max((sum((x[j] - mu[j]) ** 2 for x in X) / len(X)) ** 0.5, 1e-6) for j in range(n)]
    mu[0], sd[0] = 0.0, 1.0
    Z = [[(x[j] - mu[j]) / sd[j] for j in range(n)] for x in X]
    for _ep in range(epochs):
        g = [0.0] * n
        for z, yy in zip(Z, y, strict=False):
            p = 1 / (1 + math.exp(-sum(a * b for a, b in zip(w, z, strict=False))))
            wt = pos_w if yy else 1.0
            for j in range(n):
                g[j] += wt * (p - yy) * z[j]
        for j in range(n):
            w[j] -= lr * (g[j] / len(Z) + (l2 * w[j] if j else 0))
    return w, mu, sd


def prob(model, x):
    w, mu, sd = model
    z = [(x[j] - mu[j]) / sd[j] for j in range(len(x))]
    return 1 / (1 + math.exp(-sum(a * b for a, b in zip(w, z, strict=False))))


def evaluate(turns, model, thr, maxk=2, only_top=None):
    needed = inj = hit = false = 0
    for _tid, _split, needs, cands in turns:
        scored = sorted(((prob(model, vec(c)), c["key"]) for c in cands), reverse=True)
        chosen = [k for p, k in scored[:maxk] if p >= thr]
        needed += len(needs)
        inj += len(chosen)
        hit += len(needs & set(chosen))
        false += bool(set(chosen) - needs)
    return (hit / needed if needed else 0, hit / inj if inj else 0, false / len(turns))
