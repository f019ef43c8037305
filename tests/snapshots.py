"""Pinned text (golden files) for outputs whose every character is the product: plans, tables.

`matches(path, text)` compares `text` with the file line by line (the first differing line is
the failure); GPUBENCH_UPDATE_SNAPSHOTS=1 writes the file instead. After a deliberate change,
regenerate, then read the diff before committing it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def matches(path: Path, text: str) -> None:
    if os.environ.get("GPUBENCH_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no pinned {path.name}: GPUBENCH_UPDATE_SNAPSHOTS=1 writes it"
    expected, got = path.read_text().splitlines(), text.splitlines()
    for index, (want, have) in enumerate(zip(expected, got, strict=False)):
        assert have == want, f"{path.name} line {index + 1} differs"
    assert len(got) == len(expected), f"{path.name}: {len(got)} lines, pinned {len(expected)}"


def table_text(table) -> str:
    """A rich Table as what decides its look: title, every column's header, alignment, wrapping
    and cells, and the table's box and padding (not rich's drawing of it, which is rich's to
    change between releases)."""
    lines = [f"title={_text(table.title)} title_justify={table.title_justify!r} "
             f"show_header={table.show_header} box={type(table.box).__name__ if table.box else None}"
             f" padding={table.padding}"]  # fmt: skip
    for column in table.columns:
        lines.append(f"column {_text(column.header)} justify={column.justify} no_wrap={column.no_wrap}"
                     f" min_width={column.min_width}")  # fmt: skip
        lines += [f"  {_text(cell)}" for cell in column.cells]
    return "\n".join(lines) + "\n"


def _text(value) -> str:
    """A cell as its text: a rich Text as its markup (its style in brackets, if any)."""
    from rich.text import Text

    return repr(value.markup if isinstance(value, Text) else value)


def _num(value) -> str:
    """Four significant digits: what a chart shows, the same on every machine."""
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return repr(value)


def _points(values) -> str:
    import numpy as np

    flat = np.asarray(values, dtype=float).ravel()
    if flat.size <= 12:
        return "[" + ", ".join(_num(v) for v in flat) + "]"
    every = hashlib.sha256(" ".join(_num(v) for v in flat).encode()).hexdigest()[:12]
    shown = [_num(v) for v in flat[:4]] + ["…"] + [_num(v) for v in flat[-4:]]
    return f"[{', '.join(shown)}] ({flat.size} values, digest {every})"


def _words(labels) -> list[str]:
    """Tick labels that are words (categories), not numbers the locator chose."""
    found = []
    for label in labels:
        text = label.get_text()
        try:
            float(text.replace(",", "").replace("−", "-"))
        except ValueError:
            if text and "$" not in text:
                found.append(text)
    return found


def _label(artist) -> str:
    label = artist.get_label()
    return "(none)" if label.startswith("_") else repr(label)


def _color(color) -> str:
    from matplotlib.colors import to_hex

    try:
        return to_hex(color, keep_alpha=True)
    except (TypeError, ValueError):
        import numpy as np

        return ",".join(to_hex(c, keep_alpha=True) for c in np.atleast_2d(color))


def figure_text(figure, dpi=None) -> str:
    """A matplotlib figure as what it draws: per axes its title, labels, scales, limits and
    legend, every line (style, colour, width, points), marker set (positions, colours, sizes,
    shape), bar, annotation and reference line; not the pixels (matplotlib's to change)."""
    figure.canvas.draw()  # tick labels of categorical axes exist once drawn
    lines = [f"figure {_points(figure.get_size_inches())} dpi={dpi} "
             f"suptitle={figure._suptitle.get_text() if figure._suptitle else None!r}"]  # fmt: skip
    for ax in figure.axes:
        lines += _axes_text(ax)
    for legend in figure.legends:
        handles = [_color(h.get_facecolor()) for h in legend.legend_handles]
        lines.append(f"figure legend {[t.get_text() for t in legend.get_texts()]} {handles} "
                     f"loc={legend._loc}")  # fmt: skip
    return "\n".join(lines) + "\n"


def _cell(ax) -> str:
    """Where the axes sit in their grid (not the pixels tight_layout computes from fonts)."""
    spec = ax.get_subplotspec()
    if spec is None:
        return "cell=None"
    grid = spec.get_gridspec()
    return (
        f"cell=rows {spec.rowspan.start}-{spec.rowspan.stop} cols {spec.colspan.start}-"
        f"{spec.colspan.stop} of {grid.nrows}x{grid.ncols} widths={grid.get_width_ratios()}"
    )


def _axes_text(ax) -> list[str]:
    titles = {loc: ax.get_title(loc) for loc in ("left", "center", "right") if ax.get_title(loc)}
    title = {"left": ax._left_title, "right": ax._right_title}.get(next(iter(titles), ""), ax.title)
    out = [f"axes on={ax.axison} title={titles} size={_num(title.get_fontsize())} "
           f"x={ax.get_xlabel()!r} ({ax.get_xscale()}) y={ax.get_ylabel()!r} ({ax.get_yscale()})"
           f" xlim={_points(ax.get_xlim())} ylim={_points(ax.get_ylim())}"
           f" {_cell(ax)}"]  # fmt: skip
    for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
        scale = axis._scale
        grid = axis.get_gridlines()
        out.append(f"  {name}: base={getattr(scale, 'base', None)} grid="
                   f"{bool(grid) and grid[0].get_visible()} alpha={grid[0].get_alpha() if grid else None}"
                   f" ticks={_words(axis.get_ticklabels())}"
                   f" tick size={_num(axis.get_ticklabels()[0].get_fontsize()) if axis.get_ticklabels() else None}")  # fmt: skip
    for line in ax.get_lines():
        x, y = line.get_data()
        out.append(f"  line {_label(line)} {line.get_linestyle()} {_color(line.get_color())}"
                   f" w={_num(line.get_linewidth())} marker={line.get_marker()} "
                   f"ms={_num(line.get_markersize())} "
                   f"alpha={line.get_alpha()} x={_points(x)} y={_points(y)} n={len(x)}")  # fmt: skip
    for coll in ax.collections:
        paths = coll.get_paths()
        shape = _points(paths[0].vertices) if paths else None
        out.append(f"  markers {_label(coll)} at {_points(coll.get_offsets())} face="
                   f"{_color(coll.get_facecolor())} edge={_color(coll.get_edgecolor())} "
                   f"sizes={_points(coll.get_sizes())} lw={_points(coll.get_linewidths())} "
                   f"z={coll.get_zorder()} shape={shape}")  # fmt: skip
    for patch in ax.patches:
        out.append(f"  bar {_points(patch.get_xy())} w={_num(patch.get_width())} "
                   f"h={_num(patch.get_height())} {_color(patch.get_facecolor())}")  # fmt: skip
    for text in ax.texts:
        out.append(f"  text {text.get_text()!r} at {_points(getattr(text, 'xy', text.get_position()))}"
                   f" offset={_points(text.get_position())} in {getattr(text, 'anncoords', None)}"
                   f" size={_num(text.get_fontsize())} "
                   f"{_color(text.get_color())}")  # fmt: skip
    legend = ax.get_legend()
    if legend:
        anchor = legend._bbox_to_anchor
        out.append(f"  legend {[t.get_text() for t in legend.get_texts()]} loc={legend._loc} "
                   f"anchor={_points(anchor.bounds) if anchor is not None else None} "
                   f"ncols={legend._ncols} size={_num(legend.get_texts()[0].get_fontsize())} "
                   f"alpha={legend.get_frame().get_alpha()}")  # fmt: skip
    return out


class SavedFigures:
    """Stands in for Figure.savefig: keeps each figure's text (and where it would go)."""

    def __init__(self) -> None:
        self.saved: list[tuple[str, str]] = []

    def __call__(self, figure, path, dpi=None, **kwargs) -> None:
        self.saved.append((str(path), figure_text(figure, dpi)))

    @classmethod
    def instead_of_savefig(cls, monkeypatch) -> SavedFigures:
        """One in place of matplotlib's Figure.savefig for the test."""
        from matplotlib.figure import Figure

        saved = cls()
        monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: saved(fig, path, **kw))
        return saved
