"""Reporters: one module per output format of ``codea1 report`` (md, csv, tex, html), each
registered through ``codea1_register_reporters``. A reporter only writes the ``Report`` the
report flow built (``codea1.harness.reporting``): it computes no figure of its own."""
