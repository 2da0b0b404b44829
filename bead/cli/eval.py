"""bead eval."""

from __future__ import annotations

import click

from .common import echo, echo_json

# What a suite, --config or --grid file of another shape than its kind's raises in the run: a wrong type, text that
# is not UTF-8, nesting just short of the parser's limit, a grid constant that divides by zero or asks for terabytes.
_SHAPE_ERRORS = (
    TypeError,
    AttributeError,
    KeyError,
    ValueError,
    UnicodeDecodeError,
    RecursionError,
    ArithmeticError,
    MemoryError,
)


@click.command("eval")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per suite (and one for the pooled total).")
@click.option("--details", is_flag=True, help="With --json: include per-query details.")
@click.option("--split", type=click.Choice(["dev", "test"]), help="Injection and poisoning suites: run one split only.")
@click.option(
    "--wire",
    type=click.Choice(["anthropic", "chat", "responses"]),
    default="anthropic",
    show_default=True,
    help="Injection suites: parse each turn as this API's request (the OpenAI routes: chat, responses).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False),
    help="Injection suites: a config.yaml for the recall step (e.g. another gate), instead of the defaults. "
    "Poisoning suites: a config.yaml whose dream model gives the second opinion. It is a whole config: its "
    "dream model's api_key_command runs and the key goes to its base_url, as in `bead dream run`; use only one "
    "you would give bead itself.",
)
@click.option(
    "--path",
    "path",
    type=click.Choice(["proxy", "mcp"]),
    default="proxy",
    show_default=True,
    help="mcp: run raw-recall and injection suites through the recall tool as an agent calls it "
    "(the question, or the turn's newest user text, as the query), next to the proxy path's figures.",
)
@click.option(
    "--scale",
    "scales",
    type=click.IntRange(min=0, max=100_000),
    multiple=True,
    help="Injection suites: add this many distractor facts of the same project, interleaved in write order, "
    "and report what reaches the model (pinned block + cue block + pointers) and the pinned block's "
    "tokens. Repeat for several sizes (0: the suite's own facts through the same path).",
)
@click.option(
    "--distractors",
    type=click.Choice(["near-miss", "generated"]),
    default="near-miss",
    show_default=True,
    help="With --scale: near misses (the project's words, other subjects, as a person writes facts) or the "
    "older per-module generated facts, for comparison.",
)
@click.option(
    "--cv",
    "cv_folds",
    type=click.IntRange(min=2),
    help="Injection suites: choose among the settings of --grid by K-fold cross-validation over the turns "
    "(each a conversation), at each --scale; report fit and cross-validated figures.",
)
@click.option(
    "--by-suite",
    is_flag=True,
    help="With --cv and several injection suites of one project and the same facts: pool their turns and leave "
    "one suite out at a time (each suite a fold, K is their number): a setting chosen on some authors' turns, "
    "scored on another's.",
)
@click.option(
    "--grid",
    "grid_file",
    type=click.Path(exists=True, dir_okay=False),
    help="With --cv: the candidate settings (evals/grids/*.yaml), simplest first; a candidate sets recall.* and "
    "proxy.pinned_budget_tokens or pinned_select only. With raw-recall suites alone "
    "(each a conversation): choose the raw search's settings by leaving one conversation out at a time "
    "(evals/grids/raw.yaml).",
)
def eval_(files, as_json, details, split, wire, config_file, path, scales, distractors, cv_folds, by_suite, grid_file):
    """Run eval suites (kind: supersession, raw-recall, injection, poisoning) in temporary homes.

    The suite format is in docs/evals.md; the repository's evals/ holds examples.

    A suite never touches your store. With several raw-recall files, a pooled
    row follows the per-suite ones.
    """
    from ..errors import BeadError

    try:
        _eval(files, as_json, details, split, wire, config_file, path, scales, distractors, cv_folds, grid_file, by_suite)
    except _SHAPE_ERRORS as exc:
        # A suite, --config or --grid file of another shape than its kind's (a number where a list belongs, text
        # that is not UTF-8): said with the file's names, never a traceback.
        given = [*files, *(f for f in (config_file, grid_file) if f)]
        raise BeadError(
            f"bead could not run the suites ({type(exc).__name__}: {exc}): a file given ({', '.join(given)}) may not "
            "be of the shape its kind needs, or not UTF-8",
            "check each against the suite format (docs/results.md names it and its kinds); if they match it, this is "
            "bead's bug: please report it with the files",
        ) from None


