"""Trainers (``codea1_register_trainers``), one flat module each: ``code_a1`` (the paper's
dual-policy training), ``golden_tests`` and ``self_play`` (its baselines), ``sft``
(supervised warm starts and the paper's Test LLM SFT). ``rollouts`` and ``consensus`` are
their shared helpers; ``backends/`` holds the policy backends; ``configs/`` example configs.
The loop around a trainer's step is ``codea1.harness.flows.train``."""
