"""Every ```python block of README.md and docs/guide/*.md runs as shown.

The blocks of one page run in order in one namespace, as a reader types them into one
session: a later block may use what an earlier one defined. Each block is written to a file
of its own first (dpjit and the disk cache read a function's source). A block that is
deliberately not a program carries `<!-- not-a-program: reason -->` on the line before its
fence and is skipped with that reason. The blocks must run on a machine without a GPU (the
default device is then the CPU), in a few seconds each.
"""

import pathlib
import re

import pytest

from tests.kapi_testing import devices_or_skip

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
_FENCE = re.compile(r"^```python\s*$")
_SKIP = re.compile(r"^<!--\s*not-a-program:\s*(.+?)\s*-->\s*$")


def _blocks(page: pathlib.Path):
    """[(line of the fence, source, skip reason or None)] of a page's python blocks."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        if _FENCE.match(lines[i]):
            start = i
            i += 1
            while not lines[i].startswith("```"):
                i += 1
            skip = _SKIP.match(lines[start - 1]) if start else None
            source = "\n".join(lines[start + 1 : i]) + "\n"
            out.append((start + 1, source, skip.group(1) if skip else None))
        i += 1
    return out


BLOCKS = [(page, *b) for page in PAGES for b in _blocks(page)]
# Packages pages use that requirements.txt installs but a GPU host may lack: a block needing
# one is skipped there with the reason (make test installs them, so they run in CI).
_OPTIONAL = {"dask", "distributed", "mpi4py"}
_namespaces: dict = {}  # page -> (namespace, lines of the blocks run so far)


def _run(page, line, source, tmp_dir):
    ns, done = _namespaces.setdefault(page, ({"__name__": "__main__"}, set()))
    for line0, source0, skip0 in _blocks(page):  # earlier blocks first, when run alone
        if line0 >= line:
            break
        if line0 not in done and skip0 is None:
            _run(page, line0, source0, tmp_dir)
    path = tmp_dir / f"{page.stem}_line{line}.py"
    path.write_text(source)
    exec(compile(source, str(path), "exec"), ns)
    done.add(line)


def test_the_pages_have_blocks():
    assert len(BLOCKS) >= 15 and all(page.exists() for page in PAGES)


@pytest.mark.parametrize(
    "page, line, source, skip",
    BLOCKS,
    ids=[f"{b[0].relative_to(ROOT)}:{b[1]}" for b in BLOCKS],
)
def test_block_runs(page, line, source, skip, tmp_path_factory):
    if skip is not None:
        pytest.skip(f"not a program: {skip}")
    devices_or_skip()
    try:
        _run(page, line, source, tmp_path_factory.mktemp("docs"))
    except ModuleNotFoundError as e:
        if e.name.partition(".")[0] not in _OPTIONAL:
            raise
        pytest.skip(
            f"the block imports {e.name}, which is not installed here (make test installs it)"
        )
