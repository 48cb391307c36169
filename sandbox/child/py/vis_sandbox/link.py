"""The child's side of its link to the host: JSON lines on the socket (see
sandbox/protocol), SIGINT held back while a message is written, and the
session's stdout and stderr sent as "out" events (or kept, while the
snapshot is restored, for the restart notice).
"""

# _signal is what signal wraps: signal's import costs enum's
import _signal as signal

# Locks and the flusher thread on _thread: threading imports functools and
# so collections, milliseconds a new session's first block would wait for.
import _thread
import io
import os
import time

from vis_sandbox import wire

CHUNK = 64 << 10  # protocol.OutChunk: the largest "out" event
MAX_LINE = 16 << 20  # protocol.MaxChildLine: the host replaces a child that sends more
MAX_STRING = 256 << 10  # protocol.MaxChildString: the characters of a result's string
FLUSH_AFTER = 0.05  # seconds printed output may wait before it is sent
CAPTURE_LIMIT = 64 << 10  # characters of what restoring prints that are kept

_MAIN_THREAD = _thread.get_ident()  # the driver imports this module on the main thread
# os.write as it was: the session's (driver.session_write) sends through Output
_os_write = os.write


class Link:
    """The socket to the host: JSON lines, sent whole even when SIGINT
    arrives mid-write (the handler defers the interrupt, see Interrupts)."""

    # Plain file descriptor I/O: the socket module's import costs more than
    # the whole link needs.
    def __init__(self, fd, interrupts):
        self.fd = fd
        self.rfile = open(fd, "rb", buffering=1 << 16, closefd=False)
        self.lock = _thread.allocate_lock()
        self.interrupts = interrupts

    def send(self, msg):
        data = (wire.dumps(msg) + "\n").encode("utf-8", "surrogateescape")
        if len(data) > MAX_LINE:
            # Its long strings first (a name a block made 20 MB long, in a
            # rewind's notice or a defs listing), then the whole answer.
            data = (wire.dumps(_clipped(msg)) + "\n").encode("utf-8", "surrogateescape")
        if len(data) > MAX_LINE:
            data = (wire.dumps(_within(msg, len(data))) + "\n").encode("utf-8", "surrogateescape")
        with self.interrupts.deferred(), self.lock:
            view = memoryview(data)
            while view:
                view = view[_os_write(self.fd, view):]

    def receive(self):
        while True:
            try:
                line = self.rfile.readline()
                break
            except KeyboardInterrupt:
                continue  # an interrupt for a block that has already ended
        if not line:
            return None
        return wire.loads(line)


MAX_TEXT_LINE = 8 << 10  # the characters of one line of a clipped text


def clip(s, limit=MAX_STRING):
    """s, its middle cut (saying how much) when it is longer than limit
    characters: a result's strings stay well within what the host reads.
    Each of its lines is cut first to MAX_TEXT_LINE: a traceback keeps
    its last line (the error) when a long line came before."""
    if not isinstance(s, str) or len(s) <= limit:
        return s
    s = "\n".join(_cut(line, MAX_TEXT_LINE, " ") for line in s.split("\n"))
    return _cut(s, limit, "\n")


def _cut(s, limit, sep):
    if len(s) <= limit:
        return s
    half = limit // 2
    return f"{s[:half]}{sep}… [{len(s) - 2 * half} characters cut] …{sep}{s[-half:]}"


