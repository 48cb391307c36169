"""The session's own packages: install() and the folder it fills.

install("pandas", "numpy>=2") asks the session's host to run the pinned uv
outside the jail; uv installs the requirements into the session's package
folder (one per CPython version, in the session's folder), which this
module puts on sys.path after the environment's site-packages: what the
environment has comes first and is never changed. The folder is read-only
to the session's code and kept across restarts; `sandbox rm` deletes it.
Its .pth files are read as site-packages' are.

It also words the one-line hints a block's error gets: which install()
brings a missing module, and which variable names a machine's own CA.
"""

import os
import sys

from vis_sandbox.lazy import module as _lazy
from vis_sandbox.tools import Record, call

re = _lazy("re", globals())

# The session's package folder, once start() knew it.
LAYER = ""
# The .pth files of the folder already read.
_read_pth = set()

# Import names whose distribution is named otherwise, among the common ones.
DISTRIBUTIONS = {
    "sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "pillow", "yaml": "pyyaml",
    "bs4": "beautifulsoup4", "skimage": "scikit-image", "dateutil": "python-dateutil", "attr": "attrs",
    "Crypto": "pycryptodome", "dotenv": "python-dotenv", "jwt": "pyjwt", "serial": "pyserial",
    "magic": "python-magic", "docx": "python-docx", "pptx": "python-pptx", "fitz": "pymupdf",
    "OpenSSL": "pyopenssl", "git": "gitpython", "zmq": "pyzmq", "mpl_toolkits": "matplotlib",
    "google": "protobuf", "Bio": "biopython", "jose": "python-jose", "slugify": "python-slugify",
    "umap": "umap-learn", "igraph": "python-igraph",
    "telegram": "python-telegram-bot", "websocket": "websocket-client", "MySQLdb": "mysqlclient",
    "psycopg2": "psycopg2-binary", "win32api": "pywin32", "ruamel": "ruamel.yaml", "multipart": "python-multipart",
}

# PEP 440 versions, which uv reads; a legacy version in the environment
# is left out of the pins.
_VERSION = r"(?i)^v?(\d+!)?\d+(\.\d+)*([-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?" \
           r"(-\d+|[-_.]?(post|rev|r)[-_.]?\d*)?([-_.]?dev[-_.]?\d*)?(\+[a-z0-9]+([-_.][a-z0-9]+)*)?$"


def start(layer):
    """Puts the session's package folder on sys.path, after everything the
    environment put there, and reads its .pth files. Quiet: what a .pth
    prints is dropped (a start prints nothing)."""
    global LAYER
    if not layer:
        return
    LAYER = layer
    if layer not in sys.path:
        sys.path.append(layer)
    # The processes the session starts (subprocess.run([sys.executable,
    # ...]), multiprocessing's spawn) import what install() added too.
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if layer not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(paths + [layer])
    # And find its python and the scripts of what it installed first.
    bins = [os.path.dirname(sys.executable), os.path.join(layer, "bin")] if sys.executable else []
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in bins]
    os.environ["PATH"] = os.pathsep.join(bins + path)
    _read_new_pth()


def _read_new_pth():
    """Reads the .pth files of the folder not read yet (as site does for
    site-packages: path lines added, import lines run, in the jail); what
    they print is returned, not shown."""
    import io
    import site

    try:
        names = sorted(n for n in os.listdir(LAYER) if n.endswith(".pth") and n not in _read_pth)
    except OSError:
        return ""
    if not names:
        return ""
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = buf = io.StringIO()
    try:
        for name in names:
            _read_pth.add(name)
            try:
                site.addpackage(LAYER, name, None)
            except Exception as e:  # noqa: BLE001 (a broken .pth is reported, not fatal)
                print(f"{name}: {type(e).__name__}: {e}")
    finally:
        sys.stdout, sys.stderr = saved
    return buf.getvalue()


def _inside(path, folder):
    return bool(folder) and (path == folder or path.startswith(folder.rstrip(os.sep) + os.sep))


def base_pins():
    """name==version of each distribution the session imports from outside
    its package folder (the first of a name on sys.path wins), so that what
    install() adds agrees with what is already there."""
    from importlib import metadata

    paths = [p for p in sys.path if p and not _inside(p, LAYER) and os.path.isdir(p)]
    version = re.compile(_VERSION)
    pins = {}
    for dist in metadata.distributions(path=paths):
        try:
            name, ver = dist.metadata["Name"], dist.version
        except Exception:  # noqa: BLE001 (a broken dist-info is left out)
            continue
        if not name or not ver or not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", name) or not version.match(ver):
            continue
        pins.setdefault(re.sub(r"[-_.]+", "-", name).lower(), f"{name}=={ver}")
    return sorted(pins.values())


