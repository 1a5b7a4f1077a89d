"""rich's layout of a help page, for the root ``llmcore --help`` drawn without rich (issue 24).

A help page of typer's panel layout (:mod:`llmcore.cli._help`) is drawn by rich: text wrapped
at word boundaries (a word wider than the line folds), tables whose column widths follow the
columns' contents and ratios, boxed panels with a title, padding. This module lays out the same
page, cell for cell and escape code for escape code, for the few renderables such a page is
made of: :class:`Text` (spans of styles), :class:`Padding`, :class:`Table` (no box, no header)
and :class:`Panel` (rounded box, a left-aligned title), printed by :func:`render`. Each follows
rich 15's algorithm (``rich.text``, ``rich._wrap``, ``rich.table``, ``rich._ratio``,
``rich.panel``, ``rich.padding``, ``rich.segment``), narrowed to what such a page uses: text
without line breaks, tabs or control codes, every character one cell wide, the styles ``bold``,
``dim`` and the standard colours typer's help uses. ``tests/cli/test_root_help.py`` compares
the pages byte for byte with rich's.

A style is a tuple ``(bold, dim, colour)``: ``None`` where the style says nothing, the colour as
its SGR code (``"36"`` for cyan).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from math import ceil
from operator import itemgetter
from typing import Final, NamedTuple, Protocol

__all__ = [
    "HELP_MIN_WIDTH",
    "NULL",
    "OPTION_HIGHLIGHTS",
    "Padding",
    "Panel",
    "Renderable",
    "Style",
    "Table",
    "Text",
    "combine",
    "parse_style",
    "render",
]

Style = tuple[bool | None, bool | None, str | None]
"""``(bold, dim, colour)``; ``None`` where the style sets nothing."""
NULL: Final[Style] = (None, None, None)
_COLOURS: Final = {"red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36"}
"""The colours of typer's help, by their SGR code."""
HELP_MIN_WIDTH: Final = 12
"""The narrowest an option's help column gets (unless the terminal is narrower than 36)."""
OPTION_HIGHLIGHTS: Final = (
    (re.compile(r"(?:^|\W)(-\w+)(?![a-zA-Z0-9])"), "bold green"),
    (re.compile(r"(?:^|\W)(--[\w\-]+)(?![a-zA-Z0-9])"), "bold cyan"),
    (re.compile(r"(<[^>]+>)"), "bold yellow"),
)
"""typer's option highlighter: ``-s`` switches, ``--long`` options and ``<type>`` placeholders
(their first group is styled)."""
Segment = tuple[str, Style]
Line = list[Segment]
_WORD: Final = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE: Final = re.compile(r"\s+$")


def parse_style(definition: str) -> Style:
    """``"bold cyan"`` as a style; raises ``KeyError`` for a word rich would read otherwise."""
    bold = dim = colour = None
    for word in definition.split():
        if word == "bold":
            bold = True
        elif word == "dim":
            dim = True
        else:
            colour = _COLOURS[word]
    return (bold, dim, colour)


def combine(*styles: Style) -> Style:
    """The styles one over the other, the last on top (rich's ``Style.__add__``)."""
    bold, dim, colour = NULL
    for b, d, c in styles:
        bold = bold if b is None else b
        dim = dim if d is None else d
        colour = colour if c is None else c
    return (bold, dim, colour)


class Options(NamedTuple):
    """What a renderable is drawn into: its width and the justify/overflow/no-wrap defaults."""

    width: int
    justify: str | None = None
    overflow: str | None = None
    no_wrap: bool = False


class Renderable(Protocol):
    """Something drawn as segments (a newline ends each line) and measured in cells."""

    def segments(self, options: Options) -> list[Segment]: ...  # pragma: no cover

    def measure(self, width: int) -> tuple[int, int]: ...  # pragma: no cover


