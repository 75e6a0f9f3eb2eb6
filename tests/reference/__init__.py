"""Pure-Python reference implementations (executable specification).

These modules are deliberately slow and simple. They are written from the
specification text only, independently of the Rust core, and are used by the
tests to cross-check it and to generate the conformance vectors in
``docs/vectors/``.
"""
