"""Tests of vis_sandbox.driver, through the protocol, with the driver in a
real python process serving a socketpair as the session's child does."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

PY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Child:
    def __init__(self, folder, info=None, early=None):
        self.sock, theirs = socket.socketpair()
        self.stacks_r, stacks_w = os.pipe()
        info = json.dumps(info or {"session": {"name": "t", "workspace": folder, "access": {"is_jailed": False, "network": True}}})
        code = (f"import sys; sys.path.insert(0, {PY_DIR!r}); import vis_sandbox.driver as d; "
                f"d.serve({theirs.fileno()}, {stacks_w}, {folder!r}, {info!r})")
        self.proc = subprocess.Popen([sys.executable, "-B", "-c", code], pass_fds=(theirs.fileno(), stacks_w),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=folder)
        theirs.close()
        os.close(stacks_w)
        self.rfile = self.sock.makefile("rb")
        self.sock.settimeout(30)
        if early is not None:
            self.send(**early)  # waits in the socket while the driver starts
        self.ready = self.receive()
        self.restoring = self.ready["ev"] == "restoring"
        if self.restoring:
            self.ready = self.receive()

    def send(self, **req):
        req.setdefault("v", 1)
        self.sock.sendall((json.dumps(req) + "\n").encode())

    def receive(self):
        line = self.rfile.readline()
        if not line:
            raise EOFError("the driver closed the link")
        return json.loads(line)

    def run(self, code, **kw):
        """Runs a block; returns (printed stdout, printed stderr, notes, final event)."""
        self.send(op="run", code=code, **kw)
        return self.run_events()

    def run_events(self):
        """The events of a block already sent, as run returns them."""
        out, err, notes = [], [], []
        while True:
            ev = self.receive()
            if ev["ev"] == "out":
                (out if ev["stream"] == "stdout" else err).append(ev["data"])
            elif ev["ev"] == "note":
                notes.append(ev["data"])
            elif ev["ev"] != "running":
                return "".join(out), "".join(err), notes, ev

    def close(self):
        try:
            self.send(op="exit")
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.rfile.close()
        self.sock.close()
        os.close(self.stacks_r)


class DriverTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.child = Child(self.tmp.name)
        self.addCleanup(self.tmp.cleanup)
        self.addCleanup(lambda: self.child.close())

    def test_ready_names_the_python(self):
        self.assertEqual(self.child.ready["ev"], "ready")
        self.assertEqual(self.child.ready["line"], sys.version_info.minor)

    def test_namespace_persists_between_blocks(self):
        self.child.run("x = 20\ndef f(a):\n    return a + x\n")
        out, _, _, ev = self.child.run("print(f(1))")
        self.assertEqual(out, "21\n")
        self.assertIsNone(ev["result"]["error"])

    def test_error_shows_the_blocks_frames_only(self):
        self.child.run("def helper(n):\n    return 1 / n\n")
        _, _, _, ev = self.child.run("y = 1\nhelper(0)\n")
        err = ev["result"]["error"]
        self.assertEqual(err["type"], "ZeroDivisionError")
        self.assertEqual(err["line"], 2)
        self.assertTrue(err["excerpt"].startswith("2: helper(0)"), err["excerpt"])
        tb = err["traceback"]
        self.assertNotIn("driver.py", tb)
        self.assertIn("return 1 / n", tb)  # the helper's source line from the earlier block
        self.assertIn('File "<block 1>", line 2, in helper', tb)

    def test_output_before_an_error_is_kept(self):
        out, _, _, ev = self.child.run("print('before')\nraise ValueError('bad')")
        self.assertEqual(out, "before\n")
        self.assertEqual(ev["result"]["error"]["message"], "bad")

    def test_syntax_error_is_reported_without_running(self):
        _, _, _, ev = self.child.run("print('x'\n")
        self.assertIn("syntax", ev)
        self.assertEqual(ev["syntax"]["line"], 1)
        # The block number was not used up.
        _, _, _, ev = self.child.run("1/0")
        self.assertIn("<block 1>", ev["result"]["error"]["traceback"])

    def test_compile_check(self):
        self.child.send(op="compile", code="x = (")
        self.assertIn("syntax", self.child.receive())
        self.child.send(op="compile", code="await f()")
        self.assertNotIn("syntax", self.child.receive())

    def test_input_reads_an_empty_stdin(self):
        _, _, _, ev = self.child.run("input()")
        self.assertEqual(ev["result"]["error"]["type"], "EOFError")

    def test_top_level_await(self):
        out, _, _, ev = self.child.run("import asyncio\nawait asyncio.sleep(0)\nprint('done')")
        self.assertEqual(out, "done\n")
        self.assertIsNone(ev["result"]["error"])

    def test_echo_prints_a_trailing_expression(self):
        out, _, _, _ = self.child.run("a = 6\na * 7", echo=True)
        self.assertEqual(out, "42\n")
        out, _, _, _ = self.child.run("a * 7")
        self.assertEqual(out, "")

    def test_session_names_come_back(self):
        out, _, _, _ = self.child.run("json = 1\nPath = 2\nprint(json, Path)")
        self.assertEqual(out, "1 2\n")
        out, _, _, _ = self.child.run("print(json.dumps([Path('a').name, Counter('aab')['a'], math.pi > 3]))")
        self.assertEqual(out, '["a", 2, true]\n')

    def test_auto_imports_come_when_a_block_needs_them(self):
        # Each block is the first to use its names; the last ones reach
        # them without naming them.
        for code, want in [("print(Counter('aab')['a'], Path('x/y').name)", "2 y"),
                           ("print(json.dumps(datetime.date(2020, 1, 2).isoformat()))", '"2020-01-02"'),
                           ("print(globals()['shlex'].quote('a b'))", "'a b'"),
                           ("def f():\n    return textwrap.dedent('  z')\nprint(f())", "z"),
                           ("exec('print(base64.b64encode(b\"a\").decode())')", "YQ==")]:
            out, err, _, ev = self.child.run(code)
            self.assertIsNone(ev["result"]["error"], (code, err))
            self.assertEqual(out.strip(), want, code)

    def test_os_write_to_stdout_keeps_its_place_among_prints(self):
        out, err, _, ev = self.child.run(
            "import os, sys\nprint('a')\nn = os.write(1, b'b\\n')\nprint('c', n)\nos.write(2, b'e\\n')\n"
            "print('f', file=sys.stderr)\nos.write(1, 'd\\u00e9\\n'.encode())\ntry:\n    os.write(1, 'text')\n"
            "except TypeError:\n    print('TypeError')")
        self.assertIsNone(ev["result"]["error"], err)
        self.assertEqual(out, "a\nb\nc 2\nd\u00e9\nTypeError\n")
        self.assertEqual(err, "e\nf\n")

    def test_session_is_read_only(self):
        out, _, _, ev = self.child.run("print(session.name, session['workspace'] == os.getcwd(), session.access.is_jailed)")
        self.assertEqual(out, "t True False\n")
        _, _, _, ev = self.child.run("session.name = 'x'")
        self.assertEqual(ev["result"]["error"]["type"], "AttributeError")

    def test_replaced_stdout_is_restored_for_the_next_block(self):
        self.child.run("import io\nsys.stdout = io.StringIO()\nprint('hidden')")
        out, _, _, _ = self.child.run("print('shown')")
        self.assertEqual(out, "shown\n")

    def test_system_exit_is_a_block_error(self):
        _, _, _, ev = self.child.run("import sys\nsys.exit(3)")
        self.assertEqual(ev["result"]["error"]["type"], "SystemExit")
        out, _, _, _ = self.child.run("print('alive')")
        self.assertEqual(out, "alive\n")

    def test_sigint_interrupts_the_block(self):
        self.child.send(op="run", code="print('go', flush=True)\nwhile True:\n    pass\n")
        self.assertEqual(self.child.receive(), {"ev": "running"})
        ev = self.child.receive()
        self.assertEqual(ev, {"ev": "out", "stream": "stdout", "data": "go\n"})
        os.kill(self.child.proc.pid, signal.SIGINT)
        ev = self.child.receive()
        self.assertEqual(ev["result"]["error"]["type"], "KeyboardInterrupt")
        self.assertNotIn("driver.py", ev["result"]["error"]["traceback"])

    def test_sigint_between_blocks_is_ignored(self):
        os.kill(self.child.proc.pid, signal.SIGINT)
        time.sleep(0.1)
        out, _, _, ev = self.child.run("print('still here')")
        self.assertEqual(out, "still here\n")

    def test_output_streams_while_the_block_runs(self):
        self.child.send(op="run", code="import time\nprint('early')\ntime.sleep(1)\nprint('late')")
        started = time.monotonic()
        self.assertEqual(self.child.receive(), {"ev": "running"})
        ev = self.child.receive()
        self.assertEqual(ev["data"], "early\n")
        self.assertLess(time.monotonic() - started, 0.8)
        self.assertEqual(self.child.receive()["data"], "late\n")
        self.assertEqual(self.child.receive()["ev"], "result")

    def test_partial_output_is_flushed_while_the_block_runs(self):
        # text without a newline waits for the flusher thread, each time
        self.child.send(op="run", code="import sys, time\nsys.stdout.write('a')\ntime.sleep(0.6)\n"
                                        "sys.stdout.write('b')\ntime.sleep(0.6)\nprint('c')")
        self.assertEqual(self.child.receive(), {"ev": "running"})
        started = time.monotonic()
        for want, by in (("a", 0.5), ("b", 1.1), ("c\n", 2)):
            self.assertEqual(self.child.receive()["data"], want)
            self.assertLess(time.monotonic() - started, by)
        self.assertEqual(self.child.receive()["ev"], "result")

    def test_large_output_is_chunked(self):
        out, _, _, _ = self.child.run("print('z' * 300000)")
        self.assertEqual(out, "z" * 300000 + "\n")

    def test_stderr_is_its_own_stream(self):
        out, err, _, _ = self.child.run("import sys\nprint('o')\nprint('e', file=sys.stderr)")
        self.assertEqual((out, err), ("o\n", "e\n"))

    def test_unknown_request_and_version(self):
        self.child.send(op="nope")
        self.assertEqual(self.child.receive()["ev"], "error")
        self.child.send(op="run", code="1", v=99)
        self.assertIn("version", self.child.receive()["message"])

    def test_restart_restores_with_a_notice_once(self):
        self.child.run("kept = [1, 2]\ngen = (i for i in kept)\ndef first():\n    return next(gen)\n")
        self.child.close()
        info = {"session": {"name": "t", "workspace": self.tmp.name}, "restart_reason": "a test restarted it"}
        self.child = Child(self.tmp.name, info)
        out, _, notes, ev = self.child.run("print(kept)")
        self.assertEqual(out, "[1, 2]\n")
        self.assertEqual(len(notes), 1)
        self.assertTrue(notes[0].startswith("[Sandbox restarted]"), notes[0])
        self.assertIn("test restarted it", notes[0])
        self.assertTrue(ev["result"]["restarted"])
        self.assertEqual(ev["result"]["notice"], notes[0])
        out, _, notes, ev = self.child.run("print(session.restarted)\ngen")
        self.assertEqual((out, notes), ("True\n", []))
        err = ev["result"]["error"]
        self.assertEqual(err["type"], "NameError")
        self.assertIn("did not come back", err["message"])
        self.assertIn("did not come back", err["traceback"])

    def restart(self, **info):
        self.child.close()
        base = {"session": {"name": "t", "workspace": self.tmp.name}, "restart_reason": "a test restarted it"}
        self.child = Child(self.tmp.name, {**base, **info})
        self.assertEqual(self.child.ready["ev"], "ready", "nothing reaches the host before ready")

    def test_what_restoring_prints_goes_into_the_notice(self):
        with open(os.path.join(self.tmp.name, "chatty.py"), "w") as f:
            f.write("import logging, os, sys, warnings\n"
                    "print('chatty out')\n"
                    "print('chatty err', file=sys.stderr)\n"
                    "warnings.warn('old API', FutureWarning)\n"
                    "os.write(2, b'raw fd 2\\n')\n"
                    "logging.basicConfig()\n"
                    "def say():\n"
                    "    logging.getLogger('chatty').warning('later')\n")
        out, err, _, ev = self.child.run(
            "import chatty\n"
            "class Loud:\n"
            "    def __setstate__(self, state):\n"
            "        print('setstate', state)\n"
            "        self.__dict__.update(state)\n"
            "class Broken:\n"
            "    def __setstate__(self, state):\n"
            "        raise ValueError('no way')\n"
            "loud, broken = Loud(), Broken()\n"
            "loud.x, broken.y = 1, 2\n")
        self.assertIsNone(ev["result"]["error"])
        self.assertIn("chatty out", out)
        self.restart()
        self.assertTrue(self.child.restoring)
        out, err, notes, ev = self.child.run("print(loud.x)\nchatty.say()")
        self.assertEqual(out, "1\n")
        self.assertEqual(err, "WARNING:chatty:later\n", "a handler made while restoring prints to the block")
        text = notes[0]
        for want in ("Restoring printed:\n  chatty out\n  chatty err\n", "FutureWarning: old API", "raw fd 2",
                     "setstate {'x': 1}", "broken: could not be restored: ValueError: no way",
                     "variables (1): loud"):
            self.assertIn(want, text)
        self.assertLessEqual(len(text.splitlines()), 16, text)

    def test_long_restore_output_is_cut(self):
        with open(os.path.join(self.tmp.name, "loud.py"), "w") as f:
            f.write("for i in range(500):\n    print('line', i, 'x' * 300)\n")
        self.child.run("import loud")
        self.restart()
        _, _, notes, _ = self.child.run("pass")
        lines = notes[0].splitlines()
        self.assertIn("  … +494 more lines", lines)
        self.assertTrue(all(len(ln) <= 203 for ln in lines), lines)

    def test_discard_and_drop(self):
        self.child.run("a = 1\nb = [2]\ndef f():\n    return b\n")
        self.restart(drop=["b"])
        out, _, notes, ev = self.child.run("print(a, 'b' in globals())\nf()")
        self.assertEqual(out, "1 False\n")
        self.assertIn("Left out on request (1): b.", notes[0])
        self.assertIn("left out on request", ev["result"]["error"]["message"])
        self.restart()  # still left out: the snapshot was saved without it
        out, _, notes, _ = self.child.run("print('b' in globals())")
        self.assertEqual(out, "False\n")
        self.restart(discard="a test asked for it")
        self.assertFalse(self.child.restoring)
        out, _, notes, _ = self.child.run("print('a' in globals())")
        self.assertEqual(out, "False\n")
        self.assertIn("The snapshot was discarded: a test asked for it; the session starts empty.", notes[0])
        self.assertIn("It held (2): a, f.", notes[0])

    def test_defs_request(self):
        self.child.run("def helper(a, b=3):\n    'Does a thing.'\n    return a\n")
        self.child.send(op="defs")
        ev = self.child.receive()
        self.assertEqual(ev["ev"], "defs")
        self.assertIn("helper(a, b=<int>)", ev["data"])
        self.child.send(op="defs", json=True)
        data = json.loads(self.child.receive()["data"])
        self.assertEqual([h["name"] for h in data["helpers"]], ["helper"])
        self.child.send(op="defs", pattern="(")
        self.assertEqual(self.child.receive()["ev"], "error")

    def save(self):
        self.child.send(op="save")
        ev = self.child.receive()
        self.assertEqual(ev["ev"], "saved")
        return ev["result"]

    def test_save_says_what_it_did(self):
        # The result goes out first; "save" then saves and says what it did.
        self.assertEqual(self.child.run("x = 1")[3]["result"]["snapshot"], "saving")
        self.assertEqual(self.save()["snapshot"], "saved")
        self.child.run("y = x")
        self.assertEqual(self.save()["snapshot"], "saved")
        self.child.run("print(x)")
        saved = self.save()
        self.assertEqual((saved["snapshot"], saved["saved"]), ("unchanged", 2))
        # nothing pending: an empty answer
        self.assertEqual(self.save()["snapshot"], "")

    def test_unsaved_until_the_save(self):
        unsaved = os.path.join(self.tmp.name, "unsaved")
        self.child.run("big = [1, 2]\nimport os")
        with open(unsaved) as f:
            self.assertEqual(json.loads(f.read()), {"block": 1, "last": 1, "names": ["big"]})
        # compile (the host's check of written files) does not save first
        self.child.send(op="compile", code="1 +")
        self.assertEqual(self.child.receive()["ev"], "compiled")
        self.assertGreater(os.path.getsize(unsaved), 0)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "snapshot.bin")))
        # nor does ping; a block runs first, and the marker names both
        self.child.send(op="ping")
        self.assertEqual(self.child.receive(), {"ev": "pong"})
        self.child.run("def helper():\n    return big\nsmall = 1")
        with open(unsaved) as f:
            self.assertEqual(json.loads(f.read()), {"block": 1, "last": 2, "names": ["big", "helper", "small"]})
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "snapshot.bin")))
        # defs() says what the snapshot holds: it finds both saved first
        self.child.send(op="defs")
        self.assertIn("helper()", self.child.receive()["data"])
        self.assertEqual(os.path.getsize(unsaved), 0)
        self.assertTrue(os.path.exists(os.path.join(self.tmp.name, "snapshot.bin")))
        self.assertEqual(self.save()["snapshot"], "")

    def test_is_complete_follows_the_repl(self):
        cases = {"x = 1": "complete", "def f():": "incomplete", "def f():\n    return 1": "incomplete",
                 "def f():\n    return 1\n": "complete", "while True: pass": "incomplete",
                 "print((1)": "incomplete", "s = '''a": "incomplete", "x = 1\ny = 2": "complete",
                 "await g()": "complete", "print('a": "invalid", "": "complete"}
        for src, want in cases.items():
            self.child.send(op="is_complete", code=src)
            self.assertEqual(self.child.receive(), {"ev": "is_complete", "kind": want}, src)

    def test_completions_of_names_and_attributes(self):
        self.child.run("class Box:\n    @property\n    def noisy(self):\n        print('side effect')\n        return 1\nbox_one = Box()\nbox_two = 2")
        self.child.send(op="completions", code="box_")
        self.assertEqual(sorted(self.child.receive()["data"].split("\n")), ["box_one", "box_two"])
        self.child.send(op="completions", code="box_one.no")
        self.assertEqual(self.child.receive(), {"ev": "completions", "data": "box_one.noisy"})
        self.child.send(op="completions", code="pri")
        self.assertIn("print(", self.child.receive()["data"].split("\n"))
        self.child.send(op="completions", code="")
        self.assertEqual(self.child.receive(), {"ev": "completions", "data": ""})
        out, _, _, ev = self.child.run("print('next')")
        self.assertEqual(out, "next\n")


if __name__ == "__main__":
    unittest.main()


class SessionTest(unittest.TestCase):
    """session and session.access: read-only, and a copy survives pickle
    (a variable holding one is restored after a restart)."""

    def test_pickle(self):
        sys.path.insert(0, PY_DIR)
        try:
            from vis_sandbox.driver import Session
        finally:
            sys.path.remove(PY_DIR)
        import pickle
        access = Session({"is_jailed": True, "kernel": {"missing": []}})
        back = pickle.loads(pickle.dumps(access))
        self.assertEqual((back.is_jailed, back["kernel"], dict(back)), (True, {"missing": []}, dict(access)))
        with self.assertRaises(AttributeError):
            back.is_jailed = False


class ThreadCapTest(unittest.TestCase):
    """cap_threads, the cap on CPython 3.10 and 3.11 (run in a new process:
    it patches _thread for good)."""

    @unittest.skipIf(sys.version_info >= (3, 12), "from 3.12 the C audit hook holds the cap")
    def test_cap(self):
        code = "\n".join([
            "import threading",
            "from vis_sandbox import driver",
            "driver.cap_threads(4, 'the test policy')",
            "ev, n, started = threading.Event(), 0, []",
            "try:",
            "    while n < 50:",
            "        started.append(threading.Thread(target=ev.wait)); started[-1].start(); n += 1",
            "except RuntimeError as e:",
            "    print(n, e)",
            "ev.set()",
            "for t in started[:n]: t.join()",
            "threading.Thread(target=print, args=('after',)).start()",
        ])
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, cwd=here, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("3 can't start a new thread: the cap of 4 threads is reached (the test policy)", out.stdout)
        self.assertIn("after", out.stdout)


class FirstBlockTest(unittest.TestCase):
    """A new session's first block waits for no module it does not use."""

    def test_first_block_imports_only_what_it_names(self):
        with tempfile.TemporaryDirectory() as tmp:
            heavy = ("pathlib", "datetime", "hashlib", "glob", "shlex", "textwrap", "base64", "inspect", "ast", "traceback",
                     "re", "json", "enum", "linecache", "tokenize", "pickle", "threading", "collections", "functools", "mmap")
            # less those this python imports at start (a .pth file may)
            at_start = subprocess.run([sys.executable, "-B", "-c", "import sys; print(' '.join(sys.modules))"],
                                      capture_output=True, text=True, check=True).stdout.split()
            heavy = tuple(m for m in heavy if m not in at_start)
            # (naming sys.modules would reach every name: all get bound)
            code = f"import sys\nprint(sorted(m for m in {heavy!r} if m in getattr(sys, 'mod' + 'ules')))"
            # with echo (sandbox run's default) the trailing expression is
            # found in the block's tree
            for echo in (False, True):
                with self.subTest(echo=echo):
                    folder = os.path.join(tmp, str(echo))
                    os.mkdir(folder)
                    child = Child(folder, early={"op": "run", "code": code, "echo": echo})
                    try:
                        out, err, _, ev = child.run_events()
                        self.assertIsNone(ev["result"]["error"], err)
                        self.assertEqual(out.strip(), "[]")
                        # later blocks still find every auto-imported name
                        out, _, _, ev = child.run("print(math.pi > 3, Path('a').name, hashlib.sha256(b'').hexdigest()[:4])")
                        self.assertEqual(out.strip(), "True a e3b0")
                    finally:
                        child.close()

    def test_first_block_finds_its_source_in_tracebacks(self):
        # linecache is imported by the block itself (through traceback):
        # the block's source is there all the same.
        with tempfile.TemporaryDirectory() as tmp:
            code = "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()\nprint(undefined)"
            child = Child(tmp, early={"op": "run", "code": code})
            try:
                out, err, _, ev = child.run_events()
                self.assertIn('File "<block 1>", line 3, in <module>\n    1 / 0', err)
                self.assertTrue(ev["result"]["error"]["excerpt"].startswith("6: print(undefined)"), ev["result"]["error"])
                self.assertIn("    print(undefined)", ev["result"]["error"]["traceback"])
            finally:
                child.close()
