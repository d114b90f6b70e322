"""Per-client data of the Gemini embeddings protocol (08 D63, D64, D72).

Both Google client types send the same ``batchEmbedContents`` call on the Gemini API, so the
rows carry no profile (``None``). On Vertex AI (google-genai, 08 D72) the call is
``:embedContent`` under the project Vertex's path names: ``EmbeddingProfile`` says which
project, and ``adapters.on_vertex`` puts it on a call once the credentials are read.
"""

from __future__ import annotations

from typing import final

import attrs

__all__ = ["EmbeddingProfile"]


@final
@attrs.frozen
class EmbeddingProfile:
    """An embedding call on Vertex AI: ``POST /v1beta1/projects/<project>/locations/<location>/
    publishers/google/models/<model>:embedContent`` (04 §4)."""

    vertex_project: str
    #: ``global``, or a regional host's region.
    vertex_location: str = "global"
