"""Trainers (``codea1_register_trainers``), one flat module each: ``code_a1`` (the paper's
dual-policy training), ``golden_tests`` and ``self_play`` (its baselines), ``sft``
(supervised warm starts and the paper's Test LLM SFT). ``method/`` holds the training
method they string together (rewards, the Mistake Book, validation, rollouts, the suite
layout); ``backends/`` holds the policy backends; ``configs/`` example configs.
The loop around a trainer's step is ``codea1.harness.flows.train``."""
