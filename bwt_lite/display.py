"""How the chapters show things: tables, the figure style, and static views of widgets.

- :func:`table` builds a :class:`Table`: an HTML table in a notebook and in the book (numbers
  right-aligned, the paper's column beside ours, a caption), aligned text in a terminal or in
  ``print``. Its text form is also what nbval compares in a checked cell.
- :func:`set_figure_style` is the one book-wide figure style (``setup_notebook`` calls it): figures
  as wide as the book's column, sharp on high-density screens (retina PNG), readable font sizes.
- :func:`enable_static_widgets` (also called by ``setup_notebook``) gives every
  ``ipywidgets.interactive`` an HTML view of its current state (what it prints and draws). Jupyter
  and Colab show the live widget; the book, which has no kernel to move a slider, shows that view.

Only the standard library, matplotlib and (when present) IPython and ipywidgets are used.
"""
from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

# ------------------------------------------------------------------------------------------------
# Tables

# A cell counts as a number (right-aligned) when it is a number or text that starts like one:
# "0.045", "-1.2e-3", "405,120", "+0.456 [+0.353,+0.529]", "16.3x", "~0.1", "< 0.05".
_NUMBER_TEXT = re.compile(r"^[-+\u2212\u00b1~\u2248<>\u2264\u2265]?\s*(\d|\.\d)")
# Cells that say "no value" and do not decide a column's alignment.
_BLANKS = {"", "n/a", "-", "\u2013", "\u2014", "None", "nan"}


def _scalar(value: Any) -> Any:
    """A 0-d tensor or numpy scalar as a Python number; anything else unchanged."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0 and not isinstance(value, (str, bytes)):
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _format_cell(value: Any, fmt: str | Callable[[Any], str] | None) -> str:
    value = _scalar(value)
    if value is None:
        return ""
    if fmt is not None and not isinstance(value, str):
        return fmt(value) if callable(fmt) else format(value, fmt)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


@dataclass(frozen=True)
class Table:
    """A formatted table: build it with :func:`table`.

    ``str(t)`` and ``repr(t)`` are the aligned text form; ``t._repr_html_()`` is the HTML form that
    Jupyter, Colab and the book render.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]  # every cell already formatted as text
    numeric: tuple[bool, ...]  # per column: every cell that is not blank is a number
    paper: tuple[bool, ...]  # per column: holds the paper's values
    caption: str | None = None
    notes: tuple[str, ...] = ()  # lines shown below the table
    right: tuple[tuple[bool, ...], ...] = ()  # per cell: right-aligned (numbers); default: by column

    def _right(self, i: int, j: int) -> bool:
        return self.right[i][j] if self.right else self.numeric[j]

    def to_text(self) -> str:
        """The table as aligned plain text: caption, header, a rule, the rows, then the note."""
        widths = [max([len(c)] + [len(r[j]) for r in self.rows]) for j, c in enumerate(self.columns)]

        def line(cells: Sequence[str], right: Sequence[bool]) -> str:
            parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
            return "  ".join(parts).rstrip()

        out = [self.caption] if self.caption else []
        out += [line(self.columns, self.numeric), "  ".join("-" * w for w in widths)]
        out += [line(r, [self._right(i, j) for j in range(len(r))]) for i, r in enumerate(self.rows)]
        out += list(self.notes)
        return "\n".join(out)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        # IPython shows repr() as the text/plain form: the same aligned text as print().
        return self.to_text()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.to_text())

    def _repr_html_(self) -> str:
        """The table as HTML. Inline styles keep it readable where the book's CSS is absent
        (Jupyter, Colab); the classes let the book's stylesheet refine it."""

        def cell(tag: str, text: str, j: int, right: bool) -> str:
            classes = ["bwt-num" if right else "bwt-text"] + (["bwt-paper"] if self.paper[j] else [])
            style = f"text-align: {'right' if right else 'left'}"
            if self.paper[j]:
                style += "; font-style: italic; background-color: rgba(127, 127, 127, 0.08)"
            return f'<{tag} class="{" ".join(classes)}" style="{style}">{html.escape(text)}</{tag}>'

        parts = ['<div class="bwt-table-wrap">',
                 '<table class="bwt-table" style="border-collapse: collapse; font-variant-numeric: tabular-nums">']
        if self.caption:
            parts.append(f'<caption style="caption-side: top; text-align: left">{html.escape(self.caption)}</caption>')
        parts.append("<thead><tr>" + "".join(cell("th", c, j, self.numeric[j]) for j, c in enumerate(self.columns))
                     + "</tr></thead>")
        parts.append("<tbody>")
        for i, r in enumerate(self.rows):
            parts.append("<tr>" + "".join(cell("td", c, j, self._right(i, j)) for j, c in enumerate(r)) + "</tr>")
        parts.append("</tbody></table>")
        if self.notes:
            parts.append('<p class="bwt-table-note">' + "<br>".join(html.escape(n) for n in self.notes) + "</p>")
        parts.append("</div>")
        return "\n".join(parts)


