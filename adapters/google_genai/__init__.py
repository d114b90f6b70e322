"""Gemini generateContent: the wire protocol of ``google-genai`` (spec 04 §1, §4; 05; 06 §4).

``thinking`` holds the Gemini model modes and thinking levels both Google client types share
(05 §2.3); ``shapes`` Google's error bodies and model list, shared the same way.
"""
