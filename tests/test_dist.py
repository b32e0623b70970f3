"""The release artefacts as a user meets them: scripts/dist.sh builds the sdist and the manylinux wheel once per run;
each is pip-installed with the broker extra into a fresh venv (nothing of the dev extra), where the embedded broker,
the producer, the CLI and the plain demo must work (read back by confluent-kafka up to the Fetch high watermark)."""

from __future__ import annotations

import email
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import cykafka
from cykafka.errors import DOCS_URL
from cykafka.verify import read_back

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
KINDS = ("sdist", "wheel")


@dataclass(frozen=True)
class Dist:
    sdist: Path
    wheel: Path  # the wheel of the Python running the tests
    wheels: list[Path]  # every wheel built
    output: str  # what dist.sh printed


def _one(paths: Iterator[Any]) -> Any:
    found = list(paths)
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    out = tmp_path_factory.mktemp("dist")
    run = subprocess.run(["bash", str(ROOT / "scripts" / "dist.sh"), str(out)], capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    tag = f"-cp{sys.version_info[0]}{sys.version_info[1]}-"
    wheels = sorted(out.glob("cykafka-*.whl"))
    return Dist(_one(out.glob("cykafka-*.tar.gz")), _one(w for w in wheels if tag in w.name), wheels,
                run.stdout + run.stderr)


def _cpythons() -> set[str]:
    """The CPython minor versions >= 3.11 this machine has (as dist.sh finds them), with the running one."""
    found = subprocess.run([sys.executable, str(ROOT / "scripts" / "find_pythons.py")], capture_output=True,
                           text=True, check=True, timeout=300).stdout.split()
    versions = {f"{sys.version_info[0]}{sys.version_info[1]}"}
    for path in found:
        out = subprocess.run([path, "-c", "import sys; print(*sys.version_info[:2], sep='')"], capture_output=True,
                             text=True, check=True, timeout=60)
        versions.add(out.stdout.strip())
    return versions


def test_a_wheel_for_every_cpython_of_the_machine_without_compiler_warnings(dist: Dist) -> None:
    """dist.sh built one wheel (cp311) though 3.12 and 3.13 were on the machine, and gcc printed 10
    -Wmaybe-uninitialized warnings (fields gcc could not see set on every path: now initialized in the .pyx).
    dist.sh fails on a compiler warning, so a build here is a build without any."""
    built = {w.name.split("-")[2].removeprefix("cp") for w in dist.wheels}
    assert built == _cpythons(), [w.name for w in dist.wheels]
    assert not re.search(r":\d+:\d+: warning:", dist.output) and "the compiler warned" not in dist.output
    for wheel in dist.wheels:
        assert "manylinux" in wheel.name


@pytest.fixture(scope="module")
def venvs(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """kind -> a fresh venv holding `cykafka[broker]` installed from that artefact; the two installs run at once."""
    started: dict[str, tuple[Path, subprocess.Popen[bytes], Path]] = {}
    try:
        for kind, artefact in (("sdist", dist.sdist), ("wheel", dist.wheel)):
            venv = tmp_path_factory.mktemp(f"venv-{kind}")
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
            log = venv / "pip.log"
            with open(log, "wb") as log_file:
                # the hash keys pip's wheel cache by content: an sdist rebuilt at a used path is built again
                url = f"{artefact.as_uri()}#sha256={hashlib.sha256(artefact.read_bytes()).hexdigest()}"
                process = subprocess.Popen([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                            f"cykafka[broker] @ {url}"],
                                           stdout=log_file, stderr=subprocess.STDOUT, cwd=venv)
            started[kind] = (venv, process, log)
        for kind, (_, process, log) in started.items():
            assert process.wait(timeout=900) == 0, f"pip install of the {kind}:\n{log.read_text()[-4000:]}"
        yield {kind: venv for kind, (venv, _, _) in started.items()}
    finally:
        for _, process, _ in started.values():
            if process.poll() is None:
                process.kill()
                process.wait()


def _run(venv: Path, *command: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """A command of the fresh venv, run away from the source tree (whose cykafka/ must not shadow the install)."""
    executable = str(venv / "bin" / command[0])
    return subprocess.run([executable, *command[1:]], input=stdin, capture_output=True, text=True, timeout=300,
                          cwd=venv, env={**os.environ, "PYTHONPATH": ""})


def test_sdist_holds_every_build_source_docs_and_license(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as tar:
        root = tar.getnames()[0].split("/")[0]
        names = {name.removeprefix(root + "/") for name in tar.getnames()}
        pkg_info = email.message_from_bytes(tar.extractfile(f"{root}/PKG-INFO").read())  # type: ignore[union-attr]
    needed = {f"core/{p.name}" for pattern in ("*.pyx", "*.pxd", "*.h", "*.pyi") for p in (ROOT / "core").glob(pattern)}
    needed.add("core/pxd/cykafka/core/_core.pxd")
    needed |= {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    needed |= {"LICENSE", "README.md", "MANIFEST.in", "setup.py", "pyproject.toml", "cykafka/py.typed"}
    assert "core/_core.pyx" in needed and "core/crc32c.h" in needed
    assert needed <= names, sorted(needed - names)
    assert not [n for n in names if n.endswith((".c", ".so")) or n.startswith("build/")]
    assert pkg_info["License-Expression"] == "Apache-2.0" and pkg_info["License-File"] == "LICENSE"
    classifiers = pkg_info.get_all("Classifier") or []
    for version in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert "Typing :: Typed" in classifiers and "Operating System :: POSIX :: Linux" in classifiers
    urls = dict(url.split(", ", 1) for url in pkg_info.get_all("Project-URL") or [])
    assert urls["Documentation"] == DOCS_URL
    assert pkg_info["Version"] == cykafka.__version__


def test_wheel_is_manylinux_without_sources(dist: Dist) -> None:
    shown = subprocess.run([str(Path(sys.executable).parent / "auditwheel"), "show", str(dist.wheel)],
                           capture_output=True, text=True, check=True, timeout=120).stdout
    assert 'consistent with the following platform tag: "manylinux_' in " ".join(shown.split()), shown
    assert "manylinux" in dist.wheel.name and "linux_x86_64.whl" not in dist.wheel.name.replace("manylinux", "")
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = wheel.namelist()
    assert not [n for n in names if n.endswith((".c", ".pyx", ".pxd", ".h"))]
    assert f"cykafka-{cykafka.__version__}.dist-info/licenses/LICENSE" in names
    assert "cykafka/core/_core.pyi" in names and "cykafka/py.typed" in names


def test_wheel_extension_carries_no_path_of_the_build_machine(dist: Dist) -> None:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    with zipfile.ZipFile(dist.wheel) as wheel:
        extension = _one(n for n in wheel.namelist() if n.endswith(".so"))
        elf = ELFFile(io.BytesIO(wheel.read(extension)))
        tags = [tag for section in elf.iter_sections() if isinstance(section, DynamicSection)
                for tag in section.iter_tags()]
    assert [t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"] == ["libc.so.6"]
    assert not [t.entry.d_tag for t in tags if t.entry.d_tag in ("DT_RPATH", "DT_RUNPATH")]


@pytest.mark.parametrize("kind", KINDS)
def test_installed_artefact_sends_and_reads_back(venvs: dict[str, Path], kind: str) -> None:
    smoke = _run(venvs[kind], "python", str(TESTS / "dist_smoke.py"))
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert smoke.stdout.rstrip().endswith("VERIFIED"), smoke.stdout
    for command in (("cykafka", "--version"), ("python", "-m", "cykafka", "--version")):
        assert _run(venvs[kind], *command).stdout.strip() == f"cykafka {cykafka.__version__}"


@pytest.mark.parametrize("kind", KINDS)
def test_broker_extra_runs_the_plain_demo(venvs: dict[str, Path], kind: str) -> None:
    demo = _run(venvs[kind], "cykafka", "demo", "--plain", "--records", "5000")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "read_back=5000" in demo.stdout and demo.stdout.rstrip().endswith("VERIFIED"), demo.stdout


def test_broker_extra_runs_the_broker_and_produce(venvs: dict[str, Path]) -> None:
    venv = venvs["wheel"]
    broker = subprocess.Popen([str(venv / "bin" / "cykafka"), "broker"], stdout=subprocess.PIPE, text=True, cwd=venv)
    try:
        assert broker.stdout is not None
        line = broker.stdout.readline()  # printed once Tansu answers ApiVersions
        assert line.startswith("bootstrap.servers="), line
        bootstrap_servers = line.split()[0].split("=", 1)[1]
        produce = _run(venv, "cykafka", "produce", "dist-cli", "-b", bootstrap_servers,
                       stdin="".join(f"{i}\n" for i in range(1000)))
        assert produce.returncode == 0, produce.stderr
        assert sorted(int(r.value or b"") for r in read_back(bootstrap_servers, "dist-cli")) == list(range(1000))
    finally:
        broker.terminate()
        broker.wait(timeout=30)
    assert broker.returncode == 0