def _paper_columns(paper_column: str | Sequence[str] | Mapping[str, str] | None) -> list[str]:
    """The names of the paper's columns in :func:`table`'s ``paper_column`` argument."""
    if paper_column is None:
        return []
    if isinstance(paper_column, str):
        return [paper_column]
    return list(paper_column.values() if isinstance(paper_column, Mapping) else paper_column)


def table(
    rows: Iterable[Mapping[str, Any] | Sequence[Any]],
    columns: Sequence[str] | None = None,
    *,
    caption: str | None = None,
    paper_column: str | Sequence[str] | Mapping[str, str] | None = None,
    formats: Mapping[str, str | Callable[[Any], str]] | None = None,
    note: str | Sequence[str] | None = None,
    text: str | Sequence[str] | None = None,
) -> Table:
    """A table that renders as HTML in a notebook or the book and as aligned text when printed.

    ``rows``: dicts (column name -> value) or sequences (one value per column, in ``columns``
    order). ``columns``: the column names; for dict rows it picks and orders the keys (default:
    every key, in the order first seen). ``caption``: a line above the table. ``note``: a line
    (or lines) below it. ``formats``: a format spec (``".4f"``) or a function per column, applied to its
    non-text values; by default ints get thousands separators, floats 4 significant digits, bools
    yes/no and ``None`` an empty cell. ``paper_column``: the column (or columns) holding the
    paper's values, set apart in the HTML; a mapping ``{ours: paper}`` also moves each paper column
    next to ours. Numbers (and text that starts like one) are right-aligned, other text left-aligned;
    in a column of numbers the blank cells and the header are right-aligned too. ``text``: the column
    (or columns) of prose, left-aligned throughout even where a cell starts like a number ("2 wide
    blocks ...").
    """
    rows = list(rows)
    if columns is None:
        if rows and not all(isinstance(r, Mapping) for r in rows):
            raise ValueError("columns is required when rows are sequences")
        columns = list(dict.fromkeys(k for r in rows for k in r))
    columns = [str(c) for c in columns]
    if len(set(columns)) != len(columns):
        raise ValueError(f"column names must be distinct, got {columns}")
    table_rows: list[list[Any]] = []
    for i, r in enumerate(rows):
        if isinstance(r, Mapping):
            table_rows.append([r.get(c) for c in columns])
        else:
            r = list(r)
            if len(r) != len(columns):
                raise ValueError(f"row {i} has {len(r)} values for {len(columns)} columns")
            table_rows.append(r)

    paper_cols = _paper_columns(paper_column)
    formats = dict(formats or {})
    text_cols = [text] if isinstance(text, str) else list(text or ())
    for name in [*paper_cols, *formats, *text_cols, *(paper_column.keys() if isinstance(paper_column, Mapping) else [])]:
        if name not in columns:
            raise ValueError(f"unknown column {name!r}; columns are {columns}")

    order = list(range(len(columns)))
    if isinstance(paper_column, Mapping):  # move each paper column right after ours
        for ours, theirs in paper_column.items():
            order.remove(columns.index(theirs))
            order.insert(order.index(columns.index(ours)) + 1, columns.index(theirs))

    text_rows = [[_format_cell(r[j], formats.get(columns[j])) for j in order] for r in table_rows]
    def is_number(value: Any, text: str) -> bool:
        return text.strip() not in _BLANKS and (_is_number(_scalar(value)) or bool(_NUMBER_TEXT.match(text)))

    right = [[is_number(r[j], t[k]) for k, j in enumerate(order)] for r, t in zip(table_rows, text_rows)]
    numeric = []
    for k in range(len(order)):
        decided = [(i, t[k]) for i, t in enumerate(text_rows) if t[k].strip() not in _BLANKS]
        numeric.append(bool(decided) and all(right[i][k] for i, _ in decided))
    right = [[r[k] or numeric[k] for k in range(len(order))] for r in right]
    for k, j in enumerate(order):
        if columns[j] in text_cols:
            numeric[k] = False
            for r in right:
                r[k] = False
    return Table(columns=tuple(columns[j] for j in order), rows=tuple(tuple(r) for r in text_rows),
                 numeric=tuple(numeric), paper=tuple(columns[j] in paper_cols for j in order),
                 right=tuple(tuple(r) for r in right),
                 caption=caption, notes=(note,) if isinstance(note, str) else tuple(note or ()))


