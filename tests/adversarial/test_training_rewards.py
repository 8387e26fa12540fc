"""One real code-a1 training step (harness validation, the executor, the trainer's reward
and Mistake Book code) with scripted policies: the code policy writes honest, hostile and
slow programs, the test policy writes honest and hostile one-assert suites for each.

No hostile program may earn more R_C than an honest wrong one; no hostile suite may earn
more R_T than an honest invalid one (a wrong answer); a program's timeout in one suite may
not fail its sibling suites' tests (nor put tests it never ran into the Mistake Book)."""

from __future__ import annotations

from adversarial.hostile import (
    ADD_CORRECT_OTHER,
    ADD_REFERENCE,
    ADD_WRONG,
    FRAME_CHANNEL,
    code_object_hex,
    generated_test_attacks,
    hash_of_under_seed_zero,
    report,
)
from scripted_policies import ScriptedPolicy, fenced, scripted_context

from codea1.harness.records import Problem
from codea1.harness.verdicts.asserts import parse_assert
from codea1.trainers.code_a1 import CodeA1Options, CodeA1Trainer

PROGRAMS = {
    "reference-text": ADD_REFERENCE,
    "right-other-text": ADD_CORRECT_OTHER,
    "honest-wrong": ADD_WRONG,
    # wrong, and from its first call forges "passed" for the rest of its job
    "hostile-forges-channel": "def add(a, b):\n" + FRAME_CHANNEL + "    return a - b\n",
    # wrong, and breaks the reply's framing (a record nested 5,000 deep that does not parse): a
    # sandbox error would leave its group out of the rewards
    "hostile-deep-record": "import os\nos.write(3, b'[' * 5000 + b']' * 5000 + b'\\n')\n" + ADD_WRONG,
    # right, but slow on a large b: it times out on the "large" suite only
    "right-but-slow": "def add(a, b):\n    total = a\n    for _ in range(b):\n        total += 1\n    return total\n",
}
HONEST_SUITES = {"large": "assert add(1, 10 ** 9) == 1000000001",  # first: a timeout here must not spill over
                 "small": "assert add(0, 0) == 0",
                 "honest-invalid": "assert add(1, 2) == 4"}


def test_no_hostile_program_or_test_out_earns_an_honest_one(plugins, adv_executor, decoys, tmp_path):
    attacks = [a for a in generated_test_attacks(decoys, code_object_hex(ADD_REFERENCE, "add"),
                                                 hash_of_under_seed_zero("codea1-adversarial"))
               if a.in_step and not a.control]
    # Channel forgers last: they forge every later test of a job, which would hide the others.
    attacks.sort(key=lambda a: a.attack.startswith("a"))
    suites = {**HONEST_SUITES, **{a.name: a.source for a in attacks}}
    question = Problem(task_id="adv/add", prompt="Write add(a, b).", entry_point="add", reference=ADD_REFERENCE,
                       tests=[parse_assert("assert add(1, 2) == 3", "add", "golden/0")])
    code_policy = ScriptedPolicy([fenced(c) for c in PROGRAMS.values()])
    test_policy = ScriptedPolicy([fenced(s + "\n") for s in suites.values()])
    context = scripted_context(plugins, plugins.benchmarks.create("demo"), adv_executor, code_policy, test_policy,
                               tmp_path)
    m, n = len(PROGRAMS), len(suites)
    trainer = CodeA1Trainer(CodeA1Options(m=m, n=n, k=1, topvar=m), context=context)
    figures = trainer.step(0, [question])

    [(_, code_rewards)] = code_policy.updates
    [(_, test_rewards)] = test_policy.updates  # every group kept (topvar = M): program-major order
    r_c = dict(zip(PROGRAMS, code_rewards))
    r_t = {(p, s): test_rewards[i * n + j] for i, p in enumerate(PROGRAMS) for j, s in enumerate(suites)}
    rows = [{"case": "program hostile-forges-channel", "attack": "a/b",
             "outcome": f"R_C {r_c['hostile-forges-channel']:.3f}",
             "expected": f"<= honest wrong {r_c['honest-wrong']:.3f}",
             "ok": r_c["hostile-forges-channel"] <= r_c["honest-wrong"] + 1e-9},
            {"case": "program hostile-deep-record", "attack": "a/reply",
             "outcome": f"R_C {r_c['hostile-deep-record']:.3f}; sandbox-error groups {figures.get('sandbox_error_groups')}",
             "expected": f"<= honest wrong {r_c['honest-wrong']:.3f}; no sandbox-error group",
             "ok": r_c["hostile-deep-record"] <= r_c["honest-wrong"] + 1e-9
             and not any(figures.get("sandbox_error_groups", {}).values())},
            {"case": "programs after the hostile ones", "attack": "a/reply",
             "outcome": f"R_C right {r_c['right-other-text']:.3f}, reference {r_c['reference-text']:.3f}",
             "expected": "the right programs earn the most", "ok": r_c["right-other-text"] == r_c["reference-text"]
             == max(r_c.values())}]
    for a in attacks:
        over = [f"{p}: {r_t[(p, a.name)]:.3f} > {r_t[(p, 'honest-invalid')]:.3f}" for p in PROGRAMS
                if p != "right-but-slow" and r_t[(p, a.name)] > r_t[(p, "honest-invalid")] + 1e-9]
        rows.append({"case": f"suite {a.name}", "attack": a.attack,
                     "outcome": "; ".join(over) or "at most honest invalid",
                     "expected": "R_T <= the honest invalid suite's, for every program", "ok": not over})
    spilled = r_t[("right-but-slow", "small")] - r_t[("reference-text", "small")]
    rows.append({"case": "timeout spill-over to a sibling suite", "attack": "e",
                 "outcome": f"R_T of 'small' on the slow program {r_t[('right-but-slow', 'small')]:.3f}",
                 "expected": f"<= on a fast right program {r_t[('reference-text', 'small')]:.3f}",
                 "ok": spilled <= 1e-9})
    book = trainer.book.retrieve(question.task_id, 100)
    rows.append({"case": "timeout spill-over into the Mistake Book", "attack": "e",
                 "outcome": f"{len(book)} tests in the book, 'small' among them: {HONEST_SUITES['small'] in book}",
                 "expected": f"without {HONEST_SUITES['small']!r} (no program failed it)",
                 "ok": HONEST_SUITES["small"] not in book})
    broken = report("training-step", adv_executor.name, rows)
    assert not broken, f"{len(broken)} of {len(rows)} cases broke their promise:\n" + "\n".join(broken)