def _eval(files, as_json, details, split, wire, config_file, path, scales, distractors, cv_folds, grid_file, by_suite=False):
    from ..evals import injection, poisoning, rawrecall, suite, supersession

    if by_suite and not cv_folds:
        from ..errors import BeadError

        raise BeadError("--by-suite chooses the folds of --cv", "add --cv 2 (or more) and --grid")

    if grid_file and not cv_folds:
        loaded = [suite.load(f) for f in files]
        if loaded and all(s["kind"] == "raw-recall" for s in loaded):
            return _raw_cv(loaded, grid_file, as_json)
    if cv_folds or grid_file:
        from ..errors import BeadError

        if not (cv_folds and grid_file):
            raise BeadError("--cv and --grid go together", "give both: e.g. --cv 5 --grid evals/grids/pointers.yaml")
        if not scales:
            raise BeadError(
                "--cv needs --scale: the figures it chooses by are the scaled run's",
                "add the store sizes to measure at, e.g. --scale 300 --scale 2000 (0: the suite's facts)",
            )
        if by_suite:
            return _cv_by_suite(files, as_json, details, grid_file, list(scales), distractors)
        return _cv(files, as_json, details, cv_folds, grid_file, list(scales), distractors)
    if path == "mcp":
        return _mcp_path(files, as_json, details, split, config_file)
    if scales:
        return _scaled(files, as_json, details, split, config_file, scales, distractors)
    results = []
    for f in files:
        s = suite.load(f)
        runner = {"supersession": supersession, "raw-recall": rawrecall, "injection": injection, "poisoning": poisoning}[
            s["kind"]
        ]
        if runner is injection or runner is poisoning:
            from pathlib import Path

            text = Path(config_file).read_text(encoding="utf-8") if config_file else ""
            extra = {"wire": wire} if runner is injection else {}
            results.append((runner, runner.run(s, split=split, config_text=text, **extra)))
        else:
            results.append((runner, runner.run(s)))
    raw = [r for m, r in results if m is rawrecall]
    if len(raw) > 1:
        results.append((rawrecall, rawrecall.combine(raw, "pooled: " + ", ".join(r["name"] for r in raw))))
    for runner, r in results:
        if as_json:
            out = r if details else {k: v for k, v in r.items() if k != "details"}
            echo_json(out, indent=None)
        else:
            echo(runner.table(r), multiline=True)
    _record([r for _, r in results], files)


def _raw_cv(suites, grid_file, as_json) -> None:
    from ..evals import cv, rawcv

    result = rawcv.run(suites, cv.load_grid(grid_file))
    if as_json:
        echo_json(result, indent=None)
    else:
        echo(rawcv.table(result), multiline=True)


def _mcp_path(files, as_json, details, split, config_file) -> None:
    from pathlib import Path

    from ..config import parse
    from ..evals import mcppath, suite

    text = Path(config_file).read_text(encoding="utf-8") if config_file else ""
    results, raw = [], []
    for f in files:
        s = suite.load(f)
        if s["kind"] == "raw-recall":
            raw.append(mcppath.run_raw(s, parse(text)))
            results.append(raw[-1])
        elif s["kind"] == "injection":
            results.append(mcppath.run_injection(s, split=split, config_text=text))
        else:
            echo(f"{s['name']}: skipped (--path mcp measures raw-recall and injection suites)", err=True)
    if len(raw) > 1:
        results.append(mcppath.combine_raw(raw, "pooled: " + ", ".join(r["name"] for r in raw)))
    for r in results:
        if as_json:
            echo_json(r if details else _without_details(r), indent=None)
        else:
            echo(mcppath.table(r), multiline=True)
    _record(results, files)


def _cv(files, as_json, details, k, grid_file, scales, distractors) -> None:
    from ..evals import cv, suite

    settings = cv.load_grid(grid_file)
    for f in files:
        s = suite.load(f)
        if s["kind"] != "injection":
            echo(f"{s['name']}: skipped (--cv applies to injection suites)", err=True)
            continue
        _emit_cv(cv.run(s, settings, scales, k, distractors), as_json, details)


def _cv_by_suite(files, as_json, details, grid_file, scales, distractors) -> None:
    from ..evals import cv, suite

    pooled, parts = cv.pool([suite.load(f) for f in files])
    _emit_cv(cv.run(pooled, cv.load_grid(grid_file), scales, len(parts), distractors, parts=parts), as_json, details)


def _emit_cv(r: dict, as_json: bool, details: bool) -> None:
    from ..evals import cv

    if as_json:
        echo_json(r if details else {k: v for k, v in r.items() if k != "folds"}, indent=None)
    else:
        echo(cv.table(r), multiline=True)


def _scaled(files, as_json, details, split, config_file, scales, distractors="near-miss") -> None:
    from pathlib import Path

    from ..evals import scaled, suite

    text = Path(config_file).read_text(encoding="utf-8") if config_file else ""
    for f in files:
        s = suite.load(f)
        if s["kind"] != "injection":
            echo(f"{s['name']}: skipped (--scale applies to injection suites)", err=True)
            continue
        for n in scales:
            r = scaled.run(s, n, split=split, config_text=text, kind=distractors)
            if as_json:
                echo_json(r if details else _without_details(r), indent=None)
            else:
                echo(scaled.table(r), multiline=True)


def _record(results: list[dict], files) -> None:
    """Keep the run's figures in the home (eval-results.json) for `bead dashboard`; the last run wins. After they
    are printed, and a home that cannot take the file (a folder of that name, a home under a regular file) costs a
    warning: it lost a whole run's figures to one error."""
    from ..core.overview import record_eval
    from ..errors import BeadError
    from ..paths import resolve_home

    try:
        record_eval(resolve_home().ensure(), results, [str(f) for f in files])
    except (OSError, BeadError) as exc:
        echo(f"warning: the figures were not kept for `bead dashboard` ({exc}); they are printed above", err=True)


def _without_details(r: dict) -> dict:
    return {k: (_without_details(v) if isinstance(v, dict) else v) for k, v in r.items() if k != "details"}


COMMANDS = [eval_]