# ------------------------------------------------------------------------------------------------
# Figures

# The book's output column is 676 CSS px wide at a 1280 px wide window (sphinx-book-theme 1.3,
# measured in Chromium); figures are drawn at 100 dpi, so 6.6 inches fill it at 1:1 (660 px).
COLUMN_PX = 676
FIGURE_DPI = 100
FIGURE_WIDTH_IN = 6.6
# The widest a figure may be: the book shrinks it to the column, and at 7.4 inches (plus the 0.1 inch
# padding a tight bounding box adds each side, and a little room for tick labels that overhang the
# last panel) it keeps more than 0.86 of its size, so 10 pt text stays 12 px (tests/check_book.py,
# MIN_SCALE).
MAX_WIDTH_IN = 7.4
# Font sizes in points: at 100 dpi one point is 1.39 CSS px, so 10 pt tick labels are 14 px, about
# the size of the book's small text, when the figure is shown at its own width.
FIGURE_STYLE: dict[str, Any] = {
    "figure.figsize": (FIGURE_WIDTH_IN, 4.0),
    "figure.dpi": FIGURE_DPI,
    "savefig.dpi": "figure",
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.titlesize": 12,
}


def set_figure_style(formats: str = "retina") -> None:
    """Apply the book-wide figure style: :data:`FIGURE_STYLE` in matplotlib's rcParams and, in an
    IPython kernel, inline figures as ``formats`` (default ``"retina"``: PNGs at twice the pixel
    density, shown at their 100-dpi size, so they stay sharp on high-density screens and zoomed).
    """
    import matplotlib

    matplotlib.rcParams.update(FIGURE_STYLE)
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: rcParams are all there is
        return
    if get_ipython() is None:
        return
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        from matplotlib_inline.config import InlineBackend
    except ImportError:
        return
    # The inline backend re-applies InlineBackend.figure_formats when pyplot is first imported,
    # so set the configuration (for later) and the live formatters (for now).
    InlineBackend.instance().figure_formats = {formats}
    set_matplotlib_formats(formats)


# ------------------------------------------------------------------------------------------------
# Static views of widgets


def _settings(widget: Any) -> str:
    """The widget's current control values, e.g. ``step t = 5, episode seed = 2024``."""
    parts = []
    for control in getattr(widget, "kwargs_widgets", []):
        name = getattr(control, "description", "") or getattr(control, "_kwarg", "")
        value = getattr(control, "value", None)
        if isinstance(value, (tuple, list)):
            value = ", ".join(str(v) for v in value)
        parts.append(f"{name} = {value}")
    return ", ".join(parts)


def figure_alt(fig: Any) -> str:
    """Alt text for a matplotlib figure, read from what it draws: its title, and each panel's title,
    axis labels and legend entries, e.g. ``"Entropy by position. Panel 1: x: position; y: entropy
    (bits); lines: Bayes, transformer."``. Falls back to ``"A figure."`` when nothing is labelled."""
    parts = []
    title = getattr(getattr(fig, "_suptitle", None), "get_text", lambda: "")()
    if title:
        parts.append(title.rstrip(".") + ".")
    axes = [ax for ax in fig.get_axes() if ax.get_visible() and ax.get_label() != "<colorbar>"]
    for i, ax in enumerate(axes, start=1):
        bits = []
        if ax.get_title():
            bits.append(ax.get_title())
        if ax.get_xlabel():
            bits.append(f"x: {ax.get_xlabel()}")
        if ax.get_ylabel():
            bits.append(f"y: {ax.get_ylabel()}")
        legend = ax.get_legend()
        if legend is not None:
            names = [t.get_text() for t in legend.get_texts() if t.get_text()]
            if names:
                bits.append("series: " + ", ".join(names))
        if bits:
            parts.append((f"Panel {i}: " if len(axes) > 1 else "") + "; ".join(bits) + ".")
    text = " ".join(parts) or "A figure."
    return re.sub(r"\$([^$]*)\$", r"\1", text)  # math in labels, without its dollar signs


def _png_html(data: Any, metadata: Mapping[str, Any] | None, alt: str = "A figure of the interactive control.") -> str:
    b64 = base64.b64encode(data).decode("ascii") if isinstance(data, bytes) else str(data).strip()
    width = (metadata or {}).get("width")
    size = f' width="{int(width)}"' if width else ""
    return (f'<img src="data:image/png;base64,{b64}"{size} alt="{html.escape(alt)}" '
            f'style="max-width: 100%; height: auto">')


