"""The user-facing flows, one module each: evaluate, evaluate_tests, generate, tts (train and
report join them). Each reads top to bottom as named stages over one run setup
(``codea1.harness.run``); commands (``codea1.harness.commands``) call them."""
