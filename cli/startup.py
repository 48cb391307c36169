"""vis-agent's start-up module, imported by its sitecustomize hook.

vis-agent python's sitecustomize imports this module (from a vis-owned
folder, so CPython caches its bytecode) and calls main(...) with the
settings of the run. It runs after site has put the environment's
site-packages on sys.path and before the program's sys.path[0] is inserted.
It imports nothing beyond what CPython has already loaded, so a run pays for
what it uses only.
"""

import sys


def main(roots=(), pip_shared=None, pip_home=None, pip_python=None, tls_strict=True, no_network=False):
    if roots:
        insert_roots([_fsdecode(r) for r in roots])
    if pip_shared is not None:
        try:
            pip_on_shared(_fsdecode(pip_shared), _fsdecode(pip_home), _fsdecode(pip_python))
        except BaseException as e:
            # pip must not run unrouted: it would change the installation's
            # own packages.
            sys.stderr.write("vis-agent python: cannot route pip to the shared packages folder: %r\n" % (e,))
            sys.stderr.flush()
            import os

            os._exit(1)
    if not tls_strict:
        after_import("ssl", relax_x509_strict)
    if no_network:
        refuse_network()
    chain_sitecustomize()


def _fsdecode(b):
    # Paths arrive as bytes literals: undecodable file names survive as
    # surrogate escapes, as os.fsdecode gives them everywhere else.
    import os

    return os.fsdecode(b)


def insert_roots(roots):
    """Put roots after PYTHONPATH's entries, before the standard library.

    CPython puts the standard library zip (pythonXY.zip, listed even when
    absent) first among its own entries, so everything before it came from
    PYTHONPATH.
    """
    import os

    stdlib_zip = "python%d%d.zip" % sys.version_info[:2]
    stdlib = os.path.dirname(os.__file__)
    at = next((i for i, p in enumerate(sys.path) if p.endswith(stdlib_zip) or p == stdlib), len(sys.path))
    new = [r for r in roots if r not in sys.path[:at]]
    sys.path[at:at] = new


def pip_on_shared(shared, pip_home, python):
    """Make pip in this interpreter act on the shared packages folder alone.

    The interpreter runs outside any virtual environment: pip changes only
    what lies under sys.prefix of an environment, and the shared folder is
    shared by the environments of several CPythons, so it is under none.
    What pip sees installed is what sys.path holds: the standard library
    and the shared folder (with its .pth files), not the installation's own
    site-packages or the user's. Where it installs is the default scheme of
    sysconfig, here pointed at the shared folder as pip --target lays it
    out (scripts in bin/). Scripts start the shared environment's python,
    which sees the shared folder. pip itself comes last, from pip_home, so a
    pip installed into the shared folder wins.
    """
    import os
    import site
    import sysconfig

    site_dirs = set(site.getsitepackages())
    site_dirs.add(site.getusersitepackages())
    cut = next((i for i, p in enumerate(sys.path) if p in site_dirs), len(sys.path))
    del sys.path[cut:]
    site.addsitedir(shared)
    sys.path.append(pip_home)

    layout = {
        "purelib": shared,
        "platlib": shared,
        "scripts": os.path.join(shared, "bin"),
        "data": shared,
        "include": os.path.join(shared, "include"),
        "platinclude": os.path.join(shared, "include"),
    }
    default = sysconfig.get_default_scheme()
    get_paths = sysconfig.get_paths

    def get_shared_paths(scheme=default, vars=None, expand=True):
        # Explicit locations (pip's --target, --prefix, --user) are kept.
        # Decided before the call: sysconfig fills a vars dict it is given.
        shared_scheme = expand and not vars and scheme == default
        paths = get_paths(scheme, vars, expand)
        if shared_scheme:
            paths.update(layout)
        return paths

    sysconfig.get_paths = get_shared_paths
    sys.executable = python
    # PEP 668 protects the installation's own packages, which pip does not
    # touch here.
    if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")):
        os.environ.setdefault("PIP_BREAK_SYSTEM_PACKAGES", "1")


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


_NAME_LOOKUPS = frozenset({
    "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
    "socket.gethostbyaddr", "socket.getnameinfo",
})


def refuse_network():
    """--no-network: refuse every socket but local (AF_UNIX) ones, and every
    name lookup, through an audit hook, which also covers C extensions that
    use CPython's socket module. Child processes are not covered."""
    message = "network access is refused: vis-agent python --no-network"

    def hook(event, args):
        if event == "socket.__new__" and args[1] != 1:  # 1 is AF_UNIX
            raise PermissionError(message)
        if event in _NAME_LOOKUPS:
            raise PermissionError(message)

    sys.addaudithook(hook)


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
