"""Prints the CPython interpreters >= 3.11 of this machine that scripts/dist.sh builds a wheel for, one path a line,
one per minor version, except the minor of the Python running this (dist.sh adds that one itself). Looked
for: python3.N on PATH, /usr/bin and /usr/local/bin, pyenv's versions ($PYENV_ROOT or ~/.pyenv), uv's managed
Pythons (`uv python find`); each is run to check it is a CPython of that version with pip (a pyenv shim for a
version not selected fails, and is skipped)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

FIRST_MINOR, LAST_MINOR = 11, 20  # cykafka needs 3.11+; later minors are taken as they appear
CHECK = ("import sys, pip; print(sys.implementation.name, sys.version_info[0], sys.version_info[1], "
         "sys.executable)")


def candidates(minor: int) -> list[str]:
    name = f"python3.{minor}"
    found = [p for p in (shutil.which(name), f"/usr/bin/{name}", f"/usr/local/bin/{name}") if p]
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found += sorted(glob.glob(f"{pyenv_root}/versions/3.{minor}.*/bin/{name}"), reverse=True)
    uv = shutil.which("uv")
    if uv:
        out = subprocess.run([uv, "python", "find", f"3.{minor}"], capture_output=True, text=True, timeout=60)
        if out.returncode == 0 and out.stdout.strip():
            found.append(out.stdout.strip())
    return found


def works(path: str, minor: int) -> str | None:
    """The interpreter's real path when it is CPython 3.minor with pip, else None."""
    if not os.access(path, os.X_OK):
        return None
    try:
        out = subprocess.run([path, "-c", CHECK], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    fields = out.stdout.strip().split(maxsplit=3)
    if out.returncode != 0 or len(fields) != 4 or fields[:3] != ["cpython", "3", str(minor)]:
        return None
    return fields[3]


def main() -> int:
    for minor in range(FIRST_MINOR, LAST_MINOR + 1):
        if minor == sys.version_info[1]:
            continue
        for path in candidates(minor):
            if (real := works(path, minor)) is not None:
                print(real)
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