def static_view(widget: Any) -> str | None:
    """HTML of what an ``ipywidgets.interactive`` shows at its current setting: its printed text
    and its figures (as PNG data), under a line naming the setting. None when the widget has no
    function to call, or the call fails.

    It calls the widget's function once more, capturing what it prints and displays; figures that
    it leaves open (``plt.show()`` outside a kernel) are drawn too, then closed.
    """
    f, kwargs = getattr(widget, "f", None), getattr(widget, "kwargs", None)
    if f is None or kwargs is None:
        return None
    import matplotlib.pyplot as plt
    from IPython.utils.capture import capture_output

    before = set(plt.get_fignums())
    added = _ensure_figure_formatter()
    alts: list[str] = []  # the alt text of each figure displayed, in order (read by _recording_formatter)
    restore = _recording_formatter(alts)
    show = plt.show
    plt.show = lambda *args, **kw: None  # figures stay open, so their alt text is read from them below
    try:
        with capture_output(stderr=False) as captured:
            f(**kwargs)
    except Exception:  # a fallback must never break the cell; the book check reports a missing view
        return None
    finally:
        plt.show = show
        restore()
        if added is not None:
            added.pop(_figure_type())
    texts, images = [captured.stdout.rstrip("\n")] if captured.stdout.strip() else [], []
    for out in captured.outputs:
        if "image/png" in out.data:
            alt = alts.pop(0) if alts else "A figure of the interactive control."
            images.append(_png_html(out.data["image/png"], (out.metadata or {}).get("image/png"), alt))
        elif "text/plain" in out.data:
            texts.append(str(out.data["text/plain"]))
    for num in sorted(set(plt.get_fignums()) - before):
        fig = plt.figure(num)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=2 * fig.dpi, bbox_inches="tight")
        # a 2x PNG shown at half its pixel width: the same size and sharpness as a retina figure
        alt = figure_alt(fig)
        plt.close(fig)
        images.append(_png_html(buf.getvalue(), {"width": _png_width(buf.getvalue()) // 2}, alt))
    setting = _settings(widget)
    head = ('<p class="bwt-static-note"><em>Interactive figure, shown here at '
            f'{html.escape(setting) if setting else "its first setting"}.</em> '
            "Run this notebook (Colab or Jupyter) to change the setting.</p>")
    body = "".join(f"<pre>{html.escape(t)}</pre>" for t in texts if t.strip()) + "".join(images)
    return f'<div class="bwt-static-view">{head}{body}</div>'


def _figure_type() -> type:
    from matplotlib.figure import Figure

    return Figure


def _recording_formatter(alts: list[str]) -> Callable[[], None]:
    """While a static view is drawn, note :func:`figure_alt` of every figure the PNG formatter
    renders (``display(fig)``), in order, into ``alts``. Returns the function that undoes it."""
    try:
        from IPython import get_ipython
    except ImportError:
        return lambda: None
    shell = get_ipython()
    if shell is None:
        return lambda: None
    png = shell.display_formatter.formatters["image/png"]
    try:
        render = png.lookup_by_type(_figure_type())
    except KeyError:
        return lambda: None

    def recording(fig: Any) -> Any:
        alts.append(figure_alt(fig))
        return render(fig)

    png.for_type(_figure_type(), recording)
    return lambda: png.for_type(_figure_type(), render)


def _ensure_figure_formatter() -> Any:
    """Make ``display(fig)`` produce a retina PNG while a static view is captured, where no figure
    formatter is set (an IPython shell without the inline backend). Returns the PNG formatter it
    registered with (to undo it), or None."""
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import retina_figure
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    png = shell.display_formatter.formatters["image/png"]
    try:
        png.lookup_by_type(_figure_type())
        return None
    except KeyError:
        png.for_type(_figure_type(), lambda fig: retina_figure(fig, base64=True))
        return png


def _png_width(png: bytes) -> int:
    """The pixel width in a PNG header."""
    return int.from_bytes(png[16:20], "big")


def enable_static_widgets() -> bool:
    """Make every ``ipywidgets.interactive`` displayed in this IPython session also carry
    :func:`static_view` as its ``text/html`` form. Frontends that run widgets (Jupyter, Colab)
    still show the live widget; a page without a kernel (the book) shows the static view.
    Returns whether it was enabled (False outside IPython or without ipywidgets).
    """
    try:
        import ipywidgets
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.display_formatter.formatters["text/html"].for_type(ipywidgets.interactive, static_view)
    return True
