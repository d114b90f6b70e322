"""Package attributes loaded on first use (PEP 562), for ``mmsp_core`` and ``mmsp_io``.

A package whose public names include some that cost a lot to import (``mmsp_io``'s client
brings httpx and every protocol package; ``mmsp_core``'s pipeline machinery is not needed to
build values) lists them with the module that defines each, and installs the two functions
``on_first_use`` returns as its ``__getattr__`` and ``__dir__``. The first look-up of such a
name imports its module and stores the value in the package, so later look-ups are ordinary
(docs/architecture.md "Import cost"). The package imports the same names under
``TYPE_CHECKING``, so type checkers see them as ordinary re-exports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping

__all__ = ["on_first_use"]


def on_first_use(
    namespace: MutableMapping[str, object], modules: Mapping[str, str], public: Iterable[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    ``modules`` maps each deferred name to the absolute name of the module defining it;
    ``public`` is the package's ``__all__``, which ``__dir__`` lists whether loaded or not.
    The ``__getattr__`` raises ``AttributeError`` for a name that is neither.
    """
    package = str(namespace["__name__"])
    listed = frozenset(public)

    def __getattr__(name: str) -> object:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *listed})

    return __getattr__, __dir__
