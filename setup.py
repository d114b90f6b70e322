"""The optional compiled build (docs/architecture.md, "The compiled build").

``MMSP_COMPILE=1 pip install --no-build-isolation -e .`` compiles the modules that run once per
streamed event with mypyc, mypy's compiler (``mypy`` must be installed, and a C compiler): the
SSE decoder, the finalizer, the pipeline, the machine kernel and the stream machines. Without
``MMSP_COMPILE`` the package is pure Python, as everywhere else in the project; both builds
behave the same (``tests/test_compiled.py`` runs the parser and adapter tests on a compiled
copy). Every other setting is in ``pyproject.toml``.
"""

from __future__ import annotations

import os

from setuptools import setup

#: The modules on the per-event path, in the order mypyc is given them.
COMPILED = [
    "mmsp_core/sse.py",
    "mmsp_core/kinds.py",
    "mmsp_core/_construct.py",
    "mmsp_core/items.py",
    "mmsp_core/pipeline.py",
    "mmsp_core/jsonlib.py",
    "mmsp_core/grammar.py",
    "mmsp_core/_wire_read.py",
    "mmsp_core/wire.py",
    "adapters/_json.py",
    "adapters/_table.py",
    "adapters/anthropic_messages/machine.py",
    "adapters/openai_chat/machine.py",
    "adapters/openai_responses/machine.py",
    "adapters/google_genai/machine.py",
    "adapters/google_interactions/machine.py",
    "adapters/mmsp/machine.py",
]


def _extensions() -> list[object]:
    if not os.environ.get("MMSP_COMPILE"):
        return []
    from mypyc.build import mypycify

    # orjson is optional: type-checked as unknown where it is not installed.
    # MMSP_COMPILE_OPT_LEVEL: the C compiler's optimisation level (default 3); the compiled
    # build's test uses 0, which compiles twice as fast into code of the same behaviour.
    opt_level = os.environ.get("MMSP_COMPILE_OPT_LEVEL", "3")
    return list(mypycify(["--ignore-missing-imports", *COMPILED], opt_level=opt_level))


setup(ext_modules=_extensions())
