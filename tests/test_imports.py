"""What loads when: ``import llmcore`` and the command line load only what they use (issue 12).

``import llmcore`` loads none of the command line, the emulator, the chart or the SDKs; the
public names load their module on first access. ``llmcore --help`` loads no typer, click or rich
(its page is drawn without them), and when typer draws it (a console the fast path leaves to
typer) no web server, no chart and no command module; neither the root help nor ``llmcore body
--help`` loads typer's help renderer (markdown, pygments); a usage error loads no rich at all;
``llmcore body`` no emulator, no HTTP client. A missing extra is one line naming it.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import llmcore
from llmcore.cli import _extras

# Each step runs in the same fresh interpreter, so each snapshot includes the previous ones.
_CHILD = """
import io, json, sys
def loaded():
    return sorted({name.split(".")[0] for name in sys.modules} | {
        name for name in sys.modules if name.startswith(("llmcore.", "rich.", "typer."))})
def run(*args, encoding="utf-8"):
    sys.argv = ["llmcore", *args]
    from llmcore.cli import main
    real = sys.stdout, sys.stderr
    sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
    sys.stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.stdout, sys.stderr = real
    return {"exit": code, "modules": loaded()}
request = sys.argv[1]
import llmcore
steps = {"import": {"exit": 0, "modules": loaded()}}
steps["version"] = run("--version")
steps["help"] = run("--help")
steps["bare"] = run()
steps["typo"] = run("bodyy")
steps["typer help"] = run("--help", encoding="latin-1")  # not UTF-8: typer draws the page
steps["body"] = run("body", "-p", "anthropic", request)
steps["body help"] = run("body", "--help")
print(json.dumps(steps))
"""

_BODY_ALONE = (
    _CHILD.split("request = sys.argv[1]")[0]
    + """
request, extra = sys.argv[1:3]
steps = {"body alone": run("body", request, "--provider", "anthropic")}
steps["body with extra"] = run("body", "-p", "anthropic", extra)
print(json.dumps(steps))
"""
)
"""``llmcore body`` as its own process, as a shell runs it: the plain form, then one whose
``params.extra`` could change the body's shape."""

NOT_ON_IMPORT = (
    "llmcore.emulator",
    "llmcore.cli",
    "uvicorn",
    "starlette",
    "matplotlib",
    "numpy",
    "rich",
    "typer",
    "click",
    "prompt_toolkit",
    "anthropic",
    "openai",
    "pydantic_ai",
    "pydantic",
    "httpx",
    "yaml",
    "botocore",
    "boto3",
    "google",
)
NOT_ON_VERSION = ("typer", "click", "rich", "pydantic", "llmcore.cli._app")
"""``--version`` alone is answered before the application is built."""
NOT_ON_USAGE_ERROR = ("rich", "typer.rich_utils", "pydantic", "llmcore.cli._help")
"""A usage error is one plain line on stderr: no rich box."""
TYPER_HELP = ("typer.rich_utils", "rich.markdown", "markdown_it", "pygments")
"""typer's own help renderer and the markdown and syntax highlighting it loads (~120 ms)."""
COMMAND_MODULES = tuple(
    f"llmcore.cli.{name}"
    for name in ("audit", "bench", "bodies", "chat", "compact", "emulate", "proxy")
) + ("llmcore.cli.verify",)
NOT_ON_HELP = (
    "llmcore.emulator",
    "uvicorn",
    "starlette",
    "matplotlib",
    "numpy",
    "httpx",
    "pydantic",
    "llmcore.audit._shape",
    "llmcore.audit._auditor",
    *COMMAND_MODULES,
    *TYPER_HELP,
)
"""The root help is written from the commands' names and summaries: no command module loads."""
NOT_ON_FAST_HELP = ("typer", "click", "rich", "pydantic", "llmcore.cli._app", "llmcore.cli._help")
"""``llmcore --help`` and bare ``llmcore`` draw the page without the application."""
NOT_ON_BODY = (
    *(
        m
        for m in NOT_ON_HELP
        if m not in ("llmcore.cli.bodies", "llmcore.audit._shape", *TYPER_HELP)
    ),
    "llmcore.transport",
    "llmcore.archive",
    "llmcore.audit.inputs",
)
"""``body`` sends nothing and saves nothing, builds no pydantic adapter (its values are plain
text and paths) and of the auditor loads only the shape check."""
NOT_ON_PLAIN_BODY = (
    *NOT_ON_BODY,
    "typer",
    "click",
    "rich",
    "llmcore.cli._app",
    "llmcore.cli.bodies",
    "llmcore.audit",
)
"""The plain ``llmcore body FILE -p P`` runs without the typer application (its fast path),
and a request without ``params.extra`` needs no shape check (only ``extra`` can change it)."""


