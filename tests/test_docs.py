"""Every example in ``docs/*.md`` runs, and prints what the page says it prints.

The conventions (stated at the top of each page):

* The blocks of one page run in order, in a fresh temporary working directory that holds a copy of every bundled
  model (``micronn/models/*.tflite``), so ``"person_detect.tflite"`` is a path there.
* ```` ```python ```` blocks share one namespace per page. A ```` ```text ```` block right after one is what it
  prints (stdout).
* ```` ```console ```` blocks hold ``$ micronn ...`` lines, run through ``micronn.cli.main`` (shlex-split, ``#``
  starts a comment); a command must exit 0 unless its comment says ``exits N``. The lines after a command, up to the
  next ``$`` line, are what it prints (stdout and stderr, in order).
* Expected output: a line ``...`` stands for any number of lines, ``...`` inside a line for any text; trailing
  spaces are ignored. A block without expected output is only run.
* ``<!-- doctest: needs MODULE -->`` right before a block skips it (with the reason) when MODULE cannot be imported.
  Shell commands the tests cannot run (installs, long benchmarks) go in ```` ```sh ```` blocks, which are not run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from micronn import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MODELS = ROOT / "micronn" / "models"
PAGES = sorted(DOCS.glob("*.md"))
NEEDS = re.compile(r"<!--\s*doctest:\s*needs\s+([\w.]+)\s*-->")
EXITS = re.compile(r"#.*\bexits\s+(\d+)")


@dataclass
class Block:
    lang: str
    body: str
    line: int  # of the opening fence, 1-based
    needs: str | None = None
    expected: str | None = None  # a python block's output: the text block right after it


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, with their markers and expected outputs."""
    lines = page.read_text().splitlines()
    out: list[Block] = []
    i, previous = 0, ""  # previous: the last non-blank line outside a block since the last block ("" if none)
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            lang, start, body = line[3:].strip().split(" ")[0], i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            assert i < len(lines), f"{page.name}:{start}: unclosed code fence"
            needs = NEEDS.search(previous)
            block = Block(lang, "\n".join(body) + "\n", start, needs.group(1) if needs else None)
            if lang == "text" and not previous and out and out[-1].lang == "python" and out[-1].expected is None:
                out[-1].expected = block.body
            else:
                out.append(block)
            previous = ""
        elif line.strip():
            previous = line
        i += 1
    return out


def _pattern(expected: str) -> re.Pattern[str]:
    parts = []
    for line in expected.rstrip("\n").splitlines():
        line = line.rstrip()
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\n]*".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def check_output(actual: str, expected: str, where: str) -> None:
    text = "".join(line.rstrip() + "\n" for line in actual.splitlines())
    if not _pattern(expected).fullmatch(text):
        raise AssertionError(f"{where}: output differs\n--- expected\n{expected}--- actual\n{text}")


def console(body: str, where: str) -> None:
    """Run every ``$ micronn`` line of a console block and compare what follows it."""
    commands: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            assert commands, f"{where}: output before any command: {line!r}"
            commands[-1][1].append(line)
    for command, expected in commands:
        argv = shlex.split(command, comments=True)
        assert argv and argv[0] == "micronn", f"{where}: console blocks hold only micronn commands: {command!r}"
        wanted = EXITS.search(command)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            rc = cli.main(argv[1:])
        assert rc == (int(wanted.group(1)) if wanted else 0), f"{where}: {command!r} exited {rc}:\n{buf.getvalue()}"
        if any(line.strip() for line in expected):
            check_output(buf.getvalue(), "\n".join(expected) + "\n", f"{where}: {command!r}")


def _id(page: Path) -> str:
    return page.name


def test_every_page_is_found() -> None:
    names = {p.name for p in PAGES}
    assert {"README.md", "cli.md", "python-api.md", "memory.md", "tinyseg.md", "devices.md",
            "conformance.md"} <= names


def test_matcher() -> None:
    check_output("a 1\nb\nc\nd 2\n", "a ...\n...\nd 2\n", "matcher")
    with pytest.raises(AssertionError):
        check_output("a 1\nb\n", "a 2\n...\n", "matcher")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for model in MODELS.glob("*.tflite"):
        shutil.copy(model, tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs.{page.stem}"}
    skipped: list[str] = []
    ran = 0
    for b in blocks(page):
        where = f"{page.name}:{b.line}"
        if b.lang not in ("python", "console"):
            continue
        if b.needs is not None and importlib.util.find_spec(b.needs) is None:
            skipped.append(f"{where} needs {b.needs}")
            continue
        if b.lang == "console":
            console(b.body, where)
        else:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(b.body, where, "exec"), namespace)  # noqa: S102 - the docs' own examples
            if b.expected is not None:
                check_output(buf.getvalue(), b.expected, where)
        ran += 1
    assert ran or skipped, f"{page.name} has no runnable example"
    if skipped:
        pytest.skip(f"ran {ran} blocks; skipped {len(skipped)}: " + "; ".join(skipped))
