"""Trainers (Code-A1, Golden-Test, Self-Play) register through ``codea1_register_trainers``.
None ships yet: the trainers issue builds them on the generators' prompt and parsing code."""
