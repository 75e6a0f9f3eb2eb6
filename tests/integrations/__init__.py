"""Tests of runcontext.integrations against the real frameworks.

A package, so that its conftest does not shadow tests/conftest.py (both would be imported
as the module `conftest`).
"""
