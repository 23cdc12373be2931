"""The parameter counts behind the primitives table: every architecture's parameter count on every
tunnel at both scales, against the transformer it is compared with.

Backs chapter 6's claim that the architectures are compared at matched capacity (lite: within 10 % of
the tunnel's lite transformer; paper: the sizes in ``bwt_lite/recipes/architectures.py``). Counts are exact (models
built on the meta device): a few seconds, no training. The same table as ``bwt reproduce --capacity``.

    python experiments/parameter_counts.py [--out experiments/results/parameter_counts.json]
"""
from __future__ import annotations

from bwt_lite.reproduce import capacity_table, format_capacity_table

from _common import parser, write


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0], "parameter_counts.json").parse_args(argv)
    rows = capacity_table()
    print(format_capacity_table(rows))
    write(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
