"""Reporters (comparison tables across run directories) register through
``codea1_register_reporters``. None ships yet."""
