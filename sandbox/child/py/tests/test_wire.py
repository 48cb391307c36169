"""Tests of vis_sandbox.wire: the same JSON as the json package, both ways."""

import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vis_sandbox import wire  # noqa: E402


class WireTest(unittest.TestCase):
    VALUES = [{"ev": "out", "data": "h\u00e9llo \u2603 \udcff \n\t\"\\", "n": [1, 2.5, -3e20, None, True, False], "d": {"a": [{}]}},
              "x", 0, -1, 10 ** 30, [], {}, 1.5e-300, {"1": 2}]

    def test_dumps_as_json_does(self):
        for v in self.VALUES:
            self.assertEqual(wire.dumps(v), json.dumps(v, ensure_ascii=False, separators=(",", ":")))
            self.assertEqual(wire.dumps(v, ascii=True), json.dumps(v, separators=(",", ":")))
        self.assertEqual(wire.dumps(float("inf")), "Infinity")
        with self.assertRaises(TypeError):
            wire.dumps(object())

    def test_loads_as_json_does(self):
        for v in self.VALUES:
            text = json.dumps(v)
            self.assertEqual(repr(wire.loads(text)), repr(json.loads(text)))
            self.assertEqual(repr(wire.loads((" " + text + "\n").encode("utf-8", "surrogatepass"))), repr(json.loads(text)))
        self.assertTrue(math.isnan(wire.loads("NaN")))
        for bad in ["", "{", '{"a": 1} x', "[1,]"]:
            with self.assertRaises(json.JSONDecodeError):
                wire.loads(bad)


if __name__ == "__main__":
    unittest.main()
