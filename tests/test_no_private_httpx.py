"""No module of the project reads or writes a private attribute of an httpx object (08 D79): the
library's fast transport is built, and the transport of a body told, through httpx's public API
only, so an httpx release that renames its internals cannot break the library silently.

Every module of ``mmsp_core``, ``adapters``, ``mmsp_io``, ``benchmarks`` and ``tests`` is parsed
with ``ast`` (nothing is imported or run) and these are refused:

* an attribute named like one of httpx's internals the library once relied on
  (``PRIVATE_NAMES``: ``._transport``, ``._pool``, ``._transport_for_url``, ``._ssl_context``,
  ``._mounts``), on any object but a module of the project (``mmsp_io._transport`` is ours);
* any underscore part of a path into httpx or httpcore (``httpx._utils.x``,
  ``httpx.AsyncClient._transport_for_url``), or an import of one (``from httpx._config ...``);
* an underscore attribute (``x._name``; ``__dunder__`` names are public) of a name that holds an
  httpx object in its scope: a parameter or variable called ``http``, ``http_client`` or
  ``_http`` (also as an attribute: ``self._http._x``), one annotated with an httpx type, or one
  bound to what an httpx call or ``fast_http_client()`` returns (``=``, ``:=``, ``with ... as``);
* the same through ``getattr``, ``setattr``, ``hasattr`` or ``delattr`` with a literal name.

The library's own objects (``Http11Transport``, ``ResponseBody``, ``AutoLLMClient``) are not
httpx's: their private attributes are not refused here. ``test_each_form_is_caught`` shows each
form caught, and the forms that must pass, passing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
#: The project's packages and folders scanned, each holding modules.
SCANNED: Final = ("mmsp_core", "adapters", "mmsp_io", "benchmarks", "tests")
#: httpx internals the library once relied on, refused on any object.
PRIVATE_NAMES: Final = frozenset(
    {"_transport", "_pool", "_transport_for_url", "_ssl_context", "_mounts"})
#: The modules whose underscore parts are httpx's internals.
HTTPX_MODULES: Final = frozenset({"httpx", "httpcore"})
#: Names taken to hold an httpx client wherever they are bound.
CLIENT_NAMES: Final = frozenset({"http", "http_client", "_http"})
#: The project's own top-level packages: their underscore modules are not httpx's.
PROJECT_PACKAGES: Final = frozenset({"mmsp_core", "adapters", "mmsp_io", "benchmarks"})
#: The calls that build an httpx object besides httpx's own.
HTTPX_FACTORIES: Final = frozenset({"fast_http_client"})
_ACCESSORS: Final = frozenset({"getattr", "setattr", "hasattr", "delattr"})
_SCOPES: Final = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _root(node: ast.expr) -> str | None:
    """The name a chain of attributes and calls (``a.b().c``) starts from, if it is a plain
    name."""
    while isinstance(node, (ast.Attribute, ast.Call)):
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return node.id if isinstance(node, ast.Name) else None


def _chain(node: ast.expr) -> list[str]:
    """The attribute names of a chain, outermost last (``a.b.c``: ``["b", "c"]``)."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    return names[::-1]