@pytest.fixture(scope="module")
def steps(tmp_path_factory) -> dict[str, list[str]]:
    """The modules loaded after each step, each step's exit code checked."""
    request = tmp_path_factory.mktemp("imports") / "request.json"
    request.write_text(
        '{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}'
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(request)], capture_output=True, text=True, check=True
    )
    result = json.loads(done.stdout)
    assert {step: value["exit"] for step, value in result.items()} == {
        "import": 0,
        "version": 0,
        "help": 0,
        "bare": 2,
        "typo": 2,
        "typer help": 0,
        "body": 0,
        "body help": 0,
    }, done.stderr
    return {step: value["modules"] for step, value in result.items()}


def test_import_llmcore_loads_nothing_heavy(steps) -> None:
    assert "llmcore" in steps["import"]
    assert [m for m in NOT_ON_IMPORT if m in steps["import"]] == []


def test_version_builds_no_application(steps) -> None:
    assert "llmcore.cli" in steps["version"]
    assert [m for m in NOT_ON_VERSION if m in steps["version"]] == []


def test_a_usage_error_loads_no_rich(steps) -> None:
    assert "llmcore.cli._app" in steps["typo"]  # the application was built
    assert [m for m in NOT_ON_USAGE_ERROR if m in steps["typo"]] == []


def test_the_root_help_loads_no_typer_no_click_and_no_rich(steps) -> None:
    for step in ("help", "bare"):
        assert "llmcore.cli._root_help" in steps[step]  # the page was drawn here
        assert [m for m in (*NOT_ON_FAST_HELP, *NOT_ON_HELP) if m in steps[step]] == [], step


def test_help_loads_no_command_module_no_server_and_no_chart(steps) -> None:
    assert {"llmcore.cli._help", "rich.panel"} <= set(steps["typer help"])  # panels were drawn
    assert [m for m in NOT_ON_HELP if m in steps["typer help"]] == []


def test_a_commands_help_loads_its_module_but_not_typers_help_renderer(steps) -> None:
    assert "llmcore.cli.bodies" in steps["body help"]
    assert [m for m in TYPER_HELP if m in steps["body help"]] == []


def test_body_loads_the_provider_and_nothing_it_does_not_use(steps) -> None:
    assert "llmcore.providers.anthropic" in steps["body"]  # it built the body
    assert "llmcore.cli._body_run" in steps["body"]
    assert [m for m in NOT_ON_BODY if m in steps["body"]] == []


