"""The verdict path: from a test to a verdict, decided in the trusted parent.

    a model's response           responses       the program, and the asserts in it
    an assert, a tests file      asserts         one call test: args, wrapper, operator, answer
                                 testdata        its data evaluated here, never run as code
                                 syntax          untrusted text parsed without a warning
    a unittest/pytest script     script_tests    checks rewritten to report their values
    an expected side in source   expected        computed in a job of its own, before any program
    the reference solution       reference       expected outputs, per-test times, its failures
    ExecJob -> executor plugin   execution       jobs out, raw records back (in between,
                                                 harness.sandbox forks a confined child per job)
    values across the boundary   plaindata       builtins only, decoded fresh in the parent
    a rewritten script's reports script_reports  made in the child, checked here
    RawResult + its tests        judge           one Verdict per program, on plain data
    a suite on the reference     validity        which tests are valid (evaluate-tests, training)

From a samples file to a number: ``harness.samples`` reads the file into CodeSamples; the
benchmark plugin gives each task's Problem and its tests (asserts parsed by ``asserts``,
scripts rewritten by ``script_tests``); ``reference`` runs the reference once for expected
values and time limits; ``execution`` sends one ExecJob per program to the executor plugin
and reads its records back; ``judge`` turns each RawResult into a Verdict; the metric plugins
(``harness.formulas``) turn verdicts into pass@k and the rest, and the run store writes
results.json.

``plaindata``, ``script_reports`` and ``script_tests`` also run inside the sandbox (the child
imports them) and so import only the standard library and each other. Nothing in this
package imports a plugin.
"""
