"""codea1: evaluate and train code LLMs and test LLMs (Code-A1).

The one installed package. Its subpackages are the repository's folders:
``codea1.harness`` (the core), ``codea1.plugins`` (executors, generators, metrics),
``codea1.benchmarks``, ``codea1.trainers`` and ``codea1.reports``. Plugin authors import
from ``codea1.api``. Importing this package imports nothing else.
"""

__version__ = "0.1.0"
