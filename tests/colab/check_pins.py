"""Whether this interpreter's packages are exactly Colab's pins (tests/colab/pins.txt).

`make test-colab` runs it before installing the package (to reuse .venv-colab while the pins hold)
and after (so that installing xprof_widgets into Colab's environment upgraded none of them).

    python tests/colab/check_pins.py tests/colab/pins.txt    # exit 1, naming each mismatch
"""

from __future__ import annotations

import sys
from fnmatch import fnmatch
from importlib import metadata
from pathlib import Path


def mismatches(pins: Path) -> list[str]:
    """`name: installed X, pinned Y` for every pin this environment does not hold."""
    found = []
    for line in pins.read_text(encoding="utf-8").splitlines():
        requirement = line.split("#")[0].strip()
        if not requirement:
            continue
        name, pinned = (part.strip() for part in requirement.split("=="))
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "nothing"
        if not fnmatch(installed, pinned):  # 6.17.* pins a release series
            found.append(f"{name}: installed {installed}, pinned {pinned}")
    return found


if __name__ == "__main__":
    wrong = mismatches(Path(sys.argv[1]))
    for line in wrong:
        print(line, file=sys.stderr)
    sys.exit(1 if wrong else 0)
