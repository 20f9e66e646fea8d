"""Events XProf's trace viewer shows that no file stores as such, made here the same way.

- Step names: a step root (stat `_r`) carrying `step_num` is named `<name> <step_num>`
  (`train 3`), as XProf names the step groups it finds; the root keeps its stats.
- Thread-pool regions: XLA's CPU thread pools write `ThreadpoolListener::StartRegion` and
  `StopRegion` instants; XProf draws the span from each start to the stop that follows it on the
  same thread as one `ThreadpoolListener::Region` slice.

Both work on one file's columns while it is decoded (events grouped by line, not yet sorted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REGION_START = "ThreadpoolListener::StartRegion"
REGION_STOP = "ThreadpoolListener::StopRegion"
REGION = "ThreadpoolListener::Region"


@dataclass
class MetadataRows:
    """The growing metadata table of a file being decoded (lists indexed by row)."""

    names: list[str]
    display_names: list[str]
    sections: list[int]
    stats: list[dict]

    def add(self, name: str, section: int, stats: dict | None = None) -> int:
        self.names.append(name)
        self.display_names.append(name)
        self.sections.append(section)
        self.stats.append(stats or {})
        return len(self.names) - 1


def name_steps(meta_rows: np.ndarray, roots: np.ndarray, step_num: np.ndarray,
               rows: MetadataRows) -> None:
    """Renames step roots (event indices `roots`, their `step_num` values) in place."""
    renamed: dict[tuple[int, int], int] = {}
    for event, number in zip(roots.tolist(), step_num.tolist(), strict=True):
        row = int(meta_rows[event])
        key = (row, number)
        if key not in renamed:
            renamed[key] = rows.add(f"{rows.names[row]} {number}", rows.sections[row],
                                    rows.stats[row])
        meta_rows[event] = renamed[key]


def threadpool_regions(meta_rows: np.ndarray, start: np.ndarray, group: np.ndarray,
                       rows: MetadataRows) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray]:
    """Region slices for StartRegion/StopRegion pairs: (start, duration, group, metadata row)."""
    names = np.asarray(rows.names, dtype=object)
    is_start = names == REGION_START
    is_stop = names == REGION_STOP
    marks = np.flatnonzero(is_start[meta_rows] | is_stop[meta_rows])
    empty = np.empty(0, np.int64)
    if not marks.shape[0]:
        return empty, empty, empty, empty
    marks = marks[np.lexsort((start[marks], group[marks]))]
    opens = is_start[meta_rows[marks]]
    pair = np.flatnonzero(opens[:-1] & ~opens[1:] & (group[marks[:-1]] == group[marks[1:]]))
    first, last = marks[pair], marks[pair + 1]
    region_rows: dict[int, int] = {}
    out_rows = np.empty(first.shape[0], np.int64)
    for k, row in enumerate(meta_rows[first].tolist()):
        section = rows.sections[row]
        if section not in region_rows:
            region_rows[section] = rows.add(REGION, section)
        out_rows[k] = region_rows[section]
    return start[first], start[last] - start[first], group[first], out_rows
