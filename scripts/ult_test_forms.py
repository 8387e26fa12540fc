"""How many UnLeakedTestBench asserts are in the paper's form, ``assert WRAP(f(ARGS)) == ANSWER``
with data the restricted evaluator accepts (``harness.verdicts.asserts.parse_assert``), and why the
others are not.

    python scripts/ult_test_forms.py ../shared/data/unleakedtestbench/ULT_Lite.json [more files]

Reads each file as the ``ult`` loader does (a JSON array, or JSON Lines; gzip or not). Prints,
per file: asserts, how many parse into the form (with and without wrappers), and the others
by reason (a reason's details after a colon are grouped: "answer: not data: calls math.sqrt"
counts under "answer: not data: calls math.sqrt", "the operator in: ..." under "the operator
in"); with --json, the same as one JSON object.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter

from codea1.harness.jsonl import json_records
from codea1.harness.verdicts.asserts import PAPER_FORM, AssertParseError, parse_assert


def reason_group(reason: str) -> str:
    """A reason without the parts that vary from test to test."""
    reason = reason.replace(": " + PAPER_FORM, "")
    reason = re.sub(r"raises (\w+): .*", r"raises \1", reason)
    reason = re.sub(r"not data: (.{0,40}) \(a wrapper other than .*", r"a wrapper other than the allowed ones", reason)
    return reason[:90]


def count(path: str) -> dict:
    total, in_form, wrapped = 0, 0, 0
    reasons: Counter = Counter()
    for _, rec in json_records(path, ValueError):
        tests = rec.get("test_list", [])
        if isinstance(tests, str):
            tests = ast.literal_eval(tests)
        for src in tests:
            total += 1
            try:
                test = parse_assert(src, rec["func_name"])
            except AssertParseError as exc:
                reasons[reason_group(exc.reason)] += 1
                continue
            in_form += 1
            wrapped += test.wrap is not None
    return {"file": path, "asserts": total, "in_form": in_form, "in_form_with_wrappers": wrapped,
            "outside": total - in_form, "reasons": dict(reasons.most_common())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    results = [count(path) for path in args.files]
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for r in results:
        share = r["outside"] / r["asserts"] if r["asserts"] else 0.0
        print(f"{r['file']}: {r['asserts']} asserts, {r['in_form']} in the paper's form "
              f"({r['in_form_with_wrappers']} with wrappers), {r['outside']} outside ({share:.1%})")
        for reason, n in r["reasons"].items():
            print(f"  {n:5d}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