def _mentions_httpx(node: ast.expr | None) -> bool:
    """Whether an annotation names an httpx type (``httpx.AsyncClient``, ``"httpx.Client"``)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return any(f"{module}." in node.value for module in HTTPX_MODULES)
    return any(isinstance(n, ast.Name) and n.id in HTTPX_MODULES for n in ast.walk(node))


def _makes_httpx(node: ast.expr | None) -> bool:
    """Whether ``node`` is a call that returns an httpx object: one of httpx's own
    (``httpx.AsyncClient(...)``), or ``fast_http_client(...)``."""
    if isinstance(node, ast.Await):
        node = node.value
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return _root(func) in HTTPX_MODULES or name in HTTPX_FACTORIES


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope``, without those of the scopes nested in it (functions, lambdas,
    classes), which are yielded themselves."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _bound(scope: ast.AST) -> set[str]:
    """The names that hold an httpx object in ``scope`` (module doc), besides ``CLIENT_NAMES``."""
    names: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = scope.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            if _mentions_httpx(argument.annotation):
                names.add(argument.arg)
    for node in _own_nodes(scope):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign) and _makes_httpx(node.value):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and (
                _makes_httpx(node.value)
                or (isinstance(node, ast.AnnAssign) and _mentions_httpx(node.annotation))):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and _makes_httpx(node.context_expr):
            targets = [node.optional_vars] if node.optional_vars is not None else []
        names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _holds_httpx(node: ast.expr, bound: set[str]) -> bool:
    """Whether ``node`` is a name (or an attribute) that holds an httpx object."""
    if isinstance(node, ast.Name):
        return node.id in bound or node.id in CLIENT_NAMES
    return isinstance(node, ast.Attribute) and node.attr in CLIENT_NAMES


def _refusal(node: ast.AST, bound: set[str]) -> str | None:
    """Why ``node`` is refused (module doc), or ``None``."""
    if isinstance(node, ast.Attribute):
        root = _root(node)
        if root in HTTPX_MODULES and any(map(_private, _chain(node))):
            return "an httpx internal"
        if node.attr in PRIVATE_NAMES and root not in PROJECT_PACKAGES:
            return f"httpx's private {node.attr}"
        if _private(node.attr) and _holds_httpx(node.value, bound):
            return f"a private attribute ({node.attr}) of an httpx object"
    elif isinstance(node, ast.Call):
        func, args = node.func, node.args
        if (isinstance(func, ast.Name) and func.id in _ACCESSORS and len(args) >= 2
                and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)):
            name = args[1].value
            if name in PRIVATE_NAMES or (_private(name) and _holds_httpx(args[0], bound)):
                return f"{func.id} of httpx's private {name}"
    elif isinstance(node, ast.ImportFrom):
        parts = (node.module or "").split(".")
        if node.level == 0 and parts[0] in HTTPX_MODULES and (
                any(map(_private, parts)) or any(_private(a.name) for a in node.names)):
            return "an import of an httpx internal"
    elif isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] in HTTPX_MODULES and any(map(_private, parts)):
                return "an import of an httpx internal"
    return None


def refusals(source: str, filename: str = "<snippet>") -> list[str]:
    """Each refused access of ``source``, as ``file:line: why: code``."""
    tree = ast.parse(source, filename)
    found: list[str] = []

    def scan(scope: ast.AST, inherited: set[str]) -> None:
        bound = inherited | _bound(scope)
        for node in _own_nodes(scope):
            if isinstance(node, _SCOPES):
                # A class body's names are not seen from its methods; a closure's are.
                scan(node, inherited if isinstance(scope, ast.ClassDef) else bound)
                continue
            why = _refusal(node, bound)
            if why is not None:
                line = getattr(node, "lineno", 0)
                found.append(f"{filename}:{line}: {why}: {ast.unparse(node)}")

    scan(tree, set())
    return sorted(set(found))


def modules() -> Iterator[Path]:
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


def test_no_module_touches_httpx_internals() -> None:
    found = [refusal for path in modules()
             for refusal in refusals(path.read_text(encoding="utf-8"),
                                     str(path.relative_to(ROOT)))]
    assert found == [], "httpx's private state is used:\n" + "\n".join(found)


def test_every_scanned_folder_has_modules() -> None:
    scanned = {path.relative_to(ROOT).parts[0] for path in modules()}
    assert scanned == set(SCANNED)
    assert Path(__file__) in set(modules())


#: Each form the scan refuses (module doc).
REFUSED: Final = {
    "write the transport": "client._transport = transport",
    "read the pool's TLS context": (
        "tls = getattr(getattr(given, '_pool', None), '_ssl_context', None)"),
    "the transport table": "client._transport_for_url(url)",
    "the mounts": "for pattern in client._mounts: pass",
    "an httpx module's internal": "httpx._utils.get_environment_proxies()",
    "a class's private method": "httpx.AsyncClient._transport_for_url",
    "httpcore's internal": "httpcore._async.http11",
    "import from a private module": "from httpx._config import create_ssl_context",
    "import a private name": "from httpx import _utils",
    "import a private module": "import httpx._client",
    "a variable bound to a client": "c = httpx.AsyncClient()\nc._state",
    "an annotated variable": "c: httpx.AsyncClient = make()\nc._state",
    "a with target": (
        "async def f():\n    async with httpx.AsyncClient() as c:\n        return c._state"),
    "the walrus": "if (c := httpx.Client()):\n    c._state",
    "a fast client": "c = fast_http_client()\nc._timeout",
    "an awaited factory": "async def f():\n    t = await httpx.AsyncClient().get(u)\n    t._x",
    "an http_client parameter": "def f(http_client):\n    return http_client._timeout",
    "an http parameter": "def f(http):\n    return http._base_url",
    "an annotated parameter": "def f(x: httpx.AsyncClient):\n    return x._timeout",
    "a string annotation": "def f(x: 'httpx.Response'):\n    return x._content",
    "the client's attribute": "self._http._base_url",
    "setattr": "setattr(c, '_transport', t)",
    "hasattr on a client": "def f(http_client):\n    return hasattr(http_client, '_state')",
    "a closure": "def f():\n    c = httpx.Client()\n    def g():\n        return c._state\n",
}

#: Forms the scan lets pass: the library's own objects, dunders, another scope's name.
PASSED: Final = {
    "the library's response body": "self._owner._release(connection, reuse=True)",
    "the library's pool": "transport._idle.values()",
    "the library's client": "client = AutoLLMClient('m')\nclient._http",
    "a project module": "mmsp_io._transport.Http11Transport\nfrom mmsp_io import _transport",
    "a dunder": "response.stream.__aiter__()\nhttp.__aenter__()",
    "httpx's public API": "httpx.AsyncClient(transport=t).build_request('GET', u)",
    "another function's name": (
        "def f():\n    c = httpx.AsyncClient()\ndef g(c):\n    return c._history\n"),
    "a class body's name": (
        "class A:\n    c = httpx.Client()\n    def g(self, c):\n        return c._x\n"),
}


@pytest.mark.parametrize("source", REFUSED.values(), ids=REFUSED.keys())
def test_each_form_is_caught(source: str) -> None:
    assert refusals(source), source


@pytest.mark.parametrize("source", PASSED.values(), ids=PASSED.keys())
def test_the_librarys_own_objects_pass(source: str) -> None:
    assert refusals(source) == []