@pytest.fixture(scope="module")
def body_alone(tmp_path_factory) -> dict[str, list[str]]:
    folder = tmp_path_factory.mktemp("body-alone")
    plain, extra = folder / "plain.json", folder / "extra.json"
    message = '"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]'
    plain.write_text('{"model": "m", ' + message + "}")
    extra.write_text('{"model": "m", "params": {"extra": {"input": []}}, ' + message + "}")
    done = subprocess.run(
        [sys.executable, "-c", _BODY_ALONE, str(plain), str(extra)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    assert {step: value["exit"] for step, value in result.items()} == {
        "body alone": 0,
        "body with extra": 0,
    }, done.stderr
    return {step: value["modules"] for step, value in result.items()}


def test_a_plain_body_loads_no_typer_no_rich_and_no_auditor(body_alone) -> None:
    loaded = body_alone["body alone"]
    assert {"llmcore.cli._body_run", "llmcore.providers.anthropic"} <= set(loaded)
    assert [m for m in NOT_ON_PLAIN_BODY if m in loaded] == []


def test_a_body_whose_extra_may_change_its_shape_loads_the_shape_check(body_alone) -> None:
    loaded = body_alone["body with extra"]
    assert "llmcore.audit._shape" in loaded
    assert [m for m in ("typer", "rich", "llmcore.cli._app") if m in loaded] == []


def test_every_public_name_resolves_to_its_home_module_object() -> None:
    assert set(llmcore._HOMES) == set(llmcore.__all__)
    for name in llmcore.__all__:
        home = importlib.import_module(llmcore._HOMES[name])
        assert getattr(llmcore, name) is getattr(home, name), name
    assert set(llmcore.__all__) <= set(dir(llmcore))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'llmcore' has no attribute 'Nope'"):
        llmcore.Nope  # noqa: B018
    with pytest.raises(ImportError):
        exec("from llmcore import Nope", {})


def test_every_audit_verdict_has_a_style() -> None:
    from llmcore.audit import Verdict
    from llmcore.cli._audit_report import STYLE as _STYLE

    assert set(_STYLE) == {verdict.value for verdict in Verdict}


# ------------------------------------------------ missing extras: one line naming the extra


def _without(monkeypatch, *modules: str) -> None:
    """Make ``modules`` look uninstalled (``find_spec`` returns ``None`` for a ``None`` entry)."""
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def test_the_command_line_without_the_cli_extra_is_one_line(monkeypatch, capsys) -> None:
    from llmcore.cli import main

    _without(monkeypatch, "typer")
    monkeypatch.setattr(sys, "argv", ["llmcore", "--help"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "llmcore: the command line needs the 'cli' extra (typer is not installed):"
        " pip install 'llmcore[cli]'\n"
    )


def test_version_answers_without_the_cli_extra(monkeypatch, capsys) -> None:
    import llmcore
    from llmcore.cli import main

    _without(monkeypatch, "typer", "rich")
    monkeypatch.setattr(sys, "argv", ["llmcore", "--version"])
    main()
    assert capsys.readouterr() == (f"llmcore {llmcore.__version__}\n", "")


@pytest.mark.parametrize(
    ("args", "missing", "line"),
    [
        (
            ["emulate"],
            "starlette",
            "emulate needs the 'emulator' extra (starlette is not installed):"
            " pip install 'llmcore[emulator]'",
        ),
        (
            ["bench", "--out", "OUT"],
            "matplotlib",
            "bench needs the 'bench' extra (matplotlib is not installed):"
            " pip install 'llmcore[bench]'",
        ),
        (
            ["bench", "--out", "OUT"],
            "uvicorn",
            "bench needs the 'bench' extra (uvicorn is not installed):"
            " pip install 'llmcore[bench]'",
        ),
        (
            ["chat", "--workspace", "WS", "--config-dir", "CFG"],
            "uvicorn",
            "chat needs the 'emulator' extra (uvicorn is not installed):"
            " pip install 'llmcore[emulator]'",
        ),
    ],
)
def test_a_command_without_its_extra_names_it(monkeypatch, tmp_path, args, missing, line) -> None:
    from llmcore.cli import app

    (tmp_path / "WS").mkdir()
    monkeypatch.chdir(tmp_path)
    _without(monkeypatch, missing)
    result = CliRunner().invoke(app, args, input="")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"llmcore: {line}\n"
    assert not (tmp_path / "OUT").exists()  # refused before anything ran


def test_every_extra_module_is_installed_here() -> None:
    assert {extra: _extras.missing_extra(extra) for extra in _extras.EXTRAS} == dict.fromkeys(
        _extras.EXTRAS
    )


# ------------------------------------------ the root help's summaries are the commands' own


def test_each_summary_is_the_first_paragraph_of_its_commands_help() -> None:
    from llmcore.cli._app import COMMANDS, load_commands

    loaded = {}
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        loaded.update(load_commands(module))
    assert set(loaded) == set(COMMANDS)  # every registered command is listed, and only those
    assert {name: loaded[name].help.split("\n\n")[0] for name in COMMANDS} == {
        name: summary for name, (_, summary) in COMMANDS.items()
    }


def test_the_root_help_lists_the_summaries_and_a_command_runs_from_its_module() -> None:
    from llmcore.cli import app
    from llmcore.cli._app import COMMANDS

    plain = {"COLUMNS": "200", **dict.fromkeys(("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS"))}
    help_ = CliRunner().invoke(app, ["--help"], env=plain)  # no colour codes, even under CI
    assert help_.exit_code == 0
    panel = [row for row in help_.output.split("─ Commands ─")[1].splitlines() if "│" in row]
    assert [tuple(line.strip("│ ").split(None, 1)) for line in panel] == [
        (name, summary) for name, (_, summary) in COMMANDS.items()
    ]
    version = CliRunner().invoke(app, ["--version"])
    assert (version.exit_code, version.output) == (0, f"llmcore {llmcore.__version__}\n")
    typo = CliRunner().invoke(app, ["bodyy"])
    assert typo.exit_code == 2
    assert "Did you mean 'body'?" in typo.stderr
