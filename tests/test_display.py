"""bwt_lite.display: tables (text and HTML), the figure style, static views of widgets."""
import base64
import re

import ipywidgets
import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

from bwt_lite import display as D


@pytest.fixture(autouse=True)
def restore_rcparams():
    """set_figure_style changes matplotlib's global rcParams: keep them to this module's tests."""
    with matplotlib.rc_context():
        yield


def test_table_text_aligns_numbers_right_and_text_left():
    t = D.table([{"model": "transformer", "MAE": 0.0135, "params": 405120},
                 {"model": "MLP control", "MAE": 1.107, "params": 3000}],
                caption="Entropy MAE (bits)", note="512 held-out episodes")
    assert str(t) == repr(t) == t.to_text()
    assert t.to_text().splitlines() == [
        "Entropy MAE (bits)",
        "model           MAE   params",
        "-----------  ------  -------",
        "transformer  0.0135  405,120",
        "MLP control   1.107    3,000",
        "512 held-out episodes",
    ]
    assert t.numeric == (False, True, True)


def test_table_html_is_escaped_and_marks_the_paper_column():
    t = D.table([["a<b", 0.5, "0.7"]], ["x & y", "ours", "paper"], paper_column="paper", caption="c <1>",
                note=["first > second", "third"])
    h = t._repr_html_()
    assert "a&lt;b" in h and "x &amp; y" in h and "c &lt;1&gt;" in h and "<b" not in h.replace("<br>", "")
    assert "first &gt; second<br>third" in h and t.to_text().endswith("first > second\nthird")
    cells = re.findall(r'<td class="([^"]*)" style="([^"]*)"', h)
    assert [c for c, _ in cells] == ["bwt-text", "bwt-num", "bwt-num bwt-paper"]
    assert "text-align: right" in cells[1][1] and "text-align: left" in cells[0][1]
    assert h == t._repr_html_()  # deterministic: nbval compares it


def test_table_paper_mapping_moves_the_paper_column_beside_ours():
    t = D.table([{"tunnel": "bijection", "MAE": 0.014, "KL": 0.003, "paper MAE": 0.007}],
                paper_column={"MAE": "paper MAE"})
    assert t.columns == ("tunnel", "MAE", "paper MAE", "KL")
    assert t.paper == (False, False, True, False)


def test_table_formats_blanks_and_scalars():
    t = D.table([[torch.tensor(0.123456), None, True, "n/a"], [2.5, 3, False, "+0.4 [+0.3,+0.5]"]],
                ["a", "b", "c", "d"], formats={"a": ".2f", "b": lambda v: f"{v}x"})
    assert t.rows == (("0.12", "", "yes", "n/a"), ("2.50", "3x", "no", "+0.4 [+0.3,+0.5]"))
    assert t.numeric == (True, True, False, True)  # "n/a" and empty cells do not decide alignment


def test_table_aligns_each_cell_in_a_mixed_column():
    t = D.table([["params", "405,120", "2,677,440"], ["target", "sampled", "sampled"]], ["setting", "lite", "paper"],
                paper_column="paper")
    assert t.numeric == (False, False, False)
    assert t.right == ((False, True, True), (False, False, False))
    assert t.to_text().splitlines()[2:] == ["params   405,120  2,677,440", "target   sampled  sampled"]
    assert '<td class="bwt-num bwt-paper"' in t._repr_html_() and '<td class="bwt-text bwt-paper"' in t._repr_html_()


def test_table_rejects_bad_input():
    with pytest.raises(ValueError, match="columns is required"):
        D.table([[1, 2]])
    with pytest.raises(ValueError, match="row 0 has 1 values"):
        D.table([[1]], ["a", "b"])
    with pytest.raises(ValueError, match="unknown column"):
        D.table([{"a": 1}], paper_column="paper")
    with pytest.raises(ValueError, match="distinct"):
        D.table([[1, 2]], ["a", "a"])


def test_figure_style_fits_the_column():
    D.set_figure_style()  # no IPython shell here: rcParams only
    width_in, _ = matplotlib.rcParams["figure.figsize"]
    assert width_in * matplotlib.rcParams["figure.dpi"] <= D.COLUMN_PX
    assert matplotlib.rcParams["xtick.labelsize"] >= 10


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    D.set_figure_style()
    assert D.enable_static_widgets()
    yield shell
    InteractiveShell.clear_instance()  # other tests run without an IPython session


def _img_widths(html):
    """(pixel width of each embedded PNG, its width attribute)."""
    out = []
    for b64, width in re.findall(r'src="data:image/png;base64,([^"]+)" width="(\d+)"', html):
        png = base64.b64decode(b64)
        out.append((int.from_bytes(png[16:20], "big"), int(width)))
    return out


def test_widgets_carry_a_static_view_of_their_current_setting(shell):
    from bwt_lite.plotting.bayes import elimination_widget

    w = elimination_widget(0, t=5)
    data, _ = shell.display_formatter.format(w)
    assert "application/vnd.jupyter.widget-view+json" in data  # the live widget is still there
    html = data["text/html"]
    assert "shown here at step t = 5" in html and "15 value(s) still possible" in html
    widths = _img_widths(html)
    assert len(widths) == 1 and all(px >= 2 * shown - 2 for px, shown in widths)  # retina
    alt = re.search(r'alt="([^"]*)"', html).group(1)  # read from the figure it drew
    assert "interactive control" not in alt and len(alt.split()) >= 5, alt
    w.children[0].value = 7  # the view follows the slider
    assert "step t = 7" in shell.display_formatter.format(w)[0]["text/html"]
    assert plt.get_fignums() == []


def test_static_view_draws_figures_left_open():
    def show(n: int) -> None:
        print(f"n = {n}")
        plt.plot(range(n))
        plt.xlabel("step")
        plt.show()  # held back while the view is drawn, so the figure's alt text can be read

    w = ipywidgets.interactive(show, n=ipywidgets.IntSlider(value=3, min=1, max=9, description="points"))
    plt.close("all")
    html = D.static_view(w)
    assert "points = 3" in html and "<pre>n = 3</pre>" in html
    assert len(_img_widths(html)) == 1 and plt.get_fignums() == []
    assert 'alt="x: step."' in html


def test_static_view_of_a_failing_widget_is_none():
    def show(n: int) -> None:
        raise RuntimeError("boom")

    w = ipywidgets.interactive(show, n=1)
    assert D.static_view(w) is None
    assert D.static_view(object()) is None


def test_figure_alt_reads_titles_labels_and_legends():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2)
    fig.suptitle("Entropy by position")
    a.plot([0, 1], label="Bayes")
    a.plot([1, 0], label="transformer")
    a.set(xlabel="position", ylabel="entropy (bits)")
    a.legend()
    b.set_title("error, $\\log$ scale")
    alt = D.figure_alt(fig)
    plt.close(fig)
    assert alt == ("Entropy by position. Panel 1: x: position; y: entropy (bits); series: Bayes, transformer. "
                   "Panel 2: error, \\log scale.")
    empty = plt.figure()
    assert D.figure_alt(empty) == "A figure."
    plt.close(empty)
