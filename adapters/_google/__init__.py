"""What the Google protocols share (google-genai, google-interactions, google-embedding).

Each Google protocol package imports these modules; none imports another protocol package
(``tests/adapters/test_protocol_independence.py``):

* ``shapes``: Google's error bodies, in-stream errors and model list (04 §5, 08 D4, D19);
* ``thinking``: the model modes and thinking-level rows of both generation clients (05 §1,
  §2.3);
* ``script``: the two-speaker script of a speech request (01 §3, 05 §1).

Pure: no I/O.
"""