class Text:
    """A line of text with spans of styles (rich's ``Text``, without line breaks)."""

    __slots__ = ("end", "no_wrap", "overflow", "plain", "spans", "style")

    def __init__(
        self,
        plain: str = "",
        style: Style = NULL,
        *,
        overflow: str | None = None,
        no_wrap: bool | None = None,
        end: str = "\n",
    ) -> None:
        self.plain = plain
        self.style = style
        self.overflow = overflow
        self.no_wrap = no_wrap
        self.end = end
        self.spans: list[tuple[int, int, Style]] = []

    def copy(self) -> Text:
        text = Text(
            self.plain, self.style, overflow=self.overflow, no_wrap=self.no_wrap, end=self.end
        )
        text.spans = self.spans[:]
        return text

    def stylize(self, style: Style, start: int, end: int) -> None:
        if style != NULL and start < len(self.plain) and end > start:
            self.spans.append((start, min(len(self.plain), end), style))

    def stylize_before(self, style: Style) -> None:
        if style != NULL and self.plain:
            self.spans.insert(0, (0, len(self.plain), style))

    def highlight(self, patterns: Iterable[tuple[re.Pattern[str], Style]]) -> Text:
        """Style each pattern's first group (``llmcore.cli._help._highlight``); return self."""
        for pattern, style in patterns:
            for match in pattern.finditer(self.plain):
                self.stylize(style, *match.span(1))
        return self

    def highlight_regex(self, pattern: str, style: Style) -> None:
        for match in re.finditer(pattern, self.plain):
            start, end = match.span()
            if end > start:
                self.spans.append((start, end, style))

    def append(self, plain: str, style: Style = NULL) -> Text:
        if plain:
            if style != NULL:
                self.spans.append((len(self.plain), len(self.plain) + len(plain), style))
            self.plain += plain
        return self

    def append_text(self, text: Text) -> Text:
        offset = len(self.plain)
        if text.style != NULL:
            self.spans.append((offset, offset + len(text.plain), text.style))
        self.plain += text.plain
        self.spans.extend((start + offset, end + offset, style) for start, end, style in text.spans)
        return self

    def set_plain(self, plain: str) -> None:
        """Replace the text; spans past its new end are cut."""
        if plain != self.plain:
            shorter = len(plain) < len(self.plain)
            self.plain = plain
            if shorter:
                size = len(plain)
                self.spans = [
                    (start, min(size, end), style)
                    for start, end, style in self.spans
                    if start < size
                ]

    def right_crop(self, amount: int) -> None:
        size = len(self.plain) - amount
        self.spans = [
            (start, min(size, end), style) for start, end, style in self.spans if start < size
        ]
        self.plain = self.plain[:-amount]

    def rstrip_end(self, size: int) -> None:
        if len(self.plain) > size:
            match = _TRAILING_SPACE.search(self.plain)
            if match is not None:
                self.right_crop(min(len(match.group(0)), len(self.plain) - size))

    def truncate(self, width: int, overflow: str | None = None, pad: bool = False) -> None:
        overflow = overflow or self.overflow or "fold"
        length = len(self.plain)
        if length > width:
            if overflow == "ellipsis":
                self.set_plain(_set_cells(self.plain, width - 1) + "…")
            else:
                self.set_plain(_set_cells(self.plain, width))
        if pad and length < width:
            self.plain += " " * (width - length)

    def divide(self, offsets: Sequence[int]) -> list[Text]:
        """The text cut at ``offsets``, each piece with its share of the spans."""
        if not offsets:
            return [self.copy()]
        bounds = [0, *offsets, len(self.plain)]
        ranges = list(zip(bounds, bounds[1:], strict=False))
        lines = [Text(self.plain[a:b], self.style, overflow=self.overflow) for a, b in ranges]
        for start, end, style in self.spans:
            for line, (line_start, line_end) in zip(lines, ranges, strict=True):
                new_start = max(0, start - line_start)
                new_end = min(end - line_start, line_end - line_start)
                if new_end > new_start:
                    line.spans.append((new_start, new_end, style))
        return lines

    def wrap(self, width: int, justify: str, overflow: str, no_wrap: bool) -> list[Text]:
        """The text as lines of at most ``width`` cells (rich's ``Text.wrap``)."""
        if no_wrap:
            lines = [self.copy()]
        else:
            lines = self.copy().divide(_divide_line(self.plain, width, fold=overflow == "fold"))
            for line in lines:
                line.rstrip_end(width)
        if justify == "left":
            for line in lines:
                line.truncate(width, overflow, pad=True)
        for line in lines:
            line.truncate(width, overflow)
        return lines

    def render(self) -> list[Segment]:
        """The text as segments, cut wherever a span starts or ends, then :attr:`end`."""
        text, segments = self.plain, []
        if not self.spans:
            segments.append((text, NULL))
        else:
            styles = {index: span[2] for index, span in enumerate(self.spans, 1)}
            styles[0] = self.style
            marks = [
                (0, False, 0),
                *((span[0], False, index) for index, span in enumerate(self.spans, 1)),
                *((span[1], True, index) for index, span in enumerate(self.spans, 1)),
                (len(text), True, 0),
            ]
            marks.sort(key=itemgetter(0, 1))
            stack: list[int] = []
            for (offset, leaving, index), (next_offset, _, _) in zip(
                marks, marks[1:], strict=False
            ):
                if leaving:
                    stack.remove(index)
                else:
                    stack.append(index)
                if next_offset > offset:
                    style = combine(*(styles[i] for i in sorted(stack)))
                    segments.append((text[offset:next_offset], style))
        if self.end:
            segments.append((self.end, NULL))
        return segments

    def segments(self, options: Options) -> list[Segment]:
        overflow = self.overflow or options.overflow or "fold"
        no_wrap = options.no_wrap if self.no_wrap is None else self.no_wrap
        lines = self.wrap(options.width, options.justify or "default", overflow, no_wrap)
        joined = Text(end=self.end)
        for number, line in enumerate(lines):
            if number:
                joined.plain += "\n"
            joined.append_text(line)
        return joined.render()

    def measure(self, width: int) -> tuple[int, int]:
        words = self.plain.split()
        longest = len(self.plain)
        return (max(map(len, words)) if words else longest, longest)


