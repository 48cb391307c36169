"""vis-agent's start-up module, imported by its sitecustomize hook.

vis-agent python's sitecustomize imports this module (from a vis-owned
folder, so CPython caches its bytecode) and calls main() with the settings
of the run as one JSON value. It runs after site has put the environment's
site-packages on sys.path and before the program's sys.path[0] is inserted.
It imports nothing beyond what CPython has already loaded, so a run pays for
what it uses only.
"""

import sys


def main(settings):
    """settings is one JSON object (bytes): roots (paths, undecodable bytes
    as lone surrogates, as os.fsdecode gives them) and tls_strict; a
    missing key keeps python's behaviour."""
    settings = _loads(settings.decode("utf-8"))
    if settings.get("roots"):
        insert_roots(settings["roots"])
    if not settings.get("tls_strict", True):
        after_import("ssl", relax_x509_strict)
    chain_sitecustomize()


class _Decoding:
    """What json's C scanner asks of its decoder."""

    strict = True
    object_hook = object_pairs_hook = parse_constant = None
    parse_float, parse_int = float, int


def _loads(text):
    """json.loads without importing json, whose import of re would cost a
    run several milliseconds: json's own C scanner, from _json."""
    try:
        from _json import make_scanner
    except ImportError:
        import json

        return json.loads(text)
    value, end = make_scanner(_Decoding)(text, 0)
    if text[end:].strip():
        raise ValueError("extra data after the settings")
    return value


def insert_roots(roots):
    """Put roots after PYTHONPATH's entries, before the standard library.

    CPython puts the standard library zip (pythonXY.zip, listed even when
    absent) first among its own entries, so everything before it came from
    PYTHONPATH.
    """
    import os

    stdlib_zip = "python{}{}.zip".format(*sys.version_info[:2])
    stdlib = os.path.dirname(os.__file__)
    at = next((i for i, p in enumerate(sys.path) if p.endswith(stdlib_zip) or p == stdlib), len(sys.path))
    new = [r for r in roots if r not in sys.path[:at]]
    sys.path[at:at] = new


class _AfterImport:
    """A finder that lets the normal finders load one module, then calls a
    function on it: the module is patched only if the program imports it."""

    def __init__(self, name, then):
        self.name = name
        self.then = then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find and find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader_exec = spec.loader.exec_module
        then = self.then

        def exec_module(module):
            loader_exec(module)
            then(module)

        spec.loader.exec_module = exec_module
        return spec


def after_import(name, then):
    if name in sys.modules:
        then(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


def relax_x509_strict(ssl):
    """python.tls_strict = false: clear ssl.VERIFY_X509_STRICT, and only it,
    wherever a context's verify flags are set (create_default_context sets
    it from CPython 3.13 on). Certificate trust and host names are still
    checked."""
    strict = getattr(ssl, "VERIFY_X509_STRICT", 0)
    flags = ssl.SSLContext.verify_flags

    def set_flags(self, value):
        flags.fset(self, value & ~strict)

    ssl.SSLContext.verify_flags = property(flags.fget, set_flags, doc=flags.__doc__)


def chain_sitecustomize():
    """This hook took the name sitecustomize; run the real one, if any, as
    site would have, and leave it in sys.modules."""
    import _frozen_importlib
    import _frozen_importlib_external

    spec = _frozen_importlib_external.PathFinder.find_spec("sitecustomize")
    if spec is None:
        return
    module = _frozen_importlib.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)