def _clipped(value, depth=0):
    """value with every string in it (keys too) clipped (see clip)."""
    if isinstance(value, str):
        return clip(value)
    if depth > 32:
        return value
    if isinstance(value, dict):
        return {clip(k) if isinstance(k, str) else k: _clipped(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clipped(v, depth + 1) for v in value]
    return value


def _within(msg, size):
    """What is sent in place of msg, whose line of size bytes is more than
    the host reads (it would replace this process): a result keeps its
    numbers and flags with an error saying so; any other answer is that
    error."""
    why = f"the answer was {size >> 20} MiB, over the {MAX_LINE >> 20} MiB one message to the host may hold"
    result = msg.get("result")
    if msg.get("ev") == "result" and isinstance(result, dict):
        kept = {k: v for k, v in result.items() if isinstance(v, (bool, int)) or isinstance(v, str) and len(v) < 4096}
        kept["error"] = {"type": "SandboxError", "message": why, "line": 0, "column": 0, "excerpt": "",
                         "traceback": f"SandboxError: {why}\n"}
        return {"ev": "result", "result": kept}
    return {"ev": "error", "message": why}


class Interrupts:
    """SIGINT while a block runs is KeyboardInterrupt; between blocks, and
    while a message is being written, it is held back (a half-written
    message would break the link)."""

    def __init__(self):
        self.in_block = False
        self.deferring = 0
        self.pending = False

    def handler(self, signum, frame):
        if not self.in_block:
            return
        if self.deferring:
            self.pending = True
            return
        raise KeyboardInterrupt

    def install(self):
        signal.signal(signal.SIGINT, self.handler)

    def deferred(self):
        return _Deferred(self)


class _Deferred:
    __slots__ = ("owner", "main")

    def __init__(self, owner):
        self.owner = owner
        self.main = _thread.get_ident() == _MAIN_THREAD

    def __enter__(self):
        if self.main:
            self.owner.deferring += 1

    def __exit__(self, *exc):
        if not self.main:
            return
        self.owner.deferring -= 1
        if not self.owner.deferring and self.owner.pending:
            self.owner.pending = False
            if self.owner.in_block and exc[0] is None:
                raise KeyboardInterrupt


class _TextSink(io.TextIOBase):
    """What sys.stdout and sys.stderr say of themselves in a session: a
    UTF-8, strict, writable stream that is not a terminal."""

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "strict"

    def writable(self):
        return True

    def isatty(self):
        return False


class Output(_TextSink):
    """sys.stdout / sys.stderr of the session: text goes to the host in
    chunks, at the latest FLUSH_AFTER seconds after it was printed. A line
    printed after a quiet spell goes at once: the block may next get stuck
    in C code, holding the GIL the flusher thread needs, and output printed
    before a retire must not be lost."""

    def __init__(self, link, stream, flusher):
        self.link = link
        self.stream = stream
        self.flusher = flusher
        self.parts = []
        self.size = 0
        self.sent = 0.0  # time.monotonic() of the last send
        self.lock = _thread.RLock()

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if not s:
            return 0
        with self.lock:
            self.parts.append(s)
            self.size += len(s)
            if self.size >= CHUNK or (s[-1] == "\n" and time.monotonic() - self.sent >= FLUSH_AFTER):
                self._send()
            elif len(self.parts) == 1:
                self.flusher.wake()
        return len(s)

    def flush(self):
        with self.lock:
            self._send()

    def _send(self):
        if not self.parts:
            return
        data = "".join(self.parts)
        self.parts, self.size = [], 0
        self.sent = time.monotonic()
        for i in range(0, len(data), CHUNK):
            self.link.send({"ev": "out", "stream": self.stream, "data": data[i:i + CHUNK]})


class Captured:
    """What restoring printed, stdout and stderr in one text, in order: the
    first CAPTURE_LIMIT characters, and how many lines came after them."""

    def __init__(self):
        self.parts = []
        self.size = 0
        self.more_lines = 0
        self.open_line = None  # whether the kept text ends in half a line, once known

    def add(self, s):
        room = CAPTURE_LIMIT - self.size
        if room > 0:
            self.parts.append(s[:room])
            self.size += min(room, len(s))
            s = s[room:]
        if not s:
            return
        n = s.count("\n")
        if self.open_line is None:  # the first text dropped
            self.open_line = bool(self.parts) and not self.parts[-1].endswith("\n")
        if self.open_line and n:
            n -= 1  # this newline ends the line the kept text ends in
            self.open_line = False
        self.more_lines += n

    def text(self):
        return "".join(self.parts)


class Capture(_TextSink):
    """sys.stdout / sys.stderr while the snapshot is restored: what the
    restored code prints (warnings too) goes to captured, for the restart
    notice; nothing reaches the host before the child is ready. Afterwards
    it writes to target, the session's output: a logging handler or a
    thread that kept it still prints."""

    def __init__(self, captured):
        self.captured = captured  # shared by stdout and stderr
        self.target = None

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        target = self.target
        if target is not None:
            return target.write(s)
        self.captured.add(s)
        return len(s)

    def flush(self):
        if self.target is not None:
            self.target.flush()


class Flusher:
    """A thread that sends printed output that has waited FLUSH_AFTER, so a
    block that prints and then computes is seen printing."""

    def __init__(self):
        # held while there is nothing to send: wake() releases it
        self.woken = _thread.allocate_lock()
        self.woken.acquire()
        self.outputs = ()

    def start(self, outputs):
        self.outputs = outputs
        _thread.start_new_thread(self._loop, ())

    def wake(self):
        try:
            self.woken.release()
        except RuntimeError:
            pass  # woken already

    def _loop(self):
        while True:
            self.woken.acquire()
            time.sleep(FLUSH_AFTER)
            self.woken.acquire(False)  # a wake meanwhile is served now
            for out in self.outputs:
                try:
                    out.flush()
                except Exception:
                    pass