def _set_cells(text: str, total: int) -> str:
    """``text`` cut or padded with spaces to ``total`` cells (rich's ``set_cell_size``)."""
    if total <= 0 and not text.isascii():
        return ""
    return text + " " * (total - len(text)) if len(text) < total else text[:total]


def _divide_line(text: str, width: int, fold: bool) -> list[int]:
    """Where ``text`` breaks into lines of ``width`` cells (rich's ``_wrap.divide_line``)."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        size = len(word.rstrip())
        if width - offset >= size:
            offset += len(word)
        elif size > width:
            if fold:
                pieces = [word[i : i + width] for i in range(0, len(word), width)]
                for number, piece in enumerate(pieces, 1):
                    if start:
                        breaks.append(start)
                    if number == len(pieces):
                        offset = len(piece)
                    else:
                        start += len(piece)
            else:
                if start:
                    breaks.append(start)
                offset = len(word)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def _normalize(low: int, high: int) -> tuple[int, int]:
    low = min(max(0, low), high)
    return (max(0, low), max(0, max(low, high)))


def _measurement(renderable: Renderable, width: int) -> tuple[int, int]:
    """The renderable's (minimum, maximum) width within ``width`` (``Measurement.get``)."""
    if width < 1:
        return (0, 0)
    low, high = _normalize(*renderable.measure(width))
    low, high = min(low, width), min(high, width)
    return (0, 0) if high < 1 else _normalize(low, high)


def _render(renderable: Renderable, options: Options) -> list[Segment]:
    """``Console.render``: nothing at all into a width below one cell."""
    return [] if options.width < 1 else renderable.segments(options)


def _adjust(line: Line, length: int, style: Style = NULL, pad: bool = True) -> Line:
    """``line`` padded with spaces or cut to ``length`` cells (``Segment.adjust_line_length``)."""
    size = sum(len(text) for text, _ in line)
    if size < length:
        return [*line, (" " * (length - size), style)] if pad else line[:]
    if size == length:
        return line[:]
    cut: Line = []
    size = 0
    for text, segment_style in line:
        if size + len(text) < length:
            cut.append((text, segment_style))
            size += len(text)
        else:
            cut.append((_set_cells(text, length - size), segment_style))
            break
    return cut


def _lines(
    segments: Iterable[Segment], length: int, style: Style = NULL, pad: bool = True
) -> list[Line]:
    """Segments as lines of ``length`` cells (``Console.render_lines``), ``style`` beneath."""
    if style != NULL:
        segments = [(text, combine(style, own)) for text, own in segments]
    lines: list[Line] = []
    line: Line = []
    for text, segment_style in segments:
        if "\n" not in text:
            line.append((text, segment_style))
            continue
        while text:
            part, newline, text = text.partition("\n")
            if part:
                line.append((part, segment_style))
            if newline:
                lines.append(_adjust(line, length, style, pad))
                line = []
    if line:
        lines.append(_adjust(line, length, style, pad))
    return lines


