"""kapi/__init__.pyi, the stub type checkers read (kapi/__init__.py resolves names lazily, which
they cannot follow), declares exactly the public names kapi exports. `make lint` runs mypy on
user code against it (tests/typing)."""

import ast
import pathlib

import kapi

STUB = pathlib.Path(kapi.__file__).with_name("__init__.pyi")


def _stub_names() -> set[str]:
    names = set()
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            names.update(a.asname or a.name for a in node.names)
    return {n for n in names if not n.startswith("_")}


def test_stub_declares_every_public_name_and_no_other():
    public = {*kapi._EXPORTS, *kapi._SCALAR_NAMES, *kapi._SUBMODULES, "prange"}
    declared = _stub_names()
    assert not public - declared, f"exported but not in kapi/__init__.pyi: {public - declared}"
    assert not declared - public, f"in kapi/__init__.pyi but not exported: {declared - public}"


def test_package_is_marked_typed():
    assert STUB.with_name("py.typed").is_file()