def install(*specs, requirements=None, project=None, extras=()):
    """Install packages into this session: install("pandas", "numpy>=2").

    Each argument is one requirement (a name, extras, version specifiers,
    markers); paths, URLs and options are refused. requirements= names a
    requirements file (requirements.txt) whose requirement lines (and those
    of the files its -r lines name) are installed too; project= a project
    folder (or its pyproject.toml) whose [project] dependencies are, with
    those of extras= (optional dependencies or dependency groups). The
    files are read here, in the jail; the host gets requirements only.
    The project itself is not installed (import it from the workspace).
    The session's host
    runs the pinned uv outside the jail, from the user's index, wheels only
    unless the user's config allows builds; the packages go into the
    session's own folder, after the environment's (which is never changed
    and whose versions are kept), and stay across restarts. Import them
    right away. Returns what was installed, and how long it took."""
    import importlib

    for s in specs:
        if not isinstance(s, str):
            raise TypeError(f"install() takes requirements as str, not {type(s).__name__}")
    specs = list(specs)
    if requirements is not None:
        specs += requirements_file(requirements)
    if project is not None:
        specs += project_requirements(project, extras)
    elif extras:
        raise TypeError('extras= goes with project=, as in install(project=".", extras=["tests"])')
    if not specs:
        raise TypeError('install() takes one or more requirements, such as install("pandas", "numpy>=2"), '
                        'or requirements="requirements.txt"')
    args = {"specs": specs, "base": base_pins()}
    try:
        result, _ = call("install", args)
    except KeyboardInterrupt:
        # The host stops uv when the next call comes: make it now.
        try:
            call("session")
        except BaseException:  # noqa: BLE001, S110 (the interrupt is what the block gets)
            pass
        raise
    importlib.invalidate_caches()
    notes = _read_new_pth()
    r = Installed(result or {})
    if notes:
        dict.__setitem__(r, "pth_output", notes)
    return r


# How deep -r lines nest, and how many requirements one file may bring.
MAX_INCLUDES = 8
MAX_FILE_SPECS = 500


def requirements_file(path, _depth=0, _seen=None):
    """The requirements of a pip requirements file, read here (in the
    jail): its requirement lines, without comments, hashes and line
    continuations, and those of the files its -r lines name (relative to
    it). Other options (an index, -e, a path) are refused naming the line:
    the index is the user's to choose, and the host installs requirements
    only."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"requirements= names a file, not {type(path).__name__}")
    path = os.fspath(path)
    seen = set() if _seen is None else _seen
    real = os.path.realpath(path)
    if real in seen or _depth > MAX_INCLUDES:
        raise ValueError(f"{path}: -r lines nest more than {MAX_INCLUDES} deep or in a circle")
    seen.add(real)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    specs = []
    logical, first = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not logical:
            first = number
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        line, logical = (logical + line), ""
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not line:
            continue
        where = f"{path}:{first}"
        option, _, rest = line.partition(" ")
        if option in ("-r", "--requirement") or option.startswith("--requirement="):
            name = rest.strip() or option.partition("=")[2]
            specs += requirements_file(os.path.join(os.path.dirname(path), name), _depth + 1, seen)
        elif option in ("-c", "--constraint") or option.startswith("--constraint="):
            continue  # versions to keep if needed, not packages to install
        elif line.startswith("-"):
            raise ValueError(f"{where}: {option} is not taken by install(): requirements only "
                             "(the index is the user's setting; a path or -e is not installed from the index)")
        else:
            specs.append(re.sub(r"\s--hash[=\s]\S+", "", line).strip())
        if len(specs) > MAX_FILE_SPECS:
            raise ValueError(f"{path}: more than {MAX_FILE_SPECS} requirements")
    return specs


# How deep a project's extras may name its own other extras.
MAX_EXTRA_DEPTH = 10


def _toml_loads():
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            raise ImportError("install(project=...) reads pyproject.toml with tomllib (CPython 3.11+) or tomli: "
                              'install("tomli") first') from None
    return tomllib.loads


def _pyproject(path):
    """(file, its TOML, its [project] table) of the pyproject.toml at path
    (a folder or the file)."""
    path = os.fspath(path)
    file = path if os.path.basename(path) == "pyproject.toml" else os.path.join(path, "pyproject.toml")
    with open(file, "rb") as f:
        data = f.read((1 << 20) + 1)
    if len(data) > 1 << 20:
        raise ValueError(f"{file}: over 1 MiB, not read")
    doc = _toml_loads()(data.decode("utf-8"))
    proj = doc.get("project") if isinstance(doc.get("project"), dict) else {}
    if "dependencies" in (proj.get("dynamic") or []):
        raise ValueError(f"{file}: the project's dependencies are dynamic (its build backend computes them): "
                         "name them in install(...)")
    return file, doc, proj


def project_requirements(path, extras=()):
    """The requirements a project declares in its pyproject.toml (path: its
    folder or the file): [project] dependencies, and for each of extras its
    optional dependencies or dependency group (PEP 735), an extra that
    names the project itself followed; never the project itself."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"project= names a folder or its pyproject.toml, not {type(path).__name__}")
    if isinstance(extras, str):
        extras = [extras]
    file, doc, proj = _pyproject(path)
    own = _normal(str(proj.get("name") or ""))
    optional = {_normal(k): v for k, v in (proj.get("optional-dependencies") or {}).items()}
    groups = {_normal(k): v for k, v in (doc.get("dependency-groups") or {}).items()}
    found = _Declared(file, own, optional, groups)
    found.take(proj.get("dependencies") or [], 0)
    for e in extras:
        if not isinstance(e, str):
            raise TypeError(f"extras are names (str), not {type(e).__name__}")
        found.extra(e, 0)
    return found.specs


