"""Small profiles for the trace index tests, and brute-force references to check it against."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from xprof_widgets.profile.model import Profile


def line(name: str, starts, durations, names=None, stats=None) -> dict:
    """A line spec from columns (ps); names default to e<k>, stats to none."""
    starts, durations = np.asarray(starts, np.int64), np.asarray(durations, np.int64)
    names = names if names is not None else [f"e{k % 7}" for k in range(starts.shape[0])]
    stats = stats if stats is not None else [{}] * starts.shape[0]
    return {"name": name, "events": [(n, int(s), int(d), st) for n, s, d, st in zip(
        names, starts.tolist(), durations.tolist(), stats, strict=True)]}


def random_line(rng: np.random.Generator, name: str, n: int) -> dict:
    """Events on a coarse grid (equal starts, exact gaps) with durations over many decades
    (zero, tiny, huge), so they nest, touch and overlap in every way."""
    grid = int(rng.choice([1, 3, 1000, 10**6]))
    starts = np.sort(rng.integers(0, max(2, n * int(rng.choice([1, 4, 50]))), n)) * grid
    kind = rng.integers(0, 4, n)
    durations = np.select(
        [kind == 0, kind == 1, kind == 2],
        [np.zeros(n, np.int64), rng.integers(0, 3, n) * grid,
         (10 ** rng.uniform(0, 4, n)).astype(np.int64) * grid],
        (10 ** rng.uniform(0, 7, n)).astype(np.int64) * grid)
    return line(name, starts, durations)


def reference_runs(profile: Profile, lo: int, hi: int, px: float, track_ids) -> list[tuple]:
    """The level-of-detail contract computed the obvious way: per (track, depth), the events
    overlapping [lo, hi] in start order, cut where max(dur_a, dur_b, gap) >= px.
    Rows: (track, depth, start, end, count, longest event: the first of the longest)."""
    start, dur = profile.start_ps, profile.duration_ps
    rows = []
    for track, depth, ev in rows_in_window(profile, track_ids, lo, hi):
        run: list[int] = []
        for e in ev.tolist():
            if run:
                a = run[-1]
                if max(dur[a], dur[e], start[e] - start[a] - dur[a]) >= px:
                    rows.append(_run_row(profile, track, depth, run))
                    run = []
            run.append(e)
        if run:
            rows.append(_run_row(profile, track, depth, run))
    return rows


def rows_in_window(profile: Profile, track_ids, lo: int, hi: int
                   ) -> Iterator[tuple[int, int, np.ndarray]]:
    """(track, depth, its events overlapping [lo, hi] in start order) of each slice track."""
    start, dur = profile.start_ps, profile.duration_ps
    for track in track_ids:
        row = profile.tracks.loc[track]
        if row["kind"] != "slices":
            continue
        idx = np.arange(row["first_event"], row["end_event"])
        for depth in range(int(row["max_depth"]) + 1):
            ev = idx[profile.depth[idx] == depth]
            yield track, depth, ev[(start[ev] <= hi) & (start[ev] + dur[ev] >= lo)]


def _run_row(profile: Profile, track: int, depth: int, run: list[int]) -> tuple:
    durations = profile.duration_ps[run]
    return (int(track), depth, int(profile.start_ps[run[0]]),
            int(profile.start_ps[run[-1]] + durations[-1]), len(run),
            int(run[int(np.argmax(durations))]))


def window_rows(window) -> list[tuple]:
    return list(zip(window.slice_track.tolist(), window.slice_depth.tolist(),
                    window.slice_start_ps.tolist(), window.slice_end_ps.tolist(),
                    window.slice_count.tolist(), window.slice_event.tolist(), strict=True))
