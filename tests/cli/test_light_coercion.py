"""The command line's own coercion of ``str``, ``Path`` and flag values equals typer's (issue 12).

:func:`llmcore.cli._app.light_coercion` skips typer's pydantic adapter for plain parameters;
whatever the value, it must give the value (or the error) typer's adapter gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from llmcore.cli._app import COMMANDS, light_coercion, load_commands


def _command(tmp: Path) -> Any:
    app = typer.Typer(add_completion=False)

    @app.command()
    def run(
        target: Annotated[Path, typer.Argument()],
        name: Annotated[str, typer.Option()] = "n",
        existing: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
        dash: Annotated[Path | None, typer.Option(allow_dash=True, exists=True)] = None,
        resolved: Annotated[Path | None, typer.Option(resolve_path=True)] = None,
        folder: Annotated[Path | None, typer.Option(file_okay=False, exists=True)] = None,
        flag: Annotated[bool, typer.Option()] = False,
        count: Annotated[int, typer.Option()] = 1,
        paths: Annotated[list[Path] | None, typer.Option()] = None,
    ) -> None:
        """Run."""

    return typer.main.get_command(app)


def _outcome(runtime: Any, param: Any, ctx: Any, value: Any) -> tuple[str, Any]:
    try:
        return ("value", runtime.coerce(value, param=param, ctx=ctx))
    except BadParameter as exc:
        return ("error", exc.format_message())


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Any, Any, Path]:
    tmp = tmp_path_factory.mktemp("coercion")
    (tmp / "file.txt").write_text("x")
    (tmp / "dir").mkdir()
    command = _command(tmp)
    return command, Context(command), tmp


def test_plain_parameters_are_coerced_lightly_and_the_others_by_typer(setup) -> None:
    command, _, _ = setup
    fresh = _command(Path())
    light = {param.name: light_coercion(param) for param in fresh.params}
    assert light == {
        "target": True,
        "name": True,
        "existing": True,
        "dash": True,
        "resolved": True,
        "folder": True,
        "flag": True,
        "count": False,
        "paths": False,
    }
    assert light_coercion(fresh.params[0]) is False  # already set: left as it is


_VALUES = st.one_of(
    st.sampled_from(["file.txt", "dir", "missing", "-", "", ".", "dir/../file.txt"]),
    st.text(alphabet=st.characters(blacklist_characters="\x00", codec="utf-8"), max_size=12),
    st.booleans(),
    st.none(),
    st.integers(),
)


@settings(max_examples=200)
@given(value=_VALUES, index=st.integers(min_value=0, max_value=6))
def test_the_light_coercion_gives_what_typer_gives(setup, monkeypatch_module, value, index) -> None:
    command, ctx, _ = setup
    param = _command(Path()).params[index]
    typer_own = build_runtime_param(param.type_descriptor)
    assert light_coercion(param)
    assert _outcome(param.get_runtime_param(), param, ctx, value) == _outcome(
        typer_own, param, ctx, value
    )


@pytest.fixture(scope="module")
def monkeypatch_module(setup):
    """Run in the folder holding ``file.txt`` and ``dir`` (relative values name them)."""
    mp = pytest.MonkeyPatch()
    mp.chdir(setup[2])
    yield mp
    mp.undo()


def test_every_loaded_commands_plain_parameters_are_light() -> None:
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        for command in load_commands(module).values():
            for param in command.params:
                plain = param.type_descriptor.annotation in (str, Path, bool)
                assert (param._runtime_param is not None) == plain, (command.name, param.name)