class Padding:
    """Space around a renderable, as wide as the options (rich's ``Padding``, expanded)."""

    def __init__(
        self, renderable: Renderable, top: int, right: int, bottom: int, left: int
    ) -> None:
        self.renderable = renderable
        self.top, self.right, self.bottom, self.left = top, right, bottom, left

    def segments(self, options: Options) -> list[Segment]:
        width = options.width
        inner = options._replace(width=width - self.left - self.right)
        lines = _lines(_render(self.renderable, inner), inner.width)
        blank = [(" " * width + "\n", NULL)]
        right = [(" " * self.right, NULL), ("\n", NULL)] if self.right else [("\n", NULL)]
        left = [(" " * self.left, NULL)] if self.left else []
        out = blank * self.top
        for line in lines:
            out += [*left, *line, *right]
        return out + blank * self.bottom

    def measure(self, width: int) -> tuple[int, int]:
        extra = self.left + self.right
        if width - extra < 1:
            return (width, width)
        low, high = _measurement(self.renderable, width)
        return (min(low + extra, width), min(high + extra, width))


class Column(NamedTuple):
    """A table column: its style, fixed width, ratio, wrapping and overflow."""

    style: Style = NULL
    width: int | None = None
    ratio: int | None = None
    no_wrap: bool = False
    overflow: str = "ellipsis"


class Table:
    """Cells one space apart, as wide as the options, without a box or a header.

    rich's ``Table(show_header=False, expand=True, box=None, pad_edge=False, padding=(0, 1))``.
    """

    def __init__(self, columns: Sequence[Column], rows: Sequence[Sequence[Text]]) -> None:
        self.columns = list(columns)
        last = len(self.columns) - 1
        self.cells = [
            [Padding(text, 0, int(i != last), 0, int(i != 0)) for i, text in enumerate(row)]
            for row in rows
        ]

    def _padding(self, index: int) -> int:
        return int(index != 0) + int(index != len(self.columns) - 1)

    def _measure_column(self, index: int, width: int) -> tuple[int, int]:
        if width < 1:
            return (0, 0)
        column, padding = self.columns[index], self._padding(index)
        if column.width is not None:
            fixed = min(column.width + padding, width)
            return (fixed, fixed)
        sizes = [_measurement(row[index], width) for row in self.cells]
        low = max((size[0] for size in sizes), default=1)
        high = max((size[1] for size in sizes), default=width)
        return (min(low, width), min(high, width))

    def widths(self, width: int) -> list[int]:
        """Each column's width with its padding (``Table._calculate_column_widths``)."""
        columns = self.columns
        ranges = [self._measure_column(i, width) for i in range(len(columns))]
        widths = [high or 1 for _, high in ranges]
        ratios = [column.ratio or 0 for column in columns if column.ratio is not None]
        if any(ratios):
            fixed = [
                0 if column.ratio is not None else high
                for (_, high), column in zip(ranges, columns, strict=True)
            ]
            minimum = [
                (column.width or 1) + self._padding(i)
                for i, column in enumerate(columns)
                if column.ratio is not None
            ]
            flexible = iter(_distribute(width - sum(fixed), ratios, minimum))
            for i, column in enumerate(columns):
                if column.ratio is not None:
                    widths[i] = fixed[i] + next(flexible)
        total = sum(widths)
        if total > width:
            wrapable = [column.width is None and not column.no_wrap for column in columns]
            widths = _collapse(widths, wrapable, width)
            total = sum(widths)
            if total > width:
                widths = _reduce(total - width, [1] * len(widths), widths, widths)
                total = sum(widths)
            # rich measures the columns again, but keeps the total from before
            widths = [self._measure_column(i, w)[1] for i, w in enumerate(widths)]
        if total < width:
            extra = _distribute(width - total, widths)
            widths = [w + pad for w, pad in zip(widths, extra, strict=True)]
        return widths

    def segments(self, options: Options) -> list[Segment]:
        widths = self.widths(options.width)
        out: list[Segment] = []
        for row in self.cells:
            cells = []
            for width, cell, column in zip(widths, row, self.columns, strict=True):
                cell_options = Options(width, "left", column.overflow, column.no_wrap)
                cells.append(_lines(_render(cell, cell_options), width, column.style))
            # rich tops a cell up to the row's height in its style, then to at least one line
            height = max(len(lines) for lines in cells)
            shown = max(1, height)
            for lines, width, column in zip(cells, widths, self.columns, strict=True):
                lines += [[(" " * width, column.style)]] * (height - len(lines))
                lines[:] = [_adjust(line, width) for line in lines]
                lines += [[(" " * width, NULL)]] * (shown - len(lines))
            for number in range(shown):
                for lines in cells:
                    out += lines[number]
                out.append(("\n", NULL))
        return out

    def measure(self, width: int) -> tuple[int, int]:  # pragma: no cover - never measured
        raise NotImplementedError


