"""The verdict path: from a test to a verdict, in the trusted parent except where a box says.

    a model's response          responses   the program and the asserts in it
    an assert, a tests file     asserts     one call test: args, wrapper, operator, answer
                                testdata    its data evaluated here, never run as code
                                syntax      untrusted text parsed quietly
    a unittest/pytest script    script_tests  checks rewritten to report values
    an expected side in source  expected    computed in a job of its own, before any program
    the reference solution      reference   expected outputs, per-test times, its own failures
    ExecJob -> executor plugin  execution   jobs out, raw records back (the sandbox in between:
                                            harness.sandbox forks a confined child per job)
    values across the boundary  plaindata   builtins only, decoded fresh in the parent
    RawResult + tests           judge       a Verdict per program, on plain data
    a suite on the reference    validity    which tests are valid (evaluate-tests, training)

A samples file becomes numbers this way: ``harness.samples`` reads it into CodeSamples; a
benchmark plugin gives each task's Problem with its tests (parsed by ``asserts``, scripts by
``script_tests``); ``reference`` runs the reference for expected values and time limits;
``execution`` sends one ExecJob per program to the executor; ``judge`` turns its RawResult
into a Verdict; the metric plugins (``harness.formulas``) turn verdicts into pass@k and the
rest, and the run store writes them to results.json.

Only ``plaindata`` and ``script_tests`` run inside the sandbox too (the child imports them);
everything else here runs in the parent. Nothing in this package imports a plugin.
"""