class _Declared:
    """The requirements of a pyproject.toml (file) as they are collected:
    specs, the extras and groups followed so far (done), an extra that
    names the project itself (own) followed."""

    def __init__(self, file, own, optional, groups):
        self.file, self.own, self.optional, self.groups = file, own, optional, groups
        self.specs, self.done = [], set()

    def take(self, reqs, depth):
        for req in reqs if isinstance(reqs, list) else []:
            if isinstance(req, dict) and isinstance(req.get("include-group"), str):
                self.extra(req["include-group"], depth + 1)
            elif isinstance(req, str):
                m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", req)
                if m and self.own and _normal(m.group(1)) == self.own:
                    for e in (m.group(2) or "").split(","):
                        if e.strip():
                            self.extra(e.strip(), depth + 1)
                else:
                    self.specs.append(req)

    def extra(self, name, depth):
        key = _normal(name)
        if key in self.done:
            return
        if depth > MAX_EXTRA_DEPTH:
            raise ValueError(f"{self.file}: extras name each other more than {MAX_EXTRA_DEPTH} deep")
        self.done.add(key)
        if key in self.optional:
            self.take(self.optional[key], depth)
        elif key in self.groups:
            self.take(self.groups[key], depth)
        else:
            known = sorted(set(self.optional) | set(self.groups))
            raise ValueError(f"{self.file}: no optional dependencies or dependency group {name!r}"
                             + (f" (it has: {', '.join(known)})" if known else ""))


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class Installed(Record):
    """install()'s result: installed (name, version records), in_base (the
    ones the environment has, which come first), removed (replaced
    versions), seconds, folder, output (the end of uv's output)."""

    __slots__ = ()

    def _kind(self):
        return "install result"

    def __repr__(self):
        g = self.get
        new = g("installed") or []
        base = g("in_base") or []
        secs = f"{g('seconds') or 0:.1f} s"
        if new:
            text = f"installed {len(new)} package{'s' if len(new) != 1 else ''} in {secs}: " + \
                   ", ".join(f"{d['name']} {d['version']}" for d in new)
        else:
            text = f"nothing new to install ({secs}): the requirements are met"
        if base:
            text += "; from the environment: " + ", ".join(f"{d['name']} {d['version']}" for d in base)
        removed = g("removed") or []
        if removed:
            text += "; replaced: " + ", ".join(f"{d['name']} {d['version']}" for d in removed)
        return text

    __str__ = __repr__


def hint(e):
    """A line for a block's error that says the way out, or ""."""
    if isinstance(e, ModuleNotFoundError) and getattr(e, "name", None):
        top = e.name.partition(".")[0]
        if top in sys.modules and top != e.name:
            return ""  # a module missing inside a package that is there
        dist = DISTRIBUTIONS.get(top, top.replace("_", "-"))
        return f'install("{dist}") installs it into this session (no restart needed)'
    if _tls_failure(e):
        return ("TLS certificate verification failed: if this machine uses its own CA, start the session from a shell "
                "where SSL_CERT_FILE (or SSL_CERT_DIR) names it (`vis-agent sandbox stop` first; the session keeps those "
                "variables)")
    return ""


def _tls_failure(e):
    """Whether e, or an exception it came from, is a failed certificate
    verification (ssl's own, or wrapped by urllib, requests, httpx, ...)."""
    seen = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if x is None or id(x) in seen or len(seen) > 50:
            continue
        seen.add(id(x))
        ssl = sys.modules.get("ssl")
        if ssl is not None and isinstance(x, ssl.SSLCertVerificationError):
            return True
        try:
            if "CERTIFICATE_VERIFY_FAILED" in str(x):
                return True
        except Exception:  # noqa: BLE001, S110 (a __str__ that fails says nothing)
            pass
        stack.extend((getattr(x, "__cause__", None), getattr(x, "__context__", None), getattr(x, "reason", None)))
        stack.extend(a for a in getattr(x, "args", ()) if isinstance(a, BaseException))
    return False