class Panel:
    """A rounded box around a renderable, its title on the top left (rich's ``Panel``)."""

    def __init__(self, renderable: Renderable, title: str, border: Style) -> None:
        self.renderable = Padding(renderable, 0, 1, 0, 1)
        self.title, self.border = title, border

    def segments(self, options: Options) -> list[Segment]:
        width, border = options.width, self.border
        inner = options._replace(width=width - 2)
        lines = _lines(_render(self.renderable, inner), inner.width)
        if width <= 4:
            out: list[Segment] = [("╭" + "─" * (width - 2) + "╮", border)]
        else:
            title = Text(f" {self.title} ", no_wrap=True, end="")
            title.stylize_before(border)
            title.truncate(width - 4)
            excess = width - 4 - len(title.plain)
            if excess:
                title = Text(no_wrap=True, end="").append_text(title).append("─" * excess, border)
            top = _render(title, options._replace(width=width - 4))
            out = [("╭─", border), *top, ("─╮", border)]
        out.append(("\n", NULL))
        for line in lines:
            out += [("│", border), *line, ("│", border), ("\n", NULL)]
        return [*out, ("╰" + "─" * (width - 2) + "╯", border), ("\n", NULL)]

    def measure(self, width: int) -> tuple[int, int]:  # pragma: no cover - never measured
        raise NotImplementedError


def _collapse(widths: list[int], wrapable: list[bool], width: int) -> list[int]:
    """Narrow the widest wrapable columns first (``Table._collapse_widths``)."""
    total = sum(widths)
    excess = total - width
    if any(wrapable):
        while total and excess > 0:
            widest = max(w for w, wrap in zip(widths, wrapable, strict=True) if wrap)
            second = max(
                w if wrap and w != widest else 0 for w, wrap in zip(widths, wrapable, strict=True)
            )
            ratios = [int(w == widest and wrap) for w, wrap in zip(widths, wrapable, strict=True)]
            if not any(ratios) or not widest - second:
                break
            widths = _reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
            total = sum(widths)
            excess = total - width
    return widths


def _reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """Take ``total`` from ``values`` by ``ratios``, each at most its maximum (rich's)."""
    ratios = [ratio if maximum else 0 for ratio, maximum in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    result = []
    for ratio, maximum, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            given = min(maximum, round(ratio * total / total_ratio))
            result.append(value - given)
            total -= given
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _distribute(total: int, ratios: list[int], minimums: list[int] | None = None) -> list[int]:
    """Share ``total`` out by ``ratios``, each at least its minimum (rich's)."""
    if minimums:
        ratios = [ratio if low else 0 for ratio, low in zip(ratios, minimums, strict=True)]
    total_ratio = sum(ratios)
    result = []
    for ratio, low in zip(ratios, minimums or [0] * len(ratios), strict=True):
        given = max(low, ceil(ratio * total / total_ratio)) if total_ratio > 0 else total
        result.append(given)
        total_ratio -= ratio
        total -= given
    return result


def render(
    printed: Iterable[tuple[Renderable, Style]], width: int, sgr: Callable[[Style], str]
) -> str:
    """The output of ``console.print(renderable, style=style)`` for each, ``width`` cells wide.

    Args:
        printed: Each renderable and the style printed beneath it.
        width: The console's width in cells.
        sgr: A style's SGR parameters (``"1;36"``), ``""`` for none: what the console shows.
    """
    out: list[str] = []
    for renderable, style in printed:
        for line in _lines(_render(renderable, Options(width)), width, pad=False):
            for text, own in line:
                codes = sgr(combine(style, own)) if text else ""
                out.append(f"\x1b[{codes}m{text}\x1b[0m" if codes else text)
            out.append("\n")
    return "".join(out)
