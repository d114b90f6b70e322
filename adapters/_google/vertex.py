"""Vertex AI's request paths, shared by the Google protocols that Vertex serves (04 §4, 08 D72).

Vertex names the project and the location in the path: ``/<version>/projects/<project>/
locations/<location>/publishers/google/models/<model>:<method>``; the location is ``global``
(04 §4) on Vertex's global host, and the region on a regional host
(``<region>-aiplatform.googleapis.com``, which serves its own region only). The project and
the location are percent-encoded as one path segment each, as the model id is.
"""

from __future__ import annotations

import urllib.parse
from typing import Final

__all__ = ["BAD_TOKEN_MESSAGE", "LOCATION", "route_pattern", "vertex_path"]

#: The Vertex AI location of every request (04 §4).
LOCATION: Final = "global"
#: What Vertex answers (401) to a request without a valid OAuth token.
BAD_TOKEN_MESSAGE: Final = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
    "cookie or other valid authentication credential."
)


def route_pattern(method: str) -> str:
    """The path pattern of Vertex's ``:<method>`` on any project, location and model (the
    simulator's route; a query such as ``?alt=sse`` is not part of it)."""
    return rf"/v1beta1/projects/[^/]+/locations/[^/]+/publishers/google/models/[^/:]+:{method}"


def vertex_path(api_version: str, project: str, location: str = LOCATION) -> str:
    """The path under which Vertex serves Google's models for ``project`` in ``location``,
    without the ``/models/...`` part."""
    project, location = (urllib.parse.quote(part, safe="") for part in (project, location))
    return f"/{api_version}/projects/{project}/locations/{location}/publishers/google"
