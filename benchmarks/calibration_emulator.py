"""Calibrate the emulator's cache accounting against usage the real providers recorded (SPEC V5).

Every vendored real cassette whose responses record the provider's usage (``tests/real_traffic``,
``tests/audit/data``, and the corpus cases of ``tests/corpus`` grouped back into the cassette
they came from) is replayed, request by request and in order, against a fresh in-process
emulator (its ASGI app, the recorded path and ``anthropic-beta`` header, the recorded clock).
For each request the emulator's cache read and write are set beside the recorded ones.

Only traffic to the APIs the emulator speaks is replayed: Anthropic Messages on
``api.anthropic.com``, Chat Completions and Responses on ``api.openai.com``. A Responses
``previous_response_id`` is rewritten to the id the emulator gave the recorded response it names.

Per provider it prints: requests compared; hit/miss agreement (a *hit* is a read > 0; the
first request of a cassette, or the first after interactions the corpus left out, whose
recorded read is > 0 was warmed outside the recording and is counted apart); the emulated ÷
recorded read tokens where both hit (median, p10, p90); writes likewise (Anthropic). Results go
to ``results/calibration_emulator.json``.

Run: ``python benchmarks/calibration_emulator.py [PATH ...]`` (default: the three folders).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from llmcore.audit.inputs import read_path
from llmcore.audit.report import AuditInput
from llmcore.audit.usage import read_response

ROOT: Final = Path(__file__).resolve().parent.parent
DEFAULT_PATHS: Final = (
    ROOT / "tests" / "real_traffic",
    ROOT / "tests" / "audit" / "data",
    ROOT / "tests" / "corpus",
)
PROVIDERS: Final = ("anthropic", "chat", "responses")
_ROUTES: Final = (
    ("api.anthropic.com", "/messages", "anthropic", "/v1/messages"),
    ("api.openai.com", "/chat/completions", "chat", "/v1/chat/completions"),
    ("api.openai.com", "/responses", "responses", "/v1/responses"),
)
_START: Final = 1_700_000_000.0

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


@dataclass(slots=True)
class Request:
    """One recorded request to replay."""

    provider: str
    path: str
    body: bytes
    headers: dict[str, str]
    read: int
    write: int
    total: int
    status: int
    timestamp: float | None
    response_id: str | None
    position: int
    gap_before: bool = False
    """The interactions just before it were not vendored (corpus cases): a recorded read > 0
    may come from them, so it counts as warmed outside the recording."""


@dataclass(slots=True)
class Cassette:
    """The replayable requests of one recorded test."""

    name: str
    requests: list[Request] = field(default_factory=list)


def route(uri: str | None) -> tuple[str, str] | None:
    """Return ``(provider, emulator path)`` for a recorded URI the emulator speaks, else None."""
    if not uri:
        return None
    parts = urlsplit(uri)
    for host, suffix, provider, path in _ROUTES:
        if parts.hostname == host and parts.path.rstrip("/").endswith(suffix):
            return provider, path
    return None


def _yaml_headers(path: Path) -> dict[int, dict[str, str]]:
    """Return the recorded ``anthropic-beta`` / ``anthropic-version`` headers per interaction."""
    try:
        doc = yaml.load(path.read_bytes(), Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return {}
    out: dict[int, dict[str, str]] = {}
    interactions = doc.get("interactions") if isinstance(doc, dict) else None
    for index, interaction in enumerate(interactions or []):
        request = interaction.get("request") if isinstance(interaction, dict) else None
        headers = request.get("headers") if isinstance(request, dict) else None
        if not isinstance(headers, dict):
            continue
        kept: dict[str, str] = {}
        for key, value in headers.items():
            name = str(key).lower()
            if name in ("anthropic-beta", "anthropic-version"):
                kept[name] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        out[index] = kept
    return out


def _request(inp: AuditInput, headers: dict[str, str], status: int) -> Request | None:
    routed = route(inp.uri)
    if routed is None or inp.usage is None:
        return None
    provider, path = routed
    return Request(
        provider=provider,
        path=path,
        body=inp.body,
        headers=headers,
        read=inp.usage.cache_read_tokens,
        write=inp.usage.cache_write_tokens,
        total=inp.usage.input_tokens,
        status=status,
        timestamp=inp.timestamp,
        response_id=inp.response_id,
        position=inp.position or 0,
    )


def _yaml_statuses(path: Path) -> dict[int, int]:
    try:
        doc = yaml.load(path.read_bytes(), Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return {}
    out: dict[int, int] = {}
    for index, interaction in enumerate((doc or {}).get("interactions") or []):
        response = interaction.get("response") if isinstance(interaction, dict) else None
        status = response.get("status") if isinstance(response, dict) else None
        code = status.get("code") if isinstance(status, dict) else status
        out[index] = int(code) if isinstance(code, int) else 200
    return out


def _cassette_file(path: Path, name: str) -> Cassette | None:
    skipped: list[str] = []
    try:
        inputs = read_path(path, skipped, strict=False)
    except Exception:  # noqa: BLE001 - a file the reader refuses has nothing to replay
        return None
    headers = _yaml_headers(path)
    statuses = _yaml_statuses(path)
    cassette = Cassette(name)
    for inp in inputs:
        position = inp.position or 0
        req = _request(inp, headers.get(position, {}), statuses.get(position, 200))
        if req is not None:
            cassette.requests.append(req)
    return cassette if cassette.requests else None


def _corpus_cases(folder: Path) -> dict[str, list[tuple[int, Path, dict[str, Any]]]]:
    groups: dict[str, list[tuple[int, Path, dict[str, Any]]]] = {}
    for case_path in sorted(folder.rglob("*.json")):
        try:
            case = json.loads(case_path.read_bytes())
        except ValueError:
            continue
        if not isinstance(case, dict) or "request" not in case or "source" not in case:
            continue
        meta = case.get("meta") or {}
        index = meta.get("interaction")
        if not isinstance(index, int):
            continue
        groups.setdefault(str(case["source"]), []).append((index, case_path, case))
    return groups


def _corpus(folder: Path, vendored: set[str]) -> list[Cassette]:
    """Group corpus cases back into their source cassettes (sources vendored whole skipped)."""
    out: list[Cassette] = []
    for source, cases in sorted(_corpus_cases(folder).items()):
        if source.split(":", 1)[-1] in vendored:
            continue
        cassette = Cassette(f"corpus {source}")
        previous: int | None = None
        for index, case_path, case in sorted(cases, key=lambda c: c[0]):
            skipped: list[str] = []
            inputs = read_path(case_path, skipped, strict=False)
            usage = read_response(case.get("response")).usage
            uri = (case.get("meta") or {}).get("uri")
            status = case.get("status")
            for inp in inputs:
                routed = route(uri)
                if routed is None or usage is None or not isinstance(status, int) or not status:
                    continue
                req = Request(
                    provider=routed[0],
                    path=routed[1],
                    body=inp.body,
                    headers={},
                    read=usage.cache_read_tokens,
                    write=usage.cache_write_tokens,
                    total=usage.input_tokens,
                    status=status,
                    timestamp=None,
                    response_id=read_response(case.get("response")).id,
                    position=index,
                    gap_before=previous is not None and index != previous + 1,
                )
                cassette.requests.append(req)
            previous = index
        if cassette.requests:
            out.append(cassette)
    return out


def _vendored_paths(folder: Path) -> set[str]:
    """Source-repository paths of the whole cassettes under ``folder`` (``<source>/<path>``)."""
    out: set[str] = set()
    for file in folder.rglob("*.yaml"):
        parts = file.relative_to(folder).parts
        if len(parts) > 1:
            out.add("/".join(parts[1:]))
    return out


def discover(paths: Iterable[Path]) -> list[Cassette]:
    """Return every replayable cassette under ``paths`` (folders or files), in name order."""
    folders = [Path(p) for p in paths]
    vendored: set[str] = set()
    for folder in folders:
        if folder.is_dir() and folder.name != "corpus":
            vendored |= _vendored_paths(folder)
    out: list[Cassette] = []
    for folder in folders:
        if folder.is_dir() and (folder / "manifest.json").exists():
            out.extend(_corpus(folder, vendored))
            continue
        files = sorted(folder.rglob("*.y*ml")) if folder.is_dir() else [folder]
        for file in files:
            name = str(file.relative_to(ROOT)) if file.is_relative_to(ROOT) else str(file)
            found = _cassette_file(file, name)
            if found is not None:
                out.append(found)
    return out


def _emulated_usage(data: bytes) -> tuple[str | None, int, int, int]:
    got = read_response(data)
    if got.usage is None:
        return got.id, 0, 0, 0
    usage = got.usage
    return got.id, usage.cache_read_tokens, usage.cache_write_tokens, usage.input_tokens


def _implied_headers(req: Request) -> dict[str, str]:
    """Return headers the recorder dropped that the accepted body shows were sent.

    A message with the role ``system`` is accepted only under the mid-conversation system beta;
    pydantic-ai's recorder keeps no ``anthropic-beta`` header, so a recorded 200 with such a
    message implies it.
    """
    if req.provider != "anthropic" or req.status >= 400 or b'"system"' not in req.body:
        return {}
    from llmcore.emulator.anthropic_validate import BETA_SYSTEM_MESSAGES

    body = json.loads(req.body)
    roles = [m.get("role") for m in body.get("messages") or [] if isinstance(m, dict)]
    return {"anthropic-beta": BETA_SYSTEM_MESSAGES} if "system" in roles else {}


def _rewrite_previous(body: bytes, ids: dict[str, str]) -> bytes:
    for recorded, emulated in ids.items():
        needle = json.dumps(recorded).encode()
        if needle in body:
            body = body.replace(needle, json.dumps(emulated).encode())
    return body


def _create_conversation(
    client: Any, body: bytes, ids: dict[str, str], headers: dict[str, str]
) -> None:
    """Create the conversation a recorded Responses request names, as the recording did.

    The recorded ``POST /v1/conversations`` is not a model request, so it is not replayed; the
    emulator's conversation takes its place and its id is rewritten like a response id.
    """
    try:
        named = json.loads(body).get("conversation")
    except (ValueError, AttributeError):
        return
    if isinstance(named, dict):
        named = named.get("id")
    if isinstance(named, str) and named not in ids:
        made = client.post("/v1/conversations", content=b"{}", headers=headers)
        if made.status_code == 200:
            ids[named] = made.json()["id"]


def replay(cassette: Cassette) -> list[dict[str, Any]]:
    """Replay ``cassette`` against a fresh emulator; return one row per request."""
    from starlette.testclient import TestClient

    from llmcore.emulator import Engine, ManualClock, build_app

    clock = ManualClock(_START)
    engine = Engine(clock=clock)
    rows: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    first_time = next((r.timestamp for r in cassette.requests if r.timestamp), None)
    earlier = 0
    with TestClient(build_app(engine)) as client:
        for number, req in enumerate(cassette.requests):
            if req.timestamp is not None and first_time is not None:
                clock.set(max(clock.now(), _START + req.timestamp - first_time))
            headers = {
                "content-type": "application/json",
                "x-api-key": "calibration",
                "authorization": "Bearer calibration",
                "anthropic-version": "2023-06-01",
                **_implied_headers(req),
                **req.headers,
            }
            if req.provider == "responses":
                _create_conversation(client, req.body, ids, headers)
            body = _rewrite_previous(req.body, ids) if req.provider == "responses" else req.body
            answer = client.post(req.path, content=body, headers=headers)
            ident, read, write, total = _emulated_usage(answer.content)
            if ident and req.response_id:
                ids[req.response_id] = ident
            rows.append(
                {
                    "cassette": cassette.name,
                    "index": req.position,
                    "provider": req.provider,
                    "recorded_status": req.status,
                    "status": answer.status_code,
                    "error": answer.text[:300] if answer.status_code >= 400 else None,
                    "recorded_read": req.read,
                    "recorded_write": req.write,
                    "read": read,
                    "write": write,
                    "recorded_total": req.total,
                    "total": total,
                    "warmed": (number == 0 or req.gap_before) and req.read > 0,
                    "output_read": number > 0 and not req.gap_before and req.read > earlier,
                }
            )
            earlier = max(earlier, req.total)
    return rows


def emulator_rows(cassette_paths: Sequence[Path] | None = None) -> list[dict[str, Any]]:
    """Replay every cassette under ``cassette_paths`` (default :data:`DEFAULT_PATHS`).

    Returns:
        One row per replayed request: ``cassette``, ``index`` (interaction), ``provider``,
        recorded and emulated ``status``, ``recorded_read``/``recorded_write``,
        ``read``/``write`` (the emulator's), ``warmed`` (excluded from agreement).
    """
    rows: list[dict[str, Any]] = []
    for cassette in discover(cassette_paths or DEFAULT_PATHS):
        rows.extend(replay(cassette))
    return rows


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p10": None, "p90": None}
    ordered = sorted(values)
    if len(ordered) == 1:
        return {"median": ordered[0], "p10": ordered[0], "p90": ordered[0]}
    cuts = statistics.quantiles(ordered, n=10, method="inclusive")
    return {"median": statistics.median(ordered), "p10": cuts[0], "p90": cuts[-1]}


def _ratio(rows: Sequence[dict[str, Any]], got: str, want: str) -> list[float]:
    return [r[got] / r[want] for r in rows if r[got] and r[want]]


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Return the per-provider figures of :func:`emulator_rows`'s rows.

    Requests the recorded server refused are left out. Counted apart, not compared: requests
    the emulator refused (its validator, not its accounting: listed), requests warmed outside
    the recording, and requests whose recorded read exceeds every earlier prompt of the
    cassette (the provider cached an earlier response's generated output, which a replay of
    recorded bodies cannot reproduce: the emulator never generated it).
    """
    out: dict[str, dict[str, Any]] = {}
    for provider in PROVIDERS:
        mine = [r for r in rows if r["provider"] == provider and r["recorded_status"] < 400]
        refused = [r for r in mine if r["status"] >= 400]
        accepted = [r for r in mine if r["status"] < 400]
        warmed = [r for r in accepted if r["warmed"]]
        output = [r for r in accepted if r["output_read"] and not r["warmed"]]
        compared = [r for r in accepted if not r["warmed"] and not r["output_read"]]
        agree = [r for r in compared if (r["read"] > 0) == (r["recorded_read"] > 0)]
        reads = _ratio(compared, "read", "recorded_read")
        writes = _ratio(compared, "write", "recorded_write")
        totals = _ratio(compared, "total", "recorded_total")
        out[provider] = {
            "requests": len(compared),
            "agree": len(agree),
            "agreement": len(agree) / len(compared) if compared else None,
            "hits_both": len(reads),
            "warmed_outside": len(warmed),
            "output_read": len(output),
            "refused_by_emulator": len(refused),
            "read_ratio": _quantiles(reads),
            "write_ratio": _quantiles(writes),
            "writes_compared": len(writes),
            "prompt_ratio": _quantiles(totals),
            "disagree": [
                f"{r['cassette']}[{r['index']}] read {r['read']} vs {r['recorded_read']}"
                for r in compared
                if (r["read"] > 0) != (r["recorded_read"] > 0)
            ],
            "refused": [
                f"{r['cassette']}[{r['index']}] {r['status']}: {r['error']}" for r in refused
            ],
        }
    return out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _span(q: dict[str, float | None]) -> str:
    return f"{_fmt(q['median'])} ({_fmt(q['p10'])}–{_fmt(q['p90'])})"


def render(summary: dict[str, dict[str, Any]]) -> str:
    """Return the summary as a Markdown table (the README's)."""
    lines = [
        "| API | requests compared | hit/miss agree | both hit | read ratio median (p10–p90) "
        "| write ratio (n) | prompt tokens ratio | warmed outside | output read | "
        "refused by emulator |",
        "|---|---:|---:|---:|---|---|---|---:|---:|---:|",
    ]
    for provider, s in summary.items():
        agreement = "-" if s["agreement"] is None else f"{s['agree']}/{s['requests']}"
        lines.append(
            f"| {provider} | {s['requests']} | {agreement} | {s['hits_both']} | "
            f"{_span(s['read_ratio'])} | {_span(s['write_ratio'])} (n={s['writes_compared']}) | "
            f"{_span(s['prompt_ratio'])} | {s['warmed_outside']} | {s['output_read']} | "
            f"{s['refused_by_emulator']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Replay, print the table and the disagreements, write the JSON results."""
    args = list(sys.argv[1:] if argv is None else argv)
    rows = emulator_rows([Path(a) for a in args] or None)
    summary = summarize(rows)
    print(render(summary))
    for provider, s in summary.items():
        for line in s["disagree"]:
            print(f"{provider} disagree: {line}")
        for line in s["refused"]:
            print(f"{provider} refused: {line}")
    out = ROOT / "results" / "calibration_emulator.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
